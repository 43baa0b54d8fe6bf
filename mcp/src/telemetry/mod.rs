//! OpenTelemetry traces and metrics (the `otel` cargo feature).
//!
//! Every request a server answers becomes a span named as the MCP semantic conventions say
//! (`{mcp.method.name} {target}`, kind `SERVER`), parented by the trace context the client
//! sent: `_meta.traceparent`/`tracestate`/`baggage` in the request, else the HTTP
//! `traceparent` header. Inside it: a span per authorizer decision (`mcp.authorize`, with
//! the seam and the decision, never the arguments), per question to the client
//! (`mcp.client_request`), and the handler's own `tracing` spans. A task's run is a span of
//! its own (`mcp.task`) that follows from the request that created it.
//!
//! Metrics: `mcp.server.operation.duration` (seconds, by method, tool or prompt, protocol
//! version, transport and `error.type`), `mcp.server.authorization.decisions` (by seam and
//! decision) and `mcp.server.task.ends` (by status).
//!
//! Nothing is recorded until a [`Telemetry`] is installed: [`Telemetry::from_env`] builds
//! one from the standard variables (`OTEL_EXPORTER_OTLP_ENDPOINT`,
//! `OTEL_EXPORTER_OTLP_PROTOCOL` = `grpc` or `http/protobuf`, `OTEL_SERVICE_NAME`,
//! `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER`), and the generated `main` installs
//! it when they say so. Argument values and results never enter spans or metrics; session
//! ids are hashed.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Histogram, MeterProvider as _};
use opentelemetry::propagation::TextMapPropagator as _;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;
use serde_json::value::RawValue;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

use crate::protocol::{ProtocolVersion, Reply};

/// The instrumentation scope name of every span and instrument.
const SCOPE: &str = "mcp-guarded";

static ACTIVE: AtomicBool = AtomicBool::new(false);
static INSTRUMENTS: OnceLock<Instruments> = OnceLock::new();

struct Instruments {
    duration: Histogram<f64>,
    decisions: Counter<u64>,
    task_ends: Counter<u64>,
}

/// Whether a [`Telemetry`] is installed: every hook is one relaxed load away from doing
/// nothing.
pub(crate) fn active() -> bool {
    ACTIVE.load(Ordering::Relaxed)
}

/// Why telemetry could not be set up.
#[derive(Debug)]
pub struct TelemetryError(String);

impl std::fmt::Display for TelemetryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "OpenTelemetry: {}", self.0)
    }
}

impl std::error::Error for TelemetryError {}

/// The trace and metric pipelines of a server.
#[derive(Clone, Debug)]
pub struct Telemetry {
    tracer: SdkTracerProvider,
    meter: SdkMeterProvider,
}

impl Telemetry {
    /// Pipelines of your own (an in-memory exporter in a test, another exporter).
    pub fn new(tracer: SdkTracerProvider, meter: SdkMeterProvider) -> Self {
        Telemetry { tracer, meter }
    }

    /// OTLP export configured by the standard variables, or `None` when none asks for it
    /// (`OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` unset, or
    /// `OTEL_SDK_DISABLED=true`). `service` names the service unless `OTEL_SERVICE_NAME`
    /// does. Must be called inside a Tokio runtime.
    pub fn from_env(service: &str) -> Result<Option<Telemetry>, TelemetryError> {
        let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.trim().is_empty());
        if std::env::var("OTEL_SDK_DISABLED").is_ok_and(|v| v.eq_ignore_ascii_case("true"))
            || !(set("OTEL_EXPORTER_OTLP_ENDPOINT") || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
        {
            return Ok(None);
        }
        let http = std::env::var("OTEL_EXPORTER_OTLP_PROTOCOL")
            .is_ok_and(|p| p.trim().starts_with("http"));
        let mut resource = opentelemetry_sdk::Resource::builder();
        if !set("OTEL_SERVICE_NAME") {
            resource = resource.with_service_name(service.to_owned());
        }
        let resource = resource.build();
        let fail = |e: &dyn std::fmt::Display| TelemetryError(e.to_string());
        let spans = if http {
            opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .build()
        } else {
            opentelemetry_otlp::SpanExporter::builder()
                .with_tonic()
                .build()
        }
        .map_err(|e| fail(&e))?;
        let metrics = if http {
            opentelemetry_otlp::MetricExporter::builder()
                .with_http()
                .build()
        } else {
            opentelemetry_otlp::MetricExporter::builder()
                .with_tonic()
                .build()
        }
        .map_err(|e| fail(&e))?;
        let tracer = SdkTracerProvider::builder()
            .with_batch_exporter(spans)
            .with_resource(resource.clone())
            .build();
        let meter = SdkMeterProvider::builder()
            .with_periodic_exporter(metrics)
            .with_resource(resource)
            .build();
        Ok(Some(Telemetry { tracer, meter }))
    }

