//! Every limit: its default, the clear error when it is hit, and the server serving on
//! afterwards. (Limits tested elsewhere: `max_in_flight` in seed_server.rs
//! `server_busy_at_max_in_flight`, `max_connections` in seed_elicitation.rs
//! `the_table_holds_at_the_cap_and_reports_each_eviction`, `call_timeout` in seed_server.rs
//! `callback_timeout_at_call_timeout`, `elicitation_timeout` in seed_elicitation.rs
//! `an_unanswered_prompt_times_out_into_the_deny`.)

use std::time::Duration;

use mcp::Server;
use mcp::auth::{Decision, policy};
use mcp::registry::ToolDef;
use mcp_tests::{
    Gate, PipeServer, Runs, add_tool, answer, call_frame, counting_tool, deny_payload_value,
    expect_response, expect_server_request, first_text, initialized_client,
};
use serde_json::json;

fn limited(max: usize, runs: &Runs) -> Server {
    Server::builder("limits", "1")
        .tool(add_tool())
        .tool(counting_tool("count", runs))
        .max_message_size(max)
        .build()
        .unwrap()
}

#[tokio::test]
async fn stdio_refuses_an_oversized_line_that_arrives_whole() {
    let runs = Runs::new();
    let mut pipe = PipeServer::start(limited(1024, &runs), 1 << 20);
    pipe.initialize(json!({})).await;
    // One write, newline included: a line shorter than the reader's chunk is in its
    // buffer whole; a longer one crosses the limit before its newline arrives.
    for size in [5_000, 100_000] {
        let big = call_frame(7, "count", json!({"padding": "x".repeat(size)})).to_string();
        pipe.send_line(&big).await;
        let reply = pipe.recv().await;
        assert_eq!(reply["error"]["code"], -32600, "{size}: {reply}");
        assert!(
            reply["error"]["message"].as_str().unwrap().contains("1024"),
            "{reply}"
        );
    }
    assert_eq!(runs.get(), 0, "the oversized call never runs");
    let pong = pipe.request("ping", json!({})).await;
    assert_eq!(pong["result"], json!({}), "{pong}");
}

#[tokio::test]
async fn stdio_refuses_an_oversized_line_that_arrives_in_pieces_and_resyncs() {
    let runs = Runs::new();
    let mut pipe = PipeServer::start(limited(1024, &runs), 1 << 20);
    pipe.initialize(json!({})).await;
    let big = call_frame(8, "count", json!({"padding": "y".repeat(50_000)})).to_string();
    for chunk in big.as_bytes().chunks(700) {
        pipe.write(chunk).await.unwrap();
        tokio::task::yield_now().await;
    }
    pipe.write(b"\n").await.unwrap();
    let reply = pipe.recv().await;
    assert_eq!(reply["error"]["code"], -32600, "{reply}");
    // Exactly one error for the line, and the next line is read as a fresh message.
    let sum = pipe
        .request(
            "tools/call",
            json!({"name": "add", "arguments": {"a": 2, "b": 3}}),
        )
        .await;
    assert_eq!(sum["result"]["content"][0]["text"], "5", "{sum}");
    assert_eq!(runs.get(), 0);
}

#[tokio::test]
async fn a_line_at_the_limit_is_served() {
    let runs = Runs::new();
    let mut pipe = PipeServer::start(limited(1024, &runs), 1 << 20);
    pipe.initialize(json!({})).await;
    let mut frame = call_frame(9, "count", json!({"p": ""})).to_string();
    let pad = 1024 - frame.len();
    frame = call_frame(9, "count", json!({"p": "z".repeat(pad)})).to_string();
    assert_eq!(frame.len(), 1024);
    pipe.send_line(&frame).await;
    let reply = pipe.recv().await;
    assert_eq!(reply["id"], 9, "{reply}");
    assert!(reply.get("result").is_some(), "{reply}");
    assert_eq!(runs.get(), 1);
    pipe.close_input();
    assert!(pipe.finished_within(Duration::from_secs(2)).await.is_some());
}

#[tokio::test]
async fn large_replies_and_small_ones_from_one_read_all_arrive_whole() {
    // Replies from 64 KiB up are written from their own buffers, the others batched: lines
    // of both kinds, sent in one write through a narrow pipe, come back whole and once.
    let big = ToolDef::new(
        "big",
        "d",
        json!({"type": "object"}),
        |_c, a: mcp::registry::ToolArgs| async move {
            let n = a.to_value()["n"].as_u64().unwrap_or(0) as usize;
            mcp::protocol::CallToolResult::text("b".repeat(n))
        },
    );
    let server = Server::builder("limits", "1").tool(big).build().unwrap();
    let mut pipe = PipeServer::start(server, 4096);
    pipe.initialize(json!({})).await;
    let sizes = [0, 200_000, 10, 70_000, 65_536, 1];
    let mut lines = String::new();
    for (i, n) in sizes.iter().enumerate() {
        lines.push_str(&call_frame(100 + i as i64, "big", json!({"n": n})).to_string());
        lines.push('\n');
    }
    pipe.write(lines.as_bytes()).await.unwrap();
    let mut seen = std::collections::BTreeMap::new();
    while seen.len() < sizes.len() {
        let reply = pipe.recv().await;
        let id = reply["id"].as_i64().expect("a reply");
        let text = first_text(&reply["result"]);
        assert!(
            seen.insert(id, text.len()).is_none(),
            "id {id} answered twice"
        );
    }
    let expected: std::collections::BTreeMap<i64, usize> = sizes
        .iter()
        .enumerate()
        .map(|(i, n)| (100 + i as i64, *n))
        .collect();
    assert_eq!(seen, expected);
    let pong = pipe.request("ping", json!({})).await;
    assert_eq!(pong["result"], json!({}), "{pong}");
}

