//! Running several replicas of one server behind a load balancer: the state they share and
//! how they talk to each other.
//!
//! One process needs none of this: by default a server keeps its sessions, its resumable
//! events and its used `requestState` nonces in memory, as it always has. A [`Cluster`]
//! given to [`ServerBuilder::cluster`](crate::ServerBuilder::cluster) makes a replica one
//! of several that answer any request:
//!
//! - **2026-07-28 (stateless).** Any replica answers any request. The key that seals
//!   `requestState` must be the same on every replica
//!   ([`ServerBuilder::state_key`](crate::ServerBuilder::state_key)); a state opens once
//!   across all of them ([`NonceStore`]). A `subscriptions/listen` stream lives on the
//!   replica that accepted it; a list change or resource update raised on any replica reaches
//!   it through the [`Bus`].
//! - **Tasks (both eras).** A task's record lives in the shared task store (see
//!   [`crate::tasks`]) before its handle is sent, so any replica answers `tasks/get`;
//!   `tasks/update` and `tasks/cancel` reach the replica running it over the [`Bus`], and a
//!   task whose replica is gone is ended `failed` by the next replica that looks at it.
//! - **Handshake era (sessions).** A session's record (its negotiated version, client
//!   capabilities and info, log level and resource subscriptions) lives in the
//!   [`SessionStore`], so any replica can serve it (from a copy read less than
//!   `HttpConfig::session_recheck` ago, with changes and deletes acknowledged by every
//!   replica before they are answered: [`Cluster::publish_and_wait`]); the events of its
//!   SSE streams live in
//!   the [`EventStore`], so a stream can be resumed (`Last-Event-ID`) on any replica. A
//!   question the server asked the client (elicitation, sampling, roots) stays parked on
//!   the replica that asked; an answer that lands on another replica is routed to it over
//!   the bus. If that replica is gone, the call it was serving is closed (an approval with
//!   the deny, anything else with an error) and the response is left on the call's stream
//!   for the client to resume: nothing hangs.
//! - **Third-party sign-in (the `oauth` feature).** `mcp::connect`'s pending links and the
//!   users' tokens live on the cluster's backend (`ConnectBuilder::cluster` finds it
//!   through [`Cluster::backend`]), so the browser may open a link and come back from the third
//!   party on any replica; a flow that ends elsewhere reaches the replica whose call
//!   waits for it over the [`Bus`] ([`BusMessage::ConnectFinished`]).
//!
//! Two implementations come with the crate: [`memory::MemoryBackend`], which shares state
//! between replicas *in one process* (for tests, and for several routers in one
//! application), and, with the `redis` cargo feature, `mcp::cluster::redis` (a Redis server shared by
//! replicas on several machines).
//!
//! # What is not shared
//!
//! The registry (tools, resources and prompts registered at run time), the application's
//! own state, the legacy HTTP+SSE transport's sessions (use sticky sessions for it), the
//! limits (`max_sessions` and friends count per replica), and notifications sent while a
//! session has no GET stream open on any replica.

pub mod memory;
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub mod redis;

use crate::protocol::methods::ListKind;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use parking_lot::{Mutex, RwLock};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// A shared store or the bus failed (the backend is unreachable, or answered nonsense).
/// Requests that needed it fail closed: a session that cannot be read is not served, a
/// `requestState` whose single use cannot be recorded is not accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreError(pub String);

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "shared state unavailable: {}", self.0)
    }
}

impl std::error::Error for StoreError {}

/// Results of the shared stores.
pub type StoreResult<T> = Result<T, StoreError>;

/// The principal that opened a session: only the same subject and issuer may use it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Owner {
    /// The token's subject.
    pub subject: String,
    /// The token's issuer.
    pub issuer: Option<String>,
}

/// What every replica needs to know to serve a handshake-era session.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    /// The connection id the session's requests run under (the same on every replica, so
    /// logs and audit events name one connection).
    pub conn_id: String,
    /// Who opened it, when a bearer token named someone.
    pub owner: Option<Owner>,
    /// The negotiated protocol version, once `initialize` succeeded.
    pub version: Option<String>,
    /// The client's capabilities, as `initialize` declared them.
    pub capabilities: Option<Value>,
    /// The client's `clientInfo`.
    pub client_info: Option<Value>,
    /// The `logging/setLevel` level, if one was set.
    pub log_level: Option<String>,
    /// Whether `notifications/initialized` arrived.
    pub initialized: bool,
    /// The resource URIs the session subscribed to.
    pub subscriptions: Vec<String>,
}

/// One change to a session's record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "change", rename_all = "snake_case")]
pub enum SessionChange {
    /// `initialize` succeeded.
    Initialized {
        /// The negotiated version.
        version: String,
        /// The client's capabilities.
        capabilities: Value,
        /// The client's `clientInfo`.
        client_info: Option<Value>,
    },
    /// `notifications/initialized` arrived.
    Ready,
    /// `logging/setLevel`.
    LogLevel {
        /// The new level.
        level: String,
    },
    /// `resources/subscribe`.
    Subscribe {
        /// The URI.
        uri: String,
    },
    /// `resources/unsubscribe`.
    Unsubscribe {
        /// The URI.
        uri: String,
    },
}

