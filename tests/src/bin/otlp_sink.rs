//! An OTLP/HTTP receiver for CI (`.ci/otel.sh`), standing in for an OpenTelemetry
//! Collector, which nothing installable there ships.
//!
//! `otlp-sink serve --bind ADDR --out DIR` answers `POST /v1/traces` and `POST /v1/metrics`
//! with protobuf bodies (`ExportTraceServiceRequest`, `ExportMetricsServiceRequest`) and
//! appends one JSON line per span to `DIR/spans.jsonl` and one per metric data point to
//! `DIR/metrics.jsonl`, each request's lines in one write. A body that does not decode gets
//! 400; a compressed or JSON body gets 415. It logs to stderr and stops on SIGTERM or
//! SIGINT.
//!
//! `otlp-sink check --out DIR --service NAME` reads the files back, prints a summary and
//! checks what a conformance run through the `everything` example must have exported
//! ([`CHECKS`]); it exits 1 naming each check that failed.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex, PoisonError};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::metrics::v1::{Metric, metric};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{Span, Status, span, status};
use prost::Message;
use serde::Deserialize;
use serde_json::{Map, Value, json};

/// The spans' file in the output directory.
const SPANS_FILE: &str = "spans.jsonl";
/// The metric data points' file in the output directory.
const METRICS_FILE: &str = "metrics.jsonl";
/// The largest body accepted (a batch of spans is far smaller).
const BODY_LIMIT: usize = 64 << 20;
/// The OTLP/HTTP protobuf content type.
const PROTOBUF: &str = "application/x-protobuf";

const USAGE: &str = "usage: otlp-sink serve --bind ADDR --out DIR
       otlp-sink check --out DIR --service NAME";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let outcome = match parse_args(&args) {
        Ok(Command::Serve { bind, out }) => serve(bind, &out),
        Ok(Command::Check { out, service }) => check(&out, &service),
        Err(e) => {
            eprintln!("otlp-sink: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("otlp-sink: {e}");
            ExitCode::FAILURE
        }
    }
}

/// What the command line asks for.
#[derive(Debug, PartialEq)]
enum Command {
    /// Receive OTLP/HTTP on `bind`, writing JSON lines under `out`.
    Serve { bind: SocketAddr, out: PathBuf },
    /// Check the JSON lines under `out` for the spans of `service`.
    Check { out: PathBuf, service: String },
}

/// Parses the arguments after the program's name: a subcommand, then `--name value` pairs.
fn parse_args(args: &[String]) -> Result<Command, String> {
    let (sub, rest) = args.split_first().ok_or("no subcommand")?;
    let mut options: HashMap<&str, &str> = HashMap::new();
    let mut rest = rest.iter();
    while let Some(flag) = rest.next() {
        let name = flag
            .strip_prefix("--")
            .ok_or_else(|| format!("unexpected argument {flag:?}"))?;
        let value = rest.next().ok_or_else(|| format!("{flag} needs a value"))?;
        options.insert(name, value);
    }
    let mut take = |name: &str| {
        options
            .remove(name)
            .ok_or_else(|| format!("`{sub}` needs --{name}"))
    };
    let command = match sub.as_str() {
        "serve" => {
            let bind = take("bind")?;
            Command::Serve {
                bind: bind.parse().map_err(|e| format!("--bind {bind:?}: {e}"))?,
                out: take("out")?.into(),
            }
        }
        "check" => Command::Check {
            out: take("out")?.into(),
            service: take("service")?.to_owned(),
        },
        other => return Err(format!("unknown subcommand {other:?}")),
    };
    match options.keys().next() {
        Some(extra) => Err(format!("`{sub}` does not take --{extra}")),
        None => Ok(command),
    }
}

// ---------------------------------------------------------------------------------------
// serve

/// The files the receiver appends to.
struct Sink {
    spans: Mutex<File>,
    metrics: Mutex<File>,
}

impl Sink {
    /// Creates `dir` and opens its two files for appending.
    fn open(dir: &Path) -> Result<Sink, String> {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let open = |name: &str| {
            let path = dir.join(name);
            OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .map(Mutex::new)
                .map_err(|e| format!("cannot open {}: {e}", path.display()))
        };
        Ok(Sink {
            spans: open(SPANS_FILE)?,
            metrics: open(METRICS_FILE)?,
        })
    }
}

