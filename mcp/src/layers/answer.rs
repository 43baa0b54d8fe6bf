//! What comes back through the layers: the reply the handler (or a layer) produced.

use serde_json::Value;

use crate::protocol::{CallToolResult, ErrorObject, Reply, meta_keys};

/// The answer to a request, as it travels back through the layers. It holds the reply
/// already encoded; a layer that looks inside pays for parsing it, one that does not
/// (timing, rate limits) pays nothing.
#[derive(Debug)]
pub struct Answer {
    outcome: Result<Reply, ErrorObject>,
}

impl Answer {
    pub(crate) fn new(outcome: Result<Reply, ErrorObject>) -> Self {
        Answer { outcome }
    }

    pub(crate) fn into_outcome(self) -> Result<Reply, ErrorObject> {
        self.outcome
    }

    /// Whether it is a JSON-RPC error.
    pub fn is_error(&self) -> bool {
        match &self.outcome {
            Ok(reply) => reply.error_code().is_some(),
            Err(_) => true,
        }
    }

    /// The JSON-RPC error code, for an error.
    pub fn error_code(&self) -> Option<i32> {
        match &self.outcome {
            Ok(reply) => reply.error_code(),
            Err(e) => Some(e.code),
        }
    }

    /// The result object as JSON text, exactly as it will be sent (with the members the
    /// server adds for the era); `None` for an error.
    pub fn result_json(&self) -> Option<&str> {
        self.outcome.as_ref().ok()?.result_json()
    }

    /// The size of the result in bytes (0 for an error).
    pub fn json_len(&self) -> usize {
        self.result_json().map_or(0, str::len)
    }

    /// The result object parsed, without the members the server adds for the era
    /// (`resultType`, the server's identity in `_meta`, cache hints): what a layer hands
    /// back to [`Request::answer`](super::Request::answer) after changing it.
    pub fn result(&self) -> Option<Value> {
        let mut value: Value = serde_json::from_str(self.result_json()?).ok()?;
        if let Value::Object(map) = &mut value {
            if map.get("resultType").and_then(Value::as_str) == Some("complete") {
                map.remove("resultType");
            }
            map.remove("ttlMs");
            map.remove("cacheScope");
            let empty = match map.get_mut("_meta") {
                Some(Value::Object(meta)) => {
                    meta.remove(meta_keys::SERVER_INFO);
                    meta.is_empty()
                }
                _ => false,
            };
            if empty {
                map.remove("_meta");
            }
        }
        Some(value)
    }

    /// A tool call's result, parsed.
    pub fn tool_result(&self) -> Option<CallToolResult> {
        serde_json::from_value(self.result()?).ok()
    }
}
