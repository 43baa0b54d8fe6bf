//! Streamable HTTP streams over real sockets: POSTs answered as SSE when a request produces
//! messages before its response, the priming event, resumption with Last-Event-ID, the GET
//! stream for unsolicited messages, keep-alives, and disconnects that do not cancel.

use std::sync::atomic::Ordering;
use std::time::Duration;

use mcp::registry::ToolDef;
use mcp_tests::http::{HttpTestServer, SseReader, WAIT, fixture, test_config, with_header};
use reqwest::StatusCode;
use serde_json::{Value, json};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoArgs {}

fn progress_params(token: &str) -> Value {
    json!({"name": "progress", "arguments": {}, "_meta": {"progressToken": token}})
}

#[tokio::test]
async fn a_request_with_progress_streams_priming_then_progress_then_the_response() {
    let srv = HttpTestServer::start(
        fixture().server,
        test_config().retry(Duration::from_millis(1234)),
    )
    .await;
    let mut c = srv.client();
    c.initialize("2025-11-25", json!({})).await;
    let ex = c
        .exchange(json!(5), "tools/call", progress_params("tok"))
        .await;
    assert_eq!(ex.status, StatusCode::OK);
    assert!(
        ex.content_type.starts_with("text/event-stream"),
        "{}",
        ex.content_type
    );
    // The priming event comes first: an id, empty data, and the retry interval.
    let first = &ex.events[0];
    assert!(first.is_priming(), "{first:?}");
    assert_eq!(first.retry, Some(1234));
    // Then three progress notifications, strictly increasing, then the response, which
    // ends the stream.
    assert_eq!(ex.before.len(), 3, "{:?}", ex.before);
    let progress: Vec<f64> = ex
        .before
        .iter()
        .map(|m| {
            assert_eq!(m["method"], "notifications/progress");
            assert_eq!(m["params"]["progressToken"], "tok");
            m["params"]["progress"].as_f64().unwrap()
        })
        .collect();
    assert_eq!(progress, vec![10.0, 20.0, 30.0]);
    assert_eq!(ex.response["id"], 5);
    assert_eq!(ex.response["result"]["content"][0]["text"], "done");
    // Every message event has an id naming one stream, and they all name the same one.
    let ids: Vec<&str> = ex.events.iter().filter_map(|e| e.id.as_deref()).collect();
    assert_eq!(ids.len(), 5);
    let stream_of = |id: &str| id.split('-').next().unwrap().to_owned();
    assert!(
        ids.iter().all(|id| stream_of(id) == stream_of(ids[0])),
        "{ids:?}"
    );
    assert!(
        ex.events[1..]
            .iter()
            .all(|e| e.event.as_deref() == Some("message"))
    );
}

#[tokio::test]
async fn without_anything_before_the_response_the_answer_is_plain_json() {
    let srv = HttpTestServer::start(fixture().server, test_config()).await;
    let mut c = srv.client();
    c.initialize("2025-11-25", json!({})).await;
    // No progress token: nothing precedes the response.
    let ex = c
        .exchange(
            json!(1),
            "tools/call",
            json!({"name": "progress", "arguments": {}}),
        )
        .await;
    assert!(ex.content_type.starts_with("application/json"));
    assert_eq!(ex.response["result"]["content"][0]["text"], "done");
}

/// A request's handler can keep its `Ctx` past its response (a task it spawned): what it
/// sends then must not reach the client as part of a later request's answer, even though
/// each worker thread keeps a finished exchange's channel for its next one.
#[tokio::test]
async fn a_message_sent_after_its_response_does_not_reach_a_later_exchange() {
    let server = mcp::Server::builder("lingering", "1.0.0")
        .tool(ToolDef::from_fn(
            "linger",
            "Answers at once; logs 100 ms later from a task it spawned.",
            |ctx: mcp::Ctx, _: NoArgs| async move {
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    ctx.info("late");
                });
                "answered"
            },
        ))
        .tool(ToolDef::from_fn(
            "plain",
            "Answers at once.",
            |_ctx, _: NoArgs| async move { "plain" },
        ))
        .build()
        .expect("server");
    let srv = HttpTestServer::start(server, test_config()).await;
    let mut c = srv.client();
    c.initialize("2025-11-25", json!({})).await;
    let call = |name: &str| json!({"name": name, "arguments": {}});
    let ex = c.exchange(json!(1), "tools/call", call("linger")).await;
    assert!(ex.content_type.starts_with("application/json"), "{ex:?}");
    // One exchange while the task still holds the first request's context, one after it
    // has logged: both are plain answers, with nothing of the first request's in them.
    for (id, pause) in [(2, 0), (3, 250)] {
        tokio::time::sleep(Duration::from_millis(pause)).await;
        let ex = c.exchange(json!(id), "tools/call", call("plain")).await;
        assert!(ex.content_type.starts_with("application/json"), "{ex:?}");
        assert!(ex.before.is_empty(), "{:?}", ex.before);
        assert_eq!(ex.response["result"]["content"][0]["text"], "plain");
    }
}

