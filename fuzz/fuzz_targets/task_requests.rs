//! Task requests in any order, with any ids, answers and cursors, from two callers, on both
//! revisions. Input: a byte program; each step picks an operation (create a task, get,
//! update, cancel, result, list, let time pass), which caller and era it speaks for, and
//! which task id it names (one created so far, or bytes of the input).
//!
//! Every answer must be a JSON-RPC response to the request; a task one caller created is
//! never visible to the other (its answer is the unknown-id answer); a status seen as
//! terminal never changes; and once the server has finished, every task is terminal.

#![no_main]

use std::collections::HashMap;
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use mcp::testing::TestClient;
use mcp_fuzz::{Program, runtime, task_server};
use serde_json::{Value, json};

const TOOLS: [&str; 5] = ["job", "asker", "fails", "breaks", "plain"];
const TERMINAL: [&str; 3] = ["completed", "failed", "cancelled"];

/// What was learnt about one task.
struct Known {
    owner: usize,
    terminal: Option<String>,
}

fn check_response(message: &Result<Value, mcp::protocol::ErrorObject>) {
    if let Err(e) = message {
        assert!(
            (-32700..=-32000).contains(&e.code),
            "an error outside the JSON-RPC ranges: {e:?}"
        );
    }
}

fuzz_target!(|data: &[u8]| {
    let server = task_server();
    runtime().block_on(async {
        // Callers 0 and 1 speak the handshake era, 2 and 3 2026-07-28; each is a
        // connection of its own, so each owns its tasks alone.
        let mut clients: Vec<TestClient> = Vec::new();
        for i in 0..4 {
            let mut c = TestClient::connect(&server);
            c.set_timeout(Duration::from_secs(30));
            if i < 2 {
                c.initialize(json!({"elicitation": {}}))
                    .await
                    .expect("initialize");
                c.on_server_request(|_, _| Ok(json!({"action": "accept", "content": {"n": "x"}})));
            } else {
                c.use_stateless(json!({"elicitation": {}}));
            }
            clients.push(c);
        }
        let mut known: HashMap<String, Known> = HashMap::new();
        let mut ids: Vec<String> = Vec::new();
        let mut program = Program(data);
        let mut steps = 0;
        while let Some(op) = program.byte() {
            steps += 1;
            if steps > 48 {
                break;
            }
            let who = usize::from(program.byte().unwrap_or(0) % 4);
            let pick = program.byte().unwrap_or(0);
            let id = match ids.get(usize::from(pick) % ids.len().max(1)) {
                Some(id) if pick < 200 => id.clone(),
                _ => program.text(24),
            };
            let c = &mut clients[who];
            let answer = match op % 7 {
                0 => {
                    let tool = TOOLS[usize::from(pick) % TOOLS.len()];
                    let r = c
                        .call_tool_as_task(tool, json!({"ms": u64::from(pick) * 40}))
                        .await;
                    if let Ok(v) = &r {
                        let handle = v.get("task").unwrap_or(v);
                        if let Some(t) = handle.get("taskId").and_then(Value::as_str) {
                            ids.push(t.to_owned());
                            known.insert(
                                t.to_owned(),
                                Known {
                                    owner: who,
                                    terminal: None,
                                },
                            );
                        }
                    }
                    r
                }
                1 => c.get_task(&id).await,
                2 => {
                    let key = program.text(24);
                    let action = ["decline", "cancel", "accept"][usize::from(pick) % 3];
                    let responses = json!({
                        key: {"action": "accept", "content": {"n": program.text(24)}},
                        "elicit-1": {"action": action},
                    });
                    c.update_task(&id, responses).await
                }
                3 => c.cancel_task(&id).await,
                4 => c.request("tasks/result", json!({"taskId": id})).await,
                5 => {
                    c.request("tasks/list", json!({"cursor": program.text(24)}))
                        .await
                }
                _ => {
                    tokio::time::sleep(Duration::from_millis(u64::from(pick) * 10)).await;
                    continue;
                }
            };
            check_response(&answer);
            if !(1..=4).contains(&(op % 7)) {
                continue;
            }
            let Some(task) = known.get_mut(&id) else {
                continue;
            };
            if task.owner != who {
                // Another caller's task: exactly the unknown-id answer (or, across eras,
                // a method the era does not have).
                let e = answer.expect_err("another caller's task must not be served");
                assert!(
                    [-32602, -32601, -32021].contains(&e.code),
                    "another caller's task answered {e:?}"
                );
                continue;
            }
            if op % 7 == 1
                && let Ok(v) = &answer
                && let Some(status) = v.get("status").and_then(Value::as_str)
            {
                if let Some(before) = &task.terminal {
                    assert_eq!(before, status, "a terminal task changed");
                }
                if TERMINAL.contains(&status) {
                    task.terminal = Some(status.to_owned());
                }
            }
        }
        server.shutdown();
        server.finish().await;
        for (id, task) in &known {
            let c = &mut clients[task.owner];
            let v = c.get_task(id).await.expect("a task outlives the run");
            let status = v["status"].as_str().unwrap_or_default();
            assert!(
                TERMINAL.contains(&status),
                "task {id} is still {status} after shutdown"
            );
            if let Some(before) = &task.terminal {
                assert_eq!(before, status, "a terminal task changed");
            }
        }
    });
});
