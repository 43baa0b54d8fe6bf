//! Tasks on both eras: the 2026-07-28 extension over stateless HTTP, the 2025-11-25 core
//! tasks over sessions, every message checked against its revision's schema; owner
//! binding, caps, ttl, time limit, cancel, shutdown and replicas.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcp::Server;
use mcp::auth::bearer::{TokenError, verifier_fn};
use mcp::auth::{Decision, Principal, allow_all, policy};
use mcp::context::Elicitation;
use mcp::elicit::ClientRequestError;
use mcp::registry::{ProtocolError, ToolDef, ToolError};
use mcp::tasks::{TaskPolicy, TaskSupport};
use mcp::testing::TestClient;
use mcp::transport::http::BearerAuth;
use mcp_tests::http::{HttpTestServer, McpHttp, StatelessHttp, test_config};
use mcp_tests::schema::validate_server_message;
use serde_json::{Value, json};

const EXTENSION: &str = "io.modelcontextprotocol/tasks";

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Wait {
    ms: u64,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoArgs {}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Confirm {
    confirm: bool,
}

/// What the fixture's tools saw.
#[derive(Clone, Default)]
struct Seen {
    cancelled: Arc<AtomicUsize>,
    finished: Arc<AtomicUsize>,
    spent: Arc<AtomicUsize>,
}

/// Tools: `slow` (optional; sleeps `ms`, notices a cancel), `fails` (optional; a tool
/// error), `breaks` (optional; a JSON-RPC error), `confirm` (required; waits, then asks
/// a yes/no question), `quick` (optional, escalates only after 5 s: answers at once),
/// `plain` (never a task), `spend` (sensitive, optional: the authorizer asks first).
fn builder(seen: &Seen) -> mcp::ServerBuilder {
    let (cancelled, finished, spent) = (
        Arc::clone(&seen.cancelled),
        Arc::clone(&seen.finished),
        Arc::clone(&seen.spent),
    );
    Server::builder("tasks-fixture", "1.0.0")
        .tool(
            ToolDef::from_fn(
                "slow",
                "Sleeps, then answers.",
                move |ctx: mcp::Ctx, w: Wait| {
                    let (cancelled, finished) = (Arc::clone(&cancelled), Arc::clone(&finished));
                    async move {
                        tokio::select! {
                            _ = tokio::time::sleep(Duration::from_millis(w.ms)) => {
                                finished.fetch_add(1, Ordering::SeqCst);
                                format!("slept {} ms", w.ms)
                            }
                            _ = ctx.cancelled() => {
                                cancelled.fetch_add(1, Ordering::SeqCst);
                                "stopped".to_owned()
                            }
                        }
                    }
                },
            )
            .task_support(TaskSupport::Optional),
        )
        .tool(
            ToolDef::from_fn(
                "fails",
                "Fails with a tool error.",
                |_ctx, _: NoArgs| async {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    Err::<String, _>(ToolError::new("no rows matched"))
                },
            )
            .task_support(TaskSupport::Optional),
        )
        .tool(
            ToolDef::from_fn(
                "breaks",
                "Fails with a JSON-RPC error.",
                |_ctx, _: NoArgs| async {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    Err::<String, _>(ProtocolError::internal("the backend is down"))
                },
            )
            .task_support(TaskSupport::Optional),
        )
        .tool(
            ToolDef::from_fn(
                "confirm",
                "Asks before it answers.",
                |ctx: mcp::Ctx, _: NoArgs| async move {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    Ok::<_, ClientRequestError>(
                        match ctx.elicit::<Confirm>("Go ahead?").key("go").await? {
                            Elicitation::Accepted(Confirm { confirm: true }) => "yes",
                            _ => "no",
                        },
                    )
                },
            )
            .task_support(TaskSupport::Required),
        )
        .tool(
            ToolDef::from_fn("quick", "Answers at once.", |_ctx, _: NoArgs| async {
                "quick"
            })
            .task_support(TaskSupport::Optional)
            .task_policy(TaskPolicy::EscalateAfter(Duration::from_secs(5))),
        )
        .tool(ToolDef::from_fn(
            "plain",
            "Never a task.",
            |_ctx, _: NoArgs| async { "plain" },
        ))
        .tool(
            ToolDef::from_fn("spend", "Spends money.", move |_ctx, _: NoArgs| {
                let spent = Arc::clone(&spent);
                async move {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    spent.fetch_add(1, Ordering::SeqCst);
                    "spent"
                }
            })
            .sensitive()
            .task_support(TaskSupport::Optional),
        )
        .authorizer(policy(|req| {
            if req.name() == "spend" {
                Decision::ask("Spend the money?")
            } else {
                Decision::Allow
            }
        }))
        .read_authorizer(allow_all())
}

/// Bearer tokens `alice` and `bob` name those principals.
fn bearer() -> BearerAuth {
    BearerAuth::new(
        verifier_fn(|token: String| async move {
            match token.as_str() {
                "alice" | "bob" => Ok(Principal::new(token, vec![])),
                _ => Err(TokenError::Invalid("unknown token".into())),
            }
        }),
        "https://mcp.example.test/mcp",
    )
    .authorization_server("https://auth.example.test")
}

async fn http_server(seen: &Seen) -> HttpTestServer {
    let server = builder(seen).build().unwrap();
    HttpTestServer::start(server, test_config().bearer_auth(bearer())).await
}

/// A 2026-07-28 client with a token, declaring the extension (and elicitation) or not.
fn modern(srv: &HttpTestServer, token: &str, declare: bool) -> StatelessHttp {
    let caps = if declare {
        json!({"elicitation": {}, "extensions": {EXTENSION: {}}})
    } else {
        json!({"elicitation": {}})
    };
    let mut c = srv.stateless().with_capabilities(caps);
    c.token = Some(token.into());
    c
}

fn result(response: &Value) -> &Value {
    assert!(response.get("error").is_none(), "{response}");
    &response["result"]
}

fn error_code(response: &Value) -> i64 {
    response["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("no error: {response}"))
}

/// Polls `tasks/get` until the task leaves `working`/`input_required` or reaches `want`.
async fn poll_modern(c: &StatelessHttp, id: &str, want: &str) -> Value {
    for i in 0..500 {
        let r = c
            .request(json!(1000 + i), "tasks/get", json!({"taskId": id}))
            .await;
        let task = result(&r).clone();
        if task["status"] == want {
            return task;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("task {id} never became {want}");
}

fn is_iso8601(v: &Value) -> bool {
    let s = v.as_str().unwrap_or_default();
    s.len() == 24 && s.ends_with('Z') && s.as_bytes()[10] == b'T'
}

#[tokio::test]
async fn the_extension_runs_tools_as_tasks_on_2026_07_28() {
    let seen = Seen::default();
    let srv = http_server(&seen).await;
    let c = modern(&srv, "alice", true);

    let discover = c.request(json!(1), "server/discover", json!({})).await;
    let caps = &result(&discover)["capabilities"];
    assert_eq!(caps["extensions"][EXTENSION], json!({}));
    assert!(
        caps.get("tasks").is_none(),
        "the core slot is never sent: {caps}"
    );

    let list = c.request(json!(2), "tools/list", json!({})).await;
    let tools = result(&list)["tools"].as_array().unwrap().clone();
    let support = |name: &str| {
        tools.iter().find(|t| t["name"] == name).unwrap()["execution"]["taskSupport"].clone()
    };
    assert_eq!(support("slow"), "optional");
    assert_eq!(support("confirm"), "required");
    assert_eq!(support("plain"), Value::Null);

    // A task's handle: flat, resultType "task", nothing of a result.
    let created = c
        .request(
            json!(3),
            "tools/call",
            json!({"name": "slow", "arguments": {"ms": 150}}),
        )
        .await;
    let handle = result(&created);
    assert_eq!(handle["resultType"], "task");
    for absent in [
        "task",
        "result",
        "error",
        "inputRequests",
        "requestState",
        "content",
    ] {
        assert!(handle.get(absent).is_none(), "{absent} in {handle}");
    }
    assert!(is_iso8601(&handle["createdAt"]) && is_iso8601(&handle["lastUpdatedAt"]));
    assert_eq!(handle["ttlMs"], 3_600_000);
    assert_eq!(handle["pollIntervalMs"], 1000);
    let id = handle["taskId"].as_str().unwrap().to_owned();
    assert!(id.len() >= 32, "ids carry at least 128 random bits: {id}");
    // Durable: readable at once.
    let now = c
        .request(json!(4), "tasks/get", json!({"taskId": id}))
        .await;
    assert_eq!(result(&now)["resultType"], "complete");
    assert_eq!(result(&now)["status"], "working");
    let done = poll_modern(&c, &id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "slept 150 ms");
    assert!(
        done["result"]["_meta"]
            .get("io.modelcontextprotocol/related-task")
            .is_none()
    );

    // A tool error completes the task; a JSON-RPC error fails it.
    let r = c
        .request(
            json!(5),
            "tools/call",
            json!({"name": "fails", "arguments": {}}),
        )
        .await;
    let failing = result(&r)["taskId"].as_str().unwrap().to_owned();
    let t = poll_modern(&c, &failing, "completed").await;
    assert_eq!(t["result"]["isError"], true);
    let r = c
        .request(
            json!(6),
            "tools/call",
            json!({"name": "breaks", "arguments": {}}),
        )
        .await;
    let breaking = result(&r)["taskId"].as_str().unwrap().to_owned();
    let t = poll_modern(&c, &breaking, "failed").await;
    assert_eq!(t["error"]["code"], -32603);
    assert_eq!(t["error"]["message"], "the backend is down");
    assert!(t.get("result").is_none());

    // Quick calls stay calls; tools that are never tasks ignore a legacy `task`.
    let r = c
        .request(
            json!(7),
            "tools/call",
            json!({"name": "quick", "arguments": {}}),
        )
        .await;
    assert_eq!(result(&r)["content"][0]["text"], "quick");
    assert_eq!(result(&r)["resultType"], "complete");
    let r = c
        .request(
            json!(8),
            "tools/call",
            json!({"name": "plain", "arguments": {}, "task": {"ttl": 1000}}),
        )
        .await;
    assert_eq!(result(&r)["content"][0]["text"], "plain");

    // tasks/result and tasks/list do not exist on this revision.
    for method in ["tasks/result", "tasks/list"] {
        let r = c.exchange(json!(9), method, json!({"taskId": id})).await;
        assert_eq!(error_code(&r.response), -32601, "{method}");
    }
    // An unknown id is -32602.
    let r = c
        .exchange(json!(10), "tasks/get", json!({"taskId": "nope"}))
        .await;
    assert_eq!(error_code(&r.response), -32602);
}

#[tokio::test]
async fn a_request_that_does_not_declare_the_extension_gets_32021_or_a_plain_call() {
    let seen = Seen::default();
    let srv = http_server(&seen).await;
    let c = modern(&srv, "alice", false);
    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let r = c
            .exchange(
                json!(1),
                method,
                json!({"taskId": "x", "inputResponses": {}}),
            )
            .await;
        assert_eq!(error_code(&r.response), -32021, "{method}");
        assert_eq!(
            r.response["error"]["data"]["requiredCapabilities"]["extensions"][EXTENSION],
            json!({})
        );
    }
    let r = c
        .exchange(
            json!(2),
            "tools/call",
            json!({"name": "confirm", "arguments": {}}),
        )
        .await;
    assert_eq!(error_code(&r.response), -32021);
    // An optional tool runs as an ordinary call.
    let r = c
        .request(
            json!(3),
            "tools/call",
            json!({"name": "slow", "arguments": {"ms": 5}}),
        )
        .await;
    assert_eq!(result(&r)["content"][0]["text"], "slept 5 ms");
    assert!(result(&r).get("taskId").is_none());
}

#[tokio::test]
async fn a_task_asks_through_input_requests_answered_by_tasks_update() {
    let seen = Seen::default();
    let srv = http_server(&seen).await;
    let c = modern(&srv, "alice", true);
    let r = c
        .request(
            json!(1),
            "tools/call",
            json!({"name": "confirm", "arguments": {}}),
        )
        .await;
    let id = result(&r)["taskId"].as_str().unwrap().to_owned();
    let waiting = poll_modern(&c, &id, "input_required").await;
    let requests = waiting["inputRequests"].as_object().unwrap();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests["go"]["method"], "elicitation/create");
    // A key that was never asked is ignored, and acknowledged.
    let ack = c
        .request(
            json!(2),
            "tasks/update",
            json!({"taskId": id, "inputResponses": {"other": {"action": "accept"}}}),
        )
        .await;
    assert_eq!(result(&ack)["resultType"], "complete");
    assert_eq!(
        poll_modern(&c, &id, "input_required").await["inputRequests"]["go"]["method"],
        "elicitation/create"
    );
    c.request(
        json!(3),
        "tasks/update",
        json!({"taskId": id, "inputResponses": {"go": {"action": "accept", "content": {"confirm": true}}}}),
    )
    .await;
    let done = poll_modern(&c, &id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "yes");
    assert!(done.get("inputRequests").is_none());
}

#[tokio::test]
async fn cancel_stops_the_handler_and_is_acknowledged_every_time() {
    let seen = Seen::default();
    let srv = http_server(&seen).await;
    let c = modern(&srv, "alice", true);
    let r = c
        .request(
            json!(1),
            "tools/call",
            json!({"name": "slow", "arguments": {"ms": 60000}}),
        )
        .await;
    let id = result(&r)["taskId"].as_str().unwrap().to_owned();
    for n in 2..4 {
        let ack = c
            .request(json!(n), "tasks/cancel", json!({"taskId": id}))
            .await;
        assert_eq!(result(&ack)["resultType"], "complete");
        for absent in ["taskId", "status", "result", "error", "inputRequests"] {
            assert!(result(&ack).get(absent).is_none(), "{absent}");
        }
    }
    let t = poll_modern(&c, &id, "cancelled").await;
    assert!(t.get("result").is_none());
    for _ in 0..100 {
        if seen.cancelled.load(Ordering::SeqCst) == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        seen.cancelled.load(Ordering::SeqCst),
        1,
        "the handler saw the cancel"
    );
    assert_eq!(seen.finished.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn another_principal_is_told_the_task_does_not_exist() {
    let seen = Seen::default();
    let srv = http_server(&seen).await;
    let alice = modern(&srv, "alice", true);
    let bob = modern(&srv, "bob", true);
    let r = alice
        .request(
            json!(1),
            "tools/call",
            json!({"name": "confirm", "arguments": {}}),
        )
        .await;
    let id = result(&r)["taskId"].as_str().unwrap().to_owned();
    poll_modern(&alice, &id, "input_required").await;
    let unknown = bob
        .exchange(json!(2), "tasks/get", json!({"taskId": "never-issued"}))
        .await;
    for (method, params) in [
        ("tasks/get", json!({"taskId": id})),
        (
            "tasks/update",
            json!({"taskId": id, "inputResponses": {"go": {"action": "accept", "content": {"confirm": false}}}}),
        ),
        ("tasks/cancel", json!({"taskId": id})),
    ] {
        let r = bob.exchange(json!(3), method, params).await;
        assert_eq!(r.response["error"], unknown.response["error"], "{method}");
    }
    // Nothing bob sent reached the task.
    let still = poll_modern(&alice, &id, "input_required").await;
    assert_eq!(still["inputRequests"]["go"]["method"], "elicitation/create");

    // Mcp-Name must mirror taskId.
    let mismatched = mcp_tests::http::with_header(
        alice.post(json!(4), "tasks/get", json!({"taskId": id})),
        "mcp-name",
        "someone-else",
    )
    .send()
    .await
    .unwrap();
    assert_eq!(mismatched.status(), reqwest::StatusCode::BAD_REQUEST);
    let body: Value = mismatched.json().await.unwrap();
    assert_eq!(body["error"]["code"], -32020);
}

#[tokio::test]
async fn approval_comes_before_the_task_on_2026_07_28() {
    let seen = Seen::default();
    let srv = http_server(&seen).await;
    let c = modern(&srv, "alice", true);
    let r = c
        .request(
            json!(1),
            "tools/call",
            json!({"name": "spend", "arguments": {}}),
        )
        .await;
    let question = result(&r);
    assert_eq!(question["resultType"], "input_required");
    assert!(question.get("taskId").is_none());
    let key = question["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    let state = question["requestState"].clone();
    let r = c
        .request(
            json!(2),
            "tools/call",
            json!({"name": "spend", "arguments": {}, "requestState": state,
                   "inputResponses": {key: {"action": "accept", "content": {"approve": true}}}}),
        )
        .await;
    let handle = result(&r);
    assert_eq!(handle["resultType"], "task", "{handle}");
    assert!(handle.get("requestState").is_none());
    let id = handle["taskId"].as_str().unwrap().to_owned();
    poll_modern(&c, &id, "completed").await;
    assert_eq!(seen.spent.load(Ordering::SeqCst), 1);
}

// ------------------------------------------------------------------------------------------
// 2025-11-25 core tasks over sessions
// ------------------------------------------------------------------------------------------

async fn session(srv: &HttpTestServer, token: &str, capabilities: Value) -> McpHttp {
    let mut c = srv.client();
    c.token = Some(token.into());
    let init = c.initialize("2025-11-25", capabilities).await;
    let tasks = &init["capabilities"]["tasks"];
    assert_eq!(tasks["requests"]["tools"]["call"], json!({}), "{init}");
    assert_eq!(tasks["cancel"], json!({}));
    assert_eq!(tasks["list"], json!({}));
    c
}

fn checked(method: &str, response: &Value) {
    validate_server_message("2025-11-25", response, Some(method))
        .unwrap_or_else(|e| panic!("{method}: the 2025-11-25 schema rejects {response}: {e}"));
}

async fn core_request(c: &mut McpHttp, id: i64, method: &str, params: Value) -> Value {
    let r = c.request(id, method, params).await;
    checked(method, &r);
    r
}

#[tokio::test]
async fn core_tasks_on_2025_11_25() {
    let seen = Seen::default();
    let srv = http_server(&seen).await;
    let mut c = session(&srv, "alice", json!({})).await;

    // What a tool allows is enforced with -32601.
    let r = core_request(
        &mut c,
        1,
        "tools/call",
        json!({"name": "plain", "arguments": {}, "task": {}}),
    )
    .await;
    assert_eq!(error_code(&r), -32601);
    let r = core_request(
        &mut c,
        2,
        "tools/call",
        json!({"name": "confirm", "arguments": {}}),
    )
    .await;
    assert_eq!(error_code(&r), -32601);
    // Without `task` an optional tool is an ordinary call.
    let r = core_request(
        &mut c,
        3,
        "tools/call",
        json!({"name": "slow", "arguments": {"ms": 1}}),
    )
    .await;
    assert_eq!(result(&r)["content"][0]["text"], "slept 1 ms");

    let r = core_request(
        &mut c,
        4,
        "tools/call",
        json!({"name": "slow", "arguments": {"ms": 200}, "task": {"ttl": 60000}}),
    )
    .await;
    let task = &result(&r)["task"];
    assert_eq!(task["status"], "working");
    assert_eq!(task["ttl"], 60000, "a smaller ttl is honoured");
    assert!(is_iso8601(&task["createdAt"]));
    let id = task["taskId"].as_str().unwrap().to_owned();
    let got = core_request(&mut c, 5, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(result(&got)["taskId"], id);
    // tasks/result waits for the end, then answers as the call would have.
    let r = core_request(&mut c, 6, "tasks/result", json!({"taskId": id})).await;
    let payload = result(&r);
    assert_eq!(payload["content"][0]["text"], "slept 200 ms");
    assert_eq!(
        payload["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        id
    );
    let got = core_request(&mut c, 7, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(result(&got)["status"], "completed");
    // A finished task cannot be cancelled.
    let r = core_request(&mut c, 8, "tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(error_code(&r), -32602);

    // A tool error fails the task on this revision; tasks/result still returns it.
    let r = core_request(
        &mut c,
        9,
        "tools/call",
        json!({"name": "fails", "arguments": {}, "task": {}}),
    )
    .await;
    let failing = result(&r)["task"]["taskId"].as_str().unwrap().to_owned();
    let r = core_request(&mut c, 10, "tasks/result", json!({"taskId": failing})).await;
    assert_eq!(result(&r)["isError"], true);
    let got = core_request(&mut c, 11, "tasks/get", json!({"taskId": failing})).await;
    assert_eq!(result(&got)["status"], "failed");
    // A JSON-RPC error is what tasks/result answers.
    let r = core_request(
        &mut c,
        12,
        "tools/call",
        json!({"name": "breaks", "arguments": {}, "task": {}}),
    )
    .await;
    let breaking = result(&r)["task"]["taskId"].as_str().unwrap().to_owned();
    let r = core_request(&mut c, 13, "tasks/result", json!({"taskId": breaking})).await;
    assert_eq!(error_code(&r), -32603);
    assert_eq!(r["error"]["message"], "the backend is down");

    // Cancel a running task: it is cancelled before the answer.
    let r = core_request(
        &mut c,
        14,
        "tools/call",
        json!({"name": "slow", "arguments": {"ms": 60000}, "task": {}}),
    )
    .await;
    let running = result(&r)["task"]["taskId"].as_str().unwrap().to_owned();
    let r = core_request(&mut c, 15, "tasks/cancel", json!({"taskId": running})).await;
    assert_eq!(result(&r)["status"], "cancelled");

    // tasks/list pages through the caller's tasks.
    let r = core_request(&mut c, 16, "tasks/list", json!({})).await;
    let listed: Vec<&str> = result(&r)["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["taskId"].as_str().unwrap())
        .collect();
    for t in [&id, &failing, &breaking, &running] {
        assert!(listed.contains(&t.as_str()), "{t} not in {listed:?}");
    }
    let r = core_request(&mut c, 17, "tasks/list", json!({"cursor": "bogus"})).await;
    assert_eq!(error_code(&r), -32602);

    // Another principal sees none of it.
    let mut bob = session(&srv, "bob", json!({})).await;
    let r = core_request(&mut bob, 1, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(error_code(&r), -32602);
    let r = core_request(&mut bob, 2, "tasks/list", json!({})).await;
    assert_eq!(result(&r)["tasks"], json!([]));
}

// ------------------------------------------------------------------------------------------
// Limits, lifetimes and replicas (in process)
// ------------------------------------------------------------------------------------------

fn modern_client(server: &Server) -> TestClient {
    let mut c = TestClient::connect(server);
    c.use_stateless(json!({"elicitation": {}}));
    c
}

#[tokio::test]
async fn caps_bound_the_tasks_an_owner_keeps() {
    let seen = Seen::default();
    let server = builder(&seen).max_tasks(100, 2).build().unwrap();
    let mut c = modern_client(&server);
    for _ in 0..2 {
        let r = c
            .call_tool_as_task("slow", json!({"ms": 60000}))
            .await
            .unwrap();
        assert_eq!(r["resultType"], "task");
    }
    // A required tool is refused, naming the limit; an optional one runs as a call.
    let e = c.call_tool_as_task("confirm", json!({})).await.unwrap_err();
    assert!(e.message.contains("task_limit"), "{e:?}");
    let r = c.call_tool_as_task("slow", json!({"ms": 1})).await.unwrap();
    assert_eq!(r["content"][0]["text"], "slept 1 ms");
}

#[tokio::test]
async fn tasks_expire_after_their_ttl_and_stop_at_their_time_limit() {
    let seen = Seen::default();
    let server = builder(&seen)
        .task_ttl(Duration::from_millis(600))
        .task_time_limit(Duration::from_millis(100))
        .build()
        .unwrap();
    let mut c = modern_client(&server);
    let r = c
        .call_tool_as_task("slow", json!({"ms": 60000}))
        .await
        .unwrap();
    let id = r["taskId"].as_str().unwrap().to_owned();
    let t = c.wait_task(&id, &[], Duration::from_secs(5)).await.unwrap();
    assert_eq!(t["status"], "failed");
    assert!(
        t["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("task_timeout"),
        "{t}"
    );
    // Still readable shortly after it ended, gone after its ttl.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(c.get_task(&id).await.unwrap()["status"], "failed");
    tokio::time::sleep(Duration::from_millis(600)).await;
    let e = c.get_task(&id).await.unwrap_err();
    assert_eq!(e.code, -32602);
}

#[tokio::test]
async fn shutdown_ends_running_tasks_failed_saying_so() {
    let seen = Seen::default();
    let server = builder(&seen).build().unwrap();
    let mut c = modern_client(&server);
    let r = c
        .call_tool_as_task("slow", json!({"ms": 60000}))
        .await
        .unwrap();
    let id = r["taskId"].as_str().unwrap().to_owned();
    server.shutdown();
    server.finish().await;
    let t = c.get_task(&id).await.unwrap();
    assert_eq!(t["status"], "failed");
    assert!(
        t["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("server_shutdown"),
        "{t}"
    );
}

/// Two replicas of the task server on the in-memory backend, each serving HTTP, with a
/// 2026-07-28 client of alice's on each.
struct TwoReplicas {
    backend: mcp::cluster::memory::MemoryBackend,
    a: mcp::cluster::Cluster,
    on_a: StatelessHttp,
    on_b: StatelessHttp,
    _servers: [HttpTestServer; 2],
}

impl TwoReplicas {
    /// A task of the `slow` tool (a minute) started on replica A; its id.
    async fn start_slow(&self, id: i64) -> String {
        let answer = self
            .on_a
            .request(
                json!(id),
                "tools/call",
                json!({"name": "slow", "arguments": {"ms": 60000}}),
            )
            .await;
        result(&answer)["taskId"].as_str().unwrap().to_owned()
    }

    async fn start(seen: &Seen) -> TwoReplicas {
        let backend = mcp::cluster::memory::MemoryBackend::new();
        let (ca, cb) = (backend.replica(), backend.replica());
        let key = [7u8; 32];
        let serve = |cluster: mcp::cluster::Cluster| {
            let server = builder(seen)
                .cluster(cluster)
                .state_key(key)
                .build()
                .unwrap();
            HttpTestServer::start(server, test_config().bearer_auth(bearer()))
        };
        let srv_a = serve(ca.clone()).await;
        let srv_b = serve(cb).await;
        TwoReplicas {
            on_a: modern(&srv_a, "alice", true),
            on_b: modern(&srv_b, "alice", true),
            backend,
            a: ca,
            _servers: [srv_a, srv_b],
        }
    }
}

#[tokio::test]
async fn a_task_is_read_and_steered_from_another_replica_and_fails_when_its_replica_dies() {
    let seen = Seen::default();
    let two = TwoReplicas::start(&seen).await;
    let (backend, ca, on_a, on_b) = (&two.backend, &two.a, &two.on_a, &two.on_b);

    // Created on A, answered through B.
    let r = on_a
        .request(
            json!(1),
            "tools/call",
            json!({"name": "confirm", "arguments": {}}),
        )
        .await;
    let id = result(&r)["taskId"].as_str().unwrap().to_owned();
    poll_modern(on_b, &id, "input_required").await;
    on_b.request(
        json!(2),
        "tasks/update",
        json!({"taskId": id, "inputResponses": {"go": {"action": "accept", "content": {"confirm": true}}}}),
    )
    .await;
    let done = poll_modern(on_b, &id, "completed").await;
    assert_eq!(done["result"]["content"][0]["text"], "yes");

    // Cancelled through B: A's handler stops.
    let slow = two.start_slow(3).await;
    on_b.request(json!(4), "tasks/cancel", json!({"taskId": slow}))
        .await;
    poll_modern(on_a, &slow, "cancelled").await;
    for _ in 0..200 {
        if seen.cancelled.load(Ordering::SeqCst) == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(seen.cancelled.load(Ordering::SeqCst), 1);

    // A dies while a task runs there: B ends it failed, saying why.
    let orphan = two.start_slow(5).await;
    backend.kill(ca.replica_id());
    let t = poll_modern(on_b, &orphan, "failed").await;
    assert!(
        t["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("replica_lost"),
        "{t}"
    );
}

/// A `tasks/cancel` answered on another replica while the runner's bus was away is not
/// heard as a message; once the bus is back the runner reads the record and stops.
#[tokio::test]
async fn a_task_cancelled_while_its_replicas_bus_was_away_stops_once_the_bus_is_back() {
    let seen = Seen::default();
    let two = TwoReplicas::start(&seen).await;
    let (backend, ca, on_b) = (&two.backend, &two.a, &two.on_b);

    let slow = two.start_slow(1).await;
    backend.cut_bus(ca.replica_id());
    on_b.request(json!(2), "tasks/cancel", json!({"taskId": slow}))
        .await;
    poll_modern(on_b, &slow, "cancelled").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        seen.cancelled.load(Ordering::SeqCst),
        0,
        "the runner heard a cancel published while its bus was cut"
    );
    backend.restore_bus(ca.replica_id());
    for _ in 0..500 {
        if seen.cancelled.load(Ordering::SeqCst) == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(seen.cancelled.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_core_task_asks_the_client_on_its_result_stream_tagged_with_the_task() {
    let seen = Seen::default();
    let server = builder(&seen).build().unwrap();
    let mut c = TestClient::connect(&server);
    c.initialize(json!({"elicitation": {}})).await.unwrap();
    let asked = Arc::new(parking_lot::Mutex::new(Vec::<Value>::new()));
    let log = Arc::clone(&asked);
    c.on_server_request(move |method, params| {
        log.lock().push(json!({"method": method, "params": params}));
        Ok(json!({"action": "accept", "content": {"confirm": true}}))
    });
    let r = c.call_tool_as_task("confirm", json!({})).await.unwrap();
    let id = r["task"]["taskId"].as_str().unwrap().to_owned();
    let payload = c
        .request("tasks/result", json!({"taskId": id}))
        .await
        .unwrap();
    assert_eq!(payload["content"][0]["text"], "yes");
    assert_eq!(
        payload["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        id
    );
    let asked = asked.lock().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["method"], "elicitation/create");
    assert_eq!(
        asked[0]["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        id
    );
    let request = json!({"jsonrpc": "2.0", "id": "e1", "method": "elicitation/create", "params": asked[0]["params"]});
    validate_server_message("2025-11-25", &request, None).unwrap();
}

#[tokio::test]
async fn approval_comes_before_the_task_on_2025_11_25() {
    let seen = Seen::default();
    let server = builder(&seen).build().unwrap();
    let mut c = TestClient::connect(&server);
    c.initialize(json!({"elicitation": {}})).await.unwrap();
    let asked = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&asked);
    c.on_server_request(move |_, params| {
        count.fetch_add(1, Ordering::SeqCst);
        assert!(
            params["_meta"]
                .get("io.modelcontextprotocol/related-task")
                .is_none()
        );
        Ok(json!({"action": "accept", "content": {"approve": true}}))
    });
    let r = c.call_tool_as_task("spend", json!({})).await.unwrap();
    assert_eq!(
        asked.load(Ordering::SeqCst),
        1,
        "asked before the task existed"
    );
    let id = r["task"]["taskId"].as_str().unwrap().to_owned();
    let t = c.wait_task(&id, &[], Duration::from_secs(5)).await.unwrap();
    assert_eq!(t["status"], "completed");
    assert_eq!(seen.spent.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_listen_stream_hears_the_tasks_it_named_and_only_its_owners() {
    let seen = Seen::default();
    let srv = http_server(&seen).await;
    let alice = modern(&srv, "alice", true);
    let bob = modern(&srv, "bob", true);
    let r = alice
        .request(
            json!(1),
            "tools/call",
            json!({"name": "confirm", "arguments": {}}),
        )
        .await;
    let id = result(&r)["taskId"].as_str().unwrap().to_owned();

    // Without the extension declared, naming tasks is refused.
    let undeclared = modern(&srv, "alice", false);
    let r = undeclared
        .exchange(
            json!(2),
            "subscriptions/listen",
            json!({"notifications": {"taskIds": [id]}}),
        )
        .await;
    assert_eq!(error_code(&r.response), -32021);

    // Bob may not listen to alice's task: his acknowledgement leaves it out.
    let response = bob
        .post(
            json!(3),
            "subscriptions/listen",
            json!({"notifications": {"taskIds": [id]}}),
        )
        .send()
        .await
        .unwrap();
    let mut bobs = mcp_tests::http::SseReader::new(response);
    let ack = bobs.next().await.unwrap().json();
    assert!(
        ack["params"]["notifications"].get("taskIds").is_none(),
        "{ack}"
    );

    let response = alice
        .post(
            json!(4),
            "subscriptions/listen",
            json!({"notifications": {"taskIds": [id, "not-a-task"]}}),
        )
        .send()
        .await
        .unwrap();
    let mut stream = mcp_tests::http::SseReader::new(response);
    let ack = stream.next().await.unwrap().json();
    mcp_tests::http::check_stateless(&ack, None);
    assert_eq!(ack["params"]["notifications"]["taskIds"], json!([id]));

    // The question, then the answer, then the end: each as a full DetailedTask.
    let mut statuses = Vec::new();
    loop {
        let event = stream
            .next_within(Duration::from_secs(5))
            .await
            .expect("a task notification")
            .json();
        assert_eq!(event["method"], "notifications/tasks");
        let params = &event["params"];
        assert_eq!(params["taskId"], id.as_str());
        assert_eq!(params["_meta"]["io.modelcontextprotocol/subscriptionId"], 4);
        let status = params["status"].as_str().unwrap().to_owned();
        if status == "input_required" {
            assert_eq!(
                params["inputRequests"]["go"]["method"],
                "elicitation/create"
            );
            alice
                .request(
                    json!(5),
                    "tasks/update",
                    json!({"taskId": id, "inputResponses": {"go": {"action": "accept", "content": {"confirm": true}}}}),
                )
                .await;
        }
        statuses.push(status.clone());
        if status == "completed" {
            assert_eq!(params["result"]["content"][0]["text"], "yes");
            break;
        }
    }
    assert!(
        statuses.contains(&"input_required".to_owned()),
        "{statuses:?}"
    );
    assert!(
        bobs.quiet_for(Duration::from_millis(200)).await,
        "bob heard nothing"
    );
}

#[tokio::test]
async fn a_core_task_reports_its_status_to_its_connection() {
    let seen = Seen::default();
    let server = builder(&seen).build().unwrap();
    let mut c = TestClient::connect(&server);
    c.initialize(json!({})).await.unwrap();
    let r = c
        .call_tool_as_task("slow", json!({"ms": 20}))
        .await
        .unwrap();
    let id = r["task"]["taskId"].as_str().unwrap().to_owned();
    c.wait_task(&id, &[], Duration::from_secs(5)).await.unwrap();
    let messages = c.drain(Duration::from_millis(100)).await;
    let status: Vec<&Value> = messages
        .iter()
        .filter(|m| m["method"] == "notifications/tasks/status")
        .collect();
    let last = status.last().expect("a status notification");
    assert_eq!(last["params"]["taskId"], id.as_str());
    assert_eq!(last["params"]["status"], "completed");
    for m in &status {
        validate_server_message("2025-11-25", m, None).unwrap();
        assert!(
            m["params"].get("_meta").is_none(),
            "no related-task on a status"
        );
    }
}

#[tokio::test]
async fn a_core_task_asks_on_the_result_stream_over_http() {
    let seen = Seen::default();
    let srv = http_server(&seen).await;
    let mut c = session(&srv, "alice", json!({"elicitation": {}})).await;
    let r = core_request(
        &mut c,
        1,
        "tools/call",
        json!({"name": "confirm", "arguments": {}, "task": {}}),
    )
    .await;
    let id = result(&r)["task"]["taskId"].as_str().unwrap().to_owned();
    // tasks/result streams the task's question, tagged with it, then the result.
    let body =
        json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/result", "params": {"taskId": id}});
    let response = c.post(body.to_string()).send().await.unwrap();
    let mut stream = mcp_tests::http::SseReader::new(response);
    let question = loop {
        let e = stream.next().await.expect("the task's question");
        if e.data.is_empty() {
            continue;
        }
        break e.json();
    };
    assert_eq!(question["method"], "elicitation/create", "{question}");
    assert_eq!(
        question["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        id
    );
    validate_server_message("2025-11-25", &question, None).unwrap();
    let got = core_request(&mut c, 3, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(result(&got)["status"], "input_required");
    let answer = json!({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {"confirm": true}}});
    let posted = c.post(answer.to_string()).send().await.unwrap();
    assert_eq!(posted.status(), reqwest::StatusCode::ACCEPTED);
    let done = loop {
        let e = stream.next().await.expect("the result");
        if e.data.is_empty() {
            continue;
        }
        let m = e.json();
        if m.get("id") == Some(&json!(2)) {
            break m;
        }
    };
    checked("tasks/result", &done);
    assert_eq!(done["result"]["content"][0]["text"], "yes");
    assert_eq!(
        done["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        id
    );
}

#[tokio::test]
async fn every_task_request_passes_the_read_seam() {
    let seen = Seen::default();
    let server = builder(&seen)
        .read_authorizer(policy(|req| {
            if req.name() == "tasks/cancel" {
                Decision::deny("cancelling is not allowed here")
            } else {
                Decision::Allow
            }
        }))
        .build()
        .unwrap();
    let mut c = modern_client(&server);
    let r = c
        .call_tool_as_task("slow", json!({"ms": 60000}))
        .await
        .unwrap();
    let id = r["taskId"].as_str().unwrap().to_owned();
    let e = c.cancel_task(&id).await.unwrap_err();
    assert_eq!(e.code, -32090, "{e:?}");
    assert_eq!(e.data.unwrap()["detail"], "cancelling is not allowed here");
    assert_eq!(c.get_task(&id).await.unwrap()["status"], "working");
}

/// A task store that contradicts itself, as a corrupt or inconsistent shared store can:
/// every read says the one task it holds is `working` on a replica that is not here, and
/// every write is refused.
struct Contradicting {
    record: parking_lot::Mutex<Option<mcp::tasks::TaskRecord>>,
}

impl mcp::tasks::TaskStore for Contradicting {
    fn create<'a>(
        &'a self,
        _record: &'a mcp::tasks::TaskRecord,
        _limits: mcp::tasks::TaskLimits,
    ) -> futures::future::BoxFuture<'a, mcp::cluster::StoreResult<mcp::tasks::Admission>> {
        Box::pin(async { Err(mcp::cluster::StoreError("refused".into())) })
    }

    fn get<'a>(
        &'a self,
        _task_id: &'a str,
    ) -> futures::future::BoxFuture<'a, mcp::cluster::StoreResult<Option<mcp::tasks::TaskRecord>>>
    {
        let record = self.record.lock().clone();
        Box::pin(async move { Ok(record) })
    }

    fn update<'a>(
        &'a self,
        _record: &'a mcp::tasks::TaskRecord,
    ) -> futures::future::BoxFuture<'a, mcp::cluster::StoreResult<bool>> {
        Box::pin(async { Ok(false) })
    }

    fn list<'a>(
        &'a self,
        _owner: &'a str,
    ) -> futures::future::BoxFuture<'a, mcp::cluster::StoreResult<Vec<mcp::tasks::TaskRecord>>>
    {
        Box::pin(async { Ok(Vec::new()) })
    }
}

/// Found by the `stored_records` fuzz target: `tasks/result` waited forever on a record
/// the store kept saying was running, and a record past its ttl was still served.
#[tokio::test(start_paused = true)]
async fn a_contradicting_store_bounds_tasks_result_and_expired_records_are_gone() {
    let seen = Seen::default();
    let store = Arc::new(Contradicting {
        record: parking_lot::Mutex::new(None),
    });
    let server = builder(&seen)
        .task_store(Arc::clone(&store) as Arc<dyn mcp::tasks::TaskStore>)
        .task_time_limit(Duration::from_secs(5))
        .build()
        .unwrap();
    let mut c = TestClient::connect(&server);
    c.set_timeout(Duration::from_secs(3600));
    c.initialize(json!({"tasks": {}})).await.unwrap();
    let now_ms = u64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap();
    let record: mcp::tasks::TaskRecord = serde_json::from_value(json!({
        "taskId": "t1", "owner": format!("conn:{}", c.conn_id()), "replica": null,
        "flavour": "core", "tool": "slow", "status": "working", "statusMessage": null,
        "createdMs": now_ms, "updatedMs": now_ms, "ttlMs": 3_600_000, "pollIntervalMs": 100,
        "result": null, "error": null, "inputRequests": {}}))
    .unwrap();
    *store.record.lock() = Some(record.clone());

    let started = tokio::time::Instant::now();
    let e = c
        .request("tasks/result", json!({"taskId": "t1"}))
        .await
        .unwrap_err();
    assert!(e.message.contains("time limit"), "{e:?}");
    // Its time limit (5 s) and the margin for its replica to write the end (10 s).
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_secs(5) && waited <= Duration::from_secs(16),
        "{waited:?}"
    );

    // Past its ttl, the same record is unknown.
    *store.record.lock() = Some(mcp::tasks::TaskRecord {
        created_ms: 1,
        ttl_ms: Some(1000),
        ..record
    });
    let e = c
        .request("tasks/get", json!({"taskId": "t1"}))
        .await
        .unwrap_err();
    assert_eq!(e.code, -32602, "{e:?}");
}

/// A `required` tool (TaskPolicy::Always) that waits on something other than the client,
/// however briefly, before it asks is a task by then: the question is one of the task's
/// input requests, never an input-required round of the call. Found by the cluster soak
/// (`soak_cluster.rs`): under load the escalation timer (due at once, but a timer) and the
/// handler's own short wait fired in the same pass, and the handler, polled first, asked
/// before the call became a task (2 of 58 000 `confirm_delete` calls in 30 minutes).
#[tokio::test]
async fn a_required_tool_that_waited_before_asking_is_a_task_when_it_asks() {
    let server = Server::builder("escalation", "1.0.0")
        .tool(
            ToolDef::from_fn(
                "wait_then_ask",
                "Waits a moment, then asks.",
                |ctx: mcp::Ctx, x: Wait| async move {
                    tokio::time::sleep(Duration::from_millis(x.ms)).await;
                    match ctx.elicit::<Confirm>("Go on?").await {
                        Ok(Elicitation::Accepted(Confirm { confirm: true })) => "yes",
                        _ => "no",
                    }
                },
            )
            .task_support(TaskSupport::Required),
        )
        .authorizer(allow_all())
        .read_authorizer(allow_all())
        .build()
        .unwrap();
    let mut c = modern_client(&server);
    for ms in [0, 1, 1, 2, 0, 1, 3, 1, 0, 1] {
        let r = c
            .call_tool_as_task("wait_then_ask", json!({"ms": ms}))
            .await
            .unwrap();
        assert_eq!(r["resultType"], "task", "after a wait of {ms} ms: {r}");
    }
}
