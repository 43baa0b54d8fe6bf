//! Redis faults (issue 21): what replicas sharing state on Redis do when Redis is missing at
//! boot, restarted mid-session (with and without persistence), slow, or cut off from one
//! replica. The promise: nothing lost that persistence keeps, a clear error for the rest,
//! within a bounded time, and never a wrong answer (a session called unknown while it may
//! exist, an approval run twice).
//!
//! Each scenario starts its own `redis-server` (skipped, with a line saying so, when it is
//! not installed, unless `MCP_REQUIRE_REDIS=1`) and two replicas of the HTTP fixture
//! server, each with a Redis connection of its own. Every wait is bounded; the figures
//! (time to an error, time to recover) are printed.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use mcp::cluster::redis::RedisBackend;
use mcp_tests::http::{
    Fixture, HttpTestServer, McpHttp, SseReader, StatelessHttp, fixture_in, test_config,
};
use mcp_tests::proxy::{Link, TcpProxy};
use mcp_tests::redis::{RedisServer, free_port};
use mcp_tests::{call_params as call, response_text as text};
use reqwest::StatusCode;
use serde_json::{Value, json};

/// The key every replica seals `requestState` with.
const SHARED_KEY: &[u8] = b"the-replicas-share-this-32+-byte-state-key";

/// The longest a request may take to fail when Redis does not answer: the backend's
/// per-command bound (3 s) and some slack for a loaded machine.
const BOUND: Duration = Duration::from_millis(4500);

/// How long a replica may take to serve again once Redis is back.
const RECOVERY: Duration = Duration::from_secs(5);
/// How long a replica serves a session from its copy without reading the store
/// (`HttpConfig::session_recheck`, at its default), and a little more.
const SESSION_RECHECK: Duration = Duration::from_millis(1100);

struct Replica {
    http: HttpTestServer,
    fixture: Fixture,
}

/// Replicas of the HTTP fixture sharing one Redis, each on its own connection.
struct Replicas {
    replicas: Vec<Replica>,
}

impl Replicas {
    /// One replica per URL (the Redis server's, or a proxy's in front of it).
    async fn start(urls: &[String], test: &str) -> Replicas {
        let prefix = format!("t-{test}-{}", std::process::id());
        let mut replicas = Vec::new();
        for url in urls {
            let backend = RedisBackend::connect(url, &prefix)
                .await
                .expect("connect to the test redis");
            let fixture = fixture_in(Some(backend.replica()), Some(SHARED_KEY));
            let http = HttpTestServer::start(fixture.server.clone(), test_config()).await;
            replicas.push(Replica { http, fixture });
        }
        Replicas { replicas }
    }

    fn url(&self, i: usize) -> String {
        self.replicas[i].http.url("/mcp")
    }

    /// `client`'s session, talking to replica `i`.
    fn on(&self, client: &McpHttp, i: usize) -> McpHttp {
        let mut c = client.clone();
        c.url = self.url(i);
        c
    }

