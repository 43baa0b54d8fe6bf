//! Handshake-era sessions shared by the replicas of a [`Cluster`] ([`ClusterSessions`], the
//! cluster's [`SessionBackend`]): what a replica does beyond its own session table when
//! the server was built with one.
//!
//! - A request reads the session's record from the [`SessionStore`] (one round trip,
//!   which also extends its life) and brings the local copy up to date, creating it
//!   (rehydrating) when this replica has none. Changes a request makes (log level,
//!   subscriptions, `initialized`) are written back before its response is sent, and the
//!   ones that matter to this replica's copies are told to the other replicas.
//! - A copy read from the store less than `session_recheck` ago is served without reading
//!   the record again, while this replica's bus listens and has heard no session change
//!   since: every change and removal is published, and the replica that made it answers
//!   its client only once every replica has applied it (or `session_recheck` has passed,
//!   after which no copy read before the change is served again). A client that changed
//!   or deleted its session on one replica never finds the old one on another; what the
//!   store loses without a message (a flush, an eviction) is noticed within
//!   `session_recheck`, and a bus that breaks stops the shortcut at once.
//! - Every event of a POST stream and of the GET stream is appended to the
//!   [`EventStore`]; its SSE id is `<stream>-<position>`, so `Last-Event-ID` can be resumed
//!   on any replica, which replays from the store and follows the stream until it ends.
//! - A question the server asks (elicitation, sampling, roots) is recorded as parked on
//!   this replica before it is sent. The client's answer is taken from the store once
//!   (whoever takes it routes it) and delivered here, or published to the replica holding
//!   it. If that replica is dead, the call it was serving is closed on its stream: an
//!   approval question with the deny, anything else with an error, so nothing hangs.
//!
//! [`SessionStore`]: crate::cluster::SessionStore
//! [`EventStore`]: crate::cluster::EventStore

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{HeaderValue, StatusCode};
use axum::response::Response;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::auth::Principal;
use crate::cluster::{
    BusEvent, BusMessage, Cluster, ParkedAsk, SessionChange, SessionRecord, StoreError, StreamCall,
    StreamInfo, valid_pos,
};
use crate::layers::BoxFuture;
use crate::protocol::jsonrpc::{Incoming, decode, encode_error, encode_result};
use crate::protocol::{
    CallToolResult, ClientCapabilities, ErrorObject, Implementation, LoggingLevel, Message,
    ProtocolVersion, RequestId, methods,
};
use crate::server::Server;
use crate::server::{Connection, Reply};
use crate::transport::http::guard::bad_request;
use crate::transport::http::guard::rpc_error;
use crate::transport::http::sse_body::message_event;
use crate::transport::streamable_http::errors::with_session;
use crate::transport::streamable_http::errors::{already_open, session_not_found, sessions_full};
use crate::transport::streamable_http::exchange::{LIVE_CAPACITY, StreamLog};
use crate::transport::streamable_http::session::{
    AlreadyOpen, Full, Lookup, Opened, STANDALONE, Session, SessionBackend, SessionTable,
};

/// What a replica's session table shares, and how.
pub(crate) struct Shared {
    /// The other replicas and the stores.
    pub(crate) cluster: Cluster,
    /// How long a session lives unused (the transport's `session_idle_timeout`).
    pub(crate) ttl: Duration,
    /// Events kept per session (the transport's `event_store_size`).
    pub(crate) max_events: usize,
    /// How long a copy read from the store is served without reading it again (the
    /// transport's `session_recheck`, at most half the ttl; zero: every request reads).
    pub(crate) recheck: Duration,
    /// Counts what the bus told this replica about sessions, and its breaks: a copy read
    /// at another generation may have missed a change.
    generation: AtomicU64,
}

