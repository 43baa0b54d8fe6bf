//! The HTTP transports' safety rules over real sockets: Host and Origin checks against DNS
//! rebinding, size limits, the boot guard, TCP_NODELAY, slow request heads and graceful
//! shutdown.

use std::time::Duration;

use mcp::Server;
use mcp::registry::ToolDef;
use mcp::transport::http::{self, HttpConfig, HttpError, NoDelayListener};
use mcp_tests::http::{HttpTestServer, SseReader, fixture, plain_client, test_config, with_header};
use reqwest::StatusCode;
use serde_json::{Value, json};

fn initialize_body() -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "rebinding-probe", "version": "1.0.0"}}})
    .to_string()
}

fn post(srv: &HttpTestServer) -> reqwest::RequestBuilder {
    plain_client()
        .post(srv.url("/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(initialize_body())
}

async fn refused(response: reqwest::Response, status: StatusCode, needle: &str) {
    assert_eq!(response.status(), status);
    let body: Value = response.json().await.expect("a JSON-RPC error body");
    assert_eq!(body["jsonrpc"], "2.0");
    assert!(body.get("id").is_none(), "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains(needle), "{message:?} lacks {needle:?}");
}

#[tokio::test]
async fn foreign_hosts_and_origins_get_403_and_loopback_ones_pass() {
    let srv = HttpTestServer::start(fixture().server, test_config()).await;
    let port = srv.addr.port();
    // What the conformance suite sends: Host and Origin both foreign.
    let r = with_header(
        with_header(post(&srv), "host", "evil.example.com"),
        "origin",
        "http://evil.example.com",
    )
    .send()
    .await
    .unwrap();
    refused(r, StatusCode::FORBIDDEN, "Host").await;
    let r = with_header(post(&srv), "host", &format!("evil.example.com:{port}"))
        .send()
        .await
        .unwrap();
    refused(r, StatusCode::FORBIDDEN, "evil.example.com").await;
    for origin in [
        "http://evil.example.com",
        "null",
        "https://localhost.evil.com",
    ] {
        let r = with_header(post(&srv), "origin", origin)
            .send()
            .await
            .unwrap();
        refused(r, StatusCode::FORBIDDEN, "Origin").await;
    }
    for host in [
        format!("localhost:{port}"),
        format!("127.0.0.1:{port}"),
        format!("[::1]:{port}"),
        "localhost".to_owned(),
    ] {
        let r = with_header(
            with_header(post(&srv), "host", &host),
            "origin",
            &format!("http://{host}"),
        )
        .send()
        .await
        .unwrap();
        assert_eq!(r.status(), StatusCode::OK, "{host}");
    }
    // GET and DELETE are checked as well, and the legacy routes when served.
    let r = with_header(
        plain_client().get(srv.url("/mcp")),
        "origin",
        "http://evil.example.com",
    )
    .send()
    .await
    .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    // /health reveals nothing and stays reachable by probes with any Host.
    let r = with_header(
        plain_client().get(srv.url("/health")),
        "host",
        "10.1.2.3:8080",
    )
    .send()
    .await
    .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
}

#[tokio::test]
async fn allowed_hosts_and_origins_are_configurable() {
    let config = test_config()
        .allow_host("mcp.example.com")
        .allow_origin("https://app.example.com");
    let srv = HttpTestServer::start(fixture().server, config).await;
    let r = with_header(
        with_header(post(&srv), "host", "mcp.example.com:443"),
        "origin",
        "https://app.example.com",
    )
    .send()
    .await
    .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let r = with_header(post(&srv), "origin", "http://app.example.com")
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.status(),
        StatusCode::FORBIDDEN,
        "the scheme is part of the origin"
    );

    // Replacing the list drops the loopback defaults.
    let srv = HttpTestServer::start(
        fixture().server,
        test_config().allowed_hosts(["mcp.example.com"]),
    )
    .await;
    let r = post(&srv).send().await.unwrap();
    refused(r, StatusCode::FORBIDDEN, "127.0.0.1").await;
}

#[tokio::test]
async fn oversized_bodies_get_413_and_oversized_headers_431() {
    let srv = HttpTestServer::start(
        fixture().server,
        test_config().max_body_bytes(1024).max_header_bytes(2048),
    )
    .await;
    let mut c = srv.client();
    c.initialize("2025-11-25", json!({})).await;
    let big = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "add", "arguments": {"a": 1, "b": 2, "pad": "x".repeat(2000)}}});
    let r = c.post(big.to_string()).send().await.unwrap();
    refused(r, StatusCode::PAYLOAD_TOO_LARGE, "1024-byte limit").await;
    // A chunked body (no Content-Length) is cut off at the limit too.
    let chunks = futures::stream::iter((0..40).map(|_| Ok::<_, std::io::Error>(vec![b' '; 100])));
    let r = c
        .post("")
        .body(reqwest::Body::wrap_stream(chunks))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::PAYLOAD_TOO_LARGE);
    // Headers beyond the limit.
    let r = with_header(c.post("{}"), "x-padding", &"y".repeat(3000))
        .send()
        .await
        .unwrap();
    refused(
        r,
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
        "headers too large",
    )
    .await;
    // Within the limits the session still serves.
    assert_eq!(c.request(2, "ping", json!({})).await["result"], json!({}));
}

