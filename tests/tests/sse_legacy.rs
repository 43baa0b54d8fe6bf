//! The legacy HTTP+SSE transport (2024-11-05) over real sockets: the endpoint event,
//! POSTs answered 202 with responses on the session's own stream, session ownership of
//! questions, the session ending with its stream, and running beside Streamable HTTP.

use std::sync::atomic::Ordering;
use std::time::Duration;

use mcp_tests::http::{HttpTestServer, McpHttp, SseReader, fixture, plain_client, test_config};
use mcp_tests::validate_server_message;
use reqwest::StatusCode;
use serde_json::{Value, json};

/// One legacy session: its stream and where to POST.
struct Legacy {
    stream: SseReader,
    messages: String,
    session_id: String,
    version: &'static str,
}

impl Legacy {
    async fn open(srv: &HttpTestServer, sse_path: &str) -> Legacy {
        let r = plain_client()
            .get(srv.url(sse_path))
            .header("accept", "text/event-stream")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        assert!(
            r.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/event-stream")
        );
        let mut stream = SseReader::new(r);
        let first = stream.next().await.expect("the endpoint event");
        assert_eq!(first.event.as_deref(), Some("endpoint"));
        let endpoint = first.data.clone();
        let session_id = endpoint
            .split_once("?sessionId=")
            .map(|(_, id)| id.to_owned())
            .unwrap_or_else(|| panic!("endpoint {endpoint:?} has no sessionId"));
        Legacy {
            stream,
            messages: srv.url(&endpoint),
            session_id,
            version: "2024-11-05",
        }
    }

    async fn post(&self, message: Value) -> reqwest::Response {
        plain_client()
            .post(&self.messages)
            .header("content-type", "application/json")
            .body(message.to_string())
            .send()
            .await
            .unwrap()
    }

    /// The next `event: message`, validated against the schema of the session's revision.
    async fn message(&mut self) -> Value {
        let e = self.stream.next().await.expect("a message event");
        assert_eq!(e.event.as_deref(), Some("message"), "{e:?}");
        let v = e.json();
        validate_server_message(self.version, &v, None).unwrap_or_else(|err| panic!("{err}: {v}"));
        v
    }

    async fn call(&mut self, id: i64, method: &str, params: Value) -> Value {
        let r = self
            .post(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        assert_eq!(r.status(), StatusCode::ACCEPTED);
        assert!(r.text().await.unwrap().is_empty());
        let reply = self.message().await;
        assert_eq!(reply["id"], id, "{reply}");
        reply
    }

    async fn initialize(&mut self, capabilities: Value) {
        self.initialize_as("2024-11-05", capabilities).await;
    }

    /// Initializes with another revision (the transport does not fix the revision; a
    /// client declaring elicitation needs one that has it).
    async fn initialize_as(&mut self, version: &'static str, capabilities: Value) {
        let r = self
            .call(
                0,
                "initialize",
                json!({"protocolVersion": version, "capabilities": capabilities,
                "clientInfo": {"name": "legacy", "version": "1"}}),
            )
            .await;
        assert_eq!(r["result"]["protocolVersion"], version);
        self.version = version;
        let r = self
            .post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        assert_eq!(r.status(), StatusCode::ACCEPTED);
    }
}

#[tokio::test]
async fn the_endpoint_event_then_requests_answered_on_the_stream() {
    let srv = HttpTestServer::start_sse(fixture().server, test_config()).await;
    let mut s = Legacy::open(&srv, "/sse").await;
    assert!(s.messages.contains("/messages?sessionId="));
    assert!(s.session_id.len() >= 32);
    assert!(
        s.session_id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    );
    s.initialize(json!({})).await;
    assert_eq!(s.call(1, "ping", json!({})).await["result"], json!({}));
    let tools = s.call(2, "tools/list", json!({})).await;
    assert!(
        tools["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "add")
    );
    let sum = s
        .call(
            3,
            "tools/call",
            json!({"name": "add", "arguments": {"a": 20, "b": 22}}),
        )
        .await;
    assert_eq!(sum["result"]["content"][0]["text"], "42");
    let unknown = s.call(4, "no/such", json!({})).await;
    assert_eq!(unknown["error"]["code"], -32601);
    // Progress for a request arrives on the stream before its response.
    let r = s
        .post(json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
            "params": {"name": "progress", "arguments": {}, "_meta": {"progressToken": "p"}}}))
        .await;
    assert_eq!(r.status(), StatusCode::ACCEPTED);
    for expected in [10.0, 20.0, 30.0] {
        let p = s.message().await;
        assert_eq!(p["method"], "notifications/progress");
        assert_eq!(p["params"]["progress"].as_f64(), Some(expected));
    }
    assert_eq!(s.message().await["id"], 5);
    // Invalid JSON is refused on the POST itself.
    let r = plain_client()
        .post(&s.messages)
        .header("content-type", "application/json")
        .body("{oops")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    assert_eq!(r.json::<Value>().await.unwrap()["error"]["code"], -32700);
}