impl Shared {
    /// What the bus has heard so far.
    fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Something was heard (or may have been missed): copies read before are read again.
    fn advance(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    /// Records that `session` was read from the store at `at`, when the bus's generation
    /// was `generation`: unless something was heard since, the copy is current.
    fn read_at(&self, session: &Session, at: Instant, generation: u64) {
        if self.generation() == generation {
            *session.read.lock() = Some((at, generation));
        }
    }

    /// Whether `session` may be served as this replica holds it, without the store.
    fn current(&self, session: &Session) -> bool {
        if self.recheck.is_zero() || !self.cluster.listening() {
            return false;
        }
        match *session.read.lock() {
            Some((at, generation)) => {
                generation == self.generation() && at.elapsed() < self.recheck
            }
            None => false,
        }
    }

    /// Publishes a change to a session (or its removal) and, when copies are served
    /// without the store, waits until every replica applied it (at most `recheck`, after
    /// which none serves a copy read before it).
    async fn announce(&self, message: BusMessage) -> Result<usize, StoreError> {
        if self.recheck.is_zero() {
            self.cluster.publish(message).await
        } else {
            self.cluster.publish_and_wait(message, self.recheck).await
        }
    }
}

/// Sessions shared by the replicas of a cluster.
pub(crate) struct ClusterSessions(Arc<Shared>);

impl ClusterSessions {
    /// The backend of a table whose sessions live `ttl` unused and keep `max_events`,
    /// serving a copy read less than `recheck` ago without the store.
    pub(crate) fn new(
        cluster: Cluster,
        ttl: Duration,
        max_events: usize,
        recheck: Duration,
    ) -> Self {
        ClusterSessions(Arc::new(Shared {
            cluster,
            ttl,
            max_events,
            // A session in use is read at least twice per ttl, which keeps its record alive.
            recheck: recheck.min(ttl / 2),
            generation: AtomicU64::new(0),
        }))
    }
}

impl SessionBackend for ClusterSessions {
    fn attach(&self, table: Weak<SessionTable>) -> Option<crate::cluster::BusHandler> {
        let shared = Arc::clone(&self.0);
        let handler: crate::cluster::BusHandler = Arc::new(move |event| {
            let Some(table) = table.upgrade() else { return };
            match event {
                BusEvent::Message(m) => on_bus(&table, &shared, m),
                BusEvent::Resubscribed => {
                    shared.advance();
                    tokio::spawn(reconcile(table, Arc::clone(&shared)));
                }
                BusEvent::Lost => shared.advance(),
            }
        });
        self.0.cluster.on_message(&handler);
        Some(handler)
    }

    fn lookup<'a>(
        &'a self,
        table: &'a Arc<SessionTable>,
        server: &'a Server,
        id: &'a str,
        principal: Option<&'a Principal>,
    ) -> Lookup<'a> {
        futures::future::Either::Right(Box::pin(lookup(table, server, &self.0, id, principal)))
    }

    fn created<'a>(&'a self, session: &'a Session) -> BoxFuture<'a, Result<(), Response>> {
        Box::pin(async move {
            save_new(&self.0, session)
                .await
                .map_err(|e| unavailable(&e))
        })
    }

    fn deliver<'a>(&'a self, session: &'a Session, message: Message) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            match message {
                message @ Message::Response(_) => route_answer(session, &self.0, message).await,
                message => {
                    let before = snapshot(&session.conn);
                    let _ = session.conn.handle(message).await;
                    save_changes(session, &self.0, before).await;
                }
            }
        })
    }

    fn stream_log(
        &self,
        session: &Arc<Session>,
        priming: Option<Duration>,
        requests: &[Message],
    ) -> Box<dyn StreamLog> {
        Box::new(ClusterLog::new(
            Arc::clone(session),
            Arc::clone(&self.0),
            priming,
            requests,
        ))
    }

    fn open_get<'a>(
        &'a self,
        session: &'a Arc<Session>,
        last_event_id: Option<&'a str>,
        priming: Option<Duration>,
    ) -> BoxFuture<'a, Result<Opened, Response>> {
        Box::pin(async move {
            match last_event_id {
                None => {
                    let cursor = standalone_cursor(session, &self.0).await;
                    match session.open_standalone_at(priming, Some(&cursor)) {
                        Ok(rx) => Ok((rx, true)),
                        Err(AlreadyOpen) => Err(already_open(session)),
                    }
                }
                Some(text) => {
                    let Some((stream, pos)) = parse_cursor(text) else {
                        return Err(bad_request(format!(
                            "Bad Request: Last-Event-ID {text:?} is not an event id of this server"
                        )));
                    };
                    match resume(session, &self.0, stream, pos).await {
                        Ok(rx) => Ok((rx, stream == STANDALONE)),
                        Err(r) => Err(with_session(r, session)),
                    }
                }
            }
        })
    }

    fn remove<'a>(
        &'a self,
        table: &'a SessionTable,
        id: &'a str,
    ) -> BoxFuture<'a, Result<(), Response>> {
        Box::pin(async move {
            remove(table, &self.0, id)
                .await
                .map_err(|e| unavailable(&e))
        })
    }

    fn push<'a>(&'a self, session: &'a Session, frame: String) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            // Every replica holding a copy of the session gets the notification; the one
            // holding its GET stream delivers it.
            if session.has_live(STANDALONE) {
                publish(session, &self.0, STANDALONE, &frame, None).await;
            }
        })
    }

    fn keep_alive<'a>(&'a self, busy: Vec<Arc<str>>) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            // A session with a request running or a stream open here stays alive
            // everywhere, as a local one does.
            for id in busy {
                if let Err(e) = self.0.cluster.sessions().touch(&id, self.0.ttl).await {
                    tracing::warn!(target: "mcp::cluster", error = %e, "could not extend a busy session's life");
                }
            }
        })
    }
}

