//! The stateless 2026-07-28 revision: per-request metadata and its errors, discovery,
//! result decoration and cache hints, input-required results (multi round-trip requests)
//! with sealed state, the authorizer's Ask without server-to-client requests, listen
//! streams, logging and cancellation. Every message the server emits is checked against
//! the official 2026-07-28 schema.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcp::Transport;
use mcp::context::{ClientCapability, Elicitation};
use mcp::prelude::*;
use mcp::protocol::{CreateMessageRequestParams, Message};
use mcp::registry::{PromptArgs, ResourceRequest};
use mcp::server::RequestExtras;
use mcp::testing::TestClient;
use mcp_tests::validate_server_message;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

const V: &str = "2026-07-28";

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

#[derive(Deserialize, JsonSchema)]
struct Name {
    name: String,
}

#[derive(Deserialize, JsonSchema)]
struct Target {
    path: String,
}

fn server_with(runs: Arc<AtomicUsize>, state_ttl: Duration) -> Server {
    let deletes = Arc::clone(&runs);
    Server::builder("stateless-test", "1.2.3")
        .tool(ToolDef::from_fn(
            "echo",
            "Echoes a name.",
            |_c, n: Name| async move { n.name },
        ))
        .tool(ToolDef::from_fn(
            "greet",
            "Asks for a name, then greets.",
            |ctx: Ctx, _a: NoArgs| async move {
                match ctx
                    .elicit::<Name>("What is your name?")
                    .key("user_name")
                    .await
                {
                    Ok(Elicitation::Accepted(n)) => format!("Hello, {}!", n.name),
                    Ok(_) => "No name given.".to_owned(),
                    Err(e) => format!("cannot ask: {e}"),
                }
            },
        ))
        .tool(ToolDef::from_fn(
            "multi",
            "Asks three things at once.",
            |ctx: Ctx, _a: NoArgs| async move {
                let (name, sample, roots) = tokio::join!(
                    ctx.elicit::<Name>("Name?").key("user_name"),
                    ctx.sample(CreateMessageRequestParams::ask("Say hi", 50))
                        .key("greeting"),
                    ctx.roots().key("client_roots"),
                );
                let name = match name {
                    Ok(Elicitation::Accepted(n)) => n.name,
                    _ => "?".into(),
                };
                let greeting = sample
                    .ok()
                    .and_then(|s| s.text().map(str::to_owned))
                    .unwrap_or_default();
                let roots = roots.map(|r| r.len()).unwrap_or(0);
                format!("{greeting} {name}; {roots} root(s)")
            },
        ))
        .tool(ToolDef::from_fn(
            "polite",
            "Asks only what the client supports.",
            |ctx: Ctx, _a: NoArgs| async move {
                let mut asked = Vec::new();
                if ctx.client_supports(ClientCapability::Elicitation) {
                    let _ = ctx.elicit::<Name>("Name?").key("user_name").await;
                    asked.push("elicitation");
                }
                if ctx.client_supports(ClientCapability::Sampling) {
                    let _ = ctx
                        .sample(CreateMessageRequestParams::ask("Capital of France?", 100))
                        .key("question")
                        .await;
                    asked.push("sampling");
                }
                asked.join(",")
            },
        ))
        .tool(ToolDef::from_fn(
            "two_step",
            "Asks twice, keeping state.",
            |ctx: Ctx, _a: NoArgs| async move {
                let first = match ctx.elicit::<Name>("First name?").key("step1").await {
                    Ok(Elicitation::Accepted(n)) => n.name,
                    _ => return "stopped".to_owned(),
                };
                ctx.set_request_state(&json!({"first": first}));
                let last = match ctx.elicit::<Name>("Last name?").key("step2").await {
                    Ok(Elicitation::Accepted(n)) => n.name,
                    _ => return "stopped".to_owned(),
                };
                let remembered: Option<Value> = ctx.request_state();
                format!(
                    "{first} {last} (state {})",
                    remembered
                        .map(|v| v["first"].to_string())
                        .unwrap_or_default()
                )
            },
        ))
        .tool(ToolDef::from_fn(
            "needs_sampling",
            "Requires sampling.",
            |ctx: Ctx, _a: NoArgs| async move {
                ctx.require(ClientCapability::Sampling)
                    .await
                    .map(|_| "sampled")
                    .map_err(|e| e.to_string())
            },
        ))
        .tool(ToolDef::from_fn(
            "chatty",
            "Logs at info and debug.",
            |ctx: Ctx, _a: NoArgs| async move {
                ctx.info("an info line");
                ctx.debug("a debug line");
                "done"
            },
        ))
        .tool(ToolDef::from_fn(
            "slow",
            "Sleeps until cancelled.",
            |ctx: Ctx, _a: NoArgs| async move {
                ctx.cancelled().await;
                "cancelled"
            },
        ))
        .tool(
            ToolDef::from_fn("delete", "Deletes a path.", move |_c, t: Target| {
                let deletes = Arc::clone(&deletes);
                async move {
                    deletes.fetch_add(1, Ordering::SeqCst);
                    format!("deleted {}", t.path)
                }
            })
            .destructive(),
        )
        .resource(
            ResourceDef::new("test://static", "static", |_c, _r: ResourceRequest| async {
                "static text"
            })
            .mime_type("text/plain")
            .cache_ttl(Duration::from_secs(30)),
        )
        .template(
            ResourceTemplateDef::new("test://t/{id}", "t", |_c, r: ResourceRequest| async move {
                Json(json!({"id": r.vars["id"]}))
            })
            .unwrap(),
        )
        .prompt(PromptDef::new(
            "ask_context",
            "Needs context first.",
            |ctx: Ctx, _a: PromptArgs| async move {
                match ctx.elicit::<Name>("Context?").key("user_context").await {
                    Ok(Elicitation::Accepted(n)) => {
                        Ok(vec![PromptMessage::user(format!("Context: {}", n.name))])
                    }
                    _ => Err(mcp::registry::PromptError::Failed("no context".into())),
                }
            },
        ))
        .authorizer(mcp::auth::ask_before_sensitive())
        .request_state_ttl(state_ttl)
        .build()
        .unwrap()
}

