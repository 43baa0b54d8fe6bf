//! Shared state in memory: [`MemoryNonces`], the single-process used-nonce record every
//! server has by default, and [`MemoryBackend`], every store and the bus for replicas that
//! live in one process (tests, or several routers in one application).

use std::any::{Any, TypeId};
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::FutureExt as _;
use futures::future::BoxFuture;
use parking_lot::Mutex;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{
    Bus, Cluster, Deliver, Envelope, EventStore, Heard, NonceStore, ParkedAsk, Replay,
    SessionChange, SessionRecord, SessionStore, StoreResult, StoredEvent, StreamInfo, pos_key,
};

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Used nonces in memory, until they expire, at most `cap` of them: when every remembered
/// nonce is still live, the one closest to expiry is forgotten rather than refusing
/// service (it could be replayed until it expires, and that is logged).
pub struct MemoryNonces {
    used: Mutex<HashMap<String, u64>>,
    cap: usize,
}

impl MemoryNonces {
    /// A record of at most `cap` nonces.
    pub fn new(cap: usize) -> Self {
        MemoryNonces {
            used: Mutex::new(HashMap::new()),
            cap: cap.max(1),
        }
    }

    fn consume_now(&self, nonce: &str, expires_at_ms: u64, now: u64) -> bool {
        let mut used = self.used.lock();
        if used.contains_key(nonce) {
            return false;
        }
        if used.len() >= self.cap {
            used.retain(|_, e| *e > now);
        }
        if used.len() >= self.cap
            && let Some(oldest) = used.iter().min_by_key(|(_, e)| **e).map(|(n, _)| n.clone())
        {
            used.remove(&oldest);
            tracing::warn!(target: "mcp::elicit", "used-nonce table full; forgetting the nonce closest to expiry");
        }
        used.insert(nonce.to_owned(), expires_at_ms);
        true
    }
}

impl NonceStore for MemoryNonces {
    fn consume<'a>(
        &'a self,
        nonce: &'a str,
        expires_at_ms: u64,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        let fresh = self.consume_now(nonce, expires_at_ms, now_ms());
        async move { Ok(fresh) }.boxed()
    }
}

/// One event of a session: its sequence number, its stream, and its frame (`None` marks
/// the stream's end).
struct MemEvent {
    seq: u64,
    stream: u64,
    frame: Option<String>,
}

struct MemSession {
    record: SessionRecord,
    expires: Instant,
    next_stream: u64,
    streams: HashMap<u64, StreamInfo>,
    asks: HashMap<String, ParkedAsk>,
    events: VecDeque<MemEvent>,
}

/// One replica's subscription to the bus.
struct Listening {
    tx: mpsc::UnboundedSender<Heard>,
    /// Cut off for now ([`MemoryBackend::cut_bus`]): what is published meanwhile is lost
    /// for it.
    cut: bool,
}

impl Listening {
    /// Hands `message` over; whether it was (a cut or closed subscription loses it).
    fn hear(&self, message: &Envelope) -> bool {
        !self.cut && self.tx.send(Heard::Message(message.clone())).is_ok()
    }
}

#[derive(Default)]
struct MemState {
    sessions: HashMap<String, MemSession>,
    listeners: HashMap<String, Listening>,
    alive: HashMap<String, Instant>,
    dead: HashSet<String>,
    seq: u64,
}

impl MemState {
    /// The live session `id`; an expired one is dropped.
    fn session(&mut self, id: &str) -> Option<&mut MemSession> {
        let now = Instant::now();
        if self.sessions.get(id).is_some_and(|s| s.expires <= now) {
            self.sessions.remove(id);
        }
        self.sessions.get_mut(id)
    }
}

/// Every shared store and the bus, in memory, for replicas in one process. Each
/// [`replica`](MemoryBackend::replica) is a [`Cluster`] with its own id over the same state.
///
/// ```
/// use mcp::cluster::memory::MemoryBackend;
///
/// let backend = MemoryBackend::new();
/// let cluster = backend.replica();
/// let server = mcp::Server::builder("s", "1").cluster(cluster).build().unwrap();
/// # let _ = server;
/// ```
#[derive(Clone)]
pub struct MemoryBackend {
    state: Arc<Mutex<MemState>>,
    nonces: Arc<MemoryNonces>,
    tasks: Arc<crate::tasks::MemoryTaskStore>,
    /// Records of features above the cluster, one of each type, shared by the replicas
    /// (see [`MemoryBackend::shared`]).
    shared: Arc<Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>>,
}