/// What another replica said about a session this one may hold a copy of. A removal or a
/// change makes every copy read before it be read again.
fn on_bus(table: &SessionTable, shared: &Shared, message: &BusMessage) {
    match message {
        BusMessage::SessionRemoved { session, .. } => {
            shared.advance();
            table.remove(session);
        }
        BusMessage::SessionChanged {
            session, change, ..
        } => {
            shared.advance();
            if let Some(s) = table.get_any(session) {
                apply_change(&s.conn, change);
            }
        }
        BusMessage::Answer { session, frame, .. } => match table.get_any(session) {
            Some(s) => deliver_routed(&s, frame),
            None => {
                tracing::debug!(target: "mcp::cluster", "an answer for a session this replica no longer holds; its question closed with it");
            }
        },
        _ => {}
    }
}

/// After the bus was away: a session removed or changed elsewhere meanwhile was not heard
/// of, so every copy held here is checked against its shared record (which extends the
/// record's life by a ttl, as any use here would): a removed one ends its streams and
/// running requests here, a changed one takes the change.
async fn reconcile(table: Arc<SessionTable>, shared: Arc<Shared>) {
    for id in table.ids() {
        match shared.cluster.sessions().load(&id, shared.ttl).await {
            Ok(None) => {
                table.remove(&id);
            }
            Ok(Some(record)) => {
                if let Some(s) = table.get_any(&id) {
                    apply_record(&s, &record);
                }
            }
            Err(e) => {
                // Its next request reads the record again.
                tracing::warn!(target: "mcp::cluster", error = %e, "could not check a session against the store after the bus came back");
            }
        }
    }
}

/// Brings this replica's copy of a session up to date with the shared record.
fn apply_record(session: &Session, record: &SessionRecord) {
    let version = record
        .version
        .as_deref()
        .and_then(|v| v.parse::<ProtocolVersion>().ok());
    apply_to_conn(&session.conn, record, version);
}

/// How often a resumed stream that runs elsewhere is checked for new events.
const FOLLOW_EVERY: Duration = Duration::from_millis(100);
/// How often a followed stream's replica is checked for life.
const LIVENESS_EVERY: u32 = 10;

/// 503 when the shared store cannot be reached: the request is not served blind.
pub(crate) fn unavailable(e: &StoreError) -> Response {
    tracing::error!(target: "mcp::cluster", error = %e, "session store unavailable");
    let mut r = rpc_error(
        StatusCode::SERVICE_UNAVAILABLE,
        crate::protocol::codes::INTERNAL_ERROR,
        "Service Unavailable: the shared session store cannot be reached; try again shortly",
    );
    r.headers_mut().insert(
        axum::http::header::RETRY_AFTER,
        HeaderValue::from_static("1"),
    );
    r
}

/// The session named by the request, from the shared store, owned by its principal; 404
/// when it is gone everywhere.
#[allow(clippy::result_large_err)]
async fn lookup(
    table: &Arc<SessionTable>,
    server: &Server,
    shared: &Shared,
    id: &str,
    principal: Option<&Principal>,
) -> Result<Arc<Session>, Response> {
    if let Some(session) = table.get(id)
        && shared.current(&session)
    {
        if !session.owned_by(principal) {
            return Err(session_not_found());
        }
        session.touch();
        return Ok(session);
    }
    // Read before the store is: a change heard meanwhile leaves the copy to be read again.
    let (read_at, generation) = (Instant::now(), shared.generation());
    let record = shared
        .cluster
        .sessions()
        .load(id, shared.ttl)
        .await
        .map_err(|e| unavailable(&e))?;
    let Some(record) = record else {
        // Deleted or expired elsewhere: this replica's copy goes too.
        table.remove(id);
        return Err(session_not_found());
    };
    let owned = match (&record.owner, principal) {
        (None, None) => true,
        (Some(o), Some(p)) => o.subject == p.subject && o.issuer == p.issuer,
        _ => false,
    };
    if !owned {
        return Err(session_not_found());
    }
    let session = match table.get(id) {
        Some(s) => {
            apply_record(&s, &record);
            s
        }
        None => match table.rehydrate(server, id, &record) {
            Ok(s) => {
                apply_record(&s, &record);
                s
            }
            Err(Full(max)) => return Err(sessions_full(max)),
        },
    };
    shared.read_at(&session, read_at, generation);
    session.touch();
    Ok(session)
}

/// Records a session whose `initialize` just succeeded on this replica.
pub(crate) async fn save_new(shared: &Shared, session: &Session) -> Result<(), StoreError> {
    let (written_at, generation) = (Instant::now(), shared.generation());
    let state = session.conn.state();
    let mut record = SessionRecord {
        conn_id: session.conn.id().as_str().to_owned(),
        owner: session.owner(),
        ..SessionRecord::default()
    };
    {
        let s = state.session.read();
        record.version = state.version().map(|v| v.as_str().to_owned());
        record.capabilities = s
            .capabilities
            .as_ref()
            .and_then(|c| serde_json::to_value(&**c).ok());
        record.client_info = s
            .client_info
            .as_ref()
            .and_then(|i| serde_json::to_value(i).ok());
        record.initialized = s.initialized;
    }
    shared
        .cluster
        .sessions()
        .create(&session.id, &record, shared.ttl)
        .await?;
    shared.read_at(session, written_at, generation);
    Ok(())
}

