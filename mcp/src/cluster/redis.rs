//! Shared state on a Redis server (the `redis` cargo feature), for replicas on several
//! machines.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let cluster = mcp::cluster::redis::connect("redis://127.0.0.1:6379", "mcp").await?;
//! let server = mcp::Server::builder("files", "1.0.0")
//!     .state_key(std::fs::read("/run/secrets/mcp-state-key")?)
//!     .cluster(cluster)
//!     .build()?;
//! # let _ = server; Ok(()) }
//! ```
//!
//! # Keys
//!
//! Every key starts with the prefix (default `mcp`), so several deployments can share one
//! Redis. `<s>` is a session id.
//!
//! | Key | Type | What |
//! |---|---|---|
//! | `<p>:s:<s>` | hash | the session's record: `conn`, `owner`, `version`, `caps`, `info`, `level`, `init`, and `streams` (the last stream number) |
//! | `<p>:s:<s>:subs` | set | its resource subscriptions |
//! | `<p>:s:<s>:asks` | hash | its parked questions: request id → `{replica, stream, approval}` |
//! | `<p>:s:<s>:run` | hash | its running POST streams: stream number → `{replica, calls}` |
//! | `<p>:s:<s>:ev` | stream | its SSE events (`s` stream number, `f` frame; `end` marks a stream's end), `XADD MAXLEN ~` bounded |
//! | `<p>:nonce:<n>` | string | a used `requestState` nonce (the token of the attempt that recorded it), until the state expires (`SET NX PX`) |
//! | `<p>:nonce:<n>:void:<t>` | string | an attempt to record a nonce that got no answer, called off (so that it does nothing if it runs late), until the state expires |
//! | `<p>:epoch` | string | since when (Unix ms, Redis's clock) the store holds every nonce recorded: a `requestState` issued before it is refused (the store lost its keys, and with them the used nonces) |
//! | `<p>:alive:<r>` | string | replica `r`'s heartbeat (`PX` 3 s, renewed every second) |
//! | `<p>:t:<task>` | string | a task's record (JSON), expiring with the task's `ttl` (`PX`) |
//! | `<p>:towner:<owner>`, `<p>:tall` | sorted set | task ids by expiry, per owner and in total (the task caps), each expiring with the last of its tasks |
//! | `<p>:tok:<user>` | hash | third-party tokens (`mcp::connect`, the `oauth` feature): a field per provider |
//! | `<p>:cf:<ref>`, `<p>:cfs:<state>`, `<p>:cfo:<user>`, `<p>:cfall` | | pending third-party sign-in links, their OAuth states and their bounds (`mcp::connect`) |
//!
//! Every command fails after 3 s without an answer (reconnecting included), and the
//! connection that gave no answer is replaced; a command that may run twice is sent again
//! once when its connection turns out to have dropped (Redis restarted). The README's
//! "When Redis fails" says what clients see.
//!
//! Every session key expires with the session (`PEXPIRE` on each use; a write to a
//! session that is gone does nothing). Replicas talk on the channels `<p>:bus` (everyone)
//! and `<p>:to:<r>` (replica `r`). Redis holds session ids, which are bearer secrets, and
//! with `mcp::connect` users' third-party tokens and PKCE verifiers: keep it private to
//! the replicas.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt as _;
use futures::StreamExt as _;
use futures::future::BoxFuture;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use tokio_util::sync::CancellationToken;

use super::{
    Bus, Cluster, Deliver, Envelope, EventStore, Heard, NonceStore, NonceUse, Owner, ParkedAsk,
    Replay, SessionChange, SessionRecord, SessionStore, StoreError, StoreResult, StoredEvent,
    StreamInfo, valid_pos,
};

/// How long one Redis command may take before the request that needed it fails.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(3);

/// How often a replica checks that its bus subscription still hears Redis.
const BUS_PING_EVERY: Duration = Duration::from_secs(1);

/// Connects to Redis at `url` (`redis://[:password@]host:port[/db]`) and returns this
/// replica's [`Cluster`] over it, with keys under `prefix`.
pub async fn connect(url: &str, prefix: &str) -> StoreResult<Cluster> {
    Ok(RedisBackend::connect(url, prefix).await?.replica())
}

/// The stores and the bus on one Redis server.
#[derive(Clone)]
pub struct RedisBackend {
    client: redis::Client,
    conn: Arc<Conn>,
    prefix: Arc<str>,
}

/// The connection commands share, replaced when it stops answering. The manager reconnects
/// on its own when its connection drops, but not when it goes silent: a half-open TCP
/// connection (the far end gone or a stateful middlebox's table flushed, with no reset ever
/// arriving) left every command timing out for good, long after the network recovered.
struct Conn {
    client: redis::Client,
    config: ConnectionManagerConfig,
    /// The manager, and when it was made (which generation a timed-out command used).
    current: parking_lot::RwLock<(ConnectionManager, std::time::Instant)>,
}

impl Conn {
    fn get(&self) -> (ConnectionManager, std::time::Instant) {
        self.current.read().clone()
    }

    /// A command on the manager made at `born` got no answer: if that manager is still
    /// the current one, a new one (connecting on its first command) takes its place. The
    /// old one's pending commands fail with its connection.
    fn replace(&self, born: std::time::Instant) {
        let mut current = self.current.write();
        if current.1 != born {
            return;
        }
        match ConnectionManager::new_lazy_with_config(self.client.clone(), self.config.clone()) {
            Ok(fresh) => {
                tracing::warn!(target: "mcp::cluster", "redis did not answer in time; its next command uses a new connection");
                *current = (fresh, std::time::Instant::now());
            }
            Err(e) => {
                tracing::warn!(target: "mcp::cluster", error = %e, "could not make a new redis connection");
            }
        }
    }
}

