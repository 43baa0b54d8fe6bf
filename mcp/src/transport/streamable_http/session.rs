//! Streamable HTTP sessions: the table (bounded, idle sessions expire), each session's
//! connection to the server, and its SSE streams with the bounded store of their events
//! that `Last-Event-ID` resumes from.
//!
//! Stream 0 of every session is the standalone stream a GET opens; each POST answered as a
//! stream gets the next number. An event id is `<stream>-<seq>`, so a `Last-Event-ID` names
//! the stream it belongs to, and a resumption replays that stream's events and no other's.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use axum::body::Bytes;
use parking_lot::{Mutex, RwLock};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::exchange::{LIVE_CAPACITY, StreamLog};
use crate::auth::Principal;
use crate::cluster::SessionRecord;
use crate::layers::BoxFuture;
use crate::protocol::Message;
use crate::protocol::ProtocolVersion;
use crate::server::{ConnId, Connection, Outbound, OutboundReceiver, Server, Transport};
use crate::transport::http::config::HttpConfig;
use crate::transport::http::sse_body::{SseEvent, message_event};
use axum::response::Response;

/// A GET stream: its events, and whether it is the session's standalone stream (which ends
/// only at shutdown) rather than a resumed POST stream.
pub(crate) type Opened = (mpsc::Receiver<Bytes>, bool);

/// A session being looked up: known at once (a local table answers without waiting, and
/// without boxing a future for every request), or after a shared store answers.
pub(crate) type Lookup<'a> = futures::future::Either<
    std::future::Ready<Result<Arc<Session>, Response>>,
    BoxFuture<'a, Result<Arc<Session>, Response>>,
>;

/// What differs between sessions kept here and sessions shared by replicas.
pub(crate) trait SessionBackend: Send + Sync + 'static {
    /// Called once the table exists; a cluster listens to the other replicas here (the
    /// returned handler must be kept alive by the table).
    fn attach(&self, table: Weak<SessionTable>) -> Option<crate::cluster::BusHandler>;

    /// The session a request names, if it is alive and owned by `principal`; the error
    /// response otherwise (404, or 503 when a shared store is unreachable).
    fn lookup<'a>(
        &'a self,
        table: &'a Arc<SessionTable>,
        server: &'a Server,
        id: &'a str,
        principal: Option<&'a Principal>,
    ) -> Lookup<'a>;

    /// A session whose `initialize` just succeeded here; an error response when it could
    /// not be made known where it must be.
    fn created<'a>(&'a self, session: &'a Session) -> BoxFuture<'a, Result<(), Response>>;

    /// A notification, or an answer to one of the server's questions, on a session.
    fn deliver<'a>(&'a self, session: &'a Session, message: Message) -> BoxFuture<'a, ()>;

    /// Where the stream of an exchange about to run `requests` goes.
    fn stream_log(
        &self,
        session: &Arc<Session>,
        priming: Option<Duration>,
        requests: &[Message],
    ) -> Box<dyn StreamLog>;

    /// Opens the session's GET stream, or resumes the stream `last_event_id` names.
    fn open_get<'a>(
        &'a self,
        session: &'a Arc<Session>,
        last_event_id: Option<&'a str>,
        priming: Option<Duration>,
    ) -> BoxFuture<'a, Result<Opened, Response>>;

    /// Ends a session (everywhere).
    fn remove<'a>(
        &'a self,
        table: &'a SessionTable,
        id: &'a str,
    ) -> BoxFuture<'a, Result<(), Response>>;

    /// A frame the server sends the session outside any request, for its GET stream.
    fn push<'a>(&'a self, session: &'a Session, frame: String) -> BoxFuture<'a, ()>;

    /// Sessions busy on this replica: a cluster extends their life everywhere.
    fn keep_alive<'a>(&'a self, busy: Vec<Arc<str>>) -> BoxFuture<'a, ()>;
}

/// The standalone (GET) stream of every session.
pub(crate) const STANDALONE: u64 = 0;

/// An event id: `<stream>-<seq>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct EventId {
    pub(crate) stream: u64,
    pub(crate) seq: u64,
}

impl EventId {
    pub(crate) fn parse(s: &str) -> Option<EventId> {
        let (stream, seq) = s.trim().split_once('-')?;
        Some(EventId {
            stream: stream.parse().ok()?,
            seq: seq.parse().ok()?,
        })
    }

