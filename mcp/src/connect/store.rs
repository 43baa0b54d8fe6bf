//! Where the third parties' tokens live: server-side, by user and provider.

use std::collections::HashMap;

use futures::future::BoxFuture;
use parking_lot::Mutex;

use super::TokenSet;
use crate::cluster::StoreResult;

/// Keeps third-party tokens by user (an opaque key) and provider. Implement it to keep
/// them in your database; [`MemoryTokenStore`] keeps them in the process, and the Redis
/// backend implements it for replicas.
pub trait TokenStore: Send + Sync + 'static {
    /// The user's tokens for `provider`.
    fn get<'a>(
        &'a self,
        user: &'a str,
        provider: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<TokenSet>>>;
    /// Stores (replaces) the user's tokens for `provider`.
    fn put<'a>(
        &'a self,
        user: &'a str,
        provider: &'a str,
        tokens: &'a TokenSet,
    ) -> BoxFuture<'a, StoreResult<()>>;
    /// Forgets them; returns whether there were any.
    fn remove<'a>(&'a self, user: &'a str, provider: &'a str) -> BoxFuture<'a, StoreResult<bool>>;
}

/// Tokens in this process's memory (lost on restart).
#[derive(Debug, Default)]
pub struct MemoryTokenStore {
    tokens: Mutex<HashMap<(String, String), TokenSet>>,
}

impl MemoryTokenStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

impl TokenStore for MemoryTokenStore {
    fn get<'a>(
        &'a self,
        user: &'a str,
        provider: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<TokenSet>>> {
        let found = self
            .tokens
            .lock()
            .get(&(user.to_owned(), provider.to_owned()))
            .cloned();
        Box::pin(std::future::ready(Ok(found)))
    }

    fn put<'a>(
        &'a self,
        user: &'a str,
        provider: &'a str,
        tokens: &'a TokenSet,
    ) -> BoxFuture<'a, StoreResult<()>> {
        self.tokens
            .lock()
            .insert((user.to_owned(), provider.to_owned()), tokens.clone());
        Box::pin(std::future::ready(Ok(())))
    }

    fn remove<'a>(&'a self, user: &'a str, provider: &'a str) -> BoxFuture<'a, StoreResult<bool>> {
        let removed = self
            .tokens
            .lock()
            .remove(&(user.to_owned(), provider.to_owned()))
            .is_some();
        Box::pin(std::future::ready(Ok(removed)))
    }
}

/// Third parties' tokens on the replicas' Redis: one hash per user, `<prefix>:tok:<user>`,
/// a field per provider holding the token set as JSON. They are server-side secrets:
/// protect the Redis as you protect the tokens.
#[cfg(feature = "redis")]
impl TokenStore for crate::cluster::redis::RedisBackend {
    fn get<'a>(
        &'a self,
        user: &'a str,
        provider: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<TokenSet>>> {
        use crate::cluster::redis::{err, parse_json, traced};
        traced("get", "tokens", async move {
            let mut c = self.connection();
            let found: Option<String> = redis::cmd("HGET")
                .arg(self.prefixed(&format!("tok:{user}")))
                .arg(provider)
                .query_async(&mut c)
                .await
                .map_err(err)?;
            found.map(|v| parse_json(&v, "token set")).transpose()
        })
    }

    fn put<'a>(
        &'a self,
        user: &'a str,
        provider: &'a str,
        tokens: &'a TokenSet,
    ) -> BoxFuture<'a, StoreResult<()>> {
        use crate::cluster::redis::{err, json, traced};
        traced("put", "tokens", async move {
            let mut c = self.connection();
            redis::cmd("HSET")
                .arg(self.prefixed(&format!("tok:{user}")))
                .arg(provider)
                .arg(json(tokens))
                .query_async::<()>(&mut c)
                .await
                .map_err(err)
        })
    }

    fn remove<'a>(&'a self, user: &'a str, provider: &'a str) -> BoxFuture<'a, StoreResult<bool>> {
        use crate::cluster::redis::{err, traced};
        traced("remove", "tokens", async move {
            let mut c = self.connection();
            let removed: u64 = redis::cmd("HDEL")
                .arg(self.prefixed(&format!("tok:{user}")))
                .arg(provider)
                .query_async(&mut c)
                .await
                .map_err(err)?;
            Ok(removed > 0)
        })
    }
}