/// A Redis error as a store error.
pub(crate) fn err(e: redis::RedisError) -> StoreError {
    StoreError(format!("redis: {e}"))
}

/// A handle on the shared connection for one command (or pipeline), bounded in time: it
/// fails with a clear error after [`RESPONSE_TIMEOUT`] however long the connection takes to
/// come back (without this, a command waiting for a reconnection to a silent server waits
/// for every connection attempt in turn, 13 s and more). A command that may run twice
/// ([`Repeat::Safe`]) is sent once more when its connection turns out to have been dropped
/// (Redis restarted: the first command to notice the dead connection fails, and the
/// manager reconnects), so a restart costs no request.
struct Bounded {
    conn: ConnectionManager,
    repeat: Repeat,
    /// Where the connection came from, and when it was made (a timeout replaces it).
    link: Arc<Conn>,
    born: std::time::Instant,
}

/// Whether a command may be sent again after its connection dropped: it is not known
/// whether the server ran it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Repeat {
    /// Running it twice does what running it once does (reads, `SET`, `HSET`, `PEXPIRE`),
    /// or no harm (`HINCRBY` of a session's stream numbers skips one).
    Safe,
    /// Running it twice would be wrong (`SET NX`, taking a field, `XADD`, `PUBLISH`):
    /// its failure is the request's.
    Never,
}

/// The error of a command that got no answer in time.
fn no_answer() -> redis::RedisError {
    redis::RedisError::from(std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        format!("no answer within {} ms", RESPONSE_TIMEOUT.as_millis()),
    ))
}

/// Whether a failed command is sent once more: its connection had dropped, and it may
/// run twice.
fn again<T>(repeat: Repeat, result: &redis::RedisResult<T>) -> bool {
    match result {
        Err(e) if repeat == Repeat::Safe && e.is_connection_dropped() && !e.is_timeout() => {
            tracing::debug!(target: "mcp::cluster", error = %e, "redis connection dropped; sending again on a new one");
            true
        }
        _ => false,
    }
}

/// `attempts`, or the no-answer error after [`RESPONSE_TIMEOUT`].
async fn within<T>(
    attempts: impl std::future::Future<Output = redis::RedisResult<T>>,
) -> redis::RedisResult<T> {
    tokio::time::timeout(RESPONSE_TIMEOUT, attempts)
        .await
        .unwrap_or_else(|_| Err(no_answer()))
}

impl Bounded {
    /// A command that got no answer in time: the connection is replaced.
    fn check<T>(link: &Conn, born: std::time::Instant, result: &redis::RedisResult<T>) {
        if let Err(e) = result
            && e.is_timeout()
        {
            link.replace(born);
        }
    }
}

impl redis::aio::ConnectionLike for Bounded {
    fn req_packed_command<'a>(
        &'a mut self,
        cmd: &'a redis::Cmd,
    ) -> redis::RedisFuture<'a, redis::Value> {
        let (link, born) = (Arc::clone(&self.link), self.born);
        Box::pin(async move {
            let result = within(async move {
                let first = self.conn.req_packed_command(cmd).await;
                if again(self.repeat, &first) {
                    return self.conn.req_packed_command(cmd).await;
                }
                first
            })
            .await;
            Bounded::check(&link, born, &result);
            result
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a redis::Pipeline,
        offset: usize,
        count: usize,
    ) -> redis::RedisFuture<'a, Vec<redis::Value>> {
        let (link, born) = (Arc::clone(&self.link), self.born);
        Box::pin(async move {
            let result = within(async move {
                let first = self.conn.req_packed_commands(pipeline, offset, count).await;
                if again(self.repeat, &first) {
                    return self.conn.req_packed_commands(pipeline, offset, count).await;
                }
                first
            })
            .await;
            Bounded::check(&link, born, &result);
            result
        })
    }

    fn get_db(&self) -> i64 {
        self.conn.get_db()
    }
}

fn ms(d: Duration) -> u64 {
    (d.as_millis() as u64).max(1)
}

/// Runs a write on a session's key only while the session exists, then gives the written
/// key the session's remaining life. KEYS: the session hash, the written key. ARGV[1]: the
/// command, the rest its arguments after the key.
const WRITE_IF_LIVE: &str = r#"
if redis.call('EXISTS', KEYS[1]) == 0 then return false end
local args = {}
for i = 2, #ARGV do args[#args + 1] = ARGV[i] end
local r = redis.call(ARGV[1], KEYS[2], unpack(args))
local ttl = redis.call('PTTL', KEYS[1])
if ttl > 0 and KEYS[2] ~= KEYS[1] then redis.call('PEXPIRE', KEYS[2], ttl) end
return r
"#;

/// Takes a hash field: returns its value and deletes it, atomically. KEYS: the hash.
/// ARGV[1]: the field.
const TAKE_FIELD: &str = r#"
local v = redis.call('HGET', KEYS[1], ARGV[1])
if v then redis.call('HDEL', KEYS[1], ARGV[1]) end
return v
"#;

impl RedisBackend {
    /// Connects (commands reconnect on their own after a failure). Fails when the server
    /// refuses the connection, or does not answer within 3 s.
    pub async fn connect(url: &str, prefix: &str) -> StoreResult<RedisBackend> {
        match tokio::time::timeout(RESPONSE_TIMEOUT, RedisBackend::try_connect(url, prefix)).await {
            Ok(connected) => connected,
            Err(_) => Err(err(no_answer())),
        }
    }

