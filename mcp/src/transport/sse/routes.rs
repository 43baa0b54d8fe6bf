//! The legacy transport's routes: `GET /sse` opens a session's stream, `POST /messages`
//! takes its messages.

use std::sync::Arc;

use axum::Extension;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{OriginalUri, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::{get, post};
use serde::Deserialize;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::table::{SseSession, SseTable};
use crate::auth::Principal;
use crate::protocol::jsonrpc::Incoming;
use crate::protocol::{Era, Message, codes};
use crate::server::{ConnId, Outbound, OutboundReceiver, Reply, RequestExtras, Transport};
use crate::transport::http::app::App;
use crate::transport::http::guard::{
    accepts, bad_request, declared_too_large, decode_body, http_headers, is_json, json_response,
    memory_pressure, payload_too_large, read_body, rpc_error, unsupported_media_type,
};
use crate::transport::http::sse_body::{SseEvent, Stops, message_event, sse_response};

/// Events buffered between a session's messages and its SSE response; a client that lets
/// this many go unread loses its stream (see [`forward`]).
const STREAM_BUFFER: usize = 256;

/// Ends the session when its GET stream's body is dropped (the client went away).
struct EndOnDrop {
    table: Arc<SseTable>,
    id: Arc<str>,
}

impl Drop for EndOnDrop {
    fn drop(&mut self) {
        self.table.remove(&self.id);
    }
}

/// The routes, for [`build`](crate::transport::http::build::build).
pub(crate) fn routes(app: &Arc<App>) -> Router {
    Router::new()
        .route(&app.config.sse_path, get(open_stream))
        .route(&app.config.messages_path, post(receive))
        .with_state(Arc::clone(app))
}

async fn open_stream(
    State(app): State<Arc<App>>,
    principal: Option<Extension<Arc<Principal>>>,
    OriginalUri(original): OriginalUri,
    headers: HeaderMap,
) -> Response {
    if headers.contains_key(axum::http::header::ACCEPT) && !accepts(&headers, "text/event-stream") {
        return rpc_error(
            StatusCode::NOT_ACCEPTABLE,
            codes::INVALID_REQUEST,
            "Not Acceptable: this endpoint is an SSE stream; the client must accept text/event-stream",
        );
    }
    // Near the memory limit no new session opens; a request on an open one is answered
    // on its stream, as every answer of this transport is.
    if let Some(refusal) = app.server.admission().refuses_connection() {
        return memory_pressure(None, &refusal);
    }
    let principal = principal.map(|Extension(p)| p);
    let table = &app.sse_sessions;
    let (out, out_rx) = Outbound::channel(app.server.config().outbound_capacity);
    let (id, session) = {
        let mut map = table.map.write();
        if map.len() >= table.max {
            return rpc_error(
                StatusCode::SERVICE_UNAVAILABLE,
                codes::INTERNAL_ERROR,
                format!(
                    "Service Unavailable: the server already holds its maximum of {} SSE sessions; try again later",
                    table.max
                ),
            );
        }
        let id: Arc<str> = loop {
            let candidate: Arc<str> = Arc::from(crate::util::random_token(24));
            if !map.contains_key(&candidate) {
                break candidate;
            }
        };
        let conn = app
            .server
            .connect(ConnId::random("sse"), Transport::Sse, out.clone());
        let session = Arc::new(SseSession {
            conn,
            out,
            owner: principal
                .as_deref()
                .map(|p| (p.subject.clone(), p.issuer.clone())),
            closed: CancellationToken::new(),
        });
        map.insert(Arc::clone(&id), Arc::clone(&session));
        (id, session)
    };

    // Where the client POSTs: the messages path under whatever prefix this router is
    // mounted at.
    let path = original.path();
    let prefix = path
        .strip_suffix(app.config.sse_path.as_str())
        .unwrap_or("");
    let endpoint = format!("{prefix}{}?sessionId={id}", app.config.messages_path);

    let (tx, rx) = mpsc::channel::<Bytes>(STREAM_BUFFER);
    let _ = tx.try_send(
        SseEvent {
            id: None,
            event: Some("endpoint"),
            data: &endpoint,
            retry: None,
        }
        .encode(),
    );
    crate::util::spawn(forward(
        out_rx,
        tx,
        session.closed.clone(),
        Arc::clone(table),
        Arc::clone(&id),
    ));
    sse_response(
        rx,
        app.config.keep_alive,
        Stops {
            closed: Some(session.closed.clone()),
            shutdown: Some(app.config.shutdown.clone()),
        },
        EndOnDrop {
            table: Arc::clone(table),
            id,
        },
    )
}

/// Writes what the server sends the session as `event: message`.
/// Moves the session's messages onto its stream. A client that stops reading fills the
/// stream's buffer; then the stream is dropped (the session ends, its questions close and
/// its requests stop) rather than letting its backlog, and the requests waiting to add to
/// it, grow without bound.
async fn forward(
    mut out_rx: OutboundReceiver,
    tx: mpsc::Sender<Bytes>,
    closed: CancellationToken,
    table: Arc<SseTable>,
    id: Arc<str>,
) {
    loop {
        tokio::select! {
            frame = out_rx.recv() => match frame {
                Some(frame) => match tx.try_send(message_event(None, &frame)) {
                    Ok(()) => {}
                    Err(mpsc::error::TrySendError::Full(_)) => {
                        tracing::warn!(target: "mcp::sse", "the client is not reading its SSE stream; dropping the stream and its session");
                        table.remove(&id);
                        break;
                    }
                    Err(mpsc::error::TrySendError::Closed(_)) => break,
                },
                None => break,
            },
            _ = closed.cancelled() => break,
        }
    }
}

#[derive(Deserialize)]
struct SessionQuery {
    #[serde(rename = "sessionId")]
    session_id: Option<String>,
}

fn accepted() -> Response {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = StatusCode::ACCEPTED;
    r
}

async fn receive(
    State(app): State<Arc<App>>,
    principal: Option<Extension<Arc<Principal>>>,
    Query(query): Query<SessionQuery>,
    request: axum::extract::Request,
) -> Response {
    // The headers are moved into the request's extras below, not copied.
    let (parts, body) = request.into_parts();
    let headers = parts.headers;
    if !is_json(&headers) {
        return unsupported_media_type(&headers);
    }
    if declared_too_large(&headers, app.max_body) {
        return payload_too_large(app.max_body);
    }
    let principal = principal.map(|Extension(p)| p);
    let Some(id) = query.session_id.filter(|s| !s.is_empty()) else {
        return bad_request(
            "Bad Request: the sessionId query parameter is required; open GET /sse first",
        );
    };
    let session = match app.sse_sessions.get(&id) {
        Some(s) if s.owned_by(principal.as_deref()) => s,
        _ => {
            return rpc_error(
                StatusCode::NOT_FOUND,
                codes::INVALID_REQUEST,
                "Session not found: its SSE stream is closed or it never existed; open GET /sse again",
            );
        }
    };
    let bytes = match read_body(body, app.max_body).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    let incoming = decode_body(bytes);
    let http_headers = http_headers(headers);
    match incoming {
        Incoming::Single(Err(e)) => json_response(
            StatusCode::BAD_REQUEST,
            Reply::error(e.id(), &e.to_error()).into_frame(),
        ),
        Incoming::Single(Ok(message @ Message::Request(_))) => {
            // Requests run on their own task; the response goes to the session's stream.
            tokio::spawn(async move {
                let closed = session.closed.clone();
                // Boxed, so that this task's future stays small: tokio moves it several
                // times as it spawns and finishes it (see `streamable_http::stateless`).
                let work = Box::pin(session.conn.handle_with(
                    message,
                    RequestExtras {
                        sink: None,
                        principal,
                        era: Some(Era::Handshake),
                        meta: None,
                        headers: Some(http_headers),
                    },
                ));
                tokio::select! {
                    reply = work => {
                        if let Some(reply) = reply {
                            session.out.send(reply.into_frame()).await;
                        }
                    }
                    _ = closed.cancelled() => {}
                }
            });
            accepted()
        }
        Incoming::Single(Ok(message)) => {
            let _ = session.conn.handle(message).await;
            accepted()
        }
        Incoming::Batch(_) => bad_request(
            "Invalid request: JSON-RPC batches are not part of the HTTP+SSE transport; send one message per POST",
        ),
    }
}