impl SessionRecord {
    /// Applies a change.
    pub fn apply(&mut self, change: &SessionChange) {
        match change {
            SessionChange::Initialized {
                version,
                capabilities,
                client_info,
            } => {
                self.version = Some(version.clone());
                self.capabilities = Some(capabilities.clone());
                self.client_info = client_info.clone();
            }
            SessionChange::Ready => self.initialized = true,
            SessionChange::LogLevel { level } => self.log_level = Some(level.clone()),
            SessionChange::Subscribe { uri } => {
                if !self.subscriptions.contains(uri) {
                    self.subscriptions.push(uri.clone());
                }
            }
            SessionChange::Unsubscribe { uri } => self.subscriptions.retain(|u| u != uri),
        }
    }
}

/// A call served on one SSE stream of a session: its JSON-RPC id, and the tool when it is
/// a `tools/call`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StreamCall {
    /// The request's id, as the client sent it.
    pub id: Value,
    /// The tool a `tools/call` names.
    pub tool: Option<String>,
    /// The W3C `traceparent` of the call's span (with the `otel` feature): a replica that
    /// resumes the stream links its span to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
}

/// A POST answered as an SSE stream, while it runs: who serves it and which calls it
/// carries, so that another replica can close them if that one dies.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StreamInfo {
    /// The replica serving it.
    pub replica: String,
    /// The calls whose responses it will carry.
    pub calls: Vec<StreamCall>,
}

/// A question the server asked the client, parked on one replica until its answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ParkedAsk {
    /// The replica holding the waiting call.
    pub replica: String,
    /// The SSE stream the question went out on (and the call's response will).
    pub stream: u64,
    /// Whether it is the authorizer's approval question (closing it denies the call).
    pub approval: bool,
    /// The W3C `traceparent` of the span that asked (with the `otel` feature): the replica
    /// that receives the answer links its span to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
}

/// One stored SSE event of a session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredEvent {
    /// Its position in the session's event log (opaque; `<digits>-<digits>`).
    pub pos: String,
    /// The JSON-RPC frame.
    pub frame: String,
}

/// What a replay found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Replay {
    /// The stream's events after the cursor, oldest first.
    pub events: Vec<StoredEvent>,
    /// Whether the stream ended (its last response was stored).
    pub finished: bool,
}

/// Handshake-era sessions shared by replicas. Every method that names a session also
/// extends its life (`ttl` since the last use) where it says so; a session not used for
/// its ttl is gone everywhere.
pub trait SessionStore: Send + Sync + 'static {
    /// Records a new session.
    fn create<'a>(
        &'a self,
        id: &'a str,
        record: &'a SessionRecord,
        ttl: Duration,
    ) -> BoxFuture<'a, StoreResult<()>>;
    /// The session's record (`None` when it expired, was deleted or never existed), and
    /// its life extended by `ttl`.
    fn load<'a>(
        &'a self,
        id: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, StoreResult<Option<SessionRecord>>>;
    /// Extends the session's life; `false` when it is gone.
    fn touch<'a>(&'a self, id: &'a str, ttl: Duration) -> BoxFuture<'a, StoreResult<bool>>;
    /// Applies a change to the session's record.
    fn update<'a>(
        &'a self,
        id: &'a str,
        change: &'a SessionChange,
    ) -> BoxFuture<'a, StoreResult<()>>;
    /// Removes the session and everything stored for it; `true` when it existed.
    fn remove<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<bool>>;
    /// A new stream number for the session (1, 2, ...; 0 is the GET stream).
    fn next_stream<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<u64>>;
    /// Records a running stream.
    fn open_stream<'a>(
        &'a self,
        id: &'a str,
        stream: u64,
        info: &'a StreamInfo,
    ) -> BoxFuture<'a, StoreResult<()>>;
    /// Takes a running stream's record: exactly one caller gets `Some` (the replica that
    /// ends it, or the one that closes it for a dead replica).
    fn claim_stream<'a>(
        &'a self,
        id: &'a str,
        stream: u64,
    ) -> BoxFuture<'a, StoreResult<Option<StreamInfo>>>;
    /// The record of a running stream, if it is still running.
    fn stream_info<'a>(
        &'a self,
        id: &'a str,
        stream: u64,
    ) -> BoxFuture<'a, StoreResult<Option<StreamInfo>>>;
    /// Records a parked question under its request id.
    fn park<'a>(
        &'a self,
        id: &'a str,
        request: &'a str,
        ask: &'a ParkedAsk,
    ) -> BoxFuture<'a, StoreResult<()>>;
    /// Takes a parked question: exactly one caller gets `Some`, so each question is closed
    /// (answered, timed out or closed for a dead replica) once.
    fn unpark<'a>(
        &'a self,
        id: &'a str,
        request: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<ParkedAsk>>>;
    /// The questions parked on one stream of the session, by request id.
    fn parked_on<'a>(
        &'a self,
        id: &'a str,
        stream: u64,
    ) -> BoxFuture<'a, StoreResult<Vec<(String, ParkedAsk)>>>;
}

