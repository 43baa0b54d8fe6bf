//! Port of the seed's server_test (and its post-2.7 hardening): the handshake, dispatch edge
//! cases, tools and resources end to end, contained and concurrent execution, cancellation,
//! batches, pagination, completion and logging.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use mcp::auth::{Decision, policy};
use mcp::protocol::Message;
use mcp::registry::{
    CompletionRequest, PromptArgs, PromptDef, ResourceDef, ToolArgs, ToolDef, ToolError,
    complete_from,
};
use mcp::testing::TestClient;
use mcp::{ConnId, Ctx, Server, ServerBuilder};
use mcp_tests::{
    Runs, add_tool, assert_silent, call_frame, counting_tool, expect_response, first_text,
    initialized_client,
};
use serde_json::{Value, json};
use tokio::sync::Notify;

const QUIET: Duration = Duration::from_millis(150);

fn basic() -> ServerBuilder {
    Server::builder("raxol", "2.7.0").tool(add_tool())
}

async fn client_of(server: &Server) -> TestClient {
    initialized_client(server, json!({})).await
}

/// Sends one raw frame and returns the single message that comes back.
async fn roundtrip(client: &mut TestClient, frame: &str) -> Value {
    client.send_frame(frame.as_bytes().to_vec());
    client.next_message().await.expect("a reply")
}

// ---- handshake ----

#[tokio::test]
async fn initialize_negotiates_the_version_and_names_the_server() {
    let server = basic().build().unwrap();
    for (asked, expected) in [
        ("2024-11-05", "2024-11-05"),
        ("2025-03-26", "2025-03-26"),
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        ("1999-01-01", "2025-11-25"),
        ("not-a-version", "2025-11-25"),
    ] {
        let mut client = TestClient::connect(&server);
        let result = client.initialize_version(asked, json!({})).await.unwrap();
        assert_eq!(result["protocolVersion"], expected, "asked {asked}");
        assert_eq!(result["serverInfo"]["name"], "raxol");
        assert_eq!(result["serverInfo"]["version"], "2.7.0");
        assert_eq!(result["capabilities"]["tools"]["listChanged"], true);
    }
}

#[tokio::test]
async fn notifications_get_no_reply_and_ping_gets_an_empty_object() {
    let server = basic().build().unwrap();
    let mut client = client_of(&server).await;
    client.notify("notifications/initialized", json!({}));
    client.notify("notifications/something_unknown", json!({"x": 1}));
    client.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    assert_silent(&mut client, QUIET).await;
    assert_eq!(client.request("ping", json!({})).await.unwrap(), json!({}));
}

// ---- tools ----

#[tokio::test]
async fn tools_list_is_empty_at_first_then_shows_a_registered_tool() {
    let server = Server::builder("raxol", "0")
        .enable_tools()
        .build()
        .unwrap();
    let mut client = client_of(&server).await;
    let mut uninitialized = TestClient::connect(&server);
    assert_eq!(
        client.request("tools/list", json!({})).await.unwrap(),
        json!({"tools": []})
    );
    server.registry().register_tool(add_tool()).unwrap();
    // Registration at run time tells every initialized connection.
    let note = client.next_message().await.expect("a list_changed");
    assert_eq!(note["method"], "notifications/tools/list_changed");
    assert!(note.get("id").is_none());
    assert_silent(&mut uninitialized, QUIET).await;

    let listed = client.request("tools/list", json!({})).await.unwrap();
    let tool = &listed["tools"][0];
    assert_eq!(tool["name"], "add");
    assert_eq!(tool["description"], "Adds two integers.");
    assert_eq!(tool["inputSchema"]["type"], "object");
    let mut keys: Vec<&str> = tool
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort();
    assert_eq!(keys, ["description", "inputSchema", "name"]);
}

#[tokio::test]
async fn tools_call_adds_numbers() {
    let server = basic().build().unwrap();
    let mut client = client_of(&server).await;
    let r = client
        .call_tool("add", json!({"a": 2, "b": 3}))
        .await
        .unwrap();
    assert!(!r.is_error());
    assert_eq!(r.content[0].as_text(), Some("5"));
}

#[tokio::test]
async fn an_unknown_tool_is_invalid_params_naming_it() {
    let server = basic().build().unwrap();
    let mut client = client_of(&server).await;
    let err = client.call_tool("nope", json!({})).await.unwrap_err();
    assert_eq!(err.code, -32602);
    assert!(err.message.contains("nope"), "{err}");
}