/// Appends `lines` to `file` in one write, one JSON value a line, and flushes.
fn append(file: &Mutex<File>, lines: &[Value]) -> std::io::Result<()> {
    let mut text = String::new();
    for line in lines {
        text.push_str(&line.to_string());
        text.push('\n');
    }
    let mut file = file.lock().unwrap_or_else(PoisonError::into_inner);
    file.write_all(text.as_bytes())?;
    file.flush()
}

/// Serves OTLP/HTTP on `bind` until SIGTERM or SIGINT.
fn serve(bind: SocketAddr, out: &Path) -> Result<(), String> {
    let sink = Arc::new(Sink::open(out)?);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(bind)
            .await
            .map_err(|e| format!("cannot listen on {bind}: {e}"))?;
        eprintln!(
            "otlp-sink: receiving OTLP/HTTP on http://{bind}, writing to {}",
            out.display()
        );
        axum::serve(listener, router(sink))
            .with_graceful_shutdown(stopped())
            .await
            .map_err(|e| format!("serving failed: {e}"))?;
        eprintln!("otlp-sink: stopped");
        Ok(())
    })
}

/// Resolves on SIGTERM or SIGINT.
async fn stopped() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}

/// The two OTLP/HTTP endpoints.
fn router(sink: Arc<Sink>) -> Router {
    Router::new()
        .route("/v1/traces", post(traces))
        .route("/v1/metrics", post(metrics))
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(sink)
}

/// `POST /v1/traces`: an `ExportTraceServiceRequest`, one line per span.
async fn traces(State(sink): State<Arc<Sink>>, headers: HeaderMap, body: Bytes) -> Response {
    receive::<ExportTraceServiceRequest, _>(
        &headers,
        &body,
        "ExportTraceServiceRequest",
        span_lines,
        (&sink.spans, SPANS_FILE),
        ExportTraceServiceResponse::default(),
    )
}

/// `POST /v1/metrics`: an `ExportMetricsServiceRequest`, one line per data point.
async fn metrics(State(sink): State<Arc<Sink>>, headers: HeaderMap, body: Bytes) -> Response {
    receive::<ExportMetricsServiceRequest, _>(
        &headers,
        &body,
        "ExportMetricsServiceRequest",
        metric_lines,
        (&sink.metrics, METRICS_FILE),
        ExportMetricsServiceResponse::default(),
    )
}

/// Decodes a request named `what`, appends its lines to the file, and answers `reply`.
fn receive<R: Message + Default, P: Message>(
    headers: &HeaderMap,
    body: &[u8],
    what: &str,
    to_lines: fn(&R) -> Vec<Value>,
    (file, file_name): (&Mutex<File>, &str),
    reply: P,
) -> Response {
    let request = match decode::<R>(headers, body, what) {
        Ok(request) => request,
        Err((status, message)) => {
            eprintln!("otlp-sink: refused a {what} ({status}): {message}");
            return (status, message).into_response();
        }
    };
    let lines = to_lines(&request);
    if let Err(e) = append(file, &lines) {
        let message = format!("cannot write {file_name}: {e}");
        eprintln!("otlp-sink: {message}");
        return (StatusCode::INTERNAL_SERVER_ERROR, message).into_response();
    }
    eprintln!("otlp-sink: {what}: {} lines to {file_name}", lines.len());
    protobuf(&reply)
}

/// A protobuf body of `what`, or why it is refused: 415 for a compressed or non-protobuf
/// body, 400 for one that does not decode.
fn decode<R: Message + Default>(
    headers: &HeaderMap,
    body: &[u8],
    what: &str,
) -> Result<R, (StatusCode, String)> {
    let header = |name| {
        headers
            .get(name)
            .and_then(|v: &HeaderValue| v.to_str().ok())
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase()
    };
    let encoding = header(header::CONTENT_ENCODING);
    if !(encoding.is_empty() || encoding == "identity") {
        return Err((
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!("content-encoding {encoding:?} is not supported: send the body uncompressed"),
        ));
    }
    let content_type = header(header::CONTENT_TYPE);
    if !(content_type.is_empty() || content_type.starts_with(PROTOBUF)) {
        return Err((
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!("content-type {content_type:?} is not supported: only {PROTOBUF}"),
        ));
    }
    R::decode(body).map_err(|e| {
        (
            StatusCode::BAD_REQUEST,
            format!("the body is not an {what}: {e}"),
        )
    })
}

/// A 200 with `message` encoded, as OTLP/HTTP answers.
fn protobuf(message: &impl Message) -> Response {
    (
        [(header::CONTENT_TYPE, HeaderValue::from_static(PROTOBUF))],
        message.encode_to_vec(),
    )
        .into_response()
}