/// The SSE events of handshake-era sessions, kept (bounded) so a client can resume a
/// stream with `Last-Event-ID` on any replica.
pub trait EventStore: Send + Sync + 'static {
    /// Appends a frame to one stream of the session, keeping at most about `max` events
    /// per session; returns its position.
    fn append<'a>(
        &'a self,
        id: &'a str,
        stream: u64,
        frame: &'a str,
        max: usize,
    ) -> BoxFuture<'a, StoreResult<String>>;
    /// Marks a stream as ended.
    fn finish<'a>(&'a self, id: &'a str, stream: u64, max: usize)
    -> BoxFuture<'a, StoreResult<()>>;
    /// The position of the session's newest event (`0-0` when it has none): a cursor
    /// after which only events to come are replayed.
    fn tail<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<String>>;
    /// The stream's events after `after` (a position from [`EventStore::append`], or `0-0`
    /// for the start), and whether it ended.
    fn replay<'a>(
        &'a self,
        id: &'a str,
        stream: u64,
        after: &'a str,
    ) -> BoxFuture<'a, StoreResult<Replay>>;
}

/// Single use of sealed `requestState` (2026-07-28) across replicas: a nonce is recorded
/// until its state expires.
pub trait NonceStore: Send + Sync + 'static {
    /// Records `nonce` as used until `expires_at_ms` (Unix milliseconds); `false` when it
    /// was used before.
    fn consume<'a>(
        &'a self,
        nonce: &'a str,
        expires_at_ms: u64,
    ) -> BoxFuture<'a, StoreResult<bool>>;

    /// [`NonceStore::consume`] for a state issued at `issued_at_ms` (Unix milliseconds). A
    /// store that can lose its records while the replicas live on (Redis restarted without
    /// persistence) answers [`NonceUse::Forgotten`] for a state issued before it last lost
    /// them: whether that state was used is no longer known, and recording it as new would
    /// let a used state (an approval) be replayed. The default, for stores that lose their
    /// records only with the process that issued the states, is `consume`.
    fn consume_issued<'a>(
        &'a self,
        nonce: &'a str,
        issued_at_ms: u64,
        expires_at_ms: u64,
    ) -> BoxFuture<'a, StoreResult<NonceUse>> {
        let _ = issued_at_ms;
        Box::pin(async move {
            Ok(if self.consume(nonce, expires_at_ms).await? {
                NonceUse::Fresh
            } else {
                NonceUse::Used
            })
        })
    }
}

/// What [`NonceStore::consume_issued`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NonceUse {
    /// Not used before; recorded as used now.
    Fresh,
    /// Used before.
    Used,
    /// Issued before the store last lost its records: counted as used.
    Forgotten,
}

/// What replicas tell each other.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum BusMessage {
    /// A list changed on the replica `origin`.
    ListChanged {
        /// The replica it changed on.
        origin: String,
        /// The list.
        list: ListKind,
    },
    /// A resource changed, as seen by the replica `origin`.
    ResourceUpdated {
        /// The replica that saw it.
        origin: String,
        /// The resource.
        uri: String,
    },
    /// A session's record changed (subscriptions and log level matter to the replica
    /// holding its GET stream).
    SessionChanged {
        /// The replica that changed it.
        origin: String,
        /// The session.
        session: String,
        /// The change.
        change: SessionChange,
    },
    /// A session was deleted: every replica ends its streams and running requests.
    SessionRemoved {
        /// The replica that removed it.
        origin: String,
        /// The session.
        session: String,
    },
    /// The client's answer to a question parked on the replica `to`.
    Answer {
        /// The replica holding the question.
        to: String,
        /// The session it belongs to.
        session: String,
        /// The JSON-RPC response, as the client sent it.
        frame: String,
    },
    /// `tasks/update` answers for a task running on the replica `to`.
    TaskInput {
        /// The replica running the task.
        to: String,
        /// The task.
        task_id: String,
        /// The answers, by input key.
        responses: crate::protocol::Meta,
    },
    /// A task running on the replica `origin` changed: listen streams elsewhere that
    /// asked for it hear of it.
    TaskChanged {
        /// The replica running it.
        origin: String,
        /// The task as it is now.
        record: Box<crate::tasks::TaskRecord>,
    },
    /// `tasks/cancel` for a task running on the replica `to` (already recorded
    /// `cancelled`): its handler stops.
    TaskCancel {
        /// The replica running the task.
        to: String,
        /// The task.
        task_id: String,
    },
    /// A third-party sign-in (`mcp::connect`) whose link a call on the replica `to` made
    /// ended on another replica (the browser's requests landed there): the waiting call
    /// goes on, and its client hears the elicitation completed.
    ConnectFinished {
        /// The replica whose call made the link.
        to: String,
        /// The link's reference.
        reference: String,
        /// Whether the flow ended with the user's tokens stored.
        ok: bool,
    },
    /// The replica that sent it has handled the message the replica `to` published with
    /// [`Envelope::ack`] `token` (see [`Cluster::publish_and_wait`]).
    Handled {
        /// The replica that published the message.
        to: String,
        /// The message's token (not named `ack`: the envelope's own field is).
        token: u64,
    },
}

impl BusMessage {
    /// The one replica the message is for, or `None` for all of them.
    pub fn recipient(&self) -> Option<&str> {
        match self {
            BusMessage::Answer { to, .. }
            | BusMessage::TaskInput { to, .. }
            | BusMessage::TaskCancel { to, .. }
            | BusMessage::ConnectFinished { to, .. }
            | BusMessage::Handled { to, .. } => Some(to),
            _ => None,
        }
    }

