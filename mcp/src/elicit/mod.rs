//! Asking the client: requests the server sends (`elicitation/create`, `sampling/createMessage`,
//! `roots/list`), parked until their answer arrives, and the authorizer's Ask flow built on
//! them.
//!
//! Every parked request is keyed by an unguessable id and owned by one connection: only
//! that connection's answer is looked up, so an answer from anyone else is indistinguishable
//! from an unknown id and is silently ignored. Removal from the map is the single point of
//! closure, so each request is closed exactly once: by its answer, by its timeout, or by its
//! connection going away.

mod approval;
pub(crate) mod mrtr;
pub(crate) mod state;

use std::fmt;
use std::time::Duration;

use serde::Serialize;
use serde_json::value::RawValue;
use tokio::sync::oneshot;

pub(crate) use approval::{APPROVAL_KEY, Approval, approval_request, ask_approval, judge};

use crate::conn::{ConnState, Outbound, ParkRefused};
use crate::protocol::jsonrpc::encode_request;
use crate::protocol::{ErrorObject, RequestId, Response};

/// Why a request to the client produced no answer.
#[derive(Clone, Debug, PartialEq)]
pub enum ClientRequestError {
    /// The client did not declare the capability, or there is no channel to reach it.
    NotSupported,
    /// The connection went away before an answer arrived.
    Disconnected,
    /// No answer within the timeout.
    Timeout,
    /// The client answered with an error.
    Rejected(ErrorObject),
    /// The client's answer did not have the expected shape.
    Malformed(String),
    /// As many requests to this client as the server allows are already waiting for an
    /// answer (`ServerConfig::max_pending_per_connection`).
    TooManyPending,
}

impl fmt::Display for ClientRequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientRequestError::NotSupported => {
                f.write_str("the client cannot be asked (capability not declared or no channel)")
            }
            ClientRequestError::Disconnected => f.write_str("the client disconnected"),
            ClientRequestError::Timeout => f.write_str("the client did not answer in time"),
            ClientRequestError::Rejected(e) => write!(f, "the client refused: {}", e.message),
            ClientRequestError::Malformed(m) => write!(f, "the client's answer was malformed: {m}"),
            ClientRequestError::TooManyPending => {
                f.write_str("too many requests to this client are already waiting for an answer")
            }
        }
    }
}

impl std::error::Error for ClientRequestError {}

/// Sends a request to the client over `sink` and waits for its answer.
pub(crate) async fn request_client<P: Serialize>(
    conn: &ConnState,
    sink: &Outbound,
    kind: &str,
    method: &str,
    params: &P,
    timeout: Duration,
) -> Result<Box<RawValue>, ClientRequestError> {
    request_client_as(conn, sink, kind, method, params, timeout, false).await
}

/// [`request_client`], marking the request as the authorizer's approval question when
/// `approval` is set (a replica that closes it for a replica that died denies the call).
/// With telemetry on, the round trip is an `mcp.client_request` span.
pub(crate) async fn request_client_as<P: Serialize>(
    conn: &ConnState,
    sink: &Outbound,
    kind: &str,
    method: &str,
    params: &P,
    timeout: Duration,
    approval: bool,
) -> Result<Box<RawValue>, ClientRequestError> {
    let ask = ask_client(conn, sink, kind, method, params, timeout, approval);
    #[cfg(feature = "otel")]
    if crate::telemetry::active() {
        use tracing::Instrument as _;
        return ask
            .instrument(crate::telemetry::client_request_span(method))
            .await;
    }
    ask.await
}

/// Parks a request to the client, sends it and waits for its answer.
async fn ask_client<P: Serialize>(
    conn: &ConnState,
    sink: &Outbound,
    kind: &str,
    method: &str,
    params: &P,
    timeout: Duration,
    approval: bool,
) -> Result<Box<RawValue>, ClientRequestError> {
    let id = format!("mcp-{kind}-{}", crate::util::random_token(12));
    let (tx, rx) = oneshot::channel();
    let parked = {
        let mut pending = conn.pending.lock();
        let parked = pending.park(id.clone(), tx);
        if parked.is_ok() && approval {
            pending.mark_approval(&id);
        }
        parked
    };
    match parked {
        Ok(()) => {}
        Err(ParkRefused::Closed) => return Err(ClientRequestError::Disconnected),
        Err(ParkRefused::Full) => {
            tracing::warn!(target: "mcp::elicit", conn_id = %conn.id, method, "refusing a request to the client: too many are waiting for an answer");
            return Err(ClientRequestError::TooManyPending);
        }
    }
    // However the wait ends (answer, timeout, or this future being dropped because the
    // request that asked was cancelled or ran out of time), the entry goes with it.
    let _parked = Parked { conn, id: &id };
    let request_id = RequestId::from(id.as_str());
    // With telemetry on, the question carries its span's trace context in `_meta`.
    #[cfg(feature = "otel")]
    let frame = match crate::telemetry::params_with_trace(params) {
        Some(traced) => encode_request(&request_id, method, &traced),
        None => encode_request(&request_id, method, params),
    };
    #[cfg(not(feature = "otel"))]
    let frame = encode_request(&request_id, method, params);
    if !sink.send(frame).await {
        conn.pending.lock().take(&id);
        return Err(ClientRequestError::Disconnected);
    }
    let mut rx = rx;
    let outcome = tokio::select! {
        answer = &mut rx => Some(answer),
        _ = tokio::time::sleep(timeout) => None,
    };
    match outcome {
        Some(Ok(Ok(result))) => Ok(result),
        Some(Ok(Err(error))) => Err(ClientRequestError::Rejected(error)),
        Some(Err(_)) => Err(ClientRequestError::Disconnected),
        None => {
            // Whoever removes the entry closes the request. If the answer won the race it
            // is already in the channel, and it counts.
            if conn.pending.lock().take(&id).is_some() {
                Err(ClientRequestError::Timeout)
            } else {
                match rx.try_recv() {
                    Ok(Ok(result)) => Ok(result),
                    Ok(Err(error)) => Err(ClientRequestError::Rejected(error)),
                    Err(_) => Err(ClientRequestError::Timeout),
                }
            }
        }
    }
}

/// Removes a parked request's entry when its waiter goes away.
struct Parked<'a> {
    conn: &'a ConnState,
    id: &'a str,
}

impl Drop for Parked<'_> {
    fn drop(&mut self) {
        self.conn.pending.lock().take(self.id);
    }
}

/// Routes an answer to the request it belongs to, if this connection owns one with that
/// id. Anything else (unknown id, another connection's id, a late answer) is dropped.
pub(crate) fn deliver(conn: &ConnState, response: Response) {
    let RequestId::String(id) = &response.id else {
        tracing::debug!(target: "mcp::elicit", conn_id = %conn.id, "ignoring a response to an id the server never sent");
        return;
    };
    let waiter = conn.pending.lock().take(id);
    match waiter {
        Some(tx) => {
            let _ = tx.send(response.outcome);
        }
        None => {
            tracing::debug!(target: "mcp::elicit", conn_id = %conn.id, "ignoring a stray response");
        }
    }
}