/// One JSON line per span of `request`.
fn span_lines(request: &ExportTraceServiceRequest) -> Vec<Value> {
    let mut lines = Vec::new();
    for resource_spans in &request.resource_spans {
        let service = service_name(resource_spans.resource.as_ref());
        for scope_spans in &resource_spans.scope_spans {
            lines.extend(scope_spans.spans.iter().map(|s| span_line(s, &service)));
        }
    }
    lines
}

/// A span as a JSON line: ids in hex (`parent_span_id` empty for a root), attributes as
/// strings.
fn span_line(span: &Span, service: &str) -> Value {
    let links: Vec<Value> = span
        .links
        .iter()
        .map(|l| json!({"trace_id": hex(&l.trace_id), "span_id": hex(&l.span_id)}))
        .collect();
    json!({
        "name": span.name,
        "trace_id": hex(&span.trace_id),
        "span_id": hex(&span.span_id),
        "parent_span_id": hex(&span.parent_span_id),
        "kind": span_kind(span.kind),
        "service_name": service,
        "attributes": attributes(&span.attributes),
        "links": links,
        "status": status_code(span.status.as_ref()),
    })
}

/// One JSON line per data point of each metric of `request`: its name, type and attributes.
fn metric_lines(request: &ExportMetricsServiceRequest) -> Vec<Value> {
    let mut lines = Vec::new();
    for resource_metrics in &request.resource_metrics {
        let service = service_name(resource_metrics.resource.as_ref());
        for scope_metrics in &resource_metrics.scope_metrics {
            for metric in &scope_metrics.metrics {
                let (kind, points) = data_points(metric);
                lines.extend(points.into_iter().map(|point| {
                    json!({
                        "name": metric.name,
                        "type": kind,
                        "service_name": service,
                        "attributes": attributes(point),
                    })
                }));
            }
        }
    }
    lines
}

/// A metric's type, and the attributes of each of its data points.
fn data_points(metric: &Metric) -> (&'static str, Vec<&[KeyValue]>) {
    use metric::Data;
    match &metric.data {
        Some(Data::Gauge(m)) => (
            "gauge",
            m.data_points.iter().map(|p| &p.attributes[..]).collect(),
        ),
        Some(Data::Sum(m)) => (
            "sum",
            m.data_points.iter().map(|p| &p.attributes[..]).collect(),
        ),
        Some(Data::Histogram(m)) => (
            "histogram",
            m.data_points.iter().map(|p| &p.attributes[..]).collect(),
        ),
        Some(Data::ExponentialHistogram(m)) => (
            "exponential_histogram",
            m.data_points.iter().map(|p| &p.attributes[..]).collect(),
        ),
        Some(Data::Summary(m)) => (
            "summary",
            m.data_points.iter().map(|p| &p.attributes[..]).collect(),
        ),
        None => ("none", Vec::new()),
    }
}

/// The resource's `service.name`, or empty.
fn service_name(resource: Option<&Resource>) -> String {
    resource
        .and_then(|r| r.attributes.iter().find(|kv| kv.key == "service.name"))
        .map(|kv| value_text(kv.value.as_ref()))
        .unwrap_or_default()
}

/// Attributes as a JSON object of strings.
fn attributes(attributes: &[KeyValue]) -> Map<String, Value> {
    attributes
        .iter()
        .map(|kv| (kv.key.clone(), Value::String(value_text(kv.value.as_ref()))))
        .collect()
}

/// An attribute's value as text: strings as they are, numbers and booleans printed,
/// bytes in hex, arrays and maps in brackets.
fn value_text(value: Option<&AnyValue>) -> String {
    use any_value::Value as V;
    match value.and_then(|v| v.value.as_ref()) {
        None => String::new(),
        Some(V::StringValue(s)) => s.clone(),
        Some(V::BoolValue(b)) => b.to_string(),
        Some(V::IntValue(i)) => i.to_string(),
        Some(V::DoubleValue(d)) => d.to_string(),
        Some(V::BytesValue(b)) => hex(b),
        Some(V::ArrayValue(a)) => {
            let items: Vec<String> = a.values.iter().map(|v| value_text(Some(v))).collect();
            format!("[{}]", items.join(", "))
        }
        Some(V::KvlistValue(l)) => {
            let items: Vec<String> = l
                .values
                .iter()
                .map(|kv| format!("{}: {}", kv.key, value_text(kv.value.as_ref())))
                .collect();
            format!("{{{}}}", items.join(", "))
        }
        Some(V::StringValueStrindex(i)) => format!("(string table index {i})"),
    }
}