    /// Its `type`, as it travels.
    pub fn kind(&self) -> &'static str {
        match self {
            BusMessage::ListChanged { .. } => "list_changed",
            BusMessage::ResourceUpdated { .. } => "resource_updated",
            BusMessage::SessionChanged { .. } => "session_changed",
            BusMessage::SessionRemoved { .. } => "session_removed",
            BusMessage::Answer { .. } => "answer",
            BusMessage::TaskInput { .. } => "task_input",
            BusMessage::TaskChanged { .. } => "task_changed",
            BusMessage::TaskCancel { .. } => "task_cancel",
            BusMessage::ConnectFinished { .. } => "connect_finished",
            BusMessage::Handled { .. } => "handled",
        }
    }

    /// The replica that sent it, for broadcasts (a replica ignores its own).
    pub fn origin(&self) -> Option<&str> {
        match self {
            BusMessage::ListChanged { origin, .. }
            | BusMessage::ResourceUpdated { origin, .. }
            | BusMessage::SessionChanged { origin, .. }
            | BusMessage::SessionRemoved { origin, .. }
            | BusMessage::TaskChanged { origin, .. } => Some(origin),
            BusMessage::Answer { .. }
            | BusMessage::TaskInput { .. }
            | BusMessage::TaskCancel { .. }
            | BusMessage::ConnectFinished { .. }
            | BusMessage::Handled { .. } => None,
        }
    }
}

/// A bus message as it travels: the message, when it was sent, and the trace context of
/// the span that sent it. Its JSON is the message's with three optional fields beside `type`,
/// so a replica that does not know them still reads it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    /// The message.
    #[serde(flatten)]
    pub message: BusMessage,
    /// When it was published (Unix milliseconds; 0 when unknown): the bus's lag is
    /// measured from it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub sent_at_ms: u64,
    /// The W3C `traceparent` of the span that published it (with the `otel` feature and
    /// export on): the receiving replica's span continues that trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
    /// Set when the publisher waits until every replica has handled the message
    /// ([`Cluster::publish_and_wait`]): each one that hears it answers with
    /// [`BusMessage::Handled`] carrying this token, once its receivers have run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ack: Option<u64>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Envelope {
    /// Wraps a message to publish now, from inside the current span.
    pub fn new(message: BusMessage) -> Self {
        Envelope {
            message,
            sent_at_ms: crate::tasks::clock::now_ms(),
            #[cfg(feature = "otel")]
            traceparent: crate::telemetry::current_traceparent(),
            #[cfg(not(feature = "otel"))]
            traceparent: None,
            ack: None,
        }
    }
}

/// What one replica's bus subscription hears.
#[derive(Debug)]
pub enum Heard {
    /// A message published on the bus (by another replica, or by this one).
    Message(Envelope),
    /// The subscription is back after a break (Redis restarted, the link to it dropped):
    /// whatever was published meanwhile was lost, so receivers read the shared state again
    /// instead of waiting for messages that will not come.
    Resubscribed,
    /// The subscription broke (or was stopped): from now until [`Heard::Resubscribed`],
    /// messages may be missed, so nothing may be served on the strength of having heard
    /// of no change.
    Lost,
}

/// Receives what the bus hears for one replica.
pub type Deliver = Arc<dyn Fn(Heard) + Send + Sync>;

/// How replicas talk to each other, and how they tell who is alive.
pub trait Bus: Send + Sync + 'static {
    /// Sends a message: to every replica, or to its [`recipient`](BusMessage::recipient).
    /// Returns how many replicas received it, the sender's own subscription included (0
    /// for a recipient that is not listening): [`Cluster::publish_and_wait`] waits for as
    /// many acknowledgements.
    fn publish<'a>(&'a self, message: &'a Envelope) -> BoxFuture<'a, StoreResult<usize>>;
    /// Subscribes `replica` to its messages (broadcasts and its own) and resolves once the
    /// subscription is in place, so that nothing published afterwards is missed; from then
    /// on delivers them to `deliver`, in the order they were published, until `stop` is
    /// cancelled. A broken subscription is announced with [`Heard::Lost`] as soon as it is
    /// noticed (replicas stop trusting their copies of sessions until it is back), mended
    /// in the background and followed by [`Heard::Resubscribed`]. Fails when the first
    /// subscription cannot be made (within a bounded time). Must be called inside a Tokio
    /// runtime.
    fn listen<'a>(
        &'a self,
        replica: &'a str,
        deliver: Deliver,
        stop: CancellationToken,
    ) -> BoxFuture<'a, StoreResult<()>>;
    /// Says `replica` is alive for `ttl`.
    fn heartbeat<'a>(&'a self, replica: &'a str, ttl: Duration) -> BoxFuture<'a, StoreResult<()>>;
    /// Whether `replica` said it is alive within its ttl.
    fn is_alive<'a>(&'a self, replica: &'a str) -> BoxFuture<'a, StoreResult<bool>>;
    /// Says `replica` is leaving (a graceful stop).
    fn leave<'a>(&'a self, replica: &'a str) -> BoxFuture<'a, StoreResult<()>>;
}

