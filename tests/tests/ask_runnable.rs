//! The authorizer's Ask is put to a human only for calls that can run: the arguments are
//! decoded (as the tool's handler decodes them) before a question is asked, in both eras.
//! A call whose arguments do not fit gets the argument error, with no question and no sealed
//! state; a deny still wins over an argument error; a client that cannot be asked is told
//! that approval was required and could not be requested.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcp::auth::{Decision, policy};
use mcp::prelude::*;
use mcp::testing::TestClient;
use mcp_tests::{
    Runs, assert_silent, call_frame, deny_payload_value, expect_response, expect_server_request,
    first_text, initialized_client, validate_server_message,
};
use serde_json::{Value, json};

const HANDSHAKE: &str = "2025-11-25";
const MODERN: &str = "2026-07-28";
const QUIET: Duration = Duration::from_millis(150);

/// The arguments of `spend`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Spend {
    /// How many credits.
    amount: u64,
}

/// `spend` asks with the amount; `forbidden` is always denied; `free` is allowed.
fn server(runs: &Runs) -> Server {
    let spent = runs.clone();
    let forbidden = runs.clone();
    Server::builder("ask-runnable", "0")
        .tool(
            ToolDef::from_fn("spend", "Spends credits.", move |_ctx, s: Spend| {
                spent.bump();
                async move { format!("spent {}", s.amount) }
            })
            .sensitive(),
        )
        .tool(ToolDef::from_fn(
            "forbidden",
            "Never allowed.",
            move |_ctx, s: Spend| {
                forbidden.bump();
                async move { format!("spent {}", s.amount) }
            },
        ))
        .authorizer(policy(|req| match req.name() {
            "spend" => Decision::ask(match req.arguments_as::<Spend>() {
                Ok(s) => format!("Approve spending {} credits?", s.amount),
                // The call cannot run: the server answers with the argument error instead.
                Err(_) => "Approve spending?".to_owned(),
            }),
            "forbidden" => Decision::deny("nobody may spend that way"),
            _ => Decision::Allow,
        }))
        .build()
        .unwrap()
}

async fn handshake_call(client: &mut TestClient, id: i64, name: &str, args: Value) -> Value {
    client.send(call_frame(id, name, args));
    let message = client.next_message().await.expect("a message");
    validate_server_message(HANDSHAKE, &message, Some("tools/call"))
        .unwrap_or_else(|e| panic!("{e}"));
    message
}

async fn stateless_call(client: &mut TestClient, name: &str, args: Value) -> Value {
    let message = client
        .request_message("tools/call", json!({"name": name, "arguments": args}))
        .await
        .expect("a response");
    validate_server_message(MODERN, &message, Some("tools/call")).unwrap_or_else(|e| panic!("{e}"));
    message
}

fn stateless_client(server: &Server, capabilities: Value) -> TestClient {
    let mut client = TestClient::connect(server);
    client.use_stateless(capabilities);
    client
}

fn assert_argument_error(response: &Value, expected: &str) {
    let result = &response["result"];
    assert_eq!(result["isError"], true, "{response}");
    assert_eq!(first_text(result), expected, "{response}");
    assert!(result.get("requestState").is_none(), "{response}");
    assert!(result.get("inputRequests").is_none(), "{response}");
}

// ---- handshake era ----

#[tokio::test]
async fn handshake_bad_arguments_get_the_argument_error_and_no_question() {
    let runs = Runs::new();
    let server = server(&runs);
    let mut client = initialized_client(&server, json!({"elicitation": {}})).await;
    let response = handshake_call(&mut client, 1, "spend", json!({"amount": "abc"})).await;
    assert_eq!(
        response["id"], 1,
        "the answer, not an elicitation/create: {response}"
    );
    assert_argument_error(
        &response,
        "Argument `amount` must be an integer of at least 0, but got the string \"abc\".",
    );
    let response = handshake_call(&mut client, 2, "spend", json!({})).await;
    assert_eq!(response["id"], 2, "{response}");
    assert_argument_error(
        &response,
        "Missing required argument `amount` (an integer of at least 0). Call the tool again with `amount` set.",
    );
    assert_silent(&mut client, QUIET).await;
    assert_eq!(runs.get(), 0);
}

