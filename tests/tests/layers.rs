//! Middleware through the in-memory client: what a layer sees, that it runs only after the
//! authorizer, that it can change an answer, and the built-in rate limit.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use mcp::auth::{self, Decision};
use mcp::layers::{Layer, Next, Pending, RateLimit, Request};
use mcp::prelude::*;
use mcp::testing::TestClient;
use serde_json::{Value, json};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    a: i64,
    b: i64,
}

/// Counts the tool calls it sees and appends a note to every successful result.
#[derive(Default)]
struct Stamp(AtomicUsize);

impl Layer for Stamp {
    fn on_call_tool<'a>(&'a self, req: &'a Request<'a>, next: Next<'a>) -> Pending<'a> {
        Pending::new(async move {
            self.0.fetch_add(1, Ordering::SeqCst);
            let answer = next.run(req).await;
            match answer.tool_result() {
                Some(mut r) if !r.is_error() => {
                    r.content.push(ContentBlock::text("stamped"));
                    req.answer_tool(r)
                }
                _ => answer,
            }
        })
    }
}

struct Shared(Arc<Stamp>);

impl Layer for Shared {
    fn on_request<'a>(&'a self, req: &'a Request<'a>, next: Next<'a>) -> Pending<'a> {
        self.0.on_request(req, next)
    }
}

fn server(stamp: &Arc<Stamp>) -> Server {
    let add = ToolDef::from_fn("add", "Adds.", |_ctx, x: Add| async move { x.a + x.b });
    let secret = ToolDef::from_fn("secret", "Hidden.", |_ctx, x: Add| async move { x.a });
    Server::builder("layers", "1.0.0")
        .tool(add)
        .tool(secret)
        .authorizer(auth::policy(|req| {
            if req.name() == "secret" {
                Decision::deny("not for you")
            } else {
                Decision::Allow
            }
        }))
        .layer(Shared(Arc::clone(stamp)))
        .build()
        .expect("server")
}

#[tokio::test]
async fn a_layer_changes_an_allowed_answer_and_never_sees_a_denied_call() {
    let stamp = Arc::new(Stamp::default());
    let server = server(&stamp);
    let mut client = TestClient::connect(&server);
    client.initialize(json!({})).await.unwrap();

    let result = client
        .call_tool("add", json!({"a": 2, "b": 3}))
        .await
        .unwrap();
    let texts: Vec<_> = result
        .content
        .iter()
        .map(|c| serde_json::to_value(c).unwrap()["text"].clone())
        .collect();
    assert_eq!(texts, [json!("5"), json!("stamped")]);
    assert_eq!(stamp.0.load(Ordering::SeqCst), 1);

    // Denied by the authorizer: refused, and no layer saw it.
    let denied = client
        .call_tool("secret", json!({"a": 1, "b": 1}))
        .await
        .unwrap();
    assert!(denied.is_error());
    assert_eq!(stamp.0.load(Ordering::SeqCst), 1);

    // Hidden from the list, whatever the layers do.
    let names: Vec<_> = mcp_tests::tool_names(&mut client).await;
    assert_eq!(names, ["add"]);
}

#[tokio::test]
async fn the_rate_limit_answers_tools_with_is_error_and_others_with_32029() {
    let add = ToolDef::from_fn("add", "Adds.", |_ctx, x: Add| async move { x.a + x.b });
    let server = Server::builder("limited", "1.0.0")
        .tool(add)
        .authorizer(auth::allow_all())
        .layer(RateLimit::per_principal(2, 0.001))
        .build()
        .expect("server");
    let mut client = TestClient::connect(&server);
    // initialize takes the first token.
    client.initialize(json!({})).await.unwrap();
    assert!(
        !client
            .call_tool("add", json!({"a": 1, "b": 1}))
            .await
            .unwrap()
            .is_error()
    );
    let limited = client
        .call_tool("add", json!({"a": 1, "b": 1}))
        .await
        .unwrap();
    assert!(limited.is_error());
    let text = serde_json::to_value(&limited.content[0]).unwrap()["text"].clone();
    assert!(text.as_str().unwrap().starts_with("rate_limited"), "{text}");
    let err = client.request("tools/list", json!({})).await.unwrap_err();
    assert_eq!(err.code, mcp::layers::codes::RATE_LIMITED);
    assert!(err.data.unwrap()["retryAfterMs"].as_u64().unwrap() > 0);

    // Another connection has a bucket of its own.
    let mut other =
        TestClient::connect_as(&server, mcp::ConnId::new("other"), mcp::Transport::Stdio);
    other.initialize(json!({})).await.unwrap();
    assert!(
        !other
            .call_tool("add", json!({"a": 1, "b": 1}))
            .await
            .unwrap()
            .is_error()
    );
}

