//! The OAuth 2.1 resource server: bearer tokens on every MCP request, Protected Resource
//! Metadata (RFC 9728), and the `WWW-Authenticate` challenges that tell a client where to
//! get a token (401) or which scopes it lacks (403).

use std::fmt;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use serde_json::{Value, json};

use super::guard::{json_response, rpc_error};
use crate::auth::Principal;
use crate::auth::bearer::{TokenError, TokenVerifier};
use crate::protocol::codes;

/// The well-known path of Protected Resource Metadata.
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// Bearer-token authentication for the HTTP transports, making the server an OAuth 2.1
/// resource server.
///
/// Every request to the MCP endpoint (and to the legacy SSE routes) must carry
/// `Authorization: Bearer <token>`; the [`TokenVerifier`] checks it, and the principal it
/// names reaches the authorizers and [`Ctx::principal`](crate::Ctx::principal). Tokens in
/// the query string are refused. Without a valid token the answer is 401 with
/// `WWW-Authenticate: Bearer resource_metadata="<url>"`; with a token lacking a required
/// scope, 403 with `error="insufficient_scope"` naming every scope needed.
///
/// The metadata is served at `/.well-known/oauth-protected-resource` and at the
/// path-inserted form for the resource's path (`/.well-known/oauth-protected-resource/mcp`
/// for `https://host/mcp`). Both are routes of the transport's router, so mount it at the
/// root of the host.
///
/// With the `oauth` feature, tokens verified as JWTs:
///
/// ```
/// # #[cfg(feature = "oauth")] {
/// use mcp::auth::bearer::JwtVerifier;
/// use mcp::transport::http::{BearerAuth, HttpConfig};
///
/// let resource = "https://mcp.example.com/mcp";
/// let verifier = JwtVerifier::hs256(b"a-secret-of-at-least-thirty-two-bytes!", "https://auth.example.com", resource)
///     .unwrap();
/// let auth = BearerAuth::new(verifier, resource)
///     .authorization_server("https://auth.example.com")
///     .scopes_supported(["files:read", "files:write"])
///     .required_scopes(["files:read"]);
/// let config = HttpConfig::new().allow_host("mcp.example.com").bearer_auth(auth);
/// # let _ = config;
/// # }
/// ```
#[derive(Clone)]
pub struct BearerAuth {
    verifier: Arc<dyn TokenVerifier>,
    resource: String,
    authorization_servers: Vec<String>,
    scopes_supported: Vec<String>,
    required_scopes: Vec<String>,
    resource_name: Option<String>,
    documentation: Option<String>,
}

impl fmt::Debug for BearerAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BearerAuth")
            .field("resource", &self.resource)
            .field("authorization_servers", &self.authorization_servers)
            .field("scopes_supported", &self.scopes_supported)
            .field("required_scopes", &self.required_scopes)
            .finish_non_exhaustive()
    }
}

impl BearerAuth {
    /// Bearer authentication with `verifier`, for the resource `resource`: this server's
    /// canonical URI (e.g. `https://mcp.example.com/mcp`), which tokens must name as their
    /// audience. The verifier's issuer ([`TokenVerifier::issuer`]: `JwtVerifier`,
    /// `JwksVerifier` and an `IntrospectionVerifier` with an issuer have one) is the
    /// metadata's first authorization server; add others (or the only one, for a verifier
    /// without an issuer) with [`authorization_server`](Self::authorization_server).
    pub fn new(verifier: impl TokenVerifier, resource: impl Into<String>) -> Self {
        let authorization_servers = verifier.issuer().map(str::to_owned).into_iter().collect();
        BearerAuth {
            verifier: Arc::new(verifier),
            resource: resource.into(),
            authorization_servers,
            scopes_supported: Vec::new(),
            required_scopes: Vec::new(),
            resource_name: None,
            documentation: None,
        }
    }

