//! Load-balancer faults (issue 21): real replicas of the `everything` binary sharing one
//! Redis, behind a real nginx configured as the README's "Deploying" section says
//! (`mcp_tests::cluster`). A replica dies (SIGKILL) before a request, during one, under an
//! open stream, during a task, during an approval and under a resumed stream; nginx's read
//! timeout meets an idle stream. The promise: nothing lost that we promise, a clear
//! outcome for what we do not, within a bound, and never a call run twice.
//!
//! Each test starts its own Redis, replicas and nginx (skipped, with a line saying so, when
//! `redis-server`, nginx or the `everything` binary is missing, unless
//! `MCP_REQUIRE_REDIS=1`). Which replica served a response is read from the `X-Upstream`
//! header the harness's nginx adds; the figures (how long until a stream ended, until a
//! dead replica's work was closed) are printed.

use std::time::{Duration, Instant};

use futures::future::join_all;
use mcp::cluster::HEARTBEAT_TTL;
use mcp_tests::cluster::{Cluster, Options};
use mcp_tests::http::{McpHttp, SseEvent, SseReader, StatelessHttp};
use mcp_tests::nginx::{Balancer, Logged};
use mcp_tests::{call_params as call, response_text as text};
use reqwest::{RequestBuilder, Response, StatusCode};
use serde_json::{Value, json};

/// How long a stream may take to end once the replica under it died.
const STREAM_END: Duration = Duration::from_secs(5);

/// How long a dead replica's work may take to be closed by the others: its heartbeat must
/// lapse first, then a follower or a reader notices; generous for a loaded machine.
fn closing_bound() -> Duration {
    HEARTBEAT_TTL + Duration::from_secs(7)
}

/// Sends a request through nginx. One that nginx wrote on a kept-alive connection to a
/// replica as it died gets 502 (nginx never re-sends a POST a replica may have received);
/// the client sends it again, as the README says a client may when that is safe (it is
/// for every request sent here: those replicas never read them).
async fn through_lb(request: impl Fn() -> RequestBuilder) -> Response {
    for _ in 0..3 {
        let response = request().send().await.expect("nginx answers");
        if response.status() != StatusCode::BAD_GATEWAY {
            return response;
        }
    }
    request().send().await.expect("nginx answers")
}

/// A 2025-11-25 session opened through nginx, declaring elicitation (for approvals) and
/// sampling.
async fn session(c: &Cluster) -> McpHttp {
    let mut s = McpHttp::new(c.url());
    s.initialize("2025-11-25", json!({"elicitation": {}, "sampling": {}}))
        .await;
    s
}