    fn render(self) -> String {
        format!("{}-{}", self.stream, self.seq)
    }
}

struct Stored {
    stream: u64,
    seq: u64,
    frame: String,
}

struct Live {
    next_seq: u64,
    tx: Option<mpsc::Sender<Bytes>>,
}

struct Streams {
    next: u64,
    open: HashMap<u64, Live>,
    store: VecDeque<Stored>,
    bytes: usize,
}

/// What a resumption found.
pub(crate) enum Resume {
    /// The events after the cursor, then the live stream if it is still running.
    Stream(mpsc::Receiver<Bytes>),
    /// The cursor names no stream of this session.
    Unknown,
}

/// Why the standalone stream could not be opened.
pub(crate) struct AlreadyOpen;

/// When a session was last used, written twice per request (when it is found, and when its
/// request ends) without a lock: a store and a load, where a mutex took two atomic
/// read-modify-writes each time.
struct LastSeen {
    /// The session's creation: what `nanos` counts from.
    since: Instant,
    /// Nanoseconds from `since` to the last use (`u64` spans 584 years). Two uses at
    /// once may store out of order: the idle time is then off by the time between them.
    nanos: AtomicU64,
}

impl LastSeen {
    fn now() -> Self {
        LastSeen {
            since: Instant::now(),
            nanos: AtomicU64::new(0),
        }
    }

    fn touch(&self) {
        let nanos = u64::try_from(self.since.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.nanos.store(nanos, Ordering::Relaxed);
    }

    /// How long since the last use.
    fn idle(&self) -> Duration {
        let last = self.since + Duration::from_nanos(self.nanos.load(Ordering::Relaxed));
        Instant::now().saturating_duration_since(last)
    }
}

/// One Streamable HTTP session.
pub(crate) struct Session {
    pub(crate) id: Arc<str>,
    /// `id` as the `Mcp-Session-Id` value of every response: made once, since each
    /// response's copy of the text was an allocation.
    pub(crate) id_header: Option<axum::http::HeaderValue>,
    pub(crate) conn: Connection,
    owner: Option<(String, Option<String>)>,
    last_seen: LastSeen,
    /// In a cluster: when this replica last read the session's shared record, and the
    /// generation of what its bus had heard then (see `backend::cluster`). `None` until
    /// it is read, or for a session that lives here only.
    pub(crate) read: Mutex<Option<(Instant, u64)>>,
    busy: AtomicUsize,
    /// Cancelled when the session ends; asked on every request (a load, not the token's
    /// lock).
    pub(crate) closed: crate::util::Flagged,
    streams: Mutex<Streams>,
    store_events: usize,
    store_bytes: usize,
    /// SSE responses open now, and how many may be.
    open_responses: AtomicUsize,
    max_responses: usize,
    /// Where the session lives: here only, or in a cluster (this object is then this
    /// replica's copy).
    pub(crate) backend: Arc<dyn SessionBackend>,
}

/// One open SSE response of a session, counted against `max_streams_per_session` while
/// it lives.
pub(crate) struct StreamSlot(Arc<Session>);

impl Drop for StreamSlot {
    fn drop(&mut self) {
        self.0.open_responses.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Marks a session busy (a request running or a stream open) while alive; idle time counts
/// from its drop.
pub(crate) struct Busy(Arc<Session>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.touch();
        self.0.busy.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Session {
    pub(crate) fn busy(self: &Arc<Self>) -> Busy {
        self.busy.fetch_add(1, Ordering::AcqRel);
        Busy(Arc::clone(self))
    }

    /// A slot for one more SSE response, unless the session holds its maximum.
    pub(crate) fn stream_slot(self: &Arc<Self>) -> Option<StreamSlot> {
        self.open_responses
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.max_responses).then_some(n + 1)
            })
            .ok()
            .map(|_| StreamSlot(Arc::clone(self)))
    }

    /// A slot for the stream of a POST already running: never refused (running requests
    /// are bounded by the server's `max_requests_per_connection`), but counted.
    pub(crate) fn stream_slot_for_request(self: &Arc<Self>) -> StreamSlot {
        self.open_responses.fetch_add(1, Ordering::AcqRel);
        StreamSlot(Arc::clone(self))
    }

