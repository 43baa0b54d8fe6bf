//! Port of the seed's elicitation_test: the authorizer's Ask becomes an `elicitation/create`
//! to the calling connection alone, parked under an unguessable id and closed exactly once.

use std::sync::Arc;
use std::time::Duration;

use mcp::auth::{Decision, policy};
use mcp::protocol::Message;
use mcp::server::ConnectionEvent;
use mcp::testing::TestClient;
use mcp::{ConnId, Server, Transport};
use mcp_tests::{
    Runs, answer, assert_silent, call_frame, counting_tool, deny_payload_value, expect_response,
    expect_server_request, first_text, initialized_client,
};
use parking_lot::Mutex;
use serde_json::{Value, json};

const PROMPT: &str = "Spend 5 credits?";
const QUIET: Duration = Duration::from_millis(150);

fn builder(runs: &Runs) -> mcp::ServerBuilder {
    Server::builder("seed", "0")
        .tool(counting_tool("spend", runs))
        .tool(counting_tool("free", runs))
        .authorizer(policy(|req| {
            if req.name() == "spend" {
                Decision::ask(PROMPT)
            } else {
                Decision::Allow
            }
        }))
}

fn server(runs: &Runs) -> Server {
    builder(runs).build().unwrap()
}

async fn asker(server: &Server) -> TestClient {
    initialized_client(server, json!({"elicitation": {}})).await
}

/// Calls `spend` with `id` and returns the elicitation request it produced.
async fn park(client: &mut TestClient, id: i64) -> Value {
    client.send(call_frame(id, "spend", json!({"amount": 5})));
    expect_server_request(client, "elicitation/create").await
}

/// The deny for a client that cannot be asked: approval was required and could not be
/// requested (and why), with the question beside it.
fn assert_unaskable(response: &Value, why: &str) {
    let payload = deny_payload_value(&response["result"]);
    assert_eq!(payload["tool"], "spend");
    assert_eq!(payload["decision"], "ask");
    assert_eq!(payload["question"], PROMPT, "{response}");
    assert_eq!(
        payload["detail"],
        format!(
            "approval_unavailable: this call needs a person's approval, which could not be requested: {why}"
        ),
        "{response}"
    );
}

const UNDECLARED: &str = "the client did not declare the elicitation capability";

fn assert_ask_deny(response: &Value, detail: &str) {
    let payload = deny_payload_value(&response["result"]);
    assert_eq!(payload["tool"], "spend");
    assert_eq!(payload["decision"], "ask");
    assert_eq!(payload["detail"], detail, "{response}");
}

// ---- gating ----

#[tokio::test]
async fn without_the_capability_the_ask_is_a_deny_and_nothing_is_sent() {
    let runs = Runs::new();
    let server = server(&runs);
    // A live transport, but no elicitation capability declared.
    let mut client = initialized_client(&server, json!({})).await;
    client.send(call_frame(7, "spend", json!({})));
    let response = expect_response(&mut client, 7).await;
    assert_unaskable(&response, UNDECLARED);
    assert_silent(&mut client, QUIET).await;
    assert_eq!(runs.get(), 0);
}

#[tokio::test]
async fn with_the_capability_but_no_transport_the_ask_is_a_deny() {
    let runs = Runs::new();
    let server = server(&runs);
    let id = ConnId::new("detached");
    mcp::testing::handle_message(
        &server,
        &id,
        Message::request(
            1,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
                       "clientInfo": {"name": "c", "version": "1"}}),
        ),
    )
    .await
    .unwrap();
    let reply = tokio::time::timeout(
        Duration::from_secs(2),
        mcp::testing::handle_message(
            &server,
            &id,
            Message::request(2, "tools/call", json!({"name": "spend"})),
        ),
    )
    .await
    .expect("the deny comes at once, nothing is parked")
    .expect("a reply");
    assert_unaskable(
        &reply.to_value(),
        "the connection has no open channel to put a question on",
    );
    assert_eq!(runs.get(), 0);
}

// ---- round trip ----

