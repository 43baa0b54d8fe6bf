//! Wire tests of the `everything` example: the fixtures of the official conformance suite,
//! driven over stdio on both protocol eras the way the suite's scenarios drive them over
//! HTTP, every message the server writes validated against the official schema of the
//! revision (by `mcp_tests::StdioServer`).

use std::path::Path;
use std::time::Duration;

use mcp_tests::{StdioServer, Wiring};
use serde_json::{Value, json};

fn spawn(wiring: Wiring) -> StdioServer {
    StdioServer::spawn(
        Path::new(env!("CARGO_BIN_EXE_everything")),
        &["--log-level", "warn"],
        wiring,
    )
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

/// What one request produced: its response, the server's own requests it caused (answered
/// by the responder), and the notifications that arrived before the response.
struct Exchange {
    response: Value,
    asked: Vec<Value>,
    notifications: Vec<Value>,
}

/// Sends a request and answers every server request with `answer` until the response.
async fn exchange(
    s: &mut StdioServer,
    id: i64,
    method: &str,
    params: Value,
    answer: impl Fn(&Value) -> Value,
) -> Exchange {
    s.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
        .await;
    let mut asked = Vec::new();
    let mut notifications = Vec::new();
    loop {
        let message = s.recv().await;
        match (message.get("method"), message.get("id")) {
            (Some(_), Some(server_id)) => {
                let result = answer(&message);
                s.send(json!({"jsonrpc": "2.0", "id": server_id, "result": result}))
                    .await;
                asked.push(message);
            }
            (Some(_), None) => notifications.push(message),
            (None, Some(got)) if *got == json!(id) => {
                return Exchange {
                    response: message,
                    asked,
                    notifications,
                };
            }
            _ => panic!("unexpected message {message}"),
        }
    }
}

/// A tools/call on the handshake era, answering what the server asks with `answer`.
async fn call(
    s: &mut StdioServer,
    id: i64,
    name: &str,
    arguments: Value,
    answer: impl Fn(&Value) -> Value,
) -> Exchange {
    exchange(
        s,
        id,
        "tools/call",
        json!({"name": name, "arguments": arguments}),
        answer,
    )
    .await
}

fn no_questions(message: &Value) -> Value {
    panic!("the server asked something unexpected: {message}")
}

fn names(list: &Value, key: &str) -> Vec<String> {
    list["result"][key]
        .as_array()
        .unwrap_or_else(|| panic!("no {key} in {list}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

async fn handshake_session(wiring: Wiring) {
    let mut s = spawn(wiring);
    let init = s
        .initialize(
            "2025-11-25",
            json!({"sampling": {}, "elicitation": {}, "roots": {"listChanged": true}}),
        )
        .await;
    let caps = &init["result"]["capabilities"];
    assert_eq!(init["result"]["serverInfo"]["name"], "everything");
    for cap in ["tools", "resources", "prompts", "logging", "completions"] {
        assert!(caps.get(cap).is_some(), "{cap} missing from {caps}");
    }
    assert_eq!(caps["resources"]["subscribe"], true);
    assert_eq!(s.request("ping", json!({})).await["result"], json!({}));

    // tools-list: every tool named and described, the 2020-12 schema verbatim.
    let tools = s.request("tools/list", json!({})).await;
    let listed = tools["result"]["tools"].as_array().unwrap();
    for tool in listed {
        assert!(
            tool["description"].as_str().is_some_and(|d| !d.is_empty()),
            "{tool}"
        );
        assert_eq!(tool["inputSchema"]["type"], "object", "{tool}");
    }
    let tool_names = names(&tools, "tools");
    for expected in [
        "test_simple_text",
        "test_image_content",
        "test_audio_content",
        "test_embedded_resource",
        "test_multiple_content_types",
        "test_tool_with_logging",
        "test_error_handling",
        "test_tool_with_progress",
        "test_sampling",
        "test_elicitation",
        "test_elicitation_sep1034_defaults",
        "test_elicitation_sep1330_enums",
        "json_schema_2020_12_tool",
        "delete_note",
    ] {
        assert!(
            tool_names.iter().any(|n| n == expected),
            "{expected} missing"
        );
    }
    let schema_tool = listed
        .iter()
        .find(|t| t["name"] == "json_schema_2020_12_tool")
        .unwrap();
    let schema = &schema_tool["inputSchema"];
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert_eq!(schema["$defs"]["address"]["$anchor"], "addressDef");
    assert_eq!(schema["additionalProperties"], false);
    assert_eq!(schema["else"], json!({"required": ["email"]}));
    assert!(schema["allOf"][0]["anyOf"].is_array());
    let header_tool = listed
        .iter()
        .find(|t| t["name"] == "test_header_param")
        .unwrap();
    assert_eq!(
        header_tool["inputSchema"]["properties"]["region"]["x-mcp-header"],
        "Region"
    );
    let r = call(
        &mut s,
        99,
        "test_header_param",
        json!({"region": "eu"}),
        no_questions,
    )
    .await;
    assert_eq!(text(&r.response["result"]), "region: eu");

    // Content of every type.
    let r = call(&mut s, 100, "test_simple_text", json!({}), no_questions).await;
    assert_eq!(
        text(&r.response["result"]),
        "This is a simple text response for testing."
    );
    // Binary content: its type, its MIME type, and base64 that starts like the format.
    for (id, tool, kind, mime, magic) in [
        (
            101,
            "test_image_content",
            "image",
            "image/png",
            "iVBORw0KGgo",
        ),
        (102, "test_audio_content", "audio", "audio/wav", "UklGR"),
    ] {
        let r = call(&mut s, id, tool, json!({}), no_questions).await;
        let block = &r.response["result"]["content"][0];
        assert_eq!(
            (block["type"].as_str(), block["mimeType"].as_str()),
            (Some(kind), Some(mime))
        );
        assert!(
            block["data"].as_str().unwrap().starts_with(magic),
            "{block}"
        );
    }
    let r = call(
        &mut s,
        103,
        "test_embedded_resource",
        json!({}),
        no_questions,
    )
    .await;
    let embedded = &r.response["result"]["content"][0];
    assert_eq!(embedded["type"], "resource");
    assert_eq!(embedded["resource"]["uri"], "test://embedded-resource");
    assert_eq!(embedded["resource"]["mimeType"], "text/plain");
    let r = call(
        &mut s,
        104,
        "test_multiple_content_types",
        json!({}),
        no_questions,
    )
    .await;
    let kinds: Vec<&str> = r.response["result"]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["text", "image", "resource"]);
    // Called without `arguments` at all, as the suite does.
    let r = s
        .request("tools/call", json!({"name": "test_simple_text"}))
        .await;
    assert!(r["result"].get("isError").is_none(), "{r}");

    // Errors are results the model reads.
    let r = call(&mut s, 105, "test_error_handling", json!({}), no_questions).await;
    assert_eq!(r.response["result"]["isError"], true);
    assert_eq!(
        text(&r.response["result"]),
        "This tool intentionally returns an error for testing"
    );

    // Progress: 0, 50, 100 of 100, echoing the token.
    let r = exchange(
        &mut s,
        106,
        "tools/call",
        json!({"name": "test_tool_with_progress", "arguments": {}, "_meta": {"progressToken": "progress-test-1"}}),
        no_questions,
    )
    .await;
    let progress: Vec<(f64, f64)> = r
        .notifications
        .iter()
        .filter(|n| n["method"] == "notifications/progress")
        .inspect(|n| assert_eq!(n["params"]["progressToken"], "progress-test-1"))
        .map(|n| {
            (
                n["params"]["progress"].as_f64().unwrap(),
                n["params"]["total"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(progress, [(0.0, 100.0), (50.0, 100.0), (100.0, 100.0)]);

    // Logging: three info messages once the level allows them; none when it does not.
    let r = s
        .request("logging/setLevel", json!({"level": "debug"}))
        .await;
    assert_eq!(r["result"], json!({}));
    let r = call(
        &mut s,
        107,
        "test_tool_with_logging",
        json!({}),
        no_questions,
    )
    .await;
    let logs: Vec<&str> = r
        .notifications
        .iter()
        .filter(|n| n["method"] == "notifications/message")
        .map(|n| n["params"]["data"].as_str().unwrap())
        .collect();
    assert_eq!(
        logs,
        [
            "Tool execution started",
            "Tool processing data",
            "Tool execution completed"
        ]
    );
    s.request("logging/setLevel", json!({"level": "error"}))
        .await;
    let r = call(
        &mut s,
        108,
        "test_tool_with_logging",
        json!({}),
        no_questions,
    )
    .await;
    assert!(r.notifications.is_empty(), "{:?}", r.notifications);

    // Sampling: the model's answer comes back in the result.
    let r = call(
        &mut s,
        109,
        "test_sampling",
        json!({"prompt": "Test prompt for sampling"}),
        |asked| {
            assert_eq!(asked["method"], "sampling/createMessage");
            assert_eq!(asked["params"]["maxTokens"], 100);
            assert_eq!(
                asked["params"]["messages"][0]["content"]["text"],
                "Test prompt for sampling"
            );
            json!({"role": "assistant", "content": {"type": "text", "text": "Paris."},
                   "model": "test-model", "stopReason": "endTurn"})
        },
    )
    .await;
    assert_eq!(r.asked.len(), 1);
    assert_eq!(text(&r.response["result"]), "LLM response: Paris.");

    // Elicitation with a form generated from a Rust type.
    let r = call(
        &mut s,
        110,
        "test_elicitation",
        json!({"message": "Please provide your information"}),
        |asked| {
            let schema = &asked["params"]["requestedSchema"];
            assert_eq!(schema["properties"]["username"]["type"], "string");
            assert_eq!(schema["properties"]["email"]["format"], "email");
            assert_eq!(schema["required"], json!(["username", "email"]));
            json!({"action": "accept", "content": {"username": "testuser", "email": "test@example.com"}})
        },
    )
    .await;
    assert_eq!(
        text(&r.response["result"]),
        r#"User response: action=accept, content={"username":"testuser","email":"test@example.com"}"#
    );
    let r = call(
        &mut s,
        111,
        "test_elicitation",
        json!({"message": "?"}),
        |_| json!({"action": "decline"}),
    )
    .await;
    assert_eq!(text(&r.response["result"]), "User response: action=decline");

    // SEP-1034 defaults and SEP-1330 enums (the schema validator checks each form).
    let r = call(&mut s, 112, "test_elicitation_sep1034_defaults", json!({}), |asked| {
        let p = &asked["params"]["requestedSchema"]["properties"];
        assert_eq!(p["name"]["default"], "John Doe");
        assert_eq!((p["age"]["type"].as_str(), p["age"]["default"].as_i64()), (Some("integer"), Some(30)));
        assert_eq!(p["score"]["default"], 95.5);
        assert_eq!(p["status"]["default"], "active");
        assert_eq!(p["verified"]["default"], true);
        json!({"action": "accept", "content": {"name": "Jane", "age": 25, "score": 88.0, "status": "inactive", "verified": false}})
    })
    .await;
    assert!(
        text(&r.response["result"]).starts_with("Elicitation completed: action=\"accept\""),
        "{}",
        r.response
    );
    let r = call(
        &mut s,
        113,
        "test_elicitation_sep1330_enums",
        json!({}),
        |asked| {
            let p = &asked["params"]["requestedSchema"]["properties"];
            assert_eq!(p["untitledSingle"]["enum"].as_array().unwrap().len(), 3);
            assert_eq!(p["titledSingle"]["oneOf"][0]["title"], "First Option");
            assert_eq!(p["legacyEnum"]["enumNames"][2], "Option Three");
            assert_eq!(p["untitledMulti"]["items"]["enum"][0], "option1");
            assert_eq!(p["titledMulti"]["items"]["anyOf"][1]["const"], "value2");
            json!({"action": "cancel"})
        },
    )
    .await;
    assert!(
        text(&r.response["result"]).contains("cancel"),
        "{}",
        r.response
    );

    // The input-required tools work on this era too: each ask is a request awaited in place.
    let r = call(
        &mut s,
        114,
        "test_input_required_result_multi_round",
        json!({}),
        |asked| match asked["params"]["message"].as_str().unwrap() {
            "Step 1: What is your name?" => {
                json!({"action": "accept", "content": {"name": "Alice"}})
            }
            _ => json!({"action": "accept", "content": {"color": "blue"}}),
        },
    )
    .await;
    assert_eq!(r.asked.len(), 2);
    assert_eq!(
        text(&r.response["result"]),
        "Multi-round complete for Alice who likes blue"
    );
    let r = call(&mut s, 115, "test_input_required_result_multiple_inputs", json!({}), |asked| {
        match asked["method"].as_str().unwrap() {
            "elicitation/create" => json!({"action": "accept", "content": {"name": "Bob"}}),
            "sampling/createMessage" => json!({"role": "assistant", "content": {"type": "text", "text": "Hi!"}, "model": "m"}),
            _ => json!({"roots": [{"uri": "file:///a"}, {"uri": "file:///b"}]}),
        }
    })
    .await;
    assert_eq!(
        text(&r.response["result"]),
        "Name: Bob; Greeting: Hi!; Roots: 2"
    );
    let r = call(
        &mut s,
        116,
        "test_input_required_result_request_state",
        json!({}),
        |_| json!({"action": "accept", "content": {"ok": true}}),
    )
    .await;
    assert!(
        text(&r.response["result"]).starts_with("state-ok"),
        "{}",
        r.response
    );

    // The destructive tool: the authorizer asks; approve runs it, decline denies it.
    let r = call(
        &mut s,
        117,
        "add_note",
        json!({"id": "tmp", "text": "to delete"}),
        no_questions,
    )
    .await;
    assert_eq!(r.response["result"]["structuredContent"]["id"], "tmp");
    let r = call(&mut s, 118, "delete_note", json!({"id": "tmp"}), |asked| {
        assert_eq!(asked["method"], "elicitation/create");
        json!({"action": "decline"})
    })
    .await;
    assert_eq!(r.response["result"]["isError"], true);
    let r = call(
        &mut s,
        119,
        "delete_note",
        json!({"id": "tmp"}),
        |_| json!({"action": "accept", "content": {"approve": true}}),
    )
    .await;
    assert_eq!(text(&r.response["result"]), "deleted note tmp");

    // The ledger counts the charges that ran: a declined one never, an approved one once.
    for (id, answer) in [
        (120, json!({"action": "decline"})),
        (
            121,
            json!({"action": "accept", "content": {"approve": true}}),
        ),
    ] {
        let answer = answer.clone();
        call(
            &mut s,
            id,
            "charge",
            json!({"account": "acme", "id": id}),
            move |_| answer.clone(),
        )
        .await;
    }
    let r = s
        .request("resources/read", json!({"uri": "ledger://acme"}))
        .await;
    let entry: Value =
        serde_json::from_str(r["result"]["contents"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(entry, json!({"charges": 1, "idSum": 121}));

    // Resources: text, binary, template, subscription to the one that changes.
    let r = s.request("resources/list", json!({})).await;
    let uris: Vec<&str> = r["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    for uri in [
        "test://static-text",
        "test://static-binary",
        "test://watched-resource",
    ] {
        assert!(uris.contains(&uri), "{uri} missing from {uris:?}");
    }
    let r = s
        .request("resources/read", json!({"uri": "test://static-text"}))
        .await;
    assert_eq!(r["result"]["contents"][0]["mimeType"], "text/plain");
    assert_eq!(
        r["result"]["contents"][0]["text"],
        "This is the content of the static text resource."
    );
    let r = s
        .request("resources/read", json!({"uri": "test://static-binary"}))
        .await;
    assert_eq!(r["result"]["contents"][0]["mimeType"], "image/png");
    assert!(
        r["result"]["contents"][0]["blob"]
            .as_str()
            .unwrap()
            .starts_with("iVBORw0KGgo")
    );
    let r = s.request("resources/templates/list", json!({})).await;
    assert!(
        r["result"]["resourceTemplates"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["uriTemplate"] == "test://template/{id}/data")
    );
    let r = s
        .request("resources/read", json!({"uri": "test://template/123/data"}))
        .await;
    let data: Value =
        serde_json::from_str(r["result"]["contents"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(
        data,
        json!({"id": "123", "templateTest": true, "data": "Data for ID: 123"})
    );
    let r = s
        .request(
            "resources/read",
            json!({"uri": "test://nonexistent-resource-for-conformance-testing"}),
        )
        .await;
    assert_eq!(r["error"]["code"], -32002);
    assert_eq!(
        r["error"]["data"]["uri"],
        "test://nonexistent-resource-for-conformance-testing"
    );

    let r = s
        .request(
            "resources/subscribe",
            json!({"uri": "test://watched-resource"}),
        )
        .await;
    assert_eq!(r["result"], json!({}));
    let r = call(
        &mut s,
        120,
        "test_update_watched_resource",
        json!({}),
        no_questions,
    )
    .await;
    let updated = r.notifications.iter().chain(s.received.iter()).any(|n| {
        n["method"] == "notifications/resources/updated"
            && n["params"]["uri"] == "test://watched-resource"
    });
    assert!(updated, "no resources/updated after the change");
    let r = s
        .request("resources/read", json!({"uri": "test://watched-resource"}))
        .await;
    assert_eq!(
        r["result"]["contents"][0]["text"],
        "Watched resource content (revision 1)"
    );
    let r = s
        .request(
            "resources/unsubscribe",
            json!({"uri": "test://watched-resource"}),
        )
        .await;
    assert_eq!(r["result"], json!({}));

    // Prompts.
    let r = s.request("prompts/list", json!({})).await;
    for prompt in r["result"]["prompts"].as_array().unwrap() {
        assert!(
            prompt["description"]
                .as_str()
                .is_some_and(|d| !d.is_empty()),
            "{prompt}"
        );
    }
    let r = s
        .request("prompts/get", json!({"name": "test_simple_prompt"}))
        .await;
    assert_eq!(
        r["result"]["messages"][0]["content"]["text"],
        "This is a simple prompt for testing."
    );
    let r = s
        .request("prompts/get", json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": "hello", "arg2": "world"}}))
        .await;
    assert_eq!(
        r["result"]["messages"][0]["content"]["text"],
        "Prompt with arguments: arg1='hello', arg2='world'"
    );
    let r = s
        .request("prompts/get", json!({"name": "test_prompt_with_embedded_resource", "arguments": {"resourceUri": "test://example-resource"}}))
        .await;
    assert_eq!(
        r["result"]["messages"][0]["content"]["resource"]["uri"],
        "test://example-resource"
    );
    assert_eq!(r["result"]["messages"][1]["content"]["type"], "text");
    let r = s
        .request("prompts/get", json!({"name": "test_prompt_with_image"}))
        .await;
    assert_eq!(r["result"]["messages"][0]["content"]["type"], "image");
    assert_eq!(
        r["result"]["messages"][0]["content"]["mimeType"],
        "image/png"
    );
    let r = s
        .request(
            "prompts/get",
            json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": "x"}}),
        )
        .await;
    assert_eq!(r["error"]["code"], -32602, "{r}");

    // Completion: the suite's target, and a template variable.
    let r = s
        .request(
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
                   "argument": {"name": "arg1", "value": "a"}}),
        )
        .await;
    assert_eq!(r["result"]["completion"]["values"], json!(["alpha"]));
    let r = s
        .request(
            "completion/complete",
            json!({"ref": {"type": "ref/resource", "uri": "note://{id}"},
                   "argument": {"name": "id", "value": "wel"}}),
        )
        .await;
    assert_eq!(r["result"]["completion"]["values"], json!(["welcome"]));

    // A list change reaches the client.
    let r = call(
        &mut s,
        121,
        "test_trigger_tool_change",
        json!({}),
        no_questions,
    )
    .await;
    assert_eq!(
        text(&r.response["result"]),
        "Tool list changed: added test_dynamic_tool"
    );
    let notified = r
        .notifications
        .iter()
        .chain(s.received.iter())
        .any(|n| n["method"] == "notifications/tools/list_changed");
    assert!(notified, "no tools/list_changed");
    assert!(
        names(&s.request("tools/list", json!({})).await, "tools")
            .contains(&"test_dynamic_tool".to_owned())
    );
    let r = call(
        &mut s,
        122,
        "test_trigger_tool_change",
        json!({}),
        no_questions,
    )
    .await;
    assert_eq!(
        text(&r.response["result"]),
        "Tool list changed: removed test_dynamic_tool"
    );
    let r = call(
        &mut s,
        123,
        "test_trigger_prompt_change",
        json!({}),
        no_questions,
    )
    .await;
    assert_eq!(
        text(&r.response["result"]),
        "Prompt list changed: added test_dynamic_prompt"
    );
    assert!(
        names(&s.request("prompts/list", json!({})).await, "prompts")
            .contains(&"test_dynamic_prompt".to_owned())
    );

    s.close_stdin().await;
    assert!(
        s.wait_exit(Duration::from_secs(3))
            .await
            .is_some_and(|st| st.success())
    );
}

/// A client that declared nothing: tools that need a capability say so in their result.
async fn handshake_without_capabilities(wiring: Wiring) {
    let mut s = spawn(wiring);
    s.initialize("2025-06-18", json!({})).await;
    let r = call(
        &mut s,
        1,
        "test_missing_capability",
        json!({}),
        no_questions,
    )
    .await;
    assert_eq!(r.response["result"]["isError"], true);
    assert_eq!(
        text(&r.response["result"]),
        "this tool needs a client that supports sampling"
    );
    let r = call(
        &mut s,
        2,
        "test_sampling",
        json!({"prompt": "x"}),
        no_questions,
    )
    .await;
    assert_eq!(r.response["result"]["isError"], true);
    let r = call(
        &mut s,
        3,
        "test_input_required_result_capabilities",
        json!({}),
        no_questions,
    )
    .await;
    assert_eq!(
        text(&r.response["result"]),
        "No supported capabilities declared"
    );
    // The guarded tool is not even listed to a client that cannot be asked.
    let tools = s.request("tools/list", json!({})).await;
    assert!(!names(&tools, "tools").contains(&"delete_note".to_owned()));
}

#[tokio::test]
async fn the_handshake_era_fixtures_over_pipes_and_socket_pairs() {
    handshake_session(Wiring::Pipes).await;
    handshake_session(Wiring::SocketPair).await;
    handshake_without_capabilities(Wiring::Pipes).await;
}

/// `params` with the 2026-07-28 per-request `_meta`.
fn stateless(mut params: Value, capabilities: Value) -> Value {
    let meta = params
        .as_object_mut()
        .unwrap()
        .entry("_meta")
        .or_insert_with(|| json!({}));
    meta["io.modelcontextprotocol/protocolVersion"] = json!("2026-07-28");
    meta["io.modelcontextprotocol/clientCapabilities"] = capabilities;
    meta["io.modelcontextprotocol/clientInfo"] = json!({"name": "wire-test", "version": "0"});
    params
}

/// The suite's default capabilities on 2026-07-28.
fn all_caps() -> Value {
    json!({"sampling": {}, "elicitation": {}, "roots": {}})
}

/// A 2026-07-28 tools/call with the suite's capabilities.
async fn call_stateless(s: &mut StdioServer, name: &str, extra: Value) -> Value {
    let mut params = json!({"name": name, "arguments": {}});
    if let (Some(p), Value::Object(extra)) = (params.as_object_mut(), extra) {
        p.extend(extra);
    }
    s.request("tools/call", stateless(params, all_caps())).await
}

fn accept(content: Value) -> Value {
    json!({"action": "accept", "content": content})
}

/// The response to `id`, skipping notifications still queued from earlier requests.
async fn response_to(s: &mut StdioServer, id: &str) -> Value {
    loop {
        let m = s.recv().await;
        if m.get("method").is_none() && m["id"] == id {
            return m;
        }
        assert!(m.get("id").is_none(), "unexpected {m}");
    }
}

/// The next notification that is not progress or a log (left over from earlier requests).
async fn next_with_method(s: &mut StdioServer) -> Value {
    loop {
        let m = s.recv().await;
        let method = m["method"].as_str().unwrap_or_default();
        if method != "notifications/progress" && method != "notifications/message" {
            return m;
        }
    }
}

async fn stateless_session(wiring: Wiring) {
    let mut s = spawn(wiring);
    s.set_version("2026-07-28");

    let d = s
        .request("server/discover", stateless(json!({}), json!({})))
        .await;
    assert_eq!(d["result"]["supportedVersions"], json!(["2026-07-28"]));
    assert_eq!(d["result"]["capabilities"]["tools"]["listChanged"], true);
    assert_eq!(d["result"]["capabilities"]["prompts"]["listChanged"], true);
    assert!(
        d["result"]["ttlMs"].is_u64() && d["result"]["cacheScope"].is_string(),
        "{d}"
    );

    let tools = s
        .request("tools/list", stateless(json!({}), json!({})))
        .await;
    assert_eq!(tools["result"]["resultType"], "complete");
    let tool_names = names(&tools, "tools");
    for expected in [
        "test_missing_capability",
        "test_streaming_elicitation",
        "test_logging_tool",
        "test_input_required_result_elicitation",
        "test_input_required_result_capabilities",
        "json_schema_2020_12_tool",
    ] {
        assert!(
            tool_names.iter().any(|n| n == expected),
            "{expected} missing"
        );
    }
    // Same order, three times.
    for _ in 0..2 {
        let again = s
            .request("tools/list", stateless(json!({}), json!({})))
            .await;
        assert_eq!(names(&again, "tools"), tool_names);
    }
    let prompts = s
        .request("prompts/list", stateless(json!({}), json!({})))
        .await;
    assert!(names(&prompts, "prompts").contains(&"test_input_required_result_prompt".to_owned()));

    // Content and progress on this era.
    let r = call_stateless(&mut s, "test_image_content", json!({})).await;
    assert_eq!(r["result"]["resultType"], "complete");
    assert_eq!(r["result"]["content"][0]["type"], "image");
    let before = s.received.len();
    let r = call_stateless(
        &mut s,
        "test_tool_with_progress",
        json!({"_meta": {"progressToken": 7}}),
    )
    .await;
    assert_eq!(r["result"]["resultType"], "complete");
    let progress = s.received[before..]
        .iter()
        .filter(|m| m["method"] == "notifications/progress" && m["params"]["progressToken"] == 7)
        .count();
    assert_eq!(progress, 3);

    // Logs only when the request named a level.
    let before = s.received.len();
    call_stateless(&mut s, "test_logging_tool", json!({})).await;
    assert!(
        !s.received[before..]
            .iter()
            .any(|m| m["method"] == "notifications/message")
    );
    let before = s.received.len();
    call_stateless(
        &mut s,
        "test_logging_tool",
        json!({"_meta": {"io.modelcontextprotocol/logLevel": "debug"}}),
    )
    .await;
    assert!(
        s.received[before..]
            .iter()
            .any(|m| m["method"] == "notifications/message")
    );

    // A required capability that was not declared: -32021 with a ClientCapabilities object.
    let r = s
        .request(
            "tools/call",
            stateless(
                json!({"name": "test_missing_capability", "arguments": {}}),
                json!({}),
            ),
        )
        .await;
    assert_eq!(r["error"]["code"], -32021, "{r}");
    assert_eq!(
        r["error"]["data"]["requiredCapabilities"],
        json!({"sampling": {}})
    );
    let r = call_stateless(&mut s, "test_missing_capability", json!({})).await;
    assert_eq!(text(&r["result"]), "Success: the client declared sampling");

    // Elicitation in two rounds.
    let r1 = call_stateless(&mut s, "test_input_required_result_elicitation", json!({})).await;
    assert_eq!(r1["result"]["resultType"], "input_required");
    let question = &r1["result"]["inputRequests"]["user_name"];
    assert_eq!(question["method"], "elicitation/create");
    assert_eq!(question["params"]["message"], "What is your name?");
    assert_eq!(
        question["params"]["requestedSchema"]["required"],
        json!(["name"])
    );
    let r2 = call_stateless(
        &mut s,
        "test_input_required_result_elicitation",
        json!({"inputResponses": {"user_name": accept(json!({"name": "Alice"}))},
               "requestState": r1["result"]["requestState"]}),
    )
    .await;
    assert_eq!(r2["result"]["resultType"], "complete");
    assert_eq!(text(&r2["result"]), "Hello, Alice!");
    // Answers without the state, extra keys ignored; a wrong key or a malformed answer is
    // asked again; a null inputResponses is an error.
    let r = call_stateless(
        &mut s,
        "test_input_required_result_elicitation",
        json!({"inputResponses": {"user_name": accept(json!({"name": "Bo"})), "unknown_extra_key": accept(json!({"foo": "bar"}))}}),
    )
    .await;
    assert_eq!(text(&r["result"]), "Hello, Bo!");
    for responses in [
        json!({"wrong_key": accept(json!({"data": "x"}))}),
        json!({"user_name": 12345}),
    ] {
        let r = call_stateless(
            &mut s,
            "test_input_required_result_elicitation",
            json!({"inputResponses": responses}),
        )
        .await;
        assert_eq!(r["result"]["resultType"], "input_required", "{r}");
    }
    s.send(json!({"jsonrpc": "2.0", "id": "null-responses", "method": "tools/call",
                  "params": stateless(json!({"name": "test_input_required_result_elicitation", "arguments": {}, "inputResponses": null}), all_caps())}))
        .await;
    let r = response_to(&mut s, "null-responses").await;
    assert!(
        r.get("error").is_some() || r["result"]["resultType"] == "input_required",
        "{r}"
    );

    // Sampling and roots.
    let r1 = call_stateless(&mut s, "test_input_required_result_sampling", json!({})).await;
    let q = &r1["result"]["inputRequests"]["capital_question"];
    assert_eq!(
        (q["method"].as_str(), q["params"]["maxTokens"].as_u64()),
        (Some("sampling/createMessage"), Some(100))
    );
    let r2 = call_stateless(
        &mut s,
        "test_input_required_result_sampling",
        json!({"inputResponses": {"capital_question": {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m", "stopReason": "endTurn"}},
               "requestState": r1["result"]["requestState"]}),
    )
    .await;
    assert_eq!(text(&r2["result"]), "Sampling result: Paris");
    let r1 = call_stateless(&mut s, "test_input_required_result_list_roots", json!({})).await;
    assert_eq!(
        r1["result"]["inputRequests"]["client_roots"]["method"],
        "roots/list"
    );
    let r2 = call_stateless(
        &mut s,
        "test_input_required_result_list_roots",
        json!({"inputResponses": {"client_roots": {"roots": [{"uri": "file:///test/root", "name": "Test Root"}]}},
               "requestState": r1["result"]["requestState"]}),
    )
    .await;
    assert_eq!(text(&r2["result"]), "Found 1 root(s): file:///test/root");

    // Request state carried and checked.
    let r1 = call_stateless(
        &mut s,
        "test_input_required_result_request_state",
        json!({}),
    )
    .await;
    assert!(r1["result"]["requestState"].is_string());
    assert!(r1["result"]["inputRequests"]["confirm"].is_object());
    let r2 = call_stateless(
        &mut s,
        "test_input_required_result_request_state",
        json!({"inputResponses": {"confirm": accept(json!({"ok": true}))}, "requestState": r1["result"]["requestState"]}),
    )
    .await;
    assert!(text(&r2["result"]).starts_with("state-ok"), "{r2}");

    // Three questions in one round.
    let r1 = call_stateless(
        &mut s,
        "test_input_required_result_multiple_inputs",
        json!({}),
    )
    .await;
    let asked = r1["result"]["inputRequests"].as_object().unwrap();
    let mut keys: Vec<&str> = asked.keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(keys, ["client_roots", "greeting", "user_name"]);
    let r2 = call_stateless(
        &mut s,
        "test_input_required_result_multiple_inputs",
        json!({"inputResponses": {
                  "user_name": accept(json!({"name": "Alice"})),
                  "greeting": {"role": "assistant", "content": {"type": "text", "text": "Hello there!"}, "model": "m"},
                  "client_roots": {"roots": [{"uri": "file:///r"}]}},
               "requestState": r1["result"]["requestState"]}),
    )
    .await;
    assert_eq!(
        text(&r2["result"]),
        "Name: Alice; Greeting: Hello there!; Roots: 1"
    );

    // Three rounds, the state changing each time.
    let r1 = call_stateless(&mut s, "test_input_required_result_multi_round", json!({})).await;
    assert!(r1["result"]["inputRequests"]["step1"].is_object());
    let r2 = call_stateless(
        &mut s,
        "test_input_required_result_multi_round",
        json!({"inputResponses": {"step1": accept(json!({"name": "Alice"}))}, "requestState": r1["result"]["requestState"]}),
    )
    .await;
    assert!(r2["result"]["inputRequests"]["step2"].is_object(), "{r2}");
    assert_ne!(r2["result"]["requestState"], r1["result"]["requestState"]);
    let r3 = call_stateless(
        &mut s,
        "test_input_required_result_multi_round",
        json!({"inputResponses": {"step2": accept(json!({"color": "blue"}))}, "requestState": r2["result"]["requestState"]}),
    )
    .await;
    assert_eq!(
        text(&r3["result"]),
        "Multi-round complete for Alice who likes blue"
    );

    // Tampered state is refused.
    let r1 = call_stateless(
        &mut s,
        "test_input_required_result_tampered_state",
        json!({}),
    )
    .await;
    let tampered = format!(
        "{}-TAMPERED",
        r1["result"]["requestState"].as_str().unwrap()
    );
    let r2 = call_stateless(
        &mut s,
        "test_input_required_result_tampered_state",
        json!({"inputResponses": {"confirm": accept(json!({"ok": true}))}, "requestState": tampered}),
    )
    .await;
    assert_eq!(r2["error"]["code"], -32602, "{r2}");

    // Only what the client declared is asked.
    let r = s
        .request(
            "tools/call",
            stateless(
                json!({"name": "test_input_required_result_capabilities", "arguments": {}}),
                json!({"sampling": {}}),
            ),
        )
        .await;
    let asked: Vec<&String> = r["result"]["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(asked, ["sample_input"]);

    // The streaming tool asks through the result, never with a request of its own.
    let r = s
        .request(
            "tools/call",
            stateless(
                json!({"name": "test_streaming_elicitation", "arguments": {}}),
                json!({"elicitation": {}}),
            ),
        )
        .await;
    assert_eq!(r["result"]["resultType"], "input_required");
    assert!(
        !s.received
            .iter()
            .any(|m| m.get("method").is_some() && m.get("id").is_some())
    );

    // A prompt that asks first.
    let r1 = s
        .request(
            "prompts/get",
            stateless(
                json!({"name": "test_input_required_result_prompt"}),
                all_caps(),
            ),
        )
        .await;
    assert_eq!(
        r1["result"]["inputRequests"]["user_context"]["method"],
        "elicitation/create"
    );
    let r2 = s
        .request(
            "prompts/get",
            stateless(
                json!({"name": "test_input_required_result_prompt",
                       "inputResponses": {"user_context": accept(json!({"context": "test context"}))},
                       "requestState": r1["result"]["requestState"]}),
                all_caps(),
            ),
        )
        .await;
    assert_eq!(
        r2["result"]["messages"][0]["content"]["text"],
        "Prompt with context: test context"
    );

    // Resources: cache hints on reads; a missing resource is -32602 with its uri.
    let r = s
        .request(
            "resources/read",
            stateless(json!({"uri": "test://static-text"}), json!({})),
        )
        .await;
    assert!(
        r["result"]["ttlMs"].is_u64() && r["result"]["cacheScope"].is_string(),
        "{r}"
    );
    let r = s
        .request(
            "resources/read",
            stateless(
                json!({"uri": "test://nonexistent-resource-for-conformance-testing"}),
                json!({}),
            ),
        )
        .await;
    assert_eq!(r["error"]["code"], -32602);
    assert_eq!(
        r["error"]["data"]["uri"],
        "test://nonexistent-resource-for-conformance-testing"
    );
    let r = s
        .request(
            "completion/complete",
            stateless(
                json!({"ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
                          "argument": {"name": "arg1", "value": ""}}),
                json!({}),
            ),
        )
        .await;
    assert_eq!(
        r["result"]["completion"]["values"],
        json!(["alpha", "beta", "gamma"])
    );

    // Handshake-only methods do not exist on this era.
    for method in ["ping", "logging/setLevel", "resources/subscribe"] {
        let r = s.request(method, stateless(json!({}), json!({}))).await;
        assert_eq!(r["error"]["code"], -32601, "{method}: {r}");
    }

    // Listen streams get only what they asked for.
    s.send(json!({"jsonrpc": "2.0", "id": "prompts-only", "method": "subscriptions/listen",
                  "params": stateless(json!({"notifications": {"promptsListChanged": true}}), json!({}))}))
        .await;
    let ack = next_with_method(&mut s).await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "prompts-only"
    );
    s.send(json!({"jsonrpc": "2.0", "id": "tools", "method": "subscriptions/listen",
                  "params": stateless(json!({"notifications": {"toolsListChanged": true}}), json!({}))}))
        .await;
    let ack = next_with_method(&mut s).await;
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "tools"
    );
    let r = s
        .request(
            "tools/call",
            stateless(
                json!({"name": "test_trigger_tool_change", "arguments": {}}),
                json!({}),
            ),
        )
        .await;
    assert_eq!(r["result"]["resultType"], "complete");
    // Whatever arrived around the response (kept aside by `request`), then anything late.
    let mut seen = Vec::new();
    while let Some(m) = s.recv_within(Duration::from_millis(300)).await {
        seen.push(m);
    }
    let changes: Vec<&Value> = seen
        .iter()
        .filter(|m| m["method"] == "notifications/tools/list_changed")
        .collect();
    assert_eq!(changes.len(), 1, "{seen:?}");
    assert_eq!(
        changes[0]["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "tools"
    );

    s.close_stdin().await;
    assert!(s.wait_exit(Duration::from_secs(3)).await.is_some());
}

#[tokio::test]
async fn the_2026_07_28_fixtures_over_pipes_and_socket_pairs() {
    stateless_session(Wiring::Pipes).await;
    stateless_session(Wiring::SocketPair).await;
}
