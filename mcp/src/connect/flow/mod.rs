//! The links handed out and not yet finished: each names one principal, one provider and
//! one expiry, opens once, and ends once (its waiter told, its client notified), on
//! whichever replica the browser's requests land.
//!
//! The record is in a [`FlowStore`] (shared by replicas in a cluster); the waiting call
//! and its channel to the client stay on the replica that made the link, and a flow that
//! ends on another replica is announced to it over the cluster's bus.

#[cfg(feature = "redis")]
mod redis;
mod store;
mod waiters;

use std::sync::Arc;
use std::time::Duration;

use sha2::Digest as _;
use tokio::sync::oneshot;

pub use store::{FlowLimits, FlowStore, MemoryFlowStore, PendingFlow};

use super::{BrowserUser, ConnectError};
use crate::cluster::{BusEvent, BusHandler, BusMessage, Cluster, StoreError};
use crate::context::ElicitationCompletion;
use waiters::Waiters;

/// How many links one principal may have pending: a client looping on a tool cannot fill
/// the table on its own.
pub(super) const PER_OWNER: usize = 8;

/// The pending links of a [`Connect`](super::Connect).
pub(super) struct Flows {
    store: Arc<dyn FlowStore>,
    waiters: Arc<Waiters>,
    limits: FlowLimits,
    cluster: Option<Cluster>,
    /// Hears of flows that ended on other replicas; the cluster holds it weakly, so it
    /// lives as long as this.
    _on_bus: Option<BusHandler>,
}

/// Why a link or a callback is refused, for the page that says so.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Refusal {
    /// No such link (never issued, or finished).
    Unknown,
    /// It expired.
    Expired,
    /// It was opened already.
    Used,
    /// The browser is not signed in to this server.
    NotSignedIn,
    /// Someone other than the principal who caused it opened it.
    WrongUser,
    /// The store of pending links could not be reached.
    Unavailable,
}

impl From<StoreError> for Refusal {
    fn from(e: StoreError) -> Self {
        tracing::error!(target: "mcp::connect", error = %e, "the store of pending links failed");
        Refusal::Unavailable
    }
}

/// A link opened by its owner: where to send the browser.
pub(super) struct Opened {
    pub(super) provider: String,
    pub(super) oauth_state: String,
    pub(super) challenge: String,
}

/// A callback that belongs to a live link.
pub(super) struct Returned {
    pub(super) reference: String,
    pub(super) owner: BrowserUser,
    pub(super) provider: String,
    pub(super) verifier: String,
}

impl Flows {
    /// Links recorded in `store`, at most `total` pending at once; with a `cluster`, flows
    /// that end on other replicas reach the calls waiting here.
    pub(super) fn new(store: Arc<dyn FlowStore>, total: usize, cluster: Option<Cluster>) -> Self {
        let waiters = Arc::new(Waiters::default());
        let on_bus = cluster.as_ref().map(|cluster| {
            let waiters = Arc::clone(&waiters);
            // A flow that ended elsewhere while the bus was away is not heard of: its
            // call waits out its time, and the client's retry finds the account connected.
            let handler: BusHandler = Arc::new(move |event| {
                if let BusEvent::Message(BusMessage::ConnectFinished { reference, ok, .. }) = event
                {
                    waiters.finish(reference, *ok);
                }
            });
            cluster.on_message(&handler);
            handler
        });
        Flows {
            store,
            waiters,
            limits: FlowLimits {
                per_owner: PER_OWNER,
                total,
            },
            cluster,
            _on_bus: on_bus,
        }
    }

    /// Records a new link; the receiver learns whether its flow ended with tokens.
    pub(super) async fn open(
        &self,
        reference: &str,
        owner: BrowserUser,
        provider: &str,
        completion: Option<ElicitationCompletion>,
        ttl: Duration,
    ) -> Result<oneshot::Receiver<bool>, ConnectError> {
        let flow = PendingFlow {
            owner,
            provider: provider.to_owned(),
            replica: self.cluster.as_ref().map(|c| c.replica_id().to_owned()),
            expires_at_ms: now_ms().saturating_add(ttl.as_millis() as u64),
            opened: false,
            verifier: None,
        };
        let created = self
            .store
            .create(reference, &flow, self.limits)
            .await
            .map_err(|e| ConnectError::Store(e.to_string()))?;
        if !created {
            return Err(ConnectError::Busy);
        }
        Ok(self.waiters.add(reference, completion, ttl))
    }

    /// Drops a link that will not be used (its call ended first).
    pub(super) async fn forget(&self, reference: &str) {
        self.waiters.remove(reference);
        if let Err(e) = self.store.take(reference).await {
            // It expires on its own.
            tracing::warn!(target: "mcp::connect", error = %e, "could not forget a pending link");
        }
    }

