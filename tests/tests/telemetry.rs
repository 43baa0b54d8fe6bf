//! OpenTelemetry (the `otel` feature): a request's span tree from the client's trace
//! context, on both eras and over stdio-like and HTTP connections, its attributes (never an
//! argument's value, unless the tool opted in), the authorizer's and a task's spans, a
//! handler's own spans inside, the metrics with their labels and the gauges following what
//! is live, and a call answered across two replicas as linked spans (in memory and on a
//! real Redis, whose calls are spans too). One test runs the scenarios in turn: the
//! pipelines and the instruments are the process's, and the gauges must not see another
//! scenario's work.

use std::sync::OnceLock;
use std::time::Duration;

use mcp::Server;
use mcp::auth::{Decision, allow_all, policy};
use mcp::cluster::memory::MemoryBackend;
use mcp::cluster::redis::RedisBackend;
use mcp::layers::RateLimit;
use mcp::registry::ToolDef;
use mcp::tasks::TaskSupport;
use mcp::telemetry::Telemetry;
use mcp::testing::TestClient;
use mcp_tests::http::{HttpTestServer, McpHttp, SseReader, fixture_in, test_config};
use opentelemetry::trace::SpanId;
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
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

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Echo {
    text: String,
}

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
        .tool(
            ToolDef::from_fn(
                "wait",
                "Works until cancelled.",
                |ctx: mcp::Ctx, _: NoArgs| async move {
                    ctx.cancelled().await;
                    "stopped"
                },
            )
            .task_support(TaskSupport::Optional),
        )
        .tool(
            ToolDef::from_fn(
                "echo",
                "Says it back.",
                |_ctx, x: Echo| async move { x.text },
            )
            .trace_content(),
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

/// The spans named `name` with a link to `target`.
fn linked_to(exporter: &InMemorySpanExporter, name: &str, target: &SpanData) -> Vec<SpanData> {
    spans_named(exporter, name)
        .into_iter()
        .filter(|s| {
            s.links
                .iter()
                .any(|l| l.span_context.span_id() == target.span_context.span_id())
        })
        .collect()
}

fn span_id(hex: &str) -> SpanId {
    SpanId::from_hex(hex).unwrap()
}

/// The process's pipelines: spans and metrics kept in memory.
struct Pipes {
    spans: InMemorySpanExporter,
    metrics: InMemoryMetricExporter,
    meter: SdkMeterProvider,
}

fn pipes() -> &'static Pipes {
    static PIPES: OnceLock<Pipes> = OnceLock::new();
    PIPES.get_or_init(|| {
        use tracing_subscriber::layer::SubscriberExt as _;
        let spans = InMemorySpanExporter::default();
        let tracer = SdkTracerProvider::builder()
            .with_simple_exporter(spans.clone())
            .build();
        let metrics = InMemoryMetricExporter::default();
        let meter = SdkMeterProvider::builder()
            .with_reader(PeriodicReader::builder(metrics.clone()).build())
            .build();
        let telemetry = Telemetry::new(tracer, meter.clone());
        let subscriber = tracing_subscriber::registry().with(telemetry.install());
        tracing::subscriber::set_global_default(subscriber).unwrap();
        Pipes {
            spans,
            metrics,
            meter,
        }
    })
}

