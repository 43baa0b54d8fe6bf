//! A request's span and its duration: named and parented as the MCP semantic conventions
//! say, its outcome recorded when it ends.

use std::time::Instant;

use opentelemetry::KeyValue;
use opentelemetry::propagation::TextMapPropagator as _;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

use super::metrics::{self, Counted, Held};
use crate::protocol::{ProtocolVersion, Reply};

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
    /// Counts the request in flight until it is dropped (answered or cancelled).
    _in_flight: Held,
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

/// The HTTP headers a request came with (the trace context may be there).
pub(crate) trait HeaderSource {
    /// The value of the header `name` (any case).
    fn header(&self, name: &str) -> Option<&str>;
}

/// What the dispatcher knows of a request when it starts.
pub(crate) struct RequestFacts<'a> {
    pub(crate) method: &'static str,
    pub(crate) params: Option<&'a str>,
    pub(crate) id: &'a crate::protocol::RequestId,
    pub(crate) version: ProtocolVersion,
    /// `network.transport`: `pipe` for stdio, `tcp` otherwise.
    pub(crate) network_transport: &'static str,
    pub(crate) session: Option<&'a str>,
    pub(crate) headers: Option<&'a dyn HeaderSource>,
}

impl RequestTrace {
    /// The span of a request, when telemetry is on.
    pub(crate) fn start(facts: &RequestFacts<'_>) -> Option<RequestTrace> {
        if !super::active() {
            return None;
        }
        let named: Option<Named<'_>> = facts.params.and_then(|p| serde_json::from_str(p).ok());
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
        let transport = facts.network_transport;
        let request_id = facts.id.to_string();
        let span = if !super::tracing_on() {
            tracing::Span::none()
        } else {
            tracing::info_span!(
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
                gen_ai.tool.call.arguments = tracing::field::Empty,
                gen_ai.tool.call.result = tracing::field::Empty,
            )
        };
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
            _in_flight: Held::new(Counted::Requests),
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
        metrics::record_duration(self.started.elapsed().as_secs_f64(), &self.labels);
    }
}

/// The trace context the client sent: in `_meta`, else in the HTTP headers.
fn parent_context(
    meta: Option<&crate::protocol::Meta>,
    headers: Option<&dyn HeaderSource>,
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
            if let Some(v) = h.header(key) {
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

/// Records a tool call's arguments and result on the current span (its request's, or its
/// task's): only for a tool whose author opted in with `trace_content`, since both may
/// hold anything a user typed.
pub(crate) fn record_tool_content(arguments: &str, result: &impl serde::Serialize) {
    if !super::tracing_on() {
        return;
    }
    let span = tracing::Span::current();
    span.record("gen_ai.tool.call.arguments", arguments);
    if let Ok(text) = serde_json::to_string(result) {
        span.record("gen_ai.tool.call.result", text.as_str());
    }
}
