//! Expired third-party tokens renewed with their refresh token, once per user and provider
//! at a time in this process, so that a user is sent through the browser again only when
//! the third party no longer honours the grant.

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use parking_lot::Mutex;

use super::{ConnectError, Provider, RefreshError, TokenSet, TokenStore};

/// Held while one user's tokens at one provider are refreshed.
type KeyLock = tokio::sync::Mutex<()>;

/// The refreshes under way, by user and provider.
#[derive(Default)]
pub(super) struct Refreshes {
    locks: Mutex<HashMap<(String, String), Weak<KeyLock>>>,
}

impl Refreshes {
    /// The user's usable tokens for `provider`: the stored set while it is unexpired,
    /// else a refreshed one (stored for the next call). `None` sends the user through the
    /// browser: there is no set, it cannot be refreshed, or the third party rejected the
    /// refresh token (the set is forgotten). A refresh that fails otherwise is an error:
    /// the grant may well be fine, and the user is not asked to connect again for an
    /// outage.
    pub(super) async fn usable(
        &self,
        tokens: &dyn TokenStore,
        user: &str,
        name: &str,
        provider: &dyn Provider,
    ) -> Result<Option<TokenSet>, ConnectError> {
        let Some(stored) = get(tokens, user, name).await? else {
            return Ok(None);
        };
        if !stored.expired() {
            return Ok(Some(stored));
        }
        if stored.refresh_token().is_none() {
            return Ok(None);
        }
        let lock = self.lock(user, name);
        let _one_at_a_time = lock.lock().await;
        // Whoever held the lock before may have refreshed already.
        let Some(stored) = get(tokens, user, name).await? else {
            return Ok(None);
        };
        let Some(refresh_token) = stored.refresh_token().filter(|_| stored.expired()) else {
            return Ok((!stored.expired()).then_some(stored));
        };
        match provider.refresh(refresh_token).await {
            Ok(fresh) => {
                let fresh = fresh.renewing(&stored);
                tokens
                    .put(user, name, &fresh)
                    .await
                    .map_err(|e| ConnectError::Store(e.to_string()))?;
                tracing::debug!(target: "mcp::connect", provider = %name, "refreshed a user's third-party tokens");
                Ok(Some(fresh))
            }
            Err(RefreshError::Rejected) => {
                tracing::info!(target: "mcp::connect", provider = %name, "the third party rejected a refresh token; the user connects again");
                tokens
                    .remove(user, name)
                    .await
                    .map_err(|e| ConnectError::Store(e.to_string()))?;
                Ok(None)
            }
            Err(RefreshError::Unsupported) => Ok(None),
            Err(RefreshError::Failed(e)) => {
                tracing::warn!(target: "mcp::connect", provider = %name, error = %e, "could not refresh a user's third-party tokens");
                Err(ConnectError::Refresh(e))
            }
        }
    }

    /// The lock of one user's tokens at one provider; entries nobody holds are swept.
    fn lock(&self, user: &str, name: &str) -> Arc<KeyLock> {
        let mut locks = self.locks.lock();
        let key = (user.to_owned(), name.to_owned());
        if let Some(lock) = locks.get(&key).and_then(Weak::upgrade) {
            return lock;
        }
        locks.retain(|_, l| l.strong_count() > 0);
        let lock = Arc::new(KeyLock::new(()));
        locks.insert(key, Arc::downgrade(&lock));
        lock
    }
}