    async fn try_connect(url: &str, prefix: &str) -> StoreResult<RedisBackend> {
        let client = redis::Client::open(url).map_err(err)?;
        let config = ConnectionManagerConfig::new()
            .set_response_timeout(Some(RESPONSE_TIMEOUT))
            .set_connection_timeout(Some(RESPONSE_TIMEOUT))
            .set_number_of_retries(3);
        let conn = client
            .get_connection_manager_with_config(config.clone())
            .await
            .map_err(err)?;
        let backend = RedisBackend {
            conn: Arc::new(Conn {
                client: client.clone(),
                config,
                current: parking_lot::RwLock::new((conn, std::time::Instant::now())),
            }),
            client,
            prefix: Arc::from(prefix),
        };
        let mut c = backend.bounded(Repeat::Safe);
        let _: String = redis::cmd("PING").query_async(&mut c).await.map_err(err)?;
        // The epoch exists before this replica issues any requestState.
        let _: i64 = redis::cmd("EVAL")
            .arg(EPOCH)
            .arg(1)
            .arg(backend.epoch_key())
            .query_async(&mut c)
            .await
            .map_err(err)?;
        Ok(backend)
    }

    /// A new replica on this connection.
    pub fn replica(&self) -> Cluster {
        let this = Arc::new(self.clone());
        Cluster::new(
            Arc::clone(&this) as Arc<dyn SessionStore>,
            Arc::clone(&this) as Arc<dyn EventStore>,
            Arc::clone(&this) as Arc<dyn NonceStore>,
            Arc::clone(&this) as Arc<dyn Bus>,
        )
        .with_tasks(Arc::clone(&this) as Arc<dyn crate::tasks::TaskStore>)
        .with_backend(this)
    }

    /// A handle on the connection for one command, bounded in time (see [`Bounded`]).
    fn bounded(&self, repeat: Repeat) -> Bounded {
        let (conn, born) = self.conn.get();
        Bounded {
            conn,
            repeat,
            link: Arc::clone(&self.conn),
            born,
        }
    }

    fn key(&self, id: &str) -> String {
        format!("{}:s:{id}", self.prefix)
    }

    fn sub_key(&self, id: &str, part: &str) -> String {
        format!("{}:s:{id}:{part}", self.prefix)
    }

    fn all_keys(&self, id: &str) -> [String; 5] {
        [
            self.key(id),
            self.sub_key(id, "subs"),
            self.sub_key(id, "asks"),
            self.sub_key(id, "run"),
            self.sub_key(id, "ev"),
        ]
    }

    fn bus_channel(&self) -> String {
        format!("{}:bus", self.prefix)
    }

    fn replica_channel(&self, replica: &str) -> String {
        format!("{}:to:{replica}", self.prefix)
    }

    /// `<p>:epoch`: since when the store holds every nonce recorded (see [`EPOCH`]).
    fn epoch_key(&self) -> String {
        format!("{}:epoch", self.prefix)
    }

    fn alive_key(&self, replica: &str) -> String {
        format!("{}:alive:{replica}", self.prefix)
    }

    async fn write_if_live(
        &self,
        id: &str,
        target: &str,
        command: &str,
        args: &[&str],
        repeat: Repeat,
    ) -> StoreResult<redis::Value> {
        let mut c = self.bounded(repeat);
        redis::cmd("EVAL")
            .arg(WRITE_IF_LIVE)
            .arg(2)
            .arg(self.key(id))
            .arg(target)
            .arg(command)
            .arg(args)
            .query_async(&mut c)
            .await
            .map_err(err)
    }

    async fn take_field(&self, key: &str, field: &str) -> StoreResult<Option<String>> {
        let mut c = self.bounded(Repeat::Never);
        redis::cmd("EVAL")
            .arg(TAKE_FIELD)
            .arg(1)
            .arg(key)
            .arg(field)
            .query_async(&mut c)
            .await
            .map_err(err)
    }
}

/// A call to Redis as the store's future: inside a span of its own with the `otel`
/// feature (`operation` is the store's method, `what` the kind of record).
pub(crate) fn traced<'a, T>(
    operation: &'static str,
    what: &'static str,
    call: impl std::future::Future<Output = T> + Send + 'a,
) -> BoxFuture<'a, T> {
    #[cfg(feature = "otel")]
    {
        tracing::Instrument::instrument(call, crate::telemetry::store_span(operation, what)).boxed()
    }
    #[cfg(not(feature = "otel"))]
    {
        let _ = (operation, what);
        call.boxed()
    }
}

pub(crate) fn json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

pub(crate) fn parse_json<T: serde::de::DeserializeOwned>(text: &str, what: &str) -> StoreResult<T> {
    serde_json::from_str(text).map_err(|e| StoreError(format!("malformed {what} in redis: {e}")))
}

pub(crate) fn record_from(
    mut hash: HashMap<String, String>,
    subs: Vec<String>,
) -> StoreResult<SessionRecord> {
    let owner: Option<Owner> = match hash.remove("owner") {
        Some(o) if !o.is_empty() => Some(parse_json(&o, "session owner")?),
        _ => None,
    };
    let value =
        |h: &mut HashMap<String, String>, k: &str| -> StoreResult<Option<serde_json::Value>> {
            match h.remove(k) {
                Some(v) => Ok(Some(parse_json(&v, k)?)),
                None => Ok(None),
            }
        };
    Ok(SessionRecord {
        conn_id: hash.remove("conn").unwrap_or_default(),
        owner,
        capabilities: value(&mut hash, "caps")?,
        client_info: value(&mut hash, "info")?,
        version: hash.remove("version"),
        log_level: hash.remove("level"),
        initialized: hash.get("init").is_some_and(|v| v == "1"),
        subscriptions: subs,
    })
}