/// Brings a connection's state up to date with a shared record.
pub(crate) fn apply_to_conn(
    conn: &Connection,
    record: &SessionRecord,
    version: Option<ProtocolVersion>,
) {
    let state = conn.state();
    {
        let mut s = state.session.write();
        // Capabilities and client info never change after initialize.
        if s.capabilities.is_none()
            && let Some(c) = &record.capabilities
        {
            s.capabilities = serde_json::from_value::<ClientCapabilities>(c.clone())
                .ok()
                .map(Arc::new);
        }
        if s.client_info.is_none()
            && let Some(i) = &record.client_info
        {
            s.client_info = serde_json::from_value::<Implementation>(i.clone()).ok();
        }
        if let Some(level) = record.log_level.as_deref().and_then(|l| l.parse().ok()) {
            s.log_level = level;
        }
        s.initialized |= record.initialized;
    }
    // After the capabilities: whoever sees the version sees them too.
    if let Some(v) = version {
        state.version.set(v);
    }
    *state.subscriptions.lock() = record.subscriptions.iter().cloned().collect();
}

/// Applies a change another replica made to a session this one holds a copy of.
pub(crate) fn apply_change(conn: &Connection, change: &SessionChange) {
    let state = conn.state();
    match change {
        SessionChange::LogLevel { level } => {
            if let Ok(level) = level.parse::<LoggingLevel>() {
                state.session.write().log_level = level;
            }
        }
        SessionChange::Subscribe { uri } => {
            state.subscriptions.lock().insert(uri.clone());
        }
        SessionChange::Unsubscribe { uri } => {
            state.subscriptions.lock().remove(uri);
        }
        SessionChange::Ready => state.session.write().initialized = true,
        // The record is read again by the next request anyway.
        SessionChange::Initialized { .. } => {}
    }
}

/// What a request may change in a session's record.
pub(crate) struct Snapshot {
    level: LoggingLevel,
    subscriptions: HashSet<String>,
    initialized: bool,
}

pub(crate) fn snapshot(conn: &Connection) -> Snapshot {
    let state = conn.state();
    let (level, initialized) = {
        let s = state.session.read();
        (s.log_level, s.initialized)
    };
    Snapshot {
        level,
        subscriptions: state.subscriptions.lock().clone(),
        initialized,
    }
}

/// Writes what changed since `before` to the store, and tells the other replicas the
/// changes a GET stream depends on. Called before the response is sent, so the client's
/// next request, wherever it lands, sees them.
pub(crate) async fn save_changes(session: &Session, shared: &Shared, before: Snapshot) {
    let after = snapshot(&session.conn);
    let mut changes = Vec::new();
    if after.level != before.level {
        changes.push(SessionChange::LogLevel {
            level: after.level.to_string(),
        });
    }
    for uri in after.subscriptions.difference(&before.subscriptions) {
        changes.push(SessionChange::Subscribe { uri: uri.clone() });
    }
    for uri in before.subscriptions.difference(&after.subscriptions) {
        changes.push(SessionChange::Unsubscribe { uri: uri.clone() });
    }
    if after.initialized && !before.initialized {
        changes.push(SessionChange::Ready);
    }
    for change in changes {
        if let Err(e) = shared.cluster.sessions().update(&session.id, &change).await {
            tracing::error!(target: "mcp::cluster", error = %e, "could not save a session change");
            continue;
        }
        if !matches!(change, SessionChange::Ready) {
            let message = BusMessage::SessionChanged {
                origin: shared.cluster.replica_id().to_owned(),
                session: session.id.to_string(),
                change,
            };
            if let Err(e) = shared.announce(message).await {
                tracing::warn!(target: "mcp::cluster", error = %e, "could not tell the other replicas about a session change");
            }
        }
    }
}

/// The id of a request the server is sending the client (`{"id":"mcp-...","method":...}`).
fn outgoing_request_id(frame: &str) -> Option<String> {
    if !(frame.contains("\"method\"") && frame.contains("\"id\"")) {
        return None;
    }
    #[derive(serde::Deserialize)]
    struct Probe {
        id: Option<Value>,
        method: Option<serde::de::IgnoredAny>,
    }
    let probe: Probe = serde_json::from_str(frame).ok()?;
    probe.method?;
    match probe.id? {
        Value::String(id) => Some(id),
        _ => None,
    }
}