/// Lower-case hex of `bytes` (empty for none).
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A span kind in lower case without its prefix: `server`, `internal`, `client`...
fn span_kind(kind: i32) -> String {
    match span::SpanKind::try_from(kind) {
        Ok(k) => k
            .as_str_name()
            .trim_start_matches("SPAN_KIND_")
            .to_ascii_lowercase(),
        Err(_) => format!("unknown ({kind})"),
    }
}

/// A span status code in lower case: `unset`, `ok` or `error`.
fn status_code(status: Option<&Status>) -> String {
    let code = status.map_or(0, |s| s.code);
    match status::StatusCode::try_from(code) {
        Ok(c) => c
            .as_str_name()
            .trim_start_matches("STATUS_CODE_")
            .to_ascii_lowercase(),
        Err(_) => format!("unknown ({code})"),
    }
}

// ---------------------------------------------------------------------------------------
// check

/// The prefix of a `tools/call` request span's name (the tool's name follows).
const TOOL_CALL_PREFIX: &str = "tools/call ";
/// The attributes every `tools/call` span must carry: a required value, or any non-empty one.
const TOOL_CALL_ATTRIBUTES: &[(&str, Option<&str>)] = &[
    ("mcp.method.name", Some("tools/call")),
    ("gen_ai.tool.name", None),
    ("mcp.protocol.version", None),
    ("jsonrpc.request.id", None),
];
/// The protocol versions a run of the conformance suite for both revisions negotiates.
const PROTOCOL_VERSIONS: &[&str] = &["2025-11-25", "2026-07-28"];
/// The span of an authorizer's decision.
const AUTHORIZE_SPAN: &str = "mcp.authorize";
/// The attribute of a span that ended in an error.
const ERROR_ATTRIBUTE: &str = "error.type";
/// The metrics that must have been exported.
const REQUIRED_METRICS: &[&str] = &[
    "mcp.server.operation.duration",
    "mcp.server.requests.active",
    "mcp.server.sessions.active",
    "mcp.server.client_requests.parked",
    "mcp.server.tasks.active",
    "mcp.server.task.ends",
    "mcp.server.authorization.decisions",
];

/// A line of `spans.jsonl`, the fields the checks read.
#[derive(Debug, Deserialize)]
struct SpanRecord {
    name: String,
    trace_id: String,
    span_id: String,
    parent_span_id: String,
    service_name: String,
    attributes: BTreeMap<String, String>,
}

