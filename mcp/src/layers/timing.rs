//! [`Timing`]: how long each request took, into `tracing`.

use std::time::Instant;

use super::{Answer, BoxFuture, Layer, Next, Request};

/// Records each request's method, target, outcome and duration as a `tracing` event
/// (target `mcp::timing`, level INFO). Place it first to time everything after it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Timing;

impl Layer for Timing {
    fn on_request<'a>(&'a self, req: &'a Request<'a>, next: Next<'a>) -> BoxFuture<'a, Answer> {
        Box::pin(async move {
            let start = Instant::now();
            let answer = next.run(req).await;
            tracing::info!(
                target: "mcp::timing",
                method = req.method().name(),
                target_name = req.target().unwrap_or(""),
                error = answer.is_error(),
                micros = start.elapsed().as_micros() as u64,
                "request served"
            );
            answer
        })
    }
}
