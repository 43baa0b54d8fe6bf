//! In-process dispatch, no I/O: one frame in, one reply out, through `Connection::handle_frame`
//! (decode, route, argument parsing, the handler, result encoding).

use criterion::{Criterion, criterion_group, criterion_main};
use mcp::server::{ConnId, Outbound, Transport};

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}"#;
const CALL: &str = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello, benchmark"}}}"#;
const CALL_STATELESS: &str = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello, benchmark"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
const LIST: &str = r#"{"jsonrpc":"2.0","id":8,"method":"tools/list"}"#;

fn dispatch(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();

    let server = bench_micro::server();
    let (out, _rx) = Outbound::channel(1024);
    let conn = server.connect(ConnId::new("bench"), Transport::Stdio, out);
    rt.block_on(conn.handle_frame(INITIALIZE.as_bytes()))
        .expect("initialize answered");
    let reply = rt.block_on(conn.handle_frame(CALL.as_bytes())).unwrap();
    assert!(
        reply.frame().contains("hello, benchmark"),
        "{}",
        reply.frame()
    );
    c.bench_function("tools/call echo (handshake era)", |b| {
        b.to_async(&rt)
            .iter(|| async { conn.handle_frame(CALL.as_bytes()).await })
    });

    let (out, _rx) = Outbound::channel(1024);
    let stateless = server.connect(ConnId::new("stateless"), Transport::Stdio, out);
    let reply = rt
        .block_on(stateless.handle_frame(CALL_STATELESS.as_bytes()))
        .unwrap();
    assert!(
        reply.frame().contains("hello, benchmark"),
        "{}",
        reply.frame()
    );
    c.bench_function("tools/call echo (2026-07-28)", |b| {
        b.to_async(&rt)
            .iter(|| async { stateless.handle_frame(CALL_STATELESS.as_bytes()).await })
    });

    let big = bench_micro::server_with_tools(1000);
    let (out, _rx) = Outbound::channel(1024);
    let conn = big.connect(ConnId::new("list"), Transport::Stdio, out);
    rt.block_on(conn.handle_frame(INITIALIZE.as_bytes()))
        .expect("initialize answered");
    let reply = rt.block_on(conn.handle_frame(LIST.as_bytes())).unwrap();
    assert!(
        reply.frame().contains("tool_999"),
        "all 1,000 tools on one page"
    );
    c.bench_function("tools/list, 1,000 tools", |b| {
        b.to_async(&rt)
            .iter(|| async { conn.handle_frame(LIST.as_bytes()).await })
    });
}

criterion_group!(benches, dispatch);
criterion_main!(benches);