    /// The browser of `who` opens `reference`: only its owner goes on, once. Someone else
    /// spends the link (it was shown to the wrong person); a browser not signed in does
    /// not, so the owner can sign in and open it again.
    pub(super) async fn begin(
        &self,
        reference: &str,
        who: Option<&BrowserUser>,
    ) -> Result<Opened, Refusal> {
        let flow = self.store.get(reference).await?.ok_or(Refusal::Unknown)?;
        if flow.expired(now_ms()) {
            return Err(Refusal::Expired);
        }
        if flow.opened {
            return Err(Refusal::Used);
        }
        let Some(who) = who else {
            return Err(Refusal::NotSignedIn);
        };
        if *who != flow.owner {
            // Spent even when the owner opens it at the same moment on another replica:
            // whichever open comes first wins, and the other is told it was used.
            if !self.store.open(reference, None).await? {
                return Err(Refusal::Used);
            }
            // The owner's call learns the flow failed; the link is dead.
            self.finish(reference, false).await;
            return Err(Refusal::WrongUser);
        }
        let verifier = crate::util::random_token(32);
        let challenge = base64url(&sha2::Sha256::digest(verifier.as_bytes()));
        let oauth_state = crate::util::random_token(24);
        if !self
            .store
            .open(reference, Some((&oauth_state, &verifier)))
            .await?
        {
            return Err(Refusal::Used);
        }
        Ok(Opened {
            provider: flow.provider,
            oauth_state,
            challenge,
        })
    }

    /// The third party sent the browser back with `oauth_state`: the link it belongs to,
    /// once, and only for the same person.
    pub(super) async fn returned(
        &self,
        oauth_state: &str,
        who: Option<&BrowserUser>,
    ) -> Result<Returned, Refusal> {
        let reference = self
            .store
            .take_state(oauth_state)
            .await?
            .ok_or(Refusal::Unknown)?;
        let flow = self.store.get(&reference).await?.ok_or(Refusal::Unknown)?;
        if flow.expired(now_ms()) {
            return Err(Refusal::Expired);
        }
        match who {
            None => return Err(Refusal::NotSignedIn),
            Some(w) if *w != flow.owner => {
                // A callback carried into someone else's browser: the flow is over.
                self.finish(&reference, false).await;
                return Err(Refusal::WrongUser);
            }
            Some(_) => {}
        }
        Ok(Returned {
            verifier: flow.verifier.ok_or(Refusal::Unknown)?,
            owner: flow.owner,
            provider: flow.provider,
            reference,
        })
    }

    /// Ends a link's flow, once wherever it is called: with tokens stored (`ok`), its
    /// client is told the elicitation finished, and its call goes on, on the replica
    /// that made the link.
    pub(super) async fn finish(&self, reference: &str, ok: bool) {
        let flow = match self.store.take(reference).await {
            Ok(Some(flow)) => flow,
            // Ended already, or its call stopped waiting.
            Ok(None) => return,
            Err(e) => {
                // The call waiting for it finds the tokens when its wait ends.
                tracing::error!(target: "mcp::connect", error = %e, "could not end a pending link");
                return;
            }
        };
        let elsewhere = match (&self.cluster, flow.replica) {
            (Some(cluster), Some(to)) if to != cluster.replica_id() => Some((cluster, to)),
            _ => None,
        };
        let Some((cluster, to)) = elsewhere else {
            self.waiters.finish(reference, ok);
            return;
        };
        let message = BusMessage::ConnectFinished {
            to,
            reference: reference.to_owned(),
            ok,
        };
        match cluster.publish(message).await {
            Ok(0) => {
                tracing::info!(target: "mcp::connect", "the replica whose call made the link is gone; the client's retry finds the account connected");
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(target: "mcp::connect", error = %e, "could not tell the replica whose call made the link that its flow ended");
            }
        }
    }

    #[cfg(test)]
    fn waiting(&self) -> usize {
        self.waiters.len()
    }
}

fn now_ms() -> u64 {
    crate::tasks::clock::now_ms()
}