    /// The maximum of open SSE responses.
    pub(crate) fn max_streams(&self) -> usize {
        self.max_responses
    }

    pub(crate) fn touch(&self) {
        self.last_seen.touch();
    }

    fn expired(&self, idle: Duration) -> bool {
        self.busy.load(Ordering::Acquire) == 0 && self.last_seen.idle() > idle
    }

    /// Whether `principal` may use this session: the one that created it (same subject and
    /// issuer), or nobody when it was created without one.
    pub(crate) fn owned_by(&self, principal: Option<&Principal>) -> bool {
        match (&self.owner, principal) {
            (None, None) => true,
            (Some((sub, iss)), Some(p)) => *sub == p.subject && *iss == p.issuer,
            _ => false,
        }
    }

    /// The revision its `initialize` settled (its connection's: set there by the handshake,
    /// or from the shared record on another replica).
    pub(crate) fn version(&self) -> Option<ProtocolVersion> {
        self.conn.state().version()
    }

    /// The owner, as a shared record stores it.
    pub(crate) fn owner(&self) -> Option<crate::cluster::Owner> {
        self.owner
            .as_ref()
            .map(|(subject, issuer)| crate::cluster::Owner {
                subject: subject.clone(),
                issuer: issuer.clone(),
            })
    }

    /// Attaches `tx` as the live response of `stream` (replacing an earlier one), sending
    /// it the priming event first when `priming` carries its cursor and the retry interval.
    pub(crate) fn attach_live(
        &self,
        stream: u64,
        tx: mpsc::Sender<Bytes>,
        priming: Option<(&str, Duration)>,
    ) {
        if let Some((cursor, retry)) = priming {
            let _ = tx.try_send(priming_event(cursor, retry));
        }
        let mut streams = self.streams.lock();
        let live = streams.open.entry(stream).or_insert(Live {
            next_seq: 1,
            tx: None,
        });
        live.tx = Some(tx);
    }

    /// Sends an already encoded event on `stream`'s live response, if it has one here; a
    /// response that is gone or too slow is detached.
    pub(crate) fn send_live(&self, stream: u64, event: Bytes) {
        let mut streams = self.streams.lock();
        if let Some(live) = streams.open.get_mut(&stream)
            && let Some(tx) = &live.tx
            && tx.try_send(event).is_err()
        {
            live.tx = None;
        }
    }

    /// Whether `stream` has a live response on this replica.
    pub(crate) fn has_live(&self, stream: u64) -> bool {
        self.streams
            .lock()
            .open
            .get(&stream)
            .and_then(|l| l.tx.as_ref())
            .is_some_and(|tx| !tx.is_closed())
    }

    /// Whether a request is running or a stream is open on this local copy.
    pub(crate) fn is_busy(&self) -> bool {
        self.busy.load(Ordering::Acquire) > 0
    }

    /// Whether streams of this session start with a priming event (2025-11-25 on: older
    /// clients may not expect an event with empty data).
    pub(crate) fn primes(&self) -> bool {
        self.version()
            .is_some_and(|v| v >= ProtocolVersion::V2025_11_25)
    }

    fn close(&self) {
        self.closed.cancel();
        self.conn.close_pending();
        let mut streams = self.streams.lock();
        for live in streams.open.values_mut() {
            live.tx = None;
        }
        streams.store.clear();
        streams.bytes = 0;
    }

    /// Opens a new stream for a POST, sending `tx` the priming event first when `priming`
    /// carries the retry interval.
    pub(crate) fn open_stream(&self, tx: mpsc::Sender<Bytes>, priming: Option<Duration>) -> u64 {
        let mut streams = self.streams.lock();
        let id = streams.next;
        streams.next += 1;
        if let Some(retry) = priming {
            let cursor = EventId { stream: id, seq: 0 }.render();
            let _ = tx.try_send(priming_event(&cursor, retry));
        }
        streams.open.insert(
            id,
            Live {
                next_seq: 1,
                tx: Some(tx),
            },
        );
        id
    }

