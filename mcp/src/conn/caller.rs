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
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthContext {
    conn_id: ConnId,
    transport: Transport,
    principal: Option<Arc<Principal>>,
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
        }
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