/// Stores a frame of `stream` and sends it on its live response here, if there is one. A
/// request to the client is first recorded as parked on this replica (into `parked`), so
/// that its answer can be routed here from any replica.
pub(crate) async fn publish(
    session: &Session,
    shared: &Shared,
    stream: u64,
    frame: &str,
    parked: Option<&mut Vec<String>>,
) {
    if let Some(parked) = parked
        && let Some(id) = outgoing_request_id(frame)
    {
        let ask = ParkedAsk {
            replica: shared.cluster.replica_id().to_owned(),
            stream,
            approval: session.conn.state().pending.lock().is_approval(&id),
            #[cfg(feature = "otel")]
            traceparent: crate::telemetry::traceparent_of_frame(frame),
            #[cfg(not(feature = "otel"))]
            traceparent: None,
        };
        match shared.cluster.sessions().park(&session.id, &id, &ask).await {
            Ok(()) => parked.push(id),
            // Its answer will not be found: the question times out and the call is denied.
            Err(e) => {
                tracing::error!(target: "mcp::cluster", error = %e, "could not record a parked question");
            }
        }
    }
    let pos = match shared
        .cluster
        .events()
        .append(&session.id, stream, frame, shared.max_events)
        .await
    {
        Ok(pos) => Some(pos),
        Err(e) => {
            tracing::warn!(target: "mcp::cluster", error = %e, "could not store an event; it cannot be resumed");
            None
        }
    };
    let id = pos.map(|p| format!("{stream}-{p}"));
    session.send_live(stream, message_event(id.as_deref(), frame));
}

/// Opens a POST stream: a number from the store, a record of who serves which calls, and
/// the live response here.
async fn open_stream(
    session: &Session,
    shared: &Shared,
    live: mpsc::Sender<Bytes>,
    priming: Option<Duration>,
    calls: &[StreamCall],
) -> u64 {
    let stream = match shared.cluster.sessions().next_stream(&session.id).await {
        Ok(n) => n,
        Err(e) => {
            tracing::error!(target: "mcp::cluster", error = %e, "could not number a stream; it will not be resumable elsewhere");
            // Far above any number the store hands out.
            (1 << 62) + u64::from(rand_u32())
        }
    };
    let info = StreamInfo {
        replica: shared.cluster.replica_id().to_owned(),
        calls: calls.to_vec(),
    };
    if let Err(e) = shared
        .cluster
        .sessions()
        .open_stream(&session.id, stream, &info)
        .await
    {
        tracing::warn!(target: "mcp::cluster", error = %e, "could not record a running stream");
    }
    let cursor = format!("{stream}-0-0");
    session.attach_live(stream, live, priming.map(|retry| (cursor.as_str(), retry)));
    stream
}

fn rand_u32() -> u32 {
    let mut b = [0u8; 4];
    let _ = getrandom::fill(&mut b);
    u32::from_le_bytes(b)
}

/// The calls a POST carries, for its stream's record.
pub(crate) fn calls_of(requests: &[Message]) -> Vec<StreamCall> {
    #[derive(serde::Deserialize)]
    struct Name {
        name: String,
    }
    requests
        .iter()
        .filter_map(|m| match m {
            Message::Request(r) => Some(StreamCall {
                id: serde_json::to_value(&r.id).unwrap_or(Value::Null),
                tool: (r.method == methods::TOOLS_CALL)
                    .then(|| {
                        r.params
                            .as_ref()
                            .and_then(|p| serde_json::from_str::<Name>(p.get()).ok())
                            .map(|n| n.name)
                    })
                    .flatten(),
                traceparent: None,
            }),
            _ => None,
        })
        .collect()
}

/// The stream of a session shared by replicas: every event stored in the shared log,
/// every question recorded as parked here, the session's changes saved before the answer.
pub(crate) struct ClusterLog {
    session: Arc<Session>,
    shared: Arc<Shared>,
    priming: Option<Duration>,
    calls: Vec<StreamCall>,
    before: Option<Snapshot>,
    stream: Option<u64>,
    parked: Vec<String>,
}

impl ClusterLog {
    /// The log of an exchange about to run `requests` (what the session holds now is
    /// remembered, to save what they change).
    pub(crate) fn new(
        session: Arc<Session>,
        shared: Arc<Shared>,
        priming: Option<Duration>,
        requests: &[Message],
    ) -> Self {
        ClusterLog {
            before: Some(snapshot(&session.conn)),
            calls: calls_of(requests),
            session,
            shared,
            priming,
            stream: None,
            parked: Vec::new(),
        }
    }
}

