//! Arguments a tool does not know are refused with an error naming them and the accepted
//! ones, unless the tool opts out; and each tool's `inputSchema` says which it is
//! (`additionalProperties: false` when refused, absent when allowed). Checked on the wire for
//! macro tools with plain parameters, `#[args]` struct tools, `ToolDef::from_fn` tools and
//! tools with a hand-written schema.

use mcp::prelude::*;
use mcp::registry::ToolArgs;
use mcp::testing::TestClient;
use mcp_tests::{Runs, first_text, validate_server_message};
use serde_json::{Value, json};

const V: &str = "2025-11-25";

/// Answers "pong".
#[tool(read_only)]
async fn ping() -> &'static str {
    "pong"
}

/// Adds two integers.
#[tool(read_only)]
async fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// Adds whatever it is given, ignoring what it does not know.
#[tool(read_only, allow_unknown_arguments)]
async fn lenient_add(a: i64, b: i64) -> i64 {
    a + b
}

/// Where to go.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Route {
    /// From here.
    from: String,
    /// To there.
    to: String,
}

/// Plans a route.
#[tool(read_only)]
async fn plan(#[args] r: Route) -> String {
    format!("{} -> {}", r.from, r.to)
}

mcp::server! {
    name: "unknown-arguments",
    tools: [ping, add, lenient_add, plan],
    configure: |b| b
        .tool(ToolDef::from_fn("route", "Plans a route.", |_ctx, r: Route| async move {
            format!("{} => {}", r.from, r.to)
        }))
        .tool(
            ToolDef::from_fn("loose_route", "Plans a route, loosely.", |_ctx, r: Route| async move {
                format!("{} ~> {}", r.from, r.to)
            })
            .allow_unknown_arguments(),
        ),
    main: false,
}

async fn client(server: &Server) -> TestClient {
    let mut c = TestClient::connect(server);
    c.initialize(json!({})).await.unwrap();
    c
}

/// Calls a tool and returns the whole result, checked against the schema.
async fn call(c: &mut TestClient, name: &str, arguments: Value) -> Value {
    let message = c
        .request_message("tools/call", json!({"name": name, "arguments": arguments}))
        .await
        .unwrap();
    validate_server_message(V, &message, Some("tools/call")).unwrap_or_else(|e| panic!("{e}"));
    message["result"].clone()
}

async fn input_schema(c: &mut TestClient, name: &str) -> Value {
    let tools = c.list_tools().await.unwrap();
    let tool = tools.iter().find(|t| t.name == name).expect("listed");
    tool.input_schema.to_value()
}

fn assert_refused(result: &Value, message: &str) {
    assert_eq!(result["isError"], true, "{result}");
    assert_eq!(first_text(result), message);
}

#[tokio::test]
async fn a_tool_without_arguments_refuses_any_and_says_it_takes_none() {
    let s = server();
    let mut c = client(&s).await;
    assert_eq!(
        input_schema(&mut c, "ping").await["additionalProperties"],
        false
    );
    let result = call(&mut c, "ping", json!({"verbose": true})).await;
    assert_refused(
        &result,
        "Unknown argument `verbose`; remove it. This tool takes no arguments.",
    );
    assert_eq!(first_text(&call(&mut c, "ping", json!({})).await), "pong");
}

#[tokio::test]
async fn unknown_arguments_are_refused_naming_them_and_the_accepted_ones() {
    let s = server();
    let mut c = client(&s).await;
    assert_eq!(
        input_schema(&mut c, "add").await["additionalProperties"],
        false
    );
    let result = call(&mut c, "add", json!({"a": 1, "b": 2, "c": 3})).await;
    assert_refused(
        &result,
        "Unknown argument `c`; remove it. Accepted: `a`, `b`.",
    );
    let result = call(&mut c, "add", json!({"a": 1, "b": 2, "x": 0, "y": 0})).await;
    assert_refused(
        &result,
        "Unknown arguments `x`, `y`; remove them. Accepted: `a`, `b`.",
    );
    // A wrong type is still explained first.
    let result = call(&mut c, "add", json!({"a": "one", "b": 2, "c": 3})).await;
    assert_refused(
        &result,
        "Argument `a` must be an integer, but got the string \"one\".",
    );
}

#[tokio::test]
async fn struct_tools_refuse_unknown_arguments_and_their_schemas_say_so() {
    let s = server();
    let mut c = client(&s).await;
    for name in ["plan", "route"] {
        let schema = input_schema(&mut c, name).await;
        assert_eq!(schema["additionalProperties"], false, "{name}: {schema}");
        let result = call(&mut c, name, json!({"from": "a", "to": "b", "via": "c"})).await;
        assert_refused(
            &result,
            "Unknown argument `via`; remove it. Accepted: `from`, `to`.",
        );
    }
    assert_eq!(
        first_text(&call(&mut c, "plan", json!({"from": "a", "to": "b"})).await),
        "a -> b"
    );
}

#[tokio::test]
async fn tools_that_opt_out_accept_unknown_arguments_and_their_schemas_say_so() {
    let s = server();
    let mut c = client(&s).await;
    for (name, args, expected) in [
        ("lenient_add", json!({"a": 1, "b": 2, "c": 3}), "3"),
        (
            "loose_route",
            json!({"from": "a", "to": "b", "via": "c"}),
            "a ~> b",
        ),
    ] {
        let schema = input_schema(&mut c, name).await;
        assert!(
            schema.get("additionalProperties").is_none(),
            "{name}: {schema}"
        );
        assert_eq!(first_text(&call(&mut c, name, args).await), expected);
    }
}

#[tokio::test]
async fn a_hand_written_schema_decides_for_a_handler_that_parses() {
    #[derive(serde::Deserialize)]
    struct Q {
        #[allow(dead_code)]
        q: String,
    }
    let runs = Runs::new();
    let handler = |runs: Runs| {
        move |_ctx: Ctx, args: ToolArgs| {
            let parsed = args.parse::<Q>();
            runs.bump();
            async move { parsed.map(|_| "ok").map_err(|e| e.to_string()) }
        }
    };
    let strict = json!({"type": "object", "properties": {"q": {"type": "string"}},
                        "required": ["q"], "additionalProperties": false});
    let open = json!({"type": "object", "properties": {"q": {"type": "string"}}});
    let s = Server::builder("hand-written", "0")
        .tool(ToolDef::new(
            "strict",
            "Strict.",
            strict.clone(),
            handler(runs.clone()),
        ))
        .tool(ToolDef::new(
            "open",
            "Open.",
            open.clone(),
            handler(runs.clone()),
        ))
        .build()
        .unwrap();
    let mut c = client(&s).await;
    assert_eq!(input_schema(&mut c, "strict").await, strict);
    assert_eq!(input_schema(&mut c, "open").await, open);
    let result = call(&mut c, "strict", json!({"q": "x", "page": 2})).await;
    assert_refused(
        &result,
        "Unknown argument `page`; remove it. Accepted: `q`.",
    );
    let result = call(&mut c, "open", json!({"q": "x", "page": 2})).await;
    assert_eq!(first_text(&result), "ok");
}
