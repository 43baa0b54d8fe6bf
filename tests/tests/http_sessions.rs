//! Streamable HTTP sessions over real sockets: creation, use, DELETE, expiry, the cap, the
//! status codes and the header rules of the handshake era.

use std::time::Duration;

use mcp_tests::http::{HttpTestServer, McpHttp, fixture, test_config, with_header};
use reqwest::StatusCode;
use serde_json::{Value, json};

async fn started() -> HttpTestServer {
    HttpTestServer::start(fixture().server, test_config()).await
}

fn error_code(v: &Value) -> i64 {
    v["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("no error code in {v}"))
}

#[tokio::test]
async fn initialize_creates_a_session_with_an_unguessable_visible_ascii_id() {
    let srv = started().await;
    let mut a = srv.client();
    let result = a.initialize("2025-11-25", json!({})).await;
    assert_eq!(result["protocolVersion"], "2025-11-25");
    assert_eq!(result["serverInfo"]["name"], "http-fixture");
    let id = a.session.clone().unwrap();
    assert!(id.len() >= 32, "{id}");
    assert!(id.bytes().all(|b| (0x21..=0x7e).contains(&b)), "{id}");
    let mut b = srv.client();
    b.initialize("2025-06-18", json!({})).await;
    assert_ne!(b.session, a.session);
    assert_eq!(b.version.as_deref(), Some("2025-06-18"));

    // Both sessions serve requests, answered as plain JSON.
    let ex = a
        .exchange(
            json!(1),
            "tools/call",
            json!({"name": "add", "arguments": {"a": 2, "b": 3}}),
        )
        .await;
    assert_eq!(ex.status, StatusCode::OK);
    assert!(
        ex.content_type.starts_with("application/json"),
        "{}",
        ex.content_type
    );
    assert_eq!(ex.response["result"]["content"][0]["text"], "5");
    assert_eq!(ex.response["id"], 1);
    let pong = b.request(7, "ping", json!({})).await;
    assert_eq!(pong, json!({"jsonrpc": "2.0", "id": 7, "result": {}}));
    let tools = b.request(8, "tools/list", json!({})).await;
    assert!(
        tools["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "add")
    );
}

#[tokio::test]
async fn requests_without_a_session_get_400_and_unknown_sessions_404() {
    let srv = started().await;
    let anon = srv.client();
    // A handshake-era request (its version header names a handshake revision) without a
    // session is told to initialize.
    let r = anon
        .post(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string())
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let body: Value = r.json().await.unwrap();
    assert_eq!(error_code(&body), -32600);
    assert!(body.get("id").is_none(), "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Mcp-Session-Id")
    );
    // With no marker of either era it is taken as a 2026-07-28 request, which is told
    // what its _meta lacks (and that a handshake client initializes first).
    let r = anon
        .post(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    assert!(r.headers().get("mcp-session-id").is_none());
    let body: Value = r.json().await.unwrap();
    assert_eq!(error_code(&body), -32602);
    assert_eq!(body["id"], 1);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("initialize first"),
        "{body}"
    );

    let mut forged = srv.client();
    forged.session = Some("made-up-session".into());
    let r = forged
        .post(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    let body: Value = r.json().await.unwrap();
    assert_eq!(error_code(&body), -32600);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Session not found")
    );

    // GET and DELETE without a session have nothing to act on (405); with an unknown
    // one, 404.
    assert_eq!(
        anon.get().send().await.unwrap().status(),
        StatusCode::METHOD_NOT_ALLOWED
    );
    assert_eq!(
        anon.delete().send().await.unwrap().status(),
        StatusCode::METHOD_NOT_ALLOWED
    );
    assert_eq!(
        forged.get().send().await.unwrap().status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        forged.delete().send().await.unwrap().status(),
        StatusCode::NOT_FOUND
    );

    // A session id with characters outside visible ASCII is malformed.
    let r = srv
        .client()
        .post("{}")
        .header("mcp-session-id", "has space")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn delete_ends_the_session_and_later_use_gets_404() {
    let srv = started().await;
    let mut c = srv.client();
    c.initialize("2025-11-25", json!({})).await;
    let stream = c.get().send().await.unwrap();
    assert_eq!(stream.status(), StatusCode::OK);
    // The stream names its session, as every response on one does.
    assert_eq!(
        stream
            .headers()
            .get("mcp-session-id")
            .map(|v| v.to_str().unwrap()),
        c.session.as_deref()
    );
    let mut events = mcp_tests::http::SseReader::new(stream);

    let r = c.delete().send().await.unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    // The open GET stream ends with the session.
    while let Some(e) = events.next().await {
        assert!(e.is_priming(), "unexpected event {e:?}");
    }
    let ex = c.exchange(json!(2), "ping", json!({})).await;
    assert_eq!(ex.status, StatusCode::NOT_FOUND);
    assert_eq!(error_code(&ex.response), -32600);
    assert_eq!(
        c.get().send().await.unwrap().status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        c.delete().send().await.unwrap().status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        c.notify("notifications/initialized", None).await,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn notifications_and_responses_get_202_with_an_empty_body() {
    let srv = started().await;
    let mut c = srv.client();
    c.initialize("2025-11-25", json!({})).await;
    let r = c
        .post(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 99}}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::ACCEPTED);
    assert!(r.text().await.unwrap().is_empty());
    // An answer to a question the server never asked is accepted and ignored.
    let r = c
        .post(
            json!({"jsonrpc": "2.0", "id": "mcp-elicit-nope", "result": {"action": "accept"}})
                .to_string(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::ACCEPTED);
    // The session still serves.
    assert_eq!(c.request(3, "ping", json!({})).await["result"], json!({}));
}

#[tokio::test]
async fn json_rpc_errors_keep_their_codes_and_bad_json_is_400() {
    let srv = started().await;
    let mut c = srv.client();
    c.initialize("2025-11-25", json!({})).await;
    let ex = c.exchange(json!("x"), "no/such/method", json!({})).await;
    assert_eq!(ex.status, StatusCode::OK);
    assert_eq!(error_code(&ex.response), -32601);
    assert_eq!(ex.response["id"], "x");

    let r = c.post("{not json").send().await.unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let body: Value = r.json().await.unwrap();
    assert_eq!(error_code(&body), -32700);

    let r = c.post(r#"{"jsonrpc":"2.0","id":4}"#).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let body: Value = r.json().await.unwrap();
    assert_eq!(error_code(&body), -32600);
    assert_eq!(body["id"], 4);
}

#[tokio::test]
async fn protocol_version_header_rules() {
    let version = |v: &str| {
        let mut m = reqwest::header::HeaderMap::new();
        m.insert("mcp-protocol-version", v.parse().unwrap());
        m
    };
    let srv = started().await;
    let mut c = srv.client();
    c.initialize("2025-06-18", json!({})).await;
    for bad in ["1999-01-01", "nonsense", "2026-07-28"] {
        let r = c
            .post(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string())
            .headers(version(bad))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{bad}");
        let body: Value = r.json().await.unwrap();
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("MCP-Protocol-Version")
        );
    }
    // Without the header the request is served (the server assumes 2025-03-26 and uses
    // the version the session negotiated).
    let mut bare = c.clone();
    bare.version = None;
    assert_eq!(
        bare.request(2, "ping", json!({})).await["result"],
        json!({})
    );
    // An invalid header on initialize is refused as well, and creates no session.
    let r = srv
        .client()
        .post(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}}).to_string())
        .header("mcp-protocol-version", "garbage")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    assert!(r.headers().get("mcp-session-id").is_none());
}

