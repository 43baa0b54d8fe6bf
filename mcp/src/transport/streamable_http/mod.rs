//! The Streamable HTTP transport: the handshake era (protocol 2025-03-26 to 2025-11-25:
//! sessions, POST, GET and DELETE) and the stateless 2026-07-28 revision, served together
//! on one endpoint. See [`crate::transport::http`] for the public API and the rules it
//! follows.
//!
//! # Which path a request takes
//!
//! [`classify`] picks, per request:
//!
//! - the **session** path when it carries `Mcp-Session-Id`;
//! - a **new session** for `initialize` without a 2026-07-28 marker (a `_meta` protocol
//!   version in the body, or an `MCP-Protocol-Version` header that is not a handshake
//!   revision);
//! - the **sessionless handshake** path when the body has no `_meta` protocol version and
//!   the header names a handshake revision (400 unless sessionless requests are allowed;
//!   when they are, a request with neither marker takes this path too, as a client older
//!   than the header would send it);
//! - the **stateless** 2026-07-28 path for everything else ([`stateless`]).
//!
//! GET and DELETE without `Mcp-Session-Id` get 405: the stateless revision has no stream
//! to open and no session to end.

mod backend;
mod errors;
mod exchange;
mod headers;
mod post;
mod session;
mod stateless;

use std::sync::Arc;

use axum::Extension;
use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::Response;
use axum::routing::post;

use session::Session;
pub(crate) use session::SessionTable;

use crate::auth::Principal;
use crate::protocol::{ProtocolVersion, codes};
use crate::transport::http::sse_body::{Stops, sse_response};
use crate::transport::http::{App, accepts, bad_request, rpc_error};
use errors::{no_session_to_end, no_stream_without_session};
use post::post_handler;

/// `Mcp-Session-Id`.
pub(crate) const SESSION_HEADER: HeaderName = HeaderName::from_static("mcp-session-id");
/// `MCP-Protocol-Version`.
pub(crate) const VERSION_HEADER: HeaderName = HeaderName::from_static("mcp-protocol-version");
/// `Last-Event-ID`.
const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");

/// The one connection every sessionless request shares. It never has a transport attached,
/// so it can never be asked anything.
pub(super) const ANONYMOUS: &str = "http-anonymous";

/// The routes of the endpoint.
pub(crate) fn routes(app: &Arc<App>) -> Router {
    Router::new()
        .route(
            &app.config.endpoint,
            post(post_handler).get(get_handler).delete(delete_handler),
        )
        .with_state(Arc::clone(app))
}

pub(super) type MaybePrincipal = Option<Extension<Arc<Principal>>>;

pub(super) fn principal_of(p: MaybePrincipal) -> Option<Arc<Principal>> {
    p.map(|Extension(p)| p)
}

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
pub(super) fn session_header(headers: &HeaderMap) -> Result<Option<String>, Response> {
    let Some(value) = headers.get(&SESSION_HEADER) else {
        return Ok(None);
    };
    match value.to_str() {
        Ok(s) if !s.is_empty() && s.bytes().all(|b| (0x21..=0x7e).contains(&b)) => {
            Ok(Some(s.to_owned()))
        }
        _ => Err(bad_request(
            "Bad Request: Mcp-Session-Id must be visible ASCII (0x21-0x7E)",
        )),
    }
}

/// The live session named by the request, owned by its principal; an error response
/// otherwise (see [`backend::SessionBackend::lookup`]).
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

pub(super) fn with_session(mut response: Response, session: &Session) -> Response {
    if let Ok(v) = HeaderValue::from_str(&session.id) {
        response.headers_mut().insert(SESSION_HEADER, v);
    }
    response
}

async fn get_handler(
    State(app): State<Arc<App>>,
    principal: MaybePrincipal,
    headers: HeaderMap,
) -> Response {
    let id = match session_header(&headers) {
        Ok(Some(id)) => id,
        Ok(None) => return no_stream_without_session(),
        Err(r) => return r,
    };
    if !accepts(&headers, "text/event-stream") {
        return rpc_error(
            StatusCode::NOT_ACCEPTABLE,
            codes::INVALID_REQUEST,
            "Not Acceptable: GET opens an SSE stream; the client must accept text/event-stream",
        );
    }
    let principal = principal_of(principal);
    if let Err(r) = version_header(&headers) {
        return r;
    }
    let session = match lookup(&app, &id, principal.as_deref()).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    let Some(slot) = session.stream_slot() else {
        let mut r = rpc_error(
            StatusCode::TOO_MANY_REQUESTS,
            codes::INVALID_REQUEST,
            format!(
                "Too Many Requests: this session already holds its maximum of {} open SSE streams; close one first",
                session.max_streams()
            ),
        );
        r.headers_mut().insert(
            axum::http::header::RETRY_AFTER,
            HeaderValue::from_static("1"),
        );
        return with_session(r, &session);
    };
    let last = headers
        .get(&LAST_EVENT_ID)
        .map(|v| v.to_str().unwrap_or(""));
    let priming = session.primes().then_some(app.config.retry);
    let (rx, standalone) = match session.backend.open_get(&session, last, priming).await {
        Ok(opened) => opened,
        Err(r) => return r,
    };
    let stops = Stops {
        closed: Some(session.closed.clone()),
        // The standalone stream never ends on its own: it ends at shutdown. A resumed
        // request stream ends with its response.
        shutdown: standalone.then(|| app.config.shutdown.clone()),
    };
    let session_value = HeaderValue::from_str(&session.id).ok();
    sse_response(
        rx,
        app.config.keep_alive,
        stops,
        (session.busy(), slot),
        session_value
            .map(|v| vec![(SESSION_HEADER, v)])
            .unwrap_or_default(),
    )
}

async fn delete_handler(
    State(app): State<Arc<App>>,
    principal: MaybePrincipal,
    headers: HeaderMap,
) -> Response {
    let principal = principal_of(principal);
    let id = match session_header(&headers) {
        Ok(Some(id)) => id,
        Ok(None) => return no_session_to_end(),
        Err(r) => return r,
    };
    if let Err(r) = version_header(&headers) {
        return r;
    }
    if let Err(r) = lookup(&app, &id, principal.as_deref()).await {
        return r;
    }
    if let Err(r) = app.sessions.backend().remove(&app.sessions, &id).await {
        return r;
    }
    let mut r = Response::new(Body::empty());
    *r.status_mut() = StatusCode::NO_CONTENT;
    r
}

#[cfg(test)]
mod tests {
    use super::*;

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
