//! [`SizeLimit`]: refuses answers larger than a limit.

use super::{Answer, Layer, Method, Request, codes};
use crate::protocol::{CallToolResult, ErrorObject};

/// Refuses an answer whose result is larger than `max_bytes` of JSON: a tool call gets an
/// `isError` result saying so (the model can ask for less), anything else the JSON-RPC
/// error [`codes::RESULT_TOO_LARGE`]. The handler has run; its answer is dropped.
#[derive(Debug, Clone, Copy)]
pub struct SizeLimit {
    max_bytes: usize,
}

impl SizeLimit {
    /// Answers of at most `max_bytes` pass.
    pub fn new(max_bytes: usize) -> Self {
        SizeLimit { max_bytes }
    }
}

impl Layer for SizeLimit {
    fn on_answer(&self, req: &Request<'_>, answer: Answer) -> Answer {
        let len = answer.json_len();
        if len <= self.max_bytes {
            return answer;
        }
        tracing::warn!(target: "mcp::layers", method = req.method().name(), len, max = self.max_bytes, "answer over the size limit refused");
        let message = format!(
            "result_too_large: the result is {len} bytes; this server sends at most {} bytes",
            self.max_bytes
        );
        if req.method() == Method::ToolsCall {
            req.answer_tool(CallToolResult::error(message))
        } else {
            req.refuse(ErrorObject::new(codes::RESULT_TOO_LARGE, message))
        }
    }
}