#[tokio::test]
async fn logs_go_on_the_request_stream_and_older_revisions_get_no_priming_event() {
    let srv = HttpTestServer::start(fixture().server, test_config()).await;
    let mut c = srv.client();
    c.initialize("2025-06-18", json!({})).await;
    let ex = c
        .exchange(
            json!(1),
            "tools/call",
            json!({"name": "log", "arguments": {}}),
        )
        .await;
    assert!(ex.content_type.starts_with("text/event-stream"));
    assert!(!ex.events.iter().any(|e| e.is_priming()), "{:?}", ex.events);
    assert_eq!(ex.before.len(), 1);
    assert_eq!(ex.before[0]["method"], "notifications/message");
    assert_eq!(ex.before[0]["params"]["level"], "info");
    assert_eq!(ex.response["result"]["content"][0]["text"], "logged");
    // Raising the level silences it: the answer is plain JSON again.
    c.request(2, "logging/setLevel", json!({"level": "error"}))
        .await;
    let ex = c
        .exchange(
            json!(3),
            "tools/call",
            json!({"name": "log", "arguments": {}}),
        )
        .await;
    assert!(ex.content_type.starts_with("application/json"));
}

#[tokio::test]
async fn several_post_streams_run_at_once() {
    let srv = HttpTestServer::start(fixture().server, test_config()).await;
    let mut c = srv.client();
    c.initialize("2025-11-25", json!({})).await;
    let calls = (0..3).map(|i| {
        let mut c = c.clone();
        async move {
            c.exchange(
                json!(100 + i),
                "tools/call",
                progress_params(&format!("t{i}")),
            )
            .await
        }
    });
    let results = futures::future::join_all(calls).await;
    let mut streams = Vec::new();
    for (i, ex) in results.iter().enumerate() {
        assert_eq!(ex.status, StatusCode::OK);
        assert_eq!(ex.response["id"], 100 + i as i64);
        // Each stream carries only its own request's progress.
        assert!(
            ex.before
                .iter()
                .all(|m| m["params"]["progressToken"] == format!("t{i}"))
        );
        let id = ex.events[0].id.clone().unwrap();
        streams.push(id.split('-').next().unwrap().to_owned());
    }
    streams.sort();
    streams.dedup();
    assert_eq!(streams.len(), 3, "every POST stream has its own stream id");
}

