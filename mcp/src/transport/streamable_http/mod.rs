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
//! - a **new session** for `initialize` without a modern marker (a `_meta` protocol
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

mod exchange;
mod headers;
mod session;
mod shared;
mod stateless;

use std::sync::Arc;

use axum::Extension;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::Response;
use axum::routing::post;
use serde::Deserialize;
use tokio::sync::{mpsc, oneshot};

pub(crate) use session::SessionTable;
use session::{EventId, LIVE_CAPACITY, Resume, STANDALONE, Session};

use crate::auth::Principal;
use crate::layers::BoxFuture;
use crate::protocol::inbound::{EraSignals, VersionHeader};
use crate::protocol::jsonrpc::{DecodeError, Incoming, decode};
use crate::protocol::{Era, ErrorObject, Message, ProtocolVersion, Request, codes, methods};
use crate::server::{ConnId, Outbound, Reply, RequestExtras, Transport};
use crate::transport::http::sse_body::{Stops, sse_response};
use crate::transport::http::{
    App, accepts, bad_request, declared_too_large, http_headers, is_json, json_response,
    payload_too_large, read_body, rpc_error, unsupported_media_type,
};
use exchange::{Answer, StreamLog, drive};

/// `Mcp-Session-Id`.
pub(crate) const SESSION_HEADER: HeaderName = HeaderName::from_static("mcp-session-id");
/// `MCP-Protocol-Version`.
pub(crate) const VERSION_HEADER: HeaderName = HeaderName::from_static("mcp-protocol-version");
/// `Last-Event-ID`.
const LAST_EVENT_ID: HeaderName = HeaderName::from_static("last-event-id");

/// The one connection every sessionless request shares. It never has a transport attached,
/// so it can never be asked anything.
const ANONYMOUS: &str = "http-anonymous";

/// The routes of the endpoint.
pub(crate) fn routes(app: &Arc<App>) -> Router {
    Router::new()
        .route(
            &app.config.endpoint,
            post(post_handler).get(get_handler).delete(delete_handler),
        )
        .with_state(Arc::clone(app))
}

/// The path a POST takes.
#[derive(Debug, PartialEq, Eq)]
enum Route {
    /// An existing session.
    Session(String),
    /// `initialize` without a session: a new session.
    Initialize,
    /// A handshake-era request without a session.
    Sessionless,
    /// The stateless 2026-07-28 revision.
    Stateless,
}

/// The path a POST without a session takes, from its era ([`EraSignals::era`], the one
/// place the era is decided): a 2026-07-28 request is stateless; a handshake-era
/// `initialize` starts a session and any other handshake request is sessionless; an
/// undecided one (no marker at all, as a client older than the version header sends) is
/// sessionless when those are served, and otherwise stateless (which then explains what
/// the request lacks).
fn classify(session: Option<String>, signals: EraSignals, sessionless: bool) -> Route {
    if let Some(id) = session {
        return Route::Session(id);
    }
    match signals.era() {
        Some(Era::Stateless) => Route::Stateless,
        Some(Era::Handshake) if signals.initialize => Route::Initialize,
        Some(Era::Handshake) => Route::Sessionless,
        None if sessionless => Route::Sessionless,
        None => Route::Stateless,
    }
}

/// What the `MCP-Protocol-Version` header says about the era.
fn version_signal(headers: &HeaderMap) -> VersionHeader {
    VersionHeader::of(
        headers
            .get(&VERSION_HEADER)
            // A header that is not text names no revision.
            .map(|v| v.to_str().unwrap_or("")),
    )
}

type MaybePrincipal = Option<Extension<Arc<Principal>>>;

fn principal_of(p: MaybePrincipal) -> Option<Arc<Principal>> {
    p.map(|Extension(p)| p)
}

