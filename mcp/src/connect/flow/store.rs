//! Where pending links are recorded: in this process ([`MemoryFlowStore`]), or shared by
//! replicas (the Redis backend), so that a link made on one replica opens and finishes on
//! any.

use std::collections::HashMap;
use std::time::Duration;

use futures::future::BoxFuture;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::cluster::StoreResult;
use crate::connect::BrowserUser;

/// How long a record outlives its link: a late click reads "expired" rather than
/// "unknown".
pub(crate) const KEPT_AFTER_EXPIRY: Duration = Duration::from_secs(5 * 60);

/// One pending link, as every replica sees it.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingFlow {
    /// The person whose call made the link: only they may open it.
    pub owner: BrowserUser,
    /// The provider it connects.
    pub provider: String,
    /// The replica whose call waits for the flow to end (`None` in one process).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica: Option<String>,
    /// When the link stops working (Unix milliseconds).
    pub expires_at_ms: u64,
    /// Whether it was opened (by its owner, or refused to someone else).
    #[serde(default)]
    pub opened: bool,
    /// The PKCE verifier, once its owner opened it: a server-side secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verifier: Option<String>,
}

impl std::fmt::Debug for PendingFlow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The verifier never reaches a log.
        f.debug_struct("PendingFlow")
            .field("owner", &self.owner)
            .field("provider", &self.provider)
            .field("replica", &self.replica)
            .field("expires_at_ms", &self.expires_at_ms)
            .field("opened", &self.opened)
            .field("verifier", &self.verifier.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

impl PendingFlow {
    /// Whether the link has expired at `now_ms`.
    pub fn expired(&self, now_ms: u64) -> bool {
        self.expires_at_ms <= now_ms
    }
}

/// How many links may be pending (unexpired) at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowLimits {
    /// Per owner: a client looping on a tool cannot fill the store on its own.
    pub per_owner: usize,
    /// In the whole store.
    pub total: usize,
}

/// The pending links of third-party sign-in, by their reference. Every method that
/// decides something is atomic: across replicas a link opens once, an OAuth `state` is
/// taken once, and a flow ends once.
///
/// [`MemoryFlowStore`] keeps them in this process; the Redis backend implements it for
/// replicas (`Cluster::flow_store`). Records hold a PKCE verifier: keep the store as
/// private as the tokens.
pub trait FlowStore: Send + Sync + 'static {
    /// Records a new link (not opened, no verifier) unless its owner already has
    /// `limits.per_owner` unexpired links or the store `limits.total`; `false` when there
    /// is no room. The record is kept a while after it expires, then forgotten.
    fn create<'a>(
        &'a self,
        reference: &'a str,
        flow: &'a PendingFlow,
        limits: FlowLimits,
    ) -> BoxFuture<'a, StoreResult<bool>>;

    /// The link's record (`None` when it never existed, ended, or was forgotten).
    fn get<'a>(&'a self, reference: &'a str) -> BoxFuture<'a, StoreResult<Option<PendingFlow>>>;

    /// Marks the link opened: `true` for exactly one caller, `false` when it was opened
    /// already or is gone. With `callback` (`(oauth_state, verifier)`, when its owner
    /// opened it), the verifier is recorded with the link and the OAuth state names it
    /// until the record is forgotten.
    fn open<'a>(
        &'a self,
        reference: &'a str,
        callback: Option<(&'a str, &'a str)>,
    ) -> BoxFuture<'a, StoreResult<bool>>;

    /// Takes the reference an OAuth `state` names: exactly one caller gets it.
    fn take_state<'a>(&'a self, oauth_state: &'a str)
    -> BoxFuture<'a, StoreResult<Option<String>>>;

    /// Removes the link: exactly one caller gets its record (the one that ends its flow).
    fn take<'a>(&'a self, reference: &'a str) -> BoxFuture<'a, StoreResult<Option<PendingFlow>>>;
}

/// Pending links in this process's memory: the default, right for one replica.
#[derive(Debug, Default)]
pub struct MemoryFlowStore {
    state: Mutex<MemoryState>,
}

#[derive(Debug, Default)]
struct MemoryState {
    flows: HashMap<String, PendingFlow>,
    /// OAuth `state` values handed to the third party, to their link's reference.
    by_oauth_state: HashMap<String, String>,
}

impl MemoryFlowStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

impl MemoryState {
    /// Forgets records kept long enough after their expiry, and the states naming them.
    fn purge(&mut self, now_ms: u64) {
        let kept = KEPT_AFTER_EXPIRY.as_millis() as u64;
        self.flows
            .retain(|_, f| f.expires_at_ms.saturating_add(kept) > now_ms);
        let flows = &self.flows;
        self.by_oauth_state.retain(|_, r| flows.contains_key(r));
    }
}

fn ready<'a, T: Send + 'a>(value: T) -> BoxFuture<'a, T> {
    Box::pin(std::future::ready(value))
}

impl FlowStore for MemoryFlowStore {
    fn create<'a>(
        &'a self,
        reference: &'a str,
        flow: &'a PendingFlow,
        limits: FlowLimits,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        let now = crate::tasks::clock::now_ms();
        let mut state = self.state.lock();
        state.purge(now);
        let live = state.flows.values().filter(|f| !f.expired(now));
        let (mut total, mut mine) = (0, 0);
        for f in live {
            total += 1;
            mine += usize::from(f.owner == flow.owner);
        }
        // Expired records count too once the table is this full: memory stays bounded
        // whatever the links' lifetime.
        if total >= limits.total
            || mine >= limits.per_owner
            || state.flows.len() >= limits.total.saturating_mul(2)
        {
            return ready(Ok(false));
        }
        state.flows.insert(reference.to_owned(), flow.clone());
        ready(Ok(true))
    }

    fn get<'a>(&'a self, reference: &'a str) -> BoxFuture<'a, StoreResult<Option<PendingFlow>>> {
        let mut state = self.state.lock();
        state.purge(crate::tasks::clock::now_ms());
        ready(Ok(state.flows.get(reference).cloned()))
    }

    fn open<'a>(
        &'a self,
        reference: &'a str,
        callback: Option<(&'a str, &'a str)>,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        let mut state = self.state.lock();
        let Some(flow) = state.flows.get_mut(reference).filter(|f| !f.opened) else {
            return ready(Ok(false));
        };
        flow.opened = true;
        if let Some((oauth_state, verifier)) = callback {
            flow.verifier = Some(verifier.to_owned());
            state
                .by_oauth_state
                .insert(oauth_state.to_owned(), reference.to_owned());
        }
        ready(Ok(true))
    }

    fn take_state<'a>(
        &'a self,
        oauth_state: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<String>>> {
        ready(Ok(self.state.lock().by_oauth_state.remove(oauth_state)))
    }

    fn take<'a>(&'a self, reference: &'a str) -> BoxFuture<'a, StoreResult<Option<PendingFlow>>> {
        let mut state = self.state.lock();
        let flow = state.flows.remove(reference);
        if flow.is_some() {
            state.by_oauth_state.retain(|_, r| r != reference);
        }
        ready(Ok(flow))
    }
}