async fn get(
    tokens: &dyn TokenStore,
    user: &str,
    name: &str,
) -> Result<Option<TokenSet>, ConnectError> {
    tokens
        .get(user, name)
        .await
        .map_err(|e| ConnectError::Store(e.to_string()))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use futures::future::BoxFuture;

    use super::*;
    use crate::connect::MemoryTokenStore;

    /// A third party whose refreshes are counted, answer slowly (so callers overlap) and
    /// end as told.
    struct Counting {
        refreshes: AtomicUsize,
        answer: Result<(), RefreshError>,
    }

    impl Provider for Counting {
        fn authorize_url(&self, _: &str, _: &str, _: &str) -> String {
            unreachable!("no browser in these tests")
        }

        fn exchange<'a>(
            &'a self,
            _: &'a str,
            _: &'a str,
            _: &'a str,
        ) -> BoxFuture<'a, Result<TokenSet, String>> {
            unreachable!("no browser in these tests")
        }

        fn refresh<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<TokenSet, RefreshError>> {
            Box::pin(async move {
                assert_eq!(token, "refresh-1");
                let n = self.refreshes.fetch_add(1, Ordering::SeqCst) + 1;
                tokio::time::sleep(Duration::from_millis(50)).await;
                self.answer.clone().map(|()| {
                    TokenSet::new(
                        format!("access-{}", n + 1),
                        None,
                        Some(Duration::from_secs(3600)),
                        None,
                    )
                })
            })
        }
    }

    fn provider(answer: Result<(), RefreshError>) -> Counting {
        Counting {
            refreshes: AtomicUsize::new(0),
            answer,
        }
    }

    async fn expired_store() -> MemoryTokenStore {
        let store = MemoryTokenStore::new();
        let stale = TokenSet::new(
            "access-1",
            Some("refresh-1".into()),
            Some(Duration::ZERO),
            Some("repo:read".into()),
        );
        store.put("alice", "codehost", &stale).await.unwrap();
        store
    }

    #[tokio::test]
    async fn concurrent_callers_refresh_once_and_keep_what_the_answer_left_out() {
        let store = expired_store().await;
        let third_party = provider(Ok(()));
        let refreshes = Refreshes::default();
        let (a, b) = tokio::join!(
            refreshes.usable(&store, "alice", "codehost", &third_party),
            refreshes.usable(&store, "alice", "codehost", &third_party),
        );
        let (a, b) = (a.unwrap().unwrap(), b.unwrap().unwrap());
        assert_eq!(third_party.refreshes.load(Ordering::SeqCst), 1);
        assert_eq!(a, b);
        assert_eq!(a.access_token(), "access-2");
        assert!(!a.expired());
        assert_eq!(
            a.refresh_token(),
            Some("refresh-1"),
            "not rotated: the old refresh token stays"
        );
        assert_eq!(a.scope(), Some("repo:read"));
        assert_eq!(store.get("alice", "codehost").await.unwrap(), Some(a));
        assert!(
            refreshes
                .locks
                .lock()
                .values()
                .all(|l| l.strong_count() == 0)
        );
    }

    #[tokio::test]
    async fn a_rejected_refresh_forgets_the_tokens_and_a_failed_one_is_an_error() {
        let store = expired_store().await;
        let refreshes = Refreshes::default();
        let failing = provider(Err(RefreshError::Failed("connection refused".into())));
        let outcome = refreshes
            .usable(&store, "alice", "codehost", &failing)
            .await;
        assert!(
            matches!(&outcome, Err(ConnectError::Refresh(e)) if e == "connection refused"),
            "{outcome:?}"
        );
        assert!(
            store.get("alice", "codehost").await.unwrap().is_some(),
            "an outage forgets nothing"
        );

        let rejecting = provider(Err(RefreshError::Rejected));
        let outcome = refreshes
            .usable(&store, "alice", "codehost", &rejecting)
            .await;
        assert!(matches!(outcome, Ok(None)), "{outcome:?}");
        assert_eq!(store.get("alice", "codehost").await.unwrap(), None);

        // Without a refresh token (or a provider that cannot refresh): the user connects
        // again, and nothing is asked of the third party.
        let store = MemoryTokenStore::new();
        let stale = TokenSet::new("access-1", None, Some(Duration::ZERO), None);
        store.put("alice", "codehost", &stale).await.unwrap();
        let counting = provider(Ok(()));
        let outcome = refreshes
            .usable(&store, "alice", "codehost", &counting)
            .await;
        assert!(matches!(outcome, Ok(None)), "{outcome:?}");
        assert_eq!(counting.refreshes.load(Ordering::SeqCst), 0);
    }
}
