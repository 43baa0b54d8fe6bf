//! OpenTelemetry (the `otel` feature): a request's span tree from the client's trace
//! context, on both eras and over stdio-like and HTTP connections, its attributes (never an
//! argument's value), the authorizer's and a task's spans, a handler's own spans inside,
//! and the duration metric with its labels. One test: the pipelines are the process's.

use std::time::Duration;

use mcp::Server;
use mcp::auth::{Decision, allow_all, policy};
use mcp::registry::ToolDef;
use mcp::tasks::TaskSupport;
use mcp::telemetry::Telemetry;
use mcp::testing::TestClient;
use mcp_tests::http::{HttpTestServer, test_config};
use opentelemetry::trace::SpanId;
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::{Value, json};

const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

fn traceparent(parent: &str) -> String {
    format!("00-{TRACE}-{parent}-01")
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Add {
    a: i64,
    b: i64,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoArgs {}

fn server() -> Server {
    Server::builder("otel-fixture", "1.0.0")
        .tool(ToolDef::from_fn(
            "add",
            "Adds.",
            |_ctx, x: Add| async move {
                // A handler's own span nests under its request.
                tracing::info_span!("adding").in_scope(|| x.a + x.b)
            },
        ))
        .tool(
            ToolDef::from_fn("job", "Works a moment.", |_ctx, _: NoArgs| async {
                tokio::time::sleep(Duration::from_millis(20)).await;
                "done"
            })
            .task_support(TaskSupport::Optional),
        )
        .authorizer(policy(|_| Decision::Allow))
        .read_authorizer(allow_all())
        .build()
        .unwrap()
}

fn attr(span: &SpanData, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.as_str().into_owned())
}

fn spans_named(exporter: &InMemorySpanExporter, name: &str) -> Vec<SpanData> {
    exporter
        .get_finished_spans()
        .unwrap()
        .into_iter()
        .filter(|s| s.name == name)
        .collect()
}

/// The one span named `name` whose parent is `parent`.
fn child_of(exporter: &InMemorySpanExporter, name: &str, parent: SpanId) -> SpanData {
    let found: Vec<SpanData> = spans_named(exporter, name)
        .into_iter()
        .filter(|s| s.parent_span_id == parent)
        .collect();
    assert_eq!(found.len(), 1, "one {name} under {parent:?}: {found:#?}");
    found.into_iter().next().unwrap()
}

fn span_id(hex: &str) -> SpanId {
    SpanId::from_hex(hex).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_are_traced_from_the_clients_context_and_measured() {
    use tracing_subscriber::layer::SubscriberExt as _;

    let spans = InMemorySpanExporter::default();
    let tracer = SdkTracerProvider::builder()
        .with_simple_exporter(spans.clone())
        .build();
    let metrics = InMemoryMetricExporter::default();
    let meter = SdkMeterProvider::builder()
        .with_reader(PeriodicReader::builder(metrics.clone()).build())
        .build();
    let telemetry = Telemetry::new(tracer.clone(), meter.clone());
    let subscriber = tracing_subscriber::registry().with(telemetry.install());
    tracing::subscriber::set_global_default(subscriber).unwrap();

    // 2026-07-28 in memory: the parent comes from _meta.
    let server = server();
    let mut c = TestClient::connect(&server);
    c.use_stateless(json!({}));
    let parent = "00f067aa0ba902b7";
    let r = c
        .request(
            "tools/call",
            json!({"name": "add", "arguments": {"a": 1234567, "b": 7654321},
                   "_meta": {"traceparent": traceparent(parent), "baggage": "tenant=blue"}}),
        )
        .await
        .unwrap();
    assert_eq!(r["content"][0]["text"], "8888888");
    let request = child_of(&spans, "tools/call add", span_id(parent));
    assert_eq!(request.span_context.trace_id().to_string(), TRACE);
    assert_eq!(request.span_kind, opentelemetry::trace::SpanKind::Server);
    assert_eq!(
        attr(&request, "mcp.method.name").as_deref(),
        Some("tools/call")
    );
    assert_eq!(attr(&request, "gen_ai.tool.name").as_deref(), Some("add"));
    assert_eq!(
        attr(&request, "gen_ai.operation.name").as_deref(),
        Some("execute_tool")
    );
    assert_eq!(
        attr(&request, "mcp.protocol.version").as_deref(),
        Some("2026-07-28")
    );
    assert!(attr(&request, "jsonrpc.request.id").is_some());
    assert!(attr(&request, "error.type").is_none());
    // No argument value, anywhere.
    for s in spans.get_finished_spans().unwrap() {
        for kv in &s.attributes {
            let v = kv.value.as_str();
            assert!(
                !v.contains("1234567") && !v.contains("7654321"),
                "{} = {v}",
                kv.key
            );
        }
    }
    let request_id = request.span_context.span_id();
    let decided = child_of(&spans, "mcp.authorize", request_id);
    assert_eq!(
        attr(&decided, "mcp.authorization.decision").as_deref(),
        Some("allow")
    );
    assert_eq!(
        attr(&decided, "mcp.authorization.seam").as_deref(),
        Some("tool")
    );
    child_of(&spans, "adding", request_id);

    // An error is recorded as its JSON-RPC code.
    let e = c
        .request(
            "tools/call",
            json!({"name": "nope", "arguments": {}, "_meta": {"traceparent": traceparent("1111111111111111")}}),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, -32602);
    let failed = child_of(&spans, "tools/call nope", span_id("1111111111111111"));
    assert_eq!(attr(&failed, "error.type").as_deref(), Some("-32602"));

    // A task's run is a span of its own, linked to the request that made it.
    let created = c.call_tool_as_task("job", json!({})).await.unwrap();
    let id = created["taskId"].as_str().unwrap().to_owned();
    c.wait_task(&id, &[], Duration::from_secs(5)).await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let task = spans_named(&spans, "task job");
    assert_eq!(task.len(), 1, "{task:#?}");
    assert_eq!(attr(&task[0], "mcp.task.id").as_deref(), Some(id.as_str()));
    assert_eq!(
        attr(&task[0], "mcp.task.status").as_deref(),
        Some("completed")
    );
    assert_eq!(
        task[0].links.len(),
        1,
        "linked to the request that created it"
    );

    // The handshake era over HTTP: the parent comes from the traceparent header.
    let srv = HttpTestServer::start(server.clone(), test_config()).await;
    let mut http = srv.client();
    http.initialize("2025-11-25", json!({})).await;
    let header_parent = "2222222222222222";
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": {"name": "add", "arguments": {"a": 1, "b": 2}}});
    let response = http
        .post(body.to_string())
        .header("traceparent", traceparent(header_parent))
        .send()
        .await
        .unwrap();
    let answer: Value = http.read_exchange(response).await.response;
    assert_eq!(answer["result"]["content"][0]["text"], "3");
    let over_http = child_of(&spans, "tools/call add", span_id(header_parent));
    assert_eq!(
        attr(&over_http, "network.transport").as_deref(),
        Some("tcp")
    );
    assert_eq!(
        attr(&over_http, "mcp.protocol.version").as_deref(),
        Some("2025-11-25")
    );
    let session = attr(&over_http, "mcp.session.id").expect("a session id");
    assert_eq!(
        session.len(),
        16,
        "hashed, not the session id itself: {session}"
    );

    // The duration histogram, by method and tool, with the error type where there was one.
    meter.force_flush().unwrap();
    let exported = metrics.get_finished_metrics().unwrap();
    let text = format!("{exported:?}");
    assert!(text.contains("mcp.server.operation.duration"), "{text}");
    assert!(
        text.contains("gen_ai.tool.name") && text.contains("\"add\""),
        "{text}"
    );
    assert!(text.contains("-32602"), "the error's label: {text}");
    assert!(
        text.contains("mcp.server.authorization.decisions"),
        "{text}"
    );
    assert!(text.contains("mcp.server.task.ends"), "{text}");
    assert!(!text.contains("1234567"), "no argument values in metrics");
    let _ = tracer.shutdown();
}