impl Default for MemoryBackend {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryBackend {
    /// Empty shared state.
    pub fn new() -> Self {
        MemoryBackend {
            state: Arc::new(Mutex::new(MemState::default())),
            nonces: Arc::new(MemoryNonces::new(1_000_000)),
            tasks: Arc::new(crate::tasks::MemoryTaskStore::new()),
            shared: Arc::default(),
        }
    }

    /// The one `T` every replica of this backend shares, made on first use: how a
    /// feature above the cluster (such as `mcp::connect`'s pending links) keeps shared
    /// records here without the cluster knowing of it.
    pub fn shared<T: Any + Default + Send + Sync>(&self) -> Arc<T> {
        let mut shared = self.shared.lock();
        let entry = shared
            .entry(TypeId::of::<T>())
            .or_insert_with(|| Arc::new(T::default()));
        Arc::clone(entry)
            .downcast::<T>()
            .expect("entries are stored under their own type id")
    }

    /// A new replica over this state.
    pub fn replica(&self) -> Cluster {
        let this = Arc::new(self.clone());
        Cluster::new(
            Arc::clone(&this) as Arc<dyn SessionStore>,
            Arc::clone(&this) as Arc<dyn EventStore>,
            Arc::clone(&this.nonces) as Arc<dyn NonceStore>,
            Arc::clone(&this) as Arc<dyn Bus>,
        )
        .with_tasks(Arc::clone(&this.tasks) as Arc<dyn crate::tasks::TaskStore>)
        .with_backend(this)
    }

    /// Breaks `replica`'s bus subscription, as a Redis restart or a dropped link would:
    /// it hears nothing published until [`MemoryBackend::restore_bus`], and what is
    /// published meanwhile is lost for it (a message sent to it alone is received by
    /// nobody). Its heartbeat and the stores are untouched.
    pub fn cut_bus(&self, replica: &str) {
        if let Some(l) = self.state.lock().listeners.get_mut(replica) {
            l.cut = true;
        }
    }

    /// Mends a subscription [`MemoryBackend::cut_bus`] broke: `replica` hears messages
    /// again, and first [`Heard::Resubscribed`], as after a real reconnect.
    pub fn restore_bus(&self, replica: &str) {
        if let Some(l) = self.state.lock().listeners.get_mut(replica)
            && l.cut
        {
            l.cut = false;
            let _ = l.tx.send(Heard::Resubscribed);
        }
    }

    /// Makes `replica` dead, as if its process were killed: it stops receiving bus
    /// messages, its heartbeat lapses at once and later heartbeats are ignored.
    pub fn kill(&self, replica: &str) {
        let mut state = self.state.lock();
        state.dead.insert(replica.to_owned());
        state.listeners.remove(replica);
        state.alive.remove(replica);
    }
}

fn ready<'a, T: Send + 'a>(value: T) -> BoxFuture<'a, T> {
    futures::future::ready(value).boxed()
}

