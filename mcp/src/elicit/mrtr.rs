//! Multi round-trip requests (2026-07-28): how `Ctx::elicit`, `Ctx::sample` and `Ctx::roots`
//! work without server-to-client requests.
//!
//! A handler runs as usual. When it asks for input that the request does not carry, the ask
//! is recorded and the handler is suspended (its future is dropped); the request ends with
//! an input-required result listing every recorded ask and a sealed state holding the
//! answers so far. When the client retries with the answers, the handler runs again from
//! the start and each ask, in the same order, finds its answer. Handlers should therefore
//! ask before they act: side effects before an ask happen once per round.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicU32, Ordering};

use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::Notify;

use super::state::{ApprovalState, Opened};
use crate::protocol::{InputRequest, Meta};

/// The input-required machinery of one request.
pub(crate) struct Mrtr {
    /// Answers from the verified state, then this request's answers for other keys.
    answers: Meta,
    /// Keys whose answers arrived with this request (not from the state).
    fresh: HashSet<String>,
    /// Answers the handler consumed: carried into the next round's state.
    used: Mutex<Meta>,
    asked: Mutex<BTreeMap<String, InputRequest>>,
    missing_capability: Mutex<Option<Value>>,
    wake: Notify,
    counter: AtomicU32,
    app_state_in: Option<Value>,
    app_state_out: Mutex<Option<Value>>,
    approval: Mutex<ApprovalState>,
    state_presented: bool,
}

impl Mrtr {
    /// Combines a verified state (if one was presented) with this request's answers.
    /// Answers sealed in the state win: a later round cannot rewrite an earlier answer.
    pub(crate) fn new(opened: Option<Opened>, input_responses: Option<Meta>) -> Self {
        let state_presented = opened.is_some();
        let opened = opened.unwrap_or_default();
        let mut answers = opened.answers;
        let mut fresh = HashSet::new();
        for (key, value) in input_responses.unwrap_or_default() {
            if !answers.contains_key(&key) {
                fresh.insert(key.clone());
                answers.insert(key, value);
            }
        }
        Mrtr {
            answers,
            fresh,
            used: Mutex::new(Meta::new()),
            asked: Mutex::new(BTreeMap::new()),
            missing_capability: Mutex::new(None),
            wake: Notify::new(),
            counter: AtomicU32::new(0),
            app_state_in: opened.app_state,
            app_state_out: Mutex::new(None),
            approval: Mutex::new(opened.approval),
            state_presented,
        }
    }

    /// A key for an ask that did not name one: `<kind>-<n>` in call order, stable across
    /// rounds because the handler replays its asks in the same order.
    pub(crate) fn next_key(&self, kind: &str) -> String {
        let n = self.counter.fetch_add(1, Ordering::Relaxed) + 1;
        format!("{kind}-{n}")
    }

    /// The answer for `key`, if the request has one; it is carried into later rounds.
    pub(crate) fn answer(&self, key: &str) -> Option<Value> {
        let value = self.answers.get(key)?.clone();
        self.used.lock().insert(key.to_owned(), value.clone());
        Some(value)
    }

    /// An answer that arrived with this very request, alongside a verified state.
    pub(crate) fn fresh_answer(&self, key: &str) -> Option<&Value> {
        (self.state_presented && self.fresh.contains(key))
            .then(|| self.answers.get(key))
            .flatten()
    }

    /// Records an ask and suspends the handler for good: the request will end with an
    /// input-required result.
    pub(crate) async fn suspend<T>(&self, key: String, request: InputRequest) -> T {
        self.used.lock().remove(&key);
        self.asked.lock().insert(key, request);
        self.wake.notify_one();
        std::future::pending().await
    }

    /// Records an ask without suspending anything (the handler already ended): the
    /// request ends with an input-required result listing it.
    pub(crate) fn record_ask(&self, key: String, request: InputRequest) {
        self.used.lock().remove(&key);
        self.asked.lock().insert(key, request);
    }

    /// Records a capability the request needs but did not declare, and suspends the
    /// handler: the request will fail with -32021.
    pub(crate) async fn require<T>(&self, capabilities: Value) -> T {
        *self.missing_capability.lock() = Some(capabilities);
        self.wake.notify_one();
        std::future::pending().await
    }

    /// Completes when the handler suspended itself.
    pub(crate) async fn suspended(&self) {
        self.wake.notified().await
    }

    pub(crate) fn missing_capability(&self) -> Option<Value> {
        self.missing_capability.lock().take()
    }

    pub(crate) fn take_asked(&self) -> BTreeMap<String, InputRequest> {
        std::mem::take(&mut *self.asked.lock())
    }

    pub(crate) fn carried_answers(&self) -> Meta {
        self.used.lock().clone()
    }

    pub(crate) fn app_state(&self) -> Option<&Value> {
        self.app_state_in.as_ref()
    }

    pub(crate) fn set_app_state(&self, value: Value) {
        *self.app_state_out.lock() = Some(value);
    }

    pub(crate) fn app_state_out(&self) -> Option<Value> {
        self.app_state_out
            .lock()
            .clone()
            .or_else(|| self.app_state_in.clone())
    }

    pub(crate) fn approval(&self) -> ApprovalState {
        *self.approval.lock()
    }

    pub(crate) fn set_approval(&self, approval: ApprovalState) {
        *self.approval.lock() = approval;
    }
}
