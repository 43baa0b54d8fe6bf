//! Middleware layers: the built-in ones (response cache, rate limit, size limit, timing)
//! stacked in an order the input picks, around a scripted layer that does, per request,
//! what the input says: pass the request on, refuse it, answer it itself (any JSON, a tool
//! result), replace the answer on its way back, or add tools to a `tools/list` answer.
//! Two callers, alice and bob, send programs of requests in both eras.
//!
//! Checks (what the layer pipeline promises whatever a layer does): every request gets
//! exactly one JSON-RPC answer, to its id; a tool the authorizer hides from bob is never
//! listed to bob; a tool the authorizer denies never runs, and the one it asks about never
//! runs unanswered; the response cache never gives one caller's answer to the other; no
//! answer the size limit let through is larger than its limit.

#![no_main]

use std::collections::{HashSet, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use mcp::auth::{Decision, Principal, policy};
use mcp::layers::{
    Answer, Layer, ListKind, Next, Pending, RateLimit, Request, ResponseCache, SizeLimit, Timing,
};
use mcp::prelude::*;
use mcp::protocol::jsonrpc::Message;
use mcp::protocol::{CallToolResult, Era, ErrorObject};
use mcp::registry::ResourceRequest;
use mcp::server::{Outbound, RequestExtras};
use mcp::testing::TestClient;
use mcp::{ConnId, Transport};
use mcp_fuzz::{check_output, runtime};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

/// How many times the denied tool and the asked-about tool ran.
static FORBIDDEN_RAN: AtomicUsize = AtomicUsize::new(0);
static SPEND_RAN: AtomicUsize = AtomicUsize::new(0);

/// The largest answer the size limit lets through, in bytes of JSON.
const SIZE_LIMIT: usize = 2048;

/// The most requests one input sends. Every state the layers keep (a cached answer, an
/// exhausted rate limit of 20, a parked question) is reached within a few dozen requests;
/// longer programs mostly repeat them, and each step is a whole dispatch. Unbounded,
/// libFuzzer's inputs of up to 4 KiB ran 2,000 requests each (~200 inputs per second); the
/// committed corpus covers 3,782 edges at 128 steps, 3,789 unbounded, 3,766 at 64.
const MAX_STEPS: usize = 128;

/// The bytes the scripted layer reads its decisions from.
fn script() -> &'static Mutex<VecDeque<u8>> {
    static SCRIPT: OnceLock<Mutex<VecDeque<u8>>> = OnceLock::new();
    SCRIPT.get_or_init(Mutex::default)
}

fn next_byte() -> u8 {
    script()
        .lock()
        .expect("not poisoned")
        .pop_front()
        .unwrap_or(0)
}

/// Text from the script, never naming a caller (an answer a layer made up that happens to
/// say "alice" is not a leak).
fn script_text() -> String {
    let n = usize::from(next_byte() % 12);
    let bytes: Vec<u8> = (0..n).map(|_| next_byte()).collect();
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    // Until none is left: one pass leaves "bob" in "bobob".
    while text.contains("alice") || text.contains("bob") {
        text = text.replace("alice", "a").replace("bob", "b");
    }
    text
}

fn script_value(depth: u8) -> Value {
    match next_byte() % 6 {
        0 => Value::Null,
        1 => json!(next_byte()),
        2 => json!(script_text()),
        3 if depth > 0 => json!([script_value(depth - 1), script_value(depth - 1)]),
        4 if depth > 0 => json!({ script_text(): script_value(depth - 1) }),
        _ => json!({"content": [{"type": "text", "text": script_text()}]}),
    }
}

/// Does what the script says with each request.
struct Scripted;

impl Layer for Scripted {
    fn on_request<'a>(&'a self, req: &'a Request<'a>, next: Next<'a>) -> Pending<'a> {
        match next_byte() % 8 {
            0..=2 => next.run(req),
            3 => Pending::ready(req.refuse(ErrorObject::new(
                -32000 - i32::from(next_byte() % 100),
                script_text(),
            ))),
            4 => Pending::ready(req.answer(&script_value(2))),
            5 => Pending::ready(req.answer_tool(CallToolResult::text(script_text()))),
            // Add every tool there is, hidden or not, to a tools/list answer.
            6 => Pending::new(async move {
                let answer = next.run(req).await;
                match (req.method().spec().list, answer.result()) {
                    (Some(ListKind::Tools), Some(mut result)) => {
                        if let Some(Value::Array(tools)) = result.get_mut("tools") {
                            for name in ["secret", "forbidden", "spend", "open"] {
                                tools
                                    .push(json!({"name": name, "inputSchema": {"type": "object"}}));
                            }
                        }
                        req.answer(&result)
                    }
                    _ => answer,
                }
            }),
            _ => Pending::new(async move {
                let _ = next.run(req).await;
                req.answer(&script_value(2))
            }),
        }
    }