impl SessionStore for MemoryBackend {
    fn create<'a>(
        &'a self,
        id: &'a str,
        record: &'a SessionRecord,
        ttl: Duration,
    ) -> BoxFuture<'a, StoreResult<()>> {
        self.state.lock().sessions.insert(
            id.to_owned(),
            MemSession {
                record: record.clone(),
                expires: Instant::now() + ttl,
                next_stream: 1,
                streams: HashMap::new(),
                asks: HashMap::new(),
                events: VecDeque::new(),
            },
        );
        ready(Ok(()))
    }

    fn load<'a>(
        &'a self,
        id: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, StoreResult<Option<SessionRecord>>> {
        let mut state = self.state.lock();
        let record = state.session(id).map(|s| {
            s.expires = Instant::now() + ttl;
            s.record.clone()
        });
        ready(Ok(record))
    }

    fn touch<'a>(&'a self, id: &'a str, ttl: Duration) -> BoxFuture<'a, StoreResult<bool>> {
        let mut state = self.state.lock();
        let found = state
            .session(id)
            .map(|s| s.expires = Instant::now() + ttl)
            .is_some();
        ready(Ok(found))
    }

    fn update<'a>(
        &'a self,
        id: &'a str,
        change: &'a SessionChange,
    ) -> BoxFuture<'a, StoreResult<()>> {
        if let Some(s) = self.state.lock().session(id) {
            s.record.apply(change);
        }
        ready(Ok(()))
    }

    fn remove<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<bool>> {
        let mut state = self.state.lock();
        let existed = state.session(id).is_some();
        state.sessions.remove(id);
        ready(Ok(existed))
    }

    fn next_stream<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<u64>> {
        let mut state = self.state.lock();
        let n = match state.session(id) {
            Some(s) => {
                let n = s.next_stream;
                s.next_stream += 1;
                n
            }
            // A session gone mid-request: any number will do, nothing resumes it.
            None => u64::MAX,
        };
        ready(Ok(n))
    }

    fn open_stream<'a>(
        &'a self,
        id: &'a str,
        stream: u64,
        info: &'a StreamInfo,
    ) -> BoxFuture<'a, StoreResult<()>> {
        if let Some(s) = self.state.lock().session(id) {
            s.streams.insert(stream, info.clone());
        }
        ready(Ok(()))
    }

    fn claim_stream<'a>(
        &'a self,
        id: &'a str,
        stream: u64,
    ) -> BoxFuture<'a, StoreResult<Option<StreamInfo>>> {
        let info = self
            .state
            .lock()
            .session(id)
            .and_then(|s| s.streams.remove(&stream));
        ready(Ok(info))
    }

    fn stream_info<'a>(
        &'a self,
        id: &'a str,
        stream: u64,
    ) -> BoxFuture<'a, StoreResult<Option<StreamInfo>>> {
        let info = self
            .state
            .lock()
            .session(id)
            .and_then(|s| s.streams.get(&stream).cloned());
        ready(Ok(info))
    }

    fn park<'a>(
        &'a self,
        id: &'a str,
        request: &'a str,
        ask: &'a ParkedAsk,
    ) -> BoxFuture<'a, StoreResult<()>> {
        if let Some(s) = self.state.lock().session(id) {
            s.asks.insert(request.to_owned(), ask.clone());
        }
        ready(Ok(()))
    }

    fn unpark<'a>(
        &'a self,
        id: &'a str,
        request: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<ParkedAsk>>> {
        let ask = self
            .state
            .lock()
            .session(id)
            .and_then(|s| s.asks.remove(request));
        ready(Ok(ask))
    }

    fn parked_on<'a>(
        &'a self,
        id: &'a str,
        stream: u64,
    ) -> BoxFuture<'a, StoreResult<Vec<(String, ParkedAsk)>>> {
        let asks = self
            .state
            .lock()
            .session(id)
            .map(|s| {
                s.asks
                    .iter()
                    .filter(|(_, a)| a.stream == stream)
                    .map(|(k, a)| (k.clone(), a.clone()))
                    .collect()
            })
            .unwrap_or_default();
        ready(Ok(asks))
    }
}

