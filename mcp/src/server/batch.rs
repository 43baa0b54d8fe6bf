//! JSON-RPC batches, which only protocol 2025-03-26 has: the one place their rules live,
//! for every transport that takes them.

use crate::protocol::jsonrpc::DecodeError;
use crate::protocol::methods::Method;
use crate::protocol::{ErrorObject, Message, ProtocolVersion, Reply};

/// A batch sorted for serving.
pub(crate) struct Sorted {
    /// The requests to run (together).
    pub(crate) requests: Vec<Message>,
    /// Notifications and answers to the server's questions: acted on, never answered.
    pub(crate) others: Vec<Message>,
    /// Replies decided without running anything: items that could not be decoded, and
    /// methods that may not be batched (`initialize`).
    pub(crate) refused: Vec<Reply>,
}

/// Whether a connection that negotiated `version` may send a batch; the refusal otherwise.
pub(crate) fn admit(version: Option<ProtocolVersion>) -> Result<(), ErrorObject> {
    if version.is_some_and(|v| v.allows_batches()) {
        return Ok(());
    }
    Err(ErrorObject::invalid_request(format!(
        "Invalid request: JSON-RPC batches are only part of protocol 2025-03-26; this session negotiated {}",
        version.map_or("no version", |v| v.as_str())
    )))
}

/// Sorts a decoded batch (see [`Sorted`]); which methods may be batched is the method
/// table's `batchable`.
pub(crate) fn sort(items: Vec<Result<Message, DecodeError>>) -> Sorted {
    let mut sorted = Sorted {
        requests: Vec::new(),
        others: Vec::new(),
        refused: Vec::new(),
    };
    for item in items {
        match item {
            Ok(Message::Request(r))
                if Method::parse(&r.method).is_some_and(|m| !m.spec().batchable) =>
            {
                sorted.refused.push(Reply::error(
                    Some(&r.id),
                    &ErrorObject::invalid_request(format!(
                        "Invalid request: {} cannot be batched",
                        r.method
                    )),
                ));
            }
            Ok(m @ Message::Request(_)) => sorted.requests.push(m),
            Ok(m) => sorted.others.push(m),
            Err(e) => sorted.refused.push(Reply::error(e.id(), &e.to_error())),
        }
    }
    sorted
}
