//! The stateless 2026-07-28 revision on the Streamable HTTP endpoint, over real sockets:
//! the era chosen per request (beside handshake-era sessions on the same endpoint), the
//! validation order and its statuses, the mirrored headers (base64 form, `Mcp-Param-*`),
//! plain JSON and SSE answers, cancellation by closing the stream, `subscriptions/listen`,
//! and input-required rounds. Every message the server sends is checked against the
//! official 2026-07-28 schema.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcp::Server;
use mcp::context::{ClientCapability, Elicitation};
use mcp::prelude::*;
use mcp::registry::{PromptArgs, ToolArgs};
use mcp_tests::http::{
    HttpTestServer, MODERN, SseReader, StatelessHttp, WAIT, check_stateless, fixture, header_value,
    test_config,
};
use reqwest::StatusCode;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

#[derive(Deserialize, JsonSchema)]
struct Name {
    name: String,
}

/// How many `hang` or `hang_quiet` calls saw `ctx.cancelled()` fire (only the test of
/// cancellation calls them).
static SEEN_CANCELLED: AtomicUsize = AtomicUsize::new(0);

/// Counts how many times a handler's future was dropped before it finished.
#[derive(Clone, Default)]
struct Drops(Arc<AtomicUsize>);

impl Drops {
    fn get(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }

    async fn wait_for(&self, n: usize) {
        tokio::time::timeout(WAIT, async {
            while self.get() < n {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .expect("the handler was not dropped");
    }
}

struct OnDrop(Drops);

impl Drop for OnDrop {
    fn drop(&mut self) {
        self.0.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// The shared HTTP fixture, plus the tools these tests need: `route` (mirrors arguments
/// into `Mcp-Param-*` headers), `greet` and `two_step` (input-required rounds),
/// `needs_sampling`, `hang` and `hang_quiet` (never finish; count their drops and the
/// cancellations their Ctx sees),
/// `toggle_tool` (adds or removes a tool: tools list_changed), `touch` (resources/updated
/// for `test://static`), and the prompt `hello`.
fn server() -> (Server, Drops, Arc<AtomicUsize>) {
    let fx = fixture();
    let spent = fx.spent;
    let server = rebuilt(fx.server);
    let drops = Drops::default();
    let registry = server.registry();
    registry
        .register_tool(ToolDef::new(
            "route",
            "Echoes its arguments; region, count and verbose are mirrored in headers.",
            json!({
                "type": "object",
                "properties": {
                    "region": {"type": "string", "x-mcp-header": "Region"},
                    "count": {"type": "integer", "x-mcp-header": "Count"},
                    "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
                    "query": {"type": "string"}
                },
                "required": ["region"]
            }),
            |_ctx: Ctx, args: ToolArgs| async move { args.to_value().to_string() },
        ))
        .unwrap();
    registry
        .register_tool(ToolDef::from_fn(
            "greet",
            "Asks for a name, then greets.",
            |ctx: Ctx, _: NoArgs| async move {
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
        .unwrap();
    registry
        .register_tool(ToolDef::from_fn(
            "two_step",
            "Asks twice, keeping state between the rounds.",
            |ctx: Ctx, _: NoArgs| async move {
                let first = match ctx.elicit::<Name>("First name?").key("step1").await {
                    Ok(Elicitation::Accepted(n)) => n.name,
                    _ => return "stopped".to_owned(),
                };
                ctx.set_request_state(&json!({"first": first}));
                let last = match ctx.elicit::<Name>("Last name?").key("step2").await {
                    Ok(Elicitation::Accepted(n)) => n.name,
                    _ => return "stopped".to_owned(),
                };
                let kept: Option<Value> = ctx.request_state();
                format!(
                    "{first} {last} (kept {})",
                    kept.unwrap_or_default()["first"]
                )
            },
        ))
        .unwrap();
    registry
        .register_tool(ToolDef::from_fn(
            "needs_sampling",
            "Requires the sampling capability.",
            |ctx: Ctx, _: NoArgs| async move {
                ctx.require(ClientCapability::Sampling)
                    .await
                    .map(|_| "sampling available")
                    .map_err(|e| e.to_string())
            },
        ))
        .unwrap();
    for (name, chatty) in [("hang", true), ("hang_quiet", false)] {
        let drops = drops.clone();
        registry
            .register_tool(ToolDef::from_fn(
                name,
                "Never finishes.",
                move |ctx: Ctx, _: NoArgs| {
                    let guard = OnDrop(drops.clone());
                    // Work the tool hands off sees the cancellation through its Ctx.
                    let watcher = ctx.clone();
                    tokio::spawn(async move {
                        watcher.cancelled().await;
                        SEEN_CANCELLED.fetch_add(1, Ordering::SeqCst);
                    });
                    async move {
                        let _guard = guard;
                        if chatty {
                            ctx.progress(1.0, None, Some("started"));
                        }
                        std::future::pending::<()>().await;
                        "unreachable"
                    }
                },
            ))
            .unwrap();
    }
    registry
        .register_tool(ToolDef::from_fn(
            "toggle_tool",
            "Adds the tool `late`, or removes it.",
            |ctx: Ctx, _: NoArgs| async move {
                let server = ctx.server();
                let registry = server.registry();
                if registry.remove_tool("late") {
                    "removed"
                } else {
                    registry
                        .register_tool(ToolDef::from_fn(
                            "late",
                            "Added at run time.",
                            |_c, _: NoArgs| async { "late" },
                        ))
                        .map(|_| "added")
                        .unwrap_or("failed")
                }
            },
        ))
        .unwrap();
    registry
        .register_tool(ToolDef::from_fn(
            "touch",
            "Says test://static changed.",
            |ctx: Ctx, _: NoArgs| async move {
                ctx.server().resource_updated("test://static");
                "touched"
            },
        ))
        .unwrap();
    (server, drops, spent)
}

/// The fixture's tools and resources on a server that also offers prompts.
fn rebuilt(fixture: Server) -> Server {
    let snapshot = fixture.registry().snapshot();
    let mut builder = Server::builder("http-fixture", "1.0.0");
    for tool in snapshot.tools() {
        builder = builder.tool(tool.clone());
    }
    for resource in snapshot.resources() {
        builder = builder.resource(resource.clone());
    }
    builder
        .prompt(
            PromptDef::new(
                "hello",
                "Greets someone.",
                |_c: Ctx, a: PromptArgs| async move {
                    format!("Hello, {}!", a.get("who").unwrap_or("world"))
                },
            )
            .argument("who", "Who to greet.", false),
        )
        .authorizer(mcp::auth::policy(|req| {
            if req.name() == "spend" {
                mcp::auth::Decision::ask("Spend the money?")
            } else {
                mcp::auth::Decision::Allow
            }
        }))
        .read_authorizer(mcp::auth::allow_all())
        .build()
        .expect("the server builds")
}

async fn started() -> (HttpTestServer, Drops, Arc<AtomicUsize>) {
    let (server, drops, spent) = server();
    let srv = HttpTestServer::start(server, test_config()).await;
    (srv, drops, spent)
}

fn code(v: &Value) -> i64 {
    v["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("no error code in {v}"))
}

fn text(response: &Value) -> String {
    response["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {response}"))
        .to_owned()
}

fn call(name: &str, arguments: Value) -> Value {
    json!({"name": name, "arguments": arguments})
}

/// Posts a raw body with exactly the given metadata headers; the answer, checked.
async fn raw(
    c: &StatelessHttp,
    method: &str,
    body: Value,
    headers: &[(&str, &str)],
) -> mcp_tests::http::Exchange {
    let mut b = c.post_raw(&body);
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    let response = b.send().await.expect("POST");
    c.read(method, response).await
}

/// A `tools/list` body as a conforming client builds it.
fn body_of(c: &StatelessHttp) -> Value {
    body(c, 9, "tools/list", json!({}))
}

/// A request body as a conforming client builds it.
fn body(c: &StatelessHttp, id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": c.with_meta(params)})
}

#[tokio::test]
async fn requests_are_served_without_a_session_as_plain_json() {
    let (srv, _, _) = started().await;
    let c = srv.stateless();
    let ex = c.exchange(json!(1), "server/discover", json!({})).await;
    assert_eq!(ex.status, StatusCode::OK);
    assert!(ex.content_type.starts_with("application/json"));
    let result = &ex.response["result"];
    assert_eq!(result["supportedVersions"], json!([MODERN]));
    assert_eq!(result["resultType"], "complete");
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "http-fixture"
    );
    let sum = c
        .request(
            json!("a"),
            "tools/call",
            call("add", json!({"a": 2, "b": 3})),
        )
        .await;
    assert_eq!(sum["id"], "a");
    assert_eq!(text(&sum), "5");
    // clientInfo is optional.
    let ex = raw(
        &c,
        "tools/list",
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {}}}}),
        &[
            ("mcp-protocol-version", MODERN),
            ("mcp-method", "tools/list"),
        ],
    )
    .await;
    assert_eq!(ex.status, StatusCode::OK);
    assert!(ex.response["result"]["tools"].is_array());
    // A resource, named in Mcp-Name.
    let read = c
        .request(json!(3), "resources/read", json!({"uri": "test://static"}))
        .await;
    assert_eq!(read["result"]["contents"][0]["text"], "static text");
}

#[tokio::test]
async fn meta_without_the_version_header_is_400_32020() {
    let (srv, _, _) = started().await;
    let c = srv.stateless();
    let ex = raw(
        &c,
        "tools/list",
        body(&c, 7, "tools/list", json!({})),
        &[("mcp-method", "tools/list")],
    )
    .await;
    assert_eq!(ex.status, StatusCode::BAD_REQUEST);
    assert_eq!(code(&ex.response), -32020);
    assert_eq!(ex.response["id"], 7);
    assert!(
        ex.response["error"]["message"]
            .as_str()
            .unwrap()
            .contains("MCP-Protocol-Version")
    );
}

#[tokio::test]
async fn missing_meta_fields_are_400_32602_with_the_id() {
    let (srv, _, _) = started().await;
    let c = srv.stateless();
    let std = [
        ("mcp-protocol-version", MODERN),
        ("mcp-method", "server/discover"),
    ];
    let cases = [
        (101, json!({})),
        (
            102,
            json!({"_meta": {"io.modelcontextprotocol/clientCapabilities": {}}}),
        ),
        (
            104,
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN}}),
        ),
        (
            105,
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": []}}),
        ),
        (
            106,
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/logLevel": "chatty"}}),
        ),
        // The reserved members in order, but in an array: no `_meta` at all.
        (107, json!({"_meta": [MODERN, {}]})),
    ];
    for (id, params) in cases {
        let ex = raw(
            &c,
            "server/discover",
            json!({"jsonrpc": "2.0", "id": id, "method": "server/discover", "params": params}),
            &std,
        )
        .await;
        assert_eq!(ex.status, StatusCode::BAD_REQUEST, "{id}: {}", ex.response);
        assert_eq!(code(&ex.response), -32602, "{id}");
        assert_eq!(ex.response["id"], id);
    }
    // No params at all, and params that are not an object.
    for (id, params) in [(110, None), (111, Some(json!([1, 2])))] {
        let mut message = json!({"jsonrpc": "2.0", "id": id, "method": "server/discover"});
        if let Some(p) = params {
            message["params"] = p;
        }
        let ex = raw(&c, "server/discover", message, &std).await;
        assert_eq!(ex.status, StatusCode::BAD_REQUEST);
        assert_eq!(code(&ex.response), -32602);
        assert_eq!(ex.response["id"], id);
    }
}

/// A labelled request and the headers it is sent with.
type Case = (&'static str, Value, Vec<(&'static str, String)>);