    /// Turns the hooks on and returns the `tracing` layer that turns spans into
    /// OpenTelemetry spans: add it to your subscriber (the generated `main` does).
    pub fn install<S>(&self) -> impl tracing_subscriber::Layer<S> + Send + Sync + use<S>
    where
        S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a> + Send + Sync,
    {
        let meter = self.meter.meter(SCOPE);
        let _ = INSTRUMENTS.set(Instruments {
            duration: meter
                .f64_histogram("mcp.server.operation.duration")
                .with_unit("s")
                .with_description("How long the server took to answer a request")
                .build(),
            decisions: meter
                .u64_counter("mcp.server.authorization.decisions")
                .with_description("Authorizer decisions, by seam and decision")
                .build(),
            task_ends: meter
                .u64_counter("mcp.server.task.ends")
                .with_description("Tasks that ended, by status")
                .build(),
        });
        ACTIVE.store(true, Ordering::Relaxed);
        tracing_opentelemetry::layer().with_tracer(self.tracer.tracer(SCOPE))
    }

    /// Exports what is buffered and stops the pipelines (the generated `main` calls it
    /// before it exits).
    pub fn shutdown(&self) {
        ACTIVE.store(false, Ordering::Relaxed);
        if let Err(e) = self.tracer.shutdown() {
            tracing::warn!(target: "mcp::telemetry", error = %e, "could not flush the traces");
        }
        if let Err(e) = self.meter.shutdown() {
            tracing::warn!(target: "mcp::telemetry", error = %e, "could not flush the metrics");
        }
    }
}

/// Where export goes, as the environment says: `off`, or `otlp <protocol> <endpoint>`.
pub fn export_target() -> String {
    let endpoint = std::env::var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .or_else(|_| std::env::var("OTEL_EXPORTER_OTLP_ENDPOINT"))
        .unwrap_or_default();
    let disabled = std::env::var("OTEL_SDK_DISABLED").is_ok_and(|v| v.eq_ignore_ascii_case("true"));
    if endpoint.trim().is_empty() || disabled {
        return "off".to_owned();
    }
    let protocol = std::env::var("OTEL_EXPORTER_OTLP_PROTOCOL").unwrap_or_else(|_| "grpc".into());
    format!("otlp {} {}", protocol.trim(), endpoint.trim())
}

/// The boot log's line about export.
pub fn describe_env() -> String {
    match export_target().as_str() {
        "off" => {
            "OpenTelemetry: off (set OTEL_EXPORTER_OTLP_ENDPOINT to export traces and metrics)"
                .to_owned()
        }
        target => format!("OpenTelemetry: exporting traces and metrics ({target})"),
    }
}

/// A pinned future polled inside a span, when there is one: the future stays where it was
/// pinned (wrapping it in `Instrumented` would move it, and a request's future is large).
pub(crate) struct InSpan<'a, F: ?Sized> {
    span: Option<&'a tracing::Span>,
    fut: std::pin::Pin<&'a mut F>,
}

impl<'a, F: std::future::Future + ?Sized> InSpan<'a, F> {
    pub(crate) fn new(span: Option<&'a tracing::Span>, fut: std::pin::Pin<&'a mut F>) -> Self {
        InSpan { span, fut }
    }
}

impl<F: std::future::Future + ?Sized> std::future::Future for InSpan<'_, F> {
    type Output = F::Output;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<F::Output> {
        let this = self.get_mut();
        let _entered = this.span.map(tracing::Span::enter);
        this.fut.as_mut().poll(cx)
    }
}