impl SpanRecord {
    /// The value of attribute `key`, when set and not empty.
    fn attribute(&self, key: &str) -> Option<&str> {
        self.attributes
            .get(key)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// Whether this is a `tools/call` request span.
    fn is_tool_call(&self) -> bool {
        self.name.starts_with(TOOL_CALL_PREFIX)
    }
}

/// A line of `metrics.jsonl`, the fields the checks read.
#[derive(Debug, Deserialize)]
struct MetricRecord {
    name: String,
    service_name: String,
}

/// What was received, the service's part apart.
struct Evidence {
    /// The service checked.
    service: String,
    /// The service's spans.
    spans: Vec<SpanRecord>,
    /// The service names of all spans received, with their counts.
    services: BTreeMap<String, usize>,
    /// The service's metric data points.
    metrics: Vec<MetricRecord>,
}

impl Evidence {
    /// Keeps the spans and metric points of `service`, and counts every service's spans.
    fn new(service: &str, spans: Vec<SpanRecord>, metrics: Vec<MetricRecord>) -> Evidence {
        let mut services = BTreeMap::new();
        for span in &spans {
            *services.entry(span.service_name.clone()).or_insert(0) += 1;
        }
        Evidence {
            service: service.to_owned(),
            spans: spans
                .into_iter()
                .filter(|s| s.service_name == service)
                .collect(),
            services,
            metrics: metrics
                .into_iter()
                .filter(|m| m.service_name == service)
                .collect(),
        }
    }
}

/// One assertion about a run: what it checks, and the function that checks it (`Ok` with
/// what it found, `Err` with what is missing).
struct Check {
    what: &'static str,
    run: fn(&Evidence) -> Result<String, String>,
}

/// What a conformance run through `everything` with export on must have produced.
const CHECKS: &[Check] = &[
    Check {
        what: "spans of the service",
        run: service_spans,
    },
    Check {
        what: "tools/call spans with the MCP attributes",
        run: tool_call_spans,
    },
    Check {
        what: "both protocol versions on request spans",
        run: protocol_versions,
    },
    Check {
        what: "mcp.authorize as a child of a tools/call span",
        run: authorize_in_tool_call,
    },
    Check {
        what: "spans with error.type",
        run: error_spans,
    },
    Check {
        what: "required metrics",
        run: required_metrics,
    },
];

/// Reads the files under `out`, prints the summary and each check's outcome, and fails
/// naming the checks that failed.
fn check(out: &Path, service: &str) -> Result<(), String> {
    let spans = read_lines(&out.join(SPANS_FILE))?;
    let metrics = read_lines(&out.join(METRICS_FILE))?;
    let evidence = Evidence::new(service, spans, metrics);
    print!("{}", summary(&evidence));
    let failed: Vec<&str> = run_checks(&evidence)
        .into_iter()
        .filter_map(|(check, outcome)| match outcome {
            Ok(found) => {
                println!("ok      {}: {found}", check.what);
                None
            }
            Err(why) => {
                println!("FAILED  {}: {why}", check.what);
                Some(check.what)
            }
        })
        .collect();
    if failed.is_empty() {
        println!("otlp-sink check: all {} checks passed", CHECKS.len());
        Ok(())
    } else {
        Err(format!(
            "{} of {} checks failed (files in {}): {}",
            failed.len(),
            CHECKS.len(),
            out.display(),
            failed.join("; ")
        ))
    }
}

/// Every check's outcome.
fn run_checks(evidence: &Evidence) -> Vec<(&'static Check, Result<String, String>)> {
    CHECKS.iter().map(|c| (c, (c.run)(evidence))).collect()
}

/// Reads a JSON-lines file (blank lines skipped).
fn read_lines<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<Vec<T>, String> {
    let file = File::open(path).map_err(|e| {
        format!(
            "cannot read {}: {e} (did `otlp-sink serve` run with this --out?)",
            path.display()
        )
    })?;
    let mut records = Vec::new();
    for (n, line) in BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        if line.trim().is_empty() {
            continue;
        }
        let record = serde_json::from_str(&line)
            .map_err(|e| format!("{}:{}: not a record: {e}", path.display(), n + 1))?;
        records.push(record);
    }
    Ok(records)
}

/// Counts: spans by service, traces, metric points, and the ten commonest span names.
fn summary(evidence: &Evidence) -> String {
    let traces: HashSet<&str> = evidence.spans.iter().map(|s| s.trace_id.as_str()).collect();
    let metric_names: BTreeSet<&str> = evidence.metrics.iter().map(|m| m.name.as_str()).collect();
    let mut out = format!(
        "otlp-sink check: {} spans in {} traces from service {:?} (all services: {:?}); {} metric points ({})\n",
        evidence.spans.len(),
        traces.len(),
        evidence.service,
        evidence.services,
        evidence.metrics.len(),
        metric_names.into_iter().collect::<Vec<_>>().join(", "),
    );
    out.push_str("top span names:\n");
    for (name, count) in top_names(&evidence.spans, 10) {
        out.push_str(&format!("  {count:6}  {name}\n"));
    }
    out
}

/// The `limit` commonest span names with their counts, commonest first (ties by name).
fn top_names(spans: &[SpanRecord], limit: usize) -> Vec<(&str, usize)> {
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for span in spans {
        *counts.entry(span.name.as_str()).or_insert(0) += 1;
    }
    let mut counts: Vec<(&str, usize)> = counts.into_iter().collect();
    counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    counts.truncate(limit);
    counts
}

/// There are spans whose resource names the service.
fn service_spans(evidence: &Evidence) -> Result<String, String> {
    if evidence.spans.is_empty() {
        return Err(format!(
            "no span has service_name = {:?} (spans by service name: {:?})",
            evidence.service, evidence.services
        ));
    }
    Ok(format!("{} spans", evidence.spans.len()))
}

