//! Hostile or corrupt values in the shared store (what a replica reads back from Redis),
//! decoded exactly as the Redis backend decodes them, served to requests over Streamable
//! HTTP by a replica whose stores are otherwise real (in memory).
//!
//! Input: lines, each one stored value (an empty line leaves that store honest):
//! 0. a session's Redis hash, as a JSON object of fields (`owner`, `caps`, `info`,
//!    `version`, `level`, `init`, `conn`), for the sessions named `hostile-*`;
//! 1. a running stream's record; 2. a parked question; 3. a task;
//! 4. a bus message delivered to the replica (or word that the bus came back after a break);
//! 5. a stream's stored events, as a JSON array of `[position, frame]` (and `true` at the
//!    end: the stream ended);
//! 6. the body of a request on the hostile session; 7. a `Last-Event-ID`.
//!
//! In each, `$SESSION`, `$CONN` and `$REPLICA` stand for a live session's id, its
//! connection id and the replica's id.
//!
//! Checks: nothing panics or hangs; every JSON answer is a JSON-RPC message to an id the
//! client sent; a session record naming an owner is never served to a caller without that
//! owner; a task record is only ever shown to its owner.

#![no_main]

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use futures::StreamExt as _;
use futures::future::BoxFuture;
use libfuzzer_sys::fuzz_target;
use mcp::cluster::memory::MemoryBackend;
use mcp::cluster::{
    Bus, Cluster, Deliver, Envelope, EventStore, Heard, NonceStore, ParkedAsk, Replay,
    SessionChange, SessionRecord, SessionStore, StoreError, StoreResult, StoredEvent, StreamInfo,
};
use mcp::fuzzing::{redis_session_record, redis_value};
use mcp::tasks::{Admission, MemoryTaskStore, TaskLimits, TaskRecord, TaskStore};
use mcp::transport::http::axum::Router;
use mcp::transport::http::axum::body::Body;
use mcp::transport::http::axum::http::{HeaderValue, Method, Request};
use mcp::transport::http::{HttpConfig, router};
use mcp_fuzz::{check_output, runtime};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt as _;

/// The stored values of one input, with the placeholders filled in.
#[derive(Default)]
struct Plan {
    session: Option<String>,
    stream: Option<String>,
    parked: Option<String>,
    task: Option<String>,
    events: Option<String>,
}

fn plan() -> &'static Mutex<Plan> {
    static PLAN: OnceLock<Mutex<Plan>> = OnceLock::new();
    PLAN.get_or_init(Mutex::default)
}

fn planned<T>(pick: impl FnOnce(&Plan) -> Option<T>) -> Option<T> {
    pick(&plan().lock().expect("not poisoned"))
}

/// The session hash of line 0, decoded as the Redis backend decodes `HGETALL`.
fn hostile_session(text: &str) -> StoreResult<SessionRecord> {
    let fields: HashMap<String, String> = match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => map
            .into_iter()
            .map(|(k, v)| match v {
                Value::String(s) => (k, s),
                other => (k, other.to_string()),
            })
            .collect(),
        // Redis hashes hold strings only: anything else is an empty hash.
        _ => HashMap::new(),
    };
    redis_session_record(fields, vec!["tmpl://a/b".to_owned()]).map_err(StoreError)
}

fn decoded<T: serde::de::DeserializeOwned>(text: &str, what: &str) -> StoreResult<T> {
    redis_value(text, what).map_err(StoreError)
}

/// The planted value (`what`, decoded as Redis values are) if the input planted one, else
/// what the honest store says.
fn planted_or<'a, T: serde::de::DeserializeOwned + Send + 'a>(
    text: Option<String>,
    what: &str,
    honest: impl FnOnce() -> BoxFuture<'a, StoreResult<Option<T>>>,
) -> BoxFuture<'a, StoreResult<Option<T>>> {
    match text {
        Some(text) => now(decoded(&text, what).map(Some)),
        None => honest(),
    }
}

/// A replica's stores: honest (in memory) except where the input planted a value.
struct Hostile {
    honest: MemoryBackend,
    tasks: MemoryTaskStore,
    deliver: Mutex<Option<Deliver>>,
}

fn now<'a, T: Send + 'a>(value: T) -> BoxFuture<'a, T> {
    Box::pin(futures::future::ready(value))
}

