//! The seed's SSE transport tests (sse_test), ported to the transports that replace it:
//! a POST handles initialize, ping, tools/list and tools/call; a notification gets 202; an
//! unknown method gets -32601; /health is ok and unknown routes 404 (see http_sessions and
//! sse_legacy); and malformed tools/call frames (no params, no id, neither) are answered
//! within 2 s while the server keeps serving. The seed's session-attribution cases live in
//! http_elicitation and sse_legacy.

use std::time::Duration;

use mcp_tests::http::{HttpTestServer, fixture, plain_client, test_config};
use reqwest::StatusCode;
use serde_json::{Value, json};

const LIMIT: Duration = Duration::from_secs(2);

#[tokio::test]
async fn malformed_tools_call_frames_are_answered_quickly_on_streamable_http() {
    let srv = HttpTestServer::start(fixture().server, test_config()).await;
    let mut c = srv.client();
    c.initialize("2025-11-25", json!({})).await;

    // An id but no params: -32602, within the limit.
    let r = tokio::time::timeout(
        LIMIT,
        c.post(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call"}).to_string())
            .send(),
    )
    .await
    .expect("answered within 2 s")
    .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], -32602);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("requires params")
    );

    // No id (a notification), with and without params: 202 at once.
    for frame in [
        json!({"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "add", "arguments": {"a": 1, "b": 2}}}),
        json!({"jsonrpc": "2.0", "method": "tools/call"}),
    ] {
        let r = tokio::time::timeout(LIMIT, c.post(frame.to_string()).send())
            .await
            .expect("answered within 2 s")
            .unwrap();
        assert_eq!(r.status(), StatusCode::ACCEPTED);
        assert!(r.text().await.unwrap().is_empty());
    }

    // The server still serves ping and a well-formed call.
    assert_eq!(c.request(2, "ping", json!({})).await["result"], json!({}));
    let sum = c
        .request(
            3,
            "tools/call",
            json!({"name": "add", "arguments": {"a": 2, "b": 2}}),
        )
        .await;
    assert_eq!(sum["result"]["content"][0]["text"], "4");
}

#[tokio::test]
async fn malformed_tools_call_frames_are_answered_quickly_on_legacy_sse() {
    let srv = HttpTestServer::start_sse(fixture().server, test_config()).await;
    let r = plain_client()
        .get(srv.url("/sse"))
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    let mut stream = mcp_tests::http::SseReader::new(r);
    let endpoint = stream.next().await.unwrap().data;
    let post = |v: Value| {
        plain_client()
            .post(srv.url(&endpoint))
            .header("content-type", "application/json")
            .body(v.to_string())
            .send()
    };
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "seed", "version": "1"}}});
    assert_eq!(post(init).await.unwrap().status(), StatusCode::ACCEPTED);
    assert_eq!(stream.next().await.unwrap().json()["id"], 0);

    assert_eq!(
        post(json!({"jsonrpc": "2.0", "method": "tools/call"}))
            .await
            .unwrap()
            .status(),
        StatusCode::ACCEPTED
    );
    assert_eq!(
        post(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call"}))
            .await
            .unwrap()
            .status(),
        StatusCode::ACCEPTED
    );
    let reply = tokio::time::timeout(LIMIT, stream.next())
        .await
        .expect("within 2 s")
        .unwrap()
        .json();
    assert_eq!(reply["id"], 1);
    assert_eq!(reply["error"]["code"], -32602);

    assert_eq!(
        post(json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}))
            .await
            .unwrap()
            .status(),
        StatusCode::ACCEPTED
    );
    let pong = tokio::time::timeout(LIMIT, stream.next())
        .await
        .unwrap()
        .unwrap()
        .json();
    assert_eq!(pong, json!({"jsonrpc": "2.0", "id": 2, "result": {}}));
    assert_eq!(
        post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await
            .unwrap()
            .status(),
        StatusCode::ACCEPTED
    );
}
