//! Middleware: the built-in layers and one of our own around a small server, on any
//! transport.
//!
//! ```text
//! cargo run -p mcp-examples --bin middleware                 # serve on stdio
//! cargo run -p mcp-examples --bin middleware -- --list       # what it offers
//! cargo run -p mcp-examples --bin middleware -- --log-level warn,mcp::timing=info   # only the timings
//! ```
//!
//! Every request passes the authorizer first, then these layers in order (the first is the
//! outermost), then the handler.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use mcp::extract::State;
use mcp::layers::{Layer, Next, Pending, RateLimit, Request, ResponseCache, SizeLimit, Timing};
use mcp::prelude::*;

/// How many tool calls the server answered, by any caller: the server's state, shared by
/// the layer that counts and the tool that reports.
#[derive(Default)]
struct Calls(AtomicU64);

/// Counts the tool calls that reached a tool (after the authorizer and every layer before
/// it), and stamps each answer with the running total.
struct CountCalls;

impl Layer for CountCalls {
    fn on_call_tool<'a>(&'a self, req: &'a Request<'a>, next: Next<'a>) -> Pending<'a> {
        Pending::new(async move {
            let n = req
                .state::<Calls>()
                .map_or(0, |calls| calls.0.fetch_add(1, Ordering::Relaxed) + 1);
            let answer = next.run(req).await;
            match answer.tool_result() {
                Some(mut result) if !result.is_error() => {
                    result
                        .content
                        .push(ContentBlock::text(format!("(call #{n} on this server)")));
                    req.answer_tool(result)
                }
                _ => answer,
            }
        })
    }
}

/// Adds two integers.
#[tool(read_only, idempotent)]
async fn add(
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
) -> i64 {
    a + b
}

/// How many tool calls this server has answered.
#[tool(read_only)]
async fn ledger(calls: State<Calls>) -> String {
    format!("{} calls so far", calls.0.load(Ordering::Relaxed))
}

/// A slow, cacheable report: the cache answers repeats for 30 seconds.
#[resource("report://daily", mime = "text/plain")]
async fn daily_report() -> String {
    tokio::time::sleep(Duration::from_millis(200)).await;
    "All systems nominal.".to_owned()
}

mcp::server! {
    name: "middleware",
    description: "A small server behind rate limiting, caching, a size limit and timing",
    tools: [add, ledger],
    resources: [daily_report],
    state: [Calls::default()],
    authorizer: mcp::auth::allow_all(),
    layers: [
        Timing::info(),
        RateLimit::per_principal(20, 5.0),
        ResponseCache::new(Duration::from_secs(30)),
        SizeLimit::new(64 * 1024),
        CountCalls,
    ],
}
