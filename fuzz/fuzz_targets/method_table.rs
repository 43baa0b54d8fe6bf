//! The method table, driven by structure rather than bytes: a program of messages, each a
//! method of the table (or a name that is not one: a server-to-client method, a near miss,
//! any text), sent as a request or a notification, in an era (an initialized handshake
//! connection, one never initialized, a 2026-07-28 request with its `_meta`, or none
//! decided yet), with params that are absent, of the wrong type, well formed for the
//! method, or well formed with one member replaced by arbitrary JSON.
//!
//! Checks, from the table itself (`Method::spec`): a request gets exactly one response, to
//! its id; a notification gets none; a name that is not a client method of the table, or
//! a method that does not exist in the request's era, is -32601 (or, on 2026-07-28 without
//! a complete `_meta` or before the era is decided, an error about that); every error
//! code is in
//! the JSON-RPC ranges; nothing is left behind once the connections are dropped.

#![no_main]

use std::collections::HashSet;
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use mcp::protocol::Era;
use mcp::protocol::jsonrpc::Message;
use mcp::protocol::methods::Method;
use mcp::server::{Outbound, RequestExtras};
use mcp::testing::TestClient;
use mcp::{ConnId, Transport};
use mcp_fuzz::{Program, check_output, check_released, runtime, server};
use serde_json::{Map, Value, json};

/// Names that are not client methods of the table: the server's own, near misses.
const OTHER_NAMES: [&str; 8] = [
    "elicitation/create",
    "sampling/createMessage",
    "roots/list",
    "notifications/message",
    "notifications/tasks/status",
    "tools/call/",
    "Tools/list",
    "rpc.discover",
];

/// Arbitrary JSON, a few levels deep, read from the program.
fn value(p: &mut Program<'_>, depth: u8) -> Value {
    match p.byte().unwrap_or(0) % 8 {
        0 => Value::Null,
        1 => json!(p.byte().unwrap_or(0).is_multiple_of(2)),
        2 => json!(i64::from(p.byte().unwrap_or(0)) - 128),
        3 => json!(f64::from(p.byte().unwrap_or(0)) / 3.0),
        4 => json!(p.text(16)),
        5 if depth > 0 => {
            let n = p.byte().unwrap_or(0) % 4;
            Value::Array((0..n).map(|_| value(p, depth - 1)).collect())
        }
        6 if depth > 0 => {
            let n = p.byte().unwrap_or(0) % 4;
            let mut map = Map::new();
            for _ in 0..n {
                let key = p.text(16);
                map.insert(key, value(p, depth - 1));
            }
            Value::Object(map)
        }
        _ => json!(u64::MAX),
    }
}

/// Params a well-behaved client sends with `method`, naming what the fuzz server has.
fn good_params(method: Method) -> Value {
    match method {
        Method::Initialize => json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"elicitation": {}, "sampling": {}, "roots": {}},
            "clientInfo": {"name": "fuzz", "version": "0"}}),
        Method::ToolsCall => json!({"name": "add", "arguments": {"a": 1, "b": 2}}),
        Method::ResourcesRead | Method::ResourcesSubscribe | Method::ResourcesUnsubscribe => {
            json!({"uri": "tmpl://alpha/x"})
        }
        Method::PromptsGet => json!({"name": "greet", "arguments": {"name": "x"}}),
        Method::CompletionComplete => json!({
            "ref": {"type": "ref/resource", "uri": "tmpl://{id}/{+rest}"},
            "argument": {"name": "id", "value": "a"}}),
        Method::LoggingSetLevel => json!({"level": "debug"}),
        Method::TasksGet | Method::TasksCancel | Method::TasksResult => json!({"taskId": "t"}),
        Method::TasksUpdate => json!({"taskId": "t", "inputResponses": {}}),
        Method::Cancelled => json!({"requestId": 1, "reason": "fuzz"}),
        Method::SubscriptionsListen => json!({"notifications": {"toolsListChanged": true}}),
        _ => json!({}),
    }
}

/// The params, and whether a 2026-07-28 request's `_meta` is the complete one.
fn params(p: &mut Program<'_>, method: Option<Method>, stateless: bool) -> (Option<Value>, bool) {
    let good = method.map_or_else(|| json!({}), good_params);
    let mut params = match p.byte().unwrap_or(0) % 7 {
        0 => return (None, false),
        1 => Value::Null,
        2 => json!([]),
        3 => json!(p.text(16)),
        4 => good,
        5 => {
            let mut good = good;
            if let Value::Object(map) = &mut good {
                let keys: Vec<String> = map.keys().cloned().collect();
                if !keys.is_empty() {
                    let k = keys[usize::from(p.byte().unwrap_or(0)) % keys.len()].clone();
                    map.insert(k, value(p, 2));
                }
            }
            good
        }
        _ => value(p, 3),
    };
    let mut meta_ok = false;
    if stateless && let Value::Object(map) = &mut params {
        let meta = TestClient::stateless_meta(json!({"elicitation": {}}));
        let meta = match p.byte().unwrap_or(0) % 4 {
            // Complete, or with one member replaced.
            0 | 1 => {
                meta_ok = true;
                meta
            }
            2 => {
                let mut meta = meta;
                if let Value::Object(m) = &mut meta {
                    m.insert(
                        "io.modelcontextprotocol/protocolVersion".into(),
                        value(p, 1),
                    );
                }
                meta
            }
            _ => value(p, 2),
        };
        map.insert("_meta".into(), meta);
    }
    (Some(params), meta_ok)
}

