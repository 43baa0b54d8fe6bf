//! The calls waiting on this replica for their links' flows to end: what cannot be
//! shared (a channel to the call, a channel to the client), kept where the call runs.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::sync::oneshot;

use crate::context::ElicitationCompletion;

/// The waiting calls of one `Connect` on this replica, by their link's reference.
#[derive(Default)]
pub(super) struct Waiters {
    waiting: Mutex<HashMap<String, Waiter>>,
}

struct Waiter {
    completion: Option<ElicitationCompletion>,
    done: oneshot::Sender<bool>,
    expires: Instant,
}

impl Waiters {
    /// A call waits for the link `reference`; the receiver learns whether its flow ended
    /// with tokens.
    pub(super) fn add(
        &self,
        reference: &str,
        completion: Option<ElicitationCompletion>,
        ttl: Duration,
    ) -> oneshot::Receiver<bool> {
        let now = Instant::now();
        let (done, rx) = oneshot::channel();
        let mut waiting = self.waiting.lock();
        // A call that stopped waiting (2026-07-28 rounds end at once; a -32042 answer never
        // waits) leaves its entry here until someone sweeps.
        waiting.retain(|_, w| !w.done.is_closed() && w.expires > now);
        waiting.insert(
            reference.to_owned(),
            Waiter {
                completion,
                done,
                expires: now + ttl,
            },
        );
        rx
    }

    /// The call no longer waits.
    pub(super) fn remove(&self, reference: &str) {
        self.waiting.lock().remove(reference);
    }

    /// The flow of `reference` ended: with tokens stored (`ok`) its client is told the
    /// elicitation finished, and its call goes on either way.
    pub(super) fn finish(&self, reference: &str, ok: bool) {
        let Some(waiter) = self.waiting.lock().remove(reference) else {
            return;
        };
        if ok && let Some(completion) = &waiter.completion {
            completion.send();
        }
        let _ = waiter.done.send(ok);
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.waiting.lock().len()
    }
}
