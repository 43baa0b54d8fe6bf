//! Port of the seed's read_surface_authz_test: the read seam gates every list, read,
//! subscription, prompt and completion with JSON-RPC error -32090, separately from the tool
//! seam; and `resources/updated` reaches only subscribed connections.

use std::sync::Arc;
use std::time::Duration;

use mcp::auth::{self, Decision, Seam, allow_all, allowlist, deny_all, policy};
use mcp::registry::{PromptDef, ResourceDef, complete_from};
use mcp::testing::TestClient;
use mcp::{Server, ServerBuilder};
use mcp_tests::{add_tool, assert_silent, initialized_client};
use parking_lot::Mutex;
use serde_json::{Value, json};

const URI: &str = "app://state";

fn builder() -> ServerBuilder {
    Server::builder("seed", "0")
        .tool(add_tool())
        .resource(
            ResourceDef::new(URI, "state", |_ctx, _req| async { "live model state" })
                .mime_type("text/plain"),
        )
        .resource(ResourceDef::new(
            "app://other",
            "other",
            |_ctx, _req| async { "other" },
        ))
        .prompt(
            PromptDef::new(
                "greet",
                "Greets someone.",
                |_ctx, args: mcp::registry::PromptArgs| async move {
                    format!("Hello, {}!", args.get("name").unwrap_or("world"))
                },
            )
            .argument("name", "Who to greet", false)
            .complete("name", complete_from(["alice", "bob"])),
        )
}

/// Every gated method with params that would succeed if allowed.
fn gated_requests() -> Vec<(&'static str, Value)> {
    vec![
        ("resources/read", json!({"uri": URI})),
        ("resources/subscribe", json!({"uri": URI})),
        ("resources/list", json!({})),
        ("resources/unsubscribe", json!({"uri": URI})),
        ("tools/list", json!({})),
        (
            "prompts/get",
            json!({"name": "greet", "arguments": {"name": "ann"}}),
        ),
        ("prompts/list", json!({})),
        (
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "greet"},
                   "argument": {"name": "name", "value": "a"}}),
        ),
        ("resources/templates/list", json!({})),
    ]
}

/// Sends a raw request and returns the whole response frame.
async fn raw(client: &mut TestClient, id: i64, method: &str, params: Value) -> Value {
    client.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
    let message = client.next_message().await.expect("a response");
    assert_eq!(message["id"], id, "{message}");
    message
}

fn assert_read_denied(response: &Value, method: &str, detail: &str) {
    assert!(response.get("result").is_none(), "{response}");
    let error = &response["error"];
    assert_eq!(error["code"], -32090, "{response}");
    assert_eq!(
        error["message"],
        format!("authorization_required: {method}")
    );
    assert_eq!(
        error["data"],
        json!({"error": "authorization_required", "method": method, "detail": detail})
    );
}

#[tokio::test]
async fn deny_all_on_the_read_seam_gives_32090_for_every_read_method() {
    let server = builder()
        .read_authorizer(deny_all("reads_off"))
        .build()
        .unwrap();
    let mut client = initialized_client(&server, json!({})).await;
    for (i, (method, params)) in gated_requests().into_iter().enumerate() {
        let response = raw(&mut client, 100 + i as i64, method, params).await;
        assert_read_denied(&response, method, "reads_off");
    }
    // Not gated: initialize, ping, logging/setLevel, and the tool seam.
    assert_eq!(client.request("ping", json!({})).await.unwrap(), json!({}));
    assert_eq!(
        client
            .request("logging/setLevel", json!({"level": "debug"}))
            .await
            .unwrap(),
        json!({})
    );
    let sum = client
        .call_tool("add", json!({"a": 2, "b": 2}))
        .await
        .unwrap();
    assert_eq!(sum.content[0].as_text(), Some("4"));
}

