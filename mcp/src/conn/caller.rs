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
/// in the order they came, values that are text. Present on the HTTP transports only.
#[derive(Clone, Default)]
pub struct HttpHeaders(Repr);

#[derive(Clone)]
enum Repr {
    /// Given name by name ([`HttpHeaders::new`]): every name and value back to back in one
    /// string, and where each header's name and value end in it (each name starts where
    /// the value before it ended).
    Listed {
        text: String,
        ends: Vec<(usize, usize)>,
    },
    /// The request's own header map, moved here rather than copied (every HTTP request
    /// carries its headers whether or not anything reads them). The credentials the server
    /// consumed (`Authorization`, `Cookie`) stay in it but are never shown.
    #[cfg(feature = "http")]
    Request(axum::http::HeaderMap),
}

impl Default for Repr {
    fn default() -> Self {
        Repr::Listed {
            text: String::new(),
            ends: Vec::new(),
        }
    }
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
        let mut text = String::new();
        let mut ends = Vec::new();
        for (name, value) in entries {
            let start = text.len();
            text.push_str(&name);
            text[start..].make_ascii_lowercase();
            let name_end = text.len();
            text.push_str(&value);
            ends.push((name_end, text.len()));
        }
        HttpHeaders(Repr::Listed { text, ends })
    }

    /// The headers of an HTTP request, as handlers and layers may see them: every header
    /// but the credentials the server consumed (`Authorization`, `Cookie`), which must not
    /// travel further into user code or its logs, and no value that is not text.
    #[cfg(feature = "http")]
    pub(crate) fn of_request(headers: axum::http::HeaderMap) -> Self {
        HttpHeaders(Repr::Request(headers))
    }

    /// The first value of header `name` (any case).
    pub fn get(&self, name: &str) -> Option<&str> {
        match &self.0 {
            Repr::Listed { .. } => self
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v),
            #[cfg(feature = "http")]
            Repr::Request(map) if shown(name) => map
                .get_all(name)
                .iter()
                .find_map(|value| value.to_str().ok()),
            #[cfg(feature = "http")]
            Repr::Request(_) => None,
        }
    }

    /// Every header, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        let (text, ends): (&str, &[(usize, usize)]) = match &self.0 {
            Repr::Listed { text, ends } => (text, ends),
            #[cfg(feature = "http")]
            Repr::Request(_) => ("", &[]),
        };
        let mut start = 0;
        let listed = ends.iter().map(move |&(name_end, value_end)| {
            let header = (&text[start..name_end], &text[name_end..value_end]);
            start = value_end;
            header
        });
        #[cfg(feature = "http")]
        let listed = listed.chain(self.request_headers());
        listed
    }

    /// A request's headers that handlers may see (none for headers given name by name).
    #[cfg(feature = "http")]
    fn request_headers(&self) -> impl Iterator<Item = (&str, &str)> {
        let map = match &self.0 {
            Repr::Request(map) => Some(map),
            Repr::Listed { .. } => None,
        };
        map.into_iter().flat_map(|map| {
            map.iter()
                .filter(|(name, _)| shown(name.as_str()))
                .filter_map(|(name, value)| Some((name.as_str(), value.to_str().ok()?)))
        })
    }
}

/// Whether handlers may see header `name`: not the credentials the server consumed.
#[cfg(feature = "http")]
fn shown(name: &str) -> bool {
    !(name.eq_ignore_ascii_case("authorization") || name.eq_ignore_ascii_case("cookie"))
}

// By what they show: the credentials a request's map keeps are never printed or compared.
impl std::fmt::Debug for HttpHeaders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl PartialEq for HttpHeaders {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for HttpHeaders {}

#[cfg(test)]
mod tests {
    use super::HttpHeaders;

    #[test]
    fn headers_keep_their_order_and_values_with_names_lower_cased() {
        let headers = HttpHeaders::new([
            ("Host".to_owned(), "example.com".to_owned()),
            ("X-Empty".to_owned(), String::new()),
            ("x-twice".to_owned(), "first".to_owned()),
            ("X-TWICE".to_owned(), "second".to_owned()),
            ("x-text".to_owned(), "café, naïve".to_owned()),
        ]);
        assert_eq!(
            headers.iter().collect::<Vec<_>>(),
            [
                ("host", "example.com"),
                ("x-empty", ""),
                ("x-twice", "first"),
                ("x-twice", "second"),
                ("x-text", "café, naïve"),
            ]
        );
        assert_eq!(headers.get("HOST"), Some("example.com"));
        assert_eq!(headers.get("x-empty"), Some(""));
        assert_eq!(headers.get("X-Twice"), Some("first"));
        assert_eq!(headers.get("x-text"), Some("café, naïve"));
        assert_eq!(headers.get("x-missing"), None);
        assert_eq!(HttpHeaders::default().iter().count(), 0);
    }
}