    /// Sends a frame on `stream`, keeping it in the store for resumption. A stream whose
    /// HTTP response is gone or too slow is detached; its events stay in the store.
    pub(crate) fn publish(&self, stream: u64, frame: String) {
        let mut guard = self.streams.lock();
        let streams = &mut *guard;
        let Some(live) = streams.open.get_mut(&stream) else {
            return;
        };
        let seq = live.next_seq;
        live.next_seq += 1;
        let id = EventId { stream, seq }.render();
        if let Some(tx) = &live.tx
            && tx.try_send(message_event(Some(&id), &frame)).is_err()
        {
            live.tx = None;
        }
        streams.bytes += frame.len();
        streams.store.push_back(Stored { stream, seq, frame });
        while streams.store.len() > self.store_events
            || (streams.bytes > self.store_bytes && streams.store.len() > 1)
        {
            if let Some(old) = streams.store.pop_front() {
                streams.bytes -= old.frame.len();
            }
        }
    }

    /// Ends a POST stream: its response ends once what is queued is written.
    pub(crate) fn finish(&self, stream: u64) {
        self.streams.lock().open.remove(&stream);
    }

    /// Attaches a GET response as the standalone stream, unless one is attached already.
    pub(crate) fn open_standalone(
        &self,
        priming: Option<Duration>,
    ) -> Result<mpsc::Receiver<Bytes>, AlreadyOpen> {
        self.open_standalone_at(priming, None)
    }

    /// [`Session::open_standalone`], with the priming event's cursor given (a shared
    /// session's event log decides it) instead of taken from the local store.
    pub(crate) fn open_standalone_at(
        &self,
        priming: Option<Duration>,
        cursor: Option<&str>,
    ) -> Result<mpsc::Receiver<Bytes>, AlreadyOpen> {
        let mut streams = self.streams.lock();
        let live = streams.open.entry(STANDALONE).or_insert(Live {
            next_seq: 1,
            tx: None,
        });
        if live.tx.as_ref().is_some_and(|tx| !tx.is_closed()) {
            return Err(AlreadyOpen);
        }
        let (tx, rx) = mpsc::channel(LIVE_CAPACITY);
        if let Some(retry) = priming {
            // Resuming from here replays what comes next, not what was sent while no
            // stream was open.
            let cursor = match cursor {
                Some(c) => c.to_owned(),
                None => EventId {
                    stream: STANDALONE,
                    seq: live.next_seq - 1,
                }
                .render(),
            };
            let _ = tx.try_send(priming_event(&cursor, retry));
        }
        live.tx = Some(tx);
        Ok(rx)
    }

    /// Resumes the stream `last` belongs to after `last`: its stored events, then (if it is
    /// still running) what it sends next. A resumption replaces the stream's previous
    /// response.
    pub(crate) fn resume(&self, last: EventId) -> Resume {
        let mut guard = self.streams.lock();
        let streams = &mut *guard;
        if last.stream >= streams.next && last.stream != STANDALONE {
            return Resume::Unknown;
        }
        let replay: Vec<Bytes> = streams
            .store
            .iter()
            .filter(|e| e.stream == last.stream && e.seq > last.seq)
            .map(|e| {
                message_event(
                    Some(
                        &EventId {
                            stream: e.stream,
                            seq: e.seq,
                        }
                        .render(),
                    ),
                    &e.frame,
                )
            })
            .collect();
        let (tx, rx) = mpsc::channel(replay.len() + LIVE_CAPACITY);
        for event in replay {
            let _ = tx.try_send(event);
        }
        match streams.open.get_mut(&last.stream) {
            Some(live) => live.tx = Some(tx),
            None if last.stream == STANDALONE => {
                streams.open.insert(
                    STANDALONE,
                    Live {
                        next_seq: 1,
                        tx: Some(tx),
                    },
                );
            }
            // The stream is over: the replay is all there is, and dropping `tx` ends it.
            None => {}
        }
        Resume::Stream(rx)
    }
}

fn priming_event(cursor: &str, retry: Duration) -> Bytes {
    SseEvent {
        id: Some(cursor),
        event: None,
        data: "",
        retry: Some(retry),
    }
    .encode()
}

/// The session table hit its cap.
pub(crate) struct Full(pub(crate) usize);

/// All sessions of one router.
pub(crate) struct SessionTable {
    /// Where sessions live, chosen once.
    backend: Arc<dyn SessionBackend>,
    /// Receives the other replicas' messages about sessions: held here, because the
    /// cluster holds it weakly.
    _bus_handler: Option<crate::cluster::BusHandler>,
    map: RwLock<foldhash::HashMap<Arc<str>, Arc<Session>>>,
    max: usize,
    idle: Duration,
    store_events: usize,
    store_bytes: usize,
    max_responses: usize,
    reaper: AtomicBool,
    shutdown: CancellationToken,
}

impl SessionTable {
    pub(crate) fn new(config: &HttpConfig, backend: Arc<dyn SessionBackend>) -> Arc<Self> {
        Arc::new_cyclic(|weak: &Weak<SessionTable>| SessionTable {
            _bus_handler: backend.attach(weak.clone()),
            backend,
            map: RwLock::new(foldhash::HashMap::default()),
            max: config.max_sessions,
            idle: config.session_idle_timeout,
            store_events: config.event_store_events,
            store_bytes: config.event_store_bytes,
            max_responses: config.max_streams_per_session,
            reaper: AtomicBool::new(false),
            shutdown: config.shutdown.clone(),
        })
    }

