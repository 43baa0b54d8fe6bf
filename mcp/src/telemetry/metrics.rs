//! The server's instruments, and the hooks the rest of the crate calls to record on them.
//! Each hook does nothing until a [`Telemetry`](super::Telemetry) is installed.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicI64, Ordering};

use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Histogram, Meter, UpDownCounter};

static INSTRUMENTS: OnceLock<Instruments> = OnceLock::new();

/// The buckets the MCP semantic conventions advise for operation durations (seconds).
const DURATION_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// Buckets for the bus's lag (seconds; it is measured in whole milliseconds).
const LAG_BUCKETS: [f64; 10] = [0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0];

/// Every instrument the server records on.
struct Instruments {
    duration: Histogram<f64>,
    in_flight: UpDownCounter<i64>,
    sessions: UpDownCounter<i64>,
    parked: UpDownCounter<i64>,
    tasks: UpDownCounter<i64>,
    task_ends: Counter<u64>,
    decisions: Counter<u64>,
    refusals: Counter<u64>,
    pressure_refusals: Counter<u64>,
    bus_lag: Histogram<f64>,
}

/// Makes the instruments on `meter` (once per process: the first installed meter wins).
pub(super) fn install(meter: &Meter) {
    let _ = INSTRUMENTS.set(Instruments {
        duration: meter
            .f64_histogram("mcp.server.operation.duration")
            .with_unit("s")
            .with_description("How long the server took to answer a request")
            .with_boundaries(DURATION_BUCKETS.to_vec())
            .build(),
        in_flight: meter
            .i64_up_down_counter("mcp.server.requests.active")
            .with_unit("{request}")
            .with_description("Requests being answered now")
            .build(),
        sessions: meter
            .i64_up_down_counter("mcp.server.sessions.active")
            .with_unit("{session}")
            .with_description("Connections and sessions whose state this server holds")
            .build(),
        parked: meter
            .i64_up_down_counter("mcp.server.client_requests.parked")
            .with_unit("{request}")
            .with_description(
                "Questions to clients (elicitation, sampling, roots) waiting for an answer",
            )
            .build(),
        tasks: meter
            .i64_up_down_counter("mcp.server.tasks.active")
            .with_unit("{task}")
            .with_description("Tasks running on this server, by status")
            .build(),
        task_ends: meter
            .u64_counter("mcp.server.task.ends")
            .with_unit("{task}")
            .with_description("Tasks that ended, by status")
            .build(),
        decisions: meter
            .u64_counter("mcp.server.authorization.decisions")
            .with_unit("{decision}")
            .with_description("Authorizer decisions, by seam and decision")
            .build(),
        refusals: meter
            .u64_counter("mcp.server.rate_limit.refusals")
            .with_unit("{request}")
            .with_description("Requests refused by the rate limit, by method")
            .build(),
        pressure_refusals: meter
            .u64_counter("mcp.server.memory_pressure.refusals")
            .with_unit("{request}")
            .with_description("Requests refused because memory was near its limit, by method")
            .build(),
        bus_lag: meter
            .f64_histogram("mcp.cluster.bus.lag")
            .with_unit("s")
            .with_description(
                "From a replica publishing a bus message to another receiving it, by type",
            )
            .with_boundaries(LAG_BUCKETS.to_vec())
            .build(),
    });
}

fn instruments() -> Option<&'static Instruments> {
    if super::active() {
        INSTRUMENTS.get()
    } else {
        None
    }
}

/// A request's duration, with its labels.
pub(crate) fn record_duration(seconds: f64, labels: &[KeyValue]) {
    if let Some(i) = instruments() {
        i.duration.record(seconds, labels);
    }
}

/// An authorizer's decision.
pub(crate) fn count_decision(seam: &str, decision: &str) {
    if let Some(i) = instruments() {
        i.decisions.add(
            1,
            &[
                KeyValue::new("mcp.authorization.seam", seam.to_owned()),
                KeyValue::new("mcp.authorization.decision", decision.to_owned()),
            ],
        );
    }
}

/// A task that ended, by status.
pub(crate) fn count_task_end(status: &str) {
    if let Some(i) = instruments() {
        i.task_ends
            .add(1, &[KeyValue::new("mcp.task.status", status.to_owned())]);
    }
}

/// A request the rate limit refused.
pub(crate) fn count_refusal(method: &'static str) {
    if let Some(i) = instruments() {
        i.refusals
            .add(1, &[KeyValue::new("mcp.method.name", method)]);
    }
}

/// A request refused for memory pressure.
pub(crate) fn count_pressure_refusal(method: &'static str) {
    if let Some(i) = instruments() {
        i.pressure_refusals
            .add(1, &[KeyValue::new("mcp.method.name", method)]);
    }
}

/// How long a bus message took from its sender, in milliseconds of wall clock.
pub(crate) fn record_bus_lag(lag_ms: u64, kind: &'static str) {
    if let Some(i) = instruments() {
        i.bus_lag.record(
            lag_ms as f64 / 1000.0,
            &[KeyValue::new("mcp.cluster.message.type", kind)],
        );
    }
}

/// A running task's status changed from `from` to `to` (`None`: it began, or ended).
pub(crate) fn task_moved(from: Option<&'static str>, to: Option<&'static str>) {
    if from == to {
        return;
    }
    if let Some(i) = instruments() {
        if let Some(from) = from {
            i.tasks.add(-1, &[KeyValue::new("mcp.task.status", from)]);
        }
        if let Some(to) = to {
            i.tasks.add(1, &[KeyValue::new("mcp.task.status", to)]);
        }
    }
}

/// What a [`Gauge`] counts.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Counted {
    /// Requests being answered.
    Requests,
    /// Connection states held in a server's table.
    Sessions,
    /// Questions to clients waiting for an answer.
    Parked,
}

impl Counted {
    fn counter(self, i: &Instruments) -> &UpDownCounter<i64> {
        match self {
            Counted::Requests => &i.in_flight,
            Counted::Sessions => &i.sessions,
            Counted::Parked => &i.parked,
        }
    }
}

/// One collection's size, as it contributes to its up-down counter: [`Gauge::set`] after
/// each change adds the difference, and dropping the collection takes its share away.
/// Several collections (one per connection, per server) add up to the instrument.
#[derive(Debug)]
pub(crate) struct Gauge {
    counted: Counted,
    reported: AtomicI64,
}

impl Gauge {
    pub(crate) const fn new(counted: Counted) -> Self {
        Gauge {
            counted,
            reported: AtomicI64::new(0),
        }
    }

    /// The collection now holds `size` items.
    pub(crate) fn set(&self, size: usize) {
        let Some(i) = instruments() else { return };
        let size = i64::try_from(size).unwrap_or(i64::MAX);
        let before = self.reported.swap(size, Ordering::Relaxed);
        if before != size {
            self.counted.counter(i).add(size - before, &[]);
        }
    }
}

impl Drop for Gauge {
    fn drop(&mut self) {
        let before = *self.reported.get_mut();
        if before != 0
            && let Some(i) = INSTRUMENTS.get()
        {
            self.counted.counter(i).add(-before, &[]);
        }
    }
}

/// One item counted while it lives (a request being answered): +1 now, -1 when dropped.
pub(crate) struct Held(Option<Counted>);

impl Held {
    pub(crate) fn new(counted: Counted) -> Self {
        match instruments() {
            Some(i) => {
                counted.counter(i).add(1, &[]);
                Held(Some(counted))
            }
            None => Held(None),
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if let (Some(counted), Some(i)) = (self.0, INSTRUMENTS.get()) {
            counted.counter(i).add(-1, &[]);
        }
    }
}
