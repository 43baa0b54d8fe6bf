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
mod request;
pub(crate) mod session;
mod stateless;

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use axum::routing::post;

pub(crate) use session::SessionTable;

use crate::protocol::codes;
use crate::transport::http::app::App;
use crate::transport::http::config::HttpConfig;
use crate::transport::http::guard::{accepts, rpc_error};
use crate::transport::http::sse_body::{Stops, sse_response};
use errors::{no_session_to_end, no_stream_without_session, with_session};
use post::post_handler;
use request::{
    LAST_EVENT_ID, MaybePrincipal, SESSION_HEADER, lookup, principal_of, session_header,
    version_header,
};

/// The session table of a router: sessions on this replica, or shared by a cluster.
pub(crate) fn session_table(
    config: &HttpConfig,
    cluster: Option<&crate::cluster::Cluster>,
) -> Arc<SessionTable> {
    let backend: Arc<dyn session::SessionBackend> = match cluster {
        None => Arc::new(backend::local::LocalSessions),
        Some(c) => Arc::new(backend::cluster::ClusterSessions::new(
            c.clone(),
            config.session_idle_timeout,
            config.event_store_events,
            config.session_recheck,
        )),
    };
    SessionTable::new(config, backend)
}

/// The routes of the endpoint.
pub(crate) fn routes(app: &Arc<App>) -> Router {
    Router::new()
        .route(
            &app.config.endpoint,
            post(post_handler).get(get_handler).delete(delete_handler),
        )
        .with_state(Arc::clone(app))
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
    let session = match lookup(&app, id, principal.as_deref()).await {
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
        closed: Some(session.closed.token().clone()),
        // The standalone stream never ends on its own: it ends at shutdown. A resumed
        // request stream ends with its response.
        shutdown: standalone.then(|| app.config.shutdown.clone()),
    };
    sse_response(
        rx,
        app.config.keep_alive,
        stops,
        (session.busy(), slot),
        session
            .id_header
            .clone()
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
