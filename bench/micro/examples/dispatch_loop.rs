//! A fixed number of in-process dispatches, for callgrind or perf:
//!
//! ```text
//! cargo build --profile profiling -p bench-micro --example dispatch_loop
//! valgrind --tool=callgrind target/profiling/examples/dispatch_loop call 20000
//! ```
//!
//! Modes: `call` (tools/call echo, handshake era), `stateless` (the same on 2026-07-28),
//! `list` (tools/list with 1,000 tools), `layered` (`call` behind three layers); `guarded`,
//! `guarded-stateless` and `guarded-list`: the same behind a tool and a read authorizer,
//! logging by default (INFO) to /dev/null, as users deploy it. `list-10000` and
//! `guarded-list-10000`: a whole listing of 10,000 tools, page by page (100 per page).
//!
//! Built with `--features otel` and run with `BENCH_OTEL=1`, every request is traced and
//! measured as with export on: spans go through the SDK's batch processor to an exporter
//! that drops them, so what is counted is the framework's and the SDK's work, not a
//! network's.

use mcp::server::{ConnId, Outbound, Transport};

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}"#;
const CALL: &str = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello, benchmark"}}}"#;
const CALL_STATELESS: &str = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello, benchmark"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
const LIST: &str = r#"{"jsonrpc":"2.0","id":8,"method":"tools/list"}"#;

fn main() {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| "call".into());
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(20_000);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    #[cfg(feature = "otel")]
    let _telemetry = std::env::var("BENCH_OTEL")
        .is_ok()
        .then(bench_micro::telemetry::install);
    let guarded = mode.starts_with("guarded");
    if guarded {
        bench_micro::default_logging("/dev/null");
    }
    let base = mode.trim_start_matches("guarded-");
    let server = match (base, guarded) {
        ("list", false) => bench_micro::server_with_tools(1000),
        ("list", true) => bench_micro::server_with_tools_guarded(1000, 1010),
        ("list-10000", false) => bench_micro::server_with_tools_paged(10_000, 100),
        ("list-10000", true) => bench_micro::server_with_tools_guarded(10_000, 100),
        ("layered", _) => bench_micro::server_with_layers(),
        (_, false) => bench_micro::server(),
        (_, true) => bench_micro::server_guarded(),
    };
    let (out, _rx) = Outbound::channel(1024);
    let conn = server.connect(ConnId::new("loop"), Transport::Stdio, out);
    let frame = match base {
        "stateless" => CALL_STATELESS,
        "list" | "list-10000" => LIST,
        _ => CALL,
    };
    rt.block_on(async {
        if base != "stateless" {
            conn.handle_frame(INITIALIZE.as_bytes()).await;
        }
        if base == "list-10000" {
            // One dispatch is a whole listing, every page in turn.
            let mut pages = 0;
            for _ in 0..n {
                let mut cursor: Option<String> = None;
                loop {
                    let request = match &cursor {
                        None => LIST.to_owned(),
                        Some(c) => format!(
                            r#"{{"jsonrpc":"2.0","id":8,"method":"tools/list","params":{{"cursor":{}}}}}"#,
                            serde_json::Value::String(c.clone())
                        ),
                    };
                    let reply = conn.handle_frame(request.as_bytes()).await.expect("a reply");
                    pages += 1;
                    // The cursor is found as a client reading only it would (a cursor is
                    // base64url: never escaped), so the loop measures the server, not a
                    // JSON parse of every page.
                    match next_cursor(reply.frame()) {
                        Some(c) => cursor = Some(c.to_owned()),
                        None => break,
                    }
                }
            }
            println!("{n} listings, {pages} pages");
            return;
        }
        let mut bytes = 0;
        for _ in 0..n {
            bytes += conn
                .handle_frame(frame.as_bytes())
                .await
                .map_or(0, |r| r.frame().len());
        }
        println!("{n} dispatches, {bytes} bytes of replies");
    });
}

/// The page's `nextCursor`, if it has one.
fn next_cursor(frame: &str) -> Option<&str> {
    const KEY: &str = "\"nextCursor\":\"";
    let at = frame.rfind(KEY)? + KEY.len();
    frame[at..].split('"').next()
}
