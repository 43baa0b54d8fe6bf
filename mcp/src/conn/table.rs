//! The bounded table of connections. When full it evicts the oldest connection that has
//! no live transport, and only then the oldest live one.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::RwLock;

use super::{ConnId, ConnState, Outbound, Subscriber, Transport};

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
    on_end: Option<super::SessionEndHook>,
    /// The table's size, as the `mcp.server.sessions.active` gauge sees it.
    #[cfg(feature = "otel")]
    gauge: crate::telemetry::Gauge,
}

impl ConnTable {
    pub(crate) fn new(
        max: usize,
        max_pending: usize,
        default_transport: Transport,
        hook: Option<EventHook>,
        on_end: Option<super::SessionEndHook>,
    ) -> Self {
        ConnTable {
            map: RwLock::new(HashMap::new()),
            seq: AtomicU64::new(0),
            tokens: AtomicU64::new(1),
            max,
            max_pending,
            default_transport,
            hook,
            on_end,
            #[cfg(feature = "otel")]
            gauge: crate::telemetry::Gauge::new(crate::telemetry::Counted::Sessions),
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
            None,
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
            self.on_end.clone(),
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
                // The session goes on in the fresh state: its handlers' state and its end
                // hook move over, so the old state's drop does not end it.
                let mut fresh = ConnState::new(
                    id.clone(),
                    transport,
                    old.seq,
                    self.max_pending,
                    old.on_end.lock().take(),
                );
                fresh.share_states_of(&old);
                let fresh = Arc::new(fresh);
                *fresh.session.write() = old.session.read().clone();
                *fresh.subscriptions.lock() = old.subscriptions.lock().clone();
                fresh.era.copy_from(&old.era);
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
                    self.on_end.clone(),
                ));
                self.insert_bounded(&mut map, Arc::clone(&fresh));
                fresh
            }
        };
        state.subscriber.set(Some(Subscriber { token, out }));
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
        #[cfg(feature = "otel")]
        self.gauge.set(map.len());
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
        #[cfg(feature = "otel")]
        self.gauge.set(map.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::LoggingLevel;
    use parking_lot::Mutex;

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
            None,
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
        let table = ConnTable::new(8, 4, Transport::Unknown, None, None);
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
        let table = ConnTable::new(1, 4, Transport::Unknown, None, None);
        let (a, _ra) = Outbound::channel(4);
        let (b, _rb) = Outbound::channel(4);
        table.attach(&ConnId::new("a"), Transport::Http, a);
        table.attach(&ConnId::new("b"), Transport::Http, b);
        assert!(table.get(&ConnId::new("a")).is_none());
        assert_eq!(table.len(), 1);
    }

    #[tokio::test]
    async fn a_request_to_the_client_that_is_dropped_leaves_nothing_parked() {
        let table = ConnTable::new(4, 4, Transport::Unknown, None, None);
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
        let table = ConnTable::new(8, 4, Transport::Unknown, None, None);
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