    /// Adds an authorization server (its issuer URL) that issues tokens for this resource
    /// (once: the verifier's own issuer is listed already).
    pub fn authorization_server(mut self, issuer: impl Into<String>) -> Self {
        let issuer = issuer.into();
        if !self.authorization_servers.contains(&issuer) {
            self.authorization_servers.push(issuer);
        }
        self
    }

    /// The scopes advertised in the metadata (without it, the required scopes are).
    pub fn scopes_supported<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes_supported = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// The scopes every request needs (403 `insufficient_scope` without them). Tools can
    /// require more with `ToolDef::scopes`.
    pub fn required_scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.required_scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// A human-readable name for the metadata.
    pub fn resource_name(mut self, name: impl Into<String>) -> Self {
        self.resource_name = Some(name.into());
        self
    }

    /// A documentation URL for the metadata.
    pub fn resource_documentation(mut self, url: impl Into<String>) -> Self {
        self.documentation = Some(url.into());
        self
    }

    /// The canonical resource URI.
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// The scopes every request needs.
    pub fn required(&self) -> &[String] {
        &self.required_scopes
    }

    /// The URL of the metadata document, in the path-inserted form of RFC 9728
    /// (`https://host/.well-known/oauth-protected-resource/mcp` for `https://host/mcp`).
    pub fn metadata_url(&self) -> String {
        let (origin, path) = split_url(&self.resource).unwrap_or((&self.resource, ""));
        format!("{origin}{METADATA_PATH}{}", metadata_suffix(path))
    }

    /// The authorization servers the metadata lists.
    pub fn authorization_servers(&self) -> &[String] {
        &self.authorization_servers
    }

    /// The Protected Resource Metadata document (RFC 9728): the resource, its
    /// authorization servers, the scopes (those set with
    /// [`scopes_supported`](Self::scopes_supported), else the required ones), the bearer
    /// methods (the header only), and the name and documentation when set.
    pub fn metadata(&self) -> Value {
        let mut doc = json!({
            "resource": self.resource,
            "authorization_servers": self.authorization_servers,
            "bearer_methods_supported": ["header"],
        });
        if !self.scopes_supported.is_empty() {
            doc["scopes_supported"] = json!(self.scopes_supported);
        } else if !self.required_scopes.is_empty() {
            doc["scopes_supported"] = json!(self.required_scopes);
        }
        if let Some(name) = &self.resource_name {
            doc["resource_name"] = json!(name);
        }
        if let Some(url) = &self.documentation {
            doc["resource_documentation"] = json!(url);
        }
        doc
    }

    /// The paths this router serves the metadata at.
    pub(crate) fn metadata_paths(&self) -> Vec<String> {
        let path = split_url(&self.resource).map(|(_, p)| p).unwrap_or("");
        let mut paths = vec![METADATA_PATH.to_owned()];
        let suffix = metadata_suffix(path);
        if !suffix.is_empty() {
            paths.push(format!("{METADATA_PATH}{suffix}"));
        }
        paths
    }

    pub(crate) fn validate(&self) -> Result<(), String> {
        let Some((_, path)) = split_url(&self.resource) else {
            return Err(format!(
                "the resource {:?} must be an absolute http(s) URL (this server's canonical URI)",
                self.resource
            ));
        };
        if self.resource.contains('#') || self.resource.contains('?') {
            return Err(format!(
                "the resource {:?} must not have a query or a fragment",
                self.resource
            ));
        }
        if path.contains(['{', '}', '*']) {
            return Err(format!(
                "the resource path {path:?} must not contain wildcards"
            ));
        }
        if self.authorization_servers.is_empty() {
            return Err(
                "bearer auth needs at least one authorization server: a verifier that names its issuer, or BearerAuth::authorization_server"
                    .into(),
            );
        }
        Ok(())
    }