impl SessionStore for Hostile {
    fn create<'a>(
        &'a self,
        id: &'a str,
        record: &'a SessionRecord,
        ttl: Duration,
    ) -> BoxFuture<'a, StoreResult<()>> {
        self.honest.create(id, record, ttl)
    }

    fn load<'a>(
        &'a self,
        id: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, StoreResult<Option<SessionRecord>>> {
        if id.starts_with("hostile-")
            && let Some(text) = planned(|p| p.session.clone())
        {
            return now(hostile_session(&text).map(Some));
        }
        self.honest.load(id, ttl)
    }

    fn touch<'a>(&'a self, id: &'a str, ttl: Duration) -> BoxFuture<'a, StoreResult<bool>> {
        if id.starts_with("hostile-") {
            return now(Ok(planned(|p| p.session.as_ref().map(|_| ())).is_some()));
        }
        self.honest.touch(id, ttl)
    }

    fn update<'a>(
        &'a self,
        id: &'a str,
        change: &'a SessionChange,
    ) -> BoxFuture<'a, StoreResult<()>> {
        self.honest.update(id, change)
    }

    fn remove<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<bool>> {
        self.honest.remove(id)
    }

    fn next_stream<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<u64>> {
        self.honest.next_stream(id)
    }

    fn open_stream<'a>(
        &'a self,
        id: &'a str,
        stream: u64,
        info: &'a StreamInfo,
    ) -> BoxFuture<'a, StoreResult<()>> {
        self.honest.open_stream(id, stream, info)
    }

    fn claim_stream<'a>(
        &'a self,
        id: &'a str,
        stream: u64,
    ) -> BoxFuture<'a, StoreResult<Option<StreamInfo>>> {
        planted_or(planned(|p| p.stream.clone()), "stream record", || {
            self.honest.claim_stream(id, stream)
        })
    }

    fn stream_info<'a>(
        &'a self,
        id: &'a str,
        stream: u64,
    ) -> BoxFuture<'a, StoreResult<Option<StreamInfo>>> {
        planted_or(planned(|p| p.stream.clone()), "stream record", || {
            self.honest.stream_info(id, stream)
        })
    }

    fn park<'a>(
        &'a self,
        id: &'a str,
        request: &'a str,
        ask: &'a ParkedAsk,
    ) -> BoxFuture<'a, StoreResult<()>> {
        self.honest.park(id, request, ask)
    }

    fn unpark<'a>(
        &'a self,
        id: &'a str,
        request: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<ParkedAsk>>> {
        planted_or(planned(|p| p.parked.clone()), "parked question", || {
            self.honest.unpark(id, request)
        })
    }

    fn parked_on<'a>(
        &'a self,
        id: &'a str,
        stream: u64,
    ) -> BoxFuture<'a, StoreResult<Vec<(String, ParkedAsk)>>> {
        match planned(|p| p.parked.clone()) {
            Some(text) => now(decoded(&text, "parked question").map(|a| vec![("9".into(), a)])),
            None => self.honest.parked_on(id, stream),
        }
    }
}

/// Line 5: `[[position, frame], ..., true?]`.
fn hostile_replay(text: &str) -> StoreResult<Replay> {
    let items = match serde_json::from_str::<Value>(text) {
        Ok(Value::Array(items)) => items,
        _ => return Err(StoreError("malformed stream in redis".into())),
    };
    let mut replay = Replay::default();
    for item in items {
        match item {
            Value::Array(pair) => {
                let text = |v: Option<&Value>| match v {
                    Some(Value::String(s)) => s.clone(),
                    Some(other) => other.to_string(),
                    None => String::new(),
                };
                replay.events.push(StoredEvent {
                    pos: text(pair.first()),
                    frame: text(pair.get(1)),
                });
            }
            Value::Bool(finished) => replay.finished = finished,
            _ => {}
        }
    }
    Ok(replay)
}

