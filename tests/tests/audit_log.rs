//! The audit log's levels: routine events (a read-only tool allowed and served) at the level
//! the operator chooses, every other decision at INFO, the sink given everything. Alone in
//! its binary: it installs a per-thread subscriber, and tests running beside it on other
//! threads would race it for tracing's per-call-site interest.

use std::sync::Arc;

use mcp::auth::Decision;
use mcp::prelude::*;
use mcp::testing::TestClient;
use parking_lot::Mutex;
use serde_json::json;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Path {
    path: String,
}

/// Log lines written through a subscriber at INFO, as the generated main logs by default.
#[derive(Clone, Default)]
struct Lines(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Lines {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The audit lines an INFO log shows for four calls (a read-only tool allowed, a deny, an
/// approved sensitive tool, a tool that is not read-only allowed), with routine events at
/// `level`; and what the sink received.
async fn logged_with_routine_at(level: tracing::Level) -> (String, Vec<String>) {
    let lines = Lines::default();
    let writer = lines.clone();
    // The generated main's format: what an operator's log shows.
    let subscriber = tracing_subscriber::fmt()
        .with_ansi(false)
        .event_format(mcp::cli::LogLine::default())
        .fmt_fields(mcp::cli::LogFields)
        .with_writer(move || writer.clone())
        .with_max_level(tracing::Level::INFO)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&events);
    let s = Server::builder("audited", "1")
        .tool(ToolDef::from_fn("look", "Looks.", |_c, p: Path| async move { p.path }).read_only())
        .tool(ToolDef::from_fn(
            "touch",
            "Touches.",
            |_c, p: Path| async move { p.path },
        ))
        .tool(ToolDef::from_fn("wipe", "Wipes.", |_c, p: Path| async move { p.path }).destructive())
        .tool(
            ToolDef::from_fn(
                "hidden",
                "Never allowed.",
                |_c, p: Path| async move { p.path },
            )
            .read_only(),
        )
        .authorizer(mcp::auth::policy(|req| match req.name() {
            "hidden" => Decision::deny("nope"),
            _ if req.is_sensitive() => Decision::ask("Wipe?"),
            _ => Decision::Allow,
        }))
        .audit(move |e| sink.lock().push(e.clone()))
        .audit_routine_level(level)
        .build()
        .unwrap();
    let mut c = TestClient::connect(&s);
    c.initialize(json!({"elicitation": {}})).await.unwrap();
    c.on_server_request(|_m, _p| Ok(json!({"action": "accept", "content": {"approve": true}})));
    for tool in ["look", "hidden", "wipe", "touch"] {
        c.call_tool(tool, json!({"path": "/a"})).await.unwrap();
    }
    let text = String::from_utf8(lines.0.lock().clone()).unwrap();
    let audited: String = text
        .lines()
        .filter(|l| l.contains("mcp::audit"))
        .map(|l| format!("{l}\n"))
        .collect();
    let sunk = events.lock().iter().map(|e| e.name.clone()).collect();
    (audited, sunk)
}

#[tokio::test]
async fn routine_events_go_to_the_level_the_operator_chooses_and_the_rest_stay_at_info() {
    let every = ["look", "hidden", "wipe", "touch"];
    // By default every decision is an INFO line.
    let (log, sunk) = logged_with_routine_at(tracing::Level::INFO).await;
    for name in every {
        assert!(
            log.contains(&format!("name={name} ")),
            "{name} missing:\n{log}"
        );
    }
    assert_eq!(sunk, every);
    // Routine at DEBUG: the read-only tool allowed and served leaves the INFO log; the deny,
    // the approval and the tool that is not read-only stay; the sink still gets all four.
    let (log, sunk) = logged_with_routine_at(tracing::Level::DEBUG).await;
    assert!(!log.contains("name=look "), "{log}");
    for name in ["hidden", "wipe", "touch"] {
        assert!(
            log.contains(&format!("name={name} ")),
            "{name} missing:\n{log}"
        );
    }
    assert!(log.contains(r#"outcome="approved""#), "{log}");
    assert_eq!(sunk, every);
}