    /// The challenge parameters shared by every 401 and 403.
    fn challenge(&self, error: Option<(&str, &str)>, scopes: &[String]) -> HeaderValue {
        let mut value = String::from("Bearer ");
        let mut parts = Vec::new();
        if let Some((code, description)) = error {
            parts.push(format!("error=\"{code}\""));
            parts.push(format!("error_description=\"{}\"", quoted(description)));
        }
        if !scopes.is_empty() {
            parts.push(format!("scope=\"{}\"", quoted(&scopes.join(" "))));
        }
        parts.push(format!(
            "resource_metadata=\"{}\"",
            quoted(&self.metadata_url())
        ));
        value.push_str(&parts.join(", "));
        HeaderValue::from_str(&value).unwrap_or_else(|_| HeaderValue::from_static("Bearer"))
    }

    /// 401: no token, or not an acceptable one.
    pub(crate) fn unauthorized(&self, error: Option<(&str, &str)>) -> Response {
        let message = match error {
            Some((_, d)) => format!("Unauthorized: {d}"),
            None => {
                "Unauthorized: this server needs an OAuth bearer token in the Authorization header"
                    .to_owned()
            }
        };
        let mut r = rpc_error(StatusCode::UNAUTHORIZED, codes::INVALID_REQUEST, message);
        r.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            self.challenge(error, &self.required_scopes),
        );
        r
    }

    /// 403 `insufficient_scope`, naming every scope the operation needs.
    pub(crate) fn insufficient_scope(&self, needed: &[String]) -> Response {
        let description = format!("this operation needs the scope(s) {}", needed.join(" "));
        let mut r = rpc_error(
            StatusCode::FORBIDDEN,
            codes::INVALID_REQUEST,
            format!("Forbidden: insufficient_scope: {description}"),
        );
        r.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            self.challenge(Some(("insufficient_scope", &description)), needed),
        );
        r
    }

    /// The scopes a call of a tool requiring `tool_scopes` needs, if `principal` lacks any:
    /// the endpoint's required scopes plus the tool's.
    pub(crate) fn missing_for_tool(
        &self,
        principal: &Principal,
        tool_scopes: &[String],
    ) -> Option<Vec<String>> {
        if principal.has_scopes(tool_scopes) {
            return None;
        }
        let mut needed = self.required_scopes.clone();
        for s in tool_scopes {
            if !needed.contains(s) {
                needed.push(s.clone());
            }
        }
        Some(needed)
    }

    /// Checks the request's token; the principal, or the response refusing it.
    #[allow(clippy::result_large_err)]
    pub(crate) async fn authenticate(
        &self,
        headers: &axum::http::HeaderMap,
        query: Option<&str>,
    ) -> Result<Principal, Response> {
        if query_has_token(query) {
            let mut r = rpc_error(
                StatusCode::BAD_REQUEST,
                codes::INVALID_REQUEST,
                "Bad Request: access tokens are only accepted in the Authorization header, never in the query string",
            );
            r.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                self.challenge(
                    Some(("invalid_request", "tokens in the query string are refused")),
                    &[],
                ),
            );
            return Err(r);
        }
        let mut values = headers.get_all(header::AUTHORIZATION).iter();
        let (Some(value), None) = (values.next(), values.next()) else {
            return Err(if headers.contains_key(header::AUTHORIZATION) {
                self.unauthorized(Some((
                    "invalid_request",
                    "send exactly one Authorization header",
                )))
            } else {
                self.unauthorized(None)
            });
        };
        let token = value
            .to_str()
            .ok()
            .and_then(|v| {
                let (scheme, token) = v.split_once(' ')?;
                scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
            })
            .filter(|t| !t.is_empty());
        let Some(token) = token else {
            return Err(self.unauthorized(None));
        };
        let principal = match self.verifier.verify(token).await {
            Ok(p) => p,
            Err(TokenError::Unavailable(why)) => {
                tracing::warn!(target: "mcp::http", reason = %why, "token verifier unavailable");
                let mut r = rpc_error(
                    StatusCode::SERVICE_UNAVAILABLE,
                    codes::INTERNAL_ERROR,
                    "Service Unavailable: the access token cannot be verified right now; try again shortly",
                );
                r.headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
                return Err(r);
            }
            Err(e) => return Err(self.unauthorized(Some(("invalid_token", &e.description())))),
        };
        if !principal.has_scopes(&self.required_scopes) {
            return Err(self.insufficient_scope(&self.required_scopes));
        }
        Ok(principal)
    }
}