    fn on_answer(&self, req: &Request<'_>, answer: Answer) -> Answer {
        if next_byte().is_multiple_of(8) {
            req.answer(&script_value(1))
        } else {
            answer
        }
    }
}

#[derive(Deserialize, JsonSchema)]
struct Nothing {}

/// The server with the layers in the order `order` names.
fn server(order: u8) -> Server {
    static SERVERS: OnceLock<Vec<Server>> = OnceLock::new();
    let servers = SERVERS.get_or_init(|| {
        // Four orders of the built-ins around (and inside) the scripted layer.
        (0..4)
            .map(|order| {
                let mut b = Server::builder("layers", "1")
                    .tool(
                        ToolDef::from_fn("open", "Open.", |_c: Ctx, _n: Nothing| async { "o" })
                            .read_only(),
                    )
                    .tool(ToolDef::from_fn(
                        "secret",
                        "Alice's.",
                        |_c: Ctx, _n: Nothing| async { "s" },
                    ))
                    .tool(ToolDef::from_fn(
                        "forbidden",
                        "Denied.",
                        |_c: Ctx, _n: Nothing| async {
                            FORBIDDEN_RAN.fetch_add(1, Ordering::SeqCst);
                            "f"
                        },
                    ))
                    .tool(
                        ToolDef::from_fn("spend", "Asked.", |_c: Ctx, _n: Nothing| async {
                            SPEND_RAN.fetch_add(1, Ordering::SeqCst);
                            "spent"
                        })
                        .destructive(),
                    )
                    .resource(ResourceDef::new(
                        "whoami://me",
                        "whoami",
                        |ctx: Ctx, _r: ResourceRequest| async move {
                            ctx.principal()
                                .map(|p| p.subject.clone())
                                .unwrap_or_default()
                        },
                    ))
                    .authorizer(policy(|req| {
                        let who = req.context().principal().map(|p| p.subject.as_str());
                        match (req.name(), who) {
                            ("forbidden", _) => Decision::deny("no"),
                            ("secret", Some("alice")) => Decision::Allow,
                            ("secret", _) => Decision::deny("alice's"),
                            ("spend", _) => Decision::ask("Spend?"),
                            _ => Decision::Allow,
                        }
                    }))
                    .read_authorizer(policy(|_| Decision::Allow))
                    .page_size(3);
                let cache = || ResponseCache::new(Duration::from_secs(30)).max_entries(16);
                let rate = || RateLimit::per_principal(20, 100.0);
                b = match order {
                    0 => b
                        .layer(cache())
                        .layer(SizeLimit::new(SIZE_LIMIT))
                        .layer(Scripted),
                    1 => b
                        .layer(Scripted)
                        .layer(cache())
                        .layer(SizeLimit::new(SIZE_LIMIT)),
                    2 => b
                        .layer(rate())
                        .layer(Timing::new())
                        .layer(Scripted)
                        .layer(SizeLimit::new(SIZE_LIMIT)),
                    _ => b
                        .layer(SizeLimit::new(SIZE_LIMIT))
                        .layer(Scripted)
                        .layer(cache())
                        .layer(rate()),
                };
                b.build().expect("the layered server builds")
            })
            .collect()
    });
    servers[usize::from(order % 4)].clone()
}

/// Whether, in this order, the size limit is outside the scripted layer (so bounds what
/// it answers too); layers run outermost first.
fn size_limit_bounds_everything(order: u8) -> bool {
    matches!(order % 4, 0 | 3)
}

/// Whether any string or key in `value` contains `name`. Decoded, not in the frame: a
/// made-up text "\u{8}ob" is written `"\bob"` there, which is not bob's name.
fn mentions(value: &Value, name: &str) -> bool {
    match value {
        Value::String(s) => s.contains(name),
        Value::Array(items) => items.iter().any(|v| mentions(v, name)),
        Value::Object(map) => map
            .iter()
            .any(|(k, v)| k.contains(name) || mentions(v, name)),
        _ => false,
    }
}