/// What a request's span and metrics say about it.
pub(crate) struct RequestTrace {
    span: tracing::Span,
    started: Instant,
    labels: Vec<KeyValue>,
}

/// The names a request's params carry that its span is named by.
#[derive(serde::Deserialize)]
struct Named<'a> {
    #[serde(default, borrow)]
    name: Option<std::borrow::Cow<'a, str>>,
    #[serde(default, borrow)]
    uri: Option<std::borrow::Cow<'a, str>>,
    #[serde(rename = "_meta", default)]
    meta: Option<crate::protocol::Meta>,
}

/// What the dispatcher knows of a request when it starts.
pub(crate) struct RequestFacts<'a> {
    pub(crate) method: &'static str,
    pub(crate) params: Option<&'a RawValue>,
    pub(crate) id: &'a crate::protocol::RequestId,
    pub(crate) version: ProtocolVersion,
    pub(crate) transport: crate::conn::Transport,
    pub(crate) session: Option<&'a str>,
    pub(crate) headers: Option<&'a crate::conn::HttpHeaders>,
}

impl RequestTrace {
    /// The span of a request, when telemetry is on.
    pub(crate) fn start(facts: &RequestFacts<'_>) -> Option<RequestTrace> {
        if !active() {
            return None;
        }
        let named: Option<Named<'_>> = facts
            .params
            .and_then(|p| serde_json::from_str(p.get()).ok());
        let (name, uri, meta) = match named {
            Some(n) => (n.name, n.uri, n.meta),
            None => (None, None, None),
        };
        let target = match facts.method {
            "tools/call" | "prompts/get" => name.as_deref(),
            _ => None,
        };
        let span_name = match target {
            Some(t) => format!("{} {t}", facts.method),
            None => facts.method.to_owned(),
        };
        let transport = match facts.transport {
            crate::conn::Transport::Stdio => "pipe",
            _ => "tcp",
        };
        let request_id = facts.id.to_string();
        let span = tracing::info_span!(
            target: "mcp::telemetry",
            "mcp.request",
            otel.name = %span_name,
            otel.kind = "server",
            otel.status_code = tracing::field::Empty,
            mcp.method.name = facts.method,
            mcp.protocol.version = facts.version.as_str(),
            mcp.session.id = tracing::field::Empty,
            mcp.resource.uri = tracing::field::Empty,
            jsonrpc.request.id = %request_id,
            network.transport = transport,
            gen_ai.operation.name = tracing::field::Empty,
            gen_ai.tool.name = tracing::field::Empty,
            gen_ai.prompt.name = tracing::field::Empty,
            error.type = tracing::field::Empty,
            rpc.response.status_code = tracing::field::Empty,
        );
        let mut labels = vec![
            KeyValue::new("mcp.method.name", facts.method),
            KeyValue::new("mcp.protocol.version", facts.version.as_str()),
            KeyValue::new("network.transport", transport),
        ];
        if let Some(session) = facts.session {
            span.record("mcp.session.id", hashed(session).as_str());
        }
        match (facts.method, name.as_deref()) {
            ("tools/call", Some(tool)) => {
                span.record("gen_ai.operation.name", "execute_tool");
                span.record("gen_ai.tool.name", tool);
                labels.push(KeyValue::new("gen_ai.tool.name", tool.to_owned()));
            }
            ("prompts/get", Some(prompt)) => {
                span.record("gen_ai.prompt.name", prompt);
                labels.push(KeyValue::new("gen_ai.prompt.name", prompt.to_owned()));
            }
            _ => {}
        }
        if let Some(uri) = uri.as_deref().filter(|_| facts.method == "resources/read") {
            span.record("mcp.resource.uri", uri);
        }
        let parent = parent_context(meta.as_ref(), facts.headers);
        if let Some(cx) = parent {
            let _ = span.set_parent(cx);
        }
        Some(RequestTrace {
            span,
            started: Instant::now(),
            labels,
        })
    }

    /// The span to run the request in.
    pub(crate) fn span(&self) -> &tracing::Span {
        &self.span
    }