fn base64url(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::memory::MemoryBackend;

    fn user(s: &str) -> BrowserUser {
        BrowserUser::new(s, Some("https://idp.example"))
    }

    fn flows(total: usize) -> Flows {
        Flows::new(Arc::new(MemoryFlowStore::new()), total, None)
    }

    const MINUTE: Duration = Duration::from_secs(60);

    #[tokio::test]
    async fn a_link_opens_once_for_its_owner_only() {
        let flows = flows(100);
        let mut done = flows
            .open("r1", user("alice"), "codehost", None, MINUTE)
            .await
            .unwrap();
        assert_eq!(
            flows.begin("r1", None).await.err(),
            Some(Refusal::NotSignedIn),
            "not signed in: the link stays usable"
        );
        let opened = flows.begin("r1", Some(&user("alice"))).await.unwrap();
        assert_eq!(opened.provider, "codehost");
        assert_eq!(
            flows.begin("r1", Some(&user("alice"))).await.err(),
            Some(Refusal::Used)
        );
        assert_eq!(
            flows
                .returned(&opened.oauth_state, Some(&user("bob")))
                .await
                .err(),
            Some(Refusal::WrongUser)
        );
        // The wrong browser's attempt ended the flow: the call learns it failed.
        assert_eq!(
            flows
                .returned(&opened.oauth_state, Some(&user("alice")))
                .await
                .err(),
            Some(Refusal::Unknown)
        );
        assert_eq!(done.try_recv(), Ok(false));
        assert_eq!(flows.store.get("r1").await.unwrap(), None);

        // The owner's own round trip.
        let mut done = flows
            .open("r3", user("alice"), "codehost", None, MINUTE)
            .await
            .unwrap();
        let opened = flows.begin("r3", Some(&user("alice"))).await.unwrap();
        let back = flows
            .returned(&opened.oauth_state, Some(&user("alice")))
            .await
            .unwrap();
        assert_eq!(back.reference, "r3");
        assert_eq!(
            base64url(&sha2::Sha256::digest(back.verifier.as_bytes())),
            opened.challenge,
            "the verifier is the one the challenge was made from"
        );
        assert_eq!(
            flows
                .returned(&opened.oauth_state, Some(&user("alice")))
                .await
                .err(),
            Some(Refusal::Unknown),
            "a callback's state is spent once"
        );
        flows.finish("r3", true).await;
        assert_eq!(done.try_recv(), Ok(true));
        assert_eq!(flows.store.get("r3").await.unwrap(), None);
        assert_eq!(flows.waiting(), 0);
    }

    #[tokio::test]
    async fn someone_else_spends_the_link_and_fails_the_call() {
        let flows = flows(100);
        let mut done = flows
            .open("r2", user("alice"), "codehost", None, MINUTE)
            .await
            .unwrap();
        assert_eq!(
            flows.begin("r2", Some(&user("bob"))).await.err(),
            Some(Refusal::WrongUser)
        );
        assert_eq!(done.try_recv(), Ok(false));
        assert_eq!(
            flows.begin("r2", Some(&user("alice"))).await.err(),
            Some(Refusal::Unknown)
        );
    }

    #[tokio::test]
    async fn links_expire_and_are_bounded() {
        let flows = flows(3);
        flows
            .open("old", user("a"), "p", None, Duration::ZERO)
            .await
            .unwrap();
        assert_eq!(
            flows.begin("old", Some(&user("a"))).await.err(),
            Some(Refusal::Expired)
        );
        // An expired link no longer counts against the bound.
        for i in 0..3 {
            flows
                .open(&format!("r{i}"), user(&format!("u{i}")), "p", None, MINUTE)
                .await
                .unwrap();
        }
        assert!(matches!(
            flows.open("r9", user("u9"), "p", None, MINUTE).await,
            Err(ConnectError::Busy)
        ));
        let flows = self::flows(100);
        for i in 0..PER_OWNER {
            flows
                .open(&format!("m{i}"), user("mallory"), "p", None, MINUTE)
                .await
                .unwrap();
        }
        assert!(matches!(
            flows
                .open("m-last", user("mallory"), "p", None, MINUTE)
                .await,
            Err(ConnectError::Busy)
        ));
        assert!(
            flows
                .open("a", user("alice"), "p", None, MINUTE)
                .await
                .is_ok()
        );
        // An ended flow frees its owner's place.
        flows.forget("m0").await;
        assert!(
            flows
                .open("m-again", user("mallory"), "p", None, MINUTE)
                .await
                .is_ok()
        );
    }

    #[tokio::test]
    async fn a_flow_ended_on_another_replica_reaches_the_waiting_call() {
        let backend = MemoryBackend::new();
        let (a, b) = (backend.replica(), backend.replica());
        a.start().await.unwrap();
        b.start().await.unwrap();
        let store: Arc<dyn FlowStore> = Arc::new(MemoryFlowStore::new());
        let on_a = Flows::new(Arc::clone(&store), 100, Some(a));
        let on_b = Flows::new(store, 100, Some(b));
        let done = on_a
            .open("r", user("alice"), "codehost", None, MINUTE)
            .await
            .unwrap();
        let opened = on_b.begin("r", Some(&user("alice"))).await.unwrap();
        assert_eq!(
            on_a.begin("r", Some(&user("alice"))).await.err(),
            Some(Refusal::Used),
            "opened once across replicas"
        );
        on_b.returned(&opened.oauth_state, Some(&user("alice")))
            .await
            .unwrap();
        on_b.finish("r", true).await;
        let ended = tokio::time::timeout(Duration::from_secs(5), done).await;
        assert_eq!(ended.expect("the bus delivers in time"), Ok(true));
    }
}