fn request_body(id: i64, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

/// `add_note` with `id` through `s`'s session; its answer and the replica that served it.
async fn add_note(c: &Cluster, s: &McpHttp, rpc: i64, id: &str) -> (Value, usize) {
    let body = request_body(
        rpc,
        "tools/call",
        call("add_note", json!({"id": id, "text": id})),
    );
    let response = through_lb(|| s.post(body.clone())).await;
    let by = c.served_by(&response);
    let ex = s.read_exchange(response).await;
    assert_eq!(ex.status, StatusCode::OK, "{:?}", ex.response);
    (ex.response, by)
}

/// Whether replica `i` (asked directly) holds the note `id`.
async fn holds_note(c: &Cluster, i: usize, id: &str) -> bool {
    let read = StatelessHttp::new(c.replica_url(i))
        .request(
            json!(1),
            "resources/read",
            json!({"uri": format!("note://{id}")}),
        )
        .await;
    read.get("result").is_some()
}

/// How many of the live `replicas` hold the note `id`: a count of the runs of the call
/// that stored it (each replica keeps its notes in its own memory).
async fn runs_of(c: &Cluster, replicas: &[usize], id: &str) -> usize {
    let mut n = 0;
    for &i in replicas {
        n += usize::from(holds_note(c, i, id).await);
    }
    n
}

/// Waits until `reader`'s body ends, within `bound`; how long it took.
async fn ends_within(reader: &mut SseReader, what: &str, bound: Duration) -> Duration {
    let started = Instant::now();
    tokio::time::timeout(bound, async {
        while reader.next_within(bound * 2).await.is_some() {}
    })
    .await
    .unwrap_or_else(|_| panic!("{what}: still open {bound:?} after its replica died"));
    started.elapsed()
}

/// Reads `reader` until it ends, within `bound`: every message it carried.
async fn messages_until_end(reader: &mut SseReader, bound: Duration) -> Vec<Value> {
    tokio::time::timeout(bound, async {
        let mut out = Vec::new();
        while let Some(e) = reader.next_within(bound * 2).await {
            if !e.comment && !e.data.is_empty() {
                out.push(e.json());
            }
        }
        out
    })
    .await
    .unwrap_or_else(|_| panic!("the stream did not end within {bound:?}"))
}

/// Reads events until the message with `method`.
async fn until_method(reader: &mut SseReader, method: &str) -> (SseEvent, Value) {
    loop {
        let e = reader
            .next_within(Duration::from_secs(15))
            .await
            .unwrap_or_else(|| panic!("the stream ended before {method}"));
        if e.comment || e.data.is_empty() {
            continue;
        }
        let v = e.json();
        if v["method"] == method {
            return (e, v);
        }
    }
}

/// Starts `delete_note welcome` through nginx on `s` (the authorizer asks the human
/// first): its stream once the question arrived, the question's event and message, and
/// the replica holding the question.
async fn start_delete(c: &Cluster, s: &McpHttp, rpc: i64) -> (SseReader, SseEvent, Value, usize) {
    let body = request_body(
        rpc,
        "tools/call",
        call("delete_note", json!({"id": "welcome"})),
    );
    let response = through_lb(|| s.post(body.clone())).await;
    assert_eq!(response.status(), StatusCode::OK);
    let holder = c.served_by(&response);
    let mut reader = SseReader::new(response);
    let (event, ask) = until_method(&mut reader, "elicitation/create").await;
    assert!(event.id.is_some(), "a resumable question has an event id");
    (reader, event, ask, holder)
}

fn approve(ask: &Value) -> String {
    json!({"jsonrpc": "2.0", "id": ask["id"],
        "result": {"action": "accept", "content": {"approve": true}}})
    .to_string()
}

/// Resumes `s`'s stream after `last` through nginx until a replica other than `not`
/// serves it (round-robin gets there within a few tries): the stream and its replica.
async fn resume_avoiding(
    c: &Cluster,
    s: &McpHttp,
    last: &str,
    not: Option<usize>,
) -> (SseReader, usize) {
    for _ in 0..(2 * c.len()) {
        let response = through_lb(|| s.get().header("last-event-id", last)).await;
        assert_eq!(response.status(), StatusCode::OK, "resume after {last}");
        let by = c.served_by(&response);
        if Some(by) != not {
            return (SseReader::new(response), by);
        }
    }
    panic!("nginx never sent the resume to a replica other than {not:?}");
}

/// The deny that closes a call whose approval question died with its replica.
fn assert_approval_unavailable(response: &Value) {
    assert_eq!(response["result"]["isError"], true, "{response}");
    let payload: Value = serde_json::from_str(text(response)).expect("a JSON deny payload");
    assert_eq!(payload["error"], "authorization_required", "{payload}");
    assert_eq!(payload["tool"], "delete_note", "{payload}");
    assert!(
        payload["detail"]
            .as_str()
            .unwrap_or_default()
            .starts_with("approval_unavailable"),
        "{payload}"
    );
}

/// The responses to `id` among `messages`.
fn responses_to(messages: &[Value], id: i64) -> Vec<&Value> {
    messages
        .iter()
        .filter(|m| m.get("method").is_none() && m["id"] == id)
        .collect()
}

// ---- nginx retries a replica that is down ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nginx_retries_a_dead_replica_and_each_call_runs_once() {
    let Some(mut c) = Cluster::start("retry", Options::default()) else {
        return;
    };
    // Replica 1 is dead before nginx ever reaches it: every connection to it is refused.
    c.kill(1);
    let dead = c.replica_addr(1);
    let mut s = session(&c).await;
    let modern = StatelessHttp::new(c.url());
    let mut ids = Vec::new();
    for n in 0..6 {
        let id = format!("s{n}");
        let (answer, by) = add_note(&c, &s, 10 + n, &id).await;
        assert_ne!(by, 1);
        assert_eq!(answer["result"]["structuredContent"]["id"], id, "{answer}");
        ids.push(id);
        let id = format!("m{n}");
        let answer = modern
            .request(
                json!(n),
                "tools/call",
                call("add_note", json!({"id": id, "text": "x"})),
            )
            .await;
        assert_eq!(answer["result"]["structuredContent"]["id"], id, "{answer}");
        ids.push(id);
    }
    let listed = s.request(30, "tools/list", json!({})).await;
    assert!(listed["result"]["tools"].is_array(), "{listed}");

    // nginx tried the dead replica, moved on, and no client saw an error.
    let log = c.nginx().access_log();
    let retried: Vec<_> = log
        .iter()
        .filter(|l| l.upstreams.len() > 1 && l.upstreams[0] == dead)
        .collect();
    assert!(
        !retried.is_empty(),
        "nginx never tried the dead replica: {log:?}"
    );
    assert!(log.iter().all(|l| l.status < 500), "{log:?}");
    // Each call ran exactly once: its note is on exactly one live replica.
    for id in &ids {
        assert_eq!(runs_of(&c, &[0, 2], id).await, 1, "note {id}");
    }
    println!(
        "a dead replica behind nginx: {} of {} requests were retried on another replica, every one answered once",
        retried.len(),
        log.len()
    );
    c.assert_no_replica_panicked();
}