impl EventStore for MemoryBackend {
    fn append<'a>(
        &'a self,
        id: &'a str,
        stream: u64,
        frame: &'a str,
        max: usize,
    ) -> BoxFuture<'a, StoreResult<String>> {
        ready(Ok(self.push(id, stream, Some(frame.to_owned()), max)))
    }

    fn finish<'a>(
        &'a self,
        id: &'a str,
        stream: u64,
        max: usize,
    ) -> BoxFuture<'a, StoreResult<()>> {
        self.push(id, stream, None, max);
        ready(Ok(()))
    }

    fn tail<'a>(&'a self, _id: &'a str) -> BoxFuture<'a, StoreResult<String>> {
        // Positions are one sequence across sessions: anything appended later is after it.
        let seq = self.state.lock().seq;
        ready(Ok(format!("{seq}-0")))
    }

    fn replay<'a>(
        &'a self,
        id: &'a str,
        stream: u64,
        after: &'a str,
    ) -> BoxFuture<'a, StoreResult<Replay>> {
        let after = pos_key(after).0;
        let mut replay = Replay::default();
        if let Some(s) = self.state.lock().session(id) {
            for e in s.events.iter().filter(|e| e.stream == stream) {
                match &e.frame {
                    None => replay.finished = true,
                    Some(frame) if e.seq > after => replay.events.push(StoredEvent {
                        pos: format!("{}-0", e.seq),
                        frame: frame.clone(),
                    }),
                    Some(_) => {}
                }
            }
        }
        ready(Ok(replay))
    }
}

impl MemoryBackend {
    fn push(&self, id: &str, stream: u64, frame: Option<String>, max: usize) -> String {
        let mut state = self.state.lock();
        state.seq += 1;
        let seq = state.seq;
        if let Some(s) = state.session(id) {
            s.events.push_back(MemEvent { seq, stream, frame });
            while s.events.len() > max.max(1) {
                s.events.pop_front();
            }
        }
        format!("{seq}-0")
    }
}

impl Bus for MemoryBackend {
    fn publish<'a>(&'a self, message: &'a Envelope) -> BoxFuture<'a, StoreResult<usize>> {
        let state = self.state.lock();
        let delivered = match message.message.recipient() {
            Some(to) => state
                .listeners
                .get(to)
                .map_or(0, |l| usize::from(l.hear(message))),
            None => state.listeners.values().filter(|l| l.hear(message)).count(),
        };
        ready(Ok(delivered))
    }

    fn listen<'a>(
        &'a self,
        replica: &'a str,
        deliver: Deliver,
        stop: CancellationToken,
    ) -> BoxFuture<'a, StoreResult<()>> {
        let (tx, mut rx) = mpsc::unbounded_channel();
        {
            let mut state = self.state.lock();
            if state.dead.contains(replica) {
                return ready(Ok(()));
            }
            state
                .listeners
                .insert(replica.to_owned(), Listening { tx, cut: false });
        }
        let state = Arc::clone(&self.state);
        let me = replica.to_owned();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    heard = rx.recv() => match heard {
                        Some(h) => deliver(h),
                        None => break,
                    },
                    _ = stop.cancelled() => break,
                }
            }
            state.lock().listeners.remove(&me);
        });
        ready(Ok(()))
    }

    fn heartbeat<'a>(&'a self, replica: &'a str, ttl: Duration) -> BoxFuture<'a, StoreResult<()>> {
        let mut state = self.state.lock();
        if !state.dead.contains(replica) {
            state.alive.insert(replica.to_owned(), Instant::now() + ttl);
        }
        ready(Ok(()))
    }

    fn is_alive<'a>(&'a self, replica: &'a str) -> BoxFuture<'a, StoreResult<bool>> {
        let state = self.state.lock();
        // A replica that listens but has not beaten yet (it just started) is alive too.
        let alive = !state.dead.contains(replica)
            && (state.listeners.contains_key(replica)
                || state
                    .alive
                    .get(replica)
                    .is_some_and(|t| *t > Instant::now()));
        ready(Ok(alive))
    }

    fn leave<'a>(&'a self, replica: &'a str) -> BoxFuture<'a, StoreResult<()>> {
        let mut state = self.state.lock();
        state.alive.remove(replica);
        state.listeners.remove(replica);
        ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nonces_are_single_use_and_bounded() {
        let n = MemoryNonces::new(2);
        let far = now_ms() + 60_000;
        assert!(n.consume_now("a", far, now_ms()));
        assert!(!n.consume_now("a", far, now_ms()));
        assert!(n.consume_now("b", far + 1, now_ms()));
        // Full of live nonces: the one closest to expiry ("a") is forgotten.
        assert!(n.consume_now("c", far + 2, now_ms()));
        assert!(n.consume_now("a", far, now_ms()));
        assert!(!n.consume_now("c", far + 2, now_ms()));
    }
}
