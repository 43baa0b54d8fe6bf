//! Pending links on the replicas' Redis (the `redis` feature), so that the browser's
//! requests may land on any replica.
//!
//! | Key | Type | What |
//! |---|---|---|
//! | `<p>:cf:<reference>` | hash | `flow` (the record as made, JSON), `opened`, `verifier`; expires a while after the link |
//! | `<p>:cfs:<state>` | string | the reference an OAuth `state` names, until the link's record goes |
//! | `<p>:cfo:<owner>` | sorted set | an owner's references by expiry (the per-owner bound) |
//! | `<p>:cfall` | sorted set | every reference by expiry (the bound in total) |
//!
//! Single use is a script each time (`HSETNX opened`, take-and-delete), so two replicas
//! cannot both open a link, accept a callback, or end a flow.

use std::collections::HashMap;

use futures::future::BoxFuture;

use super::store::{FlowLimits, FlowStore, KEPT_AFTER_EXPIRY, PendingFlow};
use crate::cluster::StoreResult;
use crate::cluster::redis::{RedisBackend, err, json, parse_json, traced};

/// Records a link if its owner and the store have room. KEYS: the link, the owner's
/// index, the index of all links. ARGV: the record (JSON), its expiry (Unix ms), now (Unix
/// ms), the reference, the cap per owner, the cap in total, the record's life (ms).
const CREATE: &str = r#"
local now = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
if redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[6]) then return 0 end
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[5]) then return 0 end
local life = tonumber(ARGV[7])
redis.call('HSET', KEYS[1], 'flow', ARGV[1])
redis.call('PEXPIRE', KEYS[1], life)
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[4])
if redis.call('PTTL', KEYS[2]) < life then redis.call('PEXPIRE', KEYS[2], life) end
redis.call('ZADD', KEYS[3], ARGV[2], ARGV[4])
return 1
"#;

/// Marks a link opened, once. KEYS: the link (and, with a callback, the state's key).
/// ARGV: the verifier and the reference, with a callback.
const OPEN: &str = r#"
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if redis.call('HSETNX', KEYS[1], 'opened', '1') == 0 then return 0 end
if #KEYS > 1 then
  redis.call('HSET', KEYS[1], 'verifier', ARGV[1])
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl < 1 then ttl = 1 end
  redis.call('SET', KEYS[2], ARGV[2], 'PX', ttl)
end
return 1
"#;

/// Takes a string: its value, deleted (GETDEL, which Redis before 6.2 lacks). KEYS: it.
const TAKE_STRING: &str = r#"
local v = redis.call('GET', KEYS[1])
if v then redis.call('DEL', KEYS[1]) end
return v
"#;

/// Takes a link's hash: its fields, deleted. KEYS: the link.
const TAKE_HASH: &str = r#"
local v = redis.call('HGETALL', KEYS[1])
if #v == 0 then return false end
redis.call('DEL', KEYS[1])
return v
"#;

impl RedisBackend {
    fn flow_key(&self, reference: &str) -> String {
        self.prefixed(&format!("cf:{reference}"))
    }

    fn flow_state_key(&self, oauth_state: &str) -> String {
        self.prefixed(&format!("cfs:{oauth_state}"))
    }

    fn flow_owner_index(&self, flow: &PendingFlow) -> String {
        self.prefixed(&format!("cfo:{}", flow.owner.key()))
    }

    fn flow_index(&self) -> String {
        self.prefixed("cfall")
    }
}

/// A record from its hash: the record as made, with what happened since.
fn flow_from(mut hash: HashMap<String, String>) -> StoreResult<Option<PendingFlow>> {
    let Some(text) = hash.remove("flow") else {
        return Ok(None);
    };
    let mut flow: PendingFlow = parse_json(&text, "pending connect flow")?;
    flow.opened = hash.contains_key("opened");
    flow.verifier = hash.remove("verifier");
    Ok(Some(flow))
}

impl FlowStore for RedisBackend {
    fn create<'a>(
        &'a self,
        reference: &'a str,
        flow: &'a PendingFlow,
        limits: FlowLimits,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        traced("create", "connect_flow", async move {
            let now = crate::tasks::clock::now_ms();
            let life = flow.expires_at_ms.saturating_sub(now).max(1)
                + KEPT_AFTER_EXPIRY.as_millis() as u64;
            let mut c = self.connection();
            let created: i64 = redis::cmd("EVAL")
                .arg(CREATE)
                .arg(3)
                .arg(self.flow_key(reference))
                .arg(self.flow_owner_index(flow))
                .arg(self.flow_index())
                .arg(json(flow))
                .arg(flow.expires_at_ms)
                .arg(now)
                .arg(reference)
                .arg(limits.per_owner)
                .arg(limits.total)
                .arg(life)
                .query_async(&mut c)
                .await
                .map_err(err)?;
            Ok(created == 1)
        })
    }

    fn get<'a>(&'a self, reference: &'a str) -> BoxFuture<'a, StoreResult<Option<PendingFlow>>> {
        traced("get", "connect_flow", async move {
            let mut c = self.connection();
            let hash: HashMap<String, String> = redis::cmd("HGETALL")
                .arg(self.flow_key(reference))
                .query_async(&mut c)
                .await
                .map_err(err)?;
            flow_from(hash)
        })
    }

    fn open<'a>(
        &'a self,
        reference: &'a str,
        callback: Option<(&'a str, &'a str)>,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        traced("open", "connect_flow", async move {
            let mut cmd = redis::cmd("EVAL");
            cmd.arg(OPEN);
            match callback {
                Some((oauth_state, verifier)) => cmd
                    .arg(2)
                    .arg(self.flow_key(reference))
                    .arg(self.flow_state_key(oauth_state))
                    .arg(verifier)
                    .arg(reference),
                None => cmd.arg(1).arg(self.flow_key(reference)),
            };
            let mut c = self.connection();
            let opened: i64 = cmd.query_async(&mut c).await.map_err(err)?;
            Ok(opened == 1)
        })
    }

    fn take_state<'a>(
        &'a self,
        oauth_state: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<String>>> {
        traced("take_state", "connect_flow", async move {
            let mut c = self.connection();
            redis::cmd("EVAL")
                .arg(TAKE_STRING)
                .arg(1)
                .arg(self.flow_state_key(oauth_state))
                .query_async(&mut c)
                .await
                .map_err(err)
        })
    }

    fn take<'a>(&'a self, reference: &'a str) -> BoxFuture<'a, StoreResult<Option<PendingFlow>>> {
        traced("take", "connect_flow", async move {
            let mut c = self.connection();
            let hash: Option<HashMap<String, String>> = redis::cmd("EVAL")
                .arg(TAKE_HASH)
                .arg(1)
                .arg(self.flow_key(reference))
                .query_async(&mut c)
                .await
                .map_err(err)?;
            let Some(flow) = hash.map(flow_from).transpose()?.flatten() else {
                return Ok(None);
            };
            // Apart from the take: whoever took the record is the only one here, and an
            // entry left behind by a failure here lapses with its score anyway.
            redis::pipe()
                .cmd("ZREM")
                .arg(self.flow_owner_index(&flow))
                .arg(reference)
                .ignore()
                .cmd("ZREM")
                .arg(self.flow_index())
                .arg(reference)
                .ignore()
                .query_async::<()>(&mut c)
                .await
                .map_err(err)?;
            Ok(Some(flow))
        })
    }
}
