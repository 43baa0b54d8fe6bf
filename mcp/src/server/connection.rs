//! Connections: who is on the other end, what they negotiated, where messages for them go,
//! and what they have in flight. The table is bounded; when full it evicts the oldest
//! connection that has no live transport, and only then the oldest live one.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use parking_lot::{Mutex, RwLock};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::protocol::{
    ClientCapabilities, Era, ErrorObject, Implementation, LoggingLevel, ProtocolVersion, RequestId,
};

/// Identifies one client connection. Minted by the transport (stdio uses `"stdio"`, HTTP a
/// fresh value per session); never taken from the client.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnId(Arc<str>);

impl ConnId {
    /// A connection id from a string.
    pub fn new(id: impl AsRef<str>) -> Self {
        ConnId(Arc::from(id.as_ref()))
    }

    /// A fresh unguessable id with a readable prefix, e.g. `http-3kT...`.
    pub fn random(prefix: &str) -> Self {
        ConnId::new(format!("{prefix}-{}", crate::util::random_token(12)))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ConnId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ConnId({:?})", &*self.0)
    }
}

impl fmt::Display for ConnId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for ConnId {
    fn from(s: &str) -> Self {
        ConnId::new(s)
    }
}

/// The transport a connection arrived on, as declared by the server (never by the client),
/// so a policy may rely on it: a stdio caller inherits the OS process boundary, a network
/// caller does not.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Transport {
    /// Standard input and output.
    Stdio,
    /// Streamable HTTP.
    Http,
    /// Legacy HTTP+SSE.
    Sse,
    /// In-process or not declared.
    #[default]
    Unknown,
}

impl Transport {
    /// The lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Stdio => "stdio",
            Transport::Http => "http",
            Transport::Sse => "sse",
            Transport::Unknown => "unknown",
        }
    }
}

impl fmt::Display for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A transport name that is not one of `stdio`, `http`, `sse`, `unknown`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownTransport(pub String);

impl fmt::Display for UnknownTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown transport {:?}: expected one of stdio, http, sse, unknown",
            self.0
        )
    }
}

impl std::error::Error for UnknownTransport {}

impl FromStr for Transport {
    type Err = UnknownTransport;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "stdio" => Ok(Transport::Stdio),
            "http" => Ok(Transport::Http),
            "sse" => Ok(Transport::Sse),
            "unknown" => Ok(Transport::Unknown),
            other => Err(UnknownTransport(other.to_owned())),
        }
    }
}

/// Where outgoing messages for a connection (or one request's stream) go: a bounded queue
/// of JSON frames the transport drains.
#[derive(Clone, Debug)]
pub struct Outbound {
    tx: mpsc::Sender<String>,
}

/// The receiving end of an [`Outbound`]: the transport writes what arrives here.
pub type OutboundReceiver = mpsc::Receiver<String>;

impl Outbound {
    /// A queue holding at most `capacity` frames.
    pub fn channel(capacity: usize) -> (Outbound, OutboundReceiver) {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        (Outbound { tx }, rx)
    }

    /// Queues a frame without waiting. A full queue means the reader is too slow: the frame
    /// is dropped (and logged) rather than letting one client's backlog grow without bound.
    pub fn try_send(&self, frame: String) -> bool {
        match self.tx.try_send(frame) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Full(_)) => {
                tracing::warn!(target: "mcp::server", "outbound queue full; dropping a message for a slow client");
                false
            }
            Err(mpsc::error::TrySendError::Closed(_)) => false,
        }
    }

    /// Queues a frame, waiting for room (used for responses, which must not be dropped).
    pub async fn send(&self, frame: String) -> bool {
        self.tx.send(frame).await.is_ok()
    }

    /// Whether the receiving side is gone.
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }

    fn same_channel(&self, other: &Outbound) -> bool {
        self.tx.same_channel(&other.tx)
    }
}