#[tokio::test]
async fn handshake_a_deny_wins_over_bad_arguments() {
    let runs = Runs::new();
    let server = server(&runs);
    let mut client = initialized_client(&server, json!({"elicitation": {}})).await;
    let response = handshake_call(&mut client, 1, "forbidden", json!({"amount": "abc"})).await;
    let payload = deny_payload_value(&response["result"]);
    assert_eq!(payload["decision"], "deny");
    assert_eq!(payload["detail"], "nobody may spend that way");
    assert_eq!(runs.get(), 0);
}

#[tokio::test]
async fn handshake_an_unknown_tool_is_not_found_and_nobody_is_asked() {
    let runs = Runs::new();
    let server = Server::builder("ask-unknown", "0")
        .tool(mcp_tests::counting_tool("known", &runs))
        .authorizer(policy(|_| Decision::ask("Run it?")))
        .build()
        .unwrap();
    let mut client = initialized_client(&server, json!({"elicitation": {}})).await;
    client.send(call_frame(1, "missing", json!({})));
    let response = expect_response(&mut client, 1).await;
    assert_eq!(response["error"]["code"], -32602, "{response}");
    assert_silent(&mut client, QUIET).await;
}

#[tokio::test]
async fn handshake_a_client_that_cannot_be_asked_is_told_approval_could_not_be_requested() {
    let runs = Runs::new();
    let server = server(&runs);
    let mut client = initialized_client(&server, json!({})).await;
    let response = handshake_call(&mut client, 1, "spend", json!({"amount": 5})).await;
    let payload = deny_payload_value(&response["result"]);
    assert_eq!(payload["decision"], "ask");
    assert_eq!(payload["question"], "Approve spending 5 credits?");
    let detail = payload["detail"].as_str().unwrap();
    assert!(detail.starts_with("approval_unavailable: "), "{detail}");
    assert!(detail.contains("needs a person's approval"), "{detail}");
    assert!(detail.contains("elicitation"), "{detail}");
    assert_silent(&mut client, QUIET).await;
    assert_eq!(runs.get(), 0);
}

#[tokio::test]
async fn handshake_the_question_reads_the_typed_arguments() {
    let runs = Runs::new();
    let server = server(&runs);
    let mut client = initialized_client(&server, json!({"elicitation": {}})).await;
    client.send(call_frame(1, "spend", json!({"amount": 5})));
    let ask = expect_server_request(&mut client, "elicitation/create").await;
    validate_server_message(HANDSHAKE, &ask, None).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ask["params"]["message"], "Approve spending 5 credits?");
    client.send(mcp_tests::answer(
        &ask["id"],
        json!({"action": "accept", "content": {"approve": true}}),
    ));
    let response = expect_response(&mut client, 1).await;
    assert_eq!(first_text(&response["result"]), "spent 5");
    assert_eq!(runs.get(), 1);
}

// ---- 2026-07-28 ----

#[tokio::test]
async fn stateless_bad_arguments_get_the_argument_error_and_no_sealed_state() {
    let runs = Runs::new();
    let server = server(&runs);
    let mut client = stateless_client(&server, json!({"elicitation": {}}));
    let response = stateless_call(&mut client, "spend", json!({"amount": "abc"})).await;
    assert_argument_error(
        &response,
        "Argument `amount` must be an integer of at least 0, but got the string \"abc\".",
    );
    assert_ne!(response["result"]["resultType"], "input_required");
    let response = stateless_call(&mut client, "spend", json!({})).await;
    assert_argument_error(
        &response,
        "Missing required argument `amount` (an integer of at least 0). Call the tool again with `amount` set.",
    );
    assert_eq!(runs.get(), 0);
}

