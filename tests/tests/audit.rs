//! The audit hook: every authorization decision is observable with its tool, argument
//! digest, decision and outcome, and nothing about the arguments' contents leaks.

use std::sync::Arc;

use mcp::auth::{AuditEvent, AuditOutcome, Decision, Seam};
use mcp::prelude::*;
use mcp::testing::TestClient;
use parking_lot::Mutex;
use serde_json::json;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Path {
    path: String,
}

fn server(events: Arc<Mutex<Vec<AuditEvent>>>, read_deny: bool) -> Server {
    let mut b = Server::builder("audited", "1")
        .tool(ToolDef::from_fn(
            "read",
            "Reads.",
            |_c, p: Path| async move { p.path },
        ))
        .tool(ToolDef::from_fn("wipe", "Wipes.", |_c, p: Path| async move { p.path }).destructive())
        .tool(ToolDef::from_fn(
            "forbidden",
            "Never allowed.",
            |_c, p: Path| async move { p.path },
        ))
        .authorizer(mcp::auth::policy(|req| match req.name() {
            "forbidden" => Decision::deny("nope"),
            _ if req.is_sensitive() => Decision::ask("Wipe?"),
            _ => Decision::Allow,
        }))
        .audit(move |e| events.lock().push(e.clone()));
    if read_deny {
        b = b.read_authorizer(mcp::auth::deny_all("closed"));
    }
    b.build().unwrap()
}

#[tokio::test]
async fn every_decision_and_its_outcome_is_reported() {
    let events = Arc::new(Mutex::new(Vec::new()));
    let s = server(Arc::clone(&events), false);
    let mut c = TestClient::connect(&s);
    c.initialize(json!({"elicitation": {}})).await.unwrap();
    c.on_server_request(|_m, _p| Ok(json!({"action": "accept", "content": {"approve": true}})));

    c.call_tool("read", json!({"path": "/a"})).await.unwrap();
    c.call_tool("forbidden", json!({"path": "/secret"}))
        .await
        .unwrap();
    c.call_tool("wipe", json!({"path": "/b"})).await.unwrap();
    c.on_server_request(|_m, _p| Ok(json!({"action": "decline"})));
    c.call_tool("wipe", json!({"path": "/c"})).await.unwrap();

    let seen: Vec<(String, &'static str, AuditOutcome)> = events
        .lock()
        .iter()
        .map(|e| (e.name.clone(), e.decision, e.outcome.clone()))
        .collect();
    assert_eq!(
        seen,
        vec![
            ("read".into(), "allow", AuditOutcome::Served),
            ("forbidden".into(), "deny", AuditOutcome::Denied),
            ("wipe".into(), "ask", AuditOutcome::Approved),
            (
                "wipe".into(),
                "ask",
                AuditOutcome::NotApproved("user decline".into())
            ),
        ]
    );
    let all = events.lock();
    assert!(
        all.iter()
            .all(|e| e.seam == Seam::Tool && e.conn_id == *c.conn_id())
    );
    assert_eq!(all[1].detail.as_deref(), Some("nope"));
    // A digest, never the arguments themselves.
    assert_eq!(all[1].argument_digest.len(), 64);
    assert!(!format!("{:?}", all[1]).contains("/secret"));
}

#[tokio::test]
async fn the_digest_is_canonical_and_the_read_seam_is_audited_too() {
    let events = Arc::new(Mutex::new(Vec::new()));
    let s = server(Arc::clone(&events), true);
    let mut c = TestClient::connect(&s);
    c.initialize(json!({})).await.unwrap();
    c.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                  "params": {"name": "read", "arguments": {"path": "/x", "z": 1}}}));
    c.next_message().await.unwrap();
    c.send_frame(br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read","arguments":{"z":1,"path":"/x"}}}"#.to_vec());
    c.next_message().await.unwrap();
    let denied = c.request("tools/list", json!({})).await.unwrap_err();
    assert_eq!(denied.code, -32090);
    let all = events.lock();
    assert_eq!(
        all[0].argument_digest, all[1].argument_digest,
        "key order does not change the digest"
    );
    let read = all
        .iter()
        .find(|e| e.seam == Seam::Read)
        .expect("a read-seam event");
    assert_eq!((read.name.as_str(), read.decision), ("tools/list", "deny"));
    assert_eq!(read.outcome, AuditOutcome::Denied);
}

#[tokio::test]
async fn no_authorizer_means_no_decision_and_no_event() {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&events);
    let s = Server::builder("plain", "1")
        .tool(ToolDef::from_fn(
            "read",
            "Reads.",
            |_c, p: Path| async move { p.path },
        ))
        .audit(move |e| sink.lock().push(e.clone()))
        .build()
        .unwrap();
    let mut c = TestClient::connect(&s);
    c.call_tool("read", json!({"path": "/a"})).await.unwrap();
    assert!(events.lock().is_empty());
}