#[tokio::test]
async fn a_disconnect_is_not_a_cancellation_and_last_event_id_resumes_that_stream_only() {
    let fx = fixture();
    let waited = fx.waited.clone();
    let srv = HttpTestServer::start(fx.server, test_config()).await;
    let mut c = srv.client();
    c.initialize("2025-11-25", json!({})).await;

    // Stream A: a slow call. Read the priming event and the first progress, then hang up.
    let body = json!({"jsonrpc": "2.0", "id": "a", "method": "tools/call",
        "params": {"name": "wait", "arguments": {"ms": 300}, "_meta": {"progressToken": "pa"}}});
    let response = c.post(body.to_string()).send().await.unwrap();
    let mut a = SseReader::new(response);
    let priming = a.next().await.unwrap();
    assert!(priming.is_priming());
    let started = a.next().await.unwrap();
    assert_eq!(started.json()["method"], "notifications/progress");
    let cursor = started.id.clone().unwrap();
    drop(a);

    // Stream B, concurrently, on the same session: its own events.
    let ex_b = c
        .exchange(
            json!("b"),
            "tools/call",
            json!({"name": "wait", "arguments": {"ms": 10}, "_meta": {"progressToken": "pb"}}),
        )
        .await;
    assert_eq!(
        ex_b.response["result"]["content"][0]["text"],
        "waited 10 ms"
    );

    // The tool runs to completion although nobody is listening.
    let deadline = tokio::time::Instant::now() + WAIT;
    while waited.load(Ordering::SeqCst) < 2 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the disconnected call was cancelled"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // Resuming A after its progress event replays A's response, and nothing of B.
    let resumed = with_header(c.get(), "last-event-id", &cursor)
        .send()
        .await
        .unwrap();
    assert_eq!(resumed.status(), StatusCode::OK);
    let events = SseReader::new(resumed).rest().await;
    assert_eq!(events.len(), 1, "{events:?}");
    let response = events[0].json();
    assert_eq!(response["id"], "a");
    assert_eq!(response["result"]["content"][0]["text"], "waited 300 ms");
    let stream_a = cursor.split('-').next().unwrap();
    assert!(
        events[0]
            .id
            .as_deref()
            .unwrap()
            .starts_with(&format!("{stream_a}-"))
    );

    // Resuming from the priming event replays the whole stream: progress, then response.
    let resumed = with_header(c.get(), "last-event-id", priming.id.as_deref().unwrap())
        .send()
        .await
        .unwrap();
    let events = SseReader::new(resumed).rest().await;
    let kinds: Vec<Value> = events.iter().map(|e| e.json()).collect();
    assert_eq!(kinds.len(), 2, "{kinds:?}");
    assert_eq!(kinds[0]["params"]["progressToken"], "pa");
    assert_eq!(kinds[1]["id"], "a");
}

#[tokio::test]
async fn resuming_a_running_stream_continues_it_live() {
    let srv = HttpTestServer::start(fixture().server, test_config()).await;
    let mut c = srv.client();
    c.initialize("2025-11-25", json!({})).await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "wait", "arguments": {"ms": 400}, "_meta": {"progressToken": 1}}});
    let mut first = SseReader::new(c.post(body.to_string()).send().await.unwrap());
    let priming = first.next().await.unwrap();
    drop(first);
    // Resume while the tool still runs: the progress is replayed, then the response
    // arrives live.
    let resumed = with_header(c.get(), "last-event-id", priming.id.as_deref().unwrap())
        .send()
        .await
        .unwrap();
    let events = SseReader::new(resumed).rest().await;
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[0].json()["method"], "notifications/progress");
    assert_eq!(
        events[1].json()["result"]["content"][0]["text"],
        "waited 400 ms"
    );
}

#[tokio::test]
async fn last_event_ids_that_name_nothing_are_refused() {
    let srv = HttpTestServer::start(fixture().server, test_config()).await;
    let mut c = srv.client();
    c.initialize("2025-11-25", json!({})).await;
    for bad in ["garbage", "99-1", "1"] {
        let r = with_header(c.get(), "last-event-id", bad)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::BAD_REQUEST, "{bad}");
    }
    // Another session's cursor names nothing here either.
    let mut other = srv.client();
    other.initialize("2025-11-25", json!({})).await;
    let ex = other
        .exchange(json!(1), "tools/call", progress_params("x"))
        .await;
    let foreign = ex.events[0].id.clone().unwrap();
    let r = with_header(c.get(), "last-event-id", &foreign)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn head_answers_as_a_get_would_without_opening_a_stream() {
    let srv = HttpTestServer::start(fixture().server, test_config()).await;
    let mut a = srv.client();
    a.initialize("2025-11-25", json!({})).await;
    let head = a.head().send().await.unwrap();
    assert_eq!(head.status(), StatusCode::OK);
    assert_eq!(head.headers()["content-type"], "text/event-stream");
    assert_eq!(head.headers()["x-accel-buffering"], "no");
    assert!(head.headers().contains_key("mcp-session-id"));
    assert!(head.bytes().await.unwrap().is_empty());
    // It opened nothing: the session's one GET stream is still there to open, and a HEAD
    // beside it answers 200 (a GET would be refused as a second stream).
    let get = a.get().send().await.unwrap();
    assert_eq!(get.status(), StatusCode::OK);
    let mut stream = SseReader::new(get);
    assert!(stream.next().await.unwrap().is_priming());
    assert_eq!(a.head().send().await.unwrap().status(), StatusCode::OK);
    assert_eq!(a.get().send().await.unwrap().status(), StatusCode::CONFLICT);
    // The checks are a GET's: an unknown session is 404, without one 405.
    let mut stranger = srv.client();
    stranger.session = Some("no-such-session".into());
    let r = stranger.head().send().await.unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    assert!(r.bytes().await.unwrap().is_empty());
    assert_eq!(
        srv.client().head().send().await.unwrap().status(),
        StatusCode::METHOD_NOT_ALLOWED
    );
}