#[tokio::test]
async fn posts_need_a_live_session_and_closing_the_stream_ends_it() {
    let srv = HttpTestServer::start_sse(fixture().server, test_config()).await;
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();
    let http = plain_client();
    let r = http
        .post(srv.url("/messages"))
        .header("content-type", "application/json")
        .body(ping.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let r = http
        .post(srv.url("/messages?sessionId=forged"))
        .header("content-type", "application/json")
        .body(ping.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);

    let mut s = Legacy::open(&srv, "/sse").await;
    s.initialize(json!({})).await;
    let r = http
        .post(&s.messages)
        .header("content-type", "text/plain")
        .body(ping.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let messages = s.messages.clone();
    drop(s);
    // The server notices the closed stream and ends the session.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let r = http
            .post(&messages)
            .header("content-type", "application/json")
            .body(ping.clone())
            .send()
            .await
            .unwrap();
        if r.status() == StatusCode::NOT_FOUND {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the session outlived its stream"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn responses_and_questions_reach_only_their_own_session() {
    let fx = fixture();
    let spent = fx.spent.clone();
    let srv = HttpTestServer::start_sse(fx.server, test_config()).await;
    let mut a = Legacy::open(&srv, "/sse").await;
    a.initialize_as("2025-06-18", json!({"elicitation": {}}))
        .await;
    let mut b = Legacy::open(&srv, "/sse").await;
    b.initialize_as("2025-06-18", json!({"elicitation": {}}))
        .await;
    assert_ne!(a.session_id, b.session_id);

    let r = a.post(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "spend", "arguments": {}}})).await;
    assert_eq!(r.status(), StatusCode::ACCEPTED);
    let question = a.message().await;
    assert_eq!(question["method"], "elicitation/create");
    let approve = json!({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {"approve": true}}});
    // B answers A's question: nothing happens, and B's stream stays quiet.
    assert_eq!(b.post(approve.clone()).await.status(), StatusCode::ACCEPTED);
    assert!(a.stream.quiet_for(Duration::from_millis(200)).await);
    assert!(b.stream.quiet_for(Duration::from_millis(50)).await);
    assert_eq!(spent.load(Ordering::SeqCst), 0);
    // A's answer runs the tool; the response goes to A alone.
    assert_eq!(a.post(approve).await.status(), StatusCode::ACCEPTED);
    let done = a.message().await;
    assert_eq!(done["id"], 7);
    assert_eq!(done["result"]["content"][0]["text"], "spent");
    assert_eq!(spent.load(Ordering::SeqCst), 1);
    assert_eq!(b.call(8, "ping", json!({})).await["result"], json!({}));
}

#[tokio::test]
async fn legacy_and_streamable_http_run_side_by_side_and_under_a_prefix() {
    let config = test_config().legacy_sse(true);
    let app = axum::Router::new().nest(
        "/v1",
        mcp::transport::http::router(fixture().server, config.clone()).unwrap(),
    );
    let srv = HttpTestServer::serve(app, config).await;
    let mut legacy = Legacy::open(&srv, "/v1/sse").await;
    assert!(
        legacy.messages.contains("/v1/messages?sessionId="),
        "{}",
        legacy.messages
    );
    legacy.initialize(json!({})).await;
    assert_eq!(legacy.call(1, "ping", json!({})).await["result"], json!({}));
    let mut stateless = McpHttp::new(srv.url("/v1/mcp"));
    stateless.initialize("2025-11-25", json!({})).await;
    assert_eq!(
        stateless.request(2, "ping", json!({})).await["result"],
        json!({})
    );
    // A legacy session id is not a Streamable HTTP session, and the reverse.
    let mut cross = stateless.clone();
    cross.session = Some(legacy.session_id.clone());
    assert_eq!(
        cross.exchange(json!(3), "ping", json!({})).await.status,
        StatusCode::NOT_FOUND
    );
    let r = plain_client()
        .post(srv.url(&format!(
            "/v1/messages?sessionId={}",
            stateless.session.clone().unwrap()
        )))
        .header("content-type", "application/json")
        .body(json!({"jsonrpc": "2.0", "id": 4, "method": "ping"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn health_and_unknown_routes_on_the_legacy_router() {
    let srv = HttpTestServer::start_sse(fixture().server, test_config()).await;
    let http = plain_client();
    let r = http.get(srv.url("/health")).send().await.unwrap();
    assert_eq!(r.json::<Value>().await.unwrap(), json!({"status": "ok"}));
    assert_eq!(
        http.get(srv.url("/nope")).send().await.unwrap().status(),
        StatusCode::NOT_FOUND
    );
    // The legacy router does not serve Streamable HTTP.
    assert_eq!(
        http.post(srv.url("/mcp")).send().await.unwrap().status(),
        StatusCode::NOT_FOUND
    );
    // Host and Origin are checked here too.
    let r = http
        .get(srv.url("/sse"))
        .header("origin", "http://evil.example.com")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
}
