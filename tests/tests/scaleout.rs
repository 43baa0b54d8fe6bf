//! Several replicas of one server sharing state: three HTTP servers on their own ports,
//! one cluster. Every scenario runs twice: over the in-memory backend (replicas in this
//! process share memory) and over a real `redis-server` started for the test (skipped,
//! with a line saying so, when `redis-server` is not installed, unless
//! `MCP_REQUIRE_REDIS=1`).
//!
//! `live_replica_killed_mid_session` (ignored by default) drives real processes behind a
//! load balancer; `.ci/scaleout.sh` runs it.

use std::sync::atomic::Ordering;
use std::time::Duration;

use mcp::cluster::Cluster;
use mcp::cluster::memory::MemoryBackend;
use mcp::cluster::redis::RedisBackend;
use mcp::registry::ToolDef;
use mcp_tests::http::{
    Fixture, HttpTestServer, McpHttp, SseEvent, SseReader, StatelessHttp, fixture_in, test_config,
};
use mcp_tests::redis::RedisServer;
use reqwest::StatusCode;
use serde_json::{Value, json};

/// How long a scenario waits for something that must happen.
const PATIENCE: Duration = Duration::from_secs(15);

use mcp_tests::redis::BackendKind as Kind;
use mcp_tests::{call_params as call, response_text as text};

enum Backend {
    Memory(MemoryBackend),
    Redis {
        backend: RedisBackend,
        _server: Box<RedisServer>,
    },
}

/// The key every replica seals `requestState` with.
const SHARED_KEY: &[u8] = b"the-replicas-share-this-32+-byte-state-key";

struct Replica {
    http: HttpTestServer,
    fixture: Fixture,
    cluster: Cluster,
}

/// Three replicas of the HTTP fixture server sharing one backend.
struct Replicas {
    backend: Backend,
    replicas: Vec<Replica>,
}

impl Replicas {
    async fn start(kind: Kind, test: &str) -> Option<Replicas> {
        let backend = match kind {
            Kind::Memory => Backend::Memory(MemoryBackend::new()),
            Kind::Redis => {
                let server = RedisServer::start(test)?;
                let prefix = format!("t-{test}-{}", std::process::id());
                let redis = RedisBackend::connect(&server.url(), &prefix)
                    .await
                    .expect("connect to the test redis");
                Backend::Redis {
                    backend: redis,
                    _server: Box::new(server),
                }
            }
        };
        let mut replicas = Vec::new();
        for _ in 0..3 {
            let cluster = match &backend {
                Backend::Memory(m) => m.replica(),
                Backend::Redis { backend, .. } => backend.replica(),
            };
            let fixture = fixture_in(Some(cluster.clone()), Some(SHARED_KEY));
            let http = HttpTestServer::start(fixture.server.clone(), test_config()).await;
            replicas.push(Replica {
                http,
                fixture,
                cluster,
            });
        }
        Some(Replicas { backend, replicas })
    }

    fn url(&self, i: usize) -> String {
        self.replicas[i].http.url("/mcp")
    }

    /// A client of replica `i` with no session.
    fn client(&self, i: usize) -> McpHttp {
        McpHttp::new(self.url(i))
    }

    /// `client`'s session, talking to replica `i`.
    fn on(&self, client: &McpHttp, i: usize) -> McpHttp {
        let mut c = client.clone();
        c.url = self.url(i);
        c
    }

    fn spent(&self) -> usize {
        self.replicas
            .iter()
            .map(|r| r.fixture.spent.load(Ordering::SeqCst))
            .sum()
    }

    /// Replica `i` drops out of the cluster as a crashed process would (its bus listener
    /// and heartbeat stop, in memory at once, on Redis within seconds) while its work goes
    /// on in this process, unaware: nothing it does from now on is heard by the others.
    fn drop_out(&self, i: usize) {
        let r = &self.replicas[i];
        r.cluster.stop();
        if let Backend::Memory(m) = &self.backend {
            m.kill(r.cluster.replica_id());
        }
    }

    /// A session made on replica 0 and subscribed to `test://static` through replica 1.
    async fn subscribed_session(&self) -> McpHttp {
        let mut a = self.client(0);
        a.initialize("2025-11-25", json!({})).await;
        self.on(&a, 1)
            .request(40, "resources/subscribe", json!({"uri": "test://static"}))
            .await;
        a
    }

    /// Registers a tool `late` on replica `i`: its tool list changes.
    fn register_late_tool(&self, i: usize) {
        self.replicas[i]
            .fixture
            .server
            .registry()
            .replace_tool(ToolDef::from_fn(
                "late",
                "Registered late.",
                |_ctx, _: serde_json::Map<String, Value>| async { "late" },
            ))
            .unwrap();
    }

    /// Breaks replica `i`'s bus subscription, as a Redis restart would. In memory only its
    /// subscription breaks, and stays broken until [`Replicas::mend_bus`]: what is
    /// published meanwhile is lost for it (returns true). On Redis every replica's
    /// pub/sub connection is killed and each subscribes again within moments: what is
    /// published around then may or may not be heard (returns false).
    fn break_bus(&self, i: usize) -> bool {
        match &self.backend {
            Backend::Memory(m) => {
                m.cut_bus(self.replicas[i].cluster.replica_id());
                true
            }
            Backend::Redis { _server, .. } => {
                let killed = _server.command(&["CLIENT", "KILL", "TYPE", "pubsub"]);
                assert!(
                    killed.starts_with(':') && killed != ":0",
                    "no pub/sub connection to kill: {killed}"
                );
                false
            }
        }
    }