#[tokio::test]
async fn a_tool_error_is_an_is_error_result_with_its_text() {
    let server = Server::builder("raxol", "0")
        .tool(ToolDef::new(
            "fail",
            "Always fails.",
            json!({"type": "object"}),
            |_ctx: Ctx, _args: ToolArgs| async {
                Err::<String, _>(ToolError::new("disk full: cannot write report"))
            },
        ))
        .build()
        .unwrap();
    let mut client = client_of(&server).await;
    let r = client.call_tool("fail", json!({})).await.unwrap();
    assert!(r.is_error());
    assert_eq!(
        r.content[0].as_text(),
        Some("disk full: cannot write report")
    );
}

#[tokio::test]
async fn a_string_result_becomes_a_text_block() {
    let server = Server::builder("raxol", "0")
        .tool(ToolDef::new(
            "hello",
            "Says hello.",
            json!({"type": "object"}),
            |_ctx: Ctx, _args: ToolArgs| async { String::from("hello there") },
        ))
        .build()
        .unwrap();
    let mut client = client_of(&server).await;
    let r = client
        .request("tools/call", json!({"name": "hello"}))
        .await
        .unwrap();
    assert_eq!(
        r,
        json!({"content": [{"type": "text", "text": "hello there"}]})
    );
}

#[tokio::test]
async fn bad_arguments_are_an_is_error_result_naming_the_field() {
    let server = basic().build().unwrap();
    let mut client = client_of(&server).await;
    let r = client
        .call_tool("add", json!({"a": "two", "b": 3}))
        .await
        .unwrap();
    assert!(r.is_error());
    let text = r.content[0].as_text().unwrap();
    assert!(text.contains("`a`") && text.contains("integer"), "{text}");
    let r = client.call_tool("add", json!({"b": 3})).await.unwrap();
    assert!(r.is_error());
    let text = r.content[0].as_text().unwrap();
    assert!(text.contains("Missing required argument `a`"), "{text}");
}

#[tokio::test]
async fn a_panicking_tool_names_only_callback_panicked_and_the_server_lives() {
    let server = basic()
        .tool(ToolDef::new(
            "explode",
            "Panics.",
            json!({"type": "object"}),
            |_ctx: Ctx, _args: ToolArgs| async {
                if true {
                    panic!("upstream said: TOP-SECRET-TOKEN");
                }
                "unreachable"
            },
        ))
        .build()
        .unwrap();
    let mut client = client_of(&server).await;
    let r = client.call_tool("explode", json!({})).await.unwrap();
    assert!(r.is_error());
    let text = r.content[0].as_text().unwrap();
    assert!(text.starts_with("callback_panicked"), "{text}");
    assert!(!text.contains("TOP-SECRET-TOKEN"), "{text}");
    assert_eq!(client.request("ping", json!({})).await.unwrap(), json!({}));
    let r = client
        .call_tool("add", json!({"a": 1, "b": 1}))
        .await
        .unwrap();
    assert_eq!(r.content[0].as_text(), Some("2"));
}

/// A tool that signals when it starts, waits until released (or forever), and records
/// whether its future was dropped before finishing.
struct Gate {
    started: Arc<Notify>,
    release: Arc<Notify>,
    dropped: Arc<AtomicBool>,
}

struct DropFlag(Arc<AtomicBool>, bool);

impl Drop for DropFlag {
    fn drop(&mut self) {
        if !self.1 {
            self.0.store(true, Ordering::SeqCst);
        }
    }
}

impl Gate {
    fn new() -> Self {
        Gate {
            started: Arc::new(Notify::new()),
            release: Arc::new(Notify::new()),
            dropped: Arc::new(AtomicBool::new(false)),
        }
    }

    fn tool(&self, name: &str) -> ToolDef {
        let started = Arc::clone(&self.started);
        let release = Arc::clone(&self.release);
        let dropped = Arc::clone(&self.dropped);
        ToolDef::new(
            name,
            "Waits at a gate.",
            json!({"type": "object"}),
            move |_ctx: Ctx, _args: ToolArgs| {
                let started = Arc::clone(&started);
                let release = Arc::clone(&release);
                let dropped = Arc::clone(&dropped);
                async move {
                    let mut flag = DropFlag(dropped, false);
                    started.notify_one();
                    release.notified().await;
                    flag.1 = true;
                    drop(flag);
                    "released"
                }
            },
        )
    }

