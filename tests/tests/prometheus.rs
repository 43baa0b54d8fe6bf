//! The Prometheus scrape endpoint (the `otel` feature, `--metrics-bind`): metrics kept for a
//! scrape without any OTLP export, served as text at `/metrics` on an address of its own,
//! with the labels the OTLP metrics have, and nothing else served there.

use mcp::Server;
use mcp::registry::ToolDef;
use mcp::telemetry::{Telemetry, serve_metrics};
use mcp::testing::TestClient;
use serde_json::json;
use tokio_util::sync::CancellationToken;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    a: i64,
    b: i64,
}

#[tokio::test]
async fn metrics_are_served_for_a_scrape_on_their_own_address() {
    // No OTEL_* variable asks for export: only the scrape keeps the metrics.
    let telemetry = Telemetry::configure("scraped", true)
        .unwrap()
        .expect("a scrape alone makes a telemetry");
    assert!(!telemetry.traces(), "no spans are built for a scrape alone");
    let _layer = telemetry.install::<tracing_subscriber::Registry>();
    let stop = CancellationToken::new();
    let addr = serve_metrics(
        telemetry.clone(),
        "127.0.0.1:0".parse().unwrap(),
        stop.clone(),
    )
    .await
    .unwrap();

    let server = Server::builder("scraped", "1.0.0")
        .tool(ToolDef::from_fn(
            "add",
            "Adds.",
            |_ctx, x: Add| async move { x.a + x.b },
        ))
        .build()
        .unwrap();
    let mut c = TestClient::connect(&server);
    c.use_stateless(json!({}));
    let r = c
        .request(
            "tools/call",
            json!({"name": "add", "arguments": {"a": 20, "b": 22}}),
        )
        .await
        .unwrap();
    assert_eq!(r["content"][0]["text"], "42");
    let e = c
        .request("tools/call", json!({"name": "nope", "arguments": {}}))
        .await
        .unwrap_err();
    assert_eq!(e.code, -32602);

    let http = reqwest::Client::new();
    let response = http
        .get(format!("http://{addr}/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain")
    );
    let text = response.text().await.unwrap();
    assert!(
        text.contains("mcp_server_operation_duration_seconds_count{"),
        "{text}"
    );
    let call = text
        .lines()
        .find(|l| {
            l.starts_with("mcp_server_operation_duration_seconds_count")
                && l.contains(r#"gen_ai_tool_name="add""#)
        })
        .unwrap_or_else(|| panic!("no count for the add tool: {text}"));
    assert!(call.contains(r#"mcp_method_name="tools/call""#), "{call}");
    assert!(call.ends_with(" 1"), "{call}");
    assert!(text.contains(r#"error_type="-32602""#), "{text}");
    assert!(
        !text.contains("\"42\"") && !text.contains("\"20\""),
        "no values"
    );

    // Nothing else is served there.
    let other = http.get(format!("http://{addr}/mcp")).send().await.unwrap();
    assert_eq!(other.status(), 404);
    let post = http
        .post(format!("http://{addr}/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(post.status(), 405);
    stop.cancel();
}