/// What the client negotiated on this connection (handshake era).
#[derive(Clone, Debug)]
pub(crate) struct Session {
    pub(crate) version: Option<ProtocolVersion>,
    pub(crate) capabilities: Option<Arc<ClientCapabilities>>,
    pub(crate) client_info: Option<Implementation>,
    pub(crate) log_level: LoggingLevel,
    pub(crate) initialized: bool,
}

impl Default for Session {
    fn default() -> Self {
        Session {
            version: None,
            capabilities: None,
            client_info: None,
            log_level: LoggingLevel::Info,
            initialized: false,
        }
    }
}

#[derive(Clone, Debug)]
struct Subscriber {
    token: u64,
    out: Outbound,
}

/// An answer to one of the server's own requests.
pub(crate) type ClientReply = Result<Box<serde_json::value::RawValue>, ErrorObject>;

/// The server's own requests awaiting the client's answer, by id.
pub(crate) struct Pending {
    waiting: HashMap<String, oneshot::Sender<ClientReply>>,
    /// The ids of the authorizer's approval questions among them.
    approvals: HashSet<String>,
    closed: bool,
    max: usize,
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
    fn new(max: usize) -> Self {
        Pending {
            waiting: HashMap::new(),
            approvals: HashSet::new(),
            closed: false,
            max,
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
        Ok(())
    }

    /// Marks a parked request as the authorizer's approval question.
    pub(crate) fn mark_approval(&mut self, id: &str) {
        if self.waiting.contains_key(id) {
            self.approvals.insert(id.to_owned());
        }
    }

    /// Whether the parked request `id` is an approval question.
    pub(crate) fn is_approval(&self, id: &str) -> bool {
        self.approvals.contains(id)
    }

    /// Takes the waiter for `id`: whoever takes it closes the request, exactly once.
    pub(crate) fn take(&mut self, id: &str) -> Option<oneshot::Sender<ClientReply>> {
        self.approvals.remove(id);
        self.waiting.remove(id)
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
    }
}

/// Everything the server keeps about one connection.
pub(crate) struct ConnState {
    pub(crate) id: ConnId,
    pub(crate) transport: Transport,
    seq: u64,
    subscriber: RwLock<Option<Subscriber>>,
    pub(crate) session: RwLock<Session>,
    pub(crate) subscriptions: Mutex<HashSet<String>>,
    pub(crate) in_flight: Mutex<HashMap<RequestId, CancellationToken>>,
    /// Requests running handlers now (bounded by `max_requests_per_connection`).
    pub(crate) running: AtomicUsize,
    pub(crate) pending: Mutex<Pending>,
    pub(crate) closed: CancellationToken,
    /// Cancelled when the client's input closed (stdin EOF): long-lived requests end.
    pub(crate) input_closed: CancellationToken,
    /// The era fixed by the connection's first decisive message (stdio).
    pub(crate) era: Mutex<Option<Era>>,
}

impl fmt::Debug for ConnState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnState")
            .field("id", &self.id)
            .field("transport", &self.transport)
            .finish_non_exhaustive()
    }
}

impl ConnState {
    fn new(id: ConnId, transport: Transport, seq: u64, max_pending: usize) -> Self {
        ConnState {
            id,
            transport,
            seq,
            subscriber: RwLock::new(None),
            session: RwLock::new(Session::default()),
            subscriptions: Mutex::new(HashSet::new()),
            in_flight: Mutex::new(HashMap::new()),
            running: AtomicUsize::new(0),
            pending: Mutex::new(Pending::new(max_pending)),
            closed: CancellationToken::new(),
            input_closed: CancellationToken::new(),
            era: Mutex::new(None),
        }
    }

    /// The live transport's queue, if a transport is attached.
    pub(crate) fn outbound(&self) -> Option<Outbound> {
        self.subscriber.read().as_ref().map(|s| s.out.clone())
    }

    pub(crate) fn has_subscriber(&self) -> bool {
        self.subscriber.read().is_some()
    }

    pub(crate) fn capabilities(&self) -> Option<Arc<ClientCapabilities>> {
        self.session.read().capabilities.clone()
    }