fn server() -> (Server, Arc<AtomicUsize>) {
    let runs = Arc::new(AtomicUsize::new(0));
    (
        server_with(Arc::clone(&runs), Duration::from_secs(60)),
        runs,
    )
}

fn all_caps() -> Value {
    json!({"elicitation": {}, "sampling": {}, "roots": {}})
}

fn client(server: &Server, caps: Value) -> TestClient {
    let mut c = TestClient::connect(server);
    c.use_stateless(caps);
    c
}

/// Sends a request and checks the whole response against the 2026-07-28 schema.
async fn call(c: &mut TestClient, method: &str, params: Value) -> Value {
    let message = c.request_message(method, params).await.expect("a response");
    validate_server_message(V, &message, Some(method)).unwrap_or_else(|e| panic!("{e}"));
    message
}

fn text(message: &Value) -> String {
    message["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn discover_describes_the_server() {
    let (s, _) = server();
    let mut c = client(&s, json!({}));
    let r = call(&mut c, "server/discover", json!({})).await;
    let result = &r["result"];
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["supportedVersions"], json!(["2026-07-28"]));
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "stateless-test"
    );
    assert_eq!(result["cacheScope"], "public");
    assert!(result["ttlMs"].as_u64().unwrap() > 0);
    assert!(result["capabilities"]["tools"].is_object());
    assert!(result["capabilities"]["prompts"].is_object());
}

#[tokio::test]
async fn metadata_is_validated_in_the_specified_order() {
    let (s, _) = server();
    let mut c = TestClient::connect(&s);
    // A stateless request with no clientCapabilities.
    let missing = c
        .request_message(
            "tools/list",
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": V}}),
        )
        .await
        .unwrap();
    assert_eq!(missing["error"]["code"], -32602);
    assert!(
        missing["error"]["message"]
            .as_str()
            .unwrap()
            .contains("clientCapabilities")
    );
    validate_server_message(V, &missing, None).unwrap();

    let mut c = client(&s, json!({}));
    call(&mut c, "server/discover", json!({})).await;
    // On a connection speaking 2026-07-28, a request without the metadata is malformed.
    c.send(json!({"jsonrpc": "2.0", "id": "raw", "method": "tools/list", "params": {"_meta": {}}}));
    let no_meta = c.next_message().await.unwrap();
    assert_eq!(no_meta["error"]["code"], -32602);
    c.send(json!({"jsonrpc": "2.0", "id": "raw2", "method": "tools/list"}));
    assert_eq!(c.next_message().await.unwrap()["error"]["code"], -32602);

    let unsupported = c
        .request_message(
            "tools/list",
            json!({"_meta": {
                "io.modelcontextprotocol/protocolVersion": "v999.0.0",
                "io.modelcontextprotocol/clientCapabilities": {}}}),
        )
        .await
        .unwrap();
    assert_eq!(unsupported["error"]["code"], -32022);
    assert_eq!(
        unsupported["error"]["data"],
        json!({"supported": ["2026-07-28"], "requested": "v999.0.0"})
    );
    validate_server_message(V, &unsupported, None).unwrap();

    for gone in [
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
        "no/such",
    ] {
        let r = call(&mut c, gone, json!({})).await;
        assert_eq!(r["error"]["code"], -32601, "{gone}");
    }
}