#[tokio::test]
async fn the_read_seam_sees_the_method_and_its_arguments() {
    let seen: Arc<Mutex<Vec<(String, Value)>>> = Arc::default();
    let s2 = Arc::clone(&seen);
    let server = builder()
        .read_authorizer(policy(move |req| {
            assert_eq!(req.seam(), Seam::Read);
            assert!(req.tool().is_none());
            s2.lock()
                .push((req.name().to_owned(), req.arguments().clone()));
            Decision::Allow
        }))
        .build()
        .unwrap();
    let mut client = initialized_client(&server, json!({})).await;
    for (i, (method, params)) in gated_requests().into_iter().enumerate() {
        let response = raw(&mut client, 100 + i as i64, method, params).await;
        assert!(response.get("result").is_some(), "{method}: {response}");
    }
    let seen = seen.lock().clone();
    assert_eq!(
        seen,
        vec![
            ("resources/read".to_owned(), json!({"uri": URI})),
            ("resources/subscribe".to_owned(), json!({"uri": URI})),
            ("resources/list".to_owned(), json!({})),
            ("resources/unsubscribe".to_owned(), json!({"uri": URI})),
            ("tools/list".to_owned(), json!({})),
            (
                "prompts/get".to_owned(),
                json!({"name": "greet", "arguments": {"name": "ann"}})
            ),
            ("prompts/list".to_owned(), json!({})),
            (
                "completion/complete".to_owned(),
                json!({"ref": {"type": "ref/prompt", "name": "greet"}})
            ),
            ("resources/templates/list".to_owned(), json!({})),
        ]
    );
}

#[tokio::test]
async fn a_tools_allowlist_does_not_deny_reads() {
    let server = builder().authorizer(allowlist(["add"])).build().unwrap();
    let mut client = initialized_client(&server, json!({})).await;
    let read = client
        .request("resources/read", json!({"uri": URI}))
        .await
        .unwrap();
    assert_eq!(read["contents"][0]["text"], "live model state");
    let prompts = client.request("prompts/list", json!({})).await.unwrap();
    assert_eq!(prompts["prompts"][0]["name"], "greet");
    let tools = client.request("tools/list", json!({})).await.unwrap();
    assert_eq!(tools["tools"][0]["name"], "add");
}

#[tokio::test]
async fn a_read_ask_denies_without_echoing_the_prompt() {
    let server = builder()
        .read_authorizer(policy(|_| Decision::ask("Let them read the SECRET state?")))
        .build()
        .unwrap();
    // Even a client that could be asked: reads never elicit.
    let mut client = initialized_client(&server, json!({"elicitation": {}})).await;
    let response = raw(&mut client, 100, "resources/read", json!({"uri": URI})).await;
    assert_read_denied(
        &response,
        "resources/read",
        "interactive_approval_unsupported",
    );
    assert!(!response.to_string().contains("SECRET"));
    assert_silent(&mut client, Duration::from_millis(100)).await;
}

#[tokio::test]
async fn a_panicking_read_authorizer_denies_and_the_server_lives() {
    // The seed's read seam had no containment; here both seams have it.
    let server = builder()
        .read_authorizer(policy(|_| panic!("read policy exploded")))
        .build()
        .unwrap();
    let mut client = initialized_client(&server, json!({})).await;
    for id in [100, 101] {
        let response = raw(&mut client, id, "resources/read", json!({"uri": URI})).await;
        assert_read_denied(&response, "resources/read", "authorizer_failed");
        assert!(!response.to_string().contains("exploded"));
    }
    let response = raw(&mut client, 102, "resources/read", json!({"uri": URI})).await;
    assert_eq!(response["error"]["code"], -32090);
    assert_eq!(client.request("ping", json!({})).await.unwrap(), json!({}));
}

#[tokio::test]
async fn without_a_read_authorizer_reads_are_open() {
    let server = builder().build().unwrap();
    let mut client = initialized_client(&server, json!({})).await;
    for (i, (method, params)) in gated_requests().into_iter().enumerate() {
        let response = raw(&mut client, 100 + i as i64, method, params).await;
        assert!(response.get("error").is_none(), "{method}: {response}");
    }
}

#[tokio::test]
async fn allow_all_passes_reads_and_prompts_through() {
    let server = builder().read_authorizer(allow_all()).build().unwrap();
    let mut client = initialized_client(&server, json!({})).await;
    let read = client
        .request("resources/read", json!({"uri": URI}))
        .await
        .unwrap();
    assert_eq!(
        read["contents"],
        json!([{"uri": URI, "mimeType": "text/plain", "text": "live model state"}])
    );
    let prompt = client
        .request(
            "prompts/get",
            json!({"name": "greet", "arguments": {"name": "ann"}}),
        )
        .await
        .unwrap();
    assert_eq!(prompt["messages"][0]["content"]["text"], "Hello, ann!");
    let completion = client
        .request(
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "greet"},
                   "argument": {"name": "name", "value": "a"}}),
        )
        .await
        .unwrap();
    assert_eq!(completion["completion"]["values"], json!(["alice"]));
}