impl StreamLog for ClusterLog {
    fn open(&mut self, live: mpsc::Sender<Bytes>) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            // The calls' spans exist by now: a replica that resumes the stream links to them.
            #[cfg(feature = "otel")]
            {
                let traces = self.session.conn.state().traces.lock();
                for call in &mut self.calls {
                    call.traceparent = serde_json::from_value::<RequestId>(call.id.clone())
                        .ok()
                        .and_then(|id| traces.get(&id).cloned());
                }
            }
            let id =
                open_stream(&self.session, &self.shared, live, self.priming, &self.calls).await;
            self.stream = Some(id);
        })
    }

    fn publish(&mut self, frame: String) -> BoxFuture<'_, bool> {
        Box::pin(async move {
            if let Some(id) = self.stream {
                publish(
                    &self.session,
                    &self.shared,
                    id,
                    &frame,
                    Some(&mut self.parked),
                )
                .await;
            }
            true
        })
    }

    fn settle(&mut self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if let Some(before) = self.before.take() {
                save_changes(&self.session, &self.shared, before).await;
            }
        })
    }

    fn finish(&mut self, replies: Vec<Reply>) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let Some(id) = self.stream else { return };
            let (session, shared) = (&self.session, &self.shared);
            // The stream's record is taken before its responses are stored: if another
            // replica took it (this one was thought dead), that one closed the calls and
            // its responses are the ones on the stream.
            match shared
                .cluster
                .sessions()
                .claim_stream(&session.id, id)
                .await
            {
                Ok(None) => {
                    tracing::warn!(target: "mcp::cluster", "another replica closed this stream's calls; dropping its responses");
                }
                claimed => {
                    if let Err(e) = claimed {
                        tracing::warn!(target: "mcp::cluster", error = %e, "could not take a stream's record");
                    }
                    for reply in replies {
                        publish(session, shared, id, &reply.into_frame(), None).await;
                    }
                    if let Err(e) = shared
                        .cluster
                        .events()
                        .finish(&session.id, id, shared.max_events)
                        .await
                    {
                        tracing::warn!(target: "mcp::cluster", error = %e, "could not store a stream's end");
                    }
                }
            }
            unpark_all(session, shared, &self.parked).await;
            session.finish(id);
        })
    }

    fn abandon(&mut self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            release(&self.session, &self.shared, self.stream, &self.parked).await;
        })
    }
}

/// Forgets the questions an exchange recorded: they were answered, timed out or dropped
/// with their call.
async fn unpark_all(session: &Session, shared: &Shared, parked: &[String]) {
    for id in parked {
        if let Err(e) = shared.cluster.sessions().unpark(&session.id, id).await {
            tracing::debug!(target: "mcp::cluster", error = %e, "could not forget a parked question");
        }
    }
}

/// An exchange stopped because its session closed: its records go.
async fn release(session: &Session, shared: &Shared, stream: Option<u64>, parked: &[String]) {
    unpark_all(session, shared, parked).await;
    if let Some(id) = stream {
        let _ = shared
            .cluster
            .sessions()
            .claim_stream(&session.id, id)
            .await;
    }
}

/// The client's answer to a question the server parked: taken from the store once, then
/// delivered here or routed to the replica holding the question; if that replica is dead,
/// the call it was serving is closed.
pub(crate) async fn route_answer(session: &Session, shared: &Shared, message: Message) {
    let Message::Response(response) = message else {
        return;
    };
    let RequestId::String(id) = &response.id else {
        tracing::debug!(target: "mcp::elicit", "ignoring a response to an id the server never sent");
        return;
    };
    // Owner check: only this session's questions are looked up.
    let ask = match shared.cluster.sessions().unpark(&session.id, id).await {
        Ok(Some(ask)) => ask,
        Ok(None) => {
            tracing::debug!(target: "mcp::elicit", "ignoring a stray, late or repeated answer");
            return;
        }
        Err(e) => {
            tracing::error!(target: "mcp::cluster", error = %e, "cannot look up a parked question; the answer is dropped and the question will time out");
            return;
        }
    };
    if ask.replica == shared.cluster.replica_id() {
        crate::elicit::deliver(session.conn.state(), response);
        return;
    }
    let frame = match &response.outcome {
        Ok(result) => encode_result(&response.id, result),
        Err(error) => encode_error(Some(&response.id), error),
    };
    // Published inside a span linked to the question's on the replica that asked: the
    // bus message carries this span's context, and that replica continues it.
    let message = BusMessage::Answer {
        to: ask.replica.clone(),
        session: session.id.to_string(),
        frame,
    };
    let published = publish_answer(shared, &ask.replica, message);
    #[cfg(feature = "otel")]
    let published = tracing::Instrument::instrument(
        published,
        crate::telemetry::answer_route_span(
            ask.traceparent.as_deref(),
            shared.cluster.replica_id(),
        ),
    );
    let delivered = published.await;
    if !delivered {
        tracing::warn!(target: "mcp::cluster", replica = %ask.replica, "the replica holding the question is gone; closing its call");
        adopt(shared, &session.id, ask.stream, vec![ask]).await;
    }
}

/// How often an answer nobody received is published again while its replica is alive.
const REPUBLISH_EVERY: Duration = Duration::from_millis(100);

