//! A POST, from the era of its body to its answer: a new session (`initialize`), an
//! existing session, a handshake request without a session, or the stateless revision
//! ([`super::stateless`]). Requests on a session run through the one exchange driver
//! ([`super::exchange`]); the session backend decides where their stream goes.

use std::sync::Arc;

use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use tokio::sync::oneshot;

use super::errors::with_session;
use super::errors::{accepted, decode_error, session_not_found, session_required, sessions_full};
use super::exchange::{Answer, drive};
use super::request::{ANONYMOUS, VERSION_HEADER, lookup, session_header, step_up, version_header};
use super::session::{self, Session};
use super::stateless;
use crate::auth::Principal;
use crate::protocol::inbound::{EraSignals, VersionHeader};
use crate::protocol::jsonrpc::Incoming;
use crate::protocol::{Era, ErrorObject, Message, codes, methods};
use crate::server::{ConnId, Outbound, Reply, RequestExtras, Transport};
use crate::transport::http::app::App;
use crate::transport::http::guard::{
    accepts_all, bad_request, declared_too_large, decode_body, http_headers, is_json,
    json_response, memory_pressure, payload_too_large, read_body, rpc_error,
    unsupported_media_type,
};
use crate::transport::http::sse_body::{Stops, sse_response};

/// The path a POST takes.
#[derive(Debug, PartialEq, Eq)]
enum Route<'a> {
    /// An existing session.
    Session(&'a str),
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
fn classify(session: Option<&str>, signals: EraSignals, sessionless: bool) -> Route<'_> {
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

pub(super) async fn post_handler(
    app: Arc<App>,
    principal: Option<Arc<Principal>>,
    request: axum::extract::Request,
) -> Response {
    // The headers are moved into the requests' extras below, not copied.
    let (parts, body) = request.into_parts();
    let headers = parts.headers;
    if !is_json(&headers) {
        return unsupported_media_type(&headers);
    }
    if !accepts_all(&headers, ["application/json", "text/event-stream"]) {
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
    let session_id = match session_header(&headers) {
        Ok(s) => s,
        Err(r) => return r,
    };
    app.watch_shutdown();
    let incoming = decode_body(bytes);
    if let Some(refusal) = memory_refusal(&app, &incoming) {
        return refusal;
    }
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
    // What every handshake-era request of this POST carries besides the message; the
    // headers move into it once nothing else reads them.
    let extras = |principal: Option<Arc<Principal>>, headers: HeaderMap| RequestExtras {
        sink: None,
        principal,
        era: Some(Era::Handshake),
        meta: None,
        headers: Some(http_headers(headers)),
    };
    match route {
        Route::Session(id) => {
            if let Err(r) = version_header(&headers) {
                return r;
            }
            let session = match lookup(&app, id, principal.as_deref()).await {
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
            let extras = extras(principal, headers);
            let response = on_session(&app, &session, incoming, extras).await;
            with_session(response, &session)
        }
        Route::Initialize => {
            let Incoming::Single(Ok(message)) = incoming else {
                return session_required();
            };
            // Boxed, as below: these run a request inline (its whole future), and axum boxes
            // this handler's future for every POST, most of which never take these paths.
            Box::pin(start_session(&app, message, extras(principal, headers))).await
        }
        Route::Sessionless if app.config.sessionless => {
            Box::pin(sessionless(&app, incoming, extras(principal, headers))).await
        }
        Route::Sessionless => match incoming {
            Incoming::Single(Err(e)) => decode_error(&e),
            _ => session_required(),
        },
        Route::Stateless => stateless::post(&app, headers, incoming, principal).await,
    }
}

/// 503 for a POST that would start new work (a request, a new session) while memory is
/// short; notifications and answers to the server's questions go through, as do the
/// requests that keep running work going ([`crate::pressure`]).
fn memory_refusal(app: &App, incoming: &Incoming) -> Option<Response> {
    let admission = app.server.admission();
    match incoming {
        Incoming::Single(Ok(Message::Request(r))) => admission
            .refuses(&r.method)
            .map(|e| memory_pressure(Some(&r.id), &e)),
        Incoming::Batch(items) => items
            .iter()
            .find_map(|m| match m {
                Ok(Message::Request(r)) => admission.refuses(&r.method),
                _ => None,
            })
            .map(|e| memory_pressure(None, &e)),
        _ => None,
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
    if let Err(refusal) = session.backend.created(&session).await {
        // A session the other replicas cannot see would fail on its next request.
        app.sessions.remove(&session.id);
        return refusal;
    }
    with_session(json_response(StatusCode::OK, reply.into_frame()), &session)
}

/// A notification, or an answer to the server's own question, on a session: no user code
/// runs, so it is handled before the 202. With a cluster, an answer is routed to the
/// replica holding the question, and a change (`initialized`) is saved.
async fn not_a_request(session: &Session, message: Message) {
    session.backend.deliver(session, message).await;
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
            answer_post(app, session, Work::One(Message::Request(request)), extras).await
        }
        Incoming::Single(Ok(message)) => {
            not_a_request(session, message).await;
            accepted()
        }
        Incoming::Batch(items) => {
            if let Err(e) = crate::server::batch::admit(session.version()) {
                return bad_request(e.message);
            }
            let sorted = crate::server::batch::sort(items);
            for m in sorted.others {
                not_a_request(session, m).await;
            }
            let (requests, premade) = (sorted.requests, sorted.refused);
            if requests.is_empty() && premade.is_empty() {
                return accepted();
            }
            answer_post(app, session, Work::Batch(requests, premade), extras).await
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
            // Which methods change per-session state is the method table's to say.
            let needs_session = crate::protocol::methods::Method::parse(&request.method)
                .is_some_and(|m| m.spec().session_state);
            if needs_session {
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
                .detached(&ConnId::new(ANONYMOUS), Transport::Http)
                .handle_with(Message::Request(request), extras)
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

/// What a POST on a session runs.
enum Work {
    /// One request, answered with one response.
    One(Message),
    /// A batch's requests, and the replies decided for it before dispatch; answered with
    /// one array.
    Batch(Vec<Message>, Vec<Reply>),
}

/// Runs a POST's requests through the one exchange driver (on a task of their own once
/// they wait for anything: a client disconnecting does not cancel them), and answers with
/// JSON, or with an SSE stream once the requests produce a message before their responses.
async fn answer_post(
    app: &Arc<App>,
    session: &Arc<Session>,
    work: Work,
    extras: RequestExtras,
) -> Response {
    let (answer_tx, answer_rx) = oneshot::channel();
    let priming = session.primes().then_some(app.config.retry);
    let requests = match &work {
        Work::One(message) => std::slice::from_ref(message),
        Work::Batch(requests, _) => requests,
    };
    let mut log = session.backend.stream_log(session, priming, requests);
    let capacity = app.server.config().outbound_capacity;
    let running = Arc::clone(session);
    super::exchange::start(|| async move {
        let _busy = running.busy();
        let mut channel = super::exchange::Channel::take(capacity);
        // Borrowed: a token's clone and drop each take its lock.
        let stop = Some(running.closed.token());
        match work {
            // One request needs neither `join_all`'s array of futures nor a list of
            // replies: this is every POST of a client that does not batch.
            Work::One(message) => {
                let extras = RequestExtras {
                    sink: Some(channel.sink()),
                    ..extras
                };
                let work =
                    std::pin::pin!(async { [running.conn.handle_with(message, extras).await] });
                let rx = channel.receiver();
                drive(work, rx, Vec::new(), false, stop, &mut *log, answer_tx).await;
            }
            Work::Batch(requests, premade) => {
                let sink = channel.sink();
                let with_sink = |sink: &Outbound| RequestExtras {
                    sink: Some(sink.clone()),
                    ..extras.clone()
                };
                let work = std::pin::pin!(futures::future::join_all(
                    requests
                        .into_iter()
                        .map(|m| running.conn.handle_with(m, with_sink(&sink))),
                ));
                drop(sink);
                let rx = channel.receiver();
                drive(work, rx, premade, true, stop, &mut *log, answer_tx).await;
            }
        }
        channel.give_back();
    });
    match answer_rx.await {
        Ok(Answer::Json(reply)) => json_response(StatusCode::OK, reply.into_frame()),
        Ok(Answer::Nothing) => accepted(),
        Ok(Answer::Stream(live_rx)) => sse_response(
            live_rx,
            app.config.keep_alive,
            Stops {
                closed: Some(session.closed.token().clone()),
                shutdown: None,
            },
            (session.busy(), session.stream_slot_for_request()),
        ),
        Err(_) => session_not_found(),
    }
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
    ) -> Route<'_> {
        let signals = EraSignals {
            initialize,
            discover: false,
            declares_version,
            header,
        };
        classify(session, signals, sessionless)
    }

    #[test]
    fn classification_follows_the_era_rules() {
        use VersionHeader::{Absent, Handshake, Other};
        // A session wins over everything.
        for (init, meta, header) in [(false, false, Absent), (true, true, Other)] {
            assert_eq!(
                route(Some("s"), init, meta, header, false),
                Route::Session("s")
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
}
