//! The stateless revision (2026-07-28) on the Streamable HTTP endpoint: one POST per
//! request, no session, every request carrying its own metadata in `_meta` and mirrored
//! in headers.
//!
//! # Validation, in order
//!
//! 1. `_meta` declares a protocol version but `MCP-Protocol-Version` is absent: 400, -32020.
//! 2. `_meta` lacks a required member (`protocolVersion`, `clientCapabilities`), or the
//!    params are not an object: 400, -32602.
//! 3. A header disagrees with the body (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`,
//!    `Mcp-Param-*`), is missing, or is malformed: 400, -32020.
//! 4. The version is not one this server speaks: 400, -32022 with `supported` and
//!    `requested`.
//! 5. The method does not exist in this revision (including the handshake-only ones) or
//!    belongs to a capability the server does not offer: 404, -32601.
//! 6. The request needs a client capability its `_meta` does not declare: 400, -32021.
//!
//! Every error keeps the request's id and has a JSON-RPC body, so a client can tell a
//! 2026-07-28 server from a legacy one. Other JSON-RPC errors (an unknown tool, bad arguments)
//! are answered with 200.
//!
//! # Responses
//!
//! A request is answered with one JSON body when nothing comes before its response, and
//! with an SSE stream (`X-Accel-Buffering: no`, no event ids: streams are not resumable)
//! when something does: only that request's own notifications (progress; logs when its
//! `_meta` asks for a level), then its response, which ends the stream. The server never
//! sends a request on this revision. A `subscriptions/listen` stream starts with its
//! acknowledgement, carries the change notifications it asked for, gets keep-alive
//! comments while idle, and ends with the listen's result when the server shuts down.
//!
//! Closing the stream (or the connection) cancels the request: its handler's future is
//! dropped. A notification is answered 202 with an empty body. No `Mcp-Session-Id` is
//! minted or echoed, and `Last-Event-ID` means nothing here.

use std::sync::Arc;

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use tokio::sync::{mpsc, oneshot};
use tokio::task::AbortHandle;

use super::errors::{accepted, decode_error};
use super::exchange::{Answer, StreamLog, done, drive};
use super::headers::{self, Mirrored};
use super::request::{VERSION_HEADER, step_up};
use crate::auth::Principal;
use crate::conn::HttpHeaders;
use crate::layers::BoxFuture;
use crate::protocol::inbound::{ParamsHead, StatelessMeta};
use crate::protocol::jsonrpc::Incoming;
use crate::protocol::{Era, ErrorObject, Message, Request, RequestId, codes};
use crate::server::{ConnId, Reply, RequestExtras, Transport};
use crate::transport::http::app::App;
use crate::transport::http::guard::{bad_request, http_headers, json_response};
use crate::transport::http::sse_body::{Stops, message_event, sse_response};

/// The connection id every stateless request is served under (each with state of its own,
/// see [`crate::Server::detached`]). It never has a transport
/// attached: the server keeps nothing about a caller between requests and never asks it
/// anything outside a result.
const STATELESS: &str = "http-stateless";

/// The connection id of every 2026-07-28 request over HTTP: one id shared, not one made
/// (and freed) per request.
fn stateless_id() -> &'static ConnId {
    static ID: std::sync::OnceLock<ConnId> = std::sync::OnceLock::new();
    ID.get_or_init(|| ConnId::new(STATELESS))
}

/// Serves one POST of the stateless revision.
pub(super) async fn post(
    app: &Arc<App>,
    headers: HeaderMap,
    incoming: Incoming,
    principal: Option<Arc<Principal>>,
) -> Response {
    match incoming {
        Incoming::Single(Err(e)) => decode_error(&e),
        Incoming::Batch(_) => bad_request(
            "Invalid request: a POST carries exactly one JSON-RPC message; batches are not part of protocol 2026-07-28",
        ),
        // This revision defines no client notifications over HTTP (closing a stream is the
        // cancellation): accepted, and nothing to act on.
        Incoming::Single(Ok(Message::Notification(_))) => accepted(),
        Incoming::Single(Ok(Message::Response(_))) => bad_request(
            "Invalid request: clients send no responses in protocol 2026-07-28; answer an input-required result by retrying the request with inputResponses",
        ),
        Incoming::Single(Ok(Message::Request(request))) => {
            serve(app, headers, request, principal).await
        }
    }
}