fn server(authorizer: bool, read_authorizer: bool) -> Server {
    let mut b = Server::builder("guarded", "1.0.0").tool(ToolDef::from_fn(
        "noop",
        "Does nothing.",
        |_ctx, _: serde_json::Map<String, Value>| async { "ok" },
    ));
    if authorizer {
        b = b.authorizer(mcp::auth::allow_all());
    }
    if read_authorizer {
        b = b.read_authorizer(mcp::auth::allow_all());
    }
    b.build().unwrap()
}

#[tokio::test]
async fn the_boot_guard_refuses_production_without_authorizers_and_says_how_to_fix_it() {
    let err = http::router(server(false, false), HttpConfig::new()).unwrap_err();
    let HttpError::Refused(refusal) = &err else {
        panic!("expected a refusal, got {err:?}");
    };
    let text = refusal.to_string();
    assert!(
        text.contains("MCP Streamable HTTP transport refuses to boot"),
        "{text}"
    );
    assert!(
        text.contains("no authorizer is configured for tools"),
        "{text}"
    );
    assert!(text.contains("no read authorizer is configured"), "{text}");
    assert!(text.contains("ServerBuilder::authorizer"), "{text}");
    assert!(
        text.contains("allow_unauthorized_for_local_development"),
        "{text}"
    );

    // One missing seam is enough to refuse, and the message names only that one.
    let text = http::router(server(true, false), HttpConfig::new())
        .unwrap_err()
        .to_string();
    assert!(
        text.contains("no read authorizer") && !text.contains("for tools"),
        "{text}"
    );
    let text = http::router(server(false, true), HttpConfig::new())
        .unwrap_err()
        .to_string();
    assert!(
        text.contains("for tools") && !text.contains("no read authorizer"),
        "{text}"
    );
    // A framework fallback does not count as a decision.
    let fallback = Server::builder("f", "1")
        .fallback_authorizer(mcp::auth::deny_all("fallback"))
        .read_authorizer(mcp::auth::allow_all())
        .build()
        .unwrap();
    assert!(http::router(fallback, HttpConfig::new()).is_err());
    // The legacy transport has the same guard.
    let text = mcp::transport::sse::router(server(false, false), HttpConfig::new())
        .unwrap_err()
        .to_string();
    assert!(
        text.contains("MCP HTTP+SSE transport refuses to boot"),
        "{text}"
    );
    // serve() refuses before binding anything.
    let err = http::serve(
        server(false, false),
        HttpConfig::new(),
        "127.0.0.1:0".parse().unwrap(),
    )
    .await
    .unwrap_err();
    assert!(matches!(err, HttpError::Refused(_)));

    // Configured authorizers boot; so does the explicit opt-out, on loopback only unless a
    // second setting says otherwise.
    assert!(http::router(server(true, true), HttpConfig::new()).is_ok());
    let lifted = HttpConfig::new().allow_unauthorized_for_local_development(true);
    assert!(http::router(server(false, false), lifted.clone()).is_ok());
    let err = http::serve(
        server(false, false),
        lifted.clone(),
        "0.0.0.0:0".parse().unwrap(),
    )
    .await
    .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("refusing to listen on 0.0.0.0:0"), "{text}");
    assert!(
        text.contains("HttpConfig::allow_unauthorized_on_network(true)"),
        "{text}"
    );
    let bound = http::bind(
        server(false, false),
        lifted.allow_unauthorized_on_network(true),
        "0.0.0.0:0".parse().unwrap(),
    )
    .await
    .expect("told twice, it listens beyond loopback");
    drop(bound);
}