/// The sum of the metric `name`'s data points (counters, up-down counters; a histogram's
/// count) whose labels include `labels`, as of now.
fn metric(name: &str, labels: &[(&str, &str)]) -> f64 {
    let p = pipes();
    p.meter.force_flush().unwrap();
    let exported = p.metrics.get_finished_metrics().unwrap();
    let Some(last) = exported.last() else {
        return 0.0;
    };
    let matches = |attrs: Vec<&opentelemetry::KeyValue>| {
        labels.iter().all(|(k, v)| {
            attrs
                .iter()
                .any(|kv| kv.key.as_str() == *k && kv.value.as_str() == *v)
        })
    };
    let mut total = 0.0;
    for scope in last.scope_metrics() {
        for m in scope.metrics().filter(|m| m.name() == name) {
            match m.data() {
                AggregatedMetrics::I64(MetricData::Sum(sum)) => {
                    for dp in sum.data_points() {
                        if matches(dp.attributes().collect()) {
                            total += dp.value() as f64;
                        }
                    }
                }
                AggregatedMetrics::U64(MetricData::Sum(sum)) => {
                    for dp in sum.data_points() {
                        if matches(dp.attributes().collect()) {
                            total += dp.value() as f64;
                        }
                    }
                }
                AggregatedMetrics::F64(MetricData::Histogram(h)) => {
                    for dp in h.data_points() {
                        if matches(dp.attributes().collect()) {
                            total += dp.count() as f64;
                        }
                    }
                }
                other => panic!("{name}: unexpected data {other:?}"),
            }
        }
    }
    total
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn telemetry_follows_requests_gauges_and_replicas() {
    requests_are_traced_from_the_clients_context_and_measured().await;
    gauges_follow_what_is_live().await;
    content_is_recorded_only_for_a_tool_that_opts_in().await;
    an_answer_routed_across_replicas_links_their_spans(false).await;
    an_answer_routed_across_replicas_links_their_spans(true).await;
}

async fn requests_are_traced_from_the_clients_context_and_measured() {
    let spans = pipes().spans.clone();
    let meter = pipes().meter.clone();
    let metrics = pipes().metrics.clone();

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
}

/// Waits (up to 5 s) until the metric reads `want`.
async fn eventually(name: &str, labels: &[(&str, &str)], want: f64) {
    eventually_where(name, labels, &format!("{want}"), |now| now == want).await;
}

/// Waits (at most 5 s) until the metric reads as `ok` says; `what` names what was awaited.
async fn eventually_where(
    name: &str,
    labels: &[(&str, &str)],
    what: &str,
    ok: impl Fn(f64) -> bool,
) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let now = metric(name, labels);
        if ok(now) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{name} {labels:?} is {now}, not {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Reads `stream` until a message passes `wanted`.
async fn until(stream: &mut SseReader, wanted: impl Fn(&Value) -> bool) -> Value {
    loop {
        let e = stream
            .next_within(Duration::from_secs(15))
            .await
            .expect("the stream ended early");
        if e.comment || e.data.is_empty() {
            continue;
        }
        let v = e.json();
        if wanted(&v) {
            return v;
        }
    }
}

fn approve(ask: &Value) -> String {
    json!({"jsonrpc": "2.0", "id": ask["id"],
        "result": {"action": "accept", "content": {"approve": true}}})
    .to_string()
}

fn spend(id: i64) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "spend", "arguments": {}}})
    .to_string()
}

async fn gauges_follow_what_is_live() {
    // A session, and an approval question parked on it while its call is in flight.
    let fixture = fixture_in(None, None);
    let srv = HttpTestServer::start(fixture.server.clone(), test_config()).await;
    let mut http = srv.client();
    http.initialize("2025-11-25", json!({"elicitation": {}}))
        .await;
    assert!(metric("mcp.server.sessions.active", &[]) >= 1.0);
    eventually("mcp.server.client_requests.parked", &[], 0.0).await;
    let response = http.post(spend(1)).send().await.unwrap();
    let mut stream = SseReader::new(response);
    let ask = until(&mut stream, |v| v["method"] == "elicitation/create").await;
    assert_eq!(metric("mcp.server.client_requests.parked", &[]), 1.0);
    assert!(
        metric("mcp.server.requests.active", &[]) >= 1.0,
        "the call waiting for its approval is in flight"
    );
    http.post(approve(&ask)).send().await.unwrap();
    let done = until(&mut stream, |v| v["id"] == 1).await;
    assert_eq!(done["result"]["content"][0]["text"], "spent");
    eventually("mcp.server.client_requests.parked", &[], 0.0).await;
    eventually("mcp.server.requests.active", &[], 0.0).await;
    assert!(
        metric(
            "mcp.server.authorization.decisions",
            &[("mcp.authorization.decision", "ask")]
        ) >= 1.0
    );

    // A running task counts as working until it is cancelled.
    let server = server();
    let mut c = TestClient::connect(&server);
    c.use_stateless(json!({}));
    let created = c.call_tool_as_task("wait", json!({})).await.unwrap();
    let id = created["taskId"].as_str().unwrap().to_owned();
    eventually(
        "mcp.server.tasks.active",
        &[("mcp.task.status", "working")],
        1.0,
    )
    .await;
    c.cancel_task(&id).await.unwrap();
    eventually(
        "mcp.server.tasks.active",
        &[("mcp.task.status", "working")],
        0.0,
    )
    .await;
    // The gauge moves when the cancel is recorded, the count of ends when the task's span
    // closes, which may come a moment later.
    eventually_where(
        "mcp.server.task.ends",
        &[("mcp.task.status", "cancelled")],
        "at least 1",
        |ends| ends >= 1.0,
    )
    .await;

    // A refusal of the rate limit, by method.
    let limited = Server::builder("limited", "1.0.0")
        .tool(ToolDef::from_fn(
            "add",
            "Adds.",
            |_ctx, x: Add| async move { x.a + x.b },
        ))
        .layer(RateLimit::per_principal(1, 0.001))
        .build()
        .unwrap();
    let mut c = TestClient::connect(&limited);
    c.use_stateless(json!({}));
    let before = metric(
        "mcp.server.rate_limit.refusals",
        &[("mcp.method.name", "tools/call")],
    );
    for _ in 0..2 {
        c.request(
            "tools/call",
            json!({"name": "add", "arguments": {"a": 1, "b": 1}}),
        )
        .await
        .unwrap();
    }
    assert_eq!(
        metric(
            "mcp.server.rate_limit.refusals",
            &[("mcp.method.name", "tools/call")]
        ),
        before + 1.0
    );
}

