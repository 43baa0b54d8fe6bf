//! [`Timing`]: how long each request took, into `tracing`.

use super::{Answer, Layer, Request};

/// Records each request's method, target, outcome and duration as a `tracing` event
/// (target `mcp::timing`), at DEBUG unless [`Timing::info`] says INFO, timed from when the
/// request reached the layers. At a level the subscriber filters out, it reads no clock
/// and writes nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct Timing {
    info: bool,
}

impl Timing {
    /// Events at DEBUG (`--log-level debug`, or a filter naming `mcp::timing`).
    pub fn new() -> Self {
        Timing { info: false }
    }

    /// Events at INFO: every request shows in the default log.
    pub fn info() -> Self {
        Timing { info: true }
    }
}

impl Layer for Timing {
    fn on_answer(&self, req: &Request<'_>, answer: Answer) -> Answer {
        // The fields (the clock read among them) are only evaluated when the event is
        // enabled.
        macro_rules! event {
            ($level:expr) => {
                tracing::event!(
                    target: "mcp::timing",
                    $level,
                    method = req.method().name(),
                    target_name = req.target().unwrap_or(""),
                    error = answer.is_error(),
                    micros = req.received().elapsed().as_micros() as u64,
                    "request served"
                )
            };
        }
        if self.info {
            event!(tracing::Level::INFO);
        } else {
            event!(tracing::Level::DEBUG);
        }
        answer
    }
}