    /// Where sessions live.
    pub(crate) fn backend(&self) -> &Arc<dyn SessionBackend> {
        &self.backend
    }

    /// The ids of the sessions held here.
    pub(crate) fn ids(&self) -> Vec<Arc<str>> {
        self.map.read().keys().cloned().collect()
    }

    /// The session with this id, live or not (for what other replicas say about it).
    pub(crate) fn get_any(&self, id: &str) -> Option<Arc<Session>> {
        self.map.read().get(id).cloned()
    }

    /// Creates a session owned by `principal`, connected to `server` as a connection of
    /// its own (a fresh random id, unrelated to the session id, which stays a secret).
    pub(crate) fn create(
        self: &Arc<Self>,
        server: &Server,
        principal: Option<&Principal>,
    ) -> Result<Arc<Session>, Full> {
        let owner = principal.map(|p| (p.subject.clone(), p.issuer.clone()));
        self.insert(server, None, ConnId::random("http"), owner)
    }

    /// A local copy of a session another replica created, from its shared record.
    pub(crate) fn rehydrate(
        self: &Arc<Self>,
        server: &Server,
        id: &str,
        record: &SessionRecord,
    ) -> Result<Arc<Session>, Full> {
        if let Some(s) = self.map.read().get(id)
            && !s.closed.is_cancelled()
        {
            return Ok(Arc::clone(s));
        }
        let conn_id = if record.conn_id.is_empty() {
            ConnId::random("http")
        } else {
            ConnId::new(&record.conn_id)
        };
        let owner = record
            .owner
            .as_ref()
            .map(|o| (o.subject.clone(), o.issuer.clone()));
        let session = self.insert(server, Some(id), conn_id, owner)?;
        tracing::debug!(target: "mcp::cluster", conn_id = %session.conn.id(), "session rehydrated from the shared store");
        Ok(session)
    }

    fn insert(
        self: &Arc<Self>,
        server: &Server,
        known_id: Option<&str>,
        conn_id: ConnId,
        owner: Option<(String, Option<String>)>,
    ) -> Result<Arc<Session>, Full> {
        self.ensure_reaper();
        let mut map = self.map.write();
        if map.len() >= self.max {
            let idle = self.idle;
            map.retain(|_, s| {
                let keep = !s.expired(idle);
                if !keep {
                    s.close();
                }
                keep
            });
            if map.len() >= self.max {
                return Err(Full(self.max));
            }
        }
        let id: Arc<str> = match known_id {
            Some(id) => {
                if let Some(old) = map.remove(id) {
                    old.close();
                }
                Arc::from(id)
            }
            None => loop {
                let candidate: Arc<str> = Arc::from(crate::util::random_token(24));
                if !map.contains_key(&candidate) {
                    break candidate;
                }
            },
        };
        let (out, rx) = Outbound::channel(server.config().outbound_capacity);
        let conn = server.connect(conn_id, Transport::Http, out);
        let mut open = HashMap::new();
        open.insert(
            STANDALONE,
            Live {
                next_seq: 1,
                tx: None,
            },
        );
        let session = Arc::new(Session {
            id_header: axum::http::HeaderValue::from_str(&id).ok(),
            id: Arc::clone(&id),
            conn,
            owner,
            last_seen: LastSeen::now(),
            read: Mutex::new(None),
            busy: AtomicUsize::new(0),
            closed: crate::util::Flagged::new(),
            streams: Mutex::new(Streams {
                next: 1,
                open,
                store: VecDeque::new(),
                bytes: 0,
            }),
            store_events: self.store_events,
            store_bytes: self.store_bytes,
            open_responses: AtomicUsize::new(0),
            max_responses: self.max_responses,
            backend: Arc::clone(&self.backend),
        });
        crate::util::spawn(pump(Arc::clone(&session), rx));
        map.insert(id, Arc::clone(&session));
        tracing::debug!(target: "mcp::http", conn_id = %session.conn.id(), "session created");
        Ok(session)
    }

