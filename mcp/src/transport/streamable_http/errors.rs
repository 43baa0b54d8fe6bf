//! The error responses of the endpoint: each a JSON-RPC error body with the status (and,
//! where it helps, the header) the transport rules ask for.

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode};
use axum::response::Response;

use super::request::SESSION_HEADER;
use super::session::Session;
use crate::protocol::codes;
use crate::protocol::jsonrpc::DecodeError;
use crate::server::Reply;
use crate::transport::http::guard::{bad_request, json_response, rpc_error};

pub(super) fn session_not_found() -> Response {
    rpc_error(
        StatusCode::NOT_FOUND,
        codes::INVALID_REQUEST,
        "Session not found: it expired, was deleted or never existed; send initialize without Mcp-Session-Id to start a new one",
    )
}

/// 405 with a JSON-RPC body and `Allow: allow`.
pub(super) fn method_not_allowed(message: &'static str, allow: &'static str) -> Response {
    let mut r = rpc_error(
        StatusCode::METHOD_NOT_ALLOWED,
        codes::INVALID_REQUEST,
        message,
    );
    r.headers_mut()
        .insert(axum::http::header::ALLOW, HeaderValue::from_static(allow));
    r
}

pub(super) fn no_stream_without_session() -> Response {
    method_not_allowed(
        "Method Not Allowed: GET opens the stream of a handshake-era session and needs Mcp-Session-Id; protocol 2026-07-28 has no GET stream (use subscriptions/listen)",
        "POST",
    )
}

pub(super) fn no_session_to_end() -> Response {
    method_not_allowed(
        "Method Not Allowed: DELETE ends a handshake-era session and needs Mcp-Session-Id; protocol 2026-07-28 has no sessions",
        "POST",
    )
}

pub(super) fn session_required() -> Response {
    bad_request(
        "Bad Request: Mcp-Session-Id header is required; send initialize first to start a session",
    )
}

pub(super) fn accepted() -> Response {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = StatusCode::ACCEPTED;
    r
}

pub(super) fn decode_error(e: &DecodeError) -> Response {
    json_response(
        StatusCode::BAD_REQUEST,
        Reply::error(e.id(), &e.to_error()).into_frame(),
    )
}

/// 503: the session table is full.
pub(super) fn sessions_full(max: usize) -> Response {
    tracing::warn!(target: "mcp::http", max, "session limit reached; refusing a session");
    let mut r = rpc_error(
        StatusCode::SERVICE_UNAVAILABLE,
        codes::INTERNAL_ERROR,
        format!(
            "Service Unavailable: the server already holds its maximum of {max} sessions; try again later"
        ),
    );
    r.headers_mut().insert(
        axum::http::header::RETRY_AFTER,
        HeaderValue::from_static("5"),
    );
    r
}

/// 409: the session's GET stream is already open.
pub(super) fn already_open(session: &Session) -> Response {
    with_session(
        rpc_error(
            StatusCode::CONFLICT,
            codes::INVALID_REQUEST,
            "Conflict: this session already has an open GET stream; only one is allowed (resume with Last-Event-ID instead)",
        ),
        session,
    )
}

/// `response` with the session's id in `Mcp-Session-Id`.
pub(super) fn with_session(mut response: Response, session: &Session) -> Response {
    if let Some(v) = &session.id_header {
        response.headers_mut().insert(SESSION_HEADER, v.clone());
    }
    response
}
