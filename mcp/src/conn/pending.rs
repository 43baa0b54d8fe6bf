//! The server's own requests to a client (elicitation, sampling, roots) parked until the
//! client answers: each is closed exactly once, by whoever takes its waiter.

use std::collections::{HashMap, HashSet};

use tokio::sync::oneshot;

use crate::protocol::ErrorObject;

/// An answer to one of the server's own requests.
pub(crate) type ClientReply = Result<Box<serde_json::value::RawValue>, ErrorObject>;

/// The server's own requests awaiting the client's answer, by id.
pub(crate) struct Pending {
    waiting: HashMap<String, oneshot::Sender<ClientReply>>,
    /// The ids of the authorizer's approval questions among them.
    approvals: HashSet<String>,
    closed: bool,
    max: usize,
    /// How many are parked, as the `mcp.server.client_requests.parked` gauge sees it.
    #[cfg(feature = "otel")]
    gauge: crate::telemetry::Gauge,
}

/// Why a request to the client could not be parked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ParkRefused {
    /// The connection can no longer answer.
    Closed,
    /// As many requests as the limit allows are already waiting.
    Full,
}

impl Pending {
    pub(crate) fn new(max: usize) -> Self {
        Pending {
            waiting: HashMap::new(),
            approvals: HashSet::new(),
            closed: false,
            max,
            #[cfg(feature = "otel")]
            gauge: crate::telemetry::Gauge::new(crate::telemetry::Counted::Parked),
        }
    }

    /// Parks a request, unless the connection can no longer answer or already has as many
    /// waiting as the limit allows.
    pub(crate) fn park(
        &mut self,
        id: String,
        tx: oneshot::Sender<ClientReply>,
    ) -> Result<(), ParkRefused> {
        if self.closed {
            return Err(ParkRefused::Closed);
        }
        if self.waiting.len() >= self.max {
            return Err(ParkRefused::Full);
        }
        self.waiting.insert(id, tx);
        self.measure();
        Ok(())
    }

    /// Marks a parked request as the authorizer's approval question.
    pub(crate) fn mark_approval(&mut self, id: &str) {
        if self.waiting.contains_key(id) {
            self.approvals.insert(id.to_owned());
        }
    }

    /// Whether the parked request `id` is an approval question.
    #[cfg(feature = "http")]
    pub(crate) fn is_approval(&self, id: &str) -> bool {
        self.approvals.contains(id)
    }

    /// Takes the waiter for `id`: whoever takes it closes the request, exactly once.
    pub(crate) fn take(&mut self, id: &str) -> Option<oneshot::Sender<ClientReply>> {
        self.approvals.remove(id);
        let taken = self.waiting.remove(id);
        if taken.is_some() {
            self.measure();
        }
        taken
    }

    /// Tells the gauge how many are parked.
    fn measure(&self) {
        #[cfg(feature = "otel")]
        self.gauge.set(self.waiting.len());
    }

    /// Whether nothing is parked.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    /// How many requests are parked.
    pub(crate) fn len(&self) -> usize {
        self.waiting.len()
    }

    /// Closes every parked request and refuses new ones.
    pub(crate) fn close(&mut self) {
        self.closed = true;
        self.waiting.clear();
        self.approvals.clear();
        self.measure();
    }
}