// ---- requests per connection ----

#[test]
fn the_defaults_are_safe() {
    let c = mcp::server::ServerConfig::default();
    assert_eq!(c.max_message_size, 4 * 1024 * 1024);
    assert_eq!(c.max_in_flight, 256);
    assert_eq!(c.max_requests_per_connection, 64);
    assert_eq!(c.max_pending_per_connection, 16);
    assert_eq!(c.max_connections, 10_000);
    assert_eq!(c.max_listeners, 1024);
    assert_eq!(c.outbound_capacity, 1024);
    assert_eq!(c.call_timeout, Duration::from_secs(120));
    assert_eq!(c.elicitation_timeout, Duration::from_secs(60));
    assert!(c.max_requests_per_connection < c.max_in_flight);
}

#[test]
fn a_limit_of_zero_refuses_to_build() {
    for (name, builder) in [
        (
            "max_requests_per_connection",
            Server::builder("x", "1").max_requests_per_connection(0),
        ),
        (
            "max_pending_per_connection",
            Server::builder("x", "1").max_pending_per_connection(0),
        ),
        (
            "max_message_size",
            Server::builder("x", "1").max_message_size(0),
        ),
    ] {
        let err = builder.build().unwrap_err().to_string();
        assert!(err.contains(name) && err.contains("at least 1"), "{err}");
    }
}

fn gated(gate: &Gate, per_connection: usize) -> Server {
    let template = mcp::registry::ResourceTemplateDef::new(
        "slow://{id}",
        "slow",
        |_ctx: mcp::Ctx, _r: mcp::registry::ResourceRequest| async move { "x" },
    )
    .unwrap();
    Server::builder("limits", "1")
        .tool(gate.tool("wait"))
        .tool(add_tool())
        .template(template)
        .max_requests_per_connection(per_connection)
        .build()
        .unwrap()
}

#[tokio::test]
async fn requests_per_connection_are_capped_with_a_clear_error() {
    let gate = Gate::new();
    let server = gated(&gate, 2);
    let mut a = initialized_client(&server, json!({})).await;
    a.send(call_frame(1, "wait", json!({})));
    a.send(call_frame(2, "wait", json!({})));
    gate.wait_started(2).await;
    assert_eq!(a.stats().running, 2);

    // A third tool call is refused with a result the model can read ...
    let busy = a.call_tool("add", json!({"a": 1, "b": 2})).await.unwrap();
    assert!(busy.is_error());
    let text = busy.content[0].as_text().unwrap();
    assert!(
        text.starts_with("connection_busy:") && text.contains('2'),
        "{text}"
    );
    // ... any other handler-running request with -32603 saying the same ...
    let err = a
        .request("resources/read", json!({"uri": "slow://1"}))
        .await
        .unwrap_err();
    assert_eq!(err.code, -32603);
    assert!(err.message.starts_with("connection_busy:"), "{err:?}");
    // ... requests that run no handler still work, and so does everyone else.
    assert_eq!(a.request("ping", json!({})).await.unwrap(), json!({}));
    let mut b = initialized_client(&server, json!({})).await;
    let sum = b.call_tool("add", json!({"a": 1, "b": 2})).await.unwrap();
    assert_eq!(sum.content[0].as_text(), Some("3"));

    gate.release(2);
    for _ in 0..2 {
        let done = a.next_message().await.expect("a gated call finished");
        assert_eq!(first_text(&done["result"]), "released", "{done}");
    }
    assert_eq!(a.stats().running, 0);
    let sum = a.call_tool("add", json!({"a": 2, "b": 2})).await.unwrap();
    assert_eq!(sum.content[0].as_text(), Some("4"));
}

#[tokio::test]
async fn the_cap_is_released_when_a_call_is_cancelled() {
    let gate = Gate::new();
    let server = gated(&gate, 1);
    let mut a = initialized_client(&server, json!({})).await;
    a.send(call_frame(1, "wait", json!({})));
    gate.wait_started(1).await;
    a.notify("notifications/cancelled", json!({"requestId": 1}));
    gate.wait_dropped(1).await;
    let sum = a.call_tool("add", json!({"a": 1, "b": 1})).await.unwrap();
    assert_eq!(sum.content[0].as_text(), Some("2"));
    assert_eq!(
        a.stats(),
        mcp::server::ConnectionStats {
            attached: true,
            ..Default::default()
        }
    );
}