    /// Mends what [`Replicas::break_bus`] broke (on Redis the replicas mend it themselves).
    fn mend_bus(&self, i: usize) {
        if let Backend::Memory(m) = &self.backend {
            m.restore_bus(self.replicas[i].cluster.replica_id());
        }
    }

    /// Replica `i` dies: it stops answering HTTP and the others see it dead (its bus
    /// listener and heartbeat stop; in memory its death is immediate, on Redis its
    /// heartbeat lapses within seconds).
    async fn kill(&self, i: usize) {
        let r = &self.replicas[i];
        r.http.stop();
        r.cluster.stop();
        if let Backend::Memory(m) = &self.backend {
            m.kill(r.cluster.replica_id());
        }
        // Let the bus connection of the dead replica close.
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

mcp_tests::on_both_backends!(
    a_session_is_served_by_every_replica,
    an_answer_on_another_replica_reaches_the_parked_call_once,
    subscriptions_and_list_changes_reach_the_get_stream_on_any_replica,
    delete_ends_the_session_everywhere,
    streams_resume_on_another_replica,
    a_parked_approval_on_a_dead_replica_is_denied_when_answered,
    a_dead_replicas_stream_is_closed_when_resumed,
    request_state_opens_once_across_replicas,
    listen_streams_hear_changes_raised_on_other_replicas,
    tasks_are_shared_steered_and_failed_across_replicas,
    a_lost_core_task_is_listed_failed,
    the_task_store_keeps_its_contract,
    what_a_replica_missed_while_its_bus_was_away_reaches_it_after,
    a_copy_read_a_moment_ago_is_served_without_the_store,
    a_replica_that_stopped_hearing_the_bus_reads_the_store_every_time,
);

/// The next non-comment event within `PATIENCE`; panics if the body ends.
async fn next_event(reader: &mut SseReader) -> SseEvent {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        match reader.next_within(left).await {
            Some(e) if e.comment || e.data.is_empty() => continue,
            Some(e) => return e,
            None => panic!("the stream ended early"),
        }
    }
}

/// Reads events until one is a message with `method`.
async fn until_method(reader: &mut SseReader, method: &str) -> (SseEvent, Value) {
    loop {
        let e = next_event(reader).await;
        let v = e.json();
        if v["method"] == method {
            return (e, v);
        }
    }
}

/// Reads events until the response to `id`.
async fn until_response(reader: &mut SseReader, id: &Value) -> Value {
    loop {
        let v = next_event(reader).await.json();
        if v.get("method").is_none() && &v["id"] == id {
            return v;
        }
    }
}

/// Starts `tools/call spend` (the authorizer asks first) on `client`, and returns its
/// stream once the approval question arrived, with the question and its event.
async fn start_spend(client: &McpHttp, id: i64) -> (SseReader, SseEvent, Value) {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": call("spend", json!({}))});
    let response = client.post(body.to_string()).send().await.expect("POST");
    assert_eq!(response.status(), StatusCode::OK);
    let mut reader = SseReader::new(response);
    let (event, ask) = until_method(&mut reader, "elicitation/create").await;
    assert!(
        ask["params"]["requestedSchema"]["properties"]["approve"].is_object(),
        "{ask}"
    );
    (reader, event, ask)
}

fn approve(ask: &Value) -> String {
    json!({"jsonrpc": "2.0", "id": ask["id"],
        "result": {"action": "accept", "content": {"approve": true}}})
    .to_string()
}

async fn a_session_is_served_by_every_replica(kind: Kind) {
    let Some(r) = Replicas::start(kind, "a_session_is_served_by_every_replica").await else {
        return;
    };
    let mut a = r.client(0);
    a.initialize("2025-11-25", json!({"elicitation": {}})).await;
    for i in [1, 2, 0] {
        let mut c = r.on(&a, i);
        let answer = c
            .request(
                10 + i as i64,
                "tools/call",
                call("add", json!({"a": i, "b": 40})),
            )
            .await;
        assert_eq!(text(&answer), (40 + i).to_string());
    }
    // The log level set on one replica gates the logs of a call on another.
    a.request(20, "logging/setLevel", json!({"level": "error"}))
        .await;
    let mut b = r.on(&a, 1);
    let quiet = b
        .exchange(json!(21), "tools/call", call("log", json!({})))
        .await;
    assert_eq!(text(&quiet.response), "logged");
    assert!(
        !quiet
            .before
            .iter()
            .any(|m| m["method"] == "notifications/message"),
        "a log below the level set on another replica was sent: {:?}",
        quiet.before
    );
    r.on(&a, 2)
        .request(22, "logging/setLevel", json!({"level": "debug"}))
        .await;
    let loud = b
        .exchange(json!(23), "tools/call", call("log", json!({})))
        .await;
    assert!(
        loud.before
            .iter()
            .any(|m| m["method"] == "notifications/message"
                && m["params"]["data"] == "hello from the tool"),
        "the level set on another replica was not applied: {:?}",
        loud.before
    );
    // The capabilities declared at initialize on replica 0 are known on replica 2: it asks.
    let (_reader, _event, ask) = start_spend(&r.on(&a, 2), 24).await;
    assert_eq!(ask["method"], "elicitation/create");
    // An id never issued is unknown on every replica.
    let mut stranger = r.on(&a, 1);
    stranger.session = Some("not-a-session".into());
    let ex = stranger.exchange(json!(25), "tools/list", json!({})).await;
    assert_eq!(ex.status, StatusCode::NOT_FOUND);
}

async fn an_answer_on_another_replica_reaches_the_parked_call_once(kind: Kind) {
    let Some(r) = Replicas::start(
        kind,
        "an_answer_on_another_replica_reaches_the_parked_call_once",
    )
    .await
    else {
        return;
    };
    let mut a = r.client(0);
    a.initialize("2025-11-25", json!({"elicitation": {}})).await;
    let (mut stream, _, ask) = start_spend(&r.on(&a, 1), 30).await;

    // Another session's answer with the same id, on a third replica, changes nothing.
    let mut other = r.client(2);
    other
        .initialize("2025-11-25", json!({"elicitation": {}}))
        .await;
    let forged = other.post(approve(&ask)).send().await.unwrap();
    assert_eq!(forged.status(), StatusCode::ACCEPTED);
    assert!(
        stream.quiet_for(Duration::from_millis(400)).await,
        "another session's answer reached the call"
    );
    assert_eq!(r.spent(), 0);

    // The owner's answer, on replica 2, reaches the call parked on replica 1.
    let answered = r.on(&a, 2).post(approve(&ask)).send().await.unwrap();
    assert_eq!(answered.status(), StatusCode::ACCEPTED);
    let result = until_response(&mut stream, &json!(30)).await;
    assert_eq!(text(&result), "spent");
    assert_eq!(r.replicas[1].fixture.spent.load(Ordering::SeqCst), 1);

    // Answering again, anywhere, runs nothing.
    for i in [0, 1, 2] {
        let again = r.on(&a, i).post(approve(&ask)).send().await.unwrap();
        assert_eq!(again.status(), StatusCode::ACCEPTED);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(r.spent(), 1, "an approval counted twice");
}

async fn subscriptions_and_list_changes_reach_the_get_stream_on_any_replica(kind: Kind) {
    let Some(r) = Replicas::start(
        kind,
        "subscriptions_and_list_changes_reach_the_get_stream_on_any_replica",
    )
    .await
    else {
        return;
    };
    let mut a = r.subscribed_session().await;
    let get = r.on(&a, 2).get().send().await.unwrap();
    assert_eq!(get.status(), StatusCode::OK);
    let mut stream = SseReader::new(get);

    // Raised on replica 0, delivered on replica 2's GET stream.
    r.replicas[0]
        .fixture
        .server
        .resource_updated("test://static");
    let (_, updated) = until_method(&mut stream, "notifications/resources/updated").await;
    assert_eq!(updated["params"]["uri"], "test://static");

    // A tool registered on replica 1: the list changed.
    r.register_late_tool(1);
    until_method(&mut stream, "notifications/tools/list_changed").await;

    // Unsubscribed on replica 0: an update raised on replica 1 is not sent.
    a.request(41, "resources/unsubscribe", json!({"uri": "test://static"}))
        .await;
    r.replicas[1]
        .fixture
        .server
        .resource_updated("test://static");
    assert!(
        stream.quiet_for(Duration::from_millis(500)).await,
        "an update after unsubscribing was sent"
    );
}

/// A replica whose bus subscription broke misses what is published meanwhile; once it
/// listens again it reads the shared state anew: every list is announced changed, every
/// subscribed resource updated, and a session deleted elsewhere meanwhile ends here.
async fn what_a_replica_missed_while_its_bus_was_away_reaches_it_after(kind: Kind) {
    let Some(r) = Replicas::start(kind, "bus_away").await else {
        return;
    };
    // Session a is subscribed to a resource; session b is a second one. Both hold their
    // GET stream on replica 2.
    let a = r.subscribed_session().await;
    let mut a_stream = SseReader::new(r.on(&a, 2).get().send().await.unwrap());
    // Its priming event first, so that any event later is news.
    let primed = a_stream
        .next_within(PATIENCE)
        .await
        .expect("an open stream");
    assert!(primed.data.is_empty(), "{primed:?}");
    let mut b = r.client(0);
    b.initialize("2025-11-25", json!({})).await;
    let mut b_stream = SseReader::new(r.on(&b, 2).get().send().await.unwrap());

    let deaf = r.break_bus(2);
    // While replica 2 cannot hear: a tool registered on replica 1, the resource updated on
    // replica 0, session b deleted through replica 1.
    r.register_late_tool(1);
    r.replicas[0]
        .fixture
        .server
        .resource_updated("test://static");
    let deleted = r.on(&b, 1).delete().send().await.unwrap();
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    if deaf {
        assert!(
            a_stream.quiet_for(Duration::from_millis(300)).await,
            "replica 2 heard what was published while its bus was cut"
        );
    }

    r.mend_bus(2);
    until_method(&mut a_stream, "notifications/tools/list_changed").await;
    let (_, updated) = until_method(&mut a_stream, "notifications/resources/updated").await;
    assert_eq!(updated["params"]["uri"], "test://static");
    // (It may first hear the lists announced changed, as every session here does.)
    tokio::time::timeout(PATIENCE, b_stream.rest())
        .await
        .expect("the GET stream of a session deleted while the bus was away ended");
}

/// How long a replica serves a session from its copy without reading the store
/// (`HttpConfig::session_recheck`, at its default).
const SESSION_RECHECK: Duration = Duration::from_secs(1);

/// Removes `client`'s session from the shared store and nowhere else, as a flush or an
/// eviction would: no replica is told.
async fn lose_record(r: &Replicas, client: &McpHttp) {
    let id = client.session.as_deref().expect("a session");
    let removed = r.replicas[0].cluster.sessions().remove(id).await.unwrap();
    assert!(removed, "the record was there");
}

/// A session opened on replica 0 whose record replica 2 has just read (it keeps a copy).
async fn copied_to_replica_2(r: &Replicas) -> McpHttp {
    let mut a = r.client(0);
    a.initialize("2025-11-25", json!({})).await;
    r.on(&a, 2).request(2, "tools/list", json!({})).await;
    a
}

async fn a_copy_read_a_moment_ago_is_served_without_the_store(kind: Kind) {
    let Some(r) = Replicas::start(kind, "copy_served").await else {
        return;
    };
    let a = copied_to_replica_2(&r).await;
    let read = tokio::time::Instant::now();
    lose_record(&r, &a).await;
    // Within `session_recheck` of that read the copy is served as it is...
    let cached = r
        .on(&a, 2)
        .exchange(json!(3), "tools/list", json!({}))
        .await;
    let within = read.elapsed();
    if within < SESSION_RECHECK {
        assert_eq!(cached.status, StatusCode::OK, "the copy was not served");
    }
    // ... and a replica that never read it finds it gone, as the store says.
    let fresh = r
        .on(&a, 1)
        .exchange(json!(4), "tools/list", json!({}))
        .await;
    assert_eq!(fresh.status, StatusCode::NOT_FOUND);
    // Past it, replica 2 reads the store again, and its copy goes.
    tokio::time::sleep_until(read + SESSION_RECHECK).await;
    let stale = r
        .on(&a, 2)
        .exchange(json!(5), "tools/list", json!({}))
        .await;
    assert_eq!(stale.status, StatusCode::NOT_FOUND);
    println!("a copy served without the store {within:?} after it was read");
}

async fn a_replica_that_stopped_hearing_the_bus_reads_the_store_every_time(kind: Kind) {
    let Some(r) = Replicas::start(kind, "deaf_reads").await else {
        return;
    };
    let a = copied_to_replica_2(&r).await;
    // Replica 2 no longer hears what the others publish: it cannot know its copy is
    // current, so the store decides at once.
    r.drop_out(2);
    lose_record(&r, &a).await;
    let ex = r
        .on(&a, 2)
        .exchange(json!(3), "tools/list", json!({}))
        .await;
    assert_eq!(ex.status, StatusCode::NOT_FOUND);
}

async fn delete_ends_the_session_everywhere(kind: Kind) {
    let Some(r) = Replicas::start(kind, "delete_ends_the_session_everywhere").await else {
        return;
    };
    let mut a = r.client(0);
    a.initialize("2025-11-25", json!({})).await;
    // Every replica holds a copy now.
    for i in [1, 2] {
        r.on(&a, i)
            .request(50 + i as i64, "tools/list", json!({}))
            .await;
    }
    let get = r.on(&a, 2).get().send().await.unwrap();
    let mut stream = SseReader::new(get);
    // Replicas 0 and 2 serve their copies without the store for a while: the delete is
    // answered once both dropped theirs (they say so over the bus, well within
    // `session_recheck`, after which no copy read before the delete is served anyway).
    let started = tokio::time::Instant::now();
    let deleted = r.on(&a, 1).delete().send().await.unwrap();
    let took = started.elapsed();
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    assert!(
        took < SESSION_RECHECK / 2,
        "the delete waited {took:?}: the other replicas did not say they applied it"
    );
    for i in [0, 1, 2] {
        let ex = r
            .on(&a, i)
            .exchange(json!(60 + i), "tools/list", json!({}))
            .await;
        assert_eq!(ex.status, StatusCode::NOT_FOUND, "replica {i}");
    }
    // The GET stream on replica 2 ended with the session.
    let ended = tokio::time::timeout(PATIENCE, stream.rest())
        .await
        .expect("the GET stream of a deleted session ended");
    assert!(
        ended.iter().all(|e| e.data.is_empty() || e.comment),
        "{ended:?}"
    );
}

async fn streams_resume_on_another_replica(kind: Kind) {
    let Some(r) = Replicas::start(kind, "streams_resume_on_another_replica").await else {
        return;
    };
    let mut a = r.client(0);
    a.initialize("2025-11-25", json!({})).await;

    // A finished stream, replayed elsewhere after its first progress event.
    let ex = r
        .on(&a, 1)
        .exchange(
            json!(70),
            "tools/call",
            json!({"name": "progress", "arguments": {}, "_meta": {"progressToken": "p"}}),
        )
        .await;
    let ids: Vec<String> = ex
        .events
        .iter()
        .filter(|e| !e.data.is_empty())
        .map(|e| e.id.clone().expect("every event has an id"))
        .collect();
    assert_eq!(ids.len(), 4, "three progress events and the response");
    let resumed = r
        .on(&a, 2)
        .get()
        .header("last-event-id", &ids[0])
        .send()
        .await
        .unwrap();
    assert_eq!(resumed.status(), StatusCode::OK);
    let replayed: Vec<Value> = SseReader::new(resumed)
        .rest()
        .await
        .iter()
        .filter(|e| !e.data.is_empty())
        .map(SseEvent::json)
        .collect();
    assert_eq!(replayed.len(), 3, "{replayed:?}");
    assert_eq!(replayed[2]["id"], 70);
    assert_eq!(text(&replayed[2]), "done");

    // A running stream: the client goes away after the first event and resumes on another
    // replica, which follows it to its end.
    let body = json!({"jsonrpc": "2.0", "id": 71, "method": "tools/call",
        "params": {"name": "wait", "arguments": {"ms": 700}, "_meta": {"progressToken": 1}}});
    let response = r.on(&a, 1).post(body.to_string()).send().await.unwrap();
    let mut first = SseReader::new(response);
    let started = next_event(&mut first).await;
    assert_eq!(started.json()["method"], "notifications/progress");
    drop(first);
    let resumed = r
        .on(&a, 0)
        .get()
        .header("last-event-id", started.id.unwrap())
        .send()
        .await
        .unwrap();
    let mut rest = SseReader::new(resumed);
    let done = until_response(&mut rest, &json!(71)).await;
    assert_eq!(text(&done), "waited 700 ms");

    // A cursor that names no stream is refused.
    let junk = r
        .on(&a, 2)
        .get()
        .header("last-event-id", "not-a-cursor")
        .send()
        .await
        .unwrap();
    assert_eq!(junk.status(), StatusCode::BAD_REQUEST);
}

fn assert_approval_unavailable(result: &Value) {
    assert_eq!(result["result"]["isError"], true, "{result}");
    let payload: Value = serde_json::from_str(text(result)).expect("a JSON deny payload");
    assert_eq!(payload["error"], "authorization_required", "{payload}");
    assert_eq!(payload["tool"], "spend");
    assert!(
        payload["detail"]
            .as_str()
            .unwrap()
            .starts_with("approval_unavailable"),
        "{payload}"
    );
}

async fn a_parked_approval_on_a_dead_replica_is_denied_when_answered(kind: Kind) {
    let Some(r) = Replicas::start(
        kind,
        "a_parked_approval_on_a_dead_replica_is_denied_when_answered",
    )
    .await
    else {
        return;
    };
    let mut a = r.client(0);
    a.initialize("2025-11-25", json!({"elicitation": {}})).await;
    let (stream, asked, ask) = start_spend(&r.on(&a, 1), 80).await;
    r.kill(1).await;
    drop(stream);

    // The answer lands on a live replica: the replica holding the question is dead, so
    // the call is closed with the deny, on its stream.
    let answered = r.on(&a, 2).post(approve(&ask)).send().await.unwrap();
    assert_eq!(answered.status(), StatusCode::ACCEPTED);
    let resumed = r
        .on(&a, 0)
        .get()
        .header("last-event-id", asked.id.clone().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(resumed.status(), StatusCode::OK);
    let mut reader = SseReader::new(resumed);
    let result = until_response(&mut reader, &json!(80)).await;
    assert_approval_unavailable(&result);
    assert!(
        tokio::time::timeout(PATIENCE, reader.rest()).await.is_ok(),
        "the closed stream ends"
    );
    // The session goes on on the others.
    let mut c = r.on(&a, 2);
    assert_eq!(
        text(
            &c.request(81, "tools/call", call("add", json!({"a": 1, "b": 1})))
                .await
        ),
        "2"
    );
    assert_eq!(r.spent(), 0, "nothing ran");
}

async fn a_dead_replicas_stream_is_closed_when_resumed(kind: Kind) {
    let Some(r) = Replicas::start(kind, "a_dead_replicas_stream_is_closed_when_resumed").await
    else {
        return;
    };
    let mut a = r.client(0);
    a.initialize("2025-11-25", json!({"elicitation": {}})).await;
    let (stream, asked, _ask) = start_spend(&r.on(&a, 2), 90).await;
    r.kill(2).await;
    drop(stream);
    // Nobody answers; the client resumes the stream elsewhere and is told.
    let resumed = r
        .on(&a, 1)
        .get()
        .header("last-event-id", asked.id.unwrap())
        .send()
        .await
        .unwrap();
    let mut reader = SseReader::new(resumed);
    let result = until_response(&mut reader, &json!(90)).await;
    assert_approval_unavailable(&result);
    assert_eq!(r.spent(), 0);
}

async fn request_state_opens_once_across_replicas(kind: Kind) {
    let Some(r) = Replicas::start(kind, "request_state_opens_once_across_replicas").await else {
        return;
    };
    let client =
        |i: usize| StatelessHttp::new(r.url(i)).with_capabilities(json!({"elicitation": {}}));
    let first = client(0)
        .request(json!(1), "tools/call", call("spend", json!({})))
        .await;
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let retry = json!({"name": "spend", "arguments": {},
        "requestState": first["result"]["requestState"],
        "inputResponses": {"mcp.approve": {"action": "accept", "content": {"approve": true}}}});
    let approved = client(1)
        .request(json!(2), "tools/call", retry.clone())
        .await;
    assert_eq!(text(&approved), "spent");
    for i in [2, 0, 1] {
        let replay = client(i)
            .request(json!(3), "tools/call", retry.clone())
            .await;
        assert_eq!(replay["error"]["code"], -32602, "{replay}");
        assert!(
            replay["error"]["message"]
                .as_str()
                .unwrap()
                .contains("already used"),
            "{replay}"
        );
    }
    assert_eq!(r.spent(), 1);

    // A replica sealing with a key of its own refuses the others' states: the key must
    // be shared.
    let lone = match &r.backend {
        Backend::Memory(m) => m.replica(),
        Backend::Redis { backend, .. } => backend.replica(),
    };
    let lone = fixture_in(Some(lone), None);
    let lone = HttpTestServer::start(lone.server.clone(), test_config()).await;
    let fresh = client(0)
        .request(json!(4), "tools/call", call("spend", json!({})))
        .await;
    let elsewhere = StatelessHttp::new(lone.url("/mcp"))
        .with_capabilities(json!({"elicitation": {}}))
        .request(
            json!(5),
            "tools/call",
            json!({"name": "spend", "arguments": {},
                "requestState": fresh["result"]["requestState"],
                "inputResponses": {"mcp.approve": {"action": "accept", "content": {"approve": true}}}}),
        )
        .await;
    assert_eq!(elsewhere["error"]["code"], -32602, "{elsewhere}");
    assert!(
        elsewhere["error"]["message"]
            .as_str()
            .unwrap()
            .contains("failed verification"),
        "{elsewhere}"
    );
}

async fn listen_streams_hear_changes_raised_on_other_replicas(kind: Kind) {
    let Some(r) =
        Replicas::start(kind, "listen_streams_hear_changes_raised_on_other_replicas").await
    else {
        return;
    };
    let listen = StatelessHttp::new(r.url(0))
        .post(
            json!("listen-1"),
            "subscriptions/listen",
            json!({"notifications": {"toolsListChanged": true,
                "resourceSubscriptions": ["test://static"]}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(listen.status(), StatusCode::OK);
    let mut stream = SseReader::new(listen);
    let (_, ack) = until_method(&mut stream, "notifications/subscriptions/acknowledged").await;
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "listen-1"
    );
    r.register_late_tool(1);
    let (_, changed) = until_method(&mut stream, "notifications/tools/list_changed").await;
    assert_eq!(
        changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "listen-1"
    );
    r.replicas[2]
        .fixture
        .server
        .resource_updated("test://static");
    let (_, updated) = until_method(&mut stream, "notifications/resources/updated").await;
    assert_eq!(updated["params"]["uri"], "test://static");
    r.replicas[2]
        .fixture
        .server
        .resource_updated("test://other");
    assert!(
        stream.quiet_for(Duration::from_millis(400)).await,
        "an update the listen did not ask for was sent"
    );
}

/// Real processes behind a load balancer: `.ci/scaleout.sh` starts three replicas of
/// `everything` with Redis and nginx in front, and runs this with
/// `SCALEOUT_URL=http://127.0.0.1:<nginx>/mcp` and
/// `SCALEOUT_REPLICAS=<pid>=<url>,<pid>=<url>,...`. It opens a session through the load
/// balancer, parks an approval question on the first replica, kills that replica
/// (SIGKILL), answers through the load balancer, and checks that the call is closed with
/// the deny on its stream (resumed through the load balancer) and that the session goes on
/// on the other replicas.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs replicas and a load balancer: run by .ci/scaleout.sh"]
async fn live_replica_killed_mid_session() {
    let (url, replicas) = mcp_tests::cluster::live_replicas();
    assert!(replicas.len() >= 2, "at least two replicas");
    let mut lb = McpHttp::new(&url);
    lb.initialize("2025-11-25", json!({"elicitation": {}}))
        .await;
    for i in 0..(2 * replicas.len() as i64) {
        let answer = lb
            .request(
                i + 1,
                "tools/call",
                call("add_note", json!({"id": format!("n{i}"), "text": "x"})),
            )
            .await;
        assert_eq!(answer["result"]["isError"], Value::Null, "{answer}");
    }
    // The approval question of a destructive tool, parked on the first replica.
    let (victim, victim_url) = &replicas[0];
    let mut direct = lb.clone();
    direct.url = victim_url.clone();
    let body = json!({"jsonrpc": "2.0", "id": 100, "method": "tools/call",
        "params": call("delete_note", json!({"id": "welcome"}))});
    let response = direct.post(body.to_string()).send().await.expect("POST");
    assert_eq!(response.status(), StatusCode::OK);
    let mut stream = SseReader::new(response);
    let (asked, ask) = until_method(&mut stream, "elicitation/create").await;
    // And a task running there (2026-07-28).
    let declaring = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    let on_victim = mcp_tests::http::StatelessHttp::new(victim_url.clone())
        .with_capabilities(declaring.clone());
    let created = on_victim
        .request(
            json!(101),
            "tools/call",
            call("slow_compute", json!({"seconds": 60})),
        )
        .await;
    let task = created["result"]["taskId"]
        .as_str()
        .expect("a task")
        .to_owned();
    println!("approval question and task {task} on replica pid {victim}; killing it");
    // SAFETY: kill(2) with a pid the script gave us and a valid signal number.
    let killed = unsafe { libc::kill(*victim, libc::SIGKILL) };
    assert_eq!(killed, 0, "kill -9 {victim}");
    drop(stream);
    let started = std::time::Instant::now();

    // The human approves (a moment later, as humans do); the answer lands on a live
    // replica through the load balancer. nginx never re-sends a POST it may have
    // delivered: one that went out on a kept-alive connection to the dead replica before
    // nginx saw it close gets 502, and the client sends it again (an answer can be sent
    // twice: it is taken once).
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut answered = lb.post(approve(&ask)).send().await.expect("answer");
    if answered.status() == StatusCode::BAD_GATEWAY {
        println!("the answer met the dead replica's connection (502); sending it again");
        answered = lb.post(approve(&ask)).send().await.expect("answer");
    }
    assert_eq!(answered.status(), StatusCode::ACCEPTED);
    // The client resumes the call's stream and is told: the deny, not a hang.
    let resumed = lb
        .get()
        .header("last-event-id", asked.id.clone().unwrap())
        .send()
        .await
        .expect("resume");
    assert_eq!(resumed.status(), StatusCode::OK);
    let mut reader = SseReader::new(resumed);
    let result = until_response(&mut reader, &json!(100)).await;
    assert_eq!(result["result"]["isError"], true, "{result}");
    let payload: Value = serde_json::from_str(text(&result)).unwrap();
    assert_eq!(payload["error"], "authorization_required", "{payload}");
    assert_eq!(payload["tool"], "delete_note");
    assert!(
        payload["detail"]
            .as_str()
            .unwrap()
            .starts_with("approval_unavailable"),
        "{payload}"
    );
    println!(
        "the parked call was closed with the deny {} ms after the kill",
        started.elapsed().as_millis()
    );
    // The task it ran is ended failed by whichever replica reads it next, saying why.
    let through_lb = mcp_tests::http::StatelessHttp::new(url.clone()).with_capabilities(declaring);
    let deadline = tokio::time::Instant::now() + PATIENCE;
    let failed = loop {
        // A request meeting the dead replica's kept-alive connection gets 502: ask again.
        let sent = through_lb
            .post(json!("get"), "tasks/get", json!({"taskId": task}))
            .send()
            .await
            .expect("POST");
        let mut last = Value::Null;
        if sent.status() == StatusCode::OK {
            last = through_lb.read("tasks/get", sent).await.response;
            if last["result"]["status"] == "failed" {
                break last["result"].clone();
            }
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the killed replica's task never failed: {last}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(
        failed["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("replica_lost"),
        "{failed}"
    );
    println!(
        "the task of the killed replica read as failed (replica_lost) {} ms after the kill",
        started.elapsed().as_millis()
    );
    // The session goes on, on whichever replica the load balancer picks.
    for i in 0..(2 * replicas.len() as i64) {
        let answer = lb
            .request(200 + i, "tools/call", call("test_simple_text", json!({})))
            .await;
        assert_eq!(text(&answer), "This is a simple text response for testing.");
    }
    let get = lb.get().send().await.expect("GET");
    assert_eq!(
        get.status(),
        StatusCode::OK,
        "the session's GET stream opens"
    );
    let deleted = lb.delete().send().await.expect("DELETE");
    assert_eq!(deleted.status(), StatusCode::NO_CONTENT);
    let gone = lb.exchange(json!(300), "tools/list", json!({})).await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND, "deleted everywhere");
    println!("live_replica_killed_mid_session: the session continued on the other replicas");
}

/// A 2026-07-28 client of replica `i` declaring the tasks extension.
fn tasks_client(replicas: &Replicas, i: usize) -> mcp_tests::http::StatelessHttp {
    mcp_tests::http::StatelessHttp::new(replicas.url(i))
        .with_capabilities(json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}))
}

async fn task_status_on(c: &mcp_tests::http::StatelessHttp, id: &str, want: &str) -> Value {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let r = c
            .request(json!("get"), "tasks/get", json!({"taskId": id}))
            .await;
        if r["result"]["status"] == want {
            return r["result"].clone();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "task {id} never became {want}: {r}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn tasks_are_shared_steered_and_failed_across_replicas(kind: Kind) {
    let Some(replicas) = Replicas::start(kind, "tasks_across_replicas").await else {
        return;
    };
    let (zero, one, two) = (
        tasks_client(&replicas, 0),
        tasks_client(&replicas, 1),
        tasks_client(&replicas, 2),
    );
    // Created on 0, readable at once on 1 (durable create), finished there.
    let r = zero
        .request(json!(1), "tools/call", call("job", json!({"ms": 300})))
        .await;
    assert_eq!(r["result"]["resultType"], "task", "{r}");
    let id = r["result"]["taskId"].as_str().unwrap().to_owned();
    let now = one
        .request(json!(2), "tasks/get", json!({"taskId": id}))
        .await;
    assert_eq!(now["result"]["taskId"], id.as_str(), "{now}");
    let done = task_status_on(&one, &id, "completed").await;
    assert_eq!(
        done["result"]["content"][0]["text"],
        "job done after 300 ms"
    );

    // Cancelled through 2: the handler on 0 stops, and the task stays cancelled.
    let r = zero
        .request(json!(3), "tools/call", call("job", json!({"ms": 60000})))
        .await;
    let long = r["result"]["taskId"].as_str().unwrap().to_owned();
    let ack = two
        .request(json!(4), "tasks/cancel", json!({"taskId": long}))
        .await;
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    task_status_on(&zero, &long, "cancelled").await;

    // Replica 0 crashes with a task running: another replica ends it failed, saying why.
    let r = zero
        .request(json!(5), "tools/call", call("job", json!({"ms": 60000})))
        .await;
    let orphan = r["result"]["taskId"].as_str().unwrap().to_owned();
    replicas.drop_out(0);
    let failed = task_status_on(&one, &orphan, "failed").await;
    assert!(
        failed["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("replica_lost"),
        "{failed}"
    );
    // Once failed it stays failed, on every replica.
    let again = task_status_on(&two, &orphan, "failed").await;
    assert_eq!(again["error"], failed["error"]);
}

/// A 2025-11-25 task whose replica crashed is listed `failed` by `tasks/list` on the
/// others, even when nobody asked `tasks/get` about it (it was listed `working` for ever).
async fn a_lost_core_task_is_listed_failed(kind: Kind) {
    let Some(r) = Replicas::start(kind, "a_lost_core_task_is_listed_failed").await else {
        return;
    };
    let mut a = r.client(0);
    a.initialize("2025-11-25", json!({})).await;
    let created = a
        .request(
            1,
            "tools/call",
            json!({"name": "job", "arguments": {"ms": 60000}, "task": {}}),
        )
        .await;
    let id = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a core task: {created}"))
        .to_owned();
    // One on replica 1 that lives on.
    let alive = r
        .on(&a, 1)
        .request(
            2,
            "tools/call",
            json!({"name": "job", "arguments": {"ms": 60000}, "task": {}}),
        )
        .await;
    let alive = alive["result"]["task"]["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    r.drop_out(0);
    let mut lister = r.on(&a, 2);
    let deadline = tokio::time::Instant::now() + PATIENCE;
    let mut n = 10;
    let listed = loop {
        n += 1;
        let listed = lister.request(n, "tasks/list", json!({})).await;
        let status = |task: &str| {
            listed["result"]["tasks"]
                .as_array()
                .unwrap()
                .iter()
                .find(|t| t["taskId"] == task)
                .unwrap_or_else(|| panic!("{task} is listed: {listed}"))
                .clone()
        };
        let (lost, live) = (status(&id), status(&alive));
        assert_eq!(live["status"], "working", "{live}");
        if lost["status"] == "failed" {
            break lost;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the lost task is still listed {lost}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(
        listed["statusMessage"]
            .as_str()
            .unwrap()
            .starts_with("replica_lost"),
        "{listed}"
    );
}

async fn the_task_store_keeps_its_contract(kind: Kind) {
    use mcp::tasks::{Admission, TaskLimits, TaskStatus};
    let Some(replicas) = Replicas::start(kind, "task_store_contract").await else {
        return;
    };
    let store = replicas.replicas[0]
        .cluster
        .tasks()
        .expect("a shared task store")
        .clone();
    let now = now_ms();
    let record = |id: &str, owner: &str, ttl: Option<u64>| {
        working_task(&format!("{id}-{now}"), owner, ttl, now)
    };
    let limits = TaskLimits {
        per_owner: 2,
        total: 3,
    };
    let owner = format!("principal::alice-{now}");
    let a = record("a", &owner, Some(60_000));
    assert_eq!(store.create(&a, limits).await.unwrap(), Admission::Created);
    assert_eq!(
        store
            .create(&record("b", &owner, None), limits)
            .await
            .unwrap(),
        Admission::Created
    );
    assert_eq!(
        store
            .create(&record("c", &owner, None), limits)
            .await
            .unwrap(),
        Admission::OwnerFull
    );
    assert_eq!(
        store
            .create(&record("d", "bob", None), limits)
            .await
            .unwrap(),
        Admission::Created
    );
    assert_eq!(
        store
            .create(&record("e", "carol", None), limits)
            .await
            .unwrap(),
        Admission::StoreFull
    );
    assert_eq!(store.get(&a.task_id).await.unwrap().as_ref(), Some(&a));
    let listed = store.list(&owner).await.unwrap();
    assert_eq!(listed.len(), 2);
    // A terminal record never changes again.
    let mut ended = a.clone();
    ended.status = TaskStatus::Cancelled;
    assert!(store.update(&ended).await.unwrap());
    let mut late = a.clone();
    late.status = TaskStatus::Completed;
    assert!(!store.update(&late).await.unwrap());
    assert_eq!(
        store.get(&a.task_id).await.unwrap().unwrap().status,
        TaskStatus::Cancelled
    );
    // Unknown ids are unknown; an update never creates.
    assert!(store.get("never").await.unwrap().is_none());
    assert!(!store.update(&record("never", &owner, None)).await.unwrap());
}

/// The time now, in Unix milliseconds.
fn now_ms() -> u64 {
    u64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

/// A 2026-07-28 task record, `working`, created at `now`.
fn working_task(id: &str, owner: &str, ttl: Option<u64>, now: u64) -> mcp::tasks::TaskRecord {
    mcp::tasks::TaskRecord {
        task_id: id.into(),
        owner: owner.into(),
        replica: None,
        flavour: mcp::tasks::TaskFlavour::Extension,
        tool: "job".into(),
        status: mcp::tasks::TaskStatus::Working,
        status_message: None,
        created_ms: now,
        updated_ms: now,
        ttl_ms: ttl,
        poll_interval_ms: 1000,
        result: None,
        error: None,
        input_requests: Default::default(),
    }
}

/// The task indexes (per owner and in total) expire with the last of their tasks: an owner
/// that stops creating tasks (a session that ended) leaves no key behind once its tasks
/// expired, and an index holding a task without a ttl is kept. Found by the cluster soak
/// (`soak_cluster.rs`): every session that had made a task left its `towner:` index in
/// Redis for good.

#[tokio::test]
async fn task_indexes_expire_with_their_tasks_on_redis() {
    use mcp::tasks::TaskLimits;
    let Some(server) = RedisServer::start("task_indexes_expire") else {
        return;
    };
    let prefix = format!("t-indexes-{}", std::process::id());
    let backend = RedisBackend::connect(&server.url(), &prefix)
        .await
        .expect("connect to the test redis");
    let cluster = backend.replica();
    let store = cluster.tasks().expect("a shared task store").clone();
    let now = now_ms();
    let record = |id: &str, owner: &str, ttl: Option<u64>| working_task(id, owner, ttl, now);
    let limits = TaskLimits {
        per_owner: 10,
        total: 10,
    };
    let exists = |key: &str| server.command(&["EXISTS", &format!("{prefix}:{key}")]);
    // Two tasks of a session that then goes away: the later one sets the index's expiry.
    for (id, ttl) in [("short", 300), ("longer", 900), ("shorter", 100)] {
        store
            .create(&record(id, "conn:gone", Some(ttl)), limits)
            .await
            .unwrap();
    }
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(exists("t:short"), ":0");
    assert_eq!(exists("towner:conn:gone"), ":1", "a task of it still lives");
    assert_eq!(exists("tall"), ":1");
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(exists("t:longer"), ":0");
    assert_eq!(
        exists("towner:conn:gone"),
        ":0",
        "the owner's index outlived its tasks"
    );
    assert_eq!(exists("tall"), ":0", "the total index outlived every task");
    // A task without a ttl keeps its indexes.
    store
        .create(&record("forever", "conn:kept", None), limits)
        .await
        .unwrap();
    store
        .create(&record("brief", "conn:kept", Some(100)), limits)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(exists("towner:conn:kept"), ":1");
    assert_eq!(exists("tall"), ":1");
    assert_eq!(
        store.list("conn:kept").await.unwrap().len(),
        1,
        "the expired one is not listed"
    );
}
