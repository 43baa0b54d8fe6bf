//! The spans inside a request (the authorizer's decision, a question to the client, a
//! task's run, a call to the cluster's store) and the ones that carry a trace from one
//! replica to another.

use opentelemetry::propagation::TextMapPropagator as _;
use opentelemetry::trace::TraceContextExt as _;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

use super::{active, metrics};

/// A span around an authorizer's decision (never its arguments).
pub(crate) fn authorize_span(seam: &str, name: &str) -> tracing::Span {
    if !super::tracing_on() {
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
    metrics::count_decision(seam, decision);
}

/// A span around a question to the client (elicitation, sampling, roots).
pub(crate) fn client_request_span(method: &str) -> tracing::Span {
    if !super::tracing_on() {
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
    if !super::tracing_on() {
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
    metrics::count_task_end(status);
}

#[cfg(feature = "redis")]
/// A span around one call to the cluster's shared store (`operation` is the Redis
/// command or script, `what` the kind of record), as the database conventions name it.
pub(crate) fn store_span(operation: &'static str, what: &'static str) -> tracing::Span {
    if !super::tracing_on() {
        return tracing::Span::none();
    }
    tracing::info_span!(
        target: "mcp::telemetry",
        "mcp.store",
        otel.name = %format!("{operation} {what}"),
        otel.kind = "client",
        db.system.name = "redis",
        db.operation.name = operation,
        db.collection.name = what,
    )
}

/// The W3C `traceparent` of the current span, when it is traced.
pub(crate) fn current_traceparent() -> Option<String> {
    traceparent_of(&tracing::Span::current())
}

/// The W3C `traceparent` of `span`, when it is traced.
pub(crate) fn traceparent_of(span: &tracing::Span) -> Option<String> {
    if !super::tracing_on() || span.is_none() {
        return None;
    }
    let cx = span.context();
    let span = cx.span();
    let sc = span.span_context();
    sc.is_valid().then(|| {
        format!(
            "00-{}-{}-{:02x}",
            sc.trace_id(),
            sc.span_id(),
            sc.trace_flags().to_u8()
        )
    })
}

/// The trace context a `traceparent` value carries.
fn context_of(traceparent: &str) -> Option<opentelemetry::Context> {
    let carrier =
        std::collections::HashMap::from([("traceparent".to_owned(), traceparent.to_owned())]);
    let cx = opentelemetry_sdk::propagation::TraceContextPropagator::new().extract(&carrier);
    cx.span().span_context().is_valid().then_some(cx)
}

/// A request to the client's params with the current span's `traceparent` in `_meta`
/// (the client can continue the trace; a replica that routes its answer links to it), or
/// `None` when nothing is traced.
pub(crate) fn params_with_trace<P: serde::Serialize>(params: &P) -> Option<serde_json::Value> {
    let traceparent = current_traceparent()?;
    let mut value = serde_json::to_value(params).ok()?;
    let object = value.as_object_mut()?;
    let meta = object
        .entry("_meta")
        .or_insert_with(|| serde_json::Value::Object(serde_json::Map::new()));
    meta.as_object_mut()?
        .insert("traceparent".into(), traceparent.into());
    Some(value)
}

#[cfg(feature = "http")]
/// The `_meta.traceparent` of a request frame the server sends the client.
pub(crate) fn traceparent_of_frame(frame: &str) -> Option<String> {
    if !super::tracing_on() || !frame.contains("traceparent") {
        return None;
    }
    #[derive(serde::Deserialize)]
    struct Frame {
        params: Params,
    }
    #[derive(serde::Deserialize)]
    struct Params {
        #[serde(rename = "_meta")]
        meta: Meta,
    }
    #[derive(serde::Deserialize)]
    struct Meta {
        traceparent: String,
    }
    serde_json::from_str::<Frame>(frame)
        .ok()
        .map(|f| f.params.meta.traceparent)
}

#[cfg(feature = "http")]
/// The span in which this replica routes a client's answer to the replica holding the
/// question: linked to the question's span there (`asked`, its `traceparent`).
pub(crate) fn answer_route_span(asked: Option<&str>, replica: &str) -> tracing::Span {
    linked_span("mcp.answer.route", "producer", replica, asked)
}

/// What a replica received from another, as its span and the lag metric see it.
pub(crate) struct Received<'a> {
    /// The message's type.
    pub(crate) kind: &'static str,
    /// How long it took to arrive (milliseconds of wall clock), when the sender said when
    /// it sent it.
    pub(crate) lag_ms: Option<u64>,
    /// The sender's `traceparent`.
    pub(crate) traceparent: Option<&'a str>,
    /// This replica.
    pub(crate) replica: &'a str,
}

/// The span in which a replica handles a bus message: it continues the sender's trace
/// (a child of the span that published it), and the bus's lag is measured.
pub(crate) fn bus_receive_span(received: &Received<'_>) -> tracing::Span {
    if !active() {
        return tracing::Span::none();
    }
    if let Some(lag) = received.lag_ms {
        metrics::record_bus_lag(lag, received.kind);
    }
    let Some(parent) = received.traceparent.and_then(context_of) else {
        return tracing::Span::none();
    };
    if !super::tracing_on() {
        return tracing::Span::none();
    }
    let span = tracing::info_span!(
        target: "mcp::telemetry",
        "mcp.bus.receive",
        otel.name = %format!("receive {}", received.kind),
        otel.kind = "consumer",
        mcp.cluster.message.type = received.kind,
        mcp.replica.id = received.replica,
    );
    let _ = span.set_parent(parent);
    span
}

#[cfg(feature = "http")]
/// The span in which a replica serves a stream resumed from another: linked to the spans
/// of the calls the stream carries (their `traceparent`s, recorded when it opened).
pub(crate) fn stream_resume_span<'a>(
    calls: impl Iterator<Item = &'a str>,
    replica: &str,
) -> tracing::Span {
    linked_span("mcp.stream.resume", "server", replica, calls)
}

/// A span of this replica (`replica`) linked to the spans the `traceparent`s name, on other
/// replicas: the work it does continues theirs without being part of their requests.
#[cfg(feature = "http")]
fn linked_span<'a>(
    name: &'static str,
    kind: &'static str,
    replica: &str,
    traceparents: impl IntoIterator<Item = &'a str>,
) -> tracing::Span {
    if !super::tracing_on() {
        return tracing::Span::none();
    }
    let span = tracing::info_span!(
        target: "mcp::telemetry",
        "mcp.linked",
        otel.name = name,
        otel.kind = kind,
        mcp.replica.id = replica,
    );
    for cx in traceparents.into_iter().filter_map(context_of) {
        span.add_link(cx.span().span_context().clone());
    }
    span
}