#[tokio::test]
async fn stateless_the_question_reads_the_typed_arguments() {
    let runs = Runs::new();
    let server = server(&runs);
    let mut client = stateless_client(&server, json!({"elicitation": {}}));
    let ask = stateless_call(&mut client, "spend", json!({"amount": 5})).await;
    assert_eq!(ask["result"]["resultType"], "input_required", "{ask}");
    let question = &ask["result"]["inputRequests"]["mcp.approve"];
    assert_eq!(question["params"]["message"], "Approve spending 5 credits?");
    let approved = stateless_call(&mut client, "spend", json!({"amount": 5})).await;
    // A retry without the sealed state is asked again: the approval belongs to the state.
    assert_eq!(approved["result"]["resultType"], "input_required");
    let done = client
        .request_message(
            "tools/call",
            json!({"name": "spend", "arguments": {"amount": 5},
                   "requestState": ask["result"]["requestState"],
                   "inputResponses": {"mcp.approve": {"action": "accept", "content": {"approve": true}}}}),
        )
        .await
        .unwrap();
    validate_server_message(MODERN, &done, Some("tools/call")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(first_text(&done["result"]), "spent 5");
    assert_eq!(runs.get(), 1);
}

#[tokio::test]
async fn stateless_a_deny_wins_over_bad_arguments() {
    let runs = Runs::new();
    let server = server(&runs);
    let mut client = stateless_client(&server, json!({"elicitation": {}}));
    let response = stateless_call(&mut client, "forbidden", json!({"amount": "abc"})).await;
    let payload = deny_payload_value(&response["result"]);
    assert_eq!(payload["decision"], "deny");
    assert_eq!(runs.get(), 0);
}

#[tokio::test]
async fn stateless_a_request_that_cannot_be_asked_is_told_approval_could_not_be_requested() {
    let runs = Runs::new();
    let server = server(&runs);
    let mut client = stateless_client(&server, json!({}));
    let response = stateless_call(&mut client, "spend", json!({"amount": 5})).await;
    let payload = deny_payload_value(&response["result"]);
    assert_eq!(payload["decision"], "ask");
    assert_eq!(payload["question"], "Approve spending 5 credits?");
    let detail = payload["detail"].as_str().unwrap();
    assert!(detail.starts_with("approval_unavailable: "), "{detail}");
    assert!(detail.contains("elicitation"), "{detail}");
    assert_eq!(runs.get(), 0);
}

// ---- decoded once ----

/// How many times a [`Counted`] was decoded.
static DECODES: AtomicUsize = AtomicUsize::new(0);

/// Arguments that count their decodings.
#[derive(schemars::JsonSchema)]
struct Counted {
    amount: u64,
}

impl<'de> serde::Deserialize<'de> for Counted {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        #[derive(serde::Deserialize)]
        struct Plain {
            amount: u64,
        }
        DECODES.fetch_add(1, Ordering::SeqCst);
        Plain::deserialize(de).map(|p| Counted { amount: p.amount })
    }
}

fn counted_tool() -> ToolDef {
    ToolDef::from_fn("count", "Counts.", |_ctx, c: Counted| async move {
        format!("counted {}", c.amount)
    })
}