#[tokio::test]
async fn the_get_stream_carries_unsolicited_messages_to_its_session_only() {
    let fx = fixture();
    let server = fx.server.clone();
    let srv = HttpTestServer::start(
        fx.server,
        test_config().keep_alive(Duration::from_millis(100)),
    )
    .await;
    let mut a = srv.client();
    a.initialize("2025-11-25", json!({})).await;
    let mut b = srv.client();
    b.initialize("2025-11-25", json!({})).await;

    let get = a.get().send().await.unwrap();
    assert_eq!(get.status(), StatusCode::OK);
    assert!(
        get.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    assert_eq!(get.headers()["x-accel-buffering"], "no");
    let mut stream = SseReader::new(get);
    let priming = stream.next().await.unwrap();
    assert!(priming.is_priming(), "{priming:?}");

    // Only one GET stream per session.
    let second = a.get().send().await.unwrap();
    assert_eq!(second.status(), StatusCode::CONFLICT);
    let body: Value = second.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("already has an open GET stream")
    );

    // A registry change reaches the stream.
    server
        .registry()
        .register_tool(ToolDef::from_fn(
            "late",
            "Registered late.",
            |_ctx, _: NoArgs| async { "late" },
        ))
        .unwrap();
    let event = stream.next().await.unwrap();
    assert_eq!(event.json()["method"], "notifications/tools/list_changed");

    // Keep-alive comments arrive while idle.
    let mut saw_comment = false;
    for _ in 0..3 {
        if stream.next_within(WAIT).await.unwrap().comment {
            saw_comment = true;
            break;
        }
    }
    assert!(saw_comment);

    // resources/updated goes to subscribers only: B subscribes, A does not.
    let mut b_stream = SseReader::new(b.get().send().await.unwrap());
    assert!(b_stream.next().await.unwrap().is_priming());
    b.request(1, "resources/subscribe", json!({"uri": "test://static"}))
        .await;
    server.resource_updated("test://static");
    let update = b_stream.next().await.unwrap();
    assert_eq!(update.json()["params"]["uri"], "test://static");
    assert!(
        stream.quiet_for(Duration::from_millis(200)).await,
        "A got B's update"
    );
}

#[tokio::test]
async fn the_get_stream_resumes_with_what_was_missed() {
    let fx = fixture();
    let server = fx.server.clone();
    let srv = HttpTestServer::start(fx.server, test_config()).await;
    let mut c = srv.client();
    c.initialize("2025-11-25", json!({})).await;
    c.request(1, "resources/subscribe", json!({"uri": "test://static"}))
        .await;
    let mut stream = SseReader::new(c.get().send().await.unwrap());
    stream.next().await.unwrap();
    server.resource_updated("test://static");
    let seen = stream.next().await.unwrap();
    let cursor = seen.id.clone().unwrap();
    drop(stream);
    // Wait until the server notices the stream is gone, then send two more.
    tokio::time::sleep(Duration::from_millis(50)).await;
    server.resource_updated("test://static");
    server.resource_updated("test://static");
    let resumed = with_header(c.get(), "last-event-id", &cursor)
        .send()
        .await
        .unwrap();
    assert_eq!(resumed.status(), StatusCode::OK);
    let mut stream = SseReader::new(resumed);
    let mut ids = Vec::new();
    for _ in 0..2 {
        let e = stream.next().await.unwrap();
        assert_eq!(e.json()["method"], "notifications/resources/updated");
        ids.push(e.id.unwrap());
    }
    assert!(!ids.contains(&cursor));
    assert!(ids.iter().all(|id| id.starts_with("0-")), "{ids:?}");
}
