//! Wire tests: the builder example spawned as a real process, driven over pipes and over a
//! Unix socket pair, every message it writes validated against the official schema of the
//! negotiated revision.

use std::time::{Duration, Instant};

use mcp_tests::{StdioServer, Wiring};
use serde_json::{Value, json};

fn spawn(wiring: Wiring) -> StdioServer {
    StdioServer::spawn(
        std::path::Path::new(env!("CARGO_BIN_EXE_builder")),
        &[],
        wiring,
    )
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

async fn full_session(wiring: Wiring, version: &str) {
    let mut s = spawn(wiring);
    let init = s.initialize(version, json!({"elicitation": {}})).await;
    assert_eq!(init["result"]["protocolVersion"], version);
    assert_eq!(init["result"]["serverInfo"]["name"], "notes");

    assert_eq!(s.request("ping", json!({})).await["result"], json!({}));

    let tools = s.request("tools/list", json!({})).await;
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    // The guarded delete_note is listed only to a client that can be asked, and
    // elicitation exists from 2025-06-18 on.
    if version >= "2025-06-18" {
        assert_eq!(names, ["add_note", "count", "delete_note"]);
    } else {
        assert_eq!(names, ["add_note", "count"]);
    }

    let saved = s
        .request(
            "tools/call",
            json!({"name": "add_note", "arguments": {"id": "a", "text": "hello"}}),
        )
        .await;
    assert_eq!(text(&saved["result"]), "Saved note \"a\".");

    let bad = s
        .request(
            "tools/call",
            json!({"name": "add_note", "arguments": {"id": "a"}}),
        )
        .await;
    assert_eq!(bad["result"]["isError"], true);
    assert!(
        text(&bad["result"]).contains("Missing required argument `text`"),
        "{bad}"
    );

    let unknown = s
        .request("tools/call", json!({"name": "nope", "arguments": {}}))
        .await;
    assert_eq!(unknown["error"]["code"], -32602);

    let read = s
        .request("resources/read", json!({"uri": "note://a"}))
        .await;
    assert_eq!(read["result"]["contents"][0]["text"], "hello");
    let missing = s
        .request("resources/read", json!({"uri": "note://zzz"}))
        .await;
    assert_eq!(missing["error"]["code"], -32002);
    assert_eq!(missing["error"]["data"]["uri"], "note://zzz");

    let listed = s.request("resources/list", json!({})).await;
    assert_eq!(listed["result"]["resources"][0]["uri"], "notes://index");
    let templates = s.request("resources/templates/list", json!({})).await;
    assert_eq!(
        templates["result"]["resourceTemplates"][0]["uriTemplate"],
        "note://{id}"
    );

    let prompts = s.request("prompts/list", json!({})).await;
    assert_eq!(prompts["result"]["prompts"][0]["name"], "summarize");
    let prompt = s
        .request(
            "prompts/get",
            json!({"name": "summarize", "arguments": {"id": "a"}}),
        )
        .await;
    assert!(
        prompt["result"]["messages"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("hello")
    );

    if version != "2024-11-05" {
        let completion = s
            .request(
                "completion/complete",
                json!({"ref": {"type": "ref/resource", "uri": "note://{id}"}, "argument": {"name": "id", "value": "w"}}),
            )
            .await;
        assert_eq!(
            completion["result"]["completion"]["values"],
            json!(["welcome"])
        );
    }

    assert_eq!(
        s.request("logging/setLevel", json!({"level": "debug"}))
            .await["result"],
        json!({})
    );
    assert_eq!(
        s.request("nope/nothing", json!({})).await["error"]["code"],
        -32601
    );

    // Progress arrives before the response, on the same stream.
    let counted = s
        .request(
            "tools/call",
            json!({"name": "count", "arguments": {"to": 3}, "_meta": {"progressToken": "p1"}}),
        )
        .await;
    assert_eq!(text(&counted["result"]), "Counted to 3.");
    let progress: Vec<f64> = s
        .received
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| m["params"]["progress"].as_f64().unwrap())
        .collect();
    assert_eq!(progress, [1.0, 2.0, 3.0]);

    s.close_stdin().await;
    assert!(
        s.wait_exit(Duration::from_secs(3))
            .await
            .is_some_and(|st| st.success())
    );
}

#[tokio::test]
async fn every_handshake_revision_over_pipes() {
    for version in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
        full_session(Wiring::Pipes, version).await;
    }
}

#[tokio::test]
async fn newest_revision_over_a_socket_pair() {
    full_session(Wiring::SocketPair, "2025-11-25").await;
}