impl SessionStore for RedisBackend {
    fn create<'a>(
        &'a self,
        id: &'a str,
        record: &'a SessionRecord,
        ttl: Duration,
    ) -> BoxFuture<'a, StoreResult<()>> {
        traced("create", "session", async move {
            let key = self.key(id);
            let mut fields: Vec<(&str, String)> = vec![
                ("conn", record.conn_id.clone()),
                ("streams", "0".to_owned()),
                (
                    "init",
                    if record.initialized { "1" } else { "0" }.to_owned(),
                ),
            ];
            if let Some(o) = &record.owner {
                fields.push(("owner", json(o)));
            }
            if let Some(v) = &record.version {
                fields.push(("version", v.clone()));
            }
            if let Some(c) = &record.capabilities {
                fields.push(("caps", json(c)));
            }
            if let Some(i) = &record.client_info {
                fields.push(("info", json(i)));
            }
            if let Some(l) = &record.log_level {
                fields.push(("level", l.clone()));
            }
            let mut pipe = redis::pipe();
            pipe.atomic()
                .cmd("HSET")
                .arg(&key)
                .arg(&fields)
                .ignore()
                .cmd("PEXPIRE")
                .arg(&key)
                .arg(ms(ttl))
                .ignore();
            if !record.subscriptions.is_empty() {
                let subs = self.sub_key(id, "subs");
                pipe.cmd("SADD")
                    .arg(&subs)
                    .arg(&record.subscriptions)
                    .ignore()
                    .cmd("PEXPIRE")
                    .arg(&subs)
                    .arg(ms(ttl))
                    .ignore();
            }
            let mut c = self.bounded(Repeat::Safe);
            pipe.query_async::<()>(&mut c).await.map_err(err)
        })
    }

    fn load<'a>(
        &'a self,
        id: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, StoreResult<Option<SessionRecord>>> {
        traced("load", "session", async move {
            let mut pipe = redis::pipe();
            pipe.cmd("HGETALL")
                .arg(self.key(id))
                .cmd("SMEMBERS")
                .arg(self.sub_key(id, "subs"));
            for key in self.all_keys(id) {
                pipe.cmd("PEXPIRE").arg(key).arg(ms(ttl)).ignore();
            }
            let mut c = self.bounded(Repeat::Safe);
            let (hash, subs): (HashMap<String, String>, Vec<String>) =
                pipe.query_async(&mut c).await.map_err(err)?;
            if hash.is_empty() {
                return Ok(None);
            }
            record_from(hash, subs).map(Some)
        })
    }

    fn touch<'a>(&'a self, id: &'a str, ttl: Duration) -> BoxFuture<'a, StoreResult<bool>> {
        traced("touch", "session", async move {
            let mut pipe = redis::pipe();
            for key in self.all_keys(id) {
                pipe.cmd("PEXPIRE").arg(key).arg(ms(ttl));
            }
            let mut c = self.bounded(Repeat::Safe);
            let set: Vec<bool> = pipe.query_async(&mut c).await.map_err(err)?;
            Ok(set.first().copied().unwrap_or(false))
        })
    }

    fn update<'a>(
        &'a self,
        id: &'a str,
        change: &'a SessionChange,
    ) -> BoxFuture<'a, StoreResult<()>> {
        traced("update", "session", async move {
            let key = self.key(id);
            match change {
                SessionChange::Initialized {
                    version,
                    capabilities,
                    client_info,
                } => {
                    let caps = json(capabilities);
                    let mut args = vec!["version", version.as_str(), "caps", caps.as_str()];
                    let info = client_info.as_ref().map(json);
                    if let Some(i) = &info {
                        args.extend(["info", i.as_str()]);
                    }
                    self.write_if_live(id, &key, "HSET", &args, Repeat::Safe)
                        .await?;
                }
                SessionChange::Ready => {
                    self.write_if_live(id, &key, "HSET", &["init", "1"], Repeat::Safe)
                        .await?;
                }
                SessionChange::LogLevel { level } => {
                    self.write_if_live(id, &key, "HSET", &["level", level], Repeat::Safe)
                        .await?;
                }
                SessionChange::Subscribe { uri } => {
                    self.write_if_live(id, &self.sub_key(id, "subs"), "SADD", &[uri], Repeat::Safe)
                        .await?;
                }
                SessionChange::Unsubscribe { uri } => {
                    self.write_if_live(id, &self.sub_key(id, "subs"), "SREM", &[uri], Repeat::Safe)
                        .await?;
                }
            }
            Ok(())
        })
    }

    fn remove<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<bool>> {
        traced("remove", "session", async move {
            let mut c = self.bounded(Repeat::Never);
            let removed: i64 = redis::cmd("DEL")
                .arg(&self.all_keys(id))
                .query_async(&mut c)
                .await
                .map_err(err)?;
            Ok(removed > 0)
        })
    }

    fn next_stream<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<u64>> {
        traced("next_stream", "session", async move {
            let key = self.key(id);
            let n = self
                .write_if_live(id, &key, "HINCRBY", &["streams", "1"], Repeat::Safe)
                .await?;
            Ok(match n {
                redis::Value::Int(n) if n > 0 => n as u64,
                // A session gone mid-request: any number will do, nothing resumes it.
                _ => u64::MAX,
            })
        })
    }

    fn open_stream<'a>(
        &'a self,
        id: &'a str,
        stream: u64,
        info: &'a StreamInfo,
    ) -> BoxFuture<'a, StoreResult<()>> {
        traced("open_stream", "session", async move {
            let field = stream.to_string();
            self.write_if_live(
                id,
                &self.sub_key(id, "run"),
                "HSET",
                &[&field, &json(info)],
                Repeat::Safe,
            )
            .await
            .map(|_| ())
        })
    }

    fn claim_stream<'a>(
        &'a self,
        id: &'a str,
        stream: u64,
    ) -> BoxFuture<'a, StoreResult<Option<StreamInfo>>> {
        traced("claim_stream", "session", async move {
            match self
                .take_field(&self.sub_key(id, "run"), &stream.to_string())
                .await?
            {
                Some(v) => parse_json(&v, "stream record").map(Some),
                None => Ok(None),
            }
        })
    }

    fn stream_info<'a>(
        &'a self,
        id: &'a str,
        stream: u64,
    ) -> BoxFuture<'a, StoreResult<Option<StreamInfo>>> {
        traced("stream_info", "session", async move {
            let mut c = self.bounded(Repeat::Safe);
            let v: Option<String> = redis::cmd("HGET")
                .arg(self.sub_key(id, "run"))
                .arg(stream)
                .query_async(&mut c)
                .await
                .map_err(err)?;
            match v {
                Some(v) => parse_json(&v, "stream record").map(Some),
                None => Ok(None),
            }
        })
    }

    fn park<'a>(
        &'a self,
        id: &'a str,
        request: &'a str,
        ask: &'a ParkedAsk,
    ) -> BoxFuture<'a, StoreResult<()>> {
        traced("park", "session", async move {
            self.write_if_live(
                id,
                &self.sub_key(id, "asks"),
                "HSET",
                &[request, &json(ask)],
                Repeat::Safe,
            )
            .await
            .map(|_| ())
        })
    }

    fn unpark<'a>(
        &'a self,
        id: &'a str,
        request: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<ParkedAsk>>> {
        traced("unpark", "session", async move {
            match self.take_field(&self.sub_key(id, "asks"), request).await? {
                Some(v) => parse_json(&v, "parked question").map(Some),
                None => Ok(None),
            }
        })
    }

    fn parked_on<'a>(
        &'a self,
        id: &'a str,
        stream: u64,
    ) -> BoxFuture<'a, StoreResult<Vec<(String, ParkedAsk)>>> {
        traced("parked_on", "session", async move {
            let mut c = self.bounded(Repeat::Safe);
            let all: HashMap<String, String> = redis::cmd("HGETALL")
                .arg(self.sub_key(id, "asks"))
                .query_async(&mut c)
                .await
                .map_err(err)?;
            let mut out = Vec::new();
            for (request, v) in all {
                let ask: ParkedAsk = parse_json(&v, "parked question")?;
                if ask.stream == stream {
                    out.push((request, ask));
                }
            }
            Ok(out)
        })
    }
}