#[tokio::test]
async fn headers_must_mirror_the_body() {
    let (srv, _, _) = started().await;
    let c = srv.stateless();
    let add = call("add", json!({"a": 1, "b": 2}));
    let reject = |cases: Vec<Case>| {
        let c = c.clone();
        async move {
            for (label, message, headers) in cases {
                let method = message["method"].as_str().unwrap().to_owned();
                let mut b = c.post_raw(&message);
                for (k, v) in &headers {
                    b = b.header(*k, v.as_str());
                }
                let ex = c.read(&method, b.send().await.unwrap()).await;
                assert_eq!(
                    ex.status,
                    StatusCode::BAD_REQUEST,
                    "{label}: {}",
                    ex.response
                );
                assert_eq!(code(&ex.response), -32020, "{label}");
                assert_eq!(ex.response["id"], message["id"], "{label}");
            }
        }
    };
    let v = || ("mcp-protocol-version", MODERN.to_owned());
    let m = |s: &str| ("mcp-method", s.to_owned());
    let n = |s: &str| ("mcp-name", s.to_owned());
    let mut mismatched_version = body(&c, 1, "server/discover", json!({}));
    mismatched_version["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] =
        json!("v999.0.0");
    reject(vec![
        (
            "header version differs from _meta",
            mismatched_version,
            vec![v(), m("server/discover")],
        ),
        (
            "Mcp-Method missing",
            body(&c, 2, "tools/list", json!({})),
            vec![v()],
        ),
        (
            "Mcp-Method differs",
            body(&c, 3, "tools/list", json!({})),
            vec![v(), m("prompts/list")],
        ),
        (
            "Mcp-Method values are case-sensitive",
            body(&c, 4, "tools/list", json!({})),
            vec![v(), m("TOOLS/LIST")],
        ),
        (
            "Mcp-Name missing on tools/call",
            body(&c, 5, "tools/call", add.clone()),
            vec![v(), m("tools/call")],
        ),
        (
            "Mcp-Name differs on tools/call",
            body(&c, 6, "tools/call", add.clone()),
            vec![v(), m("tools/call"), n("wrong_tool_name")],
        ),
        (
            "Mcp-Name differs on prompts/get",
            body(&c, 7, "prompts/get", json!({"name": "hello"})),
            vec![v(), m("prompts/get"), n("goodbye")],
        ),
        (
            "Mcp-Name differs on resources/read",
            body(&c, 8, "resources/read", json!({"uri": "test://static"})),
            vec![v(), m("resources/read"), n("test://other")],
        ),
        (
            "Mcp-Name sent twice",
            body(&c, 9, "tools/call", add.clone()),
            vec![v(), m("tools/call"), n("add"), n("add")],
        ),
        (
            "Mcp-Name without a name in the body",
            body(&c, 10, "tools/call", json!({"arguments": {}})),
            vec![v(), m("tools/call"), n("add")],
        ),
    ])
    .await;

    // Header names are case-insensitive, surrounding whitespace is not part of a value,
    // and Mcp-Name may use the base64 form.
    for headers in [
        vec![
            ("MCP-PROTOCOL-VERSION", MODERN),
            ("MCP-METHOD", "tools/call"),
            ("MCP-NAME", "add"),
        ],
        vec![
            ("mcp-protocol-version", MODERN),
            ("mcp-method", "tools/call"),
            ("mcp-name", "  add  "),
        ],
        vec![
            ("mcp-protocol-version", MODERN),
            ("mcp-method", "tools/call"),
            ("mcp-name", "=?base64?YWRk?="),
        ],
    ] {
        let ex = raw(
            &c,
            "tools/call",
            body(&c, 20, "tools/call", add.clone()),
            &headers,
        )
        .await;
        assert_eq!(ex.status, StatusCode::OK, "{headers:?}: {}", ex.response);
        assert_eq!(text(&ex.response), "3");
    }
    // A name outside the safe set travels in base64 and is compared decoded.
    let ex = raw(
        &c,
        "resources/read",
        body(&c, 21, "resources/read", json!({"uri": "test://static"})),
        &[
            ("mcp-protocol-version", MODERN),
            ("mcp-method", "resources/read"),
            ("mcp-name", &header_value("test://static")),
        ],
    )
    .await;
    assert_eq!(ex.status, StatusCode::OK);
    let hello = c
        .request(
            json!(22),
            "prompts/get",
            json!({"name": "hello", "arguments": {"who": "Ada"}}),
        )
        .await;
    assert_eq!(
        hello["result"]["messages"][0]["content"]["text"],
        "Hello, Ada!"
    );
}

/// A request whose `_meta` and `MCP-Protocol-Version` header both name `version`.
async fn claiming_version(
    c: &StatelessHttp,
    id: i64,
    method: &str,
    version: &str,
) -> mcp_tests::http::Exchange {
    let mut message = body(c, id, method, json!({}));
    message["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!(version);
    raw(
        c,
        method,
        message,
        &[("mcp-protocol-version", version), ("mcp-method", method)],
    )
    .await
}

#[tokio::test]
async fn unsupported_versions_are_400_32022_naming_the_supported_ones() {
    let (srv, _, _) = started().await;
    let c = srv.stateless();
    let discovered = c.request(json!(1), "server/discover", json!({})).await;
    let ex = claiming_version(&c, 301, "server/discover", "v999.0.0").await;
    assert_eq!(ex.status, StatusCode::BAD_REQUEST);
    assert_eq!(code(&ex.response), -32022);
    assert_eq!(ex.response["id"], 301);
    assert_eq!(ex.response["error"]["data"]["requested"], "v999.0.0");
    assert_eq!(
        ex.response["error"]["data"]["supported"],
        discovered["result"]["supportedVersions"]
    );
    // A handshake revision named in _meta is not one this era speaks either.
    let ex = claiming_version(&c, 302, "tools/list", "2025-11-25").await;
    assert_eq!(ex.status, StatusCode::BAD_REQUEST);
    assert_eq!(code(&ex.response), -32022);
}

#[tokio::test]
async fn unknown_and_handshake_only_methods_are_404_32601() {
    let (srv, _, _) = started().await;
    let c = srv.stateless();
    for (id, method) in [
        (500, "initialize"),
        (501, "ping"),
        (502, "logging/setLevel"),
        (503, "resources/subscribe"),
        (504, "resources/unsubscribe"),
        (601, "unknown/method"),
    ] {
        let ex = c.exchange(json!(id), method, json!({})).await;
        assert_eq!(
            ex.status,
            StatusCode::NOT_FOUND,
            "{method}: {}",
            ex.response
        );
        assert_eq!(code(&ex.response), -32601, "{method}");
        assert_eq!(ex.response["id"], id);
        assert!(ex.content_type.starts_with("application/json"));
    }
}

#[tokio::test]
async fn a_missing_client_capability_is_400_32021() {
    let (srv, _, _) = started().await;
    let c = srv.stateless();
    let ex = c
        .exchange(json!(401), "tools/call", call("needs_sampling", json!({})))
        .await;
    assert_eq!(ex.status, StatusCode::BAD_REQUEST, "{}", ex.response);
    assert_eq!(code(&ex.response), -32021);
    assert_eq!(ex.response["id"], 401);
    assert_eq!(
        ex.response["error"]["data"]["requiredCapabilities"],
        json!({"sampling": {}})
    );
    let sampler = c.clone().with_capabilities(json!({"sampling": {}}));
    let ok = sampler
        .request(json!(402), "tools/call", call("needs_sampling", json!({})))
        .await;
    assert_eq!(text(&ok), "sampling available");
}

#[tokio::test]
async fn the_first_failing_rule_decides_the_answer() {
    let (srv, _, _) = started().await;
    let c = srv.stateless();
    // Missing clientCapabilities, a wrong Mcp-Method and an unknown version: -32602.
    let ex = raw(
        &c,
        "tools/list",
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": "v999"}}}),
        &[
            ("mcp-protocol-version", "v999"),
            ("mcp-method", "prompts/list"),
        ],
    )
    .await;
    assert_eq!(
        (ex.status, code(&ex.response)),
        (StatusCode::BAD_REQUEST, -32602)
    );
    // A wrong Mcp-Method with an unknown version: -32020.
    let mut message = body(&c, 2, "tools/list", json!({}));
    message["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("v999");
    let ex = raw(
        &c,
        "tools/list",
        message.clone(),
        &[
            ("mcp-protocol-version", "v999"),
            ("mcp-method", "prompts/list"),
        ],
    )
    .await;
    assert_eq!(
        (ex.status, code(&ex.response)),
        (StatusCode::BAD_REQUEST, -32020)
    );
    // An unknown version with an unknown method: -32022.
    message["method"] = json!("no/such");
    let ex = raw(
        &c,
        "no/such",
        message,
        &[("mcp-protocol-version", "v999"), ("mcp-method", "no/such")],
    )
    .await;
    assert_eq!(
        (ex.status, code(&ex.response)),
        (StatusCode::BAD_REQUEST, -32022)
    );
    // An unknown tool is an ordinary error, answered 200.
    let ex = c
        .exchange(json!(3), "tools/call", call("no_such_tool", json!({})))
        .await;
    assert_eq!((ex.status, code(&ex.response)), (StatusCode::OK, -32602));
}

/// Calls `route` with `arguments` and the given `Mcp-Param-*` headers.
async fn route(
    c: &StatelessHttp,
    arguments: Value,
    params: &[(&str, &str)],
) -> mcp_tests::http::Exchange {
    let mut b = c.post(json!(1), "tools/call", call("route", arguments));
    for (k, v) in params {
        b = b.header(format!("mcp-param-{k}"), *v);
    }
    c.read("tools/call", b.send().await.unwrap()).await
}

#[tokio::test]
async fn tool_arguments_marked_x_mcp_header_must_be_mirrored() {
    let (srv, _, _) = started().await;
    let c = srv.stateless();
    let accepted = [
        (
            json!({"region": "us-west1"}),
            vec![("Region", "us-west1".to_owned())],
        ),
        // Header names are case-insensitive.
        (json!({"region": "eu"}), vec![("rEgIoN", "eu".to_owned())]),
        // The base64 form, decoded before the comparison.
        (
            json!({"region": "Hello, 世界"}),
            vec![("Region", header_value("Hello, 世界"))],
        ),
        (
            json!({"region": " padded "}),
            vec![("Region", "=?base64?IHBhZGRlZCA=?=".to_owned())],
        ),
        (
            json!({"region": "Hello"}),
            vec![("Region", "=?base64?SGVsbG8=?=".to_owned())],
        ),
        // Without both markers a value is literal.
        (
            json!({"region": "SGVsbG8="}),
            vec![("Region", "SGVsbG8=".to_owned())],
        ),
        (
            json!({"region": "=?base64?SGVsbG8="}),
            vec![("Region", "=?base64?SGVsbG8=".to_owned())],
        ),
        // Integers compare by value, booleans as true/false.
        (
            json!({"region": "x", "count": 42, "verbose": true}),
            vec![
                ("Region", "x".to_owned()),
                ("Count", "42.0".to_owned()),
                ("Verbose", "true".to_owned()),
            ],
        ),
        // A null or absent argument expects no header; unmarked arguments need none.
        (
            json!({"region": "x", "count": null, "query": "SELECT 1"}),
            vec![("Region", "x".to_owned())],
        ),
        // A header for a parameter no tool declares is ignored.
        (
            json!({"region": "x"}),
            vec![("Region", "x".to_owned()), ("Other", "whatever".to_owned())],
        ),
    ];
    for (arguments, headers) in accepted {
        let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let ex = route(&c, arguments.clone(), &headers).await;
        assert_eq!(
            ex.status,
            StatusCode::OK,
            "{arguments} {headers:?}: {}",
            ex.response
        );
        let echoed: Value = serde_json::from_str(&text(&ex.response)).unwrap();
        assert_eq!(echoed, arguments);
    }
    let rejected = [
        ("header missing", json!({"region": "us"}), vec![]),
        (
            "value differs",
            json!({"region": "us"}),
            vec![("Region", "eu".to_owned())],
        ),
        (
            "bad base64 padding",
            json!({"region": "Hello"}),
            vec![("Region", "=?base64?SGVsbG8?=".to_owned())],
        ),
        (
            "bad base64 characters",
            json!({"region": "Hello"}),
            vec![("Region", "=?base64?SGVs!!!bG8=?=".to_owned())],
        ),
        (
            "not UTF-8 once decoded",
            json!({"region": "x"}),
            vec![("Region", "=?base64?/w==?=".to_owned())],
        ),
        (
            "integer differs",
            json!({"region": "x", "count": 42}),
            vec![("Region", "x".to_owned()), ("Count", "43".to_owned())],
        ),
        (
            "boolean spelled otherwise",
            json!({"region": "x", "verbose": true}),
            vec![("Region", "x".to_owned()), ("Verbose", "True".to_owned())],
        ),
        (
            "header without a value in the body",
            json!({"region": "x"}),
            vec![("Region", "x".to_owned()), ("Count", "1".to_owned())],
        ),
        (
            "header sent twice",
            json!({"region": "x"}),
            vec![("Region", "x".to_owned()), ("Region", "x".to_owned())],
        ),
    ];
    for (label, arguments, headers) in rejected {
        let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let ex = route(&c, arguments, &headers).await;
        assert_eq!(
            ex.status,
            StatusCode::BAD_REQUEST,
            "{label}: {}",
            ex.response
        );
        assert_eq!(code(&ex.response), -32020, "{label}");
    }
    // Bytes outside visible ASCII in a header value are refused, not guessed at.
    let mut b = c.post(
        json!(2),
        "tools/call",
        call("route", json!({"region": "é"})),
    );
    b = b.header(
        "mcp-param-region",
        reqwest::header::HeaderValue::from_bytes(&[0xc3, 0xa9]).unwrap(),
    );
    let ex = c.read("tools/call", b.send().await.unwrap()).await;
    assert_eq!(
        (ex.status, code(&ex.response)),
        (StatusCode::BAD_REQUEST, -32020)
    );
}

#[tokio::test]
async fn notifications_are_202_and_get_delete_without_a_session_are_405() {
    let (srv, _, _) = started().await;
    let c = srv.stateless();
    let r = c
        .post_raw(
            &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 1, "_meta": c.meta()}}),
        )
        .header("mcp-protocol-version", MODERN)
        .header("mcp-method", "notifications/cancelled")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::ACCEPTED);
    assert!(r.headers().get("mcp-session-id").is_none());
    assert!(r.text().await.unwrap().is_empty());

    for request in [
        c.http.get(&c.url).header("accept", "text/event-stream"),
        c.http.get(&c.url),
        c.http
            .get(&c.url)
            .header("accept", "text/event-stream")
            .header("last-event-id", "1-1")
            .header("mcp-protocol-version", MODERN),
        c.http.delete(&c.url).header("mcp-protocol-version", MODERN),
    ] {
        let r = request.send().await.unwrap();
        assert_eq!(r.status(), StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(r.headers()["allow"], "POST");
        assert!(r.headers().get("mcp-session-id").is_none());
        let body: Value = r.json().await.unwrap();
        assert!(body["error"]["code"].is_i64(), "{body}");
    }

    // Neither batches nor client responses exist on this revision.
    let ex = raw(
        &c,
        "tools/list",
        json!([
            body(&c, 1, "tools/list", json!({})),
            body(&c, 2, "tools/list", json!({}))
        ]),
        &[
            ("mcp-protocol-version", MODERN),
            ("mcp-method", "tools/list"),
        ],
    )
    .await;
    assert_eq!(
        (ex.status, code(&ex.response)),
        (StatusCode::BAD_REQUEST, -32600)
    );
    let ex = raw(
        &c,
        "tools/list",
        json!({"jsonrpc": "2.0", "id": "q", "result": {"action": "accept"}}),
        &[("mcp-protocol-version", MODERN)],
    )
    .await;
    assert_eq!(
        (ex.status, code(&ex.response)),
        (StatusCode::BAD_REQUEST, -32600)
    );
    // Unparseable JSON is a parse error.
    let r = c
        .post_raw(&json!(null))
        .body("{nope")
        .header("mcp-protocol-version", MODERN)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let body: Value = r.json().await.unwrap();
    assert_eq!(code(&body), -32700);
}