// ---- parked questions per connection ----

fn asking(runs: &Runs, max_pending: usize) -> Server {
    Server::builder("limits", "1")
        .tool(counting_tool("spend", runs))
        .authorizer(policy(|_| Decision::ask("Spend?")))
        .max_pending_per_connection(max_pending)
        .build()
        .unwrap()
}

#[tokio::test]
async fn parked_questions_per_connection_are_capped_and_the_extra_ask_is_denied() {
    let runs = Runs::new();
    let server = asking(&runs, 2);
    let mut c = initialized_client(&server, json!({"elicitation": {}})).await;
    c.send(call_frame(1, "spend", json!({})));
    let first = expect_server_request(&mut c, "elicitation/create").await;
    c.send(call_frame(2, "spend", json!({})));
    expect_server_request(&mut c, "elicitation/create").await;
    assert_eq!(c.stats().pending, 2);

    // The third ask is refused at once, without a question reaching the client.
    c.send(call_frame(3, "spend", json!({})));
    let refused = expect_response(&mut c, 3).await;
    let payload = deny_payload_value(&refused["result"]);
    assert_eq!(payload["decision"], "ask");
    assert!(
        payload["detail"]
            .as_str()
            .unwrap()
            .contains("too many questions"),
        "{payload}"
    );
    assert_eq!(c.stats().pending, 2);

    // Answering one frees a slot.
    c.send(answer(
        &first["id"],
        json!({"action": "accept", "content": {"approve": true}}),
    ));
    let ran = expect_response(&mut c, 1).await;
    assert_eq!(first_text(&ran["result"]), "ran spend");
    c.send(call_frame(4, "spend", json!({})));
    expect_server_request(&mut c, "elicitation/create").await;
    assert_eq!(runs.get(), 1);
    // Other connections have their own budget.
    let mut other = initialized_client(&server, json!({"elicitation": {}})).await;
    other.send(call_frame(1, "spend", json!({})));
    expect_server_request(&mut other, "elicitation/create").await;
}

#[tokio::test]
async fn a_handler_asking_past_the_cap_gets_too_many_pending() {
    let server = Server::builder("limits", "1")
        .tool(ToolDef::new(
            "ask",
            "Asks the human.",
            json!({"type": "object"}),
            |ctx: mcp::Ctx, _args: mcp::registry::ToolArgs| async move {
                match ctx
                    .elicit_schema("Name?", json!({"type": "object", "properties": {}}))
                    .await
                {
                    Ok(_) => "answered".to_owned(),
                    Err(e) => format!("error: {e}"),
                }
            },
        ))
        .max_pending_per_connection(1)
        .build()
        .unwrap();
    let mut c = initialized_client(&server, json!({"elicitation": {}})).await;
    c.send(call_frame(1, "ask", json!({})));
    expect_server_request(&mut c, "elicitation/create").await;
    let second = c.call_tool("ask", json!({})).await.unwrap();
    assert_eq!(
        second.content[0].as_text(),
        Some("error: too many requests to this client are already waiting for an answer")
    );
}

// ---- completion values ----

fn completing(max: Option<usize>) -> Result<Server, mcp::server::BuildError> {
    let many: Vec<String> = (0..500).map(|i| format!("v{i:03}")).collect();
    let prompt = mcp::registry::PromptDef::new(
        "p",
        "A prompt.",
        |_ctx: mcp::Ctx, _a: mcp::registry::PromptArgs| async { "x" },
    )
    .argument("a", "An argument.", false)
    .complete("a", mcp::registry::complete_from(many));
    let mut b = Server::builder("limits", "1").prompt(prompt);
    if let Some(max) = max {
        b = b.max_completion_values(max);
    }
    b.build()
}

async fn complete(server: &Server) -> serde_json::Value {
    let mut c = initialized_client(server, json!({})).await;
    c.request(
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": "v"}}),
    )
    .await
    .unwrap()
}

#[tokio::test]
async fn completion_values_are_capped_with_the_total_and_has_more() {
    let r = complete(&completing(None).unwrap()).await;
    assert_eq!(r["completion"]["values"].as_array().unwrap().len(), 100);
    assert_eq!(r["completion"]["total"], 500);
    assert_eq!(r["completion"]["hasMore"], true);
    let r = complete(&completing(Some(10)).unwrap()).await;
    assert_eq!(r["completion"]["values"].as_array().unwrap().len(), 10);
    assert_eq!(r["completion"]["hasMore"], true);
    let err = completing(Some(101)).unwrap_err().to_string();
    assert!(
        err.contains("max_completion_values") && err.contains("100"),
        "{err}"
    );
}
