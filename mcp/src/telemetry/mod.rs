//! OpenTelemetry traces and metrics (the `otel` cargo feature).
//!
//! Every request a server answers becomes a span named as the MCP semantic conventions say
//! (`{mcp.method.name} {target}`, kind `SERVER`), parented by the trace context the client
//! sent: `_meta.traceparent`/`tracestate`/`baggage` in the request, else the HTTP
//! `traceparent` header. Inside it: a span per authorizer decision (`mcp.authorize`, with
//! the seam and the decision, never the arguments), per question to the client
//! (`mcp.client_request`, whose `traceparent` goes to the client in `_meta`), per call to
//! the cluster's Redis (`mcp.store`), and the handler's own `tracing` spans. A task's run
//! is a span of its own (`mcp.task`) that follows from the request that created it. A
//! message one replica sends another carries its sender's trace: the receiver handles it
//! in a child span (`mcp.bus.receive`), and a client's answer routed to the replica that
//! asked is linked to the question's span (`mcp.answer.route`).
//!
//! Metrics: `mcp.server.operation.duration` (seconds, by method, tool or prompt, protocol
//! version, transport and `error.type`), `mcp.server.requests.active`,
//! `mcp.server.sessions.active`, `mcp.server.client_requests.parked`,
//! `mcp.server.tasks.active` (by status), `mcp.server.task.ends` (by status),
//! `mcp.server.authorization.decisions` (by seam and decision),
//! `mcp.server.rate_limit.refusals` (by method) and `mcp.cluster.bus.lag` (seconds, by
//! message type). They go out over OTLP, or to a Prometheus scrape endpoint, or both.
//!
//! Nothing is recorded until a [`Telemetry`] is installed: [`Telemetry::from_env`] builds
//! one from the standard variables (`OTEL_EXPORTER_OTLP_ENDPOINT`,
//! `OTEL_EXPORTER_OTLP_PROTOCOL` = `grpc` or `http/protobuf`, `OTEL_SERVICE_NAME`,
//! `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER`), and the generated `main` installs
//! it when they say so (or when `--metrics-bind` asks for a scrape endpoint). Argument
//! values and results never enter spans or metrics unless a tool opts in
//! (`#[tool(trace_content)]`); session ids are hashed.

mod metrics;
#[cfg(feature = "http")]
mod prometheus;
mod request;
mod spans;

use std::sync::atomic::{AtomicBool, Ordering};

use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::SdkTracerProvider;

pub(crate) use metrics::{Counted, Gauge, count_pressure_refusal, count_refusal, task_moved};
#[cfg(feature = "http")]
pub use prometheus::serve_metrics;
pub(crate) use request::{HeaderSource, InSpan, RequestFacts, RequestTrace, record_tool_content};
#[cfg(feature = "redis")]
pub(crate) use spans::store_span;
pub(crate) use spans::{
    Received, authorize_span, bus_receive_span, client_request_span, current_traceparent,
    params_with_trace, record_decision, record_task_end, task_span, traceparent_of,
};
#[cfg(feature = "http")]
pub(crate) use spans::{answer_route_span, stream_resume_span, traceparent_of_frame};

/// The instrumentation scope name of every span and instrument.
const SCOPE: &str = "mcp-guarded";

static ACTIVE: AtomicBool = AtomicBool::new(false);
static TRACING: AtomicBool = AtomicBool::new(false);

/// Whether a [`Telemetry`] is installed: every hook is one relaxed load away from doing
/// nothing.
pub(crate) fn active() -> bool {
    ACTIVE.load(Ordering::Relaxed)
}

/// Whether the installed [`Telemetry`] exports traces (a scrape endpoint alone does not:
/// then no span is built).
pub(crate) fn tracing_on() -> bool {
    TRACING.load(Ordering::Relaxed)
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
    tracer: Option<SdkTracerProvider>,
    meter: SdkMeterProvider,
    #[cfg(feature = "http")]
    scrape: Option<::prometheus::Registry>,
}

impl Telemetry {
    /// Pipelines of your own (an in-memory exporter in a test, another exporter).
    pub fn new(tracer: SdkTracerProvider, meter: SdkMeterProvider) -> Self {
        Telemetry {
            tracer: Some(tracer),
            meter,
            #[cfg(feature = "http")]
            scrape: None,
        }
    }

