//! Middleware through the in-memory client: what a layer sees, that it runs only after the
//! authorizer, that it can change an answer, and the built-in rate limit.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use mcp::auth::{self, Decision};
use mcp::layers::{Answer, BoxFuture, Layer, Next, RateLimit, Request};
use mcp::prelude::*;
use mcp::testing::TestClient;
use serde_json::json;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    a: i64,
    b: i64,
}

/// Counts the tool calls it sees and appends a note to every successful result.
#[derive(Default)]
struct Stamp(AtomicUsize);

impl Layer for Stamp {
    fn on_call_tool<'a>(&'a self, req: &'a Request<'a>, next: Next<'a>) -> BoxFuture<'a, Answer> {
        Box::pin(async move {
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
    fn on_request<'a>(&'a self, req: &'a Request<'a>, next: Next<'a>) -> BoxFuture<'a, Answer> {
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
    let names: Vec<_> = client
        .list_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
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
