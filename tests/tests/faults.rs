//! Faults: careless tools, clients that vanish or stop reading, and a server asked to stop.
//! Each must leave the server serving (or exiting cleanly) with nothing left behind.
//!
//! Covered elsewhere: a panicking tool (seed_server.rs
//! `a_panicking_tool_names_only_callback_panicked_and_the_server_lives`), a tool past its
//! timeout (seed_server.rs `callback_timeout_at_call_timeout`), stdin EOF with a parked call
//! (examples/tests/stdio_wire.rs `stdin_eof_exits_promptly_and_closes_parked_calls`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use mcp::auth::{Decision, policy};
use mcp::prelude::Json;
use mcp::registry::{
    CompletionRequest, PromptArgs, PromptDef, ResourceRequest, ResourceTemplateDef, ToolArgs,
    ToolDef,
};
use mcp::server::ServerConfig;
use mcp::testing::TestClient;
use mcp::{Ctx, Server};
use mcp_tests::{
    Gate, PipeServer, Runs, StdioServer, Wiring, add_tool, answer, call_frame, counting_tool,
    initialized_client,
};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

fn ping(id: i64) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "ping"}).to_string()
}

// ---- a client that writes but never reads ----

#[tokio::test]
async fn a_client_that_never_reads_gets_backpressure_and_loses_nothing() {
    const N: i64 = 20_000;
    let server = Server::builder("faults", "1")
        .tool(add_tool())
        .config(ServerConfig {
            max_requests_per_connection: 8,
            outbound_capacity: 16,
            ..ServerConfig::default()
        })
        .build()
        .unwrap();
    let mut pipe = PipeServer::start(server, 4096);
    pipe.initialize(json!({})).await;
    let mut all = String::new();
    for id in 1..=N {
        all.push_str(&ping(id));
        all.push('\n');
    }
    let mut input = pipe.take_input();
    let writer = tokio::spawn(async move {
        input.write_all(all.as_bytes()).await.unwrap();
        input
    });
    // Nobody reads the output: the server must stop reading input rather than queue
    // every reply in memory, so the write cannot complete.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(
        !writer.is_finished(),
        "the server kept reading from a client that reads nothing"
    );
    // Once the client reads, every request is answered exactly once.
    let mut seen = vec![false; N as usize + 1];
    for _ in 0..N {
        let reply = pipe.recv().await;
        let id = reply["id"].as_i64().unwrap_or_else(|| panic!("{reply}"));
        assert_eq!(reply["result"], json!({}), "{reply}");
        assert!(
            !std::mem::replace(&mut seen[id as usize], true),
            "{id} twice"
        );
    }
    assert!(seen[1..].iter().all(|s| *s));
    drop(writer.await.unwrap());
    assert!(pipe.finished_within(Duration::from_secs(2)).await.is_some());
}

// ---- a graceful stop (what SIGTERM does on stdio) ----

fn stopper() -> (
    tokio::sync::oneshot::Sender<()>,
    impl Future<Output = ()> + Send,
) {
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    (tx, async move {
        let _ = rx.await;
    })
}