fuzz_target!(|data: &[u8]| {
    let server = server().clone();
    let mut p = Program(data);
    runtime().block_on(async {
        let mut out = Vec::new();
        // Connection 0 is initialized; 1 never is; 2 speaks 2026-07-28; 3 has no era yet.
        let mut conns = Vec::new();
        for i in 0..4 {
            let (sink, rx) = Outbound::channel(256);
            out.push(rx);
            conns.push(server.connect(ConnId::new(format!("table-{i}")), Transport::Http, sink));
        }
        let init = Message::request(0, "initialize", good_params(Method::Initialize));
        conns[0].handle(init).await.expect("initialize answers");
        conns[0]
            .handle(Message::notification("notifications/initialized", None))
            .await;

        let mut ids = HashSet::new();
        ids.insert("0".to_owned());
        let mut next_id: i64 = 1;
        while let Some(pick) = p.byte() {
            let all = Method::ALL.len();
            let pick = usize::from(pick) % (all + OTHER_NAMES.len() + 1);
            let (name, method) = if pick < all {
                (
                    Method::ALL[pick].spec().name.to_owned(),
                    Some(Method::ALL[pick]),
                )
            } else if pick < all + OTHER_NAMES.len() {
                (OTHER_NAMES[pick - all].to_owned(), None)
            } else {
                let name = p.text(16);
                (name.clone(), Method::parse(&name))
            };
            let flags = p.byte().unwrap_or(0);
            let as_notification = flags & 1 == 1;
            let which = usize::from((flags >> 1) % 4);
            let era = match which {
                0 | 1 => Some(Era::Handshake),
                2 => Some(Era::Stateless),
                _ => None,
            };
            let (params, meta_ok) = params(&mut p, method, which == 2);
            let message = if as_notification {
                Message::notification(&name, params)
            } else {
                next_id += 1;
                ids.insert(next_id.to_string());
                Message::request(next_id, &name, params.unwrap_or(Value::Null))
            };
            let extras = RequestExtras {
                era,
                ..Default::default()
            };
            let handled = conns[which].handle_with(message, extras);
            // A request may legitimately wait (a call that elicits, a listen stream): it
            // is abandoned after a while, as a vanished client abandons it.
            let reply = tokio::select! {
                reply = handled => Some(reply),
                () = tokio::time::sleep(Duration::from_millis(200)) => None,
            };
            let Some(reply) = reply else { continue };
            if as_notification {
                // A notification is never answered, whatever its name or params (an error
                // about it would have nothing to name).
                if let Some(reply) = &reply {
                    let v: Value = serde_json::from_str(reply.frame()).expect("JSON");
                    assert!(
                        v.get("id").is_none_or(Value::is_null),
                        "a notification answered: {v}"
                    );
                }
                continue;
            }
            let reply = reply.expect("a request is answered");
            check_output(reply.frame(), &ids);
            let v: Value = serde_json::from_str(reply.frame()).expect("JSON");
            assert_eq!(v["id"], json!(next_id), "answered another request: {v}");
            let known = method.filter(|m| !m.spec().notification);
            let exists = known.is_some_and(|m| era.is_none_or(|e| m.spec().exists_in(e)));
            // A 2026-07-28 request without its complete `_meta` may be refused for that
            // first (-32602, or -32022 for its version): each request of that revision must
            // carry it, whatever its method. So may the first message of a connection whose
            // era is not decided yet (anything but `initialize` decides 2026-07-28).
            let strict = which < 2 || (which == 2 && meta_ok);
            if !exists {
                let code = v["error"]["code"].as_i64();
                assert!(
                    code == Some(-32601) || (!strict && code.is_some()),
                    "{name:?} in {era:?} is not a method of the table: {v}"
                );
            }
            if let Some(code) = v["error"]["code"].as_i64() {
                assert!(
                    (-32768..=-32000).contains(&code),
                    "an error code outside the JSON-RPC ranges: {v}"
                );
            }
        }
        drop(conns);
        for mut rx in out {
            while let Ok(frame) = rx.try_recv() {
                check_output(&frame, &ids);
            }
        }
        check_released(&server);
    });
});
