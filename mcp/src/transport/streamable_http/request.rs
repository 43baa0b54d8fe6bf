//! What every handler of the endpoint reads off a request: the session and version
//! headers, the verified principal, the session a request names, and the scope step-up
//! challenge of a `tools/call`.

use std::sync::Arc;

use axum::http::{HeaderMap, HeaderName};
use axum::response::Response;
use serde::Deserialize;

use super::session::Session;
use crate::auth::Principal;
use crate::protocol::{ProtocolVersion, Request, methods};
use crate::transport::http::app::App;
use crate::transport::http::guard::bad_request;

/// `Mcp-Session-Id`.
pub(crate) const SESSION_HEADER: HeaderName = HeaderName::from_static("mcp-session-id");
/// `MCP-Protocol-Version`.
pub(crate) const VERSION_HEADER: HeaderName = HeaderName::from_static("mcp-protocol-version");
/// `Last-Event-ID`.
pub(super) const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");

/// The one connection every sessionless request shares. It never has a transport attached,
/// so it can never be asked anything.
pub(super) const ANONYMOUS: &str = "http-anonymous";

/// The `MCP-Protocol-Version` header: absent, or a handshake revision (400 otherwise).
#[allow(clippy::result_large_err)]
pub(super) fn version_header(headers: &HeaderMap) -> Result<Option<ProtocolVersion>, Response> {
    let Some(value) = headers.get(&VERSION_HEADER) else {
        return Ok(None);
    };
    let supported = || {
        ProtocolVersion::HANDSHAKE
            .iter()
            .map(|v| v.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let text = value.to_str().unwrap_or("").trim();
    match text.parse::<ProtocolVersion>() {
        Ok(v) if ProtocolVersion::HANDSHAKE.contains(&v) => Ok(Some(v)),
        _ => Err(bad_request(format!(
            "Bad Request: unsupported MCP-Protocol-Version {text:?}; this endpoint's sessions speak {}",
            supported()
        ))),
    }
}

/// The `Mcp-Session-Id` header, if present; 400 for one that cannot be a session id.
#[allow(clippy::result_large_err)]
pub(super) fn session_header(headers: &HeaderMap) -> Result<Option<&str>, Response> {
    let Some(value) = headers.get(&SESSION_HEADER) else {
        return Ok(None);
    };
    match value.to_str() {
        Ok(s) if !s.is_empty() && s.bytes().all(|b| (0x21..=0x7e).contains(&b)) => Ok(Some(s)),
        _ => Err(bad_request(
            "Bad Request: Mcp-Session-Id must be visible ASCII (0x21-0x7E)",
        )),
    }
}

/// The live session named by the request, owned by its principal; an error response
/// otherwise (see [`SessionBackend::lookup`](super::session::SessionBackend::lookup)).
pub(super) async fn lookup(
    app: &App,
    id: &str,
    principal: Option<&Principal>,
) -> Result<Arc<Session>, Response> {
    app.sessions
        .backend()
        .lookup(&app.sessions, &app.server, id, principal)
        .await
}

#[derive(Deserialize)]
struct ToolName {
    name: String,
}

/// With bearer auth, a `tools/call` of a tool whose scopes the token lacks is answered with
/// 403 `insufficient_scope` (so the client can step up) instead of reaching the tool seam.
pub(super) fn step_up(
    app: &App,
    request: &Request,
    principal: Option<&Principal>,
) -> Option<Response> {
    let (Some(auth), Some(principal)) = (&app.bearer, principal) else {
        return None;
    };
    if request.method != methods::TOOLS_CALL {
        return None;
    }
    let name = serde_json::from_str::<ToolName>(request.params.as_ref()?.get())
        .ok()?
        .name;
    let snapshot = app.server.registry().snapshot();
    let tool = snapshot.tool(&name)?;
    let needed = auth.missing_for_tool(principal, tool.required_scopes())?;
    Some(auth.insufficient_scope(&needed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn version_headers_must_name_a_handshake_revision() {
        let mut h = HeaderMap::new();
        assert_eq!(version_header(&h).ok(), Some(None));
        h.insert(VERSION_HEADER, HeaderValue::from_static("2025-06-18"));
        assert_eq!(
            version_header(&h).ok(),
            Some(Some(ProtocolVersion::V2025_06_18))
        );
        for bad in ["2026-07-28", "2025-01-01", "junk", ""] {
            h.insert(VERSION_HEADER, HeaderValue::from_static(bad));
            assert!(version_header(&h).is_err(), "{bad}");
        }
    }
}