#[tokio::test]
async fn the_prompt_carries_the_question_and_an_approve_form() {
    let runs = Runs::new();
    let server = server(&runs);
    let mut client = asker(&server).await;
    let ask = park(&mut client, 42).await;
    assert_eq!(ask["params"]["message"], PROMPT);
    let schema = &ask["params"]["requestedSchema"];
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["required"], json!(["approve"]));
    assert_eq!(schema["properties"]["approve"]["type"], "boolean");
    // Nothing else was sent: the call is parked, not answered.
    assert_silent(&mut client, QUIET).await;
    assert_eq!(runs.get(), 0);
}

#[tokio::test]
async fn the_elicitation_id_is_prefixed_and_unguessable() {
    let runs = Runs::new();
    let server = server(&runs);
    let mut client = asker(&server).await;
    let mut ids = Vec::new();
    for call in [1, 2, 3] {
        let ask = park(&mut client, call).await;
        let id = ask["id"].as_str().expect("a string id").to_owned();
        let suffix = id.strip_prefix("mcp-elicit-").expect("prefixed");
        assert!(suffix.len() >= 16, "{id}");
        assert!(
            suffix
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'),
            "{id}"
        );
        // Not a counter.
        assert!(suffix.parse::<u64>().is_err(), "{id}");
        ids.push(id);
    }
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 3);
}

#[tokio::test]
async fn accept_with_approve_true_runs_the_tool_and_answers_the_original_id() {
    let runs = Runs::new();
    let server = server(&runs);
    let mut client = asker(&server).await;
    let ask = park(&mut client, 42).await;
    client.send(answer(
        &ask["id"],
        json!({"action": "accept", "content": {"approve": true}}),
    ));
    let response = expect_response(&mut client, 42).await;
    assert!(response["result"].get("isError").is_none(), "{response}");
    assert_eq!(first_text(&response["result"]), "ran spend");
    assert_eq!(runs.get(), 1);
    // Exactly once: nothing else arrives.
    assert_silent(&mut client, QUIET).await;
}

#[tokio::test]
async fn anything_but_an_explicit_yes_denies_with_the_seeds_detail() {
    for (result, detail) in [
        (json!({"action": "decline"}), "user decline"),
        (json!({"action": "cancel"}), "user cancel"),
        (
            json!({"action": "accept", "content": {"approve": false}}),
            "user accept",
        ),
        (
            json!({"action": "accept", "content": {"approve": "true"}}),
            "user accept",
        ),
        (json!({"action": "accept"}), "user accept"),
        (json!({}), "user declined"),
    ] {
        let runs = Runs::new();
        let server = server(&runs);
        let mut client = asker(&server).await;
        let ask = park(&mut client, 2).await;
        client.send(answer(&ask["id"], result.clone()));
        let response = expect_response(&mut client, 2).await;
        assert_ask_deny(&response, detail);
        assert_eq!(runs.get(), 0, "{result}");
    }
}

#[tokio::test]
async fn an_error_response_denies_and_the_server_lives() {
    let runs = Runs::new();
    let server = server(&runs);
    let mut client = asker(&server).await;
    let ask = park(&mut client, 2).await;
    client.send(json!({
        "jsonrpc": "2.0",
        "id": ask["id"],
        "error": {"code": -32603, "message": "the host crashed"},
    }));
    let response = expect_response(&mut client, 2).await;
    assert_ask_deny(&response, "elicitation failed");
    assert_eq!(runs.get(), 0);
    assert_eq!(client.request("ping", json!({})).await.unwrap(), json!({}));
}