async fn approval(wiring: Wiring, answer: Value) -> Value {
    let mut s = spawn(wiring);
    s.initialize("2025-11-25", json!({"elicitation": {}})).await;
    s.send(json!({"jsonrpc": "2.0", "id": 42, "method": "tools/call",
                  "params": {"name": "delete_note", "arguments": {"id": "welcome"}}}))
        .await;
    let ask = s.recv().await;
    assert_eq!(ask["method"], "elicitation/create");
    assert_eq!(
        ask["params"]["requestedSchema"]["required"],
        json!(["approve"])
    );
    assert!(
        ask["params"]["message"]
            .as_str()
            .unwrap()
            .contains("delete_note")
    );
    s.send(json!({"jsonrpc": "2.0", "id": ask["id"], "result": answer}))
        .await;
    let reply = s.recv().await;
    assert_eq!(reply["id"], 42, "the reply answers the original call");
    reply["result"].clone()
}

#[tokio::test]
async fn a_destructive_tool_runs_only_after_approval() {
    let approved = approval(
        Wiring::Pipes,
        json!({"action": "accept", "content": {"approve": true}}),
    )
    .await;
    assert_eq!(approved["isError"], Value::Null);
    assert_eq!(text(&approved), "Deleted note \"welcome\".");

    let declined = approval(Wiring::SocketPair, json!({"action": "decline"})).await;
    assert_eq!(declined["isError"], true);
    let payload: Value = serde_json::from_str(text(&declined)).unwrap();
    assert_eq!(
        payload,
        json!({"error": "authorization_required", "tool": "delete_note", "decision": "ask", "detail": "user decline"})
    );
}

#[tokio::test]
async fn malformed_input_gets_errors_and_the_server_keeps_serving() {
    let mut s = spawn(Wiring::Pipes);
    s.initialize("2025-11-25", json!({})).await;
    s.send_line("{not json").await;
    assert_eq!(s.recv().await["error"]["code"], -32700);
    s.send_line("[1, 2]").await;
    assert_eq!(
        s.recv().await["error"]["code"],
        -32600,
        "batches are not part of 2025-11-25"
    );
    s.send_line(r#"{"jsonrpc":"2.0","id":9}"#).await;
    let missing = s.recv().await;
    assert_eq!(
        (missing["id"].clone(), missing["error"]["code"].clone()),
        (json!(9), json!(-32600))
    );
    s.send_line(r#"{"jsonrpc":"2.0","id":10,"method":"tools/call"}"#)
        .await;
    assert_eq!(
        s.recv().await["error"]["message"],
        "tools/call requires params"
    );
    s.send_line("").await;
    s.send_line(r#"{"jsonrpc":"2.0","method":"notifications/unknown"}"#)
        .await;
    assert_eq!(s.request("ping", json!({})).await["result"], json!({}));
}

#[tokio::test]
async fn batches_work_on_2025_03_26() {
    let mut s = spawn(Wiring::Pipes);
    s.initialize("2025-03-26", json!({})).await;
    s.send_line(r#"[{"jsonrpc":"2.0","id":"a","method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":"b","method":"tools/list"}]"#)
        .await;
    let batch = s.recv().await;
    let ids: Vec<&Value> = batch.as_array().unwrap().iter().map(|r| &r["id"]).collect();
    assert_eq!(ids.len(), 2);
    assert!(ids.contains(&&json!("a")) && ids.contains(&&json!("b")));
}

#[tokio::test]
async fn stdin_eof_exits_promptly_and_closes_parked_calls() {
    let mut s = spawn(Wiring::SocketPair);
    s.initialize("2025-11-25", json!({"elicitation": {}})).await;
    s.send(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                  "params": {"name": "delete_note", "arguments": {"id": "welcome"}}}))
        .await;
    assert_eq!(s.recv().await["method"], "elicitation/create");
    let started = Instant::now();
    s.close_stdin().await;
    let closed = s.recv().await;
    assert_eq!(closed["id"], 7);
    assert!(text(&closed["result"]).contains("elicitation failed"));
    assert!(s.wait_exit(Duration::from_secs(2)).await.is_some());
    assert!(started.elapsed() < Duration::from_secs(2));
}

fn stateless(mut params: Value, capabilities: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    });
    params
}