    /// Records how the request ended: `error.type` (the JSON-RPC code, or `tool_error` for
    /// an `isError` result) on the span and in the duration histogram.
    pub(crate) fn finish(mut self, reply: Option<&Reply>) {
        let error = reply.and_then(|r| match r.error_code() {
            Some(code) => Some(code.to_string()),
            None if r.frame().contains(r#""isError":true"#) => Some("tool_error".to_owned()),
            None => None,
        });
        if let Some(e) = &error {
            self.span.record("error.type", e.as_str());
            if e != "tool_error" {
                self.span.record("rpc.response.status_code", e.as_str());
            }
            self.span.record("otel.status_code", "ERROR");
            self.labels.push(KeyValue::new("error.type", e.clone()));
        }
        if let Some(i) = INSTRUMENTS.get() {
            i.duration
                .record(self.started.elapsed().as_secs_f64(), &self.labels);
        }
    }
}

/// The trace context the client sent: in `_meta`, else in the HTTP headers.
fn parent_context(
    meta: Option<&crate::protocol::Meta>,
    headers: Option<&crate::conn::HttpHeaders>,
) -> Option<opentelemetry::Context> {
    let mut carrier = std::collections::HashMap::new();
    for key in ["traceparent", "tracestate", "baggage"] {
        let value = meta
            .and_then(|m| m.get(key))
            .and_then(serde_json::Value::as_str)
            .map(str::to_owned);
        if let Some(v) = value {
            carrier.insert(key.to_owned(), v);
        }
    }
    if !carrier.contains_key("traceparent")
        && let Some(h) = headers
    {
        carrier.clear();
        for key in ["traceparent", "tracestate", "baggage"] {
            if let Some(v) = h.get(key) {
                carrier.insert(key.to_owned(), v.to_owned());
            }
        }
    }
    if !carrier.contains_key("traceparent") {
        return None;
    }
    let trace = opentelemetry_sdk::propagation::TraceContextPropagator::new();
    let baggage = opentelemetry_sdk::propagation::BaggagePropagator::new();
    let cx = trace.extract(&carrier);
    Some(baggage.extract_with_context(&cx, &carrier))
}

/// A value that would identify someone, as its SHA-256 (first 16 hex digits).
fn hashed(value: &str) -> String {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(value.as_bytes());
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// A span around an authorizer's decision (never its arguments), and the decision counted.
pub(crate) fn authorize_span(seam: &str, name: &str) -> tracing::Span {
    if !active() {
        return tracing::Span::none();
    }
    tracing::info_span!(
        target: "mcp::telemetry",
        "mcp.authorize",
        mcp.authorization.seam = seam,
        mcp.authorization.target = name,
        mcp.authorization.decision = tracing::field::Empty,
    )
}

/// Records a decision on its span and in the decisions counter.
pub(crate) fn record_decision(span: &tracing::Span, seam: &str, decision: &str) {
    if !active() {
        return;
    }
    span.record("mcp.authorization.decision", decision);
    if let Some(i) = INSTRUMENTS.get() {
        i.decisions.add(
            1,
            &[
                KeyValue::new("mcp.authorization.seam", seam.to_owned()),
                KeyValue::new("mcp.authorization.decision", decision.to_owned()),
            ],
        );
    }
}

/// A span around a question to the client (elicitation, sampling, roots).
pub(crate) fn client_request_span(method: &str) -> tracing::Span {
    if !active() {
        return tracing::Span::none();
    }
    tracing::info_span!(
        target: "mcp::telemetry",
        "mcp.client_request",
        otel.kind = "client",
        mcp.method.name = method,
    )
}

/// The span a task runs in: it follows from the request that created it.
pub(crate) fn task_span(task_id: &str, tool: &str) -> tracing::Span {
    if !active() {
        return tracing::Span::none();
    }
    let span = tracing::info_span!(
        target: "mcp::telemetry",
        "mcp.task",
        otel.name = %format!("task {tool}"),
        mcp.task.id = task_id,
        gen_ai.tool.name = tool,
        mcp.task.status = tracing::field::Empty,
    );
    span.follows_from(tracing::Span::current());
    span
}

/// Records how a task ended, on its span and in the task counter.
pub(crate) fn record_task_end(span: &tracing::Span, status: &str) {
    if !active() {
        return;
    }
    span.record("mcp.task.status", status);
    if let Some(i) = INSTRUMENTS.get() {
        i.task_ends
            .add(1, &[KeyValue::new("mcp.task.status", status.to_owned())]);
    }
}