impl EventStore for RedisBackend {
    fn append<'a>(
        &'a self,
        id: &'a str,
        stream: u64,
        frame: &'a str,
        max: usize,
    ) -> BoxFuture<'a, StoreResult<String>> {
        traced("append", "events", async move {
            let (max, stream) = (max.max(1).to_string(), stream.to_string());
            let pos = self
                .write_if_live(
                    id,
                    &self.sub_key(id, "ev"),
                    "XADD",
                    &["MAXLEN", "~", &max, "*", "s", &stream, "f", frame],
                    Repeat::Never,
                )
                .await?;
            Ok(match pos {
                redis::Value::BulkString(b) => String::from_utf8_lossy(&b).into_owned(),
                redis::Value::SimpleString(s) => s,
                // The session is gone: nothing will resume this stream.
                _ => "0-0".to_owned(),
            })
        })
    }

    fn finish<'a>(
        &'a self,
        id: &'a str,
        stream: u64,
        max: usize,
    ) -> BoxFuture<'a, StoreResult<()>> {
        traced("finish", "events", async move {
            let (max, stream) = (max.max(1).to_string(), stream.to_string());
            self.write_if_live(
                id,
                &self.sub_key(id, "ev"),
                "XADD",
                &["MAXLEN", "~", &max, "*", "s", &stream, "end", "1"],
                Repeat::Never,
            )
            .await
            .map(|_| ())
        })
    }

    fn tail<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<String>> {
        traced("tail", "events", async move {
            let mut c = self.bounded(Repeat::Safe);
            let last: Vec<(String, HashMap<String, String>)> = redis::cmd("XREVRANGE")
                .arg(self.sub_key(id, "ev"))
                .arg("+")
                .arg("-")
                .arg("COUNT")
                .arg(1)
                .query_async(&mut c)
                .await
                .map_err(err)?;
            Ok(last
                .into_iter()
                .next()
                .map_or_else(|| "0-0".to_owned(), |(pos, _)| pos))
        })
    }

    fn replay<'a>(
        &'a self,
        id: &'a str,
        stream: u64,
        after: &'a str,
    ) -> BoxFuture<'a, StoreResult<Replay>> {
        traced("replay", "events", async move {
            let start = if valid_pos(after) && after != "0-0" {
                format!("({after}")
            } else {
                "-".to_owned()
            };
            let mut c = self.bounded(Repeat::Safe);
            let entries: Vec<(String, HashMap<String, String>)> = redis::cmd("XRANGE")
                .arg(self.sub_key(id, "ev"))
                .arg(&start)
                .arg("+")
                .query_async(&mut c)
                .await
                .map_err(err)?;
            let wanted = stream.to_string();
            let mut replay = Replay::default();
            for (pos, mut fields) in entries {
                if fields.get("s") != Some(&wanted) {
                    continue;
                }
                if fields.contains_key("end") {
                    replay.finished = true;
                } else if let Some(frame) = fields.remove("f") {
                    replay.events.push(StoredEvent { pos, frame });
                }
            }
            if !replay.finished && start != "-" {
                // The end may have been stored before the cursor (a resumption after the
                // last event of a finished stream).
                let ends: Vec<(String, HashMap<String, String>)> = redis::cmd("XRANGE")
                    .arg(self.sub_key(id, "ev"))
                    .arg("-")
                    .arg(after)
                    .query_async(&mut c)
                    .await
                    .map_err(err)?;
                replay.finished = ends
                    .iter()
                    .any(|(_, f)| f.get("s") == Some(&wanted) && f.contains_key("end"));
            }
            Ok(replay)
        })
    }
}

