//! Wire tests of the macro-built examples: `quickstart` and `files` spawned as real processes,
//! driven over pipes and a Unix socket pair, every message they write validated against the
//! official schema of the negotiated revision (by `mcp_tests::StdioServer`).

use std::path::Path;

use mcp_tests::{StdioServer, Wiring};
use serde_json::{Value, json};

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

async fn quickstart_session(wiring: Wiring, version: &str) {
    let mut s = StdioServer::spawn(
        Path::new(env!("CARGO_BIN_EXE_quickstart")),
        &["--log-level", "warn"],
        wiring,
    );
    let init = s.initialize(version, json!({})).await;
    assert_eq!(init["result"]["serverInfo"]["name"], "quickstart");

    let tools = s.request("tools/list", json!({})).await;
    let tools = tools["result"]["tools"].as_array().unwrap().clone();
    assert_eq!(tools.len(), 4);
    let add = tools.iter().find(|t| t["name"] == "add").unwrap();
    assert_eq!(
        add["inputSchema"]["properties"]["a"]["description"],
        "The first addend."
    );

    let r = s
        .request(
            "tools/call",
            json!({"name": "add", "arguments": {"a": 1, "b": 2}}),
        )
        .await;
    assert_eq!(text(&r["result"]), "3");
    let r = s
        .request(
            "tools/call",
            json!({"name": "text_stats", "arguments": {"text": "a b"}}),
        )
        .await;
    if version >= "2025-06-18" {
        assert_eq!(r["result"]["structuredContent"]["words"], 2);
    } else {
        // Before structured output existed, the JSON travels as text only.
        assert!(r["result"].get("structuredContent").is_none(), "{r}");
        assert_eq!(text(&r["result"]), r#"{"chars":3,"lines":1,"words":2}"#);
    }
    let r = s
        .request(
            "tools/call",
            json!({"name": "echo", "arguments": {"phrase": "x", "times": 0}}),
        )
        .await;
    assert_eq!(r["result"]["isError"], true);
    let r = s
        .request("tools/call", json!({"name": "add", "arguments": {"a": 1}}))
        .await;
    assert!(
        text(&r["result"]).starts_with("Missing required argument `b`"),
        "{r}"
    );

    let r = s
        .request(
            "tools/call",
            json!({"name": "countdown", "arguments": {"from": 2}, "_meta": {"progressToken": 7}}),
        )
        .await;
    assert_eq!(text(&r["result"]), "lift-off");

    let r = s.request("resources/list", json!({})).await;
    assert_eq!(r["result"]["resources"][0]["uri"], "quickstart://about");
    let r = s.request("resources/templates/list", json!({})).await;
    assert_eq!(
        r["result"]["resourceTemplates"][0]["uriTemplate"],
        "greeting://{name}"
    );
    let r = s
        .request("resources/read", json!({"uri": "greeting://Grace"}))
        .await;
    assert_eq!(r["result"]["contents"][0]["text"], "Hello, Grace!");
    let r = s
        .request("resources/read", json!({"uri": "quickstart://about"}))
        .await;
    assert_eq!(r["result"]["contents"][0]["mimeType"], "text/markdown");

    let r = s.request("prompts/list", json!({})).await;
    assert_eq!(
        r["result"]["prompts"][0]["arguments"][1]["name"],
        "language"
    );
    let r = s
        .request(
            "prompts/get",
            json!({"name": "review", "arguments": {"code": "x = 1", "language": "python"}}),
        )
        .await;
    assert!(
        r["result"]["messages"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .starts_with("Review this python"),
        "{r}"
    );
    let r = s
        .request(
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "review"},
                   "argument": {"name": "language", "value": "r"}}),
        )
        .await;
    assert_eq!(r["result"]["completion"]["values"], json!(["ruby", "rust"]));
    let r = s
        .request(
            "completion/complete",
            json!({"ref": {"type": "ref/resource", "uri": "greeting://{name}"},
                   "argument": {"name": "name", "value": "a"}}),
        )
        .await;
    assert_eq!(r["result"]["completion"]["values"], json!(["Ada", "Alan"]));

    s.close_stdin().await;
    let status = s
        .wait_exit(std::time::Duration::from_secs(5))
        .await
        .expect("exits when stdin closes");
    assert!(status.success());
    assert!(s.received.len() >= 18, "every message was validated");
}

#[tokio::test]
async fn quickstart_over_pipes_on_every_handshake_revision() {
    for version in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
        quickstart_session(Wiring::Pipes, version).await;
    }
}

#[tokio::test]
async fn quickstart_over_a_socket_pair() {
    quickstart_session(Wiring::SocketPair, "2025-11-25").await;
}

#[tokio::test]
async fn files_asks_before_deleting_over_the_wire() {
    let dir = std::env::temp_dir().join(format!("mcp-files-wire-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("old.log"), "old").unwrap();
    let root = dir.to_string_lossy().into_owned();
    let mut s = StdioServer::spawn(
        Path::new(env!("CARGO_BIN_EXE_files")),
        &["--root", &root, "--log-level", "warn"],
        Wiring::Pipes,
    );
    s.initialize("2025-11-25", json!({"elicitation": {}})).await;

    let r = s
        .request("tools/call", json!({"name": "list_files", "arguments": {}}))
        .await;
    assert_eq!(
        r["result"]["structuredContent"],
        json!({"entries": [{"path": "old.log", "kind": "file", "size": 3}]})
    );

    s.send(json!({"jsonrpc": "2.0", "id": 100, "method": "tools/call",
        "params": {"name": "delete_file", "arguments": {"path": "old.log"}}}))
        .await;
    let question = s.recv().await;
    assert_eq!(question["method"], "elicitation/create", "{question}");
    assert!(
        dir.join("old.log").exists(),
        "nothing runs before the answer"
    );
    s.send(json!({"jsonrpc": "2.0", "id": question["id"],
        "result": {"action": "accept", "content": {"approve": true}}}))
        .await;
    let mut notices = Vec::new();
    let r = loop {
        let m = s.recv().await;
        if m["id"] == 100 {
            break m;
        }
        notices.push(m);
    };
    assert_eq!(text(&r["result"]), "deleted old.log", "{r}");
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert_eq!(notices[0]["method"], "notifications/message");
    assert_eq!(notices[0]["params"]["data"], "deleted old.log");
    assert!(!dir.join("old.log").exists());

    let r = s
        .request(
            "tools/call",
            json!({"name": "read_file", "arguments": {"path": "../../etc/passwd"}}),
        )
        .await;
    assert_eq!(r["result"]["isError"], true);
    s.close_stdin().await;
    let _ = s.wait_exit(std::time::Duration::from_secs(5)).await;
    let _ = std::fs::remove_dir_all(&dir);
}