// ---- nginx loses a replica with requests in flight ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_post_a_dying_replica_received_gets_502_and_is_never_resent() {
    let balancer = Balancer {
        // The killed replica is back in the rotation a second after its restart.
        fail_timeout: Duration::from_secs(1),
        ..Balancer::default()
    };
    let options = Options {
        balancer,
        ..Options::default()
    };
    let Some(mut c) = Cluster::start("inflight", options) else {
        return;
    };
    let s = session(&c).await;
    // Every replica has served (nginx keeps connections open to each).
    for n in 1..=3 {
        add_note(&c, &s, n, &format!("warm{n}")).await;
    }
    // Replica 1 stops reading: the requests nginx sends it wait there.
    c.freeze(1);
    let sent: Vec<_> = (0..6)
        .map(|n| {
            let request = s.post(request_body(
                100 + n,
                "tools/call",
                call("add_note", json!({"id": format!("f{n}"), "text": "x"})),
            ));
            tokio::spawn(async move { request.send().await.expect("nginx answers") })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(15);
    while sent.iter().filter(|h| h.is_finished()).count() < 4 {
        assert!(
            Instant::now() < deadline,
            "the live replicas did not answer"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // The others are at the frozen replica now; it dies with them unread.
    tokio::time::sleep(Duration::from_millis(200)).await;
    c.kill(1);
    let answers = join_all(sent).await;
    let mut lost = Vec::new();
    for (n, answer) in answers.into_iter().enumerate() {
        let response = answer.expect("the request task");
        match response.status() {
            StatusCode::OK => {
                let ex = s.read_exchange(response).await;
                assert_eq!(
                    ex.response["result"]["isError"],
                    Value::Null,
                    "{:?}",
                    ex.response
                );
            }
            StatusCode::BAD_GATEWAY => lost.push(n),
            other => panic!("request {n}: {other}"),
        }
    }
    assert!(
        !lost.is_empty(),
        "no request was in flight on the killed replica"
    );
    // nginx did not send them to another replica: each 502 names only the dead one.
    let dead = c.replica_addr(1);
    let errors = |log: &[Logged]| log.iter().filter(|l| l.status == 502).count();
    let log = c
        .nginx()
        .access_log_when(|log| errors(log) >= lost.len())
        .await;
    let bad: Vec<_> = log.iter().filter(|l| l.status == 502).collect();
    assert_eq!(bad.len(), lost.len(), "{log:?}");
    assert!(
        bad.iter().all(|l| l.upstreams == [dead.clone()]),
        "nginx re-sent a POST: {log:?}"
    );
    // The client sends them again; every call has then run exactly once.
    for &n in &lost {
        add_note(&c, &s, 200 + n as i64, &format!("f{n}")).await;
    }
    for n in 0..6 {
        assert_eq!(runs_of(&c, &[0, 2], &format!("f{n}")).await, 1, "note f{n}");
    }
    println!(
        "a replica killed with {} POSTs in flight: each got 502, none re-sent by nginx; sent again by the client, each ran once",
        lost.len()
    );

    // Restarted, the replica is back in the rotation and serves the session opened before.
    c.restart(1);
    let restarted = Instant::now();
    let mut n = 300;
    loop {
        n += 1;
        let (answer, by) = add_note(&c, &s, n, &format!("back{n}")).await;
        assert_eq!(answer["result"]["isError"], Value::Null, "{answer}");
        if by == 1 {
            break;
        }
        assert!(
            restarted.elapsed() < Duration::from_secs(15),
            "the restarted replica never served again"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!(
        "the restarted replica served the old session again {:?} after its restart",
        restarted.elapsed()
    );
    c.assert_no_replica_panicked();
}

// ---- a replica killed under open streams, during an approval (handshake era) ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_cut_by_a_killed_replica_end_and_resume_elsewhere_with_the_deny() {
    let Some(mut c) = Cluster::start("cut_streams", Options::default()) else {
        return;
    };
    let mut s = session(&c).await;
    let (mut post_stream, asked, ask, holder) = start_delete(&c, &s, 1).await;
    // The session's GET stream, on the same replica.
    let mut get_stream = None;
    for _ in 0..(2 * c.len()) {
        let response = through_lb(|| s.get()).await;
        assert_eq!(response.status(), StatusCode::OK);
        if c.served_by(&response) == holder {
            get_stream = Some(SseReader::new(response));
            break;
        }
    }
    let mut get_stream = get_stream.expect("a GET stream on the question's replica");
    let primed = get_stream
        .next_within(Duration::from_secs(15))
        .await
        .expect("the GET stream is primed");
    let get_cursor = primed.id.expect("the priming event has an id");
    // A call there waiting on the client's model (a question, not an approval): if its
    // replica dies, its outcome is unknown.
    let mut running = None;
    for n in 10..(10 + 2 * c.len() as i64) {
        let params = call("test_sampling", json!({"prompt": "Say hello"}));
        let body = request_body(n, "tools/call", params);
        let response = through_lb(|| s.post(body.clone())).await;
        assert_eq!(response.status(), StatusCode::OK);
        if c.served_by(&response) == holder {
            running = Some((n, SseReader::new(response)));
            break;
        }
    }
    let (running_id, mut running_stream) = running.expect("a running call on that replica");
    let (sampling, _) = until_method(&mut running_stream, "sampling/createMessage").await;
    let running_cursor = sampling.id.expect("the call's events have ids");

    c.kill(holder);
    let killed = Instant::now();
    // No stream hangs: nginx ends them.
    let post_ended = ends_within(&mut post_stream, "the parked call's stream", STREAM_END).await;
    let get_ended = ends_within(&mut get_stream, "the GET stream", STREAM_END).await;
    ends_within(&mut running_stream, "the running call's stream", STREAM_END).await;

    // The human approves; the answer lands on a live replica.
    let answered = through_lb(|| s.post(approve(&ask))).await;
    assert_eq!(answered.status(), StatusCode::ACCEPTED);
    // The client resumes the call's stream and is told, once: the deny.
    let (mut resumed, _) = resume_avoiding(&c, &s, asked.id.as_deref().unwrap(), None).await;
    let messages = messages_until_end(&mut resumed, closing_bound()).await;
    let answers = responses_to(&messages, 1);
    assert_eq!(answers.len(), 1, "{messages:?}");
    assert_approval_unavailable(answers[0]);
    let closed = killed.elapsed();
    // The sampling call's stream, resumed, says the call stopped and its outcome is unknown.
    let (mut resumed, _) = resume_avoiding(&c, &s, &running_cursor, None).await;
    let messages = messages_until_end(&mut resumed, closing_bound()).await;
    let answers = responses_to(&messages, running_id);
    assert_eq!(answers.len(), 1, "{messages:?}");
    assert_eq!(answers[0]["result"]["isError"], true, "{}", answers[0]);
    assert!(
        text(answers[0]).starts_with("replica_stopped"),
        "{}",
        answers[0]
    );
    // The GET stream resumes too, and stays open.
    let (mut get_again, _) = resume_avoiding(&c, &s, &get_cursor, None).await;
    assert!(
        get_again.quiet_for(Duration::from_millis(300)).await,
        "the resumed GET stream ended or carried something unexpected"
    );

    // The tool never ran: every live replica still has its note; the session goes on.
    let live: Vec<usize> = (0..c.len()).filter(|&i| i != holder).collect();
    assert_eq!(runs_of(&c, &live, "welcome").await, live.len());
    let added = s
        .request(
            2,
            "tools/call",
            call("add_note", json!({"id": "after", "text": "x"})),
        )
        .await;
    assert_eq!(
        added["result"]["structuredContent"]["id"], "after",
        "{added}"
    );
    println!(
        "a replica killed under an approval's stream, a sampling call's and a GET stream: they ended {post_ended:?} and {get_ended:?} after the kill; resumed elsewhere, the approval's call was closed with the deny {closed:?} after it, the sampling one with replica_stopped"
    );
    c.assert_no_replica_panicked();
}

// ---- a replica killed under a resumed stream ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_killed_under_a_resumed_stream_loses_nothing() {
    let Some(mut c) = Cluster::start("resumed_stream", Options::default()) else {
        return;
    };
    let s = session(&c).await;
    let (first, asked, ask, holder) = start_delete(&c, &s, 1).await;
    let cursor = asked.id.clone().unwrap();
    // The client's connection drops; it resumes on another replica, which follows the
    // stream of the call still parked on `holder`.
    drop(first);
    let (mut follower_stream, follower) = resume_avoiding(&c, &s, &cursor, Some(holder)).await;
    assert!(follower_stream.quiet_for(Duration::from_millis(200)).await);
    c.kill(follower);
    let ended = ends_within(&mut follower_stream, "the resumed stream", STREAM_END).await;

    // Resumed again (nginx skips the dead replica), then answered: the call runs on its
    // replica and its one response reaches the client.
    let (mut again, on) = resume_avoiding(&c, &s, &cursor, Some(follower)).await;
    let answered = through_lb(|| s.post(approve(&ask))).await;
    assert_eq!(answered.status(), StatusCode::ACCEPTED);
    let messages = messages_until_end(&mut again, Duration::from_secs(15)).await;
    let answers = responses_to(&messages, 1);
    assert_eq!(answers.len(), 1, "{messages:?}");
    assert_eq!(text(answers[0]), "deleted note welcome", "{}", answers[0]);
    // It ran once, on the replica holding the question.
    let live: Vec<usize> = (0..c.len()).filter(|&i| i != follower).collect();
    assert!(!holds_note(&c, holder, "welcome").await);
    assert_eq!(runs_of(&c, &live, "welcome").await, live.len() - 1);
    println!(
        "the replica following a resumed stream killed: the stream ended {ended:?} after; resumed again on replica {on}, the call's one answer arrived"
    );
    c.assert_no_replica_panicked();
}

// ---- a replica killed during tasks (both eras) ----

/// `tasks/get` of `id` through nginx until its status is `want`, within `bound`: the task.
async fn poll_task(
    what: &str,
    bound: Duration,
    get: impl AsyncFn() -> Value,
    want: &str,
) -> (Value, Duration) {
    let started = Instant::now();
    loop {
        let task = get().await;
        if task["status"] == want {
            return (task, started.elapsed());
        }
        assert!(
            started.elapsed() < bound,
            "{what}: not {want} within {bound:?}: {task}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_of_a_killed_replica_fail_with_a_reason_in_both_eras() {
    let Some(mut c) = Cluster::start("tasks", Options::default()) else {
        return;
    };
    let modern = StatelessHttp::new(c.url())
        .with_capabilities(json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}));
    let s = session(&c).await;
    let start_modern = async |n: i64| {
        let response = through_lb(|| {
            modern.post(
                json!(n),
                "tools/call",
                call("slow_compute", json!({"seconds": 60})),
            )
        })
        .await;
        let by = c.served_by(&response);
        let r = modern.read("tools/call", response).await.response;
        assert_eq!(r["result"]["resultType"], "task", "{r}");
        (r["result"]["taskId"].as_str().unwrap().to_owned(), by)
    };
    let start_core = async |n: i64| {
        let body = request_body(
            n,
            "tools/call",
            json!({"name": "slow_compute", "arguments": {"seconds": 60}, "task": {"ttl": 600000}}),
        );
        let response = through_lb(|| s.post(body.clone())).await;
        let by = c.served_by(&response);
        let r = s.read_exchange(response).await.response;
        let id = r["result"]["task"]["taskId"]
            .as_str()
            .unwrap_or_else(|| panic!("a core task: {r}"))
            .to_owned();
        (id, by)
    };
    // A task of each era on the victim, and one of each elsewhere that must live on.
    let (modern_task, victim) = start_modern(1).await;
    let mut doomed_core = None;
    let mut surviving_core = None;
    let mut surviving_modern = None;
    for n in 0..(3 * c.len() as i64) {
        if doomed_core.is_none() || surviving_core.is_none() {
            let (id, by) = start_core(10 + n).await;
            if by == victim {
                doomed_core.get_or_insert(id);
            } else {
                surviving_core.get_or_insert(id);
            }
        }
        if surviving_modern.is_none() {
            let (id, by) = start_modern(20 + n).await;
            if by != victim {
                surviving_modern = Some(id);
            }
        }
    }
    let core_task = doomed_core.expect("a core task on the victim");
    let (surviving_core, surviving_modern) = (surviving_core.unwrap(), surviving_modern.unwrap());

    c.kill(victim);
    let killed = Instant::now();
    let modern_get = async |id: &str| {
        let response =
            through_lb(|| modern.post(json!("get"), "tasks/get", json!({"taskId": id}))).await;
        modern.read("tasks/get", response).await.response["result"].clone()
    };
    let core_get = async |id: &str| {
        let body = request_body(50, "tasks/get", json!({"taskId": id}));
        let response = through_lb(|| s.post(body.clone())).await;
        s.read_exchange(response).await.response["result"].clone()
    };
    let (failed, took_modern) = poll_task(
        "the 2026-07-28 task",
        closing_bound(),
        async || modern_get(&modern_task).await,
        "failed",
    )
    .await;
    assert!(
        failed["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .starts_with("replica_lost"),
        "{failed}"
    );
    // The 2025-11-25 task as tasks/list shows it (nothing has read it since the kill).
    let core_listed = async |id: &str| {
        let body = request_body(51, "tasks/list", json!({}));
        let response = through_lb(|| s.post(body.clone())).await;
        let listed = s.read_exchange(response).await.response;
        listed["result"]["tasks"]
            .as_array()
            .unwrap_or_else(|| panic!("tasks/list: {listed}"))
            .iter()
            .find(|t| t["taskId"] == id)
            .unwrap_or_else(|| panic!("the lost task is listed: {listed}"))
            .clone()
    };
    let (listed, took_core) = poll_task(
        "the 2025-11-25 task in tasks/list",
        closing_bound(),
        async || core_listed(&core_task).await,
        "failed",
    )
    .await;
    let failed_core = core_get(&core_task).await;
    assert_eq!(failed_core, listed);
    assert!(
        failed_core["statusMessage"]
            .as_str()
            .unwrap_or_default()
            .starts_with("replica_lost"),
        "{failed_core}"
    );
    // tasks/result answers with the failure rather than waiting for ever.
    let result_body = request_body(60, "tasks/result", json!({"taskId": core_task}));
    let response = through_lb(|| s.post(result_body.clone())).await;
    let result = tokio::time::timeout(Duration::from_secs(10), s.read_exchange(response))
        .await
        .expect("tasks/result answers")
        .response;
    assert!(
        result.to_string().contains("replica_lost"),
        "tasks/result of a lost task: {result}"
    );
    // The tasks of live replicas are not touched.
    assert_eq!(modern_get(&surviving_modern).await["status"], "working");
    assert_eq!(core_get(&surviving_core).await["status"], "working");
    println!(
        "a replica killed with tasks running: read failed (replica_lost) through nginx {:?} after the kill (2026-07-28 tasks/get after {took_modern:?} of polling, 2025-11-25 tasks/list {took_core:?} more)",
        killed.elapsed()
    );
    c.assert_no_replica_panicked();
}

// ---- a replica killed during an approval (2026-07-28) ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_round_from_a_killed_replica_completes_once_on_another() {
    let Some(mut c) = Cluster::start("approval_state", Options::default()) else {
        return;
    };
    let modern = StatelessHttp::new(c.url()).with_capabilities(json!({"elicitation": {}}));
    let response = through_lb(|| {
        modern.post(
            json!(1),
            "tools/call",
            call("delete_note", json!({"id": "welcome"})),
        )
    })
    .await;
    let issuer = c.served_by(&response);
    let round = modern.read("tools/call", response).await.response;
    assert_eq!(round["result"]["resultType"], "input_required", "{round}");
    let (key, _) = round["result"]["inputRequests"]
        .as_object()
        .and_then(|m| m.iter().next())
        .expect("one input request");
    let retry = json!({"name": "delete_note", "arguments": {"id": "welcome"},
        "requestState": round["result"]["requestState"],
        "inputResponses": {key: {"action": "accept", "content": {"approve": true}}}});

    c.kill(issuer);
    // The human's answer completes the call on whichever replica nginx picks.
    let response = through_lb(|| modern.post(json!(2), "tools/call", retry.clone())).await;
    let ran_on = c.served_by(&response);
    let done = modern.read("tools/call", response).await.response;
    assert_eq!(text(&done), "deleted note welcome", "{done}");
    // Once: presented again, anywhere, it is refused.
    for n in 3..(3 + c.len() as i64) {
        let response = through_lb(|| modern.post(json!(n), "tools/call", retry.clone())).await;
        let again = modern.read("tools/call", response).await.response;
        assert_eq!(again["error"]["code"], -32602, "{again}");
        assert!(
            again["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .contains("already used"),
            "{again}"
        );
    }
    let live: Vec<usize> = (0..c.len()).filter(|&i| i != issuer).collect();
    assert!(!holds_note(&c, ran_on, "welcome").await);
    assert_eq!(runs_of(&c, &live, "welcome").await, live.len() - 1);
    println!(
        "a requestState issued by a replica killed since: the approval ran once on replica {ran_on}, refused after"
    );
    c.assert_no_replica_panicked();
}

// ---- nginx's read timeout and an idle stream ----

/// Opens a GET stream through `c`'s nginx and reads it for `idle`: whether it was still
/// open then, and how many keep-alive comments came.
async fn idle_stream(c: &Cluster, idle: Duration) -> (McpHttp, SseReader, bool, usize) {
    let s = session(c).await;
    let response = s.get().send().await.expect("GET");
    assert_eq!(response.status(), StatusCode::OK);
    let mut reader = SseReader::new(response);
    let deadline = tokio::time::Instant::now() + idle;
    let mut comments = 0;
    let open = loop {
        match tokio::time::timeout_at(deadline, reader.next_within(idle * 2)).await {
            Err(_) => break true,
            Ok(None) => break false,
            Ok(Some(e)) => comments += usize::from(e.comment),
        }
    };
    (s, reader, open, comments)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keep_alive_comments_hold_an_idle_stream_past_nginx_read_timeout() {
    let short_read = Balancer {
        read_timeout: Duration::from_secs(1),
        ..Balancer::default()
    };
    let kept = Options {
        replicas: 1,
        replica_args: vec!["--sse-keep-alive".into(), "300ms".into()],
        balancer: short_read.clone(),
    };
    let Some(kept) = Cluster::start("keep_alive", kept) else {
        return;
    };
    // The control: the default keep-alive (15 s) is longer than this read timeout.
    let silent = Options {
        replicas: 1,
        replica_args: Vec::new(),
        balancer: short_read,
    };
    let Some(silent) = Cluster::start("keep_alive_control", silent) else {
        return;
    };
    let idle = Duration::from_millis(3500);
    let ((mut s, mut reader, open, comments), (_, _, control_open, _)) =
        tokio::join!(idle_stream(&kept, idle), idle_stream(&silent, idle));
    assert!(
        open,
        "an idle stream with keep-alives was cut by nginx's read timeout"
    );
    assert!(
        comments >= 3,
        "only {comments} keep-alive comments in {idle:?}"
    );
    assert!(
        !control_open,
        "the control stream was not cut: the read timeout is not what this test sets"
    );
    // Still open and working: a change reaches it.
    let changed = s
        .request(1, "tools/call", call("test_trigger_tool_change", json!({})))
        .await;
    assert!(text(&changed).starts_with("Tool list changed"), "{changed}");
    let (_, note) = until_method(&mut reader, "notifications/tools/list_changed").await;
    assert_eq!(note["method"], "notifications/tools/list_changed");
    println!(
        "nginx proxy_read_timeout 1 s: a stream with a 300 ms keep-alive stayed open {idle:?} ({comments} comments); one with the default 15 s was cut"
    );
    kept.assert_no_replica_panicked();
}

// ---- the harness's load balancer is the README's ----

#[test]
fn the_harness_balances_as_the_readme_says() {
    let readme = include_str!("../../README.md");
    let start = readme.find("```nginx\n").expect("the README's nginx block") + 9;
    let block = &readme[start..start + readme[start..].find("```").unwrap()];
    let upstreams: Vec<std::net::SocketAddr> =
        ["10.0.0.11:8080", "10.0.0.12:8080", "10.0.0.13:8080"]
            .iter()
            .map(|a| a.parse().unwrap())
            .collect();
    let generated = Balancer::default().config(443, &upstreams, "/x".as_ref());
    let normal = |line: &str| {
        line.split('#')
            .next()
            .unwrap()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    let ours: Vec<String> = generated.lines().map(normal).collect();
    for line in block.lines().map(normal) {
        // Where it listens and what it is called are the deployment's.
        let deployment = line.is_empty()
            || line == "}"
            || line == "server {"
            || line.starts_with("listen ")
            || line.starts_with("server_name ");
        if deployment {
            continue;
        }
        assert!(
            ours.contains(&line),
            "the README's {line:?} is not in the harness's configuration:\n{generated}"
        );
    }
}
