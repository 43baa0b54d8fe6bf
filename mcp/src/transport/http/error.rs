//! [`HttpError`]: why an HTTP transport did not start or stopped.

use std::fmt;
use std::io;

use crate::auth::deployment::BootRefused;

/// Why an HTTP transport did not start or stopped.
#[derive(Debug)]
pub enum HttpError {
    /// The boot guard refused: authorization is required and not configured.
    Refused(BootRefused),
    /// The configuration cannot work.
    Config(String),
    /// Binding or serving failed.
    Io(io::Error),
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HttpError::Refused(r) => write!(f, "{r}"),
            HttpError::Config(why) => write!(f, "invalid HTTP transport configuration: {why}"),
            HttpError::Io(e) => write!(f, "HTTP transport I/O error: {e}"),
        }
    }
}

impl std::error::Error for HttpError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            HttpError::Refused(r) => Some(r),
            HttpError::Io(e) => Some(e),
            HttpError::Config(_) => None,
        }
    }
}

impl From<io::Error> for HttpError {
    fn from(e: io::Error) -> Self {
        HttpError::Io(e)
    }
}