#[tokio::test]
async fn progress_turns_the_answer_into_a_stream_of_that_requests_messages() {
    let (srv, _, _) = started().await;
    let c = srv.stateless();
    let ex = c
        .exchange(
            json!(1),
            "tools/call",
            json!({"name": "progress", "arguments": {}, "_meta": {"progressToken": "p1"}}),
        )
        .await;
    assert_eq!(ex.status, StatusCode::OK);
    assert!(
        ex.content_type.starts_with("text/event-stream"),
        "{}",
        ex.content_type
    );
    assert_eq!(ex.before.len(), 3, "{:?}", ex.before);
    for (i, n) in ex.before.iter().enumerate() {
        assert_eq!(n["method"], "notifications/progress");
        assert_eq!(n["params"]["progressToken"], "p1");
        assert_eq!(n["params"]["progress"], json!((i as f64 + 1.0) * 10.0));
    }
    assert_eq!(ex.response["id"], 1);
    assert_eq!(text(&ex.response), "done");
    // Without a progress token nothing precedes the response: plain JSON.
    let ex = c
        .exchange(json!(2), "tools/call", call("progress", json!({})))
        .await;
    assert!(ex.content_type.starts_with("application/json"));
    assert_eq!(text(&ex.response), "done");
    // Concurrent streams each carry their own request's messages only.
    let (a, b) = tokio::join!(
        c.exchange(
            json!("a"),
            "tools/call",
            json!({"name": "progress", "arguments": {}, "_meta": {"progressToken": "a"}}),
        ),
        c.exchange(
            json!("b"),
            "tools/call",
            json!({"name": "progress", "arguments": {}, "_meta": {"progressToken": "b"}}),
        ),
    );
    for (ex, token) in [(a, "a"), (b, "b")] {
        assert_eq!(ex.response["id"], token);
        assert!(
            ex.before
                .iter()
                .all(|n| n["params"]["progressToken"] == token)
        );
        assert_eq!(ex.before.len(), 3);
    }
}