impl EventStore for Hostile {
    fn append<'a>(
        &'a self,
        id: &'a str,
        stream: u64,
        frame: &'a str,
        max: usize,
    ) -> BoxFuture<'a, StoreResult<String>> {
        self.honest.append(id, stream, frame, max)
    }

    fn finish<'a>(
        &'a self,
        id: &'a str,
        stream: u64,
        max: usize,
    ) -> BoxFuture<'a, StoreResult<()>> {
        self.honest.finish(id, stream, max)
    }

    fn tail<'a>(&'a self, id: &'a str) -> BoxFuture<'a, StoreResult<String>> {
        self.honest.tail(id)
    }

    fn replay<'a>(
        &'a self,
        id: &'a str,
        stream: u64,
        after: &'a str,
    ) -> BoxFuture<'a, StoreResult<Replay>> {
        match planned(|p| p.events.clone()) {
            Some(text) => now(hostile_replay(&text)),
            None => self.honest.replay(id, stream, after),
        }
    }
}

impl TaskStore for Hostile {
    fn create<'a>(
        &'a self,
        record: &'a TaskRecord,
        limits: TaskLimits,
    ) -> BoxFuture<'a, StoreResult<Admission>> {
        self.tasks.create(record, limits)
    }

    fn get<'a>(&'a self, task_id: &'a str) -> BoxFuture<'a, StoreResult<Option<TaskRecord>>> {
        planted_or(planned(|p| p.task.clone()), "task", || {
            self.tasks.get(task_id)
        })
    }

    fn update<'a>(&'a self, record: &'a TaskRecord) -> BoxFuture<'a, StoreResult<bool>> {
        self.tasks.update(record)
    }

    fn list<'a>(&'a self, owner: &'a str) -> BoxFuture<'a, StoreResult<Vec<TaskRecord>>> {
        match planned(|p| p.task.clone()) {
            Some(text) => now(decoded(&text, "task").map(|t| vec![t])),
            None => self.tasks.list(owner),
        }
    }
}

impl Bus for Hostile {
    fn publish<'a>(&'a self, message: &'a Envelope) -> BoxFuture<'a, StoreResult<usize>> {
        self.honest.publish(message)
    }

    fn listen<'a>(
        &'a self,
        replica: &'a str,
        deliver: Deliver,
        stop: CancellationToken,
    ) -> BoxFuture<'a, StoreResult<()>> {
        *self.deliver.lock().expect("not poisoned") = Some(Arc::clone(&deliver));
        self.honest.listen(replica, deliver, stop)
    }

    fn heartbeat<'a>(&'a self, replica: &'a str, ttl: Duration) -> BoxFuture<'a, StoreResult<()>> {
        self.honest.heartbeat(replica, ttl)
    }

    fn is_alive<'a>(&'a self, replica: &'a str) -> BoxFuture<'a, StoreResult<bool>> {
        self.honest.is_alive(replica)
    }

    fn leave<'a>(&'a self, replica: &'a str) -> BoxFuture<'a, StoreResult<()>> {
        self.honest.leave(replica)
    }
}

/// The replica, its router and the live session every input may name.
struct World {
    app: Router,
    store: Arc<Hostile>,
    replica: String,
    session: String,
    conn: String,
}

async fn send(app: &Router, request: Request<Body>) -> (u16, String, Vec<u8>) {
    let response = app.clone().oneshot(request).await.expect("infallible");
    let status = response.status().as_u16();
    let kind = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let mut body = response.into_body().into_data_stream();
    let mut bytes = Vec::new();
    // An SSE stream may stay open: read what comes within (virtual) seconds, then hang up.
    let _ = tokio::time::timeout(Duration::from_secs(3), async {
        while let Some(Ok(chunk)) = body.next().await {
            bytes.extend_from_slice(&chunk);
            if bytes.len() > 1 << 20 {
                break;
            }
        }
    })
    .await;
    (status, kind, bytes)
}

fn post(session: Option<&str>, version: &str, body: Vec<u8>) -> Request<Body> {
    let mut r = Request::builder()
        .method(Method::POST)
        .uri("/mcp")
        .header("host", "localhost")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", version);
    if let Some(s) = session {
        r = r.header("mcp-session-id", s);
    }
    r.body(Body::from(body)).expect("a request")
}