#[tokio::test]
async fn results_carry_result_type_server_info_and_cache_hints() {
    let (s, _) = server();
    let mut c = client(&s, json!({}));
    let tools = call(&mut c, "tools/list", json!({})).await;
    assert_eq!(tools["result"]["resultType"], "complete");
    assert_eq!(
        tools["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["version"],
        "1.2.3"
    );
    // A tool authorizer shapes what each caller sees: the list is private.
    assert_eq!(tools["result"]["cacheScope"], "private");
    for method in ["resources/list", "resources/templates/list", "prompts/list"] {
        let r = call(&mut c, method, json!({})).await;
        assert_eq!(r["result"]["cacheScope"], "public", "{method}");
        assert!(r["result"]["ttlMs"].is_u64(), "{method}");
    }
    let read = call(&mut c, "resources/read", json!({"uri": "test://static"})).await;
    assert_eq!(read["result"]["ttlMs"], 30_000);
    assert_eq!(read["result"]["contents"][0]["text"], "static text");
    let templated = call(&mut c, "resources/read", json!({"uri": "test://t/123"})).await;
    assert!(
        templated["result"]["contents"][0]["text"]
            .as_str()
            .unwrap()
            .contains("123")
    );
    let echo = call(
        &mut c,
        "tools/call",
        json!({"name": "echo", "arguments": {"name": "x"}}),
    )
    .await;
    assert_eq!(echo["result"]["resultType"], "complete");
    assert_eq!(text(&echo), "x");
    let completion = call(
        &mut c,
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "ask_context"}, "argument": {"name": "a", "value": ""}}),
    )
    .await;
    assert_eq!(completion["result"]["resultType"], "complete");
}

#[tokio::test]
async fn resource_not_found_is_invalid_params_with_the_uri() {
    let (s, _) = server();
    let mut c = client(&s, json!({}));
    let r = call(
        &mut c,
        "resources/read",
        json!({"uri": "test://nonexistent-resource-for-conformance-testing"}),
    )
    .await;
    assert_eq!(r["error"]["code"], -32602);
    assert_eq!(
        r["error"]["data"]["uri"],
        "test://nonexistent-resource-for-conformance-testing"
    );
}

/// A call's members are handed from the edge to the dispatcher without a second reading;
/// each that is not what `tools/call` takes still gets the reader's -32602 naming it.
#[tokio::test]
async fn a_calls_malformed_members_are_refused_by_name() {
    let (s, _) = server();
    let mut c = client(&s, all_caps());
    for (params, names) in [
        (json!({"name": 7, "arguments": {}}), "expected a string"),
        (json!({"arguments": {}}), "missing field `name`"),
        (
            json!({"name": "greet", "arguments": {}, "inputResponses": 5}),
            "invalid type: integer `5`",
        ),
        (
            json!({"name": "greet", "arguments": {}, "inputResponses": {}, "requestState": 5}),
            "invalid type: integer `5`",
        ),
    ] {
        let r = call(&mut c, "tools/call", params.clone()).await;
        assert_eq!(r["error"]["code"], -32602, "{params}: {r}");
        let message = r["error"]["message"].as_str().unwrap();
        assert!(
            message.starts_with("Invalid params for tools/call"),
            "{message}"
        );
        assert!(message.contains(names), "{params}: {message}");
    }
    // A name sent with an escape is the name it spells.
    let meta = TestClient::stateless_meta(all_caps());
    c.send_frame(
        format!(
            r#"{{"jsonrpc":"2.0","id":"esc","method":"tools/call","params":{{"name":"gr\u0065et","arguments":{{}},"_meta":{meta}}}}}"#
        )
        .into_bytes(),
    );
    let r = c.next_message().await.unwrap();
    assert_eq!(r["id"], "esc");
    assert_eq!(r["result"]["resultType"], "input_required", "{r}");
}

#[tokio::test]
async fn an_ask_becomes_an_input_required_result_and_the_retry_completes() {
    let (s, _) = server();
    let mut c = client(&s, all_caps());
    let r1 = call(
        &mut c,
        "tools/call",
        json!({"name": "greet", "arguments": {}}),
    )
    .await;
    let result = &r1["result"];
    assert_eq!(result["resultType"], "input_required");
    assert_eq!(
        result["inputRequests"]["user_name"]["method"],
        "elicitation/create"
    );
    assert_eq!(
        result["inputRequests"]["user_name"]["params"]["message"],
        "What is your name?"
    );
    let state = result["requestState"].as_str().unwrap().to_owned();
    let r2 = call(
        &mut c,
        "tools/call",
        json!({"name": "greet", "arguments": {},
               "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Alice"}}},
               "requestState": state}),
    )
    .await;
    assert_eq!(r2["result"]["resultType"], "complete");
    assert_eq!(text(&r2), "Hello, Alice!");
}