    pub(crate) fn version(&self) -> Option<ProtocolVersion> {
        self.session.read().version
    }

    /// What the connection holds right now.
    pub(crate) fn stats(&self) -> ConnectionStats {
        ConnectionStats {
            running: self.running.load(Ordering::Acquire),
            cancellable: self.in_flight.lock().len(),
            pending: self.pending.lock().len(),
            subscriptions: self.subscriptions.lock().len(),
            attached: self.has_subscriber(),
        }
    }

    /// Cancels every running request the client could have cancelled; no response is sent
    /// for them. The connection stays attached.
    pub(crate) fn cancel_running(&self) {
        for token in self.in_flight.lock().values() {
            token.cancel();
        }
    }

    /// Closes everything the connection holds: parked requests see their answer channel
    /// drop, in-flight calls are cancelled. Nothing is pushed: the owner is gone.
    pub(crate) fn close(&self) {
        self.closed.cancel();
        self.input_closed.cancel();
        self.pending.lock().close();
        for (_, token) in self.in_flight.lock().drain() {
            token.cancel();
        }
        *self.subscriber.write() = None;
    }
}

/// A snapshot of what one connection holds, for metrics and for checking that nothing is
/// left behind (a cancelled call, a closed connection).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConnectionStats {
    /// Requests running handlers (tools, resources, prompts, completions).
    pub running: usize,
    /// Requests the client can cancel with `notifications/cancelled`.
    pub cancellable: usize,
    /// Requests to the client (elicitation, sampling, roots) waiting for an answer.
    pub pending: usize,
    /// Resource URIs subscribed to.
    pub subscriptions: usize,
    /// Whether a transport is attached.
    pub attached: bool,
}

/// Something the connection table did that an operator may want to see.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConnectionEvent {
    /// The table was full and a connection's state was dropped to make room.
    Evicted {
        /// The evicted connection.
        conn_id: ConnId,
        /// Whether it still had a live transport.
        live: bool,
        /// The table's size after eviction.
        size: usize,
        /// The cap.
        max: usize,
    },
}

pub(crate) type EventHook = Arc<dyn Fn(&ConnectionEvent) + Send + Sync>;

/// The bounded table of connections.
pub(crate) struct ConnTable {
    map: RwLock<HashMap<ConnId, Arc<ConnState>>>,
    seq: AtomicU64,
    tokens: AtomicU64,
    max: usize,
    max_pending: usize,
    default_transport: Transport,
    hook: Option<EventHook>,
}