/// A method and a maker of its params.
type Call = (&'static str, fn() -> Value);

const METHODS: [Call; 6] = [
    ("tools/list", || json!({})),
    ("tools/call", || json!({"name": "open", "arguments": {}})),
    (
        "tools/call",
        || json!({"name": "forbidden", "arguments": {}}),
    ),
    ("tools/call", || json!({"name": "spend", "arguments": {}})),
    ("tools/call", || json!({"name": "secret", "arguments": {}})),
    ("resources/read", || json!({"uri": "whoami://me"})),
];

fuzz_target!(|data: &[u8]| {
    let Some((&order, rest)) = data.split_first() else {
        return;
    };
    let (program, decisions) = rest.split_at(rest.len() / 2);
    *script().lock().expect("not poisoned") = decisions.iter().copied().collect();
    let server = server(order);
    let forbidden_before = FORBIDDEN_RAN.load(Ordering::SeqCst);
    let spend_before = SPEND_RAN.load(Ordering::SeqCst);
    runtime().block_on(async {
        let callers = ["alice", "bob"];
        // Per caller, a handshake connection (initialized) and a 2026-07-28 one.
        let mut conns = Vec::new();
        let mut outs = Vec::new();
        let mut ids = HashSet::new();
        ids.insert("0".to_owned());
        for (i, who) in callers.iter().enumerate() {
            let principal = Arc::new(Principal::new(*who, Vec::new()));
            for era in [Era::Handshake, Era::Stateless] {
                let (sink, rx) = Outbound::channel(256);
                outs.push(rx);
                let conn = server.connect(
                    ConnId::new(format!("layers-{i}-{era:?}")),
                    Transport::Http,
                    sink,
                );
                if era == Era::Handshake {
                    let init = Message::request(
                        0,
                        "initialize",
                        json!({
                        "protocolVersion": "2025-11-25", "capabilities": {},
                        "clientInfo": {"name": "fuzz", "version": "0"}}),
                    );
                    let extras = RequestExtras {
                        principal: Some(Arc::clone(&principal)),
                        ..Default::default()
                    };
                    conn.handle_with(init, extras)
                        .await
                        .expect("initialize answers");
                    conn.handle(Message::notification("notifications/initialized", None))
                        .await;
                }
                conns.push((conn, Arc::clone(&principal)));
            }
        }
        for (n, step) in program.iter().take(MAX_STEPS).enumerate() {
            let who = usize::from(step & 1);
            let stateless = step & 2 != 0;
            let (method, params) = METHODS[usize::from(step >> 2) % METHODS.len()];
            let mut params = params();
            if stateless {
                params["_meta"] = TestClient::stateless_meta(json!({}));
            }
            let id = i64::try_from(n).expect("small") + 1;
            ids.insert(id.to_string());
            let (conn, principal) = &conns[who * 2 + usize::from(stateless)];
            let extras = RequestExtras {
                era: Some(if stateless {
                    Era::Stateless
                } else {
                    Era::Handshake
                }),
                principal: Some(Arc::clone(principal)),
                ..Default::default()
            };
            let message = Message::request(id, method, params.clone());
            let reply = tokio::select! {
                reply = conn.handle_with(message, extras) => reply,
                // The asked-about tool waits for an answer nobody gives: abandoned.
                () = tokio::time::sleep(Duration::from_millis(100)) => continue,
            };
            let reply = reply.expect("a request is answered");
            let frame = reply.frame();
            check_output(frame, &ids);
            let v: Value = serde_json::from_str(frame).expect("JSON");
            assert_eq!(v["id"], json!(id), "answered another request: {v}");
            let other = callers[1 - who];
            assert!(
                !(method == "resources/read" && mentions(&v, other)),
                "{} was given {other}'s answer: {v}",
                callers[who]
            );
            if who == 1 && method == "tools/list" {
                let listed = v["result"]["tools"].as_array().cloned().unwrap_or_default();
                assert!(
                    !listed
                        .iter()
                        .any(|t| t["name"] == "secret" || t["name"] == "forbidden"),
                    "bob was shown a tool hidden from him: {v}"
                );
            }
            if size_limit_bounds_everything(order) && v.get("result").is_some() {
                assert!(
                    v["result"].to_string().len() <= SIZE_LIMIT + 256,
                    "an answer past the size limit: {} bytes",
                    frame.len()
                );
            }
        }
        assert_eq!(
            FORBIDDEN_RAN.load(Ordering::SeqCst),
            forbidden_before,
            "a denied tool ran"
        );
        assert_eq!(
            SPEND_RAN.load(Ordering::SeqCst),
            spend_before,
            "a tool ran without the approval asked for"
        );
        drop(conns);
        for mut rx in outs {
            while let Ok(frame) = rx.try_recv() {
                check_output(&frame, &ids);
            }
        }
    });
});
