//! What each handshake revision can receive: content kinds a revision does not know become
//! text, structured content is only sent where the revision has it, and elicitation is only
//! sent to revisions that have it. Every reply is checked against that revision's schema.

use mcp::prelude::*;
use mcp::testing::TestClient;
use mcp_tests::validate_server_message;
use serde_json::{Value, json};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoArgs {}

fn server() -> Server {
    Server::builder("revisions", "1")
        .tool(ToolDef::from_fn(
            "media",
            "Returns audio and a link.",
            |_c, _a: NoArgs| async {
                vec![
                    ContentBlock::audio(b"RIFF", "audio/wav"),
                    ContentBlock::resource_link("test://doc", "doc"),
                    ContentBlock::text("plain"),
                ]
            },
        ))
        .tool(ToolDef::from_fn(
            "structured",
            "Returns an object.",
            |_c, _a: NoArgs| async { Json(json!({"n": 1})) },
        ))
        .tool(ToolDef::from_fn(
            "listing",
            "Returns an array.",
            |_c, _a: NoArgs| async { Json(json!([1, 2])) },
        ))
        .tool(
            ToolDef::from_fn("wipe", "Destroys.", |_c, _a: NoArgs| async { "wiped" }).destructive(),
        )
        .authorizer(mcp::auth::ask_before_sensitive())
        .build()
        .unwrap()
}

async fn call(c: &mut TestClient, version: &str, name: &str) -> Value {
    let m = c
        .request_message("tools/call", json!({"name": name, "arguments": {}}))
        .await
        .unwrap();
    validate_server_message(version, &m, Some("tools/call")).unwrap_or_else(|e| panic!("{e}"));
    m["result"].clone()
}

#[tokio::test]
async fn content_is_shaped_for_each_revision() {
    let s = server();
    for version in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
        let mut c = TestClient::connect(&s);
        c.initialize_version(version, json!({})).await.unwrap();
        let media = call(&mut c, version, "media").await;
        let kinds: Vec<&str> = media["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["type"].as_str().unwrap())
            .collect();
        let expected: &[&str] = match version {
            "2024-11-05" => &["text", "text", "text"],
            "2025-03-26" => &["audio", "text", "text"],
            _ => &["audio", "resource_link", "text"],
        };
        assert_eq!(kinds, expected, "{version}");

        let structured = call(&mut c, version, "structured").await;
        assert_eq!(
            structured["structuredContent"].is_object(),
            version >= "2025-06-18",
            "{version}"
        );
        assert_eq!(
            structured["content"][0]["text"], "{\"n\":1}",
            "the text fallback is always there"
        );
        let listing = call(&mut c, version, "listing").await;
        assert!(
            listing.get("structuredContent").is_none(),
            "handshake revisions take objects only"
        );
    }
}

#[tokio::test]
async fn elicitation_is_only_sent_to_revisions_that_have_it() {
    let s = server();
    for version in ["2024-11-05", "2025-03-26"] {
        let mut c = TestClient::connect(&s);
        c.initialize_version(version, json!({"elicitation": {}}))
            .await
            .unwrap();
        let denied = call(&mut c, version, "wipe").await;
        assert_eq!(
            denied["isError"], true,
            "{version}: the question cannot be asked"
        );
        assert!(
            c.drain(std::time::Duration::from_millis(50))
                .await
                .is_empty(),
            "{version}: nothing sent"
        );
    }
    let mut c = TestClient::connect(&s);
    c.initialize_version("2025-06-18", json!({"elicitation": {}}))
        .await
        .unwrap();
    c.send(json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "wipe", "arguments": {}}}));
    let ask = c.next_message().await.unwrap();
    assert_eq!(ask["method"], "elicitation/create");
    validate_server_message("2025-06-18", &ask, None).unwrap();
}

#[tokio::test]
async fn subscriptions_per_connection_are_capped() {
    let s = Server::builder("subs", "1")
        .resource(ResourceDef::new(
            "test://a",
            "a",
            |_c, _r: mcp::registry::ResourceRequest| async { "a" },
        ))
        .config(mcp::server::ServerConfig {
            max_subscriptions: 2,
            ..Default::default()
        })
        .build()
        .unwrap();
    let mut c = TestClient::connect(&s);
    c.initialize(json!({})).await.unwrap();
    for uri in ["test://a", "test://b", "test://a"] {
        c.request("resources/subscribe", json!({"uri": uri}))
            .await
            .unwrap();
    }
    let refused = c
        .request("resources/subscribe", json!({"uri": "test://c"}))
        .await
        .unwrap_err();
    assert_eq!(refused.code, -32602);
    assert!(refused.message.contains("limit"));
    c.request("resources/unsubscribe", json!({"uri": "test://b"}))
        .await
        .unwrap();
    c.request("resources/subscribe", json!({"uri": "test://c"}))
        .await
        .unwrap();
}