/// What a layer saw of one request.
#[derive(Clone, Debug)]
struct Seen {
    method: &'static str,
    target: Option<String>,
    era: mcp::protocol::Era,
    transport: mcp::Transport,
    subject: Option<String>,
    meta_version: Option<String>,
    header: Option<String>,
}

/// Records every request it sees.
#[derive(Default)]
struct Recorder(parking_lot::Mutex<Vec<Seen>>);

impl Layer for Recorder {
    fn on_request<'a>(&'a self, req: &'a Request<'a>, next: Next<'a>) -> Pending<'a> {
        self.0.lock().push(Seen {
            method: req.method().name(),
            target: req.target().map(str::to_owned),
            era: req.era(),
            transport: req.transport(),
            subject: req.principal().map(|p| p.subject.clone()),
            meta_version: req
                .meta()
                .and_then(|m| m.get("io.modelcontextprotocol/protocolVersion"))
                .and_then(|v| v.as_str())
                .map(str::to_owned),
            header: req
                .http_headers()
                .and_then(|h| h.get("x-test"))
                .map(str::to_owned),
        });
        next.run(req)
    }
}

struct Shared2(Arc<Recorder>);

impl Layer for Shared2 {
    fn on_request<'a>(&'a self, req: &'a Request<'a>, next: Next<'a>) -> Pending<'a> {
        self.0.on_request(req, next)
    }
}

fn recorded_server(recorder: &Arc<Recorder>) -> Server {
    let add = ToolDef::from_fn("add", "Adds.", |_ctx, x: Add| async move { x.a + x.b });
    Server::builder("recorded", "1.0.0")
        .tool(add)
        .authorizer(auth::allow_all())
        .layer(Shared2(Arc::clone(recorder)))
        .build()
        .expect("server")
}

#[tokio::test]
async fn layers_see_both_eras_on_http_with_the_caller_and_its_headers() {
    use mcp_tests::http::{HttpTestServer, test_config};
    let recorder = Arc::new(Recorder::default());
    let http = HttpTestServer::start(recorded_server(&recorder), test_config()).await;

    // Handshake era, on a session.
    let mut session = http.client();
    session.initialize("2025-11-25", json!({})).await;
    let sum = session
        .request(
            2,
            "tools/call",
            json!({"name": "add", "arguments": {"a": 1, "b": 2}}),
        )
        .await;
    assert_eq!(sum["result"]["content"][0]["text"], "3");

    // Stateless era, with a header of our own.
    let stateless = http.stateless();
    let response = stateless
        .post(
            json!(3),
            "tools/call",
            json!({"name": "add", "arguments": {"a": 2, "b": 2}}),
        )
        .header("x-test", "seen")
        .send()
        .await
        .expect("POST");
    let exchange = stateless.read("tools/call", response).await;
    assert_eq!(exchange.response["result"]["content"][0]["text"], "4");
    assert_eq!(exchange.response["result"]["resultType"], "complete");

    let seen = recorder.0.lock().clone();
    let calls: Vec<&Seen> = seen.iter().filter(|s| s.method == "tools/call").collect();
    assert_eq!(calls.len(), 2, "{seen:?}");
    assert_eq!(calls[0].era, mcp::protocol::Era::Handshake);
    assert_eq!(calls[0].transport, mcp::Transport::Http);
    assert_eq!(calls[0].target.as_deref(), Some("add"));
    assert_eq!(calls[1].era, mcp::protocol::Era::Stateless);
    assert_eq!(calls[1].meta_version.as_deref(), Some("2026-07-28"));
    assert_eq!(calls[1].header.as_deref(), Some("seen"));
    assert!(seen.iter().all(|s| s.subject.is_none()));
    // initialize went through the layers too.
    assert!(seen.iter().any(|s| s.method == "initialize"));
    http.stop();
}

async fn read(client: &mut TestClient) -> Value {
    let result = client
        .request("resources/read", json!({"uri": "app://whoami"}))
        .await
        .unwrap();
    result["contents"][0]["text"].clone()
}

