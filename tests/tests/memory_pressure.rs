//! Memory-pressure admission on every transport, made deterministic with an operator limit
//! of 1 MiB (a process's resident set is always above it): new requests and sessions are
//! refused with -32030 `memory_pressure` (503 with `Retry-After` over HTTP), pings and
//! notifications go through. The binary in a real cgroup is driven to its limit by
//! `examples/tests/memory_pressure.rs`.

use mcp::Server;
use mcp::server::ServerBuilder;
use mcp_tests::http::{HttpTestServer, McpHttp, StatelessHttp, plain_client, test_config};
use mcp_tests::{add_tool, initialized_client};
use reqwest::StatusCode;
use serde_json::{Value, json};

const MEMORY_PRESSURE: i32 = -32030;

fn builder() -> ServerBuilder {
    Server::builder("pressed", "1").tool(add_tool())
}

/// A server whose limit it is always over.
fn pressed() -> Server {
    builder().memory_limit(1 << 20).build().unwrap()
}

fn assert_refusal(error: &Value) {
    assert_eq!(error["code"], MEMORY_PRESSURE, "{error}");
    let message = error["message"].as_str().unwrap();
    assert!(message.starts_with("memory_pressure: "), "{message}");
    assert_eq!(error["data"]["retryAfterMs"], 2000);
    assert_eq!(error["data"]["limitBytes"], 1 << 20);
    assert!(error["data"]["usedBytes"].as_u64().unwrap() > 1 << 20);
}

#[tokio::test]
async fn a_connection_gets_memory_pressure_for_new_work_and_answers_pings() {
    let server = pressed();
    let mut client = mcp::testing::TestClient::connect(&server);
    let e = client.initialize(json!({})).await.unwrap_err();
    assert_refusal(&serde_json::to_value(&e).unwrap());
    assert_eq!(client.request("ping", json!({})).await.unwrap(), json!({}));
    let e = client
        .request(
            "tools/call",
            json!({"name": "add", "arguments": {"a": 1, "b": 2}}),
        )
        .await
        .unwrap_err();
    assert_refusal(&serde_json::to_value(&e).unwrap());
    let e = client.request("tools/list", json!({})).await.unwrap_err();
    assert_eq!(e.code, MEMORY_PRESSURE);
}

#[tokio::test]
async fn over_http_new_work_and_new_sessions_get_503_with_retry_after() {
    let http = HttpTestServer::start(pressed(), test_config()).await;
    // A new session.
    let client = McpHttp::new(http.url("/mcp"));
    let init = json!({"jsonrpc": "2.0", "id": 7, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}});
    let r = client.post(init.to_string()).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(r.headers()["retry-after"], "2");
    assert_eq!(r.headers()["content-type"], "application/json");
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["id"], 7, "the refusal answers the request");
    assert_refusal(&body["error"]);

    // A stateless (2026-07-28) call is refused; a task poll is not (the task is unknown,
    // and that is what it is told).
    let stateless = StatelessHttp::new(http.url("/mcp"));
    let call = json!({"name": "add", "arguments": {"a": 1, "b": 2}});
    let r = stateless
        .post(json!(8), "tools/call", call)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(r.headers()["retry-after"], "2");
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["id"], 8);
    assert_refusal(&body["error"]);
    let poll = stateless
        .exchange(json!(9), "tasks/get", json!({"taskId": "no-such-task"}))
        .await;
    assert_ne!(poll.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_ne!(
        poll.response["error"]["code"], MEMORY_PRESSURE,
        "{}",
        poll.response
    );
    // A handshake-era ping without a session is answered too, where sessionless requests
    // are served; here it is refused for its missing session, not for memory.
    let ping = json!({"jsonrpc": "2.0", "id": 10, "method": "ping"});
    let r = client
        .post(ping.to_string())
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap();
    assert_ne!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    http.stop();
}

#[tokio::test]
async fn a_new_legacy_sse_connection_gets_503() {
    let http = HttpTestServer::start_sse(pressed(), test_config()).await;
    let r = plain_client()
        .get(http.url("/sse"))
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(r.headers()["retry-after"], "2");
    let body: Value = r.json().await.unwrap();
    assert_refusal(&body["error"]);
    http.stop();
}

#[tokio::test]
async fn a_zero_high_water_mark_turns_the_check_off() {
    let server = builder()
        .memory_limit(1 << 20)
        .memory_high_water(0)
        .build()
        .unwrap();
    let mut client = initialized_client(&server, json!({})).await;
    let sum = client
        .request(
            "tools/call",
            json!({"name": "add", "arguments": {"a": 1, "b": 2}}),
        )
        .await
        .unwrap();
    assert_eq!(sum["content"][0]["text"], "3");
    let e = builder().memory_high_water(101).build().err().unwrap();
    assert!(e.to_string().contains("memory_high_water"), "{e}");
}