#[tokio::test]
async fn bad_configurations_are_refused_with_a_reason() {
    for (config, needle) in [
        (test_config().endpoint("mcp"), "absolute path"),
        (test_config().max_sessions(0), "max_sessions"),
        (
            test_config().allowed_hosts(Vec::<String>::new()),
            "allowed_hosts is empty",
        ),
        (test_config().allow_host("bad:port"), "allowed host"),
        (
            test_config()
                .legacy_sse(true)
                .legacy_sse_paths("/mcp", "/messages"),
            "differ",
        ),
    ] {
        let err = http::router(fixture().server, config).unwrap_err();
        assert!(matches!(err, HttpError::Config(_)), "{err:?}");
        assert!(err.to_string().contains(needle), "{err} lacks {needle}");
    }
}

#[tokio::test]
async fn accepted_sockets_have_tcp_nodelay() {
    use axum::serve::Listener as _;
    let mut listener = NoDelayListener::bind("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let client = tokio::spawn(async move { tokio::net::TcpStream::connect(addr).await.unwrap() });
    let (stream, _) = listener.accept().await;
    assert!(
        stream.nodelay().unwrap(),
        "TCP_NODELAY is not set on the accepted socket"
    );
    drop(client.await.unwrap());
    // A plain listener would not have it: the assertion above can fail.
    let plain = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = plain.local_addr().unwrap();
    let _c = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (s, _) = plain.accept().await.unwrap();
    assert!(!s.nodelay().unwrap());
}

#[tokio::test]
async fn the_default_address_is_loopback() {
    assert!(http::DEFAULT_ADDR.ip().is_loopback());
}

/// A bound server running until its `stop` sender fires (or its token is cancelled).
struct Stoppable {
    addr: std::net::SocketAddr,
    token: tokio_util::sync::CancellationToken,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    running: tokio::task::JoinHandle<Result<(), HttpError>>,
}

impl Stoppable {
    async fn serve(server: Server, grace: Duration) -> Stoppable {
        Stoppable::serve_with(server, test_config().shutdown_grace(grace)).await
    }

    async fn serve_with(server: Server, config: HttpConfig) -> Stoppable {
        let app = http::router(server, config.clone()).unwrap();
        let bound = http::HttpServer::bind(app, config, "127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
        let addr = bound.local_addr().unwrap();
        let token = bound.shutdown_token();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let running = tokio::spawn(bound.run_until(async move {
            let _ = stopped.await;
        }));
        Stoppable {
            addr,
            token,
            stop: Some(stop),
            running,
        }
    }

    /// Starts the shutdown, as SIGTERM would.
    fn stop(&mut self) {
        self.stop.take().expect("stopped once").send(()).unwrap();
    }

    fn client(&self) -> mcp_tests::http::McpHttp {
        mcp_tests::http::McpHttp::new(format!("http://{}/mcp", self.addr))
    }

    /// Whether a new connection is refused.
    async fn refuses_connections(&self) -> bool {
        plain_client()
            .get(format!("http://{}/health", self.addr))
            .send()
            .await
            .is_err()
    }
}

#[tokio::test]
async fn shutdown_ends_open_streams_and_stops_serving() {
    let mut srv = Stoppable::serve(fixture().server, Duration::from_millis(500)).await;
    let mut c = srv.client();
    c.initialize("2025-11-25", json!({})).await;
    let mut stream = SseReader::new(c.get().send().await.unwrap());
    assert!(stream.next().await.unwrap().is_priming());
    assert!(!srv.refuses_connections().await);
    srv.stop();
    // The open GET stream ends, and the server returns within the grace period.
    assert!(stream.rest().await.is_empty());
    let result = tokio::time::timeout(Duration::from_secs(3), &mut srv.running)
        .await
        .unwrap()
        .unwrap();
    assert!(result.is_ok(), "{result:?}");
    assert!(srv.token.is_cancelled());
    assert!(srv.refuses_connections().await);
}

#[tokio::test]
async fn a_call_running_at_shutdown_gets_its_answer_while_new_connections_are_refused() {
    let gate = mcp_tests::Gate::new();
    let server = Server::builder("shutdown", "1")
        .tool(gate.tool("wait"))
        .shutdown_grace(Duration::from_secs(5))
        .build()
        .unwrap();
    let mut srv = Stoppable::serve(server, Duration::from_secs(5)).await;
    let mut c = srv.client();
    c.initialize("2025-11-25", json!({})).await;
    let call = tokio::spawn(async move {
        c.request(7, "tools/call", json!({"name": "wait", "arguments": {}}))
            .await
    });
    gate.wait_started(1).await;
    srv.stop();
    tokio::time::sleep(Duration::from_millis(100)).await;
    // Stopping: no new connection is accepted, and the running call is not cut off.
    assert!(srv.refuses_connections().await);
    assert!(!srv.running.is_finished());
    // With its last call answered, the server returns well before the grace period ends.
    let answer = answered_then_stopped(&gate, call, &mut srv, Duration::from_secs(2)).await;
    assert_eq!(answer["id"], 7, "{answer}");
    assert_eq!(gate.dropped(), 0);
}

/// Releases the gated call `call`, checks that it is answered, then that the stopping
/// server returns cleanly within `within`; returns the answer.
async fn answered_then_stopped(
    gate: &mcp_tests::Gate,
    call: tokio::task::JoinHandle<Value>,
    srv: &mut Stoppable,
    within: Duration,
) -> Value {
    gate.release(1);
    let answer = tokio::time::timeout(Duration::from_secs(3), call)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        answer["result"]["content"][0]["text"], "released",
        "{answer}"
    );
    let result = tokio::time::timeout(within, &mut srv.running)
        .await
        .unwrap()
        .unwrap();
    assert!(result.is_ok(), "{result:?}");
    answer
}

/// Sends `bytes` on a new connection to `addr` and reads until the server closes it;
/// returns what the server sent and how long after the bytes it closed.
async fn sent_until_closed(addr: std::net::SocketAddr, bytes: &[u8]) -> (Vec<u8>, Duration) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(bytes).await.unwrap();
    let started = std::time::Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    loop {
        match tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buf)).await {
            Ok(Ok(0) | Err(_)) => return (got, started.elapsed()),
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
            Err(_) => panic!("the server kept the connection open for 10 s"),
        }
    }
}