/// There are `tools/call <tool>` spans, and each carries [`TOOL_CALL_ATTRIBUTES`].
fn tool_call_spans(evidence: &Evidence) -> Result<String, String> {
    let calls: Vec<&SpanRecord> = evidence.spans.iter().filter(|s| s.is_tool_call()).collect();
    if calls.is_empty() {
        return Err(format!(
            "no span named `{TOOL_CALL_PREFIX}<tool>` among {} spans",
            evidence.spans.len()
        ));
    }
    let problems: Vec<String> = calls
        .iter()
        .flat_map(|span| attribute_problems(span, TOOL_CALL_ATTRIBUTES))
        .collect();
    if let Some(first) = problems.first() {
        return Err(format!(
            "{} problems on {} tools/call spans, first: {first}",
            problems.len(),
            calls.len()
        ));
    }
    let tools: BTreeSet<&str> = calls
        .iter()
        .filter_map(|s| s.attribute("gen_ai.tool.name"))
        .collect();
    Ok(format!(
        "{} spans, {} distinct tools",
        calls.len(),
        tools.len()
    ))
}

/// What `span` lacks of `wanted`: attributes missing or empty, or with another value.
fn attribute_problems(span: &SpanRecord, wanted: &[(&str, Option<&str>)]) -> Vec<String> {
    wanted
        .iter()
        .filter_map(|&(key, value)| match (span.attribute(key), value) {
            (None, _) => Some(format!(
                "span {:?} ({}) lacks {key}",
                span.name, span.span_id
            )),
            (Some(got), Some(want)) if got != want => Some(format!(
                "span {:?} ({}) has {key} = {got:?}, not {want:?}",
                span.name, span.span_id
            )),
            _ => None,
        })
        .collect()
}

/// Each of [`PROTOCOL_VERSIONS`] is the `mcp.protocol.version` of some request span.
fn protocol_versions(evidence: &Evidence) -> Result<String, String> {
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for version in evidence
        .spans
        .iter()
        .filter_map(|s| s.attribute("mcp.protocol.version"))
    {
        *seen.entry(version).or_insert(0) += 1;
    }
    let missing: Vec<&str> = PROTOCOL_VERSIONS
        .iter()
        .copied()
        .filter(|v| !seen.contains_key(v))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "no request span has mcp.protocol.version = {} (request spans by version: {seen:?})",
            missing.join(" or ")
        ));
    }
    Ok(format!("request spans by version: {seen:?}"))
}

/// Some `mcp.authorize` span's parent is a `tools/call` span of the same trace.
fn authorize_in_tool_call(evidence: &Evidence) -> Result<String, String> {
    let by_id: HashMap<(&str, &str), &SpanRecord> = evidence
        .spans
        .iter()
        .map(|s| ((s.trace_id.as_str(), s.span_id.as_str()), s))
        .collect();
    let parent = |s: &SpanRecord| {
        by_id
            .get(&(s.trace_id.as_str(), s.parent_span_id.as_str()))
            .copied()
    };
    let decisions: Vec<&SpanRecord> = evidence
        .spans
        .iter()
        .filter(|s| s.name == AUTHORIZE_SPAN)
        .collect();
    if decisions.is_empty() {
        return Err(format!("no span named {AUTHORIZE_SPAN}"));
    }
    let inside = decisions
        .iter()
        .filter(|s| parent(s).is_some_and(SpanRecord::is_tool_call))
        .count();
    if inside == 0 {
        let parents: BTreeSet<String> = decisions
            .iter()
            .map(|s| match parent(s) {
                Some(p) => format!("{:?}", p.name),
                None if s.parent_span_id.is_empty() => "none (a root span)".to_owned(),
                None => format!("{} (not received)", s.parent_span_id),
            })
            .collect();
        return Err(format!(
            "{} {AUTHORIZE_SPAN} spans, none a child of a tools/call span; their parents: {}",
            decisions.len(),
            first_of(parents, 10)
        ));
    }
    Ok(format!(
        "{inside} of {} {AUTHORIZE_SPAN} spans are children of tools/call spans",
        decisions.len()
    ))
}

/// The first `limit` of `items`, comma-separated, and how many more there are.
fn first_of(items: impl IntoIterator<Item = String>, limit: usize) -> String {
    let items: Vec<String> = items.into_iter().collect();
    let mut text = items[..items.len().min(limit)].join(", ");
    if items.len() > limit {
        text.push_str(&format!(" and {} more", items.len() - limit));
    }
    text
}