    /// The live session with this id; an expired one is removed and not returned.
    pub(crate) fn get(&self, id: &str) -> Option<Arc<Session>> {
        let session = self.map.read().get(id).cloned()?;
        if session.closed.is_cancelled() {
            return None;
        }
        if session.expired(self.idle) {
            self.remove(id);
            return None;
        }
        Some(session)
    }

    /// Ends a session: its streams end, its questions close, its running requests stop.
    pub(crate) fn remove(&self, id: &str) -> Option<Arc<Session>> {
        let session = self.map.write().remove(id)?;
        session.close();
        tracing::debug!(target: "mcp::http", conn_id = %session.conn.id(), "session ended");
        Some(session)
    }

    fn sweep(&self) {
        let idle = self.idle;
        let expired: Vec<Arc<str>> = self
            .map
            .read()
            .iter()
            .filter(|(_, s)| s.expired(idle))
            .map(|(id, _)| Arc::clone(id))
            .collect();
        for id in expired {
            // Checked again under the write lock: a request may have arrived meanwhile.
            let mut map = self.map.write();
            if map.get(&id).is_some_and(|s| s.expired(idle))
                && let Some(s) = map.remove(&id)
            {
                s.close();
                tracing::debug!(target: "mcp::http", conn_id = %s.conn.id(), "idle session expired");
            }
        }
    }

    /// Starts the task that expires idle sessions (once, on first use, so building a
    /// router needs no runtime). It stops with the table or at shutdown (running requests
    /// then get the shutdown grace period; open GET streams end on their own).
    fn ensure_reaper(self: &Arc<Self>) {
        if self.reaper.swap(true, Ordering::AcqRel) {
            return;
        }
        let weak: Weak<Self> = Arc::downgrade(self);
        let period = (self.idle / 2).clamp(Duration::from_millis(10), Duration::from_secs(30));
        let shutdown = self.shutdown.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(period);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    _ = shutdown.cancelled() => break,
                }
                let Some(table) = weak.upgrade() else { break };
                table.sweep();
                let busy: Vec<Arc<str>> = table
                    .map
                    .read()
                    .iter()
                    .filter(|(_, s)| s.is_busy())
                    .map(|(id, _)| Arc::clone(id))
                    .collect();
                let backend = Arc::clone(&table.backend);
                drop(table);
                backend.keep_alive(busy).await;
            }
        });
    }
}

/// Moves what the server sends the session outside any request (list_changed,
/// resources/updated) onto its standalone stream.
async fn pump(session: Arc<Session>, mut rx: OutboundReceiver) {
    loop {
        tokio::select! {
            frame = rx.recv() => match frame {
                Some(frame) => session.backend.push(&session, frame).await,
                None => break,
            },
            _ = session.closed.token().cancelled() => break,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_ids_round_trip_and_reject_junk() {
        let id = EventId { stream: 3, seq: 17 };
        assert_eq!(EventId::parse(&id.render()), Some(id));
        for junk in ["", "3", "a-1", "1-b", "-1", "1--1"] {
            assert_eq!(EventId::parse(junk), None, "{junk}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn idle_time_counts_from_the_last_use() {
        let seen = LastSeen::now();
        tokio::time::advance(Duration::from_secs(5)).await;
        assert_eq!(seen.idle(), Duration::from_secs(5));
        seen.touch();
        assert_eq!(seen.idle(), Duration::ZERO);
        tokio::time::advance(Duration::from_millis(1500)).await;
        assert_eq!(seen.idle(), Duration::from_millis(1500));
        tokio::time::advance(Duration::from_secs(3600)).await;
        seen.touch();
        tokio::time::advance(Duration::from_nanos(7)).await;
        assert_eq!(seen.idle(), Duration::from_nanos(7));
    }
}
