//! Replies: a response already encoded as one compact JSON line, plus what a transport needs
//! to know about it (the id, and the error code to pick an HTTP status from).

use serde::Serialize;
use serde_json::Value;

use crate::protocol::jsonrpc::encode_error;
use crate::protocol::{ErrorObject, RequestId};

/// A response ready to write.
#[derive(Clone, Debug, PartialEq)]
pub struct Reply {
    frame: String,
    id: Option<RequestId>,
    error_code: Option<i32>,
    /// Where the result object starts in `frame` (0: not a success response).
    result_at: usize,
}

impl Reply {
    /// A success response whose result (JSON text of an object) `write` appends to the
    /// frame: the result is written once, straight into the line that goes out.
    pub(crate) fn result_with(
        id: &RequestId,
        capacity: usize,
        write: impl FnOnce(&mut String),
    ) -> Reply {
        let mut frame = String::with_capacity(capacity + 48);
        frame.push_str(r#"{"jsonrpc":"2.0","id":"#);
        id.push_json(&mut frame);
        frame.push_str(r#","result":"#);
        let result_at = frame.len();
        write(&mut frame);
        frame.push('}');
        Reply {
            frame,
            id: Some(id.clone()),
            error_code: None,
            result_at,
        }
    }

    /// A success response whose result is already JSON text (an object).
    pub(crate) fn raw_result(id: &RequestId, result_json: &str) -> Reply {
        Reply::result_with(id, result_json.len(), |frame| frame.push_str(result_json))
    }

    /// A success response.
    pub(crate) fn result<T: Serialize + ?Sized>(id: &RequestId, result: &T) -> Reply {
        Reply::result_written(id, |out| serde_json::to_writer(out, result))
    }

    /// A success response whose result `write` serializes straight into the line that
    /// goes out. Serializing our own protocol types cannot fail (no non-string map keys,
    /// no non-finite floats of ours); if it did, the result is `null`.
    pub(crate) fn result_written(
        id: &RequestId,
        write: impl FnOnce(&mut Vec<u8>) -> serde_json::Result<()>,
    ) -> Reply {
        let mut frame = Vec::with_capacity(192);
        frame.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
        id.write_json(&mut frame);
        frame.extend_from_slice(br#","result":"#);
        let at = frame.len();
        if write(&mut frame).is_err() {
            frame.truncate(at);
            frame.extend_from_slice(b"null");
        }
        frame.push(b'}');
        // serde_json writes UTF-8, as do the pieces around it; the check is cheap.
        let frame = String::from_utf8(frame).unwrap_or_default();
        Reply {
            result_at: if frame.is_empty() { 0 } else { at },
            frame,
            id: Some(id.clone()),
            error_code: None,
        }
    }

    /// An error response (without an id when the request's id could not be read).
    pub fn error(id: Option<&RequestId>, error: &ErrorObject) -> Reply {
        Reply {
            frame: encode_error(id, error),
            id: id.cloned(),
            error_code: Some(error.code),
            result_at: 0,
        }
    }

    /// Several replies as one batch array; `None` if there are none.
    pub(crate) fn batch(replies: Vec<Reply>) -> Option<Reply> {
        if replies.is_empty() {
            return None;
        }
        let mut frame = String::from("[");
        for (i, r) in replies.iter().enumerate() {
            if i > 0 {
                frame.push(',');
            }
            frame.push_str(&r.frame);
        }
        frame.push(']');
        Some(Reply {
            frame,
            id: None,
            error_code: None,
            result_at: 0,
        })
    }

    /// The encoded JSON line.
    pub fn frame(&self) -> &str {
        &self.frame
    }

    /// Consumes the reply, returning its JSON line.
    pub fn into_frame(self) -> String {
        self.frame
    }

    /// The id it answers.
    pub fn id(&self) -> Option<&RequestId> {
        self.id.as_ref()
    }

    /// The error code, for an error response.
    pub fn error_code(&self) -> Option<i32> {
        self.error_code
    }

    /// The result object of a success response as JSON text, exactly as sent; `None` for
    /// an error or a batch.
    pub fn result_json(&self) -> Option<&str> {
        if self.result_at == 0 {
            return None;
        }
        self.frame.get(self.result_at..self.frame.len() - 1)
    }

    /// The reply parsed back into JSON (for tests and logs).
    pub fn to_value(&self) -> Value {
        serde_json::from_str(&self.frame).unwrap_or(Value::Null)
    }
}