/// Publishes an answer to the replica `to` holding its question; whether it got there.
/// Nobody receiving it does not make that replica dead: its bus connection may be coming
/// back (Redis restarted, or the link to it broke a moment), and while its heartbeat says
/// it is alive the answer is published again, for up to a heartbeat's life. Only then is
/// the call closed as a dead replica's, which would deny an approval the user gave.
async fn publish_answer(shared: &Shared, to: &str, message: BusMessage) -> bool {
    let alive = || async { shared.cluster.bus().is_alive(to).await.unwrap_or(false) };
    let deadline = tokio::time::Instant::now() + crate::cluster::HEARTBEAT_TTL;
    loop {
        match shared.cluster.publish(message.clone()).await {
            Ok(n) if n > 0 => return alive().await,
            Ok(_) => {
                if tokio::time::Instant::now() >= deadline || !alive().await {
                    return false;
                }
                tracing::debug!(target: "mcp::cluster", replica = %to, "nobody heard an answer; its replica is alive, publishing again");
                tokio::time::sleep(REPUBLISH_EVERY).await;
            }
            Err(e) => {
                tracing::error!(target: "mcp::cluster", error = %e, "could not route an answer");
                return false;
            }
        }
    }
}

/// An answer another replica routed here.
pub(crate) fn deliver_routed(session: &Session, frame: &str) {
    match decode(frame.as_bytes()) {
        Incoming::Single(Ok(Message::Response(response))) => {
            crate::elicit::deliver(session.conn.state(), response);
        }
        _ => {
            tracing::warn!(target: "mcp::cluster", "ignoring a routed answer that is not a response");
        }
    }
}

/// Closes the calls of a stream whose replica died: an approval question's call with the
/// deny, others with an error, each response stored on the stream, then its end. Exactly
/// one replica does it (the one that takes the stream's record). `taken` holds questions
/// of the stream the caller already took from the store.
pub(crate) async fn adopt(shared: &Shared, session: &str, stream: u64, taken: Vec<ParkedAsk>) {
    let store = shared.cluster.sessions();
    let info = match store.claim_stream(session, stream).await {
        Ok(Some(info)) => info,
        Ok(None) => return,
        Err(e) => {
            tracing::error!(target: "mcp::cluster", error = %e, "could not take an orphaned stream");
            return;
        }
    };
    let mut approval = taken.iter().any(|a| a.approval);
    if let Ok(asks) = store.parked_on(session, stream).await {
        for (request, _) in asks {
            if let Ok(Some(ask)) = store.unpark(session, &request).await {
                approval |= ask.approval;
            }
        }
    }
    tracing::warn!(target: "mcp::cluster", replica = %info.replica, calls = info.calls.len(), "closing the calls of a replica that stopped");
    for call in &info.calls {
        let Ok(id) = serde_json::from_value::<RequestId>(call.id.clone()) else {
            continue;
        };
        let reply = match (&call.tool, approval) {
            (Some(tool), true) => Reply::result(
                &id,
                &crate::auth::tool_denied(
                    tool,
                    "ask",
                    &format!(
                        "{}: the server replica holding the approval question stopped before it was answered; the tool did not run",
                        crate::auth::reasons::APPROVAL_UNAVAILABLE
                    ),
                ),
            ),
            (Some(_), false) => Reply::result(
                &id,
                &CallToolResult::error(
                    "replica_stopped: the server replica running this call stopped before it finished; its outcome is unknown",
                ),
            ),
            (None, _) => Reply::error(
                Some(&id),
                &ErrorObject::internal(
                    "Internal error: the server replica serving this request stopped before it answered; send it again",
                ),
            ),
        };
        if let Err(e) = shared
            .cluster
            .events()
            .append(session, stream, &reply.into_frame(), shared.max_events)
            .await
        {
            tracing::error!(target: "mcp::cluster", error = %e, "could not store a closing response");
        }
    }
    if let Err(e) = shared
        .cluster
        .events()
        .finish(session, stream, shared.max_events)
        .await
    {
        tracing::error!(target: "mcp::cluster", error = %e, "could not store a stream's end");
    }
}

/// A `Last-Event-ID` of a shared session: `<stream>-<position>`.
pub(crate) fn parse_cursor(text: &str) -> Option<(u64, String)> {
    let (stream, pos) = text.trim().split_once('-')?;
    let stream = stream.parse().ok()?;
    valid_pos(pos).then(|| (stream, pos.to_owned()))
}

/// The priming cursor of a new GET stream: after the session's newest event.
pub(crate) async fn standalone_cursor(session: &Session, shared: &Shared) -> String {
    let pos = shared
        .cluster
        .events()
        .tail(&session.id)
        .await
        .unwrap_or_else(|_| "0-0".to_owned());
    format!("{STANDALONE}-{pos}")
}