#[tokio::test]
async fn logs_reach_the_stream_only_when_the_request_asks_for_a_level() {
    let (srv, _, _) = started().await;
    let c = srv.stateless();
    let ex = c
        .exchange(json!(1), "tools/call", call("log", json!({})))
        .await;
    assert!(ex.content_type.starts_with("application/json"));
    assert!(ex.before.is_empty());
    let ex = c
        .exchange(
            json!(2),
            "tools/call",
            json!({"name": "log", "arguments": {},
                "_meta": {"io.modelcontextprotocol/logLevel": "info"}}),
        )
        .await;
    assert!(ex.content_type.starts_with("text/event-stream"));
    assert_eq!(ex.before.len(), 1);
    assert_eq!(ex.before[0]["method"], "notifications/message");
    assert_eq!(ex.before[0]["params"]["level"], "info");
    assert_eq!(text(&ex.response), "logged");
    let ex = c
        .exchange(
            json!(3),
            "tools/call",
            json!({"name": "log", "arguments": {},
                "_meta": {"io.modelcontextprotocol/logLevel": "error"}}),
        )
        .await;
    assert!(ex.before.is_empty(), "{:?}", ex.before);
}

#[tokio::test]
async fn closing_the_stream_or_the_connection_cancels_the_request() {
    let (srv, drops, _) = started().await;
    let c = srv.stateless();
    // A streamed request: the client reads the first message, then hangs up.
    let response = c
        .post(
            json!(1),
            "tools/call",
            json!({"name": "hang", "arguments": {}, "_meta": {"progressToken": 1}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let mut stream = SseReader::new(response);
    let first = stream.next().await.expect("a progress notification");
    let first = first.json();
    check_stateless(&first, None);
    assert_eq!(first["method"], "notifications/progress");
    assert_eq!(drops.get(), 0, "the request is still running");
    drop(stream);
    drops.wait_for(1).await;
    tokio::time::timeout(WAIT, async {
        while SEEN_CANCELLED.load(Ordering::SeqCst) < 1 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("ctx.cancelled() fires for work the tool handed off");

    // A request still waiting for its first message: the client gives up.
    let gave_up = c
        .post(json!(2), "tools/call", call("hang_quiet", json!({})))
        .timeout(Duration::from_millis(300))
        .send()
        .await;
    assert!(gave_up.is_err(), "the call never answers");
    drops.wait_for(2).await;

    // The server still serves.
    let sum = c
        .request(json!(3), "tools/call", call("add", json!({"a": 1, "b": 1})))
        .await;
    assert_eq!(text(&sum), "2");
}

/// Opens a listen stream; its acknowledgement, checked.
async fn listen(c: &StatelessHttp, id: Value, notifications: Value) -> (SseReader, Value) {
    let response = c
        .post(
            id.clone(),
            "subscriptions/listen",
            json!({"notifications": notifications}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response.headers()["content-type"].to_str().unwrap(),
        "text/event-stream"
    );
    assert_eq!(response.headers()["x-accel-buffering"], "no");
    assert!(response.headers().get("mcp-session-id").is_none());
    let mut stream = SseReader::new(response);
    let ack = stream.next().await.expect("an acknowledgement").json();
    check_stateless(&ack, None);
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        id
    );
    (stream, ack)
}

async fn next_message(stream: &mut SseReader) -> Value {
    let e = stream.next().await.expect("a message");
    assert!(e.id.is_none());
    let v = e.json();
    check_stateless(&v, Some("subscriptions/listen"));
    v
}

#[tokio::test]
async fn listen_streams_carry_what_they_asked_for_and_end_gracefully_at_shutdown() {
    let (server, _, _) = server();
    let srv =
        HttpTestServer::start(server, test_config().keep_alive(Duration::from_millis(100))).await;
    let c = srv.stateless();
    let (mut tools, ack) = listen(&c, json!("tools-1"), json!({"toolsListChanged": true})).await;
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true})
    );
    let (mut prompts, _) = listen(&c, json!(7), json!({"promptsListChanged": true})).await;
    let (mut updates, ack) = listen(
        &c,
        json!("res"),
        json!({"resourceSubscriptions": ["test://static"]}),
    )
    .await;
    assert_eq!(
        ack["params"]["notifications"]["resourceSubscriptions"],
        json!(["test://static"])
    );

    // Another request changes the tool list: only the tools listener hears it.
    let r = c
        .request(json!(1), "tools/call", call("toggle_tool", json!({})))
        .await;
    assert_eq!(text(&r), "added");
    let changed = next_message(&mut tools).await;
    assert_eq!(changed["method"], "notifications/tools/list_changed");
    assert_eq!(
        changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "tools-1"
    );
    c.request(json!(2), "tools/call", call("touch", json!({})))
        .await;
    let updated = next_message(&mut updates).await;
    assert_eq!(updated["method"], "notifications/resources/updated");
    assert_eq!(updated["params"]["uri"], "test://static");
    assert_eq!(
        updated["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "res"
    );
    assert!(prompts.quiet_for(Duration::from_millis(300)).await);
    assert!(tools.quiet_for(Duration::from_millis(100)).await);

    // Idle streams get keep-alive comments.
    let comment = prompts
        .next_within(Duration::from_secs(2))
        .await
        .expect("the stream is open");
    assert!(comment.comment, "{comment:?}");

    // Shutting down ends each listen with its final result.
    srv.stop();
    for (stream, id) in [
        (&mut tools, json!("tools-1")),
        (&mut prompts, json!(7)),
        (&mut updates, json!("res")),
    ] {
        let end = next_message(stream).await;
        assert_eq!(end["id"], id);
        assert_eq!(end["result"]["resultType"], "complete");
        assert_eq!(
            end["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            id
        );
        assert!(
            stream.next().await.is_none(),
            "the stream ends after the result"
        );
    }
}

#[tokio::test]
async fn a_listener_that_hangs_up_is_forgotten() {
    let server = Server::builder("one-listener", "1.0.0")
        .config(mcp::server::ServerConfig {
            max_listeners: 1,
            ..Default::default()
        })
        .tool(ToolDef::from_fn(
            "noop",
            "Does nothing.",
            |_c, _: NoArgs| async { "ok" },
        ))
        .build()
        .unwrap();
    let srv = HttpTestServer::start(server, test_config()).await;
    let c = srv.stateless();
    let (first, _) = listen(&c, json!(1), json!({"toolsListChanged": true})).await;
    // The only slot is taken.
    let ex = c
        .exchange(
            json!(2),
            "subscriptions/listen",
            json!({"notifications": {"toolsListChanged": true}}),
        )
        .await;
    assert_eq!(code(&ex.response), -32603, "{}", ex.response);
    // Hanging up frees it.
    drop(first);
    let reopened = tokio::time::timeout(WAIT, async {
        loop {
            let response = c
                .post(
                    json!(3),
                    "subscriptions/listen",
                    json!({"notifications": {"toolsListChanged": true}}),
                )
                .send()
                .await
                .unwrap();
            if response.headers()["content-type"] == "text/event-stream" {
                break SseReader::new(response);
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the first listener was never forgotten");
    let mut reopened = reopened;
    let ack = next_message(&mut reopened).await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
}

#[tokio::test]
async fn input_required_rounds_work_over_http() {
    let (srv, _, _) = started().await;
    let c = srv
        .stateless()
        .with_capabilities(json!({"elicitation": {}}));
    let first = c
        .request(json!(1), "tools/call", call("greet", json!({})))
        .await;
    let result = &first["result"];
    assert_eq!(result["resultType"], "input_required");
    assert_eq!(
        result["inputRequests"]["user_name"]["method"],
        "elicitation/create"
    );
    let state = result["requestState"].clone();
    assert!(state.is_string());
    let done = c
        .request(
            json!(2),
            "tools/call",
            json!({"name": "greet", "arguments": {}, "requestState": state,
                "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Ada"}}}}),
        )
        .await;
    assert_eq!(text(&done), "Hello, Ada!");

    // Two rounds, the handler's state carried sealed in between.
    let r1 = c
        .request(json!(3), "tools/call", call("two_step", json!({})))
        .await;
    assert!(r1["result"]["inputRequests"]["step1"].is_object());
    let r2 = c
        .request(
            json!(4),
            "tools/call",
            json!({"name": "two_step", "arguments": {}, "requestState": r1["result"]["requestState"],
                "inputResponses": {"step1": {"action": "accept", "content": {"name": "Grace"}}}}),
        )
        .await;
    assert!(r2["result"]["inputRequests"]["step2"].is_object(), "{r2}");
    let r3 = c
        .request(
            json!(5),
            "tools/call",
            json!({"name": "two_step", "arguments": {}, "requestState": r2["result"]["requestState"],
                "inputResponses": {"step2": {"action": "accept", "content": {"name": "Hopper"}}}}),
        )
        .await;
    assert_eq!(text(&r3), "Grace Hopper (kept \"Grace\")");

    // Tampered state is refused.
    let mut forged = r2["result"]["requestState"].as_str().unwrap().to_owned();
    forged.insert(5, 'x');
    let ex = c
        .exchange(
            json!(6),
            "tools/call",
            json!({"name": "two_step", "arguments": {}, "requestState": forged,
                "inputResponses": {"step2": {"action": "accept", "content": {"name": "X"}}}}),
        )
        .await;
    assert_eq!(code(&ex.response), -32602);
}

#[tokio::test]
async fn the_authorizers_ask_is_an_approval_round_over_http() {
    let (srv, _, spent) = started().await;
    let c = srv
        .stateless()
        .with_capabilities(json!({"elicitation": {}}));
    let ask = c
        .request(json!(1), "tools/call", call("spend", json!({})))
        .await;
    let question = &ask["result"]["inputRequests"]["mcp.approve"];
    assert_eq!(question["method"], "elicitation/create", "{ask}");
    assert!(
        question["params"]["message"]
            .as_str()
            .unwrap()
            .contains("Spend the money?")
    );
    assert_eq!(spent.load(Ordering::SeqCst), 0);
    let state = ask["result"]["requestState"].clone();
    let approved = c
        .request(
            json!(2),
            "tools/call",
            json!({"name": "spend", "arguments": {}, "requestState": state,
                "inputResponses": {"mcp.approve": {"action": "accept", "content": {"approve": true}}}}),
        )
        .await;
    assert_eq!(text(&approved), "spent");
    assert_eq!(spent.load(Ordering::SeqCst), 1);

    let ask = c
        .request(json!(3), "tools/call", call("spend", json!({})))
        .await;
    let declined = c
        .request(
            json!(4),
            "tools/call",
            json!({"name": "spend", "arguments": {}, "requestState": ask["result"]["requestState"],
                "inputResponses": {"mcp.approve": {"action": "decline"}}}),
        )
        .await;
    assert_eq!(declined["result"]["isError"], true);
    assert_eq!(spent.load(Ordering::SeqCst), 1);

    // A client that cannot be asked is denied at once.
    let mute = srv.stateless();
    let denied = mute
        .request(json!(5), "tools/call", call("spend", json!({})))
        .await;
    assert_eq!(denied["result"]["isError"], true);
    assert_eq!(spent.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn both_eras_are_served_concurrently_on_one_endpoint() {
    let (srv, _, _) = started().await;
    let mut legacy = srv.client();
    legacy.initialize("2025-11-25", json!({})).await;
    let session = legacy.session.clone().unwrap();
    let stateless = srv.stateless();

    let legacy_round = async {
        let mut legacy = legacy.clone();
        for i in 0..5 {
            let ex = legacy
                .exchange(
                    json!(i),
                    "tools/call",
                    json!({"name": "progress", "arguments": {}, "_meta": {"progressToken": i}}),
                )
                .await;
            assert_eq!(ex.status, StatusCode::OK);
            assert!(ex.content_type.starts_with("text/event-stream"));
            assert_eq!(ex.response["result"]["content"][0]["text"], "done");
            assert!(ex.response["result"].get("resultType").is_none());
            assert_eq!(ex.before.len(), 3);
        }
    };
    let stateless_round = async {
        for i in 0..5 {
            let ex = stateless
                .exchange(
                    json!(i),
                    "tools/call",
                    json!({"name": "progress", "arguments": {}, "_meta": {"progressToken": i}}),
                )
                .await;
            assert_eq!(ex.status, StatusCode::OK);
            assert_eq!(ex.response["result"]["resultType"], "complete");
            assert_eq!(ex.before.len(), 3);
            let listed = stateless
                .request(json!(100 + i), "tools/list", json!({}))
                .await;
            assert_eq!(listed["result"]["cacheScope"], "private");
        }
    };
    tokio::join!(legacy_round, stateless_round);

    // The session's own GET stream and DELETE still work beside the stateless 405s.
    let r = legacy.get().send().await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["mcp-session-id"].to_str().unwrap(), session);
    drop(r);
    let pong = legacy.request(50, "ping", json!({})).await;
    assert_eq!(pong["result"], json!({}));
    assert!(legacy.delete().send().await.unwrap().status().is_success());
    // A handshake-era request with no session is still told to initialize.
    let r = srv
        .client()
        .post(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string())
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let body: Value = r.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("Mcp-Session-Id")
    );
}

#[tokio::test]
async fn sessionless_handshake_requests_keep_their_era_when_allowed() {
    let (server, _, _) = server();
    let srv = HttpTestServer::start(server, test_config().allow_sessionless_requests(true)).await;
    // Neither marker: served on the handshake era (no resultType).
    let r = srv
        .client()
        .post(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "add", "arguments": {"a": 1, "b": 2}}})
            .to_string(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["result"]["content"][0]["text"], "3");
    assert!(body["result"].get("resultType").is_none(), "{body}");
    // A stateless request on the same server is the stateless era.
    let sum = srv
        .stateless()
        .request(json!(2), "tools/call", call("add", json!({"a": 1, "b": 2})))
        .await;
    assert_eq!(sum["result"]["resultType"], "complete");
}

#[tokio::test]
async fn an_initialize_with_a_stateless_marker_is_not_a_handshake() {
    let (srv, _, _) = started().await;
    let c = srv.stateless();
    // Initialize with stateless _meta: the method does not exist in 2026-07-28.
    let ex = c
        .exchange(
            json!(1),
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "x", "version": "1"}}),
        )
        .await;
    assert_eq!(
        (ex.status, code(&ex.response)),
        (StatusCode::NOT_FOUND, -32601)
    );
    // Mcp-Session-Id makes a request handshake-era, never a stateless one that would
    // echo it: with a 2026-07-28 version header the session rules refuse the header, and
    // without it the unknown session is 404.
    let r = c
        .post(json!(2), "tools/list", json!({}))
        .header("mcp-session-id", "not-a-session")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    assert!(r.headers().get("mcp-session-id").is_none());
    let body: Value = r.json().await.unwrap();
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("MCP-Protocol-Version"),
        "{body}"
    );
    let r = c
        .post_raw(&body_of(&c))
        .header("mcp-session-id", "not-a-session")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    assert!(r.headers().get("mcp-session-id").is_none());
}