fn get(session: &str, last_event: &str) -> Request<Body> {
    let mut r = Request::builder()
        .method(Method::GET)
        .uri("/mcp")
        .header("host", "localhost")
        .header("accept", "text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .header("mcp-session-id", session);
    if let Ok(value) = HeaderValue::from_str(last_event)
        && !last_event.is_empty()
    {
        r = r.header("last-event-id", value);
    }
    r.body(Body::empty()).expect("a request")
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        let store = Arc::new(Hostile {
            honest: MemoryBackend::new(),
            tasks: MemoryTaskStore::new(),
            deliver: Mutex::new(None),
        });
        let cluster = Cluster::new(
            Arc::clone(&store) as Arc<dyn SessionStore>,
            Arc::clone(&store) as Arc<dyn EventStore>,
            Arc::new(mcp::cluster::memory::MemoryNonces::new(1024)) as Arc<dyn NonceStore>,
            Arc::clone(&store) as Arc<dyn Bus>,
        )
        .with_tasks(Arc::clone(&store) as Arc<dyn TaskStore>);
        let replica = cluster.replica_id().to_owned();
        let server = mcp_fuzz::builder()
            .cluster(cluster)
            .state_key(b"fuzzing-key-fuzzing-key-fuzzing!".to_vec())
            .enable_tasks()
            // Bounds how long `tasks/result` waits on a stored task said to run elsewhere.
            .task_time_limit(Duration::from_secs(20))
            .build()
            .expect("the cluster server builds");
        let config = HttpConfig::new()
            .allow_unauthorized_for_local_development(true)
            .allow_sessionless_requests(true)
            .max_sessions(64);
        let app = router(server.clone(), config).expect("the router builds");
        runtime().block_on(async {
            server
                .cluster()
                .expect("a replica")
                .start()
                .await
                .expect("the bus listens");
            let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {"elicitation": {}, "tasks": {}},
                "clientInfo": {"name": "fuzz", "version": "0"}}});
            let response = app
                .clone()
                .oneshot(post(None, "2025-11-25", init.to_string().into_bytes()))
                .await
                .expect("infallible");
            let session = response.headers()["mcp-session-id"]
                .to_str()
                .expect("an ASCII session id")
                .to_owned();
            let ready = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
            send(
                &app,
                post(Some(&session), "2025-11-25", ready.to_string().into_bytes()),
            )
            .await;
            let conn = store
                .honest
                .load(&session, Duration::from_secs(3600))
                .await
                .expect("the memory store answers")
                .expect("the session is stored")
                .conn_id;
            World {
                app,
                store,
                replica,
                session,
                conn,
            }
        })
    })
}

/// Checks an answer: a JSON body is a JSON-RPC message to an id the client sent; an SSE
/// body's events are well framed.
fn check_answer(status: u16, kind: &str, body: &[u8], ids: &HashSet<String>) {
    assert!(status != 500, "a 500: {}", String::from_utf8_lossy(body));
    if kind.starts_with("application/json") && !body.is_empty() {
        check_output(&String::from_utf8_lossy(body), ids);
    }
    if kind.starts_with("text/event-stream") {
        let text = String::from_utf8_lossy(body);
        for line in text.lines() {
            assert!(
                line.is_empty()
                    || line.starts_with(':')
                    || ["id:", "event:", "data:", "retry:"]
                        .iter()
                        .any(|f| line.starts_with(f)),
                "a line that is not an SSE field: {line:?}"
            );
        }
    }
}

fn id_set(ids: &[&Value]) -> HashSet<String> {
    ids.iter().map(|id| id.to_string()).collect()
}