/// How often a replica says it is alive.
pub const HEARTBEAT_EVERY: Duration = Duration::from_secs(1);
/// How long a heartbeat counts: a replica silent this long is dead.
pub const HEARTBEAT_TTL: Duration = Duration::from_secs(3);

/// What a receiver inside the crate hears from the bus.
#[derive(Clone, Copy, Debug)]
pub(crate) enum BusEvent<'a> {
    /// Another replica's message.
    Message(&'a BusMessage),
    /// The bus is back after a break: messages may have been lost, and the receiver reads
    /// again the shared state it keeps a copy of or acts on.
    Resubscribed,
    /// The bus broke: messages may be missed until it is back.
    Lost,
}

type Handler = std::sync::Weak<dyn Fn(BusEvent<'_>) + Send + Sync>;

/// A receiver of bus messages inside the crate (the server, a session table).
pub(crate) type BusHandler = Arc<dyn Fn(BusEvent<'_>) + Send + Sync>;

/// One replica's view of the shared state: its id, the stores and the bus. Cheap to clone.
///
/// ```
/// use mcp::cluster::memory::MemoryBackend;
///
/// // Two replicas in one process, sharing state in memory.
/// let backend = MemoryBackend::new();
/// let a = backend.replica();
/// let b = backend.replica();
/// assert_ne!(a.replica_id(), b.replica_id());
/// ```
#[derive(Clone)]
pub struct Cluster {
    inner: Arc<ClusterInner>,
}

struct ClusterInner {
    replica: String,
    sessions: Arc<dyn SessionStore>,
    events: Arc<dyn EventStore>,
    nonces: Arc<dyn NonceStore>,
    bus: Arc<dyn Bus>,
    tasks: Option<Arc<dyn crate::tasks::TaskStore>>,
    /// The backend itself, for layers above the cluster that keep their own shared
    /// records in it and recognise it by type (as `mcp::connect` does): the cluster
    /// knows nothing of them.
    backend: Option<Arc<dyn std::any::Any + Send + Sync>>,
    handlers: RwLock<Vec<Handler>>,
    /// Set once the bus listens for this replica and its heartbeat runs.
    started: tokio::sync::OnceCell<()>,
    stop: CancellationToken,
    /// What this replica knows of its own bus subscription.
    hearing: Hearing,
}

/// Whether a replica's bus listens, and the messages it published and waits to hear
/// handled ([`Cluster::publish_and_wait`]).
#[derive(Default)]
struct Hearing {
    /// Set when the bus subscribes, cleared when it breaks or stops.
    listening: AtomicBool,
    /// By token: where each replica's acknowledgement is counted.
    waiting: Mutex<HashMap<u64, mpsc::UnboundedSender<()>>>,
    next_ack: AtomicU64,
}

impl fmt::Debug for Cluster {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cluster")
            .field("replica", &self.inner.replica)
            .finish_non_exhaustive()
    }
}

impl Hearing {
    /// A replica (this one, or another over the bus) handled the message `ack`.
    fn handled(&self, ack: u64) {
        if let Some(tx) = self.waiting.lock().get(&ack) {
            let _ = tx.send(());
        }
    }
}

impl ClusterInner {
    /// The bus subscribed (again): it listens, unless the replica was stopped meanwhile.
    fn subscribed(&self) {
        self.hearing
            .listening
            .store(!self.stop.is_cancelled(), Ordering::Release);
    }
}

impl Drop for ClusterInner {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl Cluster {
    /// A replica with a fresh random id, on the given stores and bus.
    pub fn new(
        sessions: Arc<dyn SessionStore>,
        events: Arc<dyn EventStore>,
        nonces: Arc<dyn NonceStore>,
        bus: Arc<dyn Bus>,
    ) -> Self {
        Cluster {
            inner: Arc::new(ClusterInner {
                replica: format!("replica-{}", crate::util::random_token(12)),
                sessions,
                events,
                nonces,
                bus,
                tasks: None,
                backend: None,
                handlers: RwLock::new(Vec::new()),
                started: tokio::sync::OnceCell::new(),
                stop: CancellationToken::new(),
                hearing: Hearing::default(),
            }),
        }
    }

    /// The same replica with a shared task store: tasks created on any replica are read on
    /// every one (see [`crate::tasks`]). Call it before the replica starts.
    pub fn with_tasks(self, tasks: Arc<dyn crate::tasks::TaskStore>) -> Self {
        let mut inner = self.respawn();
        inner.tasks = Some(tasks);
        Cluster {
            inner: Arc::new(inner),
        }
    }

    /// The same replica, naming the backend its stores are on ([`MemoryBackend`] and
    /// `RedisBackend` name themselves), so that features with shared
    /// records of their own, such as `mcp::connect`'s pending links, find it. Call it
    /// before the replica starts.
    ///
    /// [`MemoryBackend`]: memory::MemoryBackend
    pub fn with_backend<B: std::any::Any + Send + Sync>(self, backend: Arc<B>) -> Self {
        let mut inner = self.respawn();
        inner.backend = Some(backend);
        Cluster {
            inner: Arc::new(inner),
        }
    }

    /// The backend this replica's stores are on, if it is a `B`.
    pub fn backend<B: std::any::Any + Send + Sync>(&self) -> Option<Arc<B>> {
        Arc::clone(self.inner.backend.as_ref()?)
            .downcast::<B>()
            .ok()
    }

    /// A copy of this replica's parts, not started.
    fn respawn(&self) -> ClusterInner {
        let i = &self.inner;
        ClusterInner {
            replica: i.replica.clone(),
            sessions: Arc::clone(&i.sessions),
            events: Arc::clone(&i.events),
            nonces: Arc::clone(&i.nonces),
            bus: Arc::clone(&i.bus),
            tasks: i.tasks.clone(),
            backend: i.backend.clone(),
            handlers: RwLock::new(i.handlers.read().clone()),
            // The old value stops what it started when it drops: this one starts
            // afresh.
            started: tokio::sync::OnceCell::new(),
            stop: CancellationToken::new(),
            hearing: Hearing::default(),
        }
    }

    /// The shared task store, if the replicas share one.
    pub fn tasks(&self) -> Option<&Arc<dyn crate::tasks::TaskStore>> {
        self.inner.tasks.as_ref()
    }

    /// This replica's id (random per process).
    pub fn replica_id(&self) -> &str {
        &self.inner.replica
    }

    /// The session store.
    pub fn sessions(&self) -> &Arc<dyn SessionStore> {
        &self.inner.sessions
    }

    /// The event store.
    pub fn events(&self) -> &Arc<dyn EventStore> {
        &self.inner.events
    }

    /// The used-nonce store.
    pub fn nonces(&self) -> &Arc<dyn NonceStore> {
        &self.inner.nonces
    }

    /// The bus.
    pub fn bus(&self) -> &Arc<dyn Bus> {
        &self.inner.bus
    }

    /// Registers a receiver of bus messages. It is held weakly: it stops receiving when
    /// its owner drops the `Arc`.
    pub(crate) fn on_message(&self, handler: &BusHandler) {
        let mut handlers = self.inner.handlers.write();
        handlers.retain(|h| h.strong_count() > 0);
        handlers.push(Arc::downgrade(handler));
    }

    /// Starts the replica's heartbeat and its bus listener, and returns once the bus
    /// listens (so no message another replica publishes from then on is missed). Once:
    /// later calls return at once, and calls made meanwhile wait for the first. Fails, and
    /// may be called again, when the bus cannot be subscribed to. Must be called inside a
    /// Tokio runtime; [`http::serve`](crate::transport::http::serve) and the CLI call it
    /// before they accept a request.
    pub async fn start(&self) -> StoreResult<()> {
        self.inner
            .started
            .get_or_try_init(|| self.join())
            .await
            .map(|_| ())
    }

    /// [`Cluster::start`] from code that cannot wait (a router built synchronously): the
    /// start runs on the current runtime, and a failure is logged. Requests served before
    /// it ends may miss other replicas' messages; await [`Cluster::start`] first to be
    /// sure.
    pub fn start_in_background(&self) {
        if self.inner.started.initialized() {
            return;
        }
        let cluster = self.clone();
        tokio::spawn(async move {
            if let Err(e) = cluster.start().await {
                tracing::error!(target: "mcp::cluster", error = %e, "cannot join the cluster");
            }
        });
    }

    /// The receivers registered now (those whose owners still hold them).
    fn receivers(inner: &ClusterInner) -> Vec<BusHandler> {
        inner
            .handlers
            .read()
            .iter()
            .filter_map(std::sync::Weak::upgrade)
            .collect()
    }

    async fn join(&self) -> StoreResult<()> {
        let weak = Arc::downgrade(&self.inner);
        let deliver: Deliver = Arc::new(move |heard: Heard| {
            let Some(inner) = weak.upgrade() else { return };
            let envelope = match heard {
                Heard::Message(envelope) => envelope,
                Heard::Resubscribed => {
                    tracing::info!(target: "mcp::cluster", replica = %inner.replica, "the bus listens again; reading the shared state anew for what was missed");
                    inner.subscribed();
                    for handler in Self::receivers(&inner) {
                        handler(BusEvent::Resubscribed);
                    }
                    return;
                }
                Heard::Lost => {
                    inner.hearing.listening.store(false, Ordering::Release);
                    for handler in Self::receivers(&inner) {
                        handler(BusEvent::Lost);
                    }
                    return;
                }
            };
            if let BusMessage::Handled { token, .. } = &envelope.message {
                inner.hearing.handled(*token);
                return;
            }
            if envelope.message.origin() == Some(inner.replica.as_str()) {
                // Its own message: handled here the moment it is heard.
                if let Some(ack) = envelope.ack {
                    inner.hearing.handled(ack);
                }
                return;
            }
            // Handlers run inside a span that continues the sender's trace.
            #[cfg(feature = "otel")]
            let span = crate::telemetry::bus_receive_span(&crate::telemetry::Received {
                kind: envelope.message.kind(),
                lag_ms: (envelope.sent_at_ms > 0)
                    .then(|| crate::tasks::clock::now_ms().saturating_sub(envelope.sent_at_ms)),
                traceparent: envelope.traceparent.as_deref(),
                replica: &inner.replica,
            });
            #[cfg(feature = "otel")]
            let _entered = span.enter();
            let message = envelope.message;
            for handler in Self::receivers(&inner) {
                handler(BusEvent::Message(&message));
            }
            // The publisher waits for this: every receiver here has run.
            if let (Some(ack), Some(origin)) = (envelope.ack, message.origin()) {
                publish_detached(
                    &inner.bus,
                    BusMessage::Handled {
                        to: origin.to_owned(),
                        token: ack,
                    },
                );
            }
        });
        self.inner
            .bus
            .listen(&self.inner.replica, deliver, self.inner.stop.clone())
            .await?;
        self.inner.subscribed();
        let bus = Arc::clone(&self.inner.bus);
        let replica = self.inner.replica.clone();
        let stop = self.inner.stop.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(HEARTBEAT_EVERY);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    _ = stop.cancelled() => break,
                }
                if let Err(e) = bus.heartbeat(&replica, HEARTBEAT_TTL).await {
                    tracing::warn!(target: "mcp::cluster", error = %e, "heartbeat failed");
                }
            }
            let _ = bus.leave(&replica).await;
        });
        tracing::info!(target: "mcp::cluster", replica = %self.inner.replica, "replica joined");
        Ok(())
    }

    /// Stops the heartbeat and the bus listener; the others see this replica gone once
    /// its heartbeat lapses ([`Cluster::leave`] tells them at once).
    pub fn stop(&self) {
        self.inner.stop.cancel();
        self.inner.hearing.listening.store(false, Ordering::Release);
    }

    /// Whether this replica's bus listens now: started, and not broken or stopped since.
    /// While it does, a change another replica publishes reaches this one's receivers.
    pub fn listening(&self) -> bool {
        self.inner.hearing.listening.load(Ordering::Acquire)
    }

    /// Stops, and tells the others this replica left (a graceful shutdown).
    pub async fn leave(&self) {
        self.stop();
        if let Err(e) = self.inner.bus.leave(&self.inner.replica).await {
            tracing::warn!(target: "mcp::cluster", error = %e, "could not say goodbye");
        }
    }

    /// Publishes a message, stamped with the time and the current span's trace context.
    /// Returns how many replicas received it.
    pub async fn publish(&self, message: BusMessage) -> StoreResult<usize> {
        self.inner.bus.publish(&Envelope::new(message)).await
    }

    /// Publishes a broadcast message (one with an [`origin`](BusMessage::origin); any other
    /// is published without waiting) and waits, at most `bound`, until every replica that
    /// received it has handled it: each one's receivers have run (a session removed there
    /// is gone, a change is applied). Returns how many replicas received it, this one
    /// included. A replica that does not answer within `bound` (its link half-open, say)
    /// is waited for no longer.
    pub async fn publish_and_wait(
        &self,
        message: BusMessage,
        bound: Duration,
    ) -> StoreResult<usize> {
        // Only a broadcast says whom to acknowledge to; anything else is sent as it is.
        if message.origin().is_none() {
            return self.publish(message).await;
        }
        let inner = &self.inner;
        let ack = inner.hearing.next_ack.fetch_add(1, Ordering::Relaxed);
        let (tx, mut handled) = mpsc::unbounded_channel();
        inner.hearing.waiting.lock().insert(ack, tx);
        // However this ends (answered, timed out, or the caller dropped), the token goes.
        struct Forget<'a>(&'a Hearing, u64);
        impl Drop for Forget<'_> {
            fn drop(&mut self) {
                self.0.waiting.lock().remove(&self.1);
            }
        }
        let _forget = Forget(&inner.hearing, ack);
        let mut envelope = Envelope::new(message);
        envelope.ack = Some(ack);
        let received = inner.bus.publish(&envelope).await?;
        let all_handled = async {
            for _ in 0..received {
                if handled.recv().await.is_none() {
                    break;
                }
            }
        };
        if tokio::time::timeout(bound, all_handled).await.is_err() {
            tracing::warn!(target: "mcp::cluster", kind = envelope.message.kind(), received, waited = ?bound, "not every replica acknowledged a change within session_recheck: a replica's Redis link may be half-open (it stops serving session copies once it notices), or an older version that does not acknowledge is still running");
        }
        Ok(received)
    }

    /// Publishes a message from a synchronous context (a spawned task; nothing when no
    /// runtime is running). Failures are logged.
    pub(crate) fn publish_detached(&self, message: BusMessage) {
        publish_detached(&self.inner.bus, message);
    }
}

