//! A cancellation token whose state is read without a lock, made only when someone waits.
//!
//! tokio-util's `CancellationToken::is_cancelled` takes the token's mutex, as do its clone
//! and drop. The dispatcher asks whether the connection closed on every request, and the
//! stdio reader whether the server is stopping on every line: with an atomic flag beside
//! the token, those questions cost a load. Most of these stops are never waited on (every
//! 2026-07-28 request has a connection state of its own, whose stops nobody awaits when
//! its handler finishes at once): the token, an allocation, is made the first time
//! [`Flagged::token`] is asked for.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering, fence};

use tokio_util::sync::CancellationToken;

/// A [`CancellationToken`] with a flag set before it is cancelled. Cancel it through
/// [`Flagged::cancel`]: [`Flagged::token`] (or a clone of it) is for waiting on.
#[derive(Debug, Default)]
pub(crate) struct Flagged {
    cancelled: AtomicBool,
    token: OnceLock<CancellationToken>,
}

impl Flagged {
    /// Not cancelled.
    pub(crate) fn new() -> Flagged {
        Flagged::default()
    }

    /// Sets the flag, then cancels the token if one was made (waking whoever waits on it).
    pub(crate) fn cancel(&self) {
        self.cancelled.store(true, Ordering::Relaxed);
        // Paired with the fence in `token`: either this sees the token made there, or that
        // sees the flag set here (or both); a token is never left uncancelled.
        fence(Ordering::SeqCst);
        if let Some(token) = self.token.get() {
            token.cancel();
        }
    }

    /// Whether [`Flagged::cancel`] was called: one atomic load.
    pub(crate) fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Acquire)
    }

    /// The token, to wait on (or to hand to code that takes a token): made on the first
    /// call, already cancelled when [`Flagged::cancel`] came first.
    pub(crate) fn token(&self) -> &CancellationToken {
        let token = self.token.get_or_init(CancellationToken::new);
        fence(Ordering::SeqCst);
        if self.cancelled.load(Ordering::Relaxed) {
            token.cancel();
        }
        token
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_and_the_token_agree_after_cancel() {
        let stop = Flagged::new();
        let waiter = stop.token().clone();
        assert!(!stop.is_cancelled());
        assert!(!waiter.is_cancelled());
        stop.cancel();
        assert!(stop.is_cancelled());
        assert!(
            waiter.is_cancelled(),
            "a clone of the token sees the cancel"
        );
    }

    #[test]
    fn a_token_asked_for_after_cancel_is_cancelled() {
        let stop = Flagged::new();
        stop.cancel();
        assert!(stop.is_cancelled());
        assert!(stop.token().is_cancelled());
    }

    #[test]
    fn cancel_racing_the_first_waiter_always_reaches_the_token() {
        for _ in 0..2_000 {
            let stop = std::sync::Arc::new(Flagged::new());
            let canceller = std::thread::spawn({
                let stop = std::sync::Arc::clone(&stop);
                move || stop.cancel()
            });
            let token = stop.token().clone();
            canceller.join().unwrap();
            assert!(token.is_cancelled());
        }
    }

    #[tokio::test]
    async fn a_waiter_wakes_on_cancel() {
        let stop = std::sync::Arc::new(Flagged::new());
        let waiting = tokio::spawn({
            let stop = std::sync::Arc::clone(&stop);
            async move { stop.token().cancelled().await }
        });
        tokio::task::yield_now().await;
        stop.cancel();
        tokio::time::timeout(std::time::Duration::from_secs(5), waiting)
            .await
            .expect("the waiter woke")
            .expect("the waiter did not panic");
    }
}