    /// OTLP export configured by the standard variables, or `None` when none asks for it
    /// (`OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` unset, or
    /// `OTEL_SDK_DISABLED=true`). `service` names the service unless `OTEL_SERVICE_NAME`
    /// does. Must be called inside a Tokio runtime.
    pub fn from_env(service: &str) -> Result<Option<Telemetry>, TelemetryError> {
        Self::configure(service, false)
    }

    /// As [`from_env`](Self::from_env), and with the metrics also kept for a Prometheus
    /// scrape endpoint ([`serve_metrics`]) when `scrape` is set: then a telemetry is made
    /// even when no OTLP export is configured (and spans are not built).
    pub fn configure(service: &str, scrape: bool) -> Result<Option<Telemetry>, TelemetryError> {
        let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.trim().is_empty());
        let export = !std::env::var("OTEL_SDK_DISABLED")
            .is_ok_and(|v| v.eq_ignore_ascii_case("true"))
            && (set("OTEL_EXPORTER_OTLP_ENDPOINT") || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"));
        #[cfg(not(feature = "http"))]
        let scrape = {
            if scrape {
                return Err(TelemetryError(
                    "a scrape endpoint needs the `http` feature".into(),
                ));
            }
            false
        };
        if !export && !scrape {
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
        let mut meter = SdkMeterProvider::builder().with_resource(resource.clone());
        let mut tracer = None;
        if export {
            use opentelemetry_otlp::{MetricExporter, SpanExporter};
            let (spans, metrics) = if http {
                (
                    SpanExporter::builder().with_http().build(),
                    MetricExporter::builder().with_http().build(),
                )
            } else {
                (
                    SpanExporter::builder().with_tonic().build(),
                    MetricExporter::builder().with_tonic().build(),
                )
            };
            let (spans, metrics) = (spans.map_err(|e| fail(&e))?, metrics.map_err(|e| fail(&e))?);
            tracer = Some(
                SdkTracerProvider::builder()
                    .with_batch_exporter(spans)
                    .with_resource(resource)
                    .build(),
            );
            meter = meter.with_periodic_exporter(metrics);
        }
        #[cfg(feature = "http")]
        let registry = if scrape {
            let registry = ::prometheus::Registry::new();
            let reader = opentelemetry_prometheus::exporter()
                .with_registry(registry.clone())
                .build()
                .map_err(|e| fail(&e))?;
            meter = meter.with_reader(reader);
            Some(registry)
        } else {
            None
        };
        Ok(Some(Telemetry {
            tracer,
            meter: meter.build(),
            #[cfg(feature = "http")]
            scrape: registry,
        }))
    }

    /// Whether spans are exported (not only metrics).
    pub fn traces(&self) -> bool {
        self.tracer.is_some()
    }

    /// Turns the hooks on and returns the `tracing` layer that turns spans into
    /// OpenTelemetry spans (none when only metrics are kept): add it to your subscriber
    /// (the generated `main` does).
    pub fn install<S>(&self) -> impl tracing_subscriber::Layer<S> + Send + Sync + use<S>
    where
        S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a> + Send + Sync,
    {
        metrics::install(&self.meter.meter(SCOPE));
        TRACING.store(self.tracer.is_some(), Ordering::Relaxed);
        ACTIVE.store(true, Ordering::Relaxed);
        self.tracer
            .as_ref()
            .map(|t| tracing_opentelemetry::layer().with_tracer(t.tracer(SCOPE)))
    }

    /// Exports what is buffered and stops the pipelines (the generated `main` calls it
    /// before it exits).
    pub fn shutdown(&self) {
        ACTIVE.store(false, Ordering::Relaxed);
        TRACING.store(false, Ordering::Relaxed);
        if let Some(tracer) = &self.tracer
            && let Err(e) = tracer.shutdown()
        {
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
            "OpenTelemetry: no OTLP export (set OTEL_EXPORTER_OTLP_ENDPOINT to export traces and metrics)"
                .to_owned()
        }
        target => format!("OpenTelemetry: exporting traces and metrics ({target})"),
    }
}