#[tokio::test]
async fn answers_without_state_work_extra_keys_are_ignored_and_missing_ones_are_asked_again() {
    let (s, _) = server();
    let mut c = client(&s, all_caps());
    let direct = call(
        &mut c,
        "tools/call",
        json!({"name": "greet", "arguments": {},
               "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Bo"}},
                                  "unknown_extra_key": {"action": "accept", "content": {"x": 1}}}}),
    )
    .await;
    assert_eq!(text(&direct), "Hello, Bo!");
    let wrong = call(
        &mut c,
        "tools/call",
        json!({"name": "greet", "arguments": {}, "inputResponses": {"wrong_key": {"action": "accept", "content": {}}}}),
    )
    .await;
    assert_eq!(wrong["result"]["resultType"], "input_required");
    assert!(wrong["result"]["inputRequests"]["user_name"].is_object());
    let malformed = c
        .request_message(
            "tools/call",
            json!({"name": "greet", "arguments": {}, "inputResponses": {"user_name": 42}}),
        )
        .await
        .unwrap();
    assert_eq!(
        malformed["result"]["resultType"], "input_required",
        "a malformed answer is asked again"
    );
}

#[tokio::test]
async fn several_asks_in_one_round_and_only_for_declared_capabilities() {
    let (s, _) = server();
    let mut c = client(&s, all_caps());
    let r1 = call(
        &mut c,
        "tools/call",
        json!({"name": "multi", "arguments": {}}),
    )
    .await;
    let requests = r1["result"]["inputRequests"].as_object().unwrap();
    let mut keys: Vec<&String> = requests.keys().collect();
    keys.sort();
    assert_eq!(keys, ["client_roots", "greeting", "user_name"]);
    assert_eq!(requests["greeting"]["method"], "sampling/createMessage");
    assert_eq!(requests["greeting"]["params"]["maxTokens"], 50);
    assert_eq!(requests["client_roots"]["method"], "roots/list");
    let r2 = call(
        &mut c,
        "tools/call",
        json!({"name": "multi", "arguments": {},
               "requestState": r1["result"]["requestState"],
               "inputResponses": {
                   "user_name": {"action": "accept", "content": {"name": "Ann"}},
                   "greeting": {"role": "assistant", "content": {"type": "text", "text": "Hi"}, "model": "m"},
                   "client_roots": {"roots": [{"uri": "file:///a"}, {"uri": "file:///b"}]}}}),
    )
    .await;
    assert_eq!(text(&r2), "Hi Ann; 2 root(s)");

    let mut sampling_only = client(&s, json!({"sampling": {}}));
    let r = call(
        &mut sampling_only,
        "tools/call",
        json!({"name": "polite", "arguments": {}}),
    )
    .await;
    let methods: Vec<&str> = r["result"]["inputRequests"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v["method"].as_str().unwrap())
        .collect();
    assert_eq!(methods, ["sampling/createMessage"]);
}

#[tokio::test]
async fn multi_round_carries_answers_and_handler_state_sealed() {
    let (s, _) = server();
    let mut c = client(&s, all_caps());
    let r1 = call(
        &mut c,
        "tools/call",
        json!({"name": "two_step", "arguments": {}}),
    )
    .await;
    assert!(r1["result"]["inputRequests"]["step1"].is_object());
    let s1 = r1["result"]["requestState"].clone();
    let r2 = call(
        &mut c,
        "tools/call",
        json!({"name": "two_step", "arguments": {}, "requestState": s1,
               "inputResponses": {"step1": {"action": "accept", "content": {"name": "Ada"}}}}),
    )
    .await;
    assert_eq!(r2["result"]["resultType"], "input_required");
    assert!(r2["result"]["inputRequests"]["step2"].is_object());
    let s2 = r2["result"]["requestState"].clone();
    assert_ne!(s1, s2);
    // The earlier answer rides in the sealed state; a rewritten step1 is ignored.
    let r3 = call(
        &mut c,
        "tools/call",
        json!({"name": "two_step", "arguments": {}, "requestState": s2,
               "inputResponses": {"step1": {"action": "accept", "content": {"name": "Mallory"}},
                                  "step2": {"action": "accept", "content": {"name": "Lovelace"}}}}),
    )
    .await;
    assert_eq!(text(&r3), "Ada Lovelace (state \"Ada\")");
}