#[tokio::test]
async fn a_request_head_sent_too_slowly_is_cut_off_while_streams_and_long_calls_go_on() {
    let gate = mcp_tests::Gate::new();
    let server = Server::builder("slow-heads", "1")
        .tool(gate.tool("wait"))
        .build()
        .unwrap();
    let limit = Duration::from_millis(400);
    let config = test_config()
        .header_read_timeout(limit)
        .keep_alive(Duration::from_millis(100));
    let srv = Stoppable::serve_with(server, config).await;

    // Half a request head, then nothing: the connection is closed once the limit passes.
    let (_, closed_after) =
        sent_until_closed(srv.addr, b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n").await;
    assert!(
        closed_after >= limit - Duration::from_millis(50) && closed_after < limit * 3,
        "{closed_after:?}"
    );

    // A kept-alive connection left idle is closed the same way, after its answer.
    let (answered, _) =
        sent_until_closed(srv.addr, b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").await;
    assert!(
        answered.starts_with(b"HTTP/1.1 200"),
        "{:?}",
        String::from_utf8_lossy(&answered)
    );

    // A GET stream and a call that outlast the limit are not cut off: the limit is on
    // the request's head only.
    let mut c = srv.client();
    c.initialize("2025-11-25", json!({})).await;
    let mut stream = SseReader::new(c.get().send().await.unwrap());
    assert!(stream.next().await.unwrap().is_priming());
    let mut caller = c.clone();
    let call = tokio::spawn(async move {
        caller
            .request(7, "tools/call", json!({"name": "wait", "arguments": {}}))
            .await
    });
    gate.wait_started(1).await;
    let open_since = std::time::Instant::now();
    while open_since.elapsed() < limit * 3 {
        let event = stream.next_within(Duration::from_secs(2)).await;
        assert!(event.is_some_and(|e| e.comment), "the GET stream ended");
    }
    gate.release(1);
    let answer = tokio::time::timeout(Duration::from_secs(3), call)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        answer["result"]["content"][0]["text"], "released",
        "{answer}"
    );
}

#[tokio::test]
async fn the_head_limit_counts_from_the_last_answer_not_from_the_connection_start() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let server = Server::builder("busy-heads", "1").build().unwrap();
    // Gaps of 150 ms against a limit of 800: room for a slow, loaded machine.
    let limit = Duration::from_millis(800);
    let srv = Stoppable::serve_with(server, test_config().header_read_timeout(limit)).await;

    // Requests every 150 ms on one kept-alive connection for three times the limit: each
    // gap is well under the limit, so the connection stays open throughout.
    let mut stream = tokio::net::TcpStream::connect(srv.addr).await.unwrap();
    let started = std::time::Instant::now();
    let mut answered = 0;
    while started.elapsed() < limit * 3 {
        stream
            .write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            .await
            .unwrap();
        let mut buf = [0u8; 1024];
        let n = tokio::time::timeout(Duration::from_secs(2), stream.read(&mut buf))
            .await
            .expect("an answer")
            .unwrap();
        assert!(
            buf[..n].starts_with(b"HTTP/1.1 200"),
            "answer {answered}: {:?}",
            String::from_utf8_lossy(&buf[..n])
        );
        answered += 1;
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    assert!(answered >= 10, "{answered}");

    // Then idle: closed once the limit has passed since the last answer.
    let idle_from = std::time::Instant::now();
    let mut buf = [0u8; 64];
    let read = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf))
        .await
        .expect("closed within 5 s");
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
    let idle = idle_from.elapsed();
    assert!(
        idle >= limit - Duration::from_millis(200) && idle < limit * 3,
        "{idle:?}"
    );
}

