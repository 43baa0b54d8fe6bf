//! Everything the server keeps about one connection: what it negotiated, where its
//! messages go, what it has running and parked.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use parking_lot::{Mutex, RwLock};
use tokio_util::sync::CancellationToken;

use super::{ConnId, Outbound, Pending, Transport};
use crate::protocol::inbound::{EraSignals, VersionHeader};
use crate::protocol::{
    ClientCapabilities, Era, Implementation, LoggingLevel, ProtocolVersion, RequestId,
};

/// What the client negotiated on this connection (handshake era).
#[derive(Clone, Debug)]
pub(crate) struct Negotiated {
    pub(crate) capabilities: Option<Arc<ClientCapabilities>>,
    pub(crate) client_info: Option<Implementation>,
    pub(crate) log_level: LoggingLevel,
    pub(crate) initialized: bool,
}

impl Default for Negotiated {
    fn default() -> Self {
        Negotiated {
            capabilities: None,
            client_info: None,
            log_level: LoggingLevel::Info,
            initialized: false,
        }
    }
}

#[derive(Clone, Debug)]
pub(crate) struct Subscriber {
    pub(crate) token: u64,
    pub(crate) out: Outbound,
}

/// The live transport of a connection, if one is attached. Whether there is one is asked
/// on every request: a flag kept beside the slot answers without taking its lock (two
/// atomic operations fewer per request).
#[derive(Default)]
pub(crate) struct Attached {
    slot: RwLock<Option<Subscriber>>,
    present: AtomicBool,
}

impl Attached {
    /// The subscriber, for reading.
    pub(crate) fn read(&self) -> parking_lot::RwLockReadGuard<'_, Option<Subscriber>> {
        self.slot.read()
    }

    /// Replaces the subscriber; the flag changes under the slot's lock, with it.
    pub(crate) fn set(&self, subscriber: Option<Subscriber>) {
        let mut slot = self.slot.write();
        self.present.store(subscriber.is_some(), Ordering::Release);
        *slot = subscriber;
    }

    /// Whether a transport is attached now.
    pub(crate) fn is_some(&self) -> bool {
        self.present.load(Ordering::Acquire)
    }
}

/// Everything the server keeps about one connection.
pub(crate) struct ConnState {
    pub(crate) id: ConnId,
    pub(crate) transport: Transport,
    pub(crate) seq: u64,
    pub(crate) subscriber: Attached,
    pub(crate) session: RwLock<Negotiated>,
    /// The revision `initialize` settled, beside `session` so that every request reads it
    /// without the lock.
    pub(crate) version: crate::protocol::NegotiatedVersion,
    pub(crate) subscriptions: Mutex<HashSet<String>>,
    pub(crate) in_flight: Mutex<HashMap<RequestId, CancellationToken>>,
    /// The `traceparent` of each traced request still running (the `otel` feature): a
    /// replica that resumes the stream carrying it links to its span.
    #[cfg(feature = "otel")]
    pub(crate) traces: Mutex<HashMap<RequestId, String>>,
    /// Requests running handlers now (bounded by `max_requests_per_connection`).
    pub(crate) running: AtomicUsize,
    pub(crate) pending: Mutex<Pending>,
    /// Cancelled when the connection closes; read on every request (see [`Flagged`]).
    pub(crate) closed: crate::util::Flagged,
    /// Cancelled when the client's input closed (stdin EOF): long-lived requests end.
    pub(crate) input_closed: crate::util::Flagged,
    /// The era fixed by the connection's first decisive message (stdio).
    pub(crate) era: FixedEra,
    /// State the handlers keep for this connection (`Ctx::session_state`), made when a
    /// handler first keeps some ([`ConnState::session_states`]): most connections, and
    /// every 2026-07-28 request's detached state, never do.
    states: OnceLock<Arc<crate::states::StateMap>>,
    /// Called when an initialized connection's state ends; taken by a state that replaces
    /// this one on a first attach, so it is called once per session.
    pub(crate) on_end: Mutex<Option<SessionEndHook>>,
}

/// The hook [`ServerBuilder::on_session_end`](crate::ServerBuilder::on_session_end) sets.
pub(crate) type SessionEndHook = Arc<dyn Fn(&SessionEnd<'_>) + Send + Sync>;

/// A handshake-era session that ended (the client went away, the connection was replaced
/// or evicted): what [`ServerBuilder::on_session_end`](crate::ServerBuilder::on_session_end)
/// receives.
pub struct SessionEnd<'a> {
    conn_id: &'a ConnId,
    transport: Transport,
    states: Option<&'a crate::states::StateMap>,
}

impl SessionEnd<'_> {
    /// The connection that ended.
    pub fn conn_id(&self) -> &ConnId {
        self.conn_id
    }

    /// Its transport.
    pub fn transport(&self) -> Transport {
        self.transport
    }

    /// The state of type `T` its handlers kept (`Ctx::session_state`), if they made one.
    pub fn state<T: Send + Sync + 'static>(&self) -> Option<Arc<T>> {
        self.states?.get::<T>()
    }
}