async fn content_is_recorded_only_for_a_tool_that_opts_in() {
    let spans = &pipes().spans;
    let server = server();
    let mut c = TestClient::connect(&server);
    c.use_stateless(json!({}));
    let parent = "3333333333333333";
    let r = c
        .request(
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "visible-42"},
                   "_meta": {"traceparent": traceparent(parent)}}),
        )
        .await
        .unwrap();
    assert_eq!(r["content"][0]["text"], "visible-42");
    let span = child_of(spans, "tools/call echo", span_id(parent));
    let arguments = attr(&span, "gen_ai.tool.call.arguments").expect("the arguments");
    assert!(arguments.contains("visible-42"), "{arguments}");
    let result = attr(&span, "gen_ai.tool.call.result").expect("the result");
    assert!(result.contains("visible-42"), "{result}");

    // The same through `#[tool(trace_content)]`.
    let mut c = TestClient::connect(&units::server());
    c.use_stateless(json!({}));
    let parent = "6666666666666666";
    c.request(
        "tools/call",
        json!({"name": "to_celsius", "arguments": {"fahrenheit": 212},
               "_meta": {"traceparent": traceparent(parent)}}),
    )
    .await
    .unwrap();
    let span = child_of(spans, "tools/call to_celsius", span_id(parent));
    assert_eq!(
        attr(&span, "gen_ai.tool.call.arguments").as_deref(),
        Some(r#"{"fahrenheit":212}"#)
    );
    let result = attr(&span, "gen_ai.tool.call.result").expect("the result");
    assert!(result.contains("100"), "{result}");
}

/// A tool that opted in through the macro.
mod units {
    use mcp::prelude::*;

    /// Converts a temperature.
    #[tool(read_only, trace_content)]
    pub async fn to_celsius(fahrenheit: f64) -> f64 {
        (fahrenheit - 32.0) / 1.8
    }

    mcp::server! { name: "units", tools: [to_celsius], main: false }
}

/// The key every replica seals `requestState` with.
const SHARED_KEY: &[u8] = b"the-replicas-share-this-32+-byte-state-key";