    /// A 2026-07-28 client of replica `i` that answers questions and runs tasks.
    fn stateless(&self, i: usize) -> StatelessHttp {
        StatelessHttp::new(self.url(i)).with_capabilities(
            json!({"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}}),
        )
    }

    fn spent(&self) -> usize {
        self.replicas
            .iter()
            .map(|r| r.fixture.spent.load(Ordering::SeqCst))
            .sum()
    }
}

/// Runs `f`, asserting it finished within `bound`; returns its output and how long it took.
async fn timed<T>(
    what: &str,
    bound: Duration,
    f: impl std::future::Future<Output = T>,
) -> (T, Duration) {
    let started = Instant::now();
    let out = tokio::time::timeout(bound * 3, f)
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer within {:?}", bound * 3));
    let took = started.elapsed();
    assert!(took <= bound, "{what}: took {took:?}, more than {bound:?}");
    (out, took)
}

/// Polls `ok` until it says yes, within `bound`; returns how long it took.
async fn until<F: std::future::Future<Output = bool>>(
    what: &str,
    bound: Duration,
    mut ok: impl FnMut() -> F,
) -> Duration {
    let started = Instant::now();
    loop {
        if ok().await {
            return started.elapsed();
        }
        assert!(started.elapsed() < bound, "{what}: not within {bound:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The 503 a replica answers when the shared store cannot be reached.
fn assert_store_unavailable(status: StatusCode, body: &Value) {
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["error"]["code"], -32603, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("shared session store cannot be reached"),
        "{body}"
    );
}

/// The JSON-RPC error a stateless request gets when the shared store cannot be reached.
fn assert_internal_store_error(response: &Value) {
    assert_eq!(response["error"]["code"], -32603, "{response}");
    assert!(
        response["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("shared state unavailable"),
        "{response}"
    );
}

/// Starts `tools/call spend` on `client` (the authorizer asks first) and returns its
/// stream once the approval question arrived, with the question.
async fn start_spend(client: &McpHttp, id: i64) -> (SseReader, Value) {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": call("spend", json!({}))});
    let response = client.post(body.to_string()).send().await.expect("POST");
    assert_eq!(response.status(), StatusCode::OK);
    let mut reader = SseReader::new(response);
    loop {
        let v = reader.next_json().await;
        if v["method"] == "elicitation/create" {
            return (reader, v);
        }
    }
}

fn approve(ask: &Value) -> String {
    json!({"jsonrpc": "2.0", "id": ask["id"],
        "result": {"action": "accept", "content": {"approve": true}}})
    .to_string()
}

/// Reads `reader` until the response to `id`, within `bound`.
async fn response_to(reader: &mut SseReader, id: i64, bound: Duration) -> Value {
    let deadline = Instant::now() + bound;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let e = reader
            .next_within(left)
            .await
            .unwrap_or_else(|| panic!("no response to {id} within {bound:?}"));
        if e.data.is_empty() {
            continue;
        }
        let v = e.json();
        if v.get("method").is_none() && v["id"] == id {
            return v;
        }
    }
}

/// A `requestState` for `spend`, with its approval, that replica `i` issued.
async fn approval_state(r: &Replicas, i: usize) -> Value {
    let first = r
        .stateless(i)
        .request(json!(1), "tools/call", call("spend", json!({})))
        .await;
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    json!({"name": "spend", "arguments": {},
        "requestState": first["result"]["requestState"],
        "inputResponses": {"mcp.approve": {"action": "accept", "content": {"approve": true}}}})
}

/// A task started on replica `i`: `job` sleeping `ms`.
async fn start_job(r: &Replicas, i: usize, ms: u64) -> String {
    let started = r
        .stateless(i)
        .request(json!("job"), "tools/call", call("job", json!({"ms": ms})))
        .await;
    assert_eq!(started["result"]["resultType"], "task", "{started}");
    started["result"]["taskId"].as_str().unwrap().to_owned()
}

/// Presents `state` on replica `i` until it is no longer reported used (a state refused
/// while Redis did not answer is freed once Redis answers again), within [`RECOVERY`];
/// returns the answer and how long it took.
async fn present_again(r: &Replicas, i: usize, state: &Value) -> (Value, Duration) {
    let started = Instant::now();
    loop {
        let answer = r
            .stateless(i)
            .request(json!("again"), "tools/call", state.clone())
            .await;
        let used = answer["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("already used"));
        if !used || started.elapsed() > RECOVERY {
            return (answer, started.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn task_status(c: &StatelessHttp, id: &str) -> Value {
    c.request(json!("get"), "tasks/get", json!({"taskId": id}))
        .await
}

// ---- Redis unavailable at boot ----

#[tokio::test]
async fn the_backend_refuses_to_connect_to_a_redis_that_is_not_there() {
    let port = free_port();
    let url = format!("redis://127.0.0.1:{port}");
    let (result, took) = timed(
        "connect to a closed port",
        BOUND,
        RedisBackend::connect(&url, "boot"),
    )
    .await;
    let e = result.err().expect("no backend without Redis");
    let said = e.to_string();
    println!("redis down at boot (builder): error after {took:?}: {said}");
    assert!(
        said.starts_with("shared state unavailable: redis:"),
        "{said}"
    );
    assert!(said.contains("refused"), "{said}");
}

#[tokio::test]
async fn the_backend_gives_up_on_a_redis_that_accepts_but_never_answers() {
    // A partition at boot: the port accepts, nothing answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("redis://{}", silent.local_addr().unwrap());
    let (result, took) = timed(
        "connect to a silent port",
        Duration::from_secs(10),
        RedisBackend::connect(&url, "boot"),
    )
    .await;
    let said = result.err().expect("no backend without Redis").to_string();
    println!("redis silent at boot (builder): error after {took:?}: {said}");
    assert!(
        said.starts_with("shared state unavailable: redis:"),
        "{said}"
    );
}

#[tokio::test]
async fn a_started_replica_already_listens_and_one_whose_redis_went_away_does_not_start() {
    let test = "start_listens";
    let Some(mut redis) = RedisServer::start(test) else {
        return;
    };
    let backend = RedisBackend::connect(&redis.url(), test).await.unwrap();
    // Once `start` returns, the bus hears this replica: a message published now is not
    // lost to a subscription still on its way.
    let replica = backend.replica();
    replica.start().await.unwrap();
    let listening = redis.command(&[
        "EVAL",
        "return redis.call('PUBSUB', 'NUMSUB', KEYS[1])[2]",
        "1",
        &format!("{test}:bus"),
    ]);
    assert_eq!(listening, ":1", "subscribers of the bus right after start");
    replica.stop();

    // Redis gone between connecting and starting: `start` fails in bounded time, saying
    // why, instead of serving deaf to the others.
    redis.kill();
    let late = backend.replica();
    let (result, took) = timed("start without Redis", BOUND, late.start()).await;
    let said = result.expect_err("no start without Redis").to_string();
    println!("redis gone before start: error after {took:?}: {said}");
    assert!(
        said.starts_with("shared state unavailable: redis:"),
        "{said}"
    );
}

/// Runs the fixture binary as one replica of `url`'s Redis; its output and how long it ran.
async fn boot_binary(url: &str, key: &std::path::Path) -> (std::process::Output, Duration) {
    let started = Instant::now();
    let out = tokio::time::timeout(
        Duration::from_secs(30),
        tokio::process::Command::new(env!("CARGO_BIN_EXE_fixture"))
            .args([
                "--transport",
                "http",
                "--bind",
                "127.0.0.1:0",
                "--allow-unauthorized-for-local-development",
                "--redis-url",
                url,
                "--state-key-file",
                key.to_str().unwrap(),
            ])
            .env_remove("MCP_REDIS_URL")
            .env_remove("MCP_STATE_KEY")
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the binary exits")
    .expect("the binary runs");
    (out, started.elapsed())
}

#[tokio::test]
async fn the_binary_refuses_to_start_without_its_redis() {
    let dir = std::env::temp_dir().join(format!("mcp-redis-boot-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let key = dir.join("state-key");
    std::fs::write(&key, SHARED_KEY).unwrap();
    let port = free_port();
    let closed = format!("redis://:hunter2@127.0.0.1:{port}/0");
    // A port that accepts and never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_url = format!("redis://{}", silent.local_addr().unwrap());
    let ((refused, took), (unanswered, took_silent)) =
        tokio::join!(boot_binary(&closed, &key), boot_binary(&silent_url, &key));
    let _ = std::fs::remove_dir_all(&dir);

    let stderr = String::from_utf8_lossy(&refused.stderr);
    println!(
        "redis down at boot (binary): exit {:?} after {took:?}: {}",
        refused.status.code(),
        stderr.trim()
    );
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(took < BOUND, "took {took:?}");
    assert!(
        stderr.contains(&format!(
            "cannot join the replicas' Redis at redis://***@127.0.0.1:{port}/0"
        )),
        "{stderr}"
    );
    assert!(stderr.contains("refused"), "{stderr}");
    assert!(!stderr.contains("hunter2"), "the password leaked: {stderr}");
    assert!(refused.stdout.is_empty(), "it served nothing");

    let stderr = String::from_utf8_lossy(&unanswered.stderr);
    println!(
        "redis silent at boot (binary): exit {:?} after {took_silent:?}: {}",
        unanswered.status.code(),
        stderr.trim()
    );
    assert_eq!(unanswered.status.code(), Some(1), "{stderr}");
    assert!(took_silent < Duration::from_secs(6), "took {took_silent:?}");
    assert!(
        stderr.contains(&format!("cannot join the replicas' Redis at {silent_url}"))
            && stderr.contains("no answer within 3000 ms"),
        "{stderr}"
    );
}

// ---- Redis restarted mid-session ----

/// What a scenario left in Redis before the restart.
struct Before {
    session: McpHttp,
    question: Value,
    stream: SseReader,
    running: String,
    finished: String,
}

/// Opens a session on replica 0 with an approval question parked there, starts a long
/// task and finishes a short one on replica 0.
async fn before_restart(r: &Replicas) -> Before {
    let mut session = McpHttp::new(r.url(0));
    session
        .initialize("2025-11-25", json!({"elicitation": {}}))
        .await;
    let (stream, question) = start_spend(&session, 10).await;
    let running = start_job(r, 0, 60_000).await;
    let finished = start_job(r, 0, 10).await;
    until("the short task completes", RECOVERY, || async {
        task_status(&r.stateless(1), &finished).await["result"]["status"] == "completed"
    })
    .await;
    Before {
        session,
        question,
        stream,
        running,
        finished,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_with_persistence_keeps_sessions_questions_and_tasks() {
    let test = "restart_persistent";
    let Some(mut redis) = RedisServer::start_persistent(test) else {
        return;
    };
    let r = Replicas::start(&[redis.url(), redis.url()], test).await;
    let mut b = before_restart(&r).await;

    redis.restart();
    let restarted = Instant::now();

    // The session goes on, on either replica, once each has reconnected.
    let recovered = until("the session is served again", RECOVERY, || {
        let mut c = r.on(&b.session, 1);
        async move {
            c.exchange(
                json!(20),
                "tools/call",
                call("add", json!({"a": 1, "b": 2})),
            )
            .await
            .status
                == StatusCode::OK
        }
    })
    .await;
    let add = r
        .on(&b.session, 0)
        .request(21, "tools/call", call("add", json!({"a": 2, "b": 3})))
        .await;
    assert_eq!(text(&add), "5");

    // The parked question is answered on the other replica: the call parked on replica 0
    // runs once, and its response arrives on the stream the client kept open.
    let answered = r
        .on(&b.session, 1)
        .post(approve(&b.question))
        .send()
        .await
        .unwrap();
    assert_eq!(answered.status(), StatusCode::ACCEPTED);
    let result = response_to(&mut b.stream, 10, RECOVERY).await;
    assert_eq!(text(&result), "spent", "{result}");
    assert_eq!(r.spent(), 1);

    // The tasks are where they were: the finished one with its result, the running one
    // still running, and cancellable from the other replica.
    let done = task_status(&r.stateless(1), &b.finished).await;
    assert_eq!(done["result"]["status"], "completed", "{done}");
    let running = task_status(&r.stateless(1), &b.running).await;
    assert_eq!(running["result"]["status"], "working", "{running}");
    let ack = r
        .stateless(1)
        .request(
            json!("cancel"),
            "tasks/cancel",
            json!({"taskId": b.running}),
        )
        .await;
    assert!(ack.get("error").is_none(), "{ack}");
    until("the task is cancelled", RECOVERY, || async {
        task_status(&r.stateless(0), &b.running).await["result"]["status"] == "cancelled"
    })
    .await;
    println!(
        "redis restarted (persistent): served again {recovered:?} after the restart, all kept ({:?} in all)",
        restarted.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_without_persistence_gives_clear_errors() {
    let test = "restart_empty";
    let Some(mut redis) = RedisServer::start(test) else {
        return;
    };
    let r = Replicas::start(&[redis.url(), redis.url()], test).await;
    let mut b = before_restart(&r).await;
    // A requestState used once before the restart.
    let state = approval_state(&r, 0).await;
    let used = r
        .stateless(1)
        .request(json!(2), "tools/call", state.clone())
        .await;
    assert_eq!(text(&used), "spent");

    redis.restart();

    // The session is gone everywhere: 404, as the spec says of a session that ended, so
    // the client starts a new one.
    let gone = until("the session is reported gone", RECOVERY, || {
        let mut c = r.on(&b.session, 1);
        async move {
            let ex = c.exchange(json!(20), "tools/list", json!({})).await;
            assert_ne!(ex.status, StatusCode::OK, "a lost session was served");
            ex.status == StatusCode::NOT_FOUND
        }
    })
    .await;
    let on_asker = r
        .on(&b.session, 0)
        .exchange(json!(21), "tools/list", json!({}))
        .await;
    assert_eq!(on_asker.status, StatusCode::NOT_FOUND);
    // The answer to the lost question is refused with the session, the parked call ends,
    // and the tool never runs.
    let late = r
        .on(&b.session, 1)
        .post(approve(&b.question))
        .send()
        .await
        .unwrap();
    assert_eq!(late.status(), StatusCode::NOT_FOUND);
    let ended = tokio::time::timeout(BOUND, b.stream.rest()).await;
    assert!(ended.is_ok(), "the lost session's stream did not end");
    assert_eq!(r.spent(), 1, "the lost question's tool ran");

    // The tasks are unknown, except the running one on the replica running it (which
    // answers from the task itself until it ends; its end finds no record to write).
    for (id, i) in [(&b.running, 1), (&b.finished, 0), (&b.finished, 1)] {
        {
            let lost = task_status(&r.stateless(i), id).await;
            assert_eq!(lost["error"]["code"], -32602, "{lost}");
            assert!(
                lost["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("unknown taskId"),
                "{lost}"
            );
        }
    }

    // A requestState used before the restart is not accepted again.
    let replayed = r.stateless(0).request(json!(3), "tools/call", state).await;
    assert_eq!(replayed["error"]["code"], -32602, "{replayed}");
    assert!(
        replayed["error"]["message"]
            .as_str()
            .unwrap()
            .contains("issued before the server's shared store lost its records"),
        "{replayed}"
    );
    assert_eq!(r.spent(), 1, "an approval ran twice");
    // A state issued since runs once.
    let fresh_state = approval_state(&r, 1).await;
    let (fresh_run, _) = present_again(&r, 0, &fresh_state).await;
    assert_eq!(text(&fresh_run), "spent", "{fresh_run}");
    assert_eq!(r.spent(), 2);

    // New work goes on.
    let mut fresh = McpHttp::new(r.url(1));
    fresh
        .initialize("2025-11-25", json!({"elicitation": {}}))
        .await;
    let add = r
        .on(&fresh, 0)
        .request(30, "tools/call", call("add", json!({"a": 2, "b": 2})))
        .await;
    assert_eq!(text(&add), "4");
    println!(
        "redis restarted (no persistence): the session reported gone (404) {gone:?} after the restart"
    );
}

// ---- Redis slow ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_redis_fails_requests_in_bounded_time() {
    let test = "slow";
    let Some(redis) = RedisServer::start(test) else {
        return;
    };
    let r = Replicas::start(&[redis.url(), redis.url()], test).await;
    let mut session = McpHttp::new(r.url(0));
    session.initialize("2025-11-25", json!({})).await;
    let task = start_job(&r, 0, 60_000).await;
    let state = approval_state(&r, 0).await;

    // Redis stops answering for 6 s (every client paused).
    assert_eq!(redis.command(&["CLIENT", "PAUSE", "6000", "ALL"]), "+OK");
    let paused = Instant::now();

    let mut on_one = r.on(&session, 1);
    let (handshake, stateless, approval) = tokio::join!(
        timed("a session's request", BOUND, async {
            on_one
                .exchange(json!(2), "tools/call", call("add", json!({"a": 1, "b": 1})))
                .await
        }),
        timed("tasks/get", BOUND, async {
            r.stateless(1)
                .exchange(json!(3), "tasks/get", json!({"taskId": task}))
                .await
        }),
        timed("an approved retry", BOUND, async {
            r.stateless(1)
                .exchange(json!(4), "tools/call", state.clone())
                .await
        }),
    );
    assert_store_unavailable(handshake.0.status, &handshake.0.response);
    assert_eq!(stateless.0.status, StatusCode::OK);
    assert_internal_store_error(&stateless.0.response);
    assert!(
        approval.0.response.get("error").is_some(),
        "{:?}",
        approval.0
    );
    assert_eq!(r.spent(), 0);
    println!(
        "redis paused: a session's request 503 after {:?}, tasks/get error after {:?}, an approval refused after {:?}",
        handshake.1, stateless.1, approval.1
    );

    // Once Redis answers again, so do the replicas; the state was not consumed.
    let recovered =
        until(
            "served again after the pause",
            Duration::from_secs(12),
            || {
                let mut c = r.on(&session, 1);
                async move {
                    c.exchange(json!(5), "tools/list", json!({})).await.status == StatusCode::OK
                }
            },
        )
        .await;
    let running = task_status(&r.stateless(1), &task).await;
    assert_eq!(running["result"]["status"], "working", "{running}");
    let (approved, freed) = present_again(&r, 0, &state).await;
    assert_eq!(text(&approved), "spent", "{approved}");
    assert_eq!(r.spent(), 1);
    println!(
        "redis paused: the refused requestState usable again {freed:?} after the replicas served again"
    );
    println!(
        "redis paused: served again {:?} after the pause began ({recovered:?} of polling)",
        paused.elapsed()
    );
}

// ---- Redis partitioned from one replica ----

async fn partitioned(link: Link, test: &str) {
    let Some(redis) = RedisServer::start(test) else {
        return;
    };
    let target = format!("127.0.0.1:{}", redis.port()).parse().unwrap();
    let proxy = TcpProxy::start(target).await;
    // Replica 0 reaches Redis through the proxy; replica 1 directly.
    let r = Replicas::start(&[proxy.redis_url(), redis.url()], test).await;
    let mut session = McpHttp::new(r.url(1));
    session.initialize("2025-11-25", json!({})).await;
    let task = start_job(&r, 1, 60_000).await;
    let state = approval_state(&r, 1).await;

    proxy.set(link);

    // Replica 0 says it cannot reach the store; it never calls the session unknown, never
    // calls the task unknown, and never opens the state.
    let mut on_zero = r.on(&session, 0);
    let (handshake, took) = timed("a session's request", BOUND, async {
        on_zero.exchange(json!(2), "tools/list", json!({})).await
    })
    .await;
    assert_store_unavailable(handshake.status, &handshake.response);
    let (tasks, took_task) = timed("tasks/get", BOUND, async {
        r.stateless(0)
            .exchange(json!(3), "tasks/get", json!({"taskId": task}))
            .await
    })
    .await;
    assert_internal_store_error(&tasks.response);
    let (approval, took_approval) = timed("an approved retry", BOUND, async {
        r.stateless(0)
            .exchange(json!(4), "tools/call", state.clone())
            .await
    })
    .await;
    assert!(approval.response.get("error").is_some(), "{:?}", approval);
    assert_eq!(r.spent(), 0);
    // Replica 1 serves on.
    let add = r
        .on(&session, 1)
        .request(5, "tools/call", call("add", json!({"a": 1, "b": 1})))
        .await;
    assert_eq!(text(&add), "2");

    proxy.set(Link::Up);
    let healed = Instant::now();
    let recovered = until("replica 0 serves again", RECOVERY, || {
        let mut c = r.on(&session, 0);
        async move { c.exchange(json!(6), "tools/list", json!({})).await.status == StatusCode::OK }
    })
    .await;
    let running = task_status(&r.stateless(0), &task).await;
    assert_eq!(running["result"]["status"], "working", "{running}");
    let (approved, freed) = present_again(&r, 0, &state).await;
    assert_eq!(text(&approved), "spent", "{approved}");
    println!(
        "redis {link:?}: the refused requestState usable again {freed:?} after replica 0 served again"
    );
    let again = r.stateless(1).request(json!(8), "tools/call", state).await;
    assert!(again.get("error").is_some(), "{again}");
    assert_eq!(r.spent(), 1, "an approval ran twice");
    println!(
        "redis {link:?} from one replica: 503 after {took:?}, tasks/get error after {took_task:?}, approval refused after {took_approval:?}; served again {:?} after the link returned ({recovered:?} of polling)",
        healed.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_cut_off_from_redis_refuses_rather_than_answers_wrongly() {
    partitioned(Link::Cut, "partition_cut").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_whose_redis_link_goes_silent_refuses_in_bounded_time() {
    partitioned(Link::Silent, "partition_silent").await;
}

// ---- Connections to Redis lost silently ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_whose_redis_connections_are_lost_silently_reconnects() {
    let test = "lost_connections";
    let Some(redis) = RedisServer::start(test) else {
        return;
    };
    let target = format!("127.0.0.1:{}", redis.port()).parse().unwrap();
    let proxy = TcpProxy::start(target).await;
    let r = Replicas::start(&[proxy.redis_url(), redis.url()], test).await;
    let mut session = McpHttp::new(r.url(0));
    session
        .initialize("2025-11-25", json!({"elicitation": {}}))
        .await;

    // Every connection replica 0 has to Redis goes dead without a word (its commands and
    // its bus subscription); the network itself works.
    proxy.lose_open_connections();
    let lost = Instant::now();

    // The copy replica 0 made of the session at `initialize` may be served for
    // `session_recheck` (1 s by default) without the store: nothing the client does is
    // missed meanwhile (a change through replica 1 waits for replica 0 to apply it, or
    // for that long). Past it, every request reads the store again.
    tokio::time::sleep(SESSION_RECHECK).await;
    // Its requests fail in bounded time, then it serves again on new connections.
    let (first, took) = timed("a session's request", BOUND, async {
        r.on(&session, 0)
            .exchange(json!(2), "tools/list", json!({}))
            .await
    })
    .await;
    assert_store_unavailable(first.status, &first.response);
    let recovered = until("replica 0 serves again", RECOVERY, || {
        let mut c = r.on(&session, 0);
        async move { c.exchange(json!(3), "tools/list", json!({})).await.status == StatusCode::OK }
    })
    .await;

    // It hears the bus again: a question it parks is answered through replica 1. (An
    // answer published before it noticed its subscription was dead is lost: that call's
    // question times out, and the call is denied.)
    let mut id = 3;
    let hears = until(
        "an answer routed to replica 0 reaches it",
        RECOVERY * 2,
        || {
            id += 1;
            let (r, session, id) = (&r, &session, id);
            async move {
                let (mut stream, question) = start_spend(&r.on(session, 0), id).await;
                let answered = r
                    .on(session, 1)
                    .post(approve(&question))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(answered.status(), StatusCode::ACCEPTED);
                let reply = tokio::time::timeout(Duration::from_secs(2), async {
                    loop {
                        let Some(e) = stream.next().await else {
                            return Value::Null;
                        };
                        if !e.data.is_empty() && e.json()["id"] == id {
                            return e.json();
                        }
                    }
                })
                .await;
                reply.is_ok_and(|v| v["result"]["content"][0]["text"] == "spent")
            }
        },
    )
    .await;
    assert_eq!(r.spent(), 1);
    println!(
        "redis connections of one replica lost silently: 503 after {took:?}, served again {recovered:?} later, bus heard again {:?} after the loss ({hears:?} of trying)",
        lost.elapsed()
    );
}