    async fn wait_started(&self) {
        tokio::time::timeout(Duration::from_secs(2), self.started.notified())
            .await
            .expect("the tool started");
    }
}

#[tokio::test]
async fn a_slow_tool_does_not_block_ping_from_another_client() {
    let gate = Gate::new();
    let server = basic().tool(gate.tool("slow")).build().unwrap();
    let mut a = client_of(&server).await;
    let mut b = client_of(&server).await;
    a.send(call_frame(100, "slow", json!({})));
    gate.wait_started().await;
    let t = Instant::now();
    assert_eq!(b.request("ping", json!({})).await.unwrap(), json!({}));
    // The same client is not blocked either.
    assert_eq!(a.request("ping", json!({})).await.unwrap(), json!({}));
    assert!(t.elapsed() < Duration::from_secs(1));
    gate.release.notify_one();
    let response = expect_response(&mut a, 100).await;
    assert_eq!(first_text(&response["result"]), "released");
}

#[tokio::test]
async fn a_slow_resource_does_not_block_ping() {
    let started = Arc::new(Notify::new());
    let release = Arc::new(Notify::new());
    let (s2, r2) = (Arc::clone(&started), Arc::clone(&release));
    let server = basic()
        .resource(ResourceDef::new("app://slow", "slow", move |_c, _r| {
            let (s2, r2) = (Arc::clone(&s2), Arc::clone(&r2));
            async move {
                s2.notify_one();
                r2.notified().await;
                "done"
            }
        }))
        .build()
        .unwrap();
    let mut a = client_of(&server).await;
    let mut b = client_of(&server).await;
    a.send(
        json!({"jsonrpc": "2.0", "id": 100, "method": "resources/read",
                  "params": {"uri": "app://slow"}}),
    );
    tokio::time::timeout(Duration::from_secs(2), started.notified())
        .await
        .expect("the read started");
    assert_eq!(b.request("ping", json!({})).await.unwrap(), json!({}));
    release.notify_one();
    let response = expect_response(&mut a, 100).await;
    assert_eq!(response["result"]["contents"][0]["text"], "done");
}

#[tokio::test]
async fn server_busy_at_max_in_flight() {
    let gate = Gate::new();
    let runs = Runs::new();
    let server = basic()
        .tool(gate.tool("hold"))
        .tool(counting_tool("quick", &runs))
        .max_in_flight(1)
        .build()
        .unwrap();
    let mut a = client_of(&server).await;
    let mut b = client_of(&server).await;
    a.send(call_frame(100, "hold", json!({})));
    gate.wait_started().await;
    let r = b.call_tool("quick", json!({})).await.unwrap();
    assert!(r.is_error());
    assert!(
        r.content[0].as_text().unwrap().starts_with("server_busy"),
        "{r:?}"
    );
    assert_eq!(runs.get(), 0);
    // Pings are not handlers: still answered.
    assert_eq!(b.request("ping", json!({})).await.unwrap(), json!({}));
    gate.release.notify_one();
    expect_response(&mut a, 100).await;
    // The permit came back.
    let r = b.call_tool("quick", json!({})).await.unwrap();
    assert!(!r.is_error());
    assert_eq!(runs.get(), 1);
}

#[tokio::test]
async fn callback_timeout_at_call_timeout() {
    let gate = Gate::new();
    let server = basic()
        .tool(gate.tool("stuck"))
        .call_timeout(Duration::from_millis(50))
        .build()
        .unwrap();
    let mut client = client_of(&server).await;
    let t = Instant::now();
    let r = client.call_tool("stuck", json!({})).await.unwrap();
    assert!(t.elapsed() < Duration::from_secs(2));
    assert!(r.is_error());
    assert!(
        r.content[0]
            .as_text()
            .unwrap()
            .starts_with("callback_timeout"),
        "{r:?}"
    );
    // The stuck handler was dropped, not left running.
    assert!(gate.dropped.load(Ordering::SeqCst));
    // A per-tool timeout overrides the server's.
    let gate2 = Gate::new();
    let server = basic()
        .tool(gate2.tool("stuck").timeout(Duration::from_millis(30)))
        .build()
        .unwrap();
    let mut client = client_of(&server).await;
    let r = client.call_tool("stuck", json!({})).await.unwrap();
    assert!(
        r.content[0]
            .as_text()
            .unwrap()
            .starts_with("callback_timeout")
    );
}