impl Drop for ConnState {
    fn drop(&mut self) {
        let hook = self.on_end.get_mut().take();
        if let Some(hook) = hook
            && self.version.get().is_some()
        {
            hook(&SessionEnd {
                conn_id: &self.id,
                transport: self.transport,
                states: self.states.get().map(|states| &**states),
            });
        }
    }
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
    pub(crate) fn new(
        id: ConnId,
        transport: Transport,
        seq: u64,
        max_pending: usize,
        on_end: Option<SessionEndHook>,
    ) -> Self {
        ConnState {
            id,
            transport,
            seq,
            subscriber: Attached::default(),
            session: RwLock::new(Negotiated::default()),
            version: Default::default(),
            subscriptions: Mutex::new(HashSet::new()),
            in_flight: Mutex::new(HashMap::new()),
            #[cfg(feature = "otel")]
            traces: Mutex::new(HashMap::new()),
            running: AtomicUsize::new(0),
            pending: Mutex::new(Pending::new(max_pending)),
            closed: crate::util::Flagged::new(),
            input_closed: crate::util::Flagged::new(),
            era: FixedEra::default(),
            states: OnceLock::new(),
            on_end: Mutex::new(on_end),
        }
    }

    /// The era of a request on this connection. A transport may decide (`forced`: HTTP
    /// decides per request); otherwise the connection's first decisive message fixes it
    /// for the connection (see [`EraSignals::era`]); until then, the handshake era.
    pub(crate) fn era_of(&self, method: &str, params: Option<&str>, forced: Option<Era>) -> Era {
        if let Some(era) = forced {
            return era;
        }
        if let Some(era) = self.era.get() {
            return era;
        }
        match EraSignals::of(method, params, VersionHeader::Absent).era() {
            Some(era) => self.era.fix(era),
            None => Era::Handshake,
        }
    }

    /// The state its handlers keep (`Ctx::session_state`), made now if none was.
    pub(crate) fn session_states(&self) -> &Arc<crate::states::StateMap> {
        self.states.get_or_init(Arc::default)
    }

    /// Shares `other`'s handler state (a session moving to a fresh state).
    pub(crate) fn share_states_of(&mut self, other: &ConnState) {
        self.states = OnceLock::from(Arc::clone(other.session_states()));
    }

    /// The live transport's queue, if a transport is attached.
    pub(crate) fn outbound(&self) -> Option<Outbound> {
        self.subscriber.read().as_ref().map(|s| s.out.clone())
    }

    pub(crate) fn has_subscriber(&self) -> bool {
        self.subscriber.is_some()
    }

    pub(crate) fn capabilities(&self) -> Option<Arc<ClientCapabilities>> {
        self.session.read().capabilities.clone()
    }

    pub(crate) fn version(&self) -> Option<ProtocolVersion> {
        self.version.get()
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
        self.subscriber.set(None);
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

/// The era a connection's first decisive message fixed (stdio), read on every request: an
/// atomic, not a lock.
#[derive(Debug, Default)]
pub(crate) struct FixedEra(AtomicU8);

impl FixedEra {
    const UNSET: u8 = 0;

    fn code(era: Era) -> u8 {
        match era {
            Era::Handshake => 1,
            Era::Stateless => 2,
        }
    }

    /// The era fixed so far, if any.
    pub(crate) fn get(&self) -> Option<Era> {
        match self.0.load(Ordering::Acquire) {
            1 => Some(Era::Handshake),
            2 => Some(Era::Stateless),
            _ => None,
        }
    }

    /// Fixes `era` unless another message fixed one first; the era that holds.
    pub(crate) fn fix(&self, era: Era) -> Era {
        match self.0.compare_exchange(
            Self::UNSET,
            Self::code(era),
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => era,
            Err(_) => self.get().unwrap_or(era),
        }
    }

    /// Takes over `other`'s era (a state replacing another for the same session).
    pub(crate) fn copy_from(&self, other: &FixedEra) {
        self.0
            .store(other.0.load(Ordering::Acquire), Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The flag says what the slot holds, through attaching and closing.
    #[test]
    fn the_attached_flag_follows_the_subscriber() {
        let state = ConnState::new(ConnId::new("c"), Transport::Stdio, 0, 4, None);
        assert!(!state.has_subscriber() && state.outbound().is_none());
        let (out, _rx) = Outbound::channel(1);
        state.subscriber.set(Some(Subscriber { token: 7, out }));
        assert!(state.has_subscriber());
        assert_eq!(state.subscriber.read().as_ref().map(|s| s.token), Some(7));
        assert!(state.stats().attached);
        state.close();
        assert!(!state.has_subscriber() && state.outbound().is_none());
        assert!(!state.stats().attached);
    }

    /// The first decisive era holds; later messages, or a state taking over, see it.
    #[test]
    fn the_first_fixed_era_holds() {
        let era = FixedEra::default();
        assert_eq!(era.get(), None);
        assert_eq!(era.fix(Era::Stateless), Era::Stateless);
        assert_eq!(era.fix(Era::Handshake), Era::Stateless, "fixed once");
        assert_eq!(era.get(), Some(Era::Stateless));
        let fresh = FixedEra::default();
        fresh.copy_from(&era);
        assert_eq!(fresh.get(), Some(Era::Stateless));
        let unset = FixedEra::default();
        fresh.copy_from(&unset);
        assert_eq!(fresh.get(), None, "an unset era copies as unset");
    }
}