/// Sets the store's epoch if it has none: the time (Redis's clock, Unix ms) since which it
/// holds every nonce recorded. A store that lost its keys (restarted without persistence)
/// gets a new one at the next heartbeat. KEYS: the epoch's key. Returns the epoch.
const EPOCH: &str = r#"
local e = redis.call('GET', KEYS[1])
if e then return tonumber(e) end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('SET', KEYS[1], now)
return now
"#;

/// Records a nonce as used, unless the attempt was called off or the state was issued
/// before the store's epoch. KEYS: the nonce's key, the attempt's void key, the epoch's
/// key. ARGV: the attempt's token, the nonce's life (ms), the state's issue time (Unix
/// ms). Returns 1 when recorded, 0 when it was used before (or the attempt was called
/// off), 2 when the state is older than the epoch.
const NONCE_CONSUME: &str = r#"
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
local e = redis.call('GET', KEYS[3])
local epoch = e and tonumber(e)
if not epoch then
  local t = redis.call('TIME')
  epoch = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('SET', KEYS[3], epoch)
end
if tonumber(ARGV[3]) < epoch then return 2 end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
return 0
"#;

/// Calls off an attempt to record a nonce whose answer never came: frees the nonce if the
/// attempt recorded it, or voids the attempt if it has not run yet (it may still be
/// queued). KEYS: the nonce's key, the attempt's void key. ARGV: the attempt's token, the
/// nonce's life (ms).
const NONCE_RELEASE: &str = r#"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
redis.call('SET', KEYS[2], 1, 'PX', ARGV[2])
return 0
"#;

/// How often a called-off nonce record is retried until Redis answers.
const RELEASE_EVERY: Duration = Duration::from_millis(250);

impl RedisBackend {
    /// Calls off the attempt `token` to record `nonce_key` (its answer never came, so the
    /// request that presented the state was refused): once Redis answers again, the state
    /// may be presented again, though the attempt may have run late (Redis slow, or the
    /// reply lost). Retried in the background until done or the state expired.
    fn release_nonce(&self, nonce_key: String, token: String, expires_at_ms: u64) {
        let this = self.clone();
        tokio::spawn(async move {
            let void = format!("{nonce_key}:void:{token}");
            loop {
                let px = expires_at_ms.saturating_sub(crate::tasks::now_ms());
                if px == 0 {
                    return;
                }
                let mut c = this.bounded(Repeat::Safe);
                let done: redis::RedisResult<i64> = redis::cmd("EVAL")
                    .arg(NONCE_RELEASE)
                    .arg(2)
                    .arg(&nonce_key)
                    .arg(&void)
                    .arg(&token)
                    .arg(px)
                    .query_async(&mut c)
                    .await;
                match done {
                    Ok(_) => {
                        tracing::info!(target: "mcp::cluster", "a requestState refused while Redis did not answer can be presented again");
                        return;
                    }
                    Err(_) => tokio::time::sleep(RELEASE_EVERY).await,
                }
            }
        });
    }
}

impl NonceStore for RedisBackend {
    fn consume<'a>(
        &'a self,
        nonce: &'a str,
        expires_at_ms: u64,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        // A state of unknown age: only its single use is checked.
        Box::pin(async move {
            Ok(self.consume_issued(nonce, u64::MAX, expires_at_ms).await? == NonceUse::Fresh)
        })
    }

    fn consume_issued<'a>(
        &'a self,
        nonce: &'a str,
        issued_at_ms: u64,
        expires_at_ms: u64,
    ) -> BoxFuture<'a, StoreResult<NonceUse>> {
        traced("consume", "nonce", async move {
            let px = expires_at_ms.saturating_sub(crate::tasks::now_ms()).max(1);
            let key = format!("{}:nonce:{nonce}", self.prefix);
            let token = crate::util::random_token(12);
            let mut c = self.bounded(Repeat::Never);
            let recorded: redis::RedisResult<i64> = redis::cmd("EVAL")
                .arg(NONCE_CONSUME)
                .arg(3)
                .arg(&key)
                .arg(format!("{key}:void:{token}"))
                .arg(self.epoch_key())
                .arg(&token)
                .arg(px)
                .arg(issued_at_ms)
                .query_async(&mut c)
                .await;
            match recorded {
                Ok(1) => Ok(NonceUse::Fresh),
                Ok(2) => Ok(NonceUse::Forgotten),
                Ok(_) => Ok(NonceUse::Used),
                Err(e) => {
                    // Whether it ran is unknown: the request is refused, and the record,
                    // if it was made, undone.
                    self.release_nonce(key, token, expires_at_ms);
                    Err(err(e))
                }
            }
        })
    }
}

impl Bus for RedisBackend {
    fn publish<'a>(&'a self, message: &'a Envelope) -> BoxFuture<'a, StoreResult<usize>> {
        traced("publish", "bus", async move {
            let channel = match message.message.recipient() {
                Some(to) => self.replica_channel(to),
                None => self.bus_channel(),
            };
            let mut c = self.bounded(Repeat::Never);
            redis::cmd("PUBLISH")
                .arg(channel)
                .arg(json(message))
                .query_async(&mut c)
                .await
                .map_err(err)
        })
    }

