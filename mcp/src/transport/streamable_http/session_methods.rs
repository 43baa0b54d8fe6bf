//! GET and DELETE on a handshake-era session: its standalone stream (or a resumed request
//! stream), and its end.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;

use super::errors::{no_session_to_end, no_stream_without_session, with_session};
use super::request::{LAST_EVENT_ID, lookup, session_header, version_header};
use crate::auth::Principal;
use crate::protocol::codes;
use crate::transport::http::app::App;
use crate::transport::http::guard::{accepts, rpc_error};
use crate::transport::http::sse_body::{Stops, sse_head, sse_response};

/// What a GET on the endpoint is for.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Get {
    /// The stream itself.
    Stream,
    /// Only the answer's head (HEAD): checked as a GET is, and a safe method, so it opens
    /// no stream (opening one starts the session's standalone event log, and asks Redis
    /// for its cursor in a cluster).
    HeadOnly,
}

pub(super) async fn get_handler(
    app: Arc<App>,
    principal: Option<Arc<Principal>>,
    headers: HeaderMap,
    purpose: Get,
) -> Response {
    let id = match required_session(&headers, no_stream_without_session) {
        Ok(id) => id,
        Err(r) => return r,
    };
    if !accepts(&headers, "text/event-stream") {
        return rpc_error(
            StatusCode::NOT_ACCEPTABLE,
            codes::INVALID_REQUEST,
            "Not Acceptable: GET opens an SSE stream; the client must accept text/event-stream",
        );
    }
    if let Err(r) = version_header(&headers) {
        return r;
    }
    let session = match lookup(&app, id, principal.as_deref()).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    if purpose == Get::HeadOnly {
        return with_session(sse_head(), &session);
    }
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
        closed: Some(session.closed.token().clone()),
        // The standalone stream never ends on its own: it ends at shutdown. A resumed
        // request stream ends with its response.
        shutdown: standalone.then(|| app.config.shutdown.clone()),
    };
    let stream = sse_response(rx, app.config.keep_alive, stops, (session.busy(), slot));
    with_session(stream, &session)
}

pub(super) async fn delete_handler(
    app: Arc<App>,
    principal: Option<Arc<Principal>>,
    headers: HeaderMap,
) -> Response {
    let id = match required_session(&headers, no_session_to_end) {
        Ok(id) => id,
        Err(r) => return r,
    };
    if let Err(r) = version_header(&headers) {
        return r;
    }
    if let Err(r) = lookup(&app, id, principal.as_deref()).await {
        return r;
    }
    if let Err(r) = app.sessions.backend().remove(&app.sessions, id).await {
        return r;
    }
    let mut r = Response::new(Body::empty());
    *r.status_mut() = StatusCode::NO_CONTENT;
    r
}

/// The request's `Mcp-Session-Id`: `missing()` when it has none (GET and DELETE act on a
/// session), 400 when it is malformed.
#[allow(clippy::result_large_err)]
fn required_session(headers: &HeaderMap, missing: fn() -> Response) -> Result<&str, Response> {
    session_header(headers)?.ok_or_else(missing)
}