#[tokio::test]
async fn content_type_and_accept_are_enforced() {
    let srv = started().await;
    let mut c = srv.client();
    c.initialize("2025-11-25", json!({})).await;
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();
    let r = with_header(c.post(ping.clone()), "content-type", "text/plain")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let body: Value = r.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("application/json")
    );
    let r = with_header(c.post(ping.clone()), "accept", "application/json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NOT_ACCEPTABLE);
    let r = with_header(c.post(ping.clone()), "accept", "*/*")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let r = with_header(
        c.post(ping),
        "content-type",
        "application/json; charset=utf-8",
    )
    .send()
    .await
    .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let r = with_header(c.get(), "accept", "application/json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NOT_ACCEPTABLE);
    // An unsupported method on the endpoint.
    let r = c.http.put(&c.url).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::METHOD_NOT_ALLOWED);
}

#[tokio::test]
async fn a_second_initialize_on_a_session_is_refused_and_a_failed_one_leaves_no_session() {
    let srv = started().await;
    let mut c = srv.client();
    c.initialize("2025-11-25", json!({})).await;
    let ex = c
        .exchange(json!(9), "initialize", json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}))
        .await;
    assert_eq!(ex.status, StatusCode::BAD_REQUEST);

    let r = srv
        .client()
        .post(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": 5}}).to_string())
        .send()
        .await
        .unwrap();
    assert!(r.headers().get("mcp-session-id").is_none());
    let body: Value = r.json().await.unwrap();
    assert_eq!(error_code(&body), -32602);
}