    fn listen<'a>(
        &'a self,
        replica: &'a str,
        deliver: Deliver,
        stop: CancellationToken,
    ) -> BoxFuture<'a, StoreResult<()>> {
        let client = self.client.clone();
        let channels = [self.bus_channel(), self.replica_channel(replica)];
        async move {
            // The first subscription is made before this returns: a replica that serves
            // requests hears every message published from then on.
            let pubsub = subscribe(&client, &channels).await.map_err(err)?;
            tokio::spawn(hear(client, channels, pubsub, deliver, stop));
            Ok(())
        }
        .boxed()
    }

    fn heartbeat<'a>(&'a self, replica: &'a str, ttl: Duration) -> BoxFuture<'a, StoreResult<()>> {
        async move {
            let mut c = self.bounded(Repeat::Safe);
            let mut pipe = redis::pipe();
            pipe.cmd("SET")
                .arg(self.alive_key(replica))
                .arg(1)
                .arg("PX")
                .arg(ms(ttl))
                .ignore()
                // A store that lost its keys gets a new epoch within a heartbeat.
                .cmd("EVAL")
                .arg(EPOCH)
                .arg(1)
                .arg(self.epoch_key())
                .ignore();
            pipe.query_async::<()>(&mut c).await.map_err(err)
        }
        .boxed()
    }

    fn is_alive<'a>(&'a self, replica: &'a str) -> BoxFuture<'a, StoreResult<bool>> {
        traced("is_alive", "bus", async move {
            let mut c = self.bounded(Repeat::Safe);
            redis::cmd("EXISTS")
                .arg(self.alive_key(replica))
                .query_async(&mut c)
                .await
                .map_err(err)
        })
    }

    fn leave<'a>(&'a self, replica: &'a str) -> BoxFuture<'a, StoreResult<()>> {
        traced("leave", "bus", async move {
            let mut c = self.bounded(Repeat::Safe);
            redis::cmd("DEL")
                .arg(self.alive_key(replica))
                .query_async::<()>(&mut c)
                .await
                .map_err(err)
        })
    }
}

/// A pub/sub connection subscribed to `channels`, each step bounded.
async fn subscribe(
    client: &redis::Client,
    channels: &[String],
) -> redis::RedisResult<redis::aio::PubSub> {
    let mut pubsub = tokio::time::timeout(RESPONSE_TIMEOUT, client.get_async_pubsub())
        .await
        .unwrap_or_else(|_| Err(no_answer()))?;
    for channel in channels {
        tokio::time::timeout(RESPONSE_TIMEOUT, pubsub.subscribe(channel))
            .await
            .unwrap_or_else(|_| Err(no_answer()))?;
    }
    Ok(pubsub)
}

/// Delivers what `pubsub` hears until `stop`; a broken subscription is announced with
/// [`Heard::Lost`], made again (every 250 ms while Redis is away) and announced with
/// [`Heard::Resubscribed`], since what was published meanwhile is lost.
async fn hear(
    client: redis::Client,
    channels: [String; 2],
    mut pubsub: redis::aio::PubSub,
    deliver: Deliver,
    stop: CancellationToken,
) {
    loop {
        tokio::select! {
            result = pump(pubsub, &deliver) => match result {
                Ok(()) => tracing::warn!(target: "mcp::cluster", "redis pub/sub connection closed; reconnecting"),
                Err(e) => tracing::warn!(target: "mcp::cluster", error = %e, "redis pub/sub failed; reconnecting"),
            },
            _ = stop.cancelled() => return,
        }
        deliver(Heard::Lost);
        pubsub = loop {
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(250)) => {}
                _ = stop.cancelled() => return,
            }
            tokio::select! {
                result = subscribe(&client, &channels) => match result {
                    Ok(pubsub) => break pubsub,
                    Err(e) => tracing::debug!(target: "mcp::cluster", error = %e, "redis pub/sub: cannot subscribe yet"),
                },
                _ = stop.cancelled() => return,
            }
        };
        tracing::info!(target: "mcp::cluster", "redis pub/sub subscribed again");
        deliver(Heard::Resubscribed);
    }
}

/// Hands every message `pubsub` receives to `deliver`, until its connection closes (Ok)
/// or fails.
async fn pump(pubsub: redis::aio::PubSub, deliver: &Deliver) -> redis::RedisResult<()> {
    let (mut sink, mut messages) = pubsub.split();
    // A subscription that stops hearing from Redis without its connection closing
    // (half-open) would leave this replica deaf to the others while its heartbeat says it
    // is alive: Redis is asked for a pong every second, and a missing one ends the
    // connection.
    let mut ping = tokio::time::interval(BUS_PING_EVERY);
    ping.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            msg = messages.next() => {
                let Some(msg) = msg else { return Ok(()) };
                match serde_json::from_slice::<Envelope>(msg.get_payload_bytes()) {
                    Ok(m) => deliver(Heard::Message(m)),
                    Err(e) => {
                        tracing::warn!(target: "mcp::cluster", error = %e, "ignoring a malformed bus message");
                    }
                }
            }
            _ = ping.tick() => {
                tokio::time::timeout(RESPONSE_TIMEOUT, sink.ping::<redis::Value>())
                    .await
                    .unwrap_or_else(|_| Err(no_answer()))?;
            }
        }
    }
}

/// Records a new task if its owner and the store have room. KEYS: the task's key, the
/// owner's index, the index of all tasks. ARGV: the record (JSON), its expiry (Unix ms, or
/// empty for none), now (Unix ms), the task id, the cap per owner, the cap in total.
///
/// Each index expires with the last of its tasks (it is kept for good only while it holds
/// one without a ttl): an owner that stops creating tasks, such as a session that ended,
/// leaves nothing behind once its tasks expired.
const TASK_CREATE: &str = r#"
local now = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
if redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[6]) then return 'store_full' end
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[5]) then return 'owner_full' end
local score = '+inf'
if ARGV[2] ~= '' then
  score = ARGV[2]
  local px = tonumber(ARGV[2]) - now
  if px < 1 then px = 1 end
  redis.call('SET', KEYS[1], ARGV[1], 'PX', px)
