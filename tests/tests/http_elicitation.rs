//! Elicitation over Streamable HTTP, over real sockets: a question belongs to the session
//! that caused it. Another session (or a caller without a session) cannot see or answer
//! it, the guarded tool does not run on their say-so, and the owner's answer still works.

use std::sync::atomic::Ordering;
use std::time::Duration;

use mcp_tests::http::{HttpTestServer, McpHttp, SseReader, fixture, test_config};
use reqwest::StatusCode;
use serde_json::{Value, json};

fn spend_call(id: i64) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "spend", "arguments": {}}})
        .to_string()
}

fn answer(id: &Value, approve: bool) -> String {
    json!({"jsonrpc": "2.0", "id": id, "result": {"action": "accept", "content": {"approve": approve}}})
        .to_string()
}

/// Starts `spend` on `owner` and returns its open stream and the question it received.
async fn ask(owner: &McpHttp, id: i64) -> (SseReader, Value) {
    let response = owner.post(spend_call(id)).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let mut stream = SseReader::new(response);
    loop {
        let e = stream
            .next()
            .await
            .expect("a question before the stream ends");
        if e.data.is_empty() {
            continue;
        }
        let msg = e.json();
        assert_eq!(msg["method"], "elicitation/create", "{msg}");
        return (stream, msg);
    }
}

#[tokio::test]
async fn a_question_is_answerable_by_its_session_alone() {
    let fx = fixture();
    let spent = fx.spent.clone();
    let srv = HttpTestServer::start(fx.server, test_config()).await;
    let mut owner = srv.client();
    owner
        .initialize("2025-11-25", json!({"elicitation": {}}))
        .await;
    let mut other = srv.client();
    other
        .initialize("2025-11-25", json!({"elicitation": {}}))
        .await;

    let (mut stream, question) = ask(&owner, 42).await;
    let qid = question["id"].clone();
    assert!(qid.as_str().unwrap().len() > 16, "{qid}");
    assert_eq!(question["params"]["message"], "Spend the money?");
    assert_eq!(
        question["params"]["requestedSchema"]["required"],
        json!(["approve"])
    );

    // The other session knows the id and approves: accepted at the HTTP level, but it
    // changes nothing.
    let r = other.post(answer(&qid, true)).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::ACCEPTED);
    // Its own GET stream carries nothing of the owner's call either.
    let mut other_stream = SseReader::new(other.get().send().await.unwrap());
    assert!(other_stream.next().await.unwrap().is_priming());
    assert!(
        stream.quiet_for(Duration::from_millis(200)).await,
        "the call was closed by a stranger"
    );
    assert_eq!(spent.load(Ordering::SeqCst), 0);
    assert!(other_stream.quiet_for(Duration::from_millis(50)).await);

    // The owner's answer works: the response to the original id ends the stream.
    let r = owner.post(answer(&qid, true)).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::ACCEPTED);
    let rest = stream.rest().await;
    assert_eq!(rest.len(), 1, "{rest:?}");
    let response = rest[0].json();
    assert_eq!(response["id"], 42);
    assert_eq!(response["result"]["content"][0]["text"], "spent");
    assert_eq!(spent.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_refusal_or_a_client_without_the_capability_never_runs_the_tool() {
    let fx = fixture();
    let spent = fx.spent.clone();
    let srv = HttpTestServer::start(fx.server, test_config()).await;
    let mut owner = srv.client();
    owner
        .initialize("2025-11-25", json!({"elicitation": {}}))
        .await;
    let (mut stream, question) = ask(&owner, 1).await;
    owner
        .post(answer(&question["id"], false))
        .send()
        .await
        .unwrap();
    let ex = stream.rest().await.pop().expect("a response").json();
    let text = ex["result"]["content"][0]["text"].as_str().unwrap();
    assert_eq!(ex["result"]["isError"], true);
    assert!(text.contains("\"decision\":\"ask\""), "{text}");

    // A session that did not declare elicitation is denied at once, as plain JSON.
    let mut plain = srv.client();
    plain.initialize("2025-11-25", json!({})).await;
    let ex = plain
        .exchange(
            json!(2),
            "tools/call",
            json!({"name": "spend", "arguments": {}}),
        )
        .await;
    assert!(ex.content_type.starts_with("application/json"));
    assert_eq!(ex.response["result"]["isError"], true);
    assert!(
        ex.response["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Spend the money?")
    );
    assert_eq!(spent.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn deleting_the_session_closes_its_question() {
    let fx = fixture();
    let spent = fx.spent.clone();
    let srv = HttpTestServer::start(fx.server, test_config()).await;
    let mut owner = srv.client();
    owner
        .initialize("2025-11-25", json!({"elicitation": {}}))
        .await;
    let (mut stream, question) = ask(&owner, 1).await;
    assert!(owner.delete().send().await.unwrap().status().is_success());
    // The stream ends without a response; a late answer finds no session.
    assert!(stream.rest().await.is_empty());
    let r = owner
        .post(answer(&question["id"], true))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    assert_eq!(spent.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn sessionless_callers_cannot_elicit_or_answer_anyones_question() {
    let fx = fixture();
    let spent = fx.spent.clone();
    let srv =
        HttpTestServer::start(fx.server, test_config().allow_sessionless_requests(true)).await;
    let anonymous = srv.client();

    // Served, but on a connection that cannot be asked: the deny comes at once.
    let r = anonymous.post(spend_call(1)).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert!(
        r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );
    assert!(r.headers().get("mcp-session-id").is_none());
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["result"]["isError"], true);
    assert!(
        body["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("\"decision\":\"ask\"")
    );
    // Progress cannot reach it either: plain JSON.
    let r = anonymous
        .post(
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "progress", "arguments": {}, "_meta": {"progressToken": 1}}})
            .to_string(),
        )
        .send()
        .await
        .unwrap();
    assert!(
        r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );
    // Per-session state needs a session.
    let r = anonymous
        .post(json!({"jsonrpc": "2.0", "id": 3, "method": "logging/setLevel", "params": {"level": "debug"}}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);

    // A real session asks; an anonymous answer with the right id changes nothing.
    let mut owner = srv.client();
    owner
        .initialize("2025-11-25", json!({"elicitation": {}}))
        .await;
    let (mut stream, question) = ask(&owner, 9).await;
    let r = anonymous
        .post(answer(&question["id"], true))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::ACCEPTED);
    assert!(stream.quiet_for(Duration::from_millis(200)).await);
    assert_eq!(spent.load(Ordering::SeqCst), 0);
    owner
        .post(answer(&question["id"], true))
        .send()
        .await
        .unwrap();
    let rest = stream.rest().await;
    assert_eq!(rest[0].json()["result"]["content"][0]["text"], "spent");
    assert_eq!(spent.load(Ordering::SeqCst), 1);
}