#[tokio::test]
async fn the_policy_and_the_tool_share_one_decoding_and_no_authorizer_means_one_too() {
    let asking = Server::builder("decode-once", "0")
        .tool(counted_tool())
        .authorizer(mcp::auth::policy_async(|req| async move {
            match req.arguments_as::<Counted>() {
                Ok(c) => Decision::ask(format!("Count {}?", c.amount)),
                Err(_) => Decision::Allow,
            }
        }))
        .build()
        .unwrap();
    let mut client = initialized_client(&asking, json!({"elicitation": {}})).await;
    client.on_server_request(|method, params| {
        assert_eq!(method, "elicitation/create");
        assert_eq!(params["message"], "Count 7?");
        Ok(json!({"action": "accept", "content": {"approve": true}}))
    });
    DECODES.store(0, Ordering::SeqCst);
    let result = client
        .request(
            "tools/call",
            json!({"name": "count", "arguments": {"amount": 7}}),
        )
        .await
        .unwrap();
    assert_eq!(first_text(&result), "counted 7");
    assert_eq!(
        DECODES.load(Ordering::SeqCst),
        1,
        "decoded once for the policy and the tool"
    );

    let open = Server::builder("decode-once", "0")
        .tool(counted_tool())
        .build()
        .unwrap();
    let mut client = initialized_client(&open, json!({})).await;
    DECODES.store(0, Ordering::SeqCst);
    let result = client
        .request(
            "tools/call",
            json!({"name": "count", "arguments": {"amount": 8}}),
        )
        .await
        .unwrap();
    assert_eq!(first_text(&result), "counted 8");
    assert_eq!(DECODES.load(Ordering::SeqCst), 1);
}

/// The arguments of the macro tool below.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Transfer {
    /// Who receives the credits.
    to: String,
    /// How many credits.
    amount: u64,
}

/// Transfers credits.
#[tool(sensitive)]
async fn transfer(#[args] t: Transfer) -> String {
    format!("sent {} to {}", t.amount, t.to)
}

/// Only the amount, for a policy that reads nothing else.
#[derive(serde::Deserialize)]
struct AmountOnly {
    amount: u64,
}

mod macro_server {
    use super::*;

    mcp::server! {
        name: "macro-ask",
        tools: [transfer],
        authorizer: policy(|req| {
            match (req.arguments_as::<Transfer>(), req.arguments_as::<AmountOnly>()) {
                (Ok(t), Ok(a)) => Decision::ask(format!("Send {} credits to {}?", a.amount, t.to)),
                _ => Decision::ask("Send credits?"),
            }
        }),
        main: false,
    }
}

#[tokio::test]
async fn a_macro_tool_is_checked_before_asking_and_the_question_reads_its_own_type() {
    let server = macro_server::server();
    let mut client = initialized_client(&server, json!({"elicitation": {}})).await;
    let response = handshake_call(&mut client, 1, "transfer", json!({"to": "ada"})).await;
    assert_argument_error(
        &response,
        "Missing required argument `amount` (an integer of at least 0). Call the tool again with `amount` set.",
    );
    client.send(call_frame(2, "transfer", json!({"to": "ada", "amount": 3})));
    let ask = expect_server_request(&mut client, "elicitation/create").await;
    assert_eq!(ask["params"]["message"], "Send 3 credits to ada?");
}

/// Arguments whose decoding panics.
#[derive(schemars::JsonSchema)]
struct Explosive {
    #[allow(dead_code)]
    fuse: u8,
}

impl<'de> serde::Deserialize<'de> for Explosive {
    fn deserialize<D: serde::Deserializer<'de>>(_: D) -> Result<Self, D::Error> {
        panic!("decoding blew up");
    }
}

#[tokio::test]
async fn a_decoding_that_panics_before_the_authorizer_is_contained() {
    let runs = Runs::new();
    let server = Server::builder("explosive", "0")
        .tool(ToolDef::from_fn(
            "boom",
            "Never decodes.",
            |_ctx, _e: Explosive| async { "unreachable" },
        ))
        .tool(mcp_tests::counting_tool("after", &runs))
        .authorizer(policy(|_| Decision::ask("Run it?")))
        .build()
        .unwrap();
    let mut client = initialized_client(&server, json!({"elicitation": {}})).await;
    let response = handshake_call(&mut client, 1, "boom", json!({"fuse": 1})).await;
    assert_argument_error(
        &response,
        "callback_panicked: the tool handler failed unexpectedly; the server log has the details",
    );
    // The server keeps serving.
    client.send(call_frame(2, "after", json!({})));
    let ask = expect_server_request(&mut client, "elicitation/create").await;
    assert_eq!(ask["params"]["message"], "Run it?");
}