/// Stateless requests from different callers share no connection state: more of them can
/// run at once than one connection's `max_requests_per_connection`, and a connection table
/// filled by handshake-era sessions never evicts (and so never fails) a call in progress.
#[tokio::test]
async fn stateless_callers_share_no_per_connection_limits_and_are_never_evicted() {
    const CALLS: usize = 4;
    let started = Arc::new(AtomicUsize::new(0));
    let gather = {
        let started = Arc::clone(&started);
        move |_ctx: Ctx, _: NoArgs| {
            let started = Arc::clone(&started);
            async move {
                started.fetch_add(1, Ordering::SeqCst);
                // Finishes only once every call is running at the same time.
                let all = tokio::time::timeout(WAIT, async {
                    while started.load(Ordering::SeqCst) < CALLS {
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                })
                .await;
                match all {
                    Ok(()) => Ok("together".to_owned()),
                    Err(_) => Err(format!(
                        "only {} calls ran at once",
                        started.load(Ordering::SeqCst)
                    )),
                }
            }
        }
    };
    let server = Server::builder("limits", "1.0.0")
        .tool(ToolDef::from_fn("gather", "Waits for the others.", gather))
        .authorizer(mcp::auth::allow_all())
        .read_authorizer(mcp::auth::allow_all())
        .max_requests_per_connection(2)
        .max_connections(2)
        .build()
        .expect("the server builds");
    let srv = HttpTestServer::start(server, test_config()).await;
    let c = Arc::new(srv.stateless());
    let calls: Vec<_> = (0..CALLS)
        .map(|i| {
            let c = Arc::clone(&c);
            tokio::spawn(async move {
                c.request(json!(i), "tools/call", call("gather", json!({})))
                    .await
            })
        })
        .collect();
    // While they run, handshake-era sessions fill the table past its cap.
    for _ in 0..3 {
        let mut session = srv.client();
        session.initialize("2025-11-25", json!({})).await;
    }
    for call in calls {
        let response = call.await.expect("the call task");
        assert_eq!(text(&response), "together", "{response}");
    }
}