fn gated(gate: &Gate, grace: Duration) -> Server {
    Server::builder("faults", "1")
        .tool(gate.tool("wait"))
        .tool(add_tool())
        .shutdown_grace(grace)
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_stop_refuses_new_requests_and_lets_running_calls_finish() {
    let gate = Gate::new();
    let (stop, stopped) = stopper();
    let mut pipe = PipeServer::start_until(gated(&gate, Duration::from_secs(5)), 1 << 16, stopped);
    pipe.initialize(json!({})).await;
    pipe.send(call_frame(1, "wait", json!({}))).await;
    gate.wait_started(1).await;
    stop.send(()).unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;

    pipe.send_line(&ping(2)).await;
    let refused = pipe.recv().await;
    assert_eq!(refused["id"], 2, "{refused}");
    assert_eq!(refused["error"]["code"], -32603, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("shutting down"),
        "{refused}"
    );

    gate.release(1);
    let done = pipe.recv().await;
    assert_eq!(done["id"], 1, "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "released", "{done}");
    let t = Instant::now();
    assert!(pipe.finished_within(Duration::from_secs(2)).await.is_some());
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    assert_eq!(gate.dropped(), 0);
}

#[tokio::test]
async fn a_call_outliving_the_grace_period_is_cancelled_and_the_transport_returns() {
    let gate = Gate::new();
    let (stop, stopped) = stopper();
    let grace = Duration::from_millis(300);
    let mut pipe = PipeServer::start_until(gated(&gate, grace), 1 << 16, stopped);
    pipe.initialize(json!({})).await;
    pipe.send(call_frame(1, "wait", json!({}))).await;
    gate.wait_started(1).await;
    let t = Instant::now();
    stop.send(()).unwrap();
    assert!(pipe.finished_within(Duration::from_secs(3)).await.is_some());
    let took = t.elapsed();
    assert!(
        took >= grace && took < grace + Duration::from_secs(1),
        "{took:?}"
    );
    // The handler was dropped, not left running, and no response was invented for it.
    assert_eq!(gate.dropped(), 1);
    assert_eq!(gate.finished(), 0);
    assert_eq!(pipe.recv_within(Duration::from_millis(100)).await, None);
}

#[tokio::test]
async fn an_answer_read_during_the_grace_period_still_completes_a_parked_call() {
    let runs = Runs::new();
    let server = Server::builder("faults", "1")
        .tool(counting_tool("spend", &runs))
        .authorizer(policy(|_| Decision::ask("Spend?")))
        .build()
        .unwrap();
    let (stop, stopped) = stopper();
    let mut pipe = PipeServer::start_until(server, 1 << 16, stopped);
    pipe.initialize(json!({"elicitation": {}})).await;
    pipe.send(call_frame(1, "spend", json!({}))).await;
    let ask = pipe.recv().await;
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    stop.send(()).unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    pipe.send(answer(
        &ask["id"],
        json!({"action": "accept", "content": {"approve": true}}),
    ))
    .await;
    let done = pipe.recv().await;
    assert_eq!(done["id"], 1, "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "ran spend", "{done}");
    assert_eq!(runs.get(), 1);
    assert!(pipe.finished_within(Duration::from_secs(2)).await.is_some());
}

#[tokio::test]
async fn a_stop_ends_listen_streams_with_their_final_result() {
    let server = Server::builder("faults", "1")
        .tool(add_tool())
        .build()
        .unwrap();
    let (stop, stopped) = stopper();
    let mut pipe = PipeServer::start_until(server, 1 << 16, stopped);
    pipe.send(json!({
        "jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen",
        "params": {
            "notifications": {"toolsListChanged": true},
            "_meta": TestClient::stateless_meta(json!({})),
        }
    }))
    .await;
    let ack = pipe.recv().await;
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    stop.send(()).unwrap();
    let mut got: Vec<Value> = Vec::new();
    while let Some(m) = pipe.recv_within(Duration::from_secs(2)).await {
        got.push(m);
    }
    let last = got.last().expect("the listen ended with a message");
    assert_eq!(last["id"], 1, "{got:?}");
    assert_eq!(last["result"]["resultType"], "complete", "{got:?}");
    assert!(pipe.finished_within(Duration::from_secs(2)).await.is_some());
}

// ---- SIGTERM on a real process ----

fn fixture(grace_ms: u64) -> StdioServer {
    StdioServer::spawn_with_env(
        std::path::Path::new(env!("CARGO_BIN_EXE_fixture")),
        &["--log-level", "warn"],
        &[("FIXTURE_GRACE_MS", &grace_ms.to_string())],
        Wiring::Pipes,
    )
}

fn sigterm(server: &StdioServer) {
    let pid = server.pid().expect("the server runs") as i32;
    // SAFETY: sending a signal to our own child process.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
}

async fn wait_for_log(server: &mut StdioServer) {
    loop {
        let m = server.recv().await;
        if m["method"] == "notifications/message" {
            return;
        }
    }
}

#[tokio::test]
async fn sigterm_stops_accepting_finishes_the_running_call_then_exits() {
    let mut server = fixture(5000);
    server.initialize("2025-11-25", json!({})).await;
    server
        .send(call_frame(10, "sleep", json!({"ms": 700})))
        .await;
    wait_for_log(&mut server).await;
    let t = Instant::now();
    sigterm(&server);
    tokio::time::sleep(Duration::from_millis(100)).await;
    server.send_line(&ping(11)).await;
    let refused = server.recv().await;
    assert_eq!(refused["id"], 11, "{refused}");
    assert_eq!(refused["error"]["code"], -32603, "{refused}");
    let done = server.recv().await;
    assert_eq!(done["id"], 10, "{done}");
    assert_eq!(
        done["result"]["content"][0]["text"], "slept 700 ms",
        "{done}"
    );
    let status = server
        .wait_exit(Duration::from_secs(3))
        .await
        .expect("the server exits after its last call");
    assert!(status.success(), "{status:?}");
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
}

#[tokio::test]
async fn sigterm_exits_after_the_grace_period_when_a_call_runs_on() {
    let mut server = fixture(400);
    server.initialize("2025-11-25", json!({})).await;
    server
        .send(call_frame(10, "sleep", json!({"ms": 20_000})))
        .await;
    wait_for_log(&mut server).await;
    let t = Instant::now();
    sigterm(&server);
    let status = server
        .wait_exit(Duration::from_secs(5))
        .await
        .expect("the server exits at the end of its grace period");
    assert!(status.success(), "{status:?}");
    let took = t.elapsed();
    assert!(
        took >= Duration::from_millis(400) && took < Duration::from_millis(2000),
        "{took:?}"
    );
}

// ---- careless handlers ----

/// A tool whose closure panics before it even returns its future.
fn panics_at_once(name: &str) -> ToolDef {
    ToolDef::new(
        name,
        "Panics while making its future.",
        json!({"type": "object"}),
        |_ctx: Ctx, _args: ToolArgs| {
            if name_is_never_empty() {
                panic!("upstream secret: hunter2");
            }
            async { "unreachable" }
        },
    )
}

fn name_is_never_empty() -> bool {
    true
}

fn careless() -> Server {
    let template =
        ResourceTemplateDef::new("boom://{id}", "boom", |_ctx: Ctx, _r: ResourceRequest| {
            if name_is_never_empty() {
                panic!("upstream secret: hunter2");
            }
            async { "unreachable" }
        })
        .unwrap()
        .complete(
            "id",
            Arc::new(|_r: CompletionRequest| {
                if name_is_never_empty() {
                    panic!("upstream secret: hunter2");
                }
                async { Vec::<String>::new() }
            }),
        );
    let prompt = PromptDef::new("boom", "Panics.", |_ctx: Ctx, _a: PromptArgs| {
        if name_is_never_empty() {
            panic!("upstream secret: hunter2");
        }
        async { "unreachable" }
    });
    Server::builder("faults", "1")
        .tool(panics_at_once("boom"))
        .tool(add_tool())
        .template(template)
        .prompt(prompt)
        .call_timeout(Duration::from_millis(300))
        .build()
        .unwrap()
}

fn assert_contained(text: &str) {
    assert!(text.contains("callback_panicked"), "{text}");
    assert!(
        !text.contains("hunter2"),
        "the panic message leaked: {text}"
    );
}

#[tokio::test]
async fn a_handler_that_panics_before_returning_its_future_is_contained() {
    let server = careless();
    let mut c = initialized_client(&server, json!({})).await;
    let r = c.call_tool("boom", json!({})).await.unwrap();
    assert!(r.is_error());
    assert_contained(r.content[0].as_text().unwrap());

    let e = c
        .request("resources/read", json!({"uri": "boom://1"}))
        .await
        .unwrap_err();
    assert_eq!(e.code, -32603);
    assert_contained(&e.message);

    let e = c
        .request("prompts/get", json!({"name": "boom", "arguments": {}}))
        .await
        .unwrap_err();
    assert_contained(&e.message);

    let e = c
        .request(
            "completion/complete",
            json!({"ref": {"type": "ref/resource", "uri": "boom://{id}"},
                   "argument": {"name": "id", "value": "x"}}),
        )
        .await
        .unwrap_err();
    assert_contained(&e.message);

    // Nothing is left running or parked, and the server serves on.
    assert_eq!(c.stats().running, 0);
    let sum = c.call_tool("add", json!({"a": 1, "b": 2})).await.unwrap();
    assert_eq!(sum.content[0].as_text(), Some("3"));
}

#[tokio::test]
async fn a_panic_at_once_over_stdio_still_gets_its_response() {
    let mut pipe = PipeServer::start(careless(), 1 << 16);
    pipe.initialize(json!({})).await;
    let r = pipe
        .request("tools/call", json!({"name": "boom", "arguments": {}}))
        .await;
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert_contained(r["result"]["content"][0]["text"].as_str().unwrap());
}

fn listing(lister: impl mcp::registry::ResourceLister) -> Server {
    let template = ResourceTemplateDef::new(
        "row://{id}",
        "row",
        |_ctx: Ctx, _r: ResourceRequest| async { "row" },
    )
    .unwrap()
    .list_with(lister);
    Server::builder("faults", "1")
        .template(template)
        .tool(add_tool())
        .call_timeout(Duration::from_millis(300))
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_panicking_resource_lister_is_contained() {
    let server = listing(|_ctx: Ctx| async {
        if name_is_never_empty() {
            panic!("upstream secret: hunter2");
        }
        Vec::new()
    });
    let mut c = initialized_client(&server, json!({})).await;
    let e = c.request("resources/list", json!({})).await.unwrap_err();
    assert_eq!(e.code, -32603);
    assert_contained(&e.message);
    assert_eq!(c.request("ping", json!({})).await.unwrap(), json!({}));
}

#[tokio::test]
async fn a_resource_lister_that_hangs_times_out() {
    let server = listing(|_ctx: Ctx| async {
        std::future::pending::<()>().await;
        Vec::new()
    });
    let mut c = initialized_client(&server, json!({})).await;
    let t = Instant::now();
    let e = c.request("resources/list", json!({})).await.unwrap_err();
    assert!(e.message.contains("callback_timeout"), "{e:?}");
    assert!(t.elapsed() < Duration::from_secs(2));
    assert_eq!(c.stats().running, 0);
}

/// A value whose serialization fails.
struct Unencodable;

impl serde::Serialize for Unencodable {
    fn serialize<S: serde::Serializer>(&self, _s: S) -> Result<S::Ok, S::Error> {
        Err(serde::ser::Error::custom("this value cannot be encoded"))
    }
}

/// A value whose serialization panics.
struct Exploding;

impl serde::Serialize for Exploding {
    fn serialize<S: serde::Serializer>(&self, _s: S) -> Result<S::Ok, S::Error> {
        panic!("upstream secret: hunter2")
    }
}

#[tokio::test]
async fn a_tool_returning_garbage_gets_a_result_the_client_can_read() {
    let weird = "line one\nline two\r\n\u{0}\u{2028}\u{1b}[31m \"quoted\" \\";
    let server = Server::builder("faults", "1")
        .tool(ToolDef::new(
            "unencodable",
            "Returns what cannot be encoded.",
            json!({"type": "object"}),
            |_ctx: Ctx, _a: ToolArgs| async { Json(Unencodable) },
        ))
        .tool(ToolDef::new(
            "exploding",
            "Panics while its result is encoded.",
            json!({"type": "object"}),
            |_ctx: Ctx, _a: ToolArgs| async { Json(Exploding) },
        ))
        .tool(ToolDef::new(
            "nan",
            "Returns non-finite numbers.",
            json!({"type": "object"}),
            |_ctx: Ctx, _a: ToolArgs| async { Json(json!({"x": f64::NAN, "y": f64::INFINITY})) },
        ))
        .tool(ToolDef::new(
            "scalar",
            "Returns a bare number as structured content.",
            json!({"type": "object"}),
            |_ctx: Ctx, _a: ToolArgs| async { Json(42) },
        ))
        .tool(ToolDef::new(
            "weird",
            "Returns control characters and newlines.",
            json!({"type": "object"}),
            move |_ctx: Ctx, _a: ToolArgs| async move { weird },
        ))
        .tool(ToolDef::new(
            "huge",
            "Returns 2 MB of text.",
            json!({"type": "object"}),
            |_ctx: Ctx, _a: ToolArgs| async { "z".repeat(2 << 20) },
        ))
        .build()
        .unwrap();
    let mut pipe = PipeServer::start(server, 1 << 16);
    pipe.initialize(json!({})).await;

    let r = pipe
        .request("tools/call", json!({"name": "unencodable"}))
        .await;
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("could not be encoded")
    );

    let r = pipe
        .request("tools/call", json!({"name": "exploding"}))
        .await;
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert_contained(r["result"]["content"][0]["text"].as_str().unwrap());

    // JSON has no NaN: the values arrive as null, in a message that parses.
    let r = pipe.request("tools/call", json!({"name": "nan"})).await;
    assert_eq!(
        r["result"]["structuredContent"],
        json!({"x": null, "y": null}),
        "{r}"
    );

    // The handshake era only carries object structured content; the text block remains.
    let r = pipe.request("tools/call", json!({"name": "scalar"})).await;
    assert!(r["result"].get("structuredContent").is_none(), "{r}");
    assert_eq!(r["result"]["content"][0]["text"], "42");

    // Newlines and control characters stay inside one escaped line.
    let r = pipe.request("tools/call", json!({"name": "weird"})).await;
    assert_eq!(r["result"]["content"][0]["text"], weird);

    let r = pipe.request("tools/call", json!({"name": "huge"})).await;
    assert_eq!(
        r["result"]["content"][0]["text"].as_str().unwrap().len(),
        2 << 20
    );
    let pong = pipe.request("ping", json!({})).await;
    assert_eq!(pong["result"], json!({}));
}

// ---- a client that disconnects mid-call ----

#[tokio::test]
async fn a_client_that_disconnects_mid_call_leaves_nothing_behind() {
    let gate = Gate::new();
    let runs = Runs::new();
    let server = Server::builder("faults", "1")
        .tool(gate.tool("wait"))
        .tool(counting_tool("spend", &runs))
        .authorizer(policy(|req| {
            if req.name() == "spend" {
                Decision::ask("Spend?")
            } else {
                Decision::Allow
            }
        }))
        .build()
        .unwrap();
    let mut c = initialized_client(&server, json!({"elicitation": {}})).await;
    let id = c.conn_id().clone();
    c.send(call_frame(1, "wait", json!({})));
    c.send(call_frame(2, "spend", json!({})));
    gate.wait_started(1).await;
    let ask = c.next_message().await.expect("the question");
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    let held = server.connection_stats(&id).expect("the connection exists");
    assert_eq!((held.running, held.cancellable, held.pending), (2, 2, 1));

    drop(c);

    // The running call is cancelled (its future dropped), the parked question closed
    // without running the tool, and the connection's state released.
    gate.wait_dropped(1).await;
    let deadline = Instant::now() + Duration::from_secs(2);
    while server.connection_count() > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(server.connection_count(), 0);
    assert_eq!(server.connection_stats(&id), None);
    assert_eq!(gate.finished(), 0);
    assert_eq!(runs.get(), 0);
    // Nothing else still holds the server's slots: a new client gets all of them.
    let mut d = initialized_client(&server, json!({})).await;
    gate.release(1);
    let r = d.call_tool("wait", json!({})).await.unwrap();
    assert_eq!(r.content[0].as_text(), Some("released"));
}

// ---- calls that wait among calls that do not ----

#[tokio::test]
async fn calls_that_wait_among_calls_that_finish_at_once_are_each_answered_once() {
    let gate = Gate::new();
    let server = Server::builder("interleaved", "1")
        .tool(add_tool())
        .tool(gate.tool("wait"))
        .build()
        .unwrap();
    let mut pipe = PipeServer::start(server, 1 << 16);
    pipe.initialize(json!({})).await;
    // One write, so one read: an immediate call, a waiting one, immediate ones again, a
    // second waiting one, and one more immediate.
    let frames = [
        call_frame(1, "add", json!({"a": 1, "b": 1})),
        call_frame(2, "wait", json!({})),
        call_frame(3, "add", json!({"a": 3, "b": 3})),
        call_frame(4, "add", json!({"a": 4, "b": 4})),
        call_frame(5, "wait", json!({})),
        call_frame(6, "add", json!({"a": 6, "b": 6})),
    ];
    let text: String = frames.iter().map(|f| format!("{f}\n")).collect();
    pipe.write(text.as_bytes()).await.unwrap();
    let mut answered = std::collections::BTreeMap::new();
    for _ in 0..4 {
        let reply = pipe.recv().await;
        answered.insert(reply["id"].as_i64().unwrap(), reply);
    }
    assert_eq!(answered.keys().copied().collect::<Vec<_>>(), [1, 3, 4, 6]);
    for (id, reply) in &answered {
        assert_eq!(
            reply["result"]["content"][0]["text"],
            json!((id * 2).to_string()),
            "{reply}"
        );
    }
    gate.wait_started(2).await;
    gate.release(2);
    for _ in 0..2 {
        let reply = pipe.recv().await;
        let id = reply["id"].as_i64().unwrap();
        assert!(answered.insert(id, reply).is_none(), "answered twice: {id}");
    }
    assert_eq!(answered.len(), 6);
    assert!(
        pipe.recv_within(Duration::from_millis(200)).await.is_none(),
        "a reply nobody asked for"
    );
}