async fn an_answer_routed_across_replicas_links_their_spans(on_redis: bool) {
    let spans = &pipes().spans;
    let mut _redis = None;
    let clusters = if on_redis {
        let Some(server) = mcp_tests::redis::RedisServer::start("telemetry") else {
            return;
        };
        let prefix = format!("t-telemetry-{}", std::process::id());
        let backend = RedisBackend::connect(&server.url(), &prefix)
            .await
            .expect("connect to the test redis");
        _redis = Some(server);
        [backend.replica(), backend.replica()]
    } else {
        let backend = MemoryBackend::new();
        [backend.replica(), backend.replica()]
    };
    let mut replicas = Vec::new();
    for cluster in &clusters {
        let fixture = fixture_in(Some(cluster.clone()), Some(SHARED_KEY));
        replicas.push(HttpTestServer::start(fixture.server.clone(), test_config()).await);
    }
    let mut a = McpHttp::new(replicas[0].url("/mcp"));
    a.initialize("2025-11-25", json!({"elicitation": {}})).await;
    let mut on_b = a.clone();
    on_b.url = replicas[1].url("/mcp");

    // The call (and its question) on replica 1, the answer on replica 0.
    let caller = if on_redis {
        "5555555555555555"
    } else {
        "4444444444444444"
    };
    let response = on_b
        .post(spend(7))
        .header("traceparent", traceparent(caller))
        .send()
        .await
        .unwrap();
    let mut stream = SseReader::new(response);
    let ask = until(&mut stream, |v| v["method"] == "elicitation/create").await;
    let asked = ask["params"]["_meta"]["traceparent"]
        .as_str()
        .expect("the question carries its trace context")
        .to_owned();
    assert!(asked.starts_with(&format!("00-{TRACE}-")), "{asked}");
    a.post(approve(&ask)).send().await.unwrap();
    let done = until(&mut stream, |v| v["id"] == 7).await;
    assert_eq!(done["result"]["content"][0]["text"], "spent");
    tokio::time::sleep(Duration::from_millis(100)).await;

    let call = child_of(spans, "tools/call spend", span_id(caller));
    let question = child_of(spans, "mcp.client_request", call.span_context.span_id());
    assert_eq!(
        asked.split('-').nth(2),
        Some(question.span_context.span_id().to_string().as_str()),
        "the traceparent sent is the question's span"
    );
    // Replica 0 routed the answer in a span linked to the question on replica 1 ...
    let routed = linked_to(spans, "mcp.answer.route", &question);
    assert_eq!(routed.len(), 1, "{routed:#?}");
    let route = &routed[0];
    assert_eq!(
        attr(route, "mcp.replica.id").as_deref(),
        Some(clusters[0].replica_id())
    );
    // ... and replica 1 received it in a span continuing that one.
    let received = child_of(spans, "receive answer", route.span_context.span_id());
    assert_eq!(
        received.span_context.trace_id(),
        route.span_context.trace_id()
    );
    assert_eq!(
        attr(&received, "mcp.replica.id").as_deref(),
        Some(clusters[1].replica_id())
    );
    assert!(
        metric(
            "mcp.cluster.bus.lag",
            &[("mcp.cluster.message.type", "answer")]
        ) >= 1.0
    );

    // A running call's stream, resumed on the other replica: that replica's span is linked
    // to the call's.
    let caller = if on_redis {
        "7777777777777777"
    } else {
        "8888888888888888"
    };
    let body = json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call",
        "params": {"name": "wait", "arguments": {"ms": 400}, "_meta": {"progressToken": 1}}});
    let response = on_b
        .post(body.to_string())
        .header("traceparent", traceparent(caller))
        .send()
        .await
        .unwrap();
    let mut first = SseReader::new(response);
    let started = loop {
        let e = first
            .next_within(Duration::from_secs(15))
            .await
            .expect("the first event");
        if !e.comment && !e.data.is_empty() {
            break e;
        }
    };
    drop(first);
    let resumed = a
        .get()
        .header("last-event-id", started.id.expect("an event id"))
        .send()
        .await
        .unwrap();
    let mut rest = SseReader::new(resumed);
    let done = until(&mut rest, |v| v["id"] == 8).await;
    assert_eq!(done["result"]["content"][0]["text"], "waited 400 ms");
    tokio::time::sleep(Duration::from_millis(100)).await;
    let waited = child_of(spans, "tools/call wait", span_id(caller));
    let resumes = linked_to(spans, "mcp.stream.resume", &waited);
    assert_eq!(resumes.len(), 1, "{resumes:#?}");
    assert_eq!(
        attr(&resumes[0], "mcp.replica.id").as_deref(),
        Some(clusters[0].replica_id())
    );
    if on_redis {
        // Every call to Redis is a span of its own.
        for name in ["park session", "unpark session"] {
            let found = spans_named(spans, name);
            assert!(!found.is_empty(), "no {name} span");
            assert_eq!(attr(&found[0], "db.system.name").as_deref(), Some("redis"));
        }
    }
}