async fn stateless_session(wiring: Wiring) {
    let mut s = spawn(wiring);
    s.set_version("2026-07-28");
    let caps = json!({"elicitation": {}});
    let discover = s
        .request("server/discover", stateless(json!({}), caps.clone()))
        .await;
    assert_eq!(
        discover["result"]["supportedVersions"],
        json!(["2026-07-28"])
    );

    let tools = s
        .request("tools/list", stateless(json!({}), caps.clone()))
        .await;
    assert_eq!(tools["result"]["resultType"], "complete");

    // A listen stream for one note's updates, then a change to that note.
    s.send(json!({"jsonrpc": "2.0", "id": "listen", "method": "subscriptions/listen",
                  "params": stateless(json!({"notifications": {"resourceSubscriptions": ["note://n"]}}), caps.clone())}))
        .await;
    assert_eq!(
        s.recv().await["method"],
        "notifications/subscriptions/acknowledged"
    );
    let saved = s
        .request(
            "tools/call",
            stateless(
                json!({"name": "add_note", "arguments": {"id": "n", "text": "t"}}),
                caps.clone(),
            ),
        )
        .await;
    assert_eq!(text(&saved["result"]), "Saved note \"n\".");
    let updated = s
        .received
        .iter()
        .find(|m| m["method"] == "notifications/resources/updated")
        .cloned()
        .expect("the listen stream saw the update");
    assert_eq!(
        updated["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "listen"
    );

    // The destructive tool asks through an input-required result, then runs once approved.
    let ask = s
        .request(
            "tools/call",
            stateless(
                json!({"name": "delete_note", "arguments": {"id": "n"}}),
                caps.clone(),
            ),
        )
        .await;
    assert_eq!(ask["result"]["resultType"], "input_required");
    let approved = s
        .request(
            "tools/call",
            stateless(
                json!({"name": "delete_note", "arguments": {"id": "n"},
                       "requestState": ask["result"]["requestState"],
                       "inputResponses": {"mcp.approve": {"action": "accept", "content": {"approve": true}}}}),
                caps.clone(),
            ),
        )
        .await;
    assert_eq!(text(&approved["result"]), "Deleted note \"n\".");

    let missing = s
        .request(
            "resources/read",
            stateless(json!({"uri": "note://n"}), caps.clone()),
        )
        .await;
    assert_eq!(missing["error"]["code"], -32602);

    // Cancelling the listen ends it without a response.
    s.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "listen"}}))
        .await;
    s.close_stdin().await;
    while let Some(m) = s.recv_within(Duration::from_secs(2)).await {
        assert_ne!(m["id"], "listen", "a cancelled listen gets no response");
    }
    assert!(
        s.wait_exit(Duration::from_secs(3))
            .await
            .is_some_and(|st| st.success())
    );
}

#[tokio::test]
async fn the_2026_07_28_revision_over_pipes_and_socket_pairs() {
    stateless_session(Wiring::Pipes).await;
    stateless_session(Wiring::SocketPair).await;
}

/// The middleware example over a real stdio pipe and socket pair: its layers run around
/// every call (a counting layer stamps each answer) and the response cache answers a
/// repeated read without running the resource again.
async fn middleware_session(wiring: Wiring) {
    let mut s = StdioServer::spawn(
        std::path::Path::new(env!("CARGO_BIN_EXE_middleware")),
        &[],
        wiring,
    );
    s.initialize("2025-11-25", json!({})).await;
    let first = s
        .request(
            "tools/call",
            json!({"name": "add", "arguments": {"a": 2, "b": 3}}),
        )
        .await;
    assert_eq!(first["result"]["content"][0]["text"], "5");
    assert_eq!(
        first["result"]["content"][1]["text"],
        "(call #1 on this server)"
    );
    let ledger = s
        .request("tools/call", json!({"name": "ledger", "arguments": {}}))
        .await;
    assert_eq!(ledger["result"]["content"][0]["text"], "2 calls so far");

    // The report takes 200 ms to make; the cache answers the repeat at once.
    let read = json!({"uri": "report://daily"});
    let made = s.request("resources/read", read.clone()).await;
    let started = Instant::now();
    let cached = s.request("resources/read", read).await;
    assert!(
        started.elapsed() < Duration::from_millis(150),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(made["result"], cached["result"]);

    // A client of the 2026-07-28 revision (no initialize): the layers run the same way,
    // and the answer they changed is still shaped for its revision.
    let mut s = StdioServer::spawn(
        std::path::Path::new(env!("CARGO_BIN_EXE_middleware")),
        &[],
        wiring,
    );
    let stamped = s
        .request(
            "tools/call",
            stateless(
                json!({"name": "add", "arguments": {"a": 1, "b": 1}}),
                json!({}),
            ),
        )
        .await;
    assert_eq!(stamped["result"]["resultType"], "complete");
    assert_eq!(
        stamped["result"]["content"][1]["text"],
        "(call #1 on this server)"
    );
}

#[tokio::test]
async fn middleware_runs_on_stdio_pipes_and_socket_pairs() {
    middleware_session(Wiring::Pipes).await;
    middleware_session(Wiring::SocketPair).await;
}
