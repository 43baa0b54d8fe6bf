//! The values the command line's limits and a [`Setup`](super::Setup) are made of: an
//! [`Amount`] (a count, a size or a duration) and the network transports' settings.

use std::time::Duration;

#[cfg(feature = "http")]
use crate::transport::http::HttpConfig;

/// The network transports' settings a [`Setup`](super::Setup) carries: an `HttpConfig` with the
/// `http` feature, nothing without it.
#[cfg(feature = "http")]
pub(crate) type NetConfig = HttpConfig;

/// The network transports' settings a [`Setup`](super::Setup) carries: nothing, without the `http`
/// feature.
#[cfg(not(feature = "http"))]
#[derive(Clone, Debug)]
pub(crate) struct NetConfig;

#[cfg(not(feature = "http"))]
impl NetConfig {
    /// The settings there are without the `http` feature: none.
    pub(crate) fn new() -> Self {
        NetConfig
    }
}

/// A limit's value: a count or a size in bytes, or a duration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Amount {
    /// A number of things, or of bytes.
    Count(usize),
    /// A length of time.
    Time(Duration),
}

impl From<usize> for Amount {
    fn from(n: usize) -> Self {
        Amount::Count(n)
    }
}

impl From<Duration> for Amount {
    fn from(d: Duration) -> Self {
        Amount::Time(d)
    }
}