#[tokio::test]
async fn idle_sessions_expire() {
    let srv = HttpTestServer::start(
        fixture().server,
        test_config().session_idle_timeout(Duration::from_millis(300)),
    )
    .await;
    let mut c = srv.client();
    c.initialize("2025-11-25", json!({})).await;
    assert_eq!(c.request(1, "ping", json!({})).await["result"], json!({}));
    tokio::time::sleep(Duration::from_millis(700)).await;
    let ex = c.exchange(json!(2), "ping", json!({})).await;
    assert_eq!(ex.status, StatusCode::NOT_FOUND);

    // A session with an open stream is not idle.
    let mut d = srv.client();
    d.initialize("2025-11-25", json!({})).await;
    let stream = d.get().send().await.unwrap();
    assert_eq!(stream.status(), StatusCode::OK);
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(d.request(3, "ping", json!({})).await["result"], json!({}));
    drop(stream);
}

#[tokio::test]
async fn the_session_cap_refuses_new_sessions_with_503_until_one_ends() {
    let srv = HttpTestServer::start(fixture().server, test_config().max_sessions(2)).await;
    let mut a = srv.client();
    a.initialize("2025-11-25", json!({})).await;
    let mut b = srv.client();
    b.initialize("2025-11-25", json!({})).await;
    let r = srv
        .client()
        .post(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(r.headers().get("mcp-session-id").is_none());
    let body: Value = r.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("maximum of 2 sessions"),
        "{body}"
    );
    // Existing sessions keep working; ending one makes room.
    assert_eq!(a.request(1, "ping", json!({})).await["result"], json!({}));
    assert!(a.delete().send().await.unwrap().status().is_success());
    let mut c = srv.client();
    c.initialize("2025-11-25", json!({})).await;
}

#[tokio::test]
async fn batches_are_served_only_on_2025_03_26_sessions() {
    let srv = started().await;
    let mut old = srv.client();
    old.initialize("2025-03-26", json!({})).await;
    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 1, "b": 1}}},
        {"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": {}}
    ]);
    let r = old.post(batch.to_string()).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let replies: Vec<Value> = r.json().await.unwrap();
    assert_eq!(replies.len(), 3);
    let by_id = |id: i64| replies.iter().find(|r| r["id"] == id).unwrap().clone();
    assert_eq!(by_id(1)["result"], json!({}));
    assert_eq!(by_id(2)["result"]["content"][0]["text"], "2");
    assert_eq!(by_id(3)["error"]["code"], -32600);
    // Only notifications: 202.
    let r = old
        .post(json!([{"jsonrpc": "2.0", "method": "notifications/initialized"}]).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::ACCEPTED);

    let mut new = srv.client();
    new.initialize("2025-06-18", json!({})).await;
    let r = new
        .post(json!([{"jsonrpc": "2.0", "id": 1, "method": "ping"}]).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let body: Value = r.json().await.unwrap();
    assert_eq!(error_code(&body), -32600);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("2025-03-26")
    );
}

#[tokio::test]
async fn health_answers_ok_and_unknown_routes_404() {
    let srv = started().await;
    let http = mcp_tests::http::plain_client();
    let r = http.get(srv.url("/health")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.json::<Value>().await.unwrap(), json!({"status": "ok"}));
    let r = http.get(srv.url("/nope")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    let r = http.post(srv.url("/mcp/extra")).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn the_endpoint_path_is_configurable_and_the_router_mounts_in_an_app() {
    let config = test_config().endpoint("/api/mcp");
    let app = mcp::transport::http::router(fixture().server, config.clone())
        .unwrap()
        .route("/mine", axum::routing::get(|| async { "my route" }));
    let srv = HttpTestServer::serve(app, config).await;
    let mut c = McpHttp::new(srv.url("/api/mcp"));
    c.initialize("2025-11-25", json!({})).await;
    assert_eq!(c.request(1, "ping", json!({})).await["result"], json!({}));
    let http = mcp_tests::http::plain_client();
    assert_eq!(
        http.get(srv.url("/mine"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap(),
        "my route"
    );
    assert_eq!(
        http.post(srv.url("/mcp")).send().await.unwrap().status(),
        StatusCode::NOT_FOUND
    );
}