impl ConnTable {
    pub(crate) fn new(
        max: usize,
        max_pending: usize,
        default_transport: Transport,
        hook: Option<EventHook>,
    ) -> Self {
        ConnTable {
            map: RwLock::new(HashMap::new()),
            seq: AtomicU64::new(0),
            tokens: AtomicU64::new(1),
            max,
            max_pending,
            default_transport,
            hook,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.map.read().len()
    }

    pub(crate) fn get(&self, id: &ConnId) -> Option<Arc<ConnState>> {
        self.map.read().get(id).cloned()
    }

    pub(crate) fn all(&self) -> Vec<Arc<ConnState>> {
        self.map.read().values().cloned().collect()
    }

    /// Fresh state for one call of a caller without a connection, not kept in the table.
    pub(crate) fn detached(&self, id: &ConnId, transport: Transport) -> Arc<ConnState> {
        Arc::new(ConnState::new(
            id.clone(),
            transport,
            self.seq.fetch_add(1, Ordering::Relaxed),
            self.max_pending,
        ))
    }

    /// The state for `id`, created (without a transport) if it does not exist.
    pub(crate) fn get_or_create(&self, id: &ConnId) -> Arc<ConnState> {
        self.get_or_create_as(id, self.default_transport)
    }

    /// Like [`ConnTable::get_or_create`], for a connection declared to be on `transport`.
    /// An existing state declared on another transport and without a live one is replaced,
    /// so the transport a policy sees is always the one this caller declared.
    pub(crate) fn get_or_create_as(&self, id: &ConnId, transport: Transport) -> Arc<ConnState> {
        if let Some(c) = self.get(id)
            && c.transport == transport
        {
            return c;
        }
        let mut map = self.map.write();
        match map.get(id) {
            Some(c) if c.transport == transport => return Arc::clone(c),
            Some(c) if !c.has_subscriber() => {
                let old = Arc::clone(c);
                map.remove(id);
                old.close();
            }
            Some(c) => return Arc::clone(c),
            None => {}
        }
        let state = Arc::new(ConnState::new(
            id.clone(),
            transport,
            self.seq.fetch_add(1, Ordering::Relaxed),
            self.max_pending,
        ));
        self.insert_bounded(&mut map, Arc::clone(&state));
        state
    }

    /// Attaches a transport to `id`. A first attach keeps what an earlier `initialize`
    /// recorded; attaching over a *different* live transport is a takeover and inherits
    /// nothing (the old state is closed).
    pub(crate) fn attach(
        &self,
        id: &ConnId,
        transport: Transport,
        out: Outbound,
    ) -> (Arc<ConnState>, u64) {
        let token = self.tokens.fetch_add(1, Ordering::Relaxed);
        let mut map = self.map.write();
        let existing = map.get(id).cloned();
        let state = match existing {
            Some(old) if !old.has_subscriber() => {
                // A first attach keeps what an earlier `initialize` on this id recorded.
                let fresh = Arc::new(ConnState::new(
                    id.clone(),
                    transport,
                    old.seq,
                    self.max_pending,
                ));
                *fresh.session.write() = old.session.read().clone();
                *fresh.subscriptions.lock() = old.subscriptions.lock().clone();
                *fresh.era.lock() = *old.era.lock();
                map.insert(id.clone(), Arc::clone(&fresh));
                fresh
            }
            Some(old)
                if old
                    .subscriber
                    .read()
                    .as_ref()
                    .is_some_and(|s| s.out.same_channel(&out)) =>
            {
                old
            }
            existing => {
                if let Some(old) = existing {
                    // A takeover: the new transport inherits nothing of the old one.
                    old.close();
                    map.remove(id);
                }
                let fresh = Arc::new(ConnState::new(
                    id.clone(),
                    transport,
                    self.seq.fetch_add(1, Ordering::Relaxed),
                    self.max_pending,
                ));
                self.insert_bounded(&mut map, Arc::clone(&fresh));
                fresh
            }
        };
        *state.subscriber.write() = Some(Subscriber { token, out });
        (state, token)
    }

    /// Detaches the transport that attached with `token`, dropping the connection. A stale
    /// token (the id was taken over since) changes nothing.
    pub(crate) fn detach(&self, id: &ConnId, token: u64) {
        let mut map = self.map.write();
        let matches = map.get(id).is_some_and(|c| {
            c.subscriber
                .read()
                .as_ref()
                .is_some_and(|s| s.token == token)
        });
        if matches && let Some(state) = map.remove(id) {
            state.close();
        }
    }

    fn insert_bounded(&self, map: &mut HashMap<ConnId, Arc<ConnState>>, state: Arc<ConnState>) {
        while map.len() >= self.max {
            let victim = map
                .values()
                .filter(|c| !c.has_subscriber())
                .min_by_key(|c| c.seq)
                .or_else(|| map.values().min_by_key(|c| c.seq))
                .cloned();
            let Some(victim) = victim else { break };
            let live = victim.has_subscriber();
            map.remove(&victim.id);
            victim.close();
            let event = ConnectionEvent::Evicted {
                conn_id: victim.id.clone(),
                live,
                size: map.len(),
                max: self.max,
            };
            tracing::info!(target: "mcp::server", conn_id = %victim.id, live, max = self.max, "connection state evicted: table full");
            if let Some(hook) = &self.hook {
                hook(&event);
            }
        }
        map.insert(state.id.clone(), state);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transport_names_parse_and_typos_fail() {
        assert_eq!("sse".parse::<Transport>().unwrap(), Transport::Sse);
        let err = "htpp".parse::<Transport>().unwrap_err();
        assert!(
            err.to_string()
                .contains("expected one of stdio, http, sse, unknown")
        );
    }

    #[test]
    fn eviction_prefers_connections_without_a_transport() {
        let events = Arc::new(Mutex::new(Vec::new()));
        let e2 = Arc::clone(&events);
        let table = ConnTable::new(
            2,
            4,
            Transport::Unknown,
            Some(Arc::new(move |e: &ConnectionEvent| {
                e2.lock().push(e.clone())
            })),
        );
        let (out, _rx) = Outbound::channel(4);
        table.attach(&ConnId::new("live-old"), Transport::Http, out);
        table.get_or_create(&ConnId::new("orphan"));
        table.get_or_create(&ConnId::new("new"));
        assert!(table.get(&ConnId::new("orphan")).is_none());
        assert!(table.get(&ConnId::new("live-old")).is_some());
        table.get_or_create(&ConnId::new("newer"));
        // Every remaining entry without a transport goes before the live one.
        assert!(table.get(&ConnId::new("live-old")).is_some());
        assert_eq!(events.lock().len(), 2);
    }

    #[test]
    fn detached_state_takes_the_declared_transport() {
        let table = ConnTable::new(8, 4, Transport::Unknown, None);
        let id = ConnId::new("anon");
        assert_eq!(table.get_or_create(&id).transport, Transport::Unknown);
        assert_eq!(
            table.get_or_create_as(&id, Transport::Http).transport,
            Transport::Http
        );
        // A live transport is never replaced by a detached caller.
        let (out, _rx) = Outbound::channel(4);
        table.attach(&ConnId::new("live"), Transport::Sse, out);
        let live = table.get_or_create_as(&ConnId::new("live"), Transport::Http);
        assert_eq!(live.transport, Transport::Sse);
    }

    #[test]
    fn when_all_are_live_the_oldest_goes() {
        let table = ConnTable::new(1, 4, Transport::Unknown, None);
        let (a, _ra) = Outbound::channel(4);
        let (b, _rb) = Outbound::channel(4);
        table.attach(&ConnId::new("a"), Transport::Http, a);
        table.attach(&ConnId::new("b"), Transport::Http, b);
        assert!(table.get(&ConnId::new("a")).is_none());
        assert_eq!(table.len(), 1);
    }

    #[tokio::test]
    async fn a_request_to_the_client_that_is_dropped_leaves_nothing_parked() {
        let table = ConnTable::new(4, 4, Transport::Unknown, None);
        let (out, mut rx) = Outbound::channel(4);
        let (state, _token) = table.attach(&ConnId::new("c"), Transport::Http, out.clone());
        let params = serde_json::json!({});
        let asking = crate::elicit::request_client(
            &state,
            &out,
            "elicit",
            "elicitation/create",
            &params,
            std::time::Duration::from_secs(60),
        );
        // The question goes out; then the waiter is dropped, as when the call that asked is
        // cancelled or times out.
        tokio::select! {
            _ = asking => panic!("nobody answered"),
            frame = rx.recv() => assert!(frame.is_some()),
        }
        assert!(state.pending.lock().is_empty());
    }

    #[test]
    fn takeover_inherits_nothing_and_stale_detach_is_ignored() {
        let table = ConnTable::new(8, 4, Transport::Unknown, None);
        let id = ConnId::new("x");
        let (a, _ra) = Outbound::channel(4);
        let (first, token_a) = table.attach(&id, Transport::Http, a);
        first.session.write().log_level = LoggingLevel::Error;
        let (b, _rb) = Outbound::channel(4);
        let (second, _token_b) = table.attach(&id, Transport::Http, b);
        assert!(first.closed.is_cancelled());
        assert_eq!(second.session.read().log_level, LoggingLevel::Info);
        table.detach(&id, token_a);
        assert!(table.get(&id).is_some());
    }
}