#[tokio::test]
async fn a_caller_that_stops_waiting_drops_the_handler() {
    let gate = Gate::new();
    let server = basic().tool(gate.tool("stuck")).build().unwrap();
    let waited = tokio::time::timeout(
        Duration::from_millis(50),
        mcp::testing::handle_message(
            &server,
            &ConnId::new("impatient"),
            Message::request(1, "tools/call", json!({"name": "stuck"})),
        ),
    )
    .await;
    assert!(waited.is_err());
    assert!(gate.dropped.load(Ordering::SeqCst));
}

#[tokio::test]
async fn notifications_cancelled_stops_a_running_call_and_nothing_is_sent() {
    let gate = Gate::new();
    let server = basic().tool(gate.tool("stuck")).build().unwrap();
    let mut client = client_of(&server).await;
    client.send(call_frame(100, "stuck", json!({})));
    gate.wait_started().await;
    client.notify(
        "notifications/cancelled",
        json!({"requestId": 100, "reason": "user pressed stop"}),
    );
    assert_silent(&mut client, QUIET).await;
    assert!(gate.dropped.load(Ordering::SeqCst));
    // Releasing the gate now changes nothing: the call is gone.
    gate.release.notify_one();
    assert_silent(&mut client, Duration::from_millis(50)).await;
    assert_eq!(client.request("ping", json!({})).await.unwrap(), json!({}));
}

#[tokio::test]
async fn cancelling_another_connections_request_does_nothing() {
    let gate = Gate::new();
    let server = basic().tool(gate.tool("stuck")).build().unwrap();
    let mut a = client_of(&server).await;
    let b = client_of(&server).await;
    a.send(call_frame(100, "stuck", json!({})));
    gate.wait_started().await;
    b.notify("notifications/cancelled", json!({"requestId": 100}));
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!gate.dropped.load(Ordering::SeqCst));
    gate.release.notify_one();
    let response = expect_response(&mut a, 100).await;
    assert_eq!(first_text(&response["result"]), "released");
}

// ---- resources ----

fn with_resources() -> ServerBuilder {
    basic()
        .resource(
            ResourceDef::new("app://status", "status", |_c, _r| async { "all good" })
                .description("Current status"),
        )
        .resource(ResourceDef::new("app://config", "config", |_c, _r| async {
            mcp::registry::Json(json!({"debug": false}))
        }))
}