/// `https://host:port/path` → (`https://host:port`, `/path`).
fn split_url(url: &str) -> Option<(&str, &str)> {
    let (scheme, rest) = url.split_once("://")?;
    if !matches!(scheme, "http" | "https") {
        return None;
    }
    let at = rest.find('/').unwrap_or(rest.len());
    if at == 0 {
        return None;
    }
    let origin_len = scheme.len() + 3 + at;
    Some((&url[..origin_len], &url[origin_len..]))
}

/// The path suffix of the path-inserted metadata URL: the resource's path without a
/// trailing slash (empty for the root).
fn metadata_suffix(path: &str) -> &str {
    path.trim_end_matches('/')
}

/// Makes text safe inside a quoted-string of a challenge.
fn quoted(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '"' | '\\' => '\'',
            c if c.is_control() => ' ',
            c => c,
        })
        .collect()
}

fn query_has_token(query: Option<&str>) -> bool {
    query.is_some_and(|q| {
        q.split('&').any(|pair| {
            let key = pair.split('=').next().unwrap_or("");
            key.eq_ignore_ascii_case("access_token")
        })
    })
}

/// The bearer check as axum middleware: inserts the verified `Arc<Principal>` into the
/// request's extensions, where the transports pick it up.
pub(crate) async fn bearer_layer(
    State(auth): State<Arc<BearerAuth>>,
    req: Request,
    next: Next,
) -> Response {
    let (parts, body) = req.into_parts();
    let verdict = auth.authenticate(&parts.headers, parts.uri.query()).await;
    let mut req = Request::from_parts(parts, body);
    match verdict {
        Ok(principal) => {
            req.extensions_mut().insert(Arc::new(principal));
            next.run(req).await
        }
        Err(refusal) => refusal,
    }
}

/// Serves the metadata document.
pub(crate) async fn metadata_handler(State(auth): State<Arc<BearerAuth>>) -> Response {
    let mut r = json_response(StatusCode::OK, auth.metadata().to_string());
    r.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=3600"),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::bearer::verifier_fn;

    fn auth(resource: &str) -> BearerAuth {
        BearerAuth::new(
            verifier_fn(|_t: String| async { Err(TokenError::Expired) }),
            resource,
        )
        .authorization_server("https://auth.example.com")
    }

    #[test]
    fn metadata_urls_use_the_path_inserted_form() {
        let a = auth("https://mcp.example.com/mcp");
        assert_eq!(
            a.metadata_url(),
            "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            a.metadata_paths(),
            vec![METADATA_PATH, "/.well-known/oauth-protected-resource/mcp"]
        );
        let root = auth("http://127.0.0.1:3000");
        assert_eq!(
            root.metadata_url(),
            "http://127.0.0.1:3000/.well-known/oauth-protected-resource"
        );
        assert_eq!(root.metadata_paths(), vec![METADATA_PATH]);
    }

    #[test]
    fn bad_resources_are_refused() {
        assert!(auth("mcp.example.com/mcp").validate().is_err());
        assert!(auth("ftp://x/mcp").validate().is_err());
        assert!(auth("https://x/mcp#frag").validate().is_err());
        assert!(
            BearerAuth::new(
                verifier_fn(|_t: String| async { Err(TokenError::Expired) }),
                "https://x/mcp"
            )
            .validate()
            .is_err()
        );
        assert!(auth("https://x/mcp").validate().is_ok());
    }

    #[test]
    fn query_tokens_are_spotted() {
        assert!(query_has_token(Some("a=1&access_token=x")));
        assert!(query_has_token(Some("ACCESS_TOKEN=x")));
        assert!(!query_has_token(Some("sessionId=abc")));
        assert!(!query_has_token(None));
    }
}