#[tokio::test]
async fn the_cache_never_answers_one_caller_with_another_callers_read() {
    use mcp::layers::ResponseCache;
    use std::time::Duration;
    // A resource whose text names the connection that read it: a cached answer given to
    // the wrong caller would show the other connection's id.
    let reads = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&reads);
    let whoami = ResourceDef::new("app://whoami", "whoami", move |ctx: Ctx, _req| {
        counted.fetch_add(1, Ordering::SeqCst);
        let id = ctx.conn_id().to_string();
        async move { id }
    });
    let server = Server::builder("cached", "1.0.0")
        .resource(whoami)
        .authorizer(auth::allow_all())
        .layer(ResponseCache::new(Duration::from_secs(60)))
        .build()
        .expect("server");
    let mut alice =
        TestClient::connect_as(&server, mcp::ConnId::new("alice"), mcp::Transport::Stdio);
    alice.initialize(json!({})).await.unwrap();
    let mut bob = TestClient::connect_as(&server, mcp::ConnId::new("bob"), mcp::Transport::Stdio);
    bob.initialize(json!({})).await.unwrap();

    assert_eq!(read(&mut alice).await, "alice");
    assert_eq!(read(&mut alice).await, "alice");
    assert_eq!(
        reads.load(Ordering::SeqCst),
        1,
        "the repeat came from the cache"
    );
    assert_eq!(read(&mut bob).await, "bob");
    assert_eq!(
        reads.load(Ordering::SeqCst),
        2,
        "another caller is never served from it"
    );

    // The same connection id on the other era is not served a handshake answer either.
    drop(alice);
    let mut alice =
        TestClient::connect_as(&server, mcp::ConnId::new("alice"), mcp::Transport::Stdio);
    alice.use_stateless(json!({}));
    let stateless = alice
        .request("resources/read", json!({"uri": "app://whoami"}))
        .await
        .unwrap();
    assert_eq!(stateless["resultType"], "complete");
    assert_eq!(reads.load(Ordering::SeqCst), 3);

    // A change clears it.
    server.resource_updated("app://whoami");
    let mut alice2 =
        TestClient::connect_as(&server, mcp::ConnId::new("alice"), mcp::Transport::Stdio);
    alice2.initialize(json!({})).await.unwrap();
    read(&mut alice2).await;
    assert_eq!(reads.load(Ordering::SeqCst), 4);
}

/// Appends `0` to every successful tool result as it leaves: through `on_answer` when the
/// flag says so, else after `next.run` in `on_request`.
struct Append(&'static str, bool);

impl Layer for Append {
    fn on_request<'a>(&'a self, req: &'a Request<'a>, next: Next<'a>) -> Pending<'a> {
        if self.1 {
            return next.run(req);
        }
        Pending::new(async move { append(req, next.run(req).await, self.0) })
    }

    fn on_answer(&self, req: &Request<'_>, answer: mcp::layers::Answer) -> mcp::layers::Answer {
        if self.1 {
            append(req, answer, self.0)
        } else {
            answer
        }
    }
}

fn append(req: &Request<'_>, answer: mcp::layers::Answer, text: &str) -> mcp::layers::Answer {
    match answer.tool_result() {
        Some(mut r) => {
            r.content.push(ContentBlock::text(text));
            req.answer_tool(r)
        }
        None => answer,
    }
}

#[tokio::test]
async fn answers_leave_through_every_layer_innermost_first_whichever_hook_it_uses() {
    let add = ToolDef::from_fn("add", "Adds.", |_ctx, x: Add| async move { x.a + x.b })
        .layer(Append("tool", true));
    let server = Server::builder("onion", "1.0.0")
        .tool(add)
        .authorizer(auth::allow_all())
        .layer(Append("outermost", true))
        .layer(Append("middle", false))
        .layer(Append("inner", true))
        .layer(Append("innermost", true))
        .build()
        .expect("server");
    let mut client = TestClient::connect(&server);
    client.initialize(json!({})).await.unwrap();
    let result = client
        .call_tool("add", json!({"a": 1, "b": 2}))
        .await
        .unwrap();
    let texts: Vec<String> = result
        .content
        .iter()
        .map(|c| {
            serde_json::to_value(c).unwrap()["text"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        texts,
        ["3", "tool", "innermost", "inner", "middle", "outermost"]
    );
}