#[tokio::test]
async fn a_method_allowlist_on_the_read_seam_gates_by_method_name() {
    // The production default for reads: lists only.
    let server = builder()
        .read_authorizer(allowlist(["tools/list", "resources/list", "prompts/list"]))
        .build()
        .unwrap();
    let mut client = initialized_client(&server, json!({})).await;
    assert!(client.request("resources/list", json!({})).await.is_ok());
    let response = raw(&mut client, 100, "resources/read", json!({"uri": URI})).await;
    assert_read_denied(&response, "resources/read", "not_allowlisted");
}

async fn next_with_method(client: &mut TestClient, method: &str) -> Option<Value> {
    let got = client.drain(Duration::from_millis(100)).await;
    let matching: Vec<Value> = got.into_iter().filter(|m| m["method"] == method).collect();
    assert!(matching.len() <= 1, "{matching:?}");
    matching.into_iter().next()
}

#[tokio::test]
async fn resources_updated_reaches_only_subscribers_while_list_changed_reaches_everyone() {
    let server = builder().build().unwrap();
    let mut subscribed = initialized_client(&server, json!({})).await;
    let mut other = initialized_client(&server, json!({})).await;
    subscribed
        .request("resources/subscribe", json!({"uri": URI}))
        .await
        .unwrap();

    server.resource_updated(URI);
    let update = next_with_method(&mut subscribed, "notifications/resources/updated")
        .await
        .expect("the subscriber is told");
    assert_eq!(update["params"], json!({"uri": URI}));
    assert!(
        next_with_method(&mut other, "notifications/resources/updated")
            .await
            .is_none()
    );

    // The same through notify(): it routes resources/updated by URI, never broadcasts it.
    server.notify("notifications/resources/updated", Some(json!({"uri": URI})));
    assert!(
        next_with_method(&mut subscribed, "notifications/resources/updated")
            .await
            .is_some()
    );
    assert!(
        next_with_method(&mut other, "notifications/resources/updated")
            .await
            .is_none()
    );

    // Another URI reaches no one; neither does an update that names no URI at all (it is
    // never turned into a broadcast).
    server.resource_updated("app://other");
    server.notify("notifications/resources/updated", None);
    server.notify("notifications/resources/updated", Some(json!({"url": URI})));
    for client in [&mut subscribed, &mut other] {
        assert!(
            next_with_method(client, "notifications/resources/updated")
                .await
                .is_none()
        );
    }

    // Any other notification reaches every connection.
    server.notify("notifications/custom", Some(json!({"n": 1})));
    for client in [&mut subscribed, &mut other] {
        let custom = next_with_method(client, "notifications/custom")
            .await
            .expect("broadcast");
        assert_eq!(custom["params"], json!({"n": 1}));
    }

    // A registry change reaches every initialized connection.
    server
        .registry()
        .register_resource(ResourceDef::new("app://new", "new", |_c, _r| async { "n" }))
        .unwrap();
    for client in [&mut subscribed, &mut other] {
        assert!(
            next_with_method(client, "notifications/resources/list_changed")
                .await
                .is_some()
        );
    }

    // Unsubscribing stops the updates.
    subscribed
        .request("resources/unsubscribe", json!({"uri": URI}))
        .await
        .unwrap();
    server.resource_updated(URI);
    assert!(
        next_with_method(&mut subscribed, "notifications/resources/updated")
            .await
            .is_none()
    );
}

#[tokio::test]
async fn subscriptions_are_per_connection_not_global() {
    // The seed kept one URI-global set; here a subscription belongs to its connection.
    let server = builder().build().unwrap();
    let mut a = initialized_client(&server, json!({})).await;
    let mut b = initialized_client(&server, json!({})).await;
    a.request("resources/subscribe", json!({"uri": URI}))
        .await
        .unwrap();
    b.request("resources/subscribe", json!({"uri": URI}))
        .await
        .unwrap();
    b.request("resources/unsubscribe", json!({"uri": URI}))
        .await
        .unwrap();
    server.resource_updated(URI);
    assert!(
        next_with_method(&mut a, "notifications/resources/updated")
            .await
            .is_some()
    );
    assert!(
        next_with_method(&mut b, "notifications/resources/updated")
            .await
            .is_none()
    );
}

#[test]
fn read_deny_helper_matches_the_wire_shape() {
    let e = auth::read_denied("resources/read", "nope");
    assert_eq!(e.code, -32090);
    assert_eq!(e.message, "authorization_required: resources/read");
}