#[tokio::test]
async fn the_authorizer_is_not_consulted_again_after_approval() {
    let runs = Runs::new();
    let asked = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let a2 = Arc::clone(&asked);
    let server = Server::builder("seed", "0")
        .tool(counting_tool("spend", &runs))
        .authorizer(policy(move |_| {
            a2.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Decision::ask(PROMPT)
        }))
        .build()
        .unwrap();
    let mut client = asker(&server).await;
    let ask = park(&mut client, 9).await;
    client.send(answer(
        &ask["id"],
        json!({"action": "accept", "content": {"approve": true}}),
    ));
    expect_response(&mut client, 9).await;
    assert_eq!(runs.get(), 1);
    assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_cancelled_parked_call_sends_nothing_and_its_prompt_is_closed() {
    let runs = Runs::new();
    let server = server(&runs);
    let mut client = asker(&server).await;
    let ask = park(&mut client, 8).await;
    client.notify("notifications/cancelled", json!({"requestId": 8}));
    assert_silent(&mut client, QUIET).await;
    // Approving after the cancel runs nothing and answers nothing.
    client.send(answer(
        &ask["id"],
        json!({"action": "accept", "content": {"approve": true}}),
    ));
    assert_silent(&mut client, QUIET).await;
    assert_eq!(runs.get(), 0);
    assert_eq!(client.request("ping", json!({})).await.unwrap(), json!({}));
}

// ---- liveness ----

fn short_timeout_server(runs: &Runs) -> Server {
    builder(runs)
        .elicitation_timeout(Duration::from_millis(100))
        .build()
        .unwrap()
}

#[tokio::test]
async fn an_unanswered_prompt_times_out_into_the_deny() {
    let runs = Runs::new();
    let server = short_timeout_server(&runs);
    let mut client = asker(&server).await;
    park(&mut client, 3).await;
    let response = expect_response(&mut client, 3).await;
    assert_ask_deny(&response, "elicitation timed out");
    assert_eq!(runs.get(), 0);
}

#[tokio::test]
async fn a_late_answer_after_the_timeout_is_ignored() {
    let runs = Runs::new();
    let server = short_timeout_server(&runs);
    let mut client = asker(&server).await;
    let ask = park(&mut client, 3).await;
    let response = expect_response(&mut client, 3).await;
    assert_ask_deny(&response, "elicitation timed out");
    client.send(answer(
        &ask["id"],
        json!({"action": "accept", "content": {"approve": true}}),
    ));
    // No second response, no run, and no error bounced back for the stray answer.
    assert_silent(&mut client, QUIET).await;
    assert_eq!(runs.get(), 0);
    assert_eq!(client.request("ping", json!({})).await.unwrap(), json!({}));
}

#[tokio::test]
async fn a_forged_id_is_ignored() {
    let runs = Runs::new();
    let server = server(&runs);
    let mut client = asker(&server).await;
    let ask = park(&mut client, 4).await;
    let approve = json!({"action": "accept", "content": {"approve": true}});
    for forged in [
        json!("mcp-elicit-AAAAAAAAAAAAAAAA"),
        json!("mcp-elicit-1"),
        json!(1),
        json!(4),
    ] {
        client.send(answer(&forged, approve.clone()));
    }
    assert_silent(&mut client, QUIET).await;
    assert_eq!(runs.get(), 0);
    // The real prompt is still open and answerable.
    client.send(answer(&ask["id"], approve));
    let response = expect_response(&mut client, 4).await;
    assert_eq!(first_text(&response["result"]), "ran spend");
    assert_eq!(runs.get(), 1);
}

#[tokio::test]
async fn two_concurrent_asks_get_distinct_ids_and_resolve_independently() {
    let runs = Runs::new();
    let server = server(&runs);
    let mut client = asker(&server).await;
    client.send(call_frame(10, "spend", json!({"n": 1})));
    client.send(call_frame(11, "spend", json!({"n": 2})));
    let first = expect_server_request(&mut client, "elicitation/create").await;
    let second = expect_server_request(&mut client, "elicitation/create").await;
    assert_ne!(first["id"], second["id"]);
    // Decline one, approve the other; which call each belongs to is not known to the
    // client, so look at the responses.
    client.send(answer(&first["id"], json!({"action": "decline"})));
    let r1 = client.next_message().await.expect("one response");
    client.send(answer(
        &second["id"],
        json!({"action": "accept", "content": {"approve": true}}),
    ));
    let r2 = client.next_message().await.expect("another response");
    let mut ids = [r1["id"].as_i64().unwrap(), r2["id"].as_i64().unwrap()];
    ids.sort();
    assert_eq!(ids, [10, 11]);
    assert_ask_deny(&r1, "user decline");
    assert_eq!(first_text(&r2["result"]), "ran spend");
    assert_eq!(runs.get(), 1);
    assert_silent(&mut client, QUIET).await;
}

// ---- two clients ----

#[tokio::test]
async fn another_client_never_sees_the_prompt_or_the_result() {
    let runs = Runs::new();
    let server = server(&runs);
    let mut a = asker(&server).await;
    let mut b = asker(&server).await;
    let ask = park(&mut a, 42).await;
    assert_silent(&mut b, QUIET).await;
    a.send(answer(
        &ask["id"],
        json!({"action": "accept", "content": {"approve": true}}),
    ));
    expect_response(&mut a, 42).await;
    assert_silent(&mut b, QUIET).await;
    assert_eq!(runs.get(), 1);
}

#[tokio::test]
async fn another_client_cannot_answer_a_prompt_even_knowing_its_id() {
    let runs = Runs::new();
    let server = server(&runs);
    let mut a = asker(&server).await;
    let mut b = asker(&server).await;
    let ask = park(&mut a, 42).await;
    let approve = json!({"action": "accept", "content": {"approve": true}});
    b.send(answer(&ask["id"], approve.clone()));
    assert_silent(&mut b, QUIET).await;
    assert_silent(&mut a, Duration::from_millis(50)).await;
    assert_eq!(runs.get(), 0);
    // The owner can still answer afterwards.
    a.send(answer(&ask["id"], approve));
    let response = expect_response(&mut a, 42).await;
    assert_eq!(first_text(&response["result"]), "ran spend");
    assert_eq!(runs.get(), 1);
    assert_silent(&mut b, QUIET).await;
}

#[tokio::test]
async fn one_clients_capability_does_not_enable_another() {
    let runs = Runs::new();
    let server = server(&runs);
    let mut b = asker(&server).await;
    let mut c = initialized_client(&server, json!({})).await;
    c.send(call_frame(5, "spend", json!({})));
    let response = expect_response(&mut c, 5).await;
    assert_unaskable(&response, UNDECLARED);
    assert_silent(&mut b, QUIET).await;
    assert_silent(&mut c, Duration::from_millis(50)).await;
    assert_eq!(runs.get(), 0);
}

#[tokio::test]
async fn taking_over_a_live_conn_id_inherits_nothing() {
    let runs = Runs::new();
    let server = server(&runs);
    let id = ConnId::new("shared-session");
    let mut old = TestClient::connect_as(&server, id.clone(), Transport::Sse);
    old.set_timeout(Duration::from_secs(2));
    old.initialize(json!({"elicitation": {}})).await.unwrap();
    let ask = park(&mut old, 42).await;

    // A second transport attaches under the same id.
    let mut new = TestClient::connect_as(&server, id, Transport::Sse);
    new.set_timeout(Duration::from_secs(2));
    // The old attachment's parked call is closed, and its client is told so (not left
    // waiting); nothing of it reaches the new attachment.
    let closed = expect_response(&mut old, 42).await;
    assert_closed(&closed);
    let approve = json!({"action": "accept", "content": {"approve": true}});
    // The old pending entry cannot be answered through the new attachment...
    new.send(answer(&ask["id"], approve.clone()));
    assert_silent(&mut new, QUIET).await;
    // ...nor through the old one.
    old.send(answer(&ask["id"], approve));
    assert_silent(&mut old, QUIET).await;
    assert_eq!(runs.get(), 0);
    // The old attachment is closed for good: its requests are refused, not ignored.
    old.send(json!({"jsonrpc": "2.0", "id": 43, "method": "ping"}));
    assert_closed(&expect_response(&mut old, 43).await);
    // The capability is gone: the new attachment never initialized, so it cannot be asked.
    new.send(call_frame(6, "spend", json!({})));
    let response = expect_response(&mut new, 6).await;
    assert_unaskable(&response, UNDECLARED);
    assert_eq!(runs.get(), 0);
}

// ---- the connection table's cap [post-2.7] ----

type Events = Arc<Mutex<Vec<ConnectionEvent>>>;

fn capped(runs: &Runs, max: usize) -> (Server, Events) {
    let events: Events = Arc::default();
    let e2 = Arc::clone(&events);
    let server = builder(runs)
        .max_connections(max)
        .on_connection_event(move |e| e2.lock().push(e.clone()))
        .build()
        .unwrap();
    (server, events)
}

async fn orphan(server: &Server, id: &str) {
    let reply = mcp::testing::handle_message(
        server,
        &ConnId::new(id),
        Message::request(
            1,
            "initialize",
            json!({"protocolVersion": "2025-11-25",
                "capabilities": {"elicitation": {}}, "clientInfo": {"name": id, "version": "1"}}),
        ),
    )
    .await
    .expect("initialize answers");
    assert!(reply.error_code().is_none());
}

fn evicted(events: &Events) -> Vec<(String, bool)> {
    events
        .lock()
        .iter()
        .map(|e| match e {
            ConnectionEvent::Evicted { conn_id, live, .. } => (conn_id.to_string(), *live),
        })
        .collect()
}

#[tokio::test]
async fn the_table_holds_at_the_cap_and_reports_each_eviction() {
    let runs = Runs::new();
    let (server, events) = capped(&runs, 3);
    for i in 0..8 {
        orphan(&server, &format!("orphan-{i}")).await;
        assert!(server.connection_count() <= 3);
    }
    assert_eq!(server.connection_count(), 3);
    let events = events.lock().clone();
    assert_eq!(events.len(), 5);
    for (i, e) in events.iter().enumerate() {
        assert_eq!(
            *e,
            ConnectionEvent::Evicted {
                conn_id: ConnId::new(format!("orphan-{i}")),
                live: false,
                size: 2,
                max: 3,
            }
        );
    }
}

#[tokio::test]
async fn the_oldest_entry_without_a_transport_goes_before_an_older_live_one() {
    let runs = Runs::new();
    let (server, events) = capped(&runs, 2);
    let mut live = TestClient::connect_as(&server, ConnId::new("live"), Transport::Sse);
    live.set_timeout(Duration::from_secs(2));
    orphan(&server, "orphan-1").await;
    orphan(&server, "orphan-2").await;
    assert_eq!(evicted(&events), [("orphan-1".to_owned(), false)]);
    orphan(&server, "orphan-3").await;
    assert_eq!(
        evicted(&events),
        [
            ("orphan-1".to_owned(), false),
            ("orphan-2".to_owned(), false)
        ]
    );
    assert_eq!(live.request("ping", json!({})).await.unwrap(), json!({}));
}

#[tokio::test]
async fn a_live_connection_can_still_elicit_after_200_orphans() {
    let runs = Runs::new();
    let (server, events) = capped(&runs, 16);
    let mut live = TestClient::connect_as(&server, ConnId::new("live"), Transport::Sse);
    live.set_timeout(Duration::from_secs(2));
    live.initialize(json!({"elicitation": {}})).await.unwrap();
    for i in 0..200 {
        orphan(&server, &format!("orphan-{i}")).await;
    }
    assert_eq!(server.connection_count(), 16);
    assert_eq!(events.lock().len(), 200 - 15);
    assert!(
        evicted(&events)
            .iter()
            .all(|(id, live)| id != "live" && !live)
    );
    let ask = park(&mut live, 77).await;
    live.send(answer(
        &ask["id"],
        json!({"action": "accept", "content": {"approve": true}}),
    ));
    let response = expect_response(&mut live, 77).await;
    assert_eq!(first_text(&response["result"]), "ran spend");
    assert_eq!(runs.get(), 1);
}

#[tokio::test]
async fn when_every_entry_is_live_the_oldest_goes() {
    let runs = Runs::new();
    let (server, events) = capped(&runs, 2);
    let mut a = TestClient::connect_as(&server, ConnId::new("a"), Transport::Sse);
    a.set_timeout(Duration::from_secs(2));
    let mut b = TestClient::connect_as(&server, ConnId::new("b"), Transport::Sse);
    let _c = TestClient::connect_as(&server, ConnId::new("c"), Transport::Sse);
    assert_eq!(evicted(&events), [("a".to_owned(), true)]);
    assert_eq!(server.connection_count(), 2);
    // The evicted client is told its connection is gone instead of never hearing back.
    a.send(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}));
    assert_closed(&expect_response(&mut a, 1).await);
    assert_eq!(b.request("ping", json!({})).await.unwrap(), json!({}));
}

fn assert_closed(response: &Value) {
    assert!(response.get("result").is_none(), "{response}");
    assert_eq!(response["error"]["code"], -32600, "{response}");
    assert!(
        response["error"]["message"]
            .as_str()
            .unwrap()
            .contains("closed this connection"),
        "{response}"
    );
}

#[tokio::test]
async fn a_cap_of_zero_refuses_to_build() {
    let runs = Runs::new();
    let err = builder(&runs).max_connections(0).build().unwrap_err();
    assert!(err.to_string().contains("max_connections"), "{err}");
}
