//! The legacy HTTP+SSE transport (protocol 2024-11-05, deprecated since 2025-03-26), for
//! clients that predate Streamable HTTP.
//!
//! `GET /sse` opens a session: its first event is `endpoint`, whose data is the URL to POST
//! messages to (`/messages?sessionId=<id>`, the id from the OS CSPRNG). Each POST there is
//! answered `202 Accepted`; the responses, and everything else the server sends the
//! session (progress, logs, questions, list_changed), arrive as `event: message` on that
//! session's stream alone. Closing the GET stream ends the session: its questions close and
//! its running requests stop.
//!
//! The same safety rules as Streamable HTTP apply (Host and Origin checks, size limits,
//! bearer tokens, the boot guard); see [`crate::transport::http`]. One difference: a
//! `tools/call` lacking a tool's scopes is not turned into a 403 step-up challenge here
//! (clients of this transport predate step-up authorization); the tool seam answers it
//! with an `isError` result naming the missing scopes. Serve it on its own with
//! [`router`] or [`serve`], or beside Streamable HTTP with
//! [`HttpConfig::legacy_sse`](crate::transport::http::HttpConfig::legacy_sse).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Extension;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{OriginalUri, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::{get, post};
use parking_lot::RwLock;
use serde::Deserialize;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::auth::Principal;
use crate::protocol::jsonrpc::{Incoming, decode};
use crate::protocol::{Era, Message, codes};
use crate::server::{
    ConnId, Connection, Outbound, OutboundReceiver, Reply, RequestExtras, Transport,
};
use crate::transport::http::sse_body::{SseEvent, Stops, message_event, sse_response};
use crate::transport::http::{
    self, App, HttpConfig, HttpError, Transports, accepts, bad_request, declared_too_large,
    http_headers, is_json, json_response, payload_too_large, read_body, rpc_error,
    unsupported_media_type,
};

/// A router serving only the legacy HTTP+SSE transport (`GET /sse`,
/// `POST /messages?sessionId=...`), `GET /health`, and Protected Resource Metadata when
/// bearer auth is configured. The boot guard and configuration checks are those of
/// [`http::router`].
pub fn router(server: crate::Server, config: HttpConfig) -> Result<Router, HttpError> {
    http::build(
        server,
        config,
        Transports {
            streamable: false,
            legacy_sse: true,
        },
    )
}

/// Binds `addr` and serves [`router`] until Ctrl-C or SIGTERM (see [`http::serve`]).
pub async fn serve(
    server: crate::Server,
    config: HttpConfig,
    addr: SocketAddr,
) -> Result<(), HttpError> {
    let app = router(server, config.clone()).inspect_err(http::log_refusal)?;
    http::run_bound(app, config, addr).await
}

/// Events buffered between a session's messages and its SSE response; a client that lets
/// this many go unread loses its stream (see [`forward`]).
const STREAM_BUFFER: usize = 256;

struct SseSession {
    conn: Connection,
    out: Outbound,
    owner: Option<(String, Option<String>)>,
    closed: CancellationToken,
}

impl SseSession {
    fn owned_by(&self, principal: Option<&Principal>) -> bool {
        match (&self.owner, principal) {
            (None, None) => true,
            (Some((sub, iss)), Some(p)) => *sub == p.subject && *iss == p.issuer,
            _ => false,
        }
    }
}

/// The legacy transport's sessions: each lives as long as its GET stream.
pub(crate) struct SseTable {
    map: RwLock<HashMap<Arc<str>, Arc<SseSession>>>,
    max: usize,
}

impl SseTable {
    pub(crate) fn new(config: &HttpConfig) -> Arc<Self> {
        Arc::new(SseTable {
            map: RwLock::new(HashMap::new()),
            max: config.max_sessions,
        })
    }

    fn get(&self, id: &str) -> Option<Arc<SseSession>> {
        self.map.read().get(id).cloned()
    }

    fn remove(&self, id: &str) {
        if let Some(s) = self.map.write().remove(id) {
            s.closed.cancel();
            s.conn.close_pending();
            tracing::debug!(target: "mcp::sse", conn_id = %s.conn.id(), "SSE session ended");
        }
    }
}

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

/// The routes, for [`http::build`].
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
    tokio::spawn(forward(
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
        Vec::new(),
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
    headers: HeaderMap,
    body: Body,
) -> Response {
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
    let incoming = decode(&bytes);
    let http_headers = http_headers(&headers);
    match incoming {
        Incoming::Single(Err(e)) => json_response(
            StatusCode::BAD_REQUEST,
            Reply::error(e.id(), &e.to_error()).into_frame(),
        ),
        Incoming::Single(Ok(message @ Message::Request(_))) => {
            // Requests run on their own task; the response goes to the session's stream.
            tokio::spawn(async move {
                let closed = session.closed.clone();
                let work = session.conn.handle_with(
                    message,
                    RequestExtras {
                        sink: None,
                        principal,
                        era: Some(Era::Handshake),
                        meta: None,
                        headers: Some(http_headers),
                    },
                );
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
