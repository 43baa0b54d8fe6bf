//! The HTTP transports under a client that stops reading its SSE stream, and the bound on
//! the events kept for resumption: a bounded buffer, then the stream is dropped, never the
//! server.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use mcp::registry::ToolDef;
use mcp::{Ctx, Server};
use mcp_tests::http::{HttpTestServer, SseReader, plain_client, test_config, with_header};
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Size {
    bytes: usize,
}

fn server() -> Server {
    Server::builder("slow-readers", "1")
        .tool(ToolDef::from_fn(
            "big",
            "Answers with `bytes` bytes of text.",
            |_ctx: Ctx, s: Size| async move { "b".repeat(s.bytes) },
        ))
        .tool(ToolDef::from_fn(
            "add",
            "Adds.",
            |_ctx: Ctx, x: mcp_tests::AddArgs| async move { x.a + x.b },
        ))
        .enable_resources()
        .build()
        .unwrap()
}

/// A GET written by hand on a socket with a small receive buffer; only the response head
/// (and whatever fits in `head_bytes`) is read, then the client stops reading.
async fn stalled_get(
    addr: SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
) -> (TcpStream, String) {
    let socket = TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut stream = socket.connect(addr).await.unwrap();
    let mut request =
        format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n");
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut head = vec![0u8; 2048];
    let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut head))
        .await
        .expect("the response head arrives")
        .unwrap();
    (stream, String::from_utf8_lossy(&head[..n]).into_owned())
}

async fn post(
    srv: &HttpTestServer,
    path: &str,
    session: Option<&str>,
    body: Value,
) -> reqwest::Response {
    let mut b = plain_client()
        .post(srv.url(path))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_string());
    if let Some(s) = session {
        b = b
            .header("mcp-session-id", s)
            .header("mcp-protocol-version", "2025-11-25");
    }
    b.send().await.unwrap()
}

fn call(id: i64, name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": arguments}})
}

fn init(id: i64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "slow", "version": "1"}}})
}

/// A fresh client initializes and adds, quickly: the server is fine.
async fn server_is_fine(srv: &HttpTestServer) {
    let t = Instant::now();
    let mut c = srv.client();
    c.initialize("2025-11-25", json!({})).await;
    let r = c
        .request(
            1,
            "tools/call",
            json!({"name": "add", "arguments": {"a": 2, "b": 3}}),
        )
        .await;
    assert_eq!(r["result"]["content"][0]["text"], "5");
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
}

#[tokio::test]
async fn legacy_sse_drops_the_stream_of_a_client_that_stops_reading() {
    let srv = HttpTestServer::start(server(), test_config().legacy_sse(true)).await;
    let (_stalled, head) = stalled_get(srv.addr, "/sse", &[]).await;
    let session = head
        .split("sessionId=")
        .nth(1)
        .and_then(|rest| rest.split(['\r', '\n']).next())
        .expect("the endpoint event names the session")
        .to_owned();
    let messages = format!("/messages?sessionId={session}");
    assert_eq!(
        post(&srv, &messages, None, init(0)).await.status(),
        StatusCode::ACCEPTED
    );
    // Every call's 64 KiB response is queued on a stream nobody reads. Past the stream's
    // buffer (and the sockets'), the stream is dropped and the session with it.
    let mut dropped_after = None;
    for i in 1..=2000 {
        let status = post(
            &srv,
            &messages,
            None,
            call(i, "big", json!({"bytes": 65_536})),
        )
        .await
        .status();
        if status == StatusCode::NOT_FOUND {
            dropped_after = Some(i);
            break;
        }
        assert_eq!(status, StatusCode::ACCEPTED);
        tokio::task::yield_now().await;
    }
    let n = dropped_after.expect("the stream of a client that reads nothing was never dropped");
    assert!(n > 10, "dropped after only {n} messages");
    server_is_fine(&srv).await;
}

#[tokio::test]
async fn streamable_http_detaches_a_get_stream_nobody_reads_and_keeps_a_bounded_store() {
    let config = test_config()
        .event_store_size(32)
        .event_store_bytes(1 << 20);
    let mcp_server = server();
    let srv = HttpTestServer::start(mcp_server.clone(), config).await;
    let mut c = srv.client();
    c.initialize("2025-11-25", json!({})).await;
    let session = c.session.clone().unwrap();
    let headers = [
        ("Mcp-Session-Id", session.as_str()),
        ("Mcp-Protocol-Version", "2025-11-25"),
    ];
    let (_stalled, head) = stalled_get(srv.addr, "/mcp", &headers).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    // While it is attached, a second GET stream is refused.
    assert_eq!(c.get().send().await.unwrap().status(), StatusCode::CONFLICT);

    // Flood the session's GET stream: 2000 notifications of 16 KiB.
    let payload = "n".repeat(16 * 1024);
    for _ in 0..2000 {
        mcp_server.notify(
            "notifications/message",
            Some(json!({"level": "info", "data": payload})),
        );
        tokio::task::yield_now().await;
    }
    server_is_fine(&srv).await;
    // The stalled stream was detached: a new GET is accepted where it got 409 before.
    let deadline = Instant::now() + Duration::from_secs(5);
    let fresh = loop {
        let r = with_header(c.get(), "last-event-id", "0-0")
            .send()
            .await
            .unwrap();
        if r.status() == StatusCode::OK {
            break r;
        }
        assert!(
            Instant::now() < deadline,
            "the stalled stream was never detached"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    // Resuming from the start replays only what the bounded store kept.
    let mut reader = SseReader::new(fresh);
    let mut replayed = 0;
    while !reader.quiet_for(Duration::from_millis(300)).await {
        replayed += 1;
    }
    assert!(
        replayed <= 32,
        "{replayed} events replayed from a store of 32"
    );
}

#[tokio::test]
async fn sse_streams_per_session_are_capped_with_429() {
    let config = test_config().max_streams_per_session(2);
    let srv = HttpTestServer::start(mcp_tests::http::fixture().server, config).await;
    let mut c = srv.client();
    c.initialize("2025-11-25", json!({})).await;
    // Two POSTs answered as streams (progress before the response) hold both slots while
    // their tool sleeps; a POST stream is never refused, but it counts.
    let slow = |id: i64| {
        c.post(
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
                "name": "wait", "arguments": {"ms": 1500}, "_meta": {"progressToken": id}}})
            .to_string(),
        )
        .send()
    };
    let (a, b) = tokio::join!(slow(1), slow(2));
    let (a, b) = (a.unwrap(), b.unwrap());
    for r in [&a, &b] {
        assert_eq!(r.status(), StatusCode::OK);
        assert!(
            r.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/event-stream")
        );
    }
    let refused = c.get().send().await.unwrap();
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(refused.headers().contains_key("retry-after"));
    let body: Value = refused.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("maximum of 2 open SSE streams"),
        "{body}"
    );
    // Other requests still work; once the streams end, a GET is accepted.
    assert_eq!(c.request(3, "ping", json!({})).await["result"], json!({}));
    let (ra, rb) = (
        SseReader::new(a).rest().await,
        SseReader::new(b).rest().await,
    );
    assert!(ra.last().unwrap().data.contains("waited 1500 ms"));
    assert!(rb.last().unwrap().data.contains("waited 1500 ms"));
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let r = c.get().send().await.unwrap();
        if r.status() == StatusCode::OK {
            break;
        }
        assert!(Instant::now() < deadline, "the slots were never freed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