/// The `MCP-Protocol-Version` header: absent, or a handshake revision (400 otherwise).
#[allow(clippy::result_large_err)]
fn version_header(headers: &HeaderMap) -> Result<Option<ProtocolVersion>, Response> {
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
fn session_header(headers: &HeaderMap) -> Result<Option<String>, Response> {
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

fn session_not_found() -> Response {
    rpc_error(
        StatusCode::NOT_FOUND,
        codes::INVALID_REQUEST,
        "Session not found: it expired, was deleted or never existed; send initialize without Mcp-Session-Id to start a new one",
    )
}

/// 405 with a JSON-RPC body and `Allow: POST`.
fn method_not_allowed(message: &'static str) -> Response {
    let mut r = rpc_error(
        StatusCode::METHOD_NOT_ALLOWED,
        codes::INVALID_REQUEST,
        message,
    );
    r.headers_mut()
        .insert(axum::http::header::ALLOW, HeaderValue::from_static("POST"));
    r
}

fn no_stream_without_session() -> Response {
    method_not_allowed(
        "Method Not Allowed: GET opens the stream of a handshake-era session and needs Mcp-Session-Id; protocol 2026-07-28 has no GET stream (use subscriptions/listen)",
    )
}

fn no_session_to_end() -> Response {
    method_not_allowed(
        "Method Not Allowed: DELETE ends a handshake-era session and needs Mcp-Session-Id; protocol 2026-07-28 has no sessions",
    )
}

fn session_required() -> Response {
    bad_request(
        "Bad Request: Mcp-Session-Id header is required; send initialize first to start a session",
    )
}

/// The live session named by the request, owned by its principal; 404 otherwise. With a
/// cluster, the session is read from the shared store (and this replica's copy made or
/// brought up to date).
#[allow(clippy::result_large_err)]
async fn lookup(
    app: &App,
    id: &str,
    principal: Option<&Principal>,
) -> Result<Arc<Session>, Response> {
    if let Some(shared) = &app.sessions.shared {
        return shared::lookup(app, shared, id, principal).await;
    }
    match app.sessions.get(id) {
        // A session is bound to the principal that created it: anyone else is told it does
        // not exist, as for an id never issued.
        Some(s) if s.owned_by(principal) => {
            s.touch();
            Ok(s)
        }
        _ => Err(session_not_found()),
    }
}

fn with_session(mut response: Response, session: &Session) -> Response {
    if let Ok(v) = HeaderValue::from_str(&session.id) {
        response.headers_mut().insert(SESSION_HEADER, v);
    }
    response
}

fn accepted() -> Response {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = StatusCode::ACCEPTED;
    r
}

fn decode_error(e: &DecodeError) -> Response {
    json_response(
        StatusCode::BAD_REQUEST,
        Reply::error(e.id(), &e.to_error()).into_frame(),
    )
}

async fn post_handler(
    State(app): State<Arc<App>>,
    principal: MaybePrincipal,
    headers: HeaderMap,
    body: Body,
) -> Response {
    if !is_json(&headers) {
        return unsupported_media_type(&headers);
    }
    if !(accepts(&headers, "application/json") && accepts(&headers, "text/event-stream")) {
        return rpc_error(
            StatusCode::NOT_ACCEPTABLE,
            codes::INVALID_REQUEST,
            "Not Acceptable: the client must accept both application/json and text/event-stream",
        );
    }
    if declared_too_large(&headers, app.max_body) {
        return payload_too_large(app.max_body);
    }
    let bytes = match read_body(body, app.max_body).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    let principal = principal_of(principal);
    let session_id = match session_header(&headers) {
        Ok(s) => s,
        Err(r) => return r,
    };
    app.watch_shutdown();
    let incoming = decode(&bytes);
    let signals = match &incoming {
        Incoming::Single(Ok(message)) if session_id.is_none() => {
            EraSignals::of_message(message, version_signal(&headers))
        }
        Incoming::Single(Ok(Message::Request(r))) => EraSignals {
            initialize: r.method == methods::INITIALIZE,
            ..EraSignals::default()
        },
        _ => EraSignals {
            header: version_signal(&headers),
            ..EraSignals::default()
        },
    };
    let initialize = signals.initialize;
    let route = classify(session_id, signals, app.config.sessionless);
    // What every handshake-era request of this POST carries besides the message.
    let extras = RequestExtras {
        sink: None,
        principal: principal.clone(),
        era: Some(Era::Handshake),
        meta: None,
        headers: Some(http_headers(&headers)),
    };
    match route {
        Route::Session(id) => {
            if let Err(r) = version_header(&headers) {
                return r;
            }
            let session = match lookup(&app, &id, principal.as_deref()).await {
                Ok(s) => s,
                Err(r) => return r,
            };
            if initialize {
                return with_session(
                    bad_request(
                        "Bad Request: this session is already initialized; send initialize without Mcp-Session-Id to start a new one",
                    ),
                    &session,
                );
            }
            let response = on_session(&app, &session, incoming, extras).await;
            with_session(response, &session)
        }
        Route::Initialize => {
            let Incoming::Single(Ok(message)) = incoming else {
                return session_required();
            };
            start_session(&app, message, extras).await
        }
        Route::Sessionless if app.config.sessionless => sessionless(&app, incoming, extras).await,
        Route::Sessionless => match incoming {
            Incoming::Single(Err(e)) => decode_error(&e),
            _ => session_required(),
        },
        Route::Stateless => stateless::post(&app, &headers, incoming, principal).await,
    }
}

/// `initialize` without a session: creates one, answers with its id.
async fn start_session(app: &Arc<App>, message: Message, extras: RequestExtras) -> Response {
    let session = match app
        .sessions
        .create(&app.server, extras.principal.as_deref())
    {
        Ok(s) => s,
        Err(session::Full(max)) => return sessions_full(max),
    };
    let _busy = session.busy();
    let reply = session.conn.handle_with(message, extras).await;
    let Some(reply) = reply else {
        app.sessions.remove(&session.id);
        return accepted();
    };
    if reply.error_code().is_some() {
        // A failed handshake leaves no session behind.
        app.sessions.remove(&session.id);
        return json_response(StatusCode::OK, reply.into_frame());
    }
    let negotiated = reply
        .to_value()
        .pointer("/result/protocolVersion")
        .and_then(|v| v.as_str())
        .and_then(|v| v.parse::<ProtocolVersion>().ok());
    if let Some(v) = negotiated {
        session.set_version(v);
    }
    if let Some(shared) = &session.shared
        && let Err(e) = shared::save_new(shared, &session).await
    {
        // A session the other replicas cannot see would fail on its next request.
        app.sessions.remove(&session.id);
        return shared::unavailable(&e);
    }
    with_session(json_response(StatusCode::OK, reply.into_frame()), &session)
}

/// 503: the session table is full.
fn sessions_full(max: usize) -> Response {
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

/// A notification, or an answer to the server's own question, on a session: no user code
/// runs, so it is handled before the 202. With a cluster, an answer is routed to the
/// replica holding the question, and a change (`initialized`) is saved.
async fn not_a_request(session: &Session, message: Message) {
    match (&session.shared, message) {
        (None, message) => {
            let _ = session.conn.handle(message).await;
        }
        (Some(shared), message @ Message::Response(_)) => {
            shared::route_answer(session, shared, message).await;
        }
        (Some(shared), message) => {
            let before = shared::snapshot(&session.conn);
            let _ = session.conn.handle(message).await;
            shared::save_changes(session, shared, before).await;
        }
    }
}

/// A POST on an existing session.
async fn on_session(
    app: &Arc<App>,
    session: &Arc<Session>,
    incoming: Incoming,
    extras: RequestExtras,
) -> Response {
    let _busy = session.busy();
    match incoming {
        Incoming::Single(Err(e)) => decode_error(&e),
        Incoming::Single(Ok(Message::Request(request))) => {
            if let Some(refusal) = step_up(app, &request, extras.principal.as_deref()) {
                return refusal;
            }
            answer_post(
                app,
                session,
                vec![Message::Request(request)],
                Vec::new(),
                false,
                extras,
            )
            .await
        }
        Incoming::Single(Ok(message)) => {
            not_a_request(session, message).await;
            accepted()
        }
        Incoming::Batch(items) => {
            let version = session.version();
            if !version.is_some_and(|v| v.allows_batches()) {
                return bad_request(format!(
                    "Invalid request: JSON-RPC batches are only part of protocol 2025-03-26; this session negotiated {}",
                    version.map_or("no version", |v| v.as_str())
                ));
            }
            let mut requests = Vec::new();
            let mut premade = Vec::new();
            for item in items {
                match item {
                    Ok(Message::Request(r)) if r.method == methods::INITIALIZE => {
                        premade.push(Reply::error(
                            Some(&r.id),
                            &ErrorObject::invalid_request(
                                "Invalid request: initialize cannot be batched",
                            ),
                        ));
                    }
                    Ok(m @ Message::Request(_)) => requests.push(m),
                    Ok(m) => not_a_request(session, m).await,
                    Err(e) => premade.push(Reply::error(e.id(), &e.to_error())),
                }
            }
            if requests.is_empty() && premade.is_empty() {
                return accepted();
            }
            answer_post(app, session, requests, premade, true, extras).await
        }
    }
}

/// A request without a session, when they are allowed: served on the shared anonymous
/// connection, which can never be asked anything and gets no progress or logs. Only
/// requests are dispatched: a notification there (say `notifications/cancelled`) could
/// otherwise touch another anonymous caller's request.
async fn sessionless(app: &Arc<App>, incoming: Incoming, extras: RequestExtras) -> Response {
    match incoming {
        Incoming::Single(Err(e)) => decode_error(&e),
        Incoming::Single(Ok(Message::Request(request))) => {
            if matches!(
                request.method.as_str(),
                methods::LOGGING_SET_LEVEL
                    | methods::RESOURCES_SUBSCRIBE
                    | methods::RESOURCES_UNSUBSCRIBE
            ) {
                return json_response(
                    StatusCode::BAD_REQUEST,
                    Reply::error(
                        Some(&request.id),
                        &ErrorObject::invalid_request(format!(
                            "Invalid request: {} changes per-session state and needs a session; send initialize first",
                            request.method
                        )),
                    )
                    .into_frame(),
                );
            }
            if let Some(refusal) = step_up(app, &request, extras.principal.as_deref()) {
                return refusal;
            }
            let reply = app
                .server
                .handle_detached(
                    &ConnId::new(ANONYMOUS),
                    Transport::Http,
                    Message::Request(request),
                    extras,
                )
                .await;
            match reply {
                Some(r) => json_response(StatusCode::OK, r.into_frame()),
                None => accepted(),
            }
        }
        Incoming::Single(Ok(_)) => accepted(),
        Incoming::Batch(_) => bad_request(
            "Invalid request: JSON-RPC batches are only part of protocol 2025-03-26 and need a session",
        ),
    }
}

#[derive(Deserialize)]
struct ToolName {
    name: String,
}

/// With bearer auth, a `tools/call` of a tool whose scopes the token lacks is answered with
/// 403 `insufficient_scope` (so the client can step up) instead of reaching the tool seam.
fn step_up(app: &App, request: &Request, principal: Option<&Principal>) -> Option<Response> {
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

/// Runs a POST's requests on their own task (a client disconnecting does not cancel
/// them) through the one exchange driver, and answers with JSON, or with an SSE stream
/// once the requests produce a message before their responses.
async fn answer_post(
    app: &Arc<App>,
    session: &Arc<Session>,
    requests: Vec<Message>,
    premade: Vec<Reply>,
    batch: bool,
    extras: RequestExtras,
) -> Response {
    let (answer_tx, answer_rx) = oneshot::channel();
    let (live_tx, live_rx) = mpsc::channel(LIVE_CAPACITY);
    let priming = session.primes().then_some(app.config.retry);
    let mut log: Box<dyn StreamLog> = match &session.shared {
        None => Box::new(LocalLog {
            session: Arc::clone(session),
            live: live_tx,
            priming,
            stream: None,
        }),
        Some(shared) => Box::new(shared::ClusterLog::new(
            Arc::clone(session),
            Arc::clone(shared),
            live_tx,
            priming,
            &requests,
        )),
    };
    let capacity = app.server.config().outbound_capacity;
    let running = Arc::clone(session);
    tokio::spawn(async move {
        let _busy = running.busy();
        let (sink, rx) = Outbound::channel(capacity);
        let work = futures::future::join_all(requests.into_iter().map(|m| {
            running.conn.handle_with(
                m,
                RequestExtras {
                    sink: Some(sink.clone()),
                    ..extras.clone()
                },
            )
        }));
        // The requests hold the only senders: the receiver closes when they are done.
        drop(sink);
        let stop = Some(running.closed.clone());
        drive(work, rx, premade, batch, stop, &mut *log, answer_tx).await;
    });
    match answer_rx.await {
        Ok(Answer::Json(reply)) => json_response(StatusCode::OK, reply.into_frame()),
        Ok(Answer::Nothing) => accepted(),
        Ok(Answer::Stream) => sse_response(
            live_rx,
            app.config.keep_alive,
            Stops {
                closed: Some(session.closed.clone()),
                shutdown: None,
            },
            (session.busy(), session.stream_slot_for_request()),
            Vec::new(),
        ),
        Err(_) => session_not_found(),
    }
}

/// A local session's stream: numbered and stored in the session, for `Last-Event-ID`.
struct LocalLog {
    session: Arc<Session>,
    live: mpsc::Sender<Bytes>,
    priming: Option<std::time::Duration>,
    stream: Option<u64>,
}

impl StreamLog for LocalLog {
    fn open(&mut self) -> BoxFuture<'_, ()> {
        self.stream = Some(self.session.open_stream(self.live.clone(), self.priming));
        Box::pin(async {})
    }

    fn publish(&mut self, frame: String) -> BoxFuture<'_, bool> {
        if let Some(id) = self.stream {
            self.session.publish(id, frame);
        }
        Box::pin(async { true })
    }

    fn finish(&mut self, replies: Vec<Reply>) -> BoxFuture<'_, ()> {
        if let Some(id) = self.stream {
            for reply in replies {
                self.session.publish(id, reply.into_frame());
            }
            self.session.finish(id);
        }
        Box::pin(async {})
    }
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
    let (rx, standalone) = match (last, session.shared.clone()) {
        (None, Some(shared)) => {
            let cursor = shared::standalone_cursor(&session, &shared).await;
            match session.open_standalone_at(priming, Some(&cursor)) {
                Ok(rx) => (rx, true),
                Err(session::AlreadyOpen) => return already_open(&session),
            }
        }
        (Some(text), Some(shared)) => {
            let Some((stream, pos)) = shared::parse_cursor(text) else {
                return bad_request(format!(
                    "Bad Request: Last-Event-ID {text:?} is not an event id of this server"
                ));
            };
            match shared::resume(&session, &shared, stream, pos).await {
                Ok(rx) => (rx, stream == STANDALONE),
                Err(r) => return with_session(r, &session),
            }
        }
        (None, None) => match session.open_standalone(priming) {
            Ok(rx) => (rx, true),
            Err(session::AlreadyOpen) => return already_open(&session),
        },
        (Some(text), None) => {
            let Some(cursor) = EventId::parse(text) else {
                return bad_request(format!(
                    "Bad Request: Last-Event-ID {text:?} is not an event id of this server"
                ));
            };
            match session.resume(cursor) {
                Resume::Stream(rx) => (rx, cursor.stream == STANDALONE),
                Resume::Unknown => {
                    return bad_request(format!(
                        "Bad Request: Last-Event-ID {text:?} names no stream of this session"
                    ));
                }
            }
        }
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

/// 409: the session's GET stream is already open.
fn already_open(session: &Session) -> Response {
    with_session(
        rpc_error(
            StatusCode::CONFLICT,
            codes::INVALID_REQUEST,
            "Conflict: this session already has an open GET stream; only one is allowed (resume with Last-Event-ID instead)",
        ),
        session,
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
    match &app.sessions.shared {
        Some(shared) => {
            if let Err(e) = shared::remove(&app, shared, &id).await {
                return shared::unavailable(&e);
            }
        }
        None => {
            app.sessions.remove(&id);
        }
    }
    let mut r = Response::new(Body::empty());
    *r.status_mut() = StatusCode::NO_CONTENT;
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(
        session: Option<&str>,
        initialize: bool,
        declares_version: bool,
        header: VersionHeader,
        sessionless: bool,
    ) -> Route {
        let signals = EraSignals {
            initialize,
            discover: false,
            declares_version,
            header,
        };
        classify(session.map(str::to_owned), signals, sessionless)
    }

    #[test]
    fn classification_follows_the_era_rules() {
        use VersionHeader::{Absent, Handshake, Other};
        // A session wins over everything.
        for (init, meta, header) in [(false, false, Absent), (true, true, Other)] {
            assert_eq!(
                route(Some("s"), init, meta, header, false),
                Route::Session("s".into())
            );
        }
        // initialize starts a session unless it carries a 2026-07-28 marker.
        assert_eq!(route(None, true, false, Absent, false), Route::Initialize);
        assert_eq!(
            route(None, true, false, Handshake, false),
            Route::Initialize
        );
        assert_eq!(route(None, true, true, Absent, false), Route::Stateless);
        assert_eq!(route(None, true, false, Other, false), Route::Stateless);
        // A handshake header without _meta is the handshake era.
        assert_eq!(
            route(None, false, false, Handshake, false),
            Route::Sessionless
        );
        // _meta wins over a handshake header (the header then mismatches: -32020).
        assert_eq!(route(None, false, true, Handshake, false), Route::Stateless);
        assert_eq!(route(None, false, false, Other, true), Route::Stateless);
        // No marker at all: stateless, unless sessionless handshake requests are served.
        assert_eq!(route(None, false, false, Absent, false), Route::Stateless);
        assert_eq!(route(None, false, false, Absent, true), Route::Sessionless);
    }

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
