//! Who is on the other end of a connection: its id and the transport it arrived on, both
//! declared by the server, never by the client.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

/// Identifies one client connection. Minted by the transport (stdio uses `"stdio"`, HTTP a
/// fresh value per session); never taken from the client.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnId(Arc<str>);

impl ConnId {
    /// A connection id from a string.
    pub fn new(id: impl AsRef<str>) -> Self {
        ConnId(Arc::from(id.as_ref()))
    }

    /// A fresh unguessable id with a readable prefix, e.g. `http-3kT...`.
    pub fn random(prefix: &str) -> Self {
        ConnId::new(format!("{prefix}-{}", crate::util::random_token(12)))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ConnId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ConnId({:?})", &*self.0)
    }
}

impl fmt::Display for ConnId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for ConnId {
    fn from(s: &str) -> Self {
        ConnId::new(s)
    }
}

/// The transport a connection arrived on, as declared by the server (never by the client),
/// so a policy may rely on it: a stdio caller inherits the OS process boundary, a network
/// caller does not.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Transport {
    /// Standard input and output.
    Stdio,
    /// Streamable HTTP.
    Http,
    /// Legacy HTTP+SSE.
    Sse,
    /// In-process or not declared.
    #[default]
    Unknown,
}

impl Transport {
    /// The lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Stdio => "stdio",
            Transport::Http => "http",
            Transport::Sse => "sse",
            Transport::Unknown => "unknown",
        }
    }
}

impl fmt::Display for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A transport name that is not one of `stdio`, `http`, `sse`, `unknown`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownTransport(pub String);

impl fmt::Display for UnknownTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown transport {:?}: expected one of stdio, http, sse, unknown",
            self.0
        )
    }
}

impl std::error::Error for UnknownTransport {}

impl FromStr for Transport {
    type Err = UnknownTransport;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "stdio" => Ok(Transport::Stdio),
            "http" => Ok(Transport::Http),
            "sse" => Ok(Transport::Sse),
            "unknown" => Ok(Transport::Unknown),
            other => Err(UnknownTransport(other.to_owned())),
        }
    }
}