/// A refusal before dispatch: its status and error.
struct Refusal(StatusCode, ErrorObject);

/// Steps 1 to 5 of the validation (see the module docs): the request's metadata, read
/// once here and handed to the dispatcher with the request.
fn validate(
    app: &App,
    headers: &HeaderMap,
    request: &Request,
) -> Result<Arc<StatelessMeta>, Refusal> {
    let bad = |e| Refusal(StatusCode::BAD_REQUEST, e);
    let params = request.params.as_ref();
    let head = ParamsHead::of(params).map_err(bad)?;
    if head.declares_version() && !headers.contains_key(VERSION_HEADER) {
        return Err(bad(ErrorObject::new(
            codes::HEADER_MISMATCH,
            "Header mismatch: the MCP-Protocol-Version header is required and must equal _meta[\"io.modelcontextprotocol/protocolVersion\"]",
        )));
    }
    let meta = StatelessMeta::parse(
        &head,
        params,
        "sends initialize first and then Mcp-Session-Id",
    )
    .map_err(bad)?;
    let mirrored = Mirrored {
        method: &request.method,
        protocol_version: &meta.protocol_version,
        name: ParamsHead::text(head.name),
        uri: ParamsHead::text(head.uri),
        task_id: ParamsHead::text(head.task_id),
        arguments: head.arguments,
    };
    headers::check(headers, &mirrored, app.server.registry())
        .map_err(|m| bad(ErrorObject::new(codes::HEADER_MISMATCH, m.0)))?;
    // Steps 4 and 5, answered here so that a scope challenge never hides them.
    meta.admit(&request.method)
        .map_err(|e| Refusal(status_for(Some(e.code)), e))?;
    Ok(Arc::new(meta))
}

/// The status of an error the server answered with.
fn status_for(code: Option<i32>) -> StatusCode {
    match code {
        Some(codes::METHOD_NOT_FOUND) => StatusCode::NOT_FOUND,
        Some(
            codes::HEADER_MISMATCH
            | codes::MISSING_CLIENT_CAPABILITY
            | codes::UNSUPPORTED_PROTOCOL_VERSION,
        ) => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    }
}

fn refuse(id: &RequestId, Refusal(status, error): Refusal) -> Response {
    json_response(status, Reply::error(Some(id), &error).into_frame())
}

async fn serve(
    app: &Arc<App>,
    headers: HeaderMap,
    request: Request,
    principal: Option<Arc<Principal>>,
) -> Response {
    let meta = match validate(app, &headers, &request) {
        Ok(meta) => meta,
        Err(refusal) => return refuse(&request.id, refusal),
    };
    if let Some(refusal) = step_up(app, &request, principal.as_deref()) {
        return refusal;
    }
    run(app, request, meta, http_headers(headers), principal).await
}

/// Aborts the task running a request when dropped: when the client goes away before the
/// answer, or closes the SSE stream. Without a task (the request finished on its first
/// poll) there is nothing to abort.
struct AbortOnDrop(Option<AbortHandle>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        if let Some(task) = &self.0 {
            task.abort();
        }
    }
}