#[tokio::test]
async fn resources_list_and_read_work() {
    let server = with_resources().build().unwrap();
    let mut client = client_of(&server).await;
    let list = client.request("resources/list", json!({})).await.unwrap();
    let uris: Vec<&str> = list["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert_eq!(uris, ["app://config", "app://status"]);
    assert_eq!(list["resources"][1]["name"], "status");
    assert_eq!(list["resources"][1]["description"], "Current status");

    let read = client
        .request("resources/read", json!({"uri": "app://status"}))
        .await
        .unwrap();
    assert_eq!(read["contents"][0]["uri"], "app://status");
    assert_eq!(read["contents"][0]["text"], "all good");
    let read = client
        .request("resources/read", json!({"uri": "app://config"}))
        .await
        .unwrap();
    assert_eq!(read["contents"][0]["mimeType"], "application/json");
    let parsed: Value =
        serde_json::from_str(read["contents"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(parsed, json!({"debug": false}));
}

#[tokio::test]
async fn an_unknown_resource_is_32002_with_the_uri_on_the_handshake_era() {
    let server = with_resources().build().unwrap();
    let mut client = client_of(&server).await;
    let err = client
        .request("resources/read", json!({"uri": "app://missing"}))
        .await
        .unwrap_err();
    assert_eq!(err.code, -32002);
    assert!(err.message.contains("app://missing"));
    assert_eq!(err.data, Some(json!({"uri": "app://missing"})));
}

// ---- dispatch edge cases ----

#[tokio::test]
async fn an_unknown_method_is_32601() {
    let server = basic().build().unwrap();
    let mut client = client_of(&server).await;
    let err = client
        .request("tools/explode", json!({}))
        .await
        .unwrap_err();
    assert_eq!(err.code, -32601);
    assert!(err.message.contains("tools/explode"));
    // Without an id it is a notification: no reply.
    client.send(json!({"jsonrpc": "2.0", "method": "tools/explode"}));
    assert_silent(&mut client, QUIET).await;
}

#[tokio::test]
async fn malformed_frames_get_the_right_errors() {
    let server = basic().build().unwrap();
    let mut client = client_of(&server).await;

    let r = roundtrip(&mut client, r#"{"jsonrpc":"2.0","id":5}"#).await;
    assert_eq!(r["error"]["code"], -32600);
    assert_eq!(r["id"], 5);
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Missing method")
    );

    let r = roundtrip(&mut client, "{}").await;
    assert_eq!(r["error"]["code"], -32600);
    assert_eq!(r["id"], Value::Null);

    let r = roundtrip(&mut client, r#"{"jsonrpc":"2.0","id":6,"method":"#).await;
    assert_eq!(r["error"]["code"], -32700);
    assert_eq!(r["id"], Value::Null);

    let r = roundtrip(&mut client, "not json at all").await;
    assert_eq!(r["error"]["code"], -32700);

    assert_eq!(client.request("ping", json!({})).await.unwrap(), json!({}));
}

#[tokio::test]
async fn tools_call_without_params_is_refused_and_never_hangs_the_server() {
    let runs = Runs::new();
    let server = basic().tool(counting_tool("count", &runs)).build().unwrap();
    let mut client = client_of(&server).await;
    client.set_timeout(Duration::from_secs(2));

    let r = roundtrip(
        &mut client,
        r#"{"jsonrpc":"2.0","id":9,"method":"tools/call"}"#,
    )
    .await;
    assert_eq!(r["id"], 9);
    assert_eq!(r["error"]["code"], -32602);
    assert_eq!(r["error"]["message"], "tools/call requires params");

    // Without an id it is a notification: no reply; neither id nor params: the same.
    client.send_frame(
        br#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"count"}}"#.to_vec(),
    );
    client.send_frame(br#"{"jsonrpc":"2.0","method":"tools/call"}"#.to_vec());
    assert_silent(&mut client, QUIET).await;
    assert_eq!(runs.get(), 0);

    // The seed's hang regression: the server still answers at once.
    let t = Instant::now();
    assert_eq!(client.request("ping", json!({})).await.unwrap(), json!({}));
    assert!(t.elapsed() < Duration::from_secs(2));
    let ok = client.call_tool("count", json!({})).await.unwrap();
    assert!(!ok.is_error());
    assert_eq!(runs.get(), 1);
}

#[tokio::test]
async fn batches_are_accepted_only_after_negotiating_2025_03_26() {
    let server = basic().build().unwrap();
    let batch = r#"[{"jsonrpc":"2.0","id":101,"method":"ping"},
                    {"jsonrpc":"2.0","method":"notifications/initialized"},
                    {"jsonrpc":"2.0","id":102,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2}}}]"#;

    // Not negotiated at all.
    let mut fresh = TestClient::connect(&server);
    let r = roundtrip(&mut fresh, batch).await;
    assert_eq!(r["error"]["code"], -32600);
    assert_eq!(r["id"], Value::Null);

    // Another revision.
    let mut newer = TestClient::connect(&server);
    newer
        .initialize_version("2025-06-18", json!({}))
        .await
        .unwrap();
    let r = roundtrip(&mut newer, batch).await;
    assert_eq!(r["error"]["code"], -32600);

    // 2025-03-26: one array of responses, notifications omitted.
    let mut old = TestClient::connect(&server);
    old.initialize_version("2025-03-26", json!({}))
        .await
        .unwrap();
    let r = roundtrip(&mut old, batch).await;
    let replies = r.as_array().expect("a batch reply");
    assert_eq!(replies.len(), 2);
    let ping = replies.iter().find(|m| m["id"] == 101).unwrap();
    assert_eq!(ping["result"], json!({}));
    let call = replies.iter().find(|m| m["id"] == 102).unwrap();
    assert_eq!(first_text(&call["result"]), "3");
}

// ---- pagination ----

#[tokio::test]
async fn pages_follow_next_cursor_and_a_bad_cursor_is_invalid_params() {
    let runs = Runs::new();
    let mut b = Server::builder("raxol", "0").page_size(2);
    for name in ["e", "c", "a", "d", "b"] {
        b = b.tool(counting_tool(name, &runs));
    }
    let server = b.build().unwrap();
    let mut client = client_of(&server).await;
    let mut pages = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let page = client.request("tools/list", params).await.unwrap();
        let names: Vec<String> = page["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect();
        pages.push(names);
        match page.get("nextCursor").and_then(Value::as_str) {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    assert_eq!(pages, [vec!["a", "b"], vec!["c", "d"], vec!["e"]]);
    let err = client
        .request("tools/list", json!({"cursor": "!!not-a-cursor"}))
        .await
        .unwrap_err();
    assert_eq!(err.code, -32602);
}

#[tokio::test]
async fn pages_count_only_what_the_caller_may_see_and_never_point_at_hidden_tools() {
    let runs = Runs::new();
    let mut b = Server::builder("raxol", "0").page_size(2);
    // The last visible page is full and only hidden tools follow it.
    for name in ["a", "b", "c", "d", "x_hidden", "y_hidden"] {
        b = b.tool(counting_tool(name, &runs));
    }
    let server = b
        .authorizer(policy(|req| {
            if req.name().ends_with("_hidden") {
                Decision::deny("hidden")
            } else {
                Decision::Allow
            }
        }))
        .build()
        .unwrap();
    let mut client = client_of(&server).await;
    let first = client.request("tools/list", json!({})).await.unwrap();
    assert_eq!(first["tools"].as_array().unwrap().len(), 2);
    let cursor = first["nextCursor"]
        .as_str()
        .expect("c and d are still to come");
    let second = client
        .request("tools/list", json!({"cursor": cursor}))
        .await
        .unwrap();
    // The last visible tools; no cursor leads on to the hidden ones.
    let names: Vec<&str> = second["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["c", "d"]);
    assert!(second.get("nextCursor").is_none(), "{second}");
}

#[tokio::test]
async fn an_oversized_message_is_refused_and_the_server_keeps_serving() {
    let runs = Runs::new();
    let server = basic()
        .tool(counting_tool("count", &runs))
        .max_message_size(512)
        .build()
        .unwrap();
    let mut client = client_of(&server).await;
    let padding = "x".repeat(1024);
    let frame = call_frame(100, "count", json!({"padding": padding})).to_string();
    let r = roundtrip(&mut client, &frame).await;
    assert_eq!(r["error"]["code"], -32600, "{r}");
    assert!(
        r["error"]["message"].as_str().unwrap().contains("512"),
        "{r}"
    );
    assert_eq!(runs.get(), 0);
    assert_eq!(client.request("ping", json!({})).await.unwrap(), json!({}));
}

// ---- completion ----

fn with_prompts() -> ServerBuilder {
    basic().prompt(
        PromptDef::new(
            "review",
            "Reviews code.",
            |_c, args: PromptArgs| async move {
                format!("Review this {}", args.get("language").unwrap_or("code"))
            },
        )
        .argument("language", "The language", false)
        .complete("language", complete_from(["rust", "ruby", "go"]))
        .argument("item", "An item", false)
        .complete(
            "item",
            Arc::new(|_req: CompletionRequest| async move {
                (0..150).map(|i| format!("item-{i:03}")).collect::<Vec<_>>()
            }),
        ),
    )
}

async fn complete(
    client: &mut TestClient,
    reference: Value,
    name: &str,
    value: &str,
) -> Result<Value, mcp::protocol::ErrorObject> {
    client
        .request(
            "completion/complete",
            json!({"ref": reference, "argument": {"name": name, "value": value}}),
        )
        .await
}

#[tokio::test]
async fn completion_gives_prompt_argument_values() {
    let server = with_prompts().build().unwrap();
    let mut client = client_of(&server).await;
    let prompt = json!({"type": "ref/prompt", "name": "review"});
    let r = complete(&mut client, prompt.clone(), "language", "ru")
        .await
        .unwrap();
    assert_eq!(
        r["completion"],
        json!({"values": ["rust", "ruby"], "total": 2, "hasMore": false})
    );
    let r = complete(&mut client, prompt.clone(), "item", "")
        .await
        .unwrap();
    assert_eq!(r["completion"]["values"].as_array().unwrap().len(), 100);
    assert_eq!(r["completion"]["total"], 150);
    assert_eq!(r["completion"]["hasMore"], true);
    // An argument with no completer completes to nothing.
    let r = complete(&mut client, prompt, "other", "x").await.unwrap();
    assert_eq!(r["completion"]["values"], json!([]));
    let err = complete(
        &mut client,
        json!({"type": "ref/prompt", "name": "nope"}),
        "x",
        "",
    )
    .await
    .unwrap_err();
    assert_eq!(err.code, -32602);
    assert!(err.message.contains("nope"));
}

#[tokio::test]
async fn tool_name_completion_never_reveals_hidden_tools() {
    let runs = Runs::new();
    let server = with_prompts()
        .tool(counting_tool("secret_tool", &runs))
        .tool(counting_tool("search", &runs))
        .tool(counting_tool("shred", &runs))
        .authorizer(policy(|req| match req.name() {
            "secret_tool" => Decision::deny("hidden"),
            "shred" => Decision::ask("Shred?"),
            _ => Decision::Allow,
        }))
        .build()
        .unwrap();
    let mut client = client_of(&server).await;
    let tool_ref = json!({"type": "ref/tool", "name": "any"});
    let r = complete(&mut client, tool_ref.clone(), "name", "s")
        .await
        .unwrap();
    assert_eq!(r["completion"]["values"], json!(["search"]));
    // Consistent with tools/list for the same caller.
    let listed: Vec<String> = mcp_tests::tool_names(&mut client).await;
    assert_eq!(listed, ["add", "search"]);
    // A caller that can be asked also sees the Ask'd tool.
    let mut asker = initialized_client(&server, json!({"elicitation": {}})).await;
    let r = complete(&mut asker, tool_ref, "name", "s").await.unwrap();
    assert_eq!(r["completion"]["values"], json!(["search", "shred"]));
}

// ---- logging ----

#[tokio::test]
async fn an_invalid_log_level_is_invalid_params_listing_the_valid_ones() {
    let server = basic().build().unwrap();
    let mut client = client_of(&server).await;
    let err = client
        .request("logging/setLevel", json!({"level": "verbose"}))
        .await
        .unwrap_err();
    assert_eq!(err.code, -32602);
    assert_eq!(
        err.message,
        "Invalid log level: verbose. Valid: [debug, info, notice, warning, error, critical, alert, emergency]"
    );
    assert_eq!(
        client
            .request("logging/setLevel", json!({"level": "error"}))
            .await
            .unwrap(),
        json!({})
    );
}

fn chatty() -> ServerBuilder {
    basic().tool(ToolDef::new(
        "chatty",
        "Logs at every level.",
        json!({"type": "object"}),
        |ctx: Ctx, _args: ToolArgs| async move {
            ctx.debug("d");
            ctx.info("i");
            ctx.warning("w");
            ctx.error("e");
            "logged"
        },
    ))
}

async fn log_levels_seen(client: &mut TestClient) -> Vec<String> {
    let r = client.call_tool("chatty", json!({})).await.unwrap();
    assert_eq!(r.content[0].as_text(), Some("logged"));
    client
        .drain(Duration::from_millis(50))
        .await
        .into_iter()
        .filter(|m| m["method"] == "notifications/message")
        .map(|m| {
            assert_eq!(m["params"]["logger"], "raxol");
            m["params"]["level"].as_str().unwrap().to_owned()
        })
        .collect()
}

#[tokio::test]
async fn log_messages_reach_only_their_connection_at_or_above_its_level() {
    let server = chatty().build().unwrap();
    let mut a = client_of(&server).await;
    let mut b = client_of(&server).await;
    // The default level is info.
    assert_eq!(log_levels_seen(&mut a).await, ["info", "warning", "error"]);
    assert_silent(&mut b, Duration::from_millis(50)).await;
    a.request("logging/setLevel", json!({"level": "warning"}))
        .await
        .unwrap();
    assert_eq!(log_levels_seen(&mut a).await, ["warning", "error"]);
    // The level is per connection: b is still at info, and a's level did not move it.
    assert_eq!(log_levels_seen(&mut b).await, ["info", "warning", "error"]);
    b.request("logging/setLevel", json!({"level": "debug"}))
        .await
        .unwrap();
    assert_eq!(
        log_levels_seen(&mut b).await,
        ["debug", "info", "warning", "error"]
    );
    assert_silent(&mut a, Duration::from_millis(50)).await;
}