/// With `per_core_threads`, each connection is served on one of the server's own threads
/// (the one serving fewest), sessions work across them, and a shutdown still ends their
/// streams and lets their calls finish.
#[tokio::test]
async fn per_core_threads_serve_each_connection_on_one_thread_and_shut_down_gracefully() {
    let gate = mcp_tests::Gate::new();
    let thread_name = ToolDef::new(
        "thread",
        "Names the thread serving the call.",
        json!({"type": "object"}),
        |_ctx: mcp::Ctx, _args: mcp::registry::ToolArgs| async move {
            std::thread::current()
                .name()
                .unwrap_or("unnamed")
                .to_owned()
        },
    );
    let server = Server::builder("per-core", "1")
        .tool(thread_name)
        .tool(gate.tool("wait"))
        .shutdown_grace(Duration::from_secs(5))
        .build()
        .unwrap();
    let config = test_config()
        .per_core_threads(2)
        .shutdown_grace(Duration::from_secs(5));
    let mut srv = Stoppable::serve_with(server, config).await;

    // Two clients, two kept-alive connections: the second goes to the thread the first
    // did not take, and each stays there for its session's requests.
    let mut threads = Vec::new();
    let mut clients = Vec::new();
    for _ in 0..2 {
        let mut c = srv.client();
        c.initialize("2025-11-25", json!({})).await;
        let mut seen = Vec::new();
        for id in 0..3 {
            let answer = c
                .request(id, "tools/call", json!({"name": "thread", "arguments": {}}))
                .await;
            seen.push(
                answer["result"]["content"][0]["text"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            );
        }
        assert!(
            seen.iter().all(|t| t == &seen[0]),
            "one thread per connection: {seen:?}"
        );
        threads.push(seen[0].clone());
        clients.push(c);
    }
    threads.sort();
    assert_eq!(threads, ["mcp-http-0", "mcp-http-1"]);

    // A stream and a running call on those threads; then the shutdown.
    let mut stream = SseReader::new(clients[0].get().send().await.unwrap());
    assert!(stream.next().await.unwrap().is_priming());
    let mut caller = clients[1].clone();
    let call = tokio::spawn(async move {
        caller
            .request(9, "tools/call", json!({"name": "wait", "arguments": {}}))
            .await
    });
    gate.wait_started(1).await;
    srv.stop();
    assert!(stream.rest().await.is_empty(), "the open stream ends");
    answered_then_stopped(&gate, call, &mut srv, Duration::from_secs(5)).await;
    assert!(srv.refuses_connections().await);
}

/// Each way a request reaches the endpoint: served as `http::bind` serves it (the endpoint
/// answered without the router) and the router mounted in an application of one's own,
/// under a layer of its own. Each with a configuration of its own (`config()`): a
/// configuration's clones share its shutdown token.
async fn both_ways(config: impl Fn() -> HttpConfig) -> [(HttpTestServer, &'static str); 2] {
    let direct = HttpTestServer::start(fixture().server, config()).await;
    let config = config();
    let mounted = axum::Router::new()
        .merge(http::router(fixture().server, config.clone()).expect("router builds"))
        .layer(axum::middleware::map_response(
            |mut r: axum::response::Response| async move {
                r.headers_mut()
                    .insert("x-application", axum::http::HeaderValue::from_static("yes"));
                r
            },
        ));
    let mounted = HttpTestServer::serve(mounted, config).await;
    [
        (direct, "served directly"),
        (mounted, "mounted in an application"),
    ]
}

#[tokio::test]
async fn the_endpoint_answers_alike_served_directly_and_mounted_in_an_application() {
    for (srv, way) in both_ways(test_config).await {
        let client = plain_client();
        // Methods the endpoint does not serve: 405, naming the ones it does.
        for method in [
            reqwest::Method::PUT,
            reqwest::Method::PATCH,
            reqwest::Method::OPTIONS,
        ] {
            let r = client
                .request(method.clone(), srv.url("/mcp"))
                .send()
                .await
                .unwrap();
            assert_eq!(
                r.headers()["allow"],
                "GET, HEAD, POST, DELETE",
                "{method} {way}"
            );
            refused(
                r,
                StatusCode::METHOD_NOT_ALLOWED,
                "answers POST, GET and DELETE",
            )
            .await;
        }
        // HEAD is GET without a body: without a session there is no stream (405).
        let r = client.head(srv.url("/mcp")).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::METHOD_NOT_ALLOWED, "{way}");
        assert_eq!(r.headers()["allow"], "POST", "{way}");
        assert!(r.bytes().await.unwrap().is_empty(), "{way}");
        // The guard comes first, whatever the method.
        let r = post(&srv)
            .header("host", "evil.example")
            .send()
            .await
            .unwrap();
        refused(r, StatusCode::FORBIDDEN, "is not allowed").await;
        let r = client
            .put(srv.url("/mcp"))
            .header("origin", "http://evil.example")
            .send()
            .await
            .unwrap();
        refused(r, StatusCode::FORBIDDEN, "Origin").await;
        // And a request that passes is served, with the application's layer around it
        // when there is one.
        let r = post(&srv).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK, "{way}");
        assert_eq!(
            r.headers().get("x-application").is_some(),
            way == "mounted in an application",
            "{way}"
        );
        assert!(r.headers().contains_key("mcp-session-id"), "{way}");
        // Other paths are the router's, both ways.
        let r = client.get(srv.url("/health")).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK, "{way}");
        let r = client.get(srv.url("/mcp/more")).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::NOT_FOUND, "{way}");
    }
}