else
  redis.call('SET', KEYS[1], ARGV[1])
end
redis.call('ZADD', KEYS[2], score, ARGV[4])
redis.call('ZADD', KEYS[3], score, ARGV[4])
for i = 2, 3 do
  if redis.call('ZCOUNT', KEYS[i], '+inf', '+inf') > 0 then
    redis.call('PERSIST', KEYS[i])
  else
    local last = redis.call('ZRANGE', KEYS[i], -1, -1, 'WITHSCORES')
    local px = tonumber(last[2]) - now
    if px < 1 then px = 1 end
    redis.call('PEXPIRE', KEYS[i], px)
  end
end
return 'created'
"#;

/// Writes a task's change unless the stored task is gone or terminal. KEYS: the task's key.
/// ARGV: the record (JSON).
const TASK_UPDATE: &str = r#"
local current = redis.call('GET', KEYS[1])
if not current then return 0 end
local status = cjson.decode(current)['status']
if status == 'completed' or status == 'failed' or status == 'cancelled' then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'KEEPTTL')
return 1
"#;

impl RedisBackend {
    /// A connection for a command (cheap: a handle on the shared multiplexed one), for the
    /// stores of other modules that keep their records here.
    /// Each command through it fails after [`RESPONSE_TIMEOUT`] rather than wait on.
    #[cfg(feature = "oauth")]
    pub(crate) fn connection(&self) -> impl redis::aio::ConnectionLike + Send + use<> {
        self.bounded(Repeat::Never)
    }

    /// `<prefix>:<rest>`: a key of this deployment.
    #[cfg(feature = "oauth")]
    pub(crate) fn prefixed(&self, rest: &str) -> String {
        format!("{}:{rest}", self.prefix)
    }

    fn task_key(&self, id: &str) -> String {
        format!("{}:t:{id}", self.prefix)
    }

    fn task_owner_index(&self, owner: &str) -> String {
        format!("{}:towner:{owner}", self.prefix)
    }

    fn task_index(&self) -> String {
        format!("{}:tall", self.prefix)
    }
}

impl crate::tasks::TaskStore for RedisBackend {
    fn create<'a>(
        &'a self,
        record: &'a crate::tasks::TaskRecord,
        limits: crate::tasks::TaskLimits,
    ) -> BoxFuture<'a, StoreResult<crate::tasks::Admission>> {
        use crate::tasks::Admission;
        traced("create", "task", async move {
            let expires = record
                .ttl_ms
                .map(|_| record.expires_ms().to_string())
                .unwrap_or_default();
            let mut c = self.bounded(Repeat::Never);
            let outcome: String = redis::cmd("EVAL")
                .arg(TASK_CREATE)
                .arg(3)
                .arg(self.task_key(&record.task_id))
                .arg(self.task_owner_index(&record.owner))
                .arg(self.task_index())
                .arg(json(record))
                .arg(expires)
                .arg(crate::tasks::now_ms())
                .arg(&record.task_id)
                .arg(limits.per_owner)
                .arg(limits.total)
                .query_async(&mut c)
                .await
                .map_err(err)?;
            Ok(match outcome.as_str() {
                "created" => Admission::Created,
                "owner_full" => Admission::OwnerFull,
                _ => Admission::StoreFull,
            })
        })
    }

    fn get<'a>(
        &'a self,
        task_id: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<crate::tasks::TaskRecord>>> {
        traced("get", "task", async move {
            let mut c = self.bounded(Repeat::Safe);
            let text: Option<String> = redis::cmd("GET")
                .arg(self.task_key(task_id))
                .query_async(&mut c)
                .await
                .map_err(err)?;
            text.map(|t| parse_json(&t, "task")).transpose()
        })
    }

    fn update<'a>(
        &'a self,
        record: &'a crate::tasks::TaskRecord,
    ) -> BoxFuture<'a, StoreResult<bool>> {
        traced("update", "task", async move {
            let mut c = self.bounded(Repeat::Never);
            let written: i64 = redis::cmd("EVAL")
                .arg(TASK_UPDATE)
                .arg(1)
                .arg(self.task_key(&record.task_id))
                .arg(json(record))
                .query_async(&mut c)
                .await
                .map_err(err)?;
            Ok(written == 1)
        })
    }

    fn list<'a>(
        &'a self,
        owner: &'a str,
    ) -> BoxFuture<'a, StoreResult<Vec<crate::tasks::TaskRecord>>> {
        traced("list", "task", async move {
            let mut c = self.bounded(Repeat::Safe);
            let ids: Vec<String> = redis::cmd("ZRANGEBYSCORE")
                .arg(self.task_owner_index(owner))
                .arg(format!("({}", crate::tasks::now_ms()))
                .arg("+inf")
                .query_async(&mut c)
                .await
                .map_err(err)?;
            if ids.is_empty() {
                return Ok(Vec::new());
            }
            let keys: Vec<String> = ids.iter().map(|id| self.task_key(id)).collect();
            let texts: Vec<Option<String>> = redis::cmd("MGET")
                .arg(keys)
                .query_async(&mut c)
                .await
                .map_err(err)?;
            let mut records = texts
                .into_iter()
                .flatten()
                .map(|t| parse_json::<crate::tasks::TaskRecord>(&t, "task"))
                .collect::<StoreResult<Vec<_>>>()?;
            records.retain(|r| r.owner == owner);
            records.sort_by(|a, b| (a.created_ms, &a.task_id).cmp(&(b.created_ms, &b.task_id)));
            Ok(records)
        })
    }
}