/// [`Cluster::publish_detached`] on `bus`.
fn publish_detached(bus: &Arc<dyn Bus>, message: BusMessage) {
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        tracing::warn!(target: "mcp::cluster", "no runtime to publish a bus message from");
        return;
    };
    let bus = Arc::clone(bus);
    // Stamped here, in the caller's span, not in the spawned task.
    let envelope = Envelope::new(message);
    handle.spawn(async move {
        if let Err(e) = bus.publish(&envelope).await {
            tracing::warn!(target: "mcp::cluster", error = %e, "could not publish to the other replicas");
        }
    });
}

/// Whether `pos` is a well-formed event position (`<digits>-<digits>`).
#[cfg(any(feature = "http", test))]
pub(crate) fn valid_pos(pos: &str) -> bool {
    pos.split_once('-').is_some_and(|(a, b)| {
        !a.is_empty()
            && !b.is_empty()
            && a.len() <= 20
            && b.len() <= 20
            && a.bytes().all(|c| c.is_ascii_digit())
            && b.bytes().all(|c| c.is_ascii_digit())
    })
}

/// Orders two valid positions.
pub(crate) fn pos_key(pos: &str) -> (u64, u64) {
    let (a, b) = pos.split_once('-').unwrap_or(("0", "0"));
    (a.parse().unwrap_or(0), b.parse().unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_are_checked() {
        for ok in ["0-0", "1712345678901-3"] {
            assert!(valid_pos(ok), "{ok}");
        }
        for bad in [
            "",
            "1",
            "-1",
            "1-",
            "a-1",
            "1-1-1",
            "1--1",
            "99999999999999999999999-1",
        ] {
            assert!(!valid_pos(bad), "{bad}");
        }
        assert!(pos_key("2-0") > pos_key("1-9"));
    }

    #[test]
    fn records_apply_changes() {
        let mut r = SessionRecord::default();
        r.apply(&SessionChange::Subscribe { uri: "a".into() });
        r.apply(&SessionChange::Subscribe { uri: "a".into() });
        r.apply(&SessionChange::Subscribe { uri: "b".into() });
        r.apply(&SessionChange::Unsubscribe { uri: "a".into() });
        r.apply(&SessionChange::LogLevel {
            level: "debug".into(),
        });
        r.apply(&SessionChange::Ready);
        assert_eq!(r.subscriptions, vec!["b".to_owned()]);
        assert_eq!(r.log_level.as_deref(), Some("debug"));
        assert!(r.initialized);
        let m = BusMessage::SessionChanged {
            origin: "x".into(),
            session: "s".into(),
            change: SessionChange::Subscribe { uri: "u".into() },
        };
        let text = serde_json::to_string(&m).unwrap();
        assert_eq!(serde_json::from_str::<BusMessage>(&text).unwrap(), m);
    }

    #[test]
    fn a_finished_connect_flow_is_addressed_to_the_replica_that_made_the_link() {
        let m = BusMessage::ConnectFinished {
            to: "replica-a".into(),
            reference: "r".into(),
            ok: true,
        };
        assert_eq!(m.recipient(), Some("replica-a"));
        assert_eq!(m.origin(), None);
        let text = serde_json::to_value(Envelope {
            message: m.clone(),
            sent_at_ms: 0,
            traceparent: None,
            ack: None,
        })
        .unwrap();
        assert_eq!(
            text,
            serde_json::json!({"type": "connect_finished", "to": "replica-a", "reference": "r", "ok": true})
        );
        assert_eq!(serde_json::from_value::<Envelope>(text).unwrap().message, m);
    }

    #[test]
    fn a_message_to_acknowledge_and_its_acknowledgement_travel_intact() {
        let mut removed = Envelope::new(BusMessage::SessionRemoved {
            origin: "replica-a".into(),
            session: "s".into(),
        });
        removed.ack = Some(7);
        let handled = Envelope::new(BusMessage::Handled {
            to: "replica-a".into(),
            token: 7,
        });
        assert_eq!(handled.message.recipient(), Some("replica-a"));
        for e in [removed, handled] {
            let text = serde_json::to_string(&e).unwrap();
            assert_eq!(
                serde_json::from_str::<Envelope>(&text).unwrap(),
                e,
                "{text}"
            );
        }
    }

    #[tokio::test]
    async fn publish_and_wait_returns_once_every_listening_replica_handled_the_message() {
        use std::sync::atomic::AtomicUsize;
        let backend = memory::MemoryBackend::new();
        let replicas: Vec<Cluster> = (0..3).map(|_| backend.replica()).collect();
        let heard = Arc::new(AtomicUsize::new(0));
        let mut handlers = Vec::new();
        for r in &replicas {
            let heard = Arc::clone(&heard);
            let handler: BusHandler = Arc::new(move |event| {
                if let BusEvent::Message(BusMessage::SessionRemoved { .. }) = event {
                    heard.fetch_add(1, Ordering::SeqCst);
                }
            });
            r.on_message(&handler);
            handlers.push(handler);
            r.start().await.unwrap();
            assert!(r.listening());
        }
        let removed = || BusMessage::SessionRemoved {
            origin: replicas[0].replica_id().to_owned(),
            session: "s".into(),
        };
        let bound = Duration::from_secs(5);
        let started = tokio::time::Instant::now();
        let received = replicas[0]
            .publish_and_wait(removed(), bound)
            .await
            .unwrap();
        assert_eq!(received, 3);
        // Both others ran their receivers before it returned (the publisher's own are
        // not run for its own message), and nobody waited for the bound.
        assert_eq!(heard.load(Ordering::SeqCst), 2);
        assert!(started.elapsed() < bound / 2, "{:?}", started.elapsed());
        assert!(
            replicas[0].inner.hearing.waiting.lock().is_empty(),
            "a token was kept"
        );

        // A replica whose subscription is gone is not waited for; one that stopped says
        // it no longer listens.
        backend.cut_bus(replicas[2].replica_id());
        replicas[1].stop();
        assert!(!replicas[1].listening());
        // Its listener ends on its next poll.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let started = tokio::time::Instant::now();
        let received = replicas[0]
            .publish_and_wait(removed(), bound)
            .await
            .unwrap();
        assert!(received <= 2, "{received}");
        assert!(started.elapsed() < bound / 2, "{:?}", started.elapsed());
    }
}