/// Resumes a stream of a shared session after `after`: the GET stream becomes live here
/// after its replay; a POST stream is replayed and followed in the store until it ends,
/// wherever it runs (and closed here if the replica running it is dead).
#[allow(clippy::result_large_err)]
pub(crate) async fn resume(
    session: &Arc<Session>,
    shared: &Arc<Shared>,
    stream: u64,
    after: String,
) -> Result<mpsc::Receiver<Bytes>, Response> {
    let replay = shared
        .cluster
        .events()
        .replay(&session.id, stream, &after)
        .await
        .map_err(|e| unavailable(&e))?;
    if stream == STANDALONE {
        let (tx, rx) = mpsc::channel(replay.events.len() + LIVE_CAPACITY);
        for e in &replay.events {
            let _ = tx.try_send(message_event(
                Some(&format!("{stream}-{}", e.pos)),
                &e.frame,
            ));
        }
        session.attach_live(STANDALONE, tx, None);
        return Ok(rx);
    }
    let running = shared
        .cluster
        .sessions()
        .stream_info(&session.id, stream)
        .await
        .map_err(|e| unavailable(&e))?;
    if replay.events.is_empty() && !replay.finished && running.is_none() && after == "0-0" {
        return Err(bad_request(format!(
            "Bad Request: Last-Event-ID names no stream of this session (stream {stream})"
        )));
    }
    let (tx, rx) = mpsc::channel(LIVE_CAPACITY + replay.events.len());
    #[cfg(feature = "otel")]
    let span = crate::telemetry::stream_resume_span(
        running
            .iter()
            .flat_map(|info| &info.calls)
            .filter_map(|c| c.traceparent.as_deref()),
        shared.cluster.replica_id(),
    );
    let session = Arc::clone(session);
    let shared = Arc::clone(shared);
    let followed = async move {
        follow(&session, &shared, stream, after, replay, tx).await;
    };
    #[cfg(feature = "otel")]
    let followed = tracing::Instrument::instrument(followed, span);
    crate::util::spawn(followed);
    Ok(rx)
}

/// Sends a stream's stored events as they arrive, until it ends, the client goes away or
/// the session closes.
async fn follow(
    session: &Session,
    shared: &Shared,
    stream: u64,
    mut after: String,
    mut replay: crate::cluster::Replay,
    tx: mpsc::Sender<Bytes>,
) {
    let mut polls: u32 = 0;
    let mut quiet_ends = 0;
    loop {
        for e in replay.events.drain(..) {
            let event = message_event(Some(&format!("{stream}-{}", e.pos)), &e.frame);
            if tx.send(event).await.is_err() {
                return;
            }
            after = e.pos;
        }
        if replay.finished {
            return;
        }
        polls += 1;
        if polls.is_multiple_of(LIVENESS_EVERY) {
            match shared
                .cluster
                .sessions()
                .stream_info(&session.id, stream)
                .await
            {
                Ok(Some(info))
                    if info.replica != shared.cluster.replica_id()
                        && !shared
                            .cluster
                            .bus()
                            .is_alive(&info.replica)
                            .await
                            .unwrap_or(true) =>
                {
                    adopt(shared, &session.id, stream, Vec::new()).await;
                }
                // Ended (its end is about to be read) or trimmed away: a few more looks.
                Ok(None) => {
                    quiet_ends += 1;
                    if quiet_ends > 3 {
                        return;
                    }
                }
                _ => {}
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(FOLLOW_EVERY) => {}
            _ = tx.closed() => return,
            _ = session.closed.token().cancelled() => return,
        }
        replay = match shared
            .cluster
            .events()
            .replay(&session.id, stream, &after)
            .await
        {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(target: "mcp::cluster", error = %e, "could not read a followed stream");
                crate::cluster::Replay::default()
            }
        };
    }
}

/// Removes a session everywhere: the store, then every replica's copy.
async fn remove(table: &SessionTable, shared: &Shared, id: &str) -> Result<(), StoreError> {
    shared.cluster.sessions().remove(id).await?;
    let message = BusMessage::SessionRemoved {
        origin: shared.cluster.replica_id().to_owned(),
        session: id.to_owned(),
    };
    if let Err(e) = shared.announce(message).await {
        tracing::warn!(target: "mcp::cluster", error = %e, "could not tell the other replicas a session ended; their copies end within session_recheck");
    }
    table.remove(id);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_and_outgoing_requests_are_recognised() {
        assert_eq!(parse_cursor("3-17-0"), Some((3, "17-0".to_owned())));
        assert_eq!(
            parse_cursor("0-1712345678901-4"),
            Some((0, "1712345678901-4".to_owned()))
        );
        for junk in ["", "3", "3-17", "a-1-1", "1--1", "1-1-1-1", "-1-1"] {
            assert_eq!(parse_cursor(junk), None, "{junk}");
        }
        assert_eq!(
            outgoing_request_id(
                r#"{"jsonrpc":"2.0","id":"mcp-elicit-x","method":"elicitation/create","params":{}}"#
            ),
            Some("mcp-elicit-x".to_owned())
        );
        for not_a_request in [
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"id":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"method":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"x"}"#,
        ] {
            assert_eq!(outgoing_request_id(not_a_request), None, "{not_a_request}");
        }
    }
}