/// Some span carries [`ERROR_ATTRIBUTE`].
fn error_spans(evidence: &Evidence) -> Result<String, String> {
    let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
    for kind in evidence
        .spans
        .iter()
        .filter_map(|s| s.attribute(ERROR_ATTRIBUTE))
    {
        *kinds.entry(kind).or_insert(0) += 1;
    }
    if kinds.is_empty() {
        return Err(format!(
            "no span has an {ERROR_ATTRIBUTE} attribute among {}",
            evidence.spans.len()
        ));
    }
    Ok(format!("by {ERROR_ATTRIBUTE}: {kinds:?}"))
}

/// Each of [`REQUIRED_METRICS`] has a data point from the service.
fn required_metrics(evidence: &Evidence) -> Result<String, String> {
    let missing: Vec<&str> = REQUIRED_METRICS
        .iter()
        .copied()
        .filter(|name| !evidence.metrics.iter().any(|m| m.name == *name))
        .collect();
    if !missing.is_empty() {
        let seen: BTreeSet<&str> = evidence.metrics.iter().map(|m| m.name.as_str()).collect();
        return Err(format!(
            "no data point of {} from service {:?} (metrics received: {seen:?})",
            missing.join(", "),
            evidence.service
        ));
    }
    let points = evidence
        .metrics
        .iter()
        .filter(|m| REQUIRED_METRICS.contains(&m.name.as_str()))
        .count();
    Ok(format!(
        "{} ({points} data points)",
        REQUIRED_METRICS.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans};

    fn string_attr(key: &str, value: &str) -> KeyValue {
        KeyValue {
            key: key.to_owned(),
            value: Some(AnyValue {
                value: Some(any_value::Value::StringValue(value.to_owned())),
            }),
            ..Default::default()
        }
    }

    fn int_attr(key: &str, value: i64) -> KeyValue {
        KeyValue {
            key: key.to_owned(),
            value: Some(AnyValue {
                value: Some(any_value::Value::IntValue(value)),
            }),
            ..Default::default()
        }
    }

    /// A request of two spans of service `svc`: a `tools/call add` server span with an
    /// error, and an `mcp.authorize` child of it with a link.
    fn request() -> ExportTraceServiceRequest {
        let call = Span {
            trace_id: vec![0xab; 16],
            span_id: vec![1, 2, 3, 4, 5, 6, 7, 8],
            name: "tools/call add".to_owned(),
            kind: span::SpanKind::Server as i32,
            attributes: vec![
                string_attr("mcp.method.name", "tools/call"),
                string_attr("gen_ai.tool.name", "add"),
                string_attr("mcp.protocol.version", "2026-07-28"),
                int_attr("jsonrpc.request.id", 7),
                string_attr("error.type", "tool_error"),
            ],
            status: Some(Status {
                message: String::new(),
                code: status::StatusCode::Error as i32,
            }),
            ..Default::default()
        };
        let authorize = Span {
            trace_id: vec![0xab; 16],
            span_id: vec![9; 8],
            parent_span_id: vec![1, 2, 3, 4, 5, 6, 7, 8],
            name: "mcp.authorize".to_owned(),
            kind: span::SpanKind::Internal as i32,
            links: vec![span::Link {
                trace_id: vec![0xcd; 16],
                span_id: vec![0xef; 8],
                ..Default::default()
            }],
            ..Default::default()
        };
        ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                resource: Some(Resource {
                    attributes: vec![string_attr("service.name", "svc")],
                    ..Default::default()
                }),
                scope_spans: vec![ScopeSpans {
                    spans: vec![call, authorize],
                    ..Default::default()
                }],
                ..Default::default()
            }],
        }
    }

    #[test]
    fn an_encoded_trace_request_becomes_one_line_per_span() {
        let body = request().encode_to_vec();
        let decoded: ExportTraceServiceRequest =
            decode(&HeaderMap::new(), &body, "ExportTraceServiceRequest").unwrap();
        let lines = span_lines(&decoded);
        assert_eq!(lines.len(), 2);
        assert_eq!(
            lines[0],
            json!({
                "name": "tools/call add",
                "trace_id": "abababababababababababababababab",
                "span_id": "0102030405060708",
                "parent_span_id": "",
                "kind": "server",
                "service_name": "svc",
                "attributes": {
                    "mcp.method.name": "tools/call",
                    "gen_ai.tool.name": "add",
                    "mcp.protocol.version": "2026-07-28",
                    "jsonrpc.request.id": "7",
                    "error.type": "tool_error",
                },
                "links": [],
                "status": "error",
            })
        );
        assert_eq!(lines[1]["parent_span_id"], "0102030405060708");
        assert_eq!(lines[1]["kind"], "internal");
        assert_eq!(lines[1]["status"], "unset");
        assert_eq!(
            lines[1]["links"],
            json!([{"trace_id": "cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd", "span_id": "efefefefefefefef"}])
        );
    }

    #[test]
    fn bodies_that_are_not_uncompressed_protobuf_are_refused() {
        let garbage = decode::<ExportTraceServiceRequest>(&HeaderMap::new(), b"\xff\xff", "X");
        assert_eq!(garbage.unwrap_err().0, StatusCode::BAD_REQUEST);
        let mut gzip = HeaderMap::new();
        gzip.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
        let refused = decode::<ExportTraceServiceRequest>(&gzip, b"", "X").unwrap_err();
        assert_eq!(refused.0, StatusCode::UNSUPPORTED_MEDIA_TYPE);
        assert!(refused.1.contains("gzip"), "{}", refused.1);
        let mut json = HeaderMap::new();
        json.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        let refused = decode::<ExportTraceServiceRequest>(&json, b"{}", "X").unwrap_err();
        assert_eq!(refused.0, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    }

    #[tokio::test]
    async fn the_receiver_answers_protobuf_and_appends_the_lines() {
        let dir = std::env::temp_dir().join(format!("otlp-sink-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let sink = Arc::new(Sink::open(&dir).unwrap());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, router(sink)).await });
        let client = reqwest::Client::new();
        let post = |path: &str, body: Vec<u8>| {
            client
                .post(format!("http://{addr}{path}"))
                .header(header::CONTENT_TYPE, PROTOBUF)
                .body(body)
                .send()
        };

        let ok = post("/v1/traces", request().encode_to_vec()).await.unwrap();
        assert_eq!(ok.status(), StatusCode::OK);
        assert_eq!(ok.headers()[header::CONTENT_TYPE], PROTOBUF);
        let reply = ok.bytes().await.unwrap();
        assert_eq!(
            ExportTraceServiceResponse::decode(&reply[..]).unwrap(),
            Default::default()
        );
        let bad = post("/v1/metrics", vec![0xff, 0xff]).await.unwrap();
        assert_eq!(bad.status(), StatusCode::BAD_REQUEST);
        assert!(
            bad.text()
                .await
                .unwrap()
                .contains("ExportMetricsServiceRequest")
        );

        let spans = std::fs::read_to_string(dir.join(SPANS_FILE)).unwrap();
        assert_eq!(spans.lines().count(), 2, "{spans}");
        assert_eq!(std::fs::read_to_string(dir.join(METRICS_FILE)).unwrap(), "");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_checks_read_the_lines_back() {
        let spans: Vec<SpanRecord> = span_lines(&request())
            .into_iter()
            .map(|line| serde_json::from_value(line).unwrap())
            .collect();
        let evidence = Evidence::new("svc", spans, Vec::new());
        let outcome = |what: &str| {
            run_checks(&evidence)
                .into_iter()
                .find(|(c, _)| c.what == what)
                .unwrap()
                .1
        };
        assert!(outcome("spans of the service").is_ok());
        assert!(outcome("tools/call spans with the MCP attributes").is_ok());
        assert!(outcome("mcp.authorize as a child of a tools/call span").is_ok());
        assert!(outcome("spans with error.type").is_ok());
        let versions = outcome("both protocol versions on request spans").unwrap_err();
        assert!(versions.contains("2025-11-25"), "{versions}");
        let metrics = outcome("required metrics").unwrap_err();
        assert!(
            metrics.contains("mcp.server.operation.duration"),
            "{metrics}"
        );
        let other = Evidence::new("everything", Vec::new(), Vec::new());
        assert!(
            service_spans(&other)
                .unwrap_err()
                .contains("\"everything\"")
        );
    }

    #[test]
    fn arguments_parse_into_commands() {
        let args = |s: &str| s.split(' ').map(str::to_owned).collect::<Vec<_>>();
        assert_eq!(
            parse_args(&args("serve --bind 127.0.0.1:4318 --out d")).unwrap(),
            Command::Serve {
                bind: "127.0.0.1:4318".parse().unwrap(),
                out: "d".into()
            }
        );
        assert_eq!(
            parse_args(&args("check --service s --out d")).unwrap(),
            Command::Check {
                out: "d".into(),
                service: "s".into()
            }
        );
        assert!(
            parse_args(&args("check --out d"))
                .unwrap_err()
                .contains("--service")
        );
        assert!(parse_args(&args("serve --bind x --out d")).is_err());
    }
}