fuzz_target!(|data: &[u8]| {
    static N: AtomicU64 = AtomicU64::new(0);
    let w = world();
    let text = String::from_utf8_lossy(data)
        .replace("$SESSION", &w.session)
        .replace("$CONN", &w.conn)
        .replace("$REPLICA", &w.replica);
    let mut lines = text.split('\n').map(str::to_owned);
    let mut line = || lines.next().filter(|l| !l.is_empty());
    let session_text = line();
    *plan().lock().expect("not poisoned") = Plan {
        session: session_text.clone(),
        stream: line(),
        parked: line(),
        task: line(),
        events: None,
    };
    let envelope = line();
    let events = line();
    let body = line();
    let last_event = line().unwrap_or_default();
    plan().lock().expect("not poisoned").events = events;
    let hostile = format!("hostile-{}", N.fetch_add(1, Ordering::Relaxed));
    let task = planned(|p| p.task.clone()).and_then(|t| redis_value::<TaskRecord>(&t, "task").ok());

    runtime().block_on(async {
        // A request on the hostile session.
        let body = body.unwrap_or_else(|| r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#.into());
        let mut ids = HashSet::new();
        mcp_fuzz::ids_in(body.as_bytes(), &mut ids);
        let (status, kind, answer) = send(
            &w.app,
            post(Some(&hostile), "2025-11-25", body.into_bytes()),
        )
        .await;
        check_answer(status, &kind, &answer, &ids);
        // Served only when the record names no owner (the request names none).
        if let Some(Ok(record)) = session_text.as_deref().map(hostile_session)
            && record.owner.is_some()
        {
            assert_eq!(
                status, 404,
                "a session owned by someone was served to no one"
            );
        }

        // Its streams resumed, and an answer to a parked question.
        let (status, kind, answer) = send(&w.app, get(&hostile, &last_event)).await;
        check_answer(status, &kind, &answer, &HashSet::new());
        let reply = json!({"jsonrpc": "2.0", "id": 9, "result": {"action": "accept",
            "content": {"approve": true}}});
        let (status, kind, answer) = send(
            &w.app,
            post(Some(&hostile), "2025-11-25", reply.to_string().into_bytes()),
        )
        .await;
        check_answer(status, &kind, &answer, &HashSet::new());

        // The live session: a stream resumed, and the task read by its owner's connection.
        let (status, kind, answer) = send(&w.app, get(&w.session, &last_event)).await;
        check_answer(status, &kind, &answer, &HashSet::new());
        let task_id = task.as_ref().map_or("t", |t| t.task_id.as_str()).to_owned();
        for (i, method) in ["tasks/get", "tasks/result", "tasks/cancel", "tasks/list"]
            .into_iter()
            .enumerate()
        {
            let id = json!(100 + i);
            let request = json!({"jsonrpc": "2.0", "id": id, "method": method,
                "params": {"taskId": task_id}});
            let (status, kind, answer) = send(
                &w.app,
                post(
                    Some(&w.session),
                    "2025-11-25",
                    request.to_string().into_bytes(),
                ),
            )
            .await;
            check_answer(status, &kind, &answer, &id_set(&[&id]));
            if method == "tasks/get"
                && let Ok(v) = serde_json::from_slice::<Value>(&answer)
                && v.get("result").is_some()
            {
                let owner = task.as_ref().map(|t| t.owner.clone()).unwrap_or_default();
                assert_eq!(
                    owner,
                    format!("conn:{}", w.conn),
                    "a task shown to a connection that does not own it: {v}"
                );
            }
        }

        // The same task asked for statelessly (2026-07-28): no connection owns it.
        let request = json!({"jsonrpc": "2.0", "id": 200, "method": "tasks/get", "params": {
            "taskId": task_id,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {
                    "extensions": {"io.modelcontextprotocol/tasks": {}}},
                "io.modelcontextprotocol/clientInfo": {"name": "fuzz", "version": "0"}}}});
        let (status, kind, answer) = send(
            &w.app,
            post(None, "2026-07-28", request.to_string().into_bytes()),
        )
        .await;
        check_answer(status, &kind, &answer, &id_set(&[&json!(200)]));
        if let Ok(v) = serde_json::from_slice::<Value>(&answer) {
            // Every anonymous stateless request speaks for the one connection
            // `http-stateless` (a local development setting: network transports refuse to
            // boot without authorization).
            assert!(
                v.get("result").is_none()
                    || task
                        .as_ref()
                        .is_some_and(|t| t.owner == "conn:http-stateless"),
                "a task shown to a stateless caller that does not own it: {v}"
            );
        }

        // A bus message, as if another replica published it; text that is none says the
        // bus came back after a break, and the replica reads the (hostile) store again.
        if let Some(text) = envelope {
            let heard = match redis_value::<Envelope>(&text, "bus message") {
                Ok(message) => Heard::Message(message),
                Err(_) => Heard::Resubscribed,
            };
            let deliver = w.store.deliver.lock().expect("not poisoned").clone();
            if let Some(deliver) = deliver {
                deliver(heard);
            }
        }
        // Let whatever the input started run out.
        tokio::time::sleep(Duration::from_secs(1)).await;
        let delete = Request::builder()
            .method(Method::DELETE)
            .uri("/mcp")
            .header("host", "localhost")
            .header("mcp-session-id", &hostile)
            .body(Body::empty())
            .expect("a request");
        let _ = send(&w.app, delete).await;
    });
    *plan().lock().expect("not poisoned") = Plan::default();
});
