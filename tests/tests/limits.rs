//! Every limit: its default, the clear error when it is hit, and the server serving on
//! afterwards. (Limits tested elsewhere: `max_in_flight` in seed_server.rs
//! `server_busy_at_max_in_flight`, `max_connections` in seed_elicitation.rs
//! `the_table_holds_at_the_cap_and_reports_each_eviction`, `call_timeout` in seed_server.rs
//! `callback_timeout_at_call_timeout`, `elicitation_timeout` in seed_elicitation.rs
//! `an_unanswered_prompt_times_out_into_the_deny`.)

use std::time::Duration;

use mcp::Server;
use mcp_tests::{PipeServer, Runs, add_tool, call_frame, counting_tool};
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