async fn fresh_state(c: &mut TestClient) -> String {
    let r = c
        .request("tools/call", json!({"name": "greet", "arguments": {}}))
        .await
        .unwrap();
    r["requestState"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn sealed_state_refuses_tampering_replay_expiry_and_swaps() {
    let (s, _) = server();
    let mut c = client(&s, all_caps());
    let answer = json!({"user_name": {"action": "accept", "content": {"name": "A"}}});

    let state = fresh_state(&mut c).await;
    let mut tampered = state.clone().into_bytes();
    tampered[5] = if tampered[5] == b'A' { b'B' } else { b'A' };
    let r = call(
        &mut c,
        "tools/call",
        json!({"name": "greet", "arguments": {}, "inputResponses": answer,
        "requestState": String::from_utf8(tampered).unwrap()}),
    )
    .await;
    assert_eq!(r["error"]["code"], -32602, "tampered");

    let state = fresh_state(&mut c).await;
    let ok = call(
        &mut c,
        "tools/call",
        json!({"name": "greet", "arguments": {}, "inputResponses": answer, "requestState": state}),
    )
    .await;
    assert_eq!(text(&ok), "Hello, A!");
    let replay = call(
        &mut c,
        "tools/call",
        json!({"name": "greet", "arguments": {}, "inputResponses": answer, "requestState": state}),
    )
    .await;
    assert_eq!(replay["error"]["code"], -32602, "replayed");
    assert!(
        replay["error"]["message"]
            .as_str()
            .unwrap()
            .contains("already used")
    );

    let state = fresh_state(&mut c).await;
    let swapped_tool = call(
        &mut c,
        "tools/call",
        json!({"name": "two_step", "arguments": {}, "requestState": state}),
    )
    .await;
    assert_eq!(swapped_tool["error"]["code"], -32602, "another tool");

    let state = fresh_state(&mut c).await;
    let swapped_args = call(
        &mut c,
        "tools/call",
        json!({"name": "greet", "arguments": {"extra": 1}, "requestState": state}),
    )
    .await;
    assert_eq!(swapped_args["error"]["code"], -32602, "other arguments");

    let short = server_with(Arc::new(AtomicUsize::new(0)), Duration::from_millis(1));
    let mut c = client(&short, all_caps());
    let state = fresh_state(&mut c).await;
    tokio::time::sleep(Duration::from_millis(5)).await;
    let expired = call(
        &mut c,
        "tools/call",
        json!({"name": "greet", "arguments": {}, "inputResponses": answer, "requestState": state}),
    )
    .await;
    assert_eq!(expired["error"]["code"], -32602, "expired");
    assert!(
        expired["error"]["message"]
            .as_str()
            .unwrap()
            .contains("expired")
    );
}

/// Sends one 2026-07-28 request on a connection as a given principal.
async fn as_principal(
    conn: &mcp::Connection,
    subject: &str,
    id: i64,
    method: &str,
    mut params: Value,
) -> Value {
    params["_meta"] = TestClient::stateless_meta(all_caps());
    let extras = RequestExtras {
        principal: Some(Arc::new(mcp::auth::Principal::new(subject, vec![]))),
        era: Some(mcp::protocol::Era::Stateless),
        ..Default::default()
    };
    let reply = conn
        .handle_with(Message::request(id, method, params), extras)
        .await
        .expect("a reply");
    let value = reply.to_value();
    validate_server_message(V, &value, Some(method)).unwrap_or_else(|e| panic!("{e}"));
    value
}

#[tokio::test]
async fn state_is_bound_to_the_principal() {
    let (s, _) = server();
    let (out, _rx) = mcp::server::Outbound::channel(16);
    let conn = s.connect(mcp::ConnId::new("http-x"), Transport::Http, out);
    let r1 = as_principal(
        &conn,
        "alice",
        1,
        "tools/call",
        json!({"name": "greet", "arguments": {}}),
    )
    .await;
    let state = r1["result"]["requestState"].clone();
    let answer = json!({"user_name": {"action": "accept", "content": {"name": "A"}}});
    let stolen = as_principal(
        &conn,
        "mallory",
        2,
        "tools/call",
        json!({"name": "greet", "arguments": {}, "requestState": state, "inputResponses": answer}),
    )
    .await;
    assert_eq!(stolen["error"]["code"], -32602);
    let r1 = as_principal(
        &conn,
        "alice",
        3,
        "tools/call",
        json!({"name": "greet", "arguments": {}}),
    )
    .await;
    let own = as_principal(&conn, "alice", 4, "tools/call",
        json!({"name": "greet", "arguments": {}, "requestState": r1["result"]["requestState"], "inputResponses": answer})).await;
    assert_eq!(text(&own), "Hello, A!");
}

#[tokio::test]
async fn the_authorizers_ask_is_an_approval_round_bound_to_the_call() {
    let (s, runs) = server();
    let mut c = client(&s, all_caps());
    let args = json!({"path": "/tmp/a"});
    let ask = call(
        &mut c,
        "tools/call",
        json!({"name": "delete", "arguments": args}),
    )
    .await;
    let question = &ask["result"]["inputRequests"]["mcp.approve"];
    assert_eq!(question["method"], "elicitation/create");
    assert_eq!(
        question["params"]["requestedSchema"]["required"],
        json!(["approve"])
    );
    assert!(
        question["params"]["message"]
            .as_str()
            .unwrap()
            .contains("/tmp/a")
    );
    let state = ask["result"]["requestState"].clone();
    let yes = json!({"mcp.approve": {"action": "accept", "content": {"approve": true}}});

    // Approval presented for other arguments: the state does not match; nothing runs.
    let other = call(
        &mut c,
        "tools/call",
        json!({"name": "delete", "arguments": {"path": "/etc"},
        "requestState": state, "inputResponses": yes}),
    )
    .await;
    assert_eq!(other["error"]["code"], -32602);
    assert_eq!(runs.load(Ordering::SeqCst), 0);

    // An approval with no state is not an approval: the question comes back.
    let stateless = call(
        &mut c,
        "tools/call",
        json!({"name": "delete", "arguments": args, "inputResponses": yes}),
    )
    .await;
    assert_eq!(stateless["result"]["resultType"], "input_required");
    assert_eq!(runs.load(Ordering::SeqCst), 0);

    let ask = call(
        &mut c,
        "tools/call",
        json!({"name": "delete", "arguments": args}),
    )
    .await;
    let state = ask["result"]["requestState"].clone();
    let approved = call(
        &mut c,
        "tools/call",
        json!({"name": "delete", "arguments": args,
        "requestState": state, "inputResponses": yes}),
    )
    .await;
    assert_eq!(text(&approved), "deleted /tmp/a");
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    let replay = call(
        &mut c,
        "tools/call",
        json!({"name": "delete", "arguments": args,
        "requestState": state, "inputResponses": yes}),
    )
    .await;
    assert_eq!(replay["error"]["code"], -32602);
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "a replayed approval runs nothing"
    );

    let ask = call(
        &mut c,
        "tools/call",
        json!({"name": "delete", "arguments": args}),
    )
    .await;
    let declined = call(
        &mut c,
        "tools/call",
        json!({"name": "delete", "arguments": args,
        "requestState": ask["result"]["requestState"],
        "inputResponses": {"mcp.approve": {"action": "decline"}}}),
    )
    .await;
    assert_eq!(declined["result"]["isError"], true);
    let payload: Value = serde_json::from_str(&text(&declined)).unwrap();
    assert_eq!(payload["detail"], "user decline");
    assert_eq!(runs.load(Ordering::SeqCst), 1);

    let mut mute = client(&s, json!({}));
    let denied = call(
        &mut mute,
        "tools/call",
        json!({"name": "delete", "arguments": args}),
    )
    .await;
    assert_eq!(
        denied["result"]["isError"], true,
        "a client that cannot be asked is denied at once"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_missing_required_capability_is_32021() {
    let (s, _) = server();
    let mut c = client(&s, json!({}));
    let r = call(
        &mut c,
        "tools/call",
        json!({"name": "needs_sampling", "arguments": {}}),
    )
    .await;
    assert_eq!(r["error"]["code"], -32021);
    assert_eq!(
        r["error"]["data"]["requiredCapabilities"],
        json!({"sampling": {}})
    );
    let mut ok = client(&s, json!({"sampling": {}}));
    assert_eq!(
        text(
            &call(
                &mut ok,
                "tools/call",
                json!({"name": "needs_sampling", "arguments": {}})
            )
            .await
        ),
        "sampled"
    );
}

#[tokio::test]
async fn prompts_can_require_input_too() {
    let (s, _) = server();
    let mut c = client(&s, all_caps());
    let r1 = call(&mut c, "prompts/get", json!({"name": "ask_context"})).await;
    assert_eq!(r1["result"]["resultType"], "input_required");
    let r2 = call(
        &mut c,
        "prompts/get",
        json!({"name": "ask_context", "requestState": r1["result"]["requestState"],
        "inputResponses": {"user_context": {"action": "accept", "content": {"name": "ctx"}}}}),
    )
    .await;
    assert_eq!(
        r2["result"]["messages"][0]["content"]["text"],
        "Context: ctx"
    );
    for method in ["tools/list", "prompts/list"] {
        let r = call(&mut c, method, json!({})).await;
        assert_eq!(r["result"]["resultType"], "complete");
    }
}

#[tokio::test]
async fn logs_only_when_the_request_asks_for_a_level() {
    let (s, _) = server();
    let mut c = client(&s, json!({}));
    let quiet = call(
        &mut c,
        "tools/call",
        json!({"name": "chatty", "arguments": {}}),
    )
    .await;
    assert_eq!(text(&quiet), "done");
    assert!(c.drain(Duration::from_millis(50)).await.is_empty());
    let loud = call(
        &mut c,
        "tools/call",
        json!({"name": "chatty", "arguments": {},
               "_meta": {"io.modelcontextprotocol/logLevel": "info"}}),
    )
    .await;
    assert_eq!(text(&loud), "done");
    let logs = c.drain(Duration::from_millis(50)).await;
    assert_eq!(logs.len(), 1, "info passes, debug does not: {logs:?}");
    assert_eq!(logs[0]["params"]["data"], "an info line");
    validate_server_message(V, &logs[0], None).unwrap();
}

#[tokio::test]
async fn listen_acknowledges_then_routes_only_what_was_asked() {
    let (s, _) = server();
    let mut c = client(&s, json!({}));
    c.send(
        json!({"jsonrpc": "2.0", "id": "sub-1", "method": "subscriptions/listen", "params": {
        "_meta": TestClient::stateless_meta(json!({})),
        "notifications": {"toolsListChanged": true, "resourceSubscriptions": ["test://static"]}}}),
    );
    let ack = c.next_message().await.unwrap();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "sub-1"
    );
    assert_eq!(ack["params"]["notifications"]["toolsListChanged"], true);
    assert!(
        ack["params"]["notifications"]
            .get("promptsListChanged")
            .is_none()
    );
    validate_server_message(V, &ack, None).unwrap();

    s.registry()
        .register_tool(ToolDef::from_fn(
            "late",
            "Added later.",
            |_c, _a: NoArgs| async { "hi" },
        ))
        .unwrap();
    let changed = c.next_message().await.unwrap();
    assert_eq!(changed["method"], "notifications/tools/list_changed");
    assert_eq!(
        changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "sub-1"
    );
    validate_server_message(V, &changed, None).unwrap();

    s.registry()
        .register_prompt(PromptDef::new(
            "late",
            "Added later.",
            |_c, _a: PromptArgs| async { "x" },
        ))
        .unwrap();
    s.resource_updated("test://other");
    s.resource_updated("test://static");
    let updated = c.next_message().await.unwrap();
    assert_eq!(
        updated["method"], "notifications/resources/updated",
        "prompt changes and other URIs are filtered"
    );
    assert_eq!(updated["params"]["uri"], "test://static");

    s.shutdown();
    let end = c.next_message().await.unwrap();
    assert_eq!(end["id"], "sub-1");
    assert_eq!(end["result"]["resultType"], "complete");
    assert_eq!(
        end["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "sub-1"
    );
    validate_server_message(V, &end, Some("subscriptions/listen")).unwrap();
}

#[tokio::test]
async fn cancelling_a_listen_or_a_call_sends_nothing_more() {
    let (s, _) = server();
    let mut c = client(&s, json!({}));
    c.send(
        json!({"jsonrpc": "2.0", "id": 9, "method": "subscriptions/listen", "params": {
        "_meta": TestClient::stateless_meta(json!({})), "notifications": {"toolsListChanged": true}}}),
    );
    assert_eq!(
        c.next_message().await.unwrap()["method"],
        "notifications/subscriptions/acknowledged"
    );
    c.notify("notifications/cancelled", json!({"requestId": 9}));
    c.send(
        json!({"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {
        "_meta": TestClient::stateless_meta(json!({})), "name": "slow", "arguments": {}}}),
    );
    tokio::time::sleep(Duration::from_millis(50)).await;
    c.notify("notifications/cancelled", json!({"requestId": 10}));
    tokio::time::sleep(Duration::from_millis(50)).await;
    s.registry()
        .register_tool(ToolDef::from_fn(
            "late",
            "Added later.",
            |_c, _a: NoArgs| async { "hi" },
        ))
        .unwrap();
    assert!(c.drain(Duration::from_millis(100)).await.is_empty());
}

#[tokio::test]
async fn the_first_decisive_message_fixes_the_era_of_a_connection() {
    let (s, _) = server();
    let mut stateless = client(&s, json!({}));
    call(&mut stateless, "server/discover", json!({})).await;
    let init = stateless
        .request_message(
            "initialize",
            json!({"_meta": TestClient::stateless_meta(json!({})), "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}),
        )
        .await
        .unwrap();
    assert_eq!(init["error"]["code"], -32601);

    let mut legacy = TestClient::connect(&s);
    legacy.initialize(json!({})).await.unwrap();
    let discover = legacy
        .request_message(
            "server/discover",
            json!({"_meta": TestClient::stateless_meta(json!({}))}),
        )
        .await
        .unwrap();
    assert_eq!(
        discover["error"]["code"], -32601,
        "a handshake connection stays in its era"
    );
    let tools = legacy.request("tools/list", json!({})).await.unwrap();
    assert!(tools.get("resultType").is_none());
}

#[test]
fn the_official_2026_examples_decode_into_our_types() {
    use mcp::protocol::*;
    let dir = mcp_tests::schema::schema_dir().join("2026-07-28/examples");
    let mut decoded = 0;
    for entry in std::fs::read_dir(&dir).expect("examples directory") {
        let entry = entry.unwrap();
        let kind = entry.file_name().to_string_lossy().into_owned();
        for file in std::fs::read_dir(entry.path()).unwrap() {
            let path = file.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            let v: Value = serde_json::from_str(&text).unwrap();
            let check = |r: Result<(), serde_json::Error>| {
                r.unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            };
            fn de<T: for<'a> Deserialize<'a>>(v: &Value) -> Result<(), serde_json::Error> {
                serde_json::from_value::<T>(v.clone()).map(|_| ())
            }
            fn params<T: for<'a> Deserialize<'a>>(v: &Value) -> Result<(), serde_json::Error> {
                de::<T>(&v["params"])
            }
            match kind.as_str() {
                "CallToolResult" => check(de::<CallToolResult>(&v)),
                "CallToolRequest" => check(params::<CallToolRequestParams>(&v)),
                "CallToolRequestParams" => check(de::<CallToolRequestParams>(&v)),
                "Tool" => check(de::<Tool>(&v)),
                "ContentBlock" | "TextContent" | "ImageContent" | "AudioContent"
                | "EmbeddedResource" | "ResourceLink" => {
                    let mut v = v.clone();
                    if v.get("type").is_none() {
                        v["type"] = json!(match kind.as_str() {
                            "TextContent" => "text",
                            "ImageContent" => "image",
                            "AudioContent" => "audio",
                            "EmbeddedResource" => "resource",
                            _ => "resource_link",
                        });
                    }
                    check(de::<ContentBlock>(&v))
                }
                "TextResourceContents" | "BlobResourceContents" => {
                    check(de::<ResourceContents>(&v))
                }
                "Resource" => check(de::<Resource>(&v)),
                "ReadResourceResult" => check(de::<ReadResourceResult>(&v)),
                "ReadResourceRequest" => check(params::<ResourceUriParams>(&v)),
                "GetPromptResult" => check(de::<GetPromptResult>(&v)),
                "GetPromptRequest" => check(params::<GetPromptRequestParams>(&v)),
                "GetPromptRequestParams" => check(de::<GetPromptRequestParams>(&v)),
                "CompleteRequest" => check(params::<CompleteRequestParams>(&v)),
                "CompleteRequestParams" => check(de::<CompleteRequestParams>(&v)),
                "CompleteResult" => check(de::<CompleteResult>(&v)),
                "ClientCapabilities" => check(de::<ClientCapabilities>(&v)),
                "ServerCapabilities" => check(de::<ServerCapabilities>(&v)),
                "DiscoverResult" => check(de::<DiscoverResult>(&v)),
                "InputRequiredResult" => check(de::<InputRequiredResult>(&v)),
                "InputRequests" => {
                    check(de::<std::collections::BTreeMap<String, InputRequest>>(&v))
                }
                "ElicitRequest" => check(params::<ElicitRequestParams>(&v)),
                "ElicitRequestFormParams" | "ElicitRequestURLParams" => {
                    check(de::<ElicitRequestParams>(&v))
                }
                "ElicitResult" => check(de::<ElicitResult>(&v)),
                "CreateMessageRequest" => check(params::<CreateMessageRequestParams>(&v)),
                "CreateMessageRequestParams" => check(de::<CreateMessageRequestParams>(&v)),
                "CreateMessageResult" => check(de::<CreateMessageResult>(&v)),
                "ListRootsResult" => check(de::<ListRootsResult>(&v)),
                "Root" => check(de::<Root>(&v)),
                "SamplingMessage" => check(de::<SamplingMessage>(&v)),
                "ModelPreferences" => check(de::<ModelPreferences>(&v)),
                "ProgressNotification" => check(params::<ProgressParams>(&v)),
                "ProgressNotificationParams" => check(de::<ProgressParams>(&v)),
                "CancelledNotification" => check(params::<CancelledParams>(&v)),
                "CancelledNotificationParams" => check(de::<CancelledParams>(&v)),
                "LoggingMessageNotification" => check(params::<LoggingMessageParams>(&v)),
                "LoggingMessageNotificationParams" => check(de::<LoggingMessageParams>(&v)),
                "ResourceUpdatedNotification" => check(params::<ResourceUpdatedParams>(&v)),
                "ResourceUpdatedNotificationParams" => check(de::<ResourceUpdatedParams>(&v)),
                "SubscriptionsListenRequest" => check(params::<ListenParams>(&v)),
                "ListToolsResult"
                | "ListResourcesResult"
                | "ListPromptsResult"
                | "ListResourceTemplatesResult" => {
                    let key = match kind.as_str() {
                        "ListToolsResult" => "tools",
                        "ListResourcesResult" => "resources",
                        "ListPromptsResult" => "prompts",
                        _ => "resourceTemplates",
                    };
                    let items = v[key].as_array().unwrap();
                    for item in items {
                        match key {
                            "tools" => check(de::<Tool>(item)),
                            "resources" => check(de::<Resource>(item)),
                            "prompts" => check(de::<Prompt>(item)),
                            _ => check(de::<ResourceTemplate>(item)),
                        }
                    }
                }
                _ => {
                    // Envelopes and errors: the JSON-RPC decoder must accept every message.
                    if v.get("jsonrpc").is_some() && v.get("method").is_some() {
                        let decoded = mcp::protocol::jsonrpc::decode(text.as_bytes());
                        assert!(
                            matches!(decoded, mcp::protocol::jsonrpc::Incoming::Single(Ok(_))),
                            "{}",
                            path.display()
                        );
                    }
                    continue;
                }
            }
            decoded += 1;
        }
    }
    assert!(
        decoded >= 40,
        "only {decoded} examples were decoded into typed values"
    );
}
