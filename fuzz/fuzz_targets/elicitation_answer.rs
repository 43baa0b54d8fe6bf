//! Answers to the authorizer's Ask, in every shape a client can send. Input: a mode byte
//! (0: a 2025-11-25 session, 1: 2025-06-18, the first revision with elicitation, 2:
//! 2026-07-28), then a frame in which `$ID` stands for the id of the parked
//! `elicitation/create` (handshake era) or `$STATE` for the sealed `requestState`.
//!
//! The guarded tool may run only when the frame really is an approval of this very call
//! (`action: "accept"` with a literal `approve: true`, for the right id or state), at most
//! once; a frame that does not close the question leaves it answerable; and nothing is
//! left behind once the connection is gone.

#![no_main]

use std::sync::atomic::Ordering;
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use mcp::fuzzing::approves;
use mcp::protocol::Message;
use mcp::server::Outbound;
use mcp::{ConnId, Transport};
use mcp_fuzz::{SPENT, check_released, runtime, server};
use serde_json::{Value, json};

const APPROVE: &str = r#"{"action":"accept","content":{"approve":true}}"#;

fn settle() -> tokio::time::Sleep {
    tokio::time::sleep(Duration::from_millis(50))
}

/// The message of a frame, if it is a JSON object (batches exist only on 2025-03-26, whose
/// sessions are never asked anything).
fn message(frame: &str) -> Option<Value> {
    serde_json::from_str::<Value>(frame)
        .ok()
        .filter(Value::is_object)
}

fn handshake(text: &str, version: &str) {
    let server = server().clone();
    runtime().block_on(async {
        let (out, mut rx) = Outbound::channel(64);
        let conn = server.connect(ConnId::new("answer"), Transport::Stdio, out);
        let init = Message::request(
            0,
            "initialize",
            json!({"protocolVersion": version, "capabilities": {"elicitation": {}},
                   "clientInfo": {"name": "fuzz", "version": "0"}}),
        );
        conn.handle(init).await.expect("initialize answers");
        SPENT.store(0, Ordering::SeqCst);
        let mut call = Box::pin(conn.handle(Message::request(
            1,
            "tools/call",
            json!({"name": "spend", "arguments": {}}),
        )));
        let ask = tokio::select! {
            _ = &mut call => panic!("the Ask did not park the call"),
            frame = rx.recv() => frame.expect("the question was sent"),
        };
        let ask: Value = serde_json::from_str(&ask).expect("the question is JSON");
        assert_eq!(ask["method"], "elicitation/create");
        let id = ask["id"].as_str().expect("a string id").to_owned();

        let frame = text.replace("$ID", &id);
        tokio::select! {
            _ = conn.handle_frame(frame.as_bytes()) => {}
            () = settle() => {}
        }
        let first = tokio::select! {
            reply = &mut call => Some(reply),
            () = settle() => None,
        };
        let approving = message(&frame).iter().any(|m| {
            m.get("id") == Some(&Value::String(id.clone()))
                && m.get("method").is_none()
                && m.get("error").is_none()
                && m.get("result").is_some_and(approves)
        });
        let ran = SPENT.load(Ordering::SeqCst);
        assert!(ran <= 1, "the tool ran {ran} times");
        if ran == 1 {
            assert!(
                approving,
                "the tool ran on a frame that is no approval: {frame}"
            );
            assert!(
                first.is_some(),
                "the tool ran but the call was not answered"
            );
        }

        // A genuine approval now: it completes the call only if nothing closed it yet.
        let genuine = format!(r#"{{"jsonrpc":"2.0","id":"{id}","result":{APPROVE}}}"#);
        conn.handle_frame(genuine.as_bytes()).await;
        match first {
            Some(reply) => {
                let reply = reply.expect("the call was answered");
                assert_eq!(reply.id(), Some(&1.into()));
                settle().await;
                assert_eq!(SPENT.load(Ordering::SeqCst), ran, "answered twice");
            }
            None => {
                let reply = tokio::select! {
                    reply = &mut call => reply.expect("the call was answered"),
                    () = settle() => panic!("a frame left the question unanswerable: {frame}"),
                };
                assert_eq!(reply.id(), Some(&1.into()));
                assert_eq!(SPENT.load(Ordering::SeqCst), 1);
            }
        }
        drop(call);
        drop(conn);
        check_released(&server);
    });
}

fn stateless(text: &str) {
    let server = server().clone();
    runtime().block_on(async {
        let (out, _rx) = Outbound::channel(64);
        let conn = server.connect(ConnId::new("answer-stateless"), Transport::Http, out);
        SPENT.store(0, Ordering::SeqCst);
        let meta = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
            "io.modelcontextprotocol/clientInfo": {"name": "fuzz", "version": "0"},
        });
        let first = conn
            .handle(Message::request(
                1,
                "tools/call",
                json!({"name": "spend", "arguments": {}, "_meta": meta}),
            ))
            .await
            .expect("an answer");
        let first = first.to_value();
        assert_eq!(first["result"]["resultType"], "input_required", "{first}");
        let state = first["result"]["requestState"]
            .as_str()
            .expect("a sealed state")
            .to_owned();

        let frame = text.replace("$STATE", &state);
        for round in 0..2 {
            tokio::select! {
                _ = conn.handle_frame(frame.as_bytes()) => {}
                () = settle() => {}
            }
            let ran = SPENT.load(Ordering::SeqCst);
            assert!(ran <= 1, "round {round}: the tool ran {ran} times (replay)");
        }
        if SPENT.load(Ordering::SeqCst) == 1 {
            let m = message(&frame).expect("an object frame");
            let p = &m["params"];
            assert_eq!(m["method"], "tools/call", "{frame}");
            assert_eq!(p["name"], "spend", "{frame}");
            assert_eq!(p["requestState"].as_str(), Some(state.as_str()), "{frame}");
            assert!(
                approves(&p["inputResponses"]["mcp.approve"]),
                "the tool ran without an approval: {frame}"
            );
        }
        drop(conn);
        check_released(&server);
    });
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    match mode % 3 {
        0 => handshake(text, "2025-11-25"),
        1 => handshake(text, "2025-06-18"),
        _ => stateless(text),
    }
});