/// Runs the request (on a task of its own once it waits for anything) and answers with its
/// response as JSON, or with an SSE stream as soon as it produces a notification before
/// its response.
async fn run(
    app: &Arc<App>,
    request: Request,
    meta: Arc<StatelessMeta>,
    headers: Arc<HttpHeaders>,
    principal: Option<Arc<Principal>>,
) -> Response {
    let id = request.id.clone();
    let (answer_tx, answer_rx) = oneshot::channel();
    let task = super::exchange::start(|| {
        exchange(
            app.server.clone(),
            request,
            RequestExtras {
                sink: None,
                principal,
                era: Some(Era::Stateless),
                meta: Some(meta),
                headers: Some(headers),
            },
            app.server.config().outbound_capacity,
            answer_tx,
        )
    });
    let guard = AbortOnDrop(task.map(|t| t.abort_handle()));
    match answer_rx.await {
        Ok(Answer::Json(reply)) => {
            json_response(status_for(reply.error_code()), reply.into_frame())
        }
        Ok(Answer::Nothing) => accepted(),
        Ok(Answer::Stream(live_rx)) => {
            sse_response(live_rx, app.config.keep_alive, Stops::default(), guard)
        }
        Err(_) => {
            tracing::error!(target: "mcp::http", "a stateless request ended without an answer");
            json_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                Reply::error(
                    Some(&id),
                    &ErrorObject::internal("Internal error: the request ended without a response"),
                )
                .into_frame(),
            )
        }
    }
}

/// A stateless request's stream: straight to its one response body, nothing stored (it
/// cannot be resumed). Empty until the response becomes a stream.
struct Direct(Option<mpsc::Sender<Bytes>>);

impl Direct {
    /// Sends one event; `false` when nobody reads the stream (or there is none).
    async fn send(&self, frame: &str) -> bool {
        match &self.0 {
            Some(live) => live.send(message_event(None, frame)).await.is_ok(),
            None => false,
        }
    }
}

impl StreamLog for Direct {
    fn open(&mut self, live: mpsc::Sender<Bytes>) -> BoxFuture<'_, ()> {
        self.0 = Some(live);
        done()
    }

    fn publish(&mut self, frame: String) -> BoxFuture<'_, bool> {
        // A closed stream means its reader is gone: nobody is left to answer.
        Box::pin(async move { self.send(&frame).await })
    }

    fn finish(&mut self, replies: Vec<Reply>) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            for reply in replies {
                self.send(reply.frame()).await;
            }
        })
    }
}

async fn exchange(
    server: crate::Server,
    request: Request,
    extras: RequestExtras,
    capacity: usize,
    answer_tx: oneshot::Sender<Answer>,
) {
    let id = request.id.clone();
    let mut channel = super::exchange::Channel::take(capacity);
    let conn = stateless_id();
    // Inline: `exchange::start` boxes this whole future before it is polled, so tokio,
    // which moves a task's future several times as it spawns and finishes it, only ever
    // moves the box (inline in the task those copies were 7% of a 2026-07-28 request's
    // server CPU over HTTP at 16 clients).
    let extras = RequestExtras {
        sink: Some(channel.sink()),
        ..extras
    };
    let work = std::pin::pin!(async {
        let reply = server
            .detached(conn, Transport::Http)
            .handle_with(Message::Request(request), extras)
            .await;
        // A request always has a response; a missing one is an internal failure, still
        // answered so the client is not left waiting.
        [Some(reply.unwrap_or_else(|| {
            Reply::error(
                Some(&id),
                &ErrorObject::internal("Internal error: the request ended without a response"),
            )
        }))]
    });
    drive(
        work,
        channel.receiver(),
        Vec::new(),
        false,
        None,
        &mut Direct(None),
        answer_tx,
    )
    .await;
    channel.give_back();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_follow_the_revision() {
        assert_eq!(status_for(Some(-32601)), StatusCode::NOT_FOUND);
        for code in [-32020, -32021, -32022] {
            assert_eq!(status_for(Some(code)), StatusCode::BAD_REQUEST);
        }
        for code in [Some(-32602), Some(-32603), None] {
            assert_eq!(status_for(code), StatusCode::OK);
        }
    }
}
