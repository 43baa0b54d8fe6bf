//! The caller's identity as the server derived it: the connection, its declared transport
//! and the principal of a token the server verified. Never anything the client asserts.

use std::sync::Arc;

use super::{ConnId, Transport};

/// The verified identity behind a request: from a bearer token the server checked, never
/// from anything the client asserts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Principal {
    /// The subject (`sub`).
    pub subject: String,
    /// Granted scopes.
    pub scopes: Vec<String>,
    /// The token's issuer.
    pub issuer: Option<String>,
}

impl Principal {
    /// A principal with a subject and scopes.
    pub fn new(subject: impl Into<String>, scopes: Vec<String>) -> Self {
        Principal {
            subject: subject.into(),
            scopes,
            issuer: None,
        }
    }

    /// Whether every one of `required` was granted.
    pub fn has_scopes(&self, required: &[String]) -> bool {
        required.iter().all(|r| self.scopes.iter().any(|s| s == r))
    }
}

/// What an authorizer may know about the caller. Closed: every field is derived by the
/// server (the connection the request arrived on, the transport declared for it, and a
/// principal verified by the server), so a policy can never be keyed on a value the client
/// merely asserted.
#[derive(Clone)]
pub struct AuthContext {
    conn_id: ConnId,
    transport: Transport,
    principal: Option<Arc<Principal>>,
    /// The server's application state, for policies that need it (not part of equality:
    /// it is the server's, not the caller's).
    states: Option<Arc<crate::states::StateMap>>,
}

impl PartialEq for AuthContext {
    fn eq(&self, other: &Self) -> bool {
        self.conn_id == other.conn_id
            && self.transport == other.transport
            && self.principal == other.principal
    }
}

impl Eq for AuthContext {}

// What a policy may key on, and nothing else: the server's state is not the caller's.
impl std::fmt::Debug for AuthContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthContext")
            .field("conn_id", &self.conn_id)
            .field("transport", &self.transport)
            .field("principal", &self.principal)
            .finish()
    }
}

impl AuthContext {
    pub(crate) fn new(
        conn_id: ConnId,
        transport: Transport,
        principal: Option<Arc<Principal>>,
    ) -> Self {
        AuthContext {
            conn_id,
            transport,
            principal,
            states: None,
        }
    }

    /// The same context, able to reach the server's application state.
    pub(crate) fn with_states(mut self, states: Arc<crate::states::StateMap>) -> Self {
        self.states = Some(states);
        self
    }

    /// The server's application state of type `T`, if it holds one (see
    /// [`ServerBuilder::state`](crate::ServerBuilder::state)): for a policy that reads
    /// configuration or asks a database.
    pub fn state<T: Send + Sync + 'static>(&self) -> Option<Arc<T>> {
        self.states.as_ref()?.get::<T>()
    }

    /// The connection the request arrived on.
    pub fn conn_id(&self) -> &ConnId {
        &self.conn_id
    }

    /// The transport declared for that connection.
    pub fn transport(&self) -> Transport {
        self.transport
    }

    /// The verified principal, if the request carried a valid token.
    pub fn principal(&self) -> Option<&Principal> {
        self.principal.as_deref()
    }
}

/// The headers of the HTTP request a message arrived in, read-only: names in lower case,
/// in the order they came. Present on the HTTP transports only.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HttpHeaders {
    entries: Vec<(String, String)>,
}

#[cfg(feature = "otel")]
impl crate::telemetry::HeaderSource for HttpHeaders {
    fn header(&self, name: &str) -> Option<&str> {
        self.get(name)
    }
}

impl HttpHeaders {
    /// Headers from name/value pairs (names are lower-cased).
    pub fn new(entries: impl IntoIterator<Item = (String, String)>) -> Self {
        HttpHeaders {
            entries: entries
                .into_iter()
                .map(|(n, v)| (n.to_ascii_lowercase(), v))
                .collect(),
        }
    }

    /// The first value of header `name` (any case).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Every header, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries.iter().map(|(n, v)| (n.as_str(), v.as_str()))
    }
}
