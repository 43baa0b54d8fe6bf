//! A cancellation token whose state is read without a lock.
//!
//! tokio-util's `CancellationToken::is_cancelled` takes the token's mutex, as do its clone
//! and drop. The dispatcher asks whether the connection closed on every request, and the
//! stdio reader whether the server is stopping on every line: with an atomic flag beside
//! the token, those questions cost a load.

use std::sync::atomic::{AtomicBool, Ordering};

use tokio_util::sync::CancellationToken;

/// A [`CancellationToken`] with a flag set before it is cancelled. Cancel it through
/// [`Flagged::cancel`]: a clone of [`Flagged::token`] is for waiting on.
#[derive(Debug, Default)]
pub(crate) struct Flagged {
    cancelled: AtomicBool,
    token: CancellationToken,
}

impl Flagged {
    /// Not cancelled.
    pub(crate) fn new() -> Flagged {
        Flagged::default()
    }

    /// Sets the flag, then cancels the token (waking whoever waits on it).
    pub(crate) fn cancel(&self) {
        self.cancelled.store(true, Ordering::Release);
        self.token.cancel();
    }

    /// Whether [`Flagged::cancel`] was called: one atomic load.
    pub(crate) fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Acquire)
    }

    /// The token, to wait on (or to hand to code that takes a token).
    pub(crate) fn token(&self) -> &CancellationToken {
        &self.token
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