#[tokio::test]
async fn bearer_authentication_guards_the_endpoint_both_ways() {
    use mcp::auth::bearer::{TokenError, verifier_fn};
    let auth = || {
        http::BearerAuth::new(
            verifier_fn(|token: String| async move {
                match token.as_str() {
                    "good" => Ok(mcp::auth::Principal::new("alice", vec![])),
                    _ => Err(TokenError::Invalid("unknown token".into())),
                }
            }),
            "http://127.0.0.1/mcp",
        )
        .authorization_server("https://auth.example.test")
    };
    for (srv, way) in both_ways(|| test_config().bearer_auth(auth())).await {
        for method in [
            reqwest::Method::POST,
            reqwest::Method::GET,
            reqwest::Method::PUT,
        ] {
            let r = plain_client()
                .request(method.clone(), srv.url("/mcp"))
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), StatusCode::UNAUTHORIZED, "{method} {way}");
            assert!(r.headers().contains_key("www-authenticate"), "{way}");
        }
        // The guard before the token: a foreign Host is refused without asking for one.
        let r = post(&srv)
            .header("host", "evil.example")
            .bearer_auth("good")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::FORBIDDEN, "{way}");
        let r = post(&srv).bearer_auth("good").send().await.unwrap();
        assert_eq!(r.status(), StatusCode::OK, "{way}");
    }
}
