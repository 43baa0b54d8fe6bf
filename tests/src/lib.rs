//! Shared helpers for the integration tests: the official MCP JSON Schemas as a validator
//! for every message a server emits, a harness that drives a server binary over stdio
//! (pipes or a Unix socket pair), real replicas behind a real nginx, and the seed suites'
//! tools and assertions.

pub mod cgroup;
pub mod cluster;
pub mod connect;
pub mod gate;
pub mod http;
pub mod idp;
pub mod nginx;
pub mod pipe;
pub mod process;
pub mod proxy;
pub mod redis;
pub mod schema;

pub use gate::Gate;
pub use pipe::PipeServer;
pub use process::{StdioServer, Wiring};
pub use schema::{SchemaValidator, validate_against, validate_server_message};

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcp::protocol::CallToolResult;
use mcp::registry::{ToolArgs, ToolDef};
use mcp::testing::TestClient;
use mcp::{Ctx, Server};
use serde_json::{Value, json};

/// Arguments of the `add` tool.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct AddArgs {
    /// The first addend.
    pub a: i64,
    /// The second addend.
    pub b: i64,
}

/// The seed's `add` tool: returns the sum as text.
pub fn add_tool() -> ToolDef {
    ToolDef::from_fn("add", "Adds two integers.", |_ctx, x: AddArgs| async move {
        x.a + x.b
    })
}

/// A counter of how many times a handler ran.
#[derive(Clone, Default)]
pub struct Runs(Arc<AtomicUsize>);

impl Runs {
    /// A counter at zero.
    pub fn new() -> Self {
        Runs::default()
    }

    /// How many runs so far.
    pub fn get(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }

    /// Counts one run.
    pub fn bump(&self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

/// A tool that counts its runs and answers `"ran <name>"`.
pub fn counting_tool(name: &str, runs: &Runs) -> ToolDef {
    let runs = runs.clone();
    let reply = format!("ran {name}");
    ToolDef::new(
        name,
        format!("Counts its runs ({name})."),
        json!({"type": "object"}),
        move |_ctx: Ctx, _args: ToolArgs| {
            runs.bump();
            let reply = reply.clone();
            async move { reply }
        },
    )
}

/// The `authorization_required` payload carried in the text of an `isError` tool result.
/// Panics if the result is not such a deny.
pub fn deny_payload(result: &CallToolResult) -> Value {
    assert!(
        result.is_error(),
        "expected an isError deny, got {result:?}"
    );
    let text = result.content[0]
        .as_text()
        .expect("the deny is a text block");
    let payload: Value = serde_json::from_str(text).expect("the deny text is JSON");
    assert_eq!(payload["error"], "authorization_required", "{payload}");
    payload
}

/// Like [`deny_payload`], for a raw `result` value of a tools/call response.
pub fn deny_payload_value(result: &Value) -> Value {
    let result: CallToolResult = serde_json::from_value(result.clone()).expect("a CallToolResult");
    deny_payload(&result)
}

/// The text of the first content block of a raw tool result.
pub fn first_text(result: &Value) -> &str {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text block in {result}"))
}

/// The text of the first content block of a `tools/call` response.
pub fn response_text(response: &Value) -> &str {
    response["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text content in {response}"))
}

/// `tools/call` params: the tool's name and its arguments.
pub fn call_params(name: &str, arguments: Value) -> Value {
    json!({"name": name, "arguments": arguments})
}

/// A `tools/call` request frame.
pub fn call_frame(id: i64, name: &str, arguments: Value) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    })
}

/// A JSON-RPC success response frame (the client answering the server).
pub fn answer(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// The names of every tool `client` is shown, across pages.
pub async fn tool_names(client: &mut TestClient) -> Vec<String> {
    client
        .list_tools()
        .await
        .expect("tools/list answers")
        .into_iter()
        .map(|t| t.name)
        .collect()
}

/// A connected client that has completed the handshake with `capabilities`.
pub async fn initialized_client(server: &Server, capabilities: Value) -> TestClient {
    let mut client = TestClient::connect(server);
    client.set_timeout(Duration::from_secs(2));
    client
        .initialize(capabilities)
        .await
        .expect("initialize succeeds");
    client
}

/// Waits for the next message and checks it is a server request for `method`.
pub async fn expect_server_request(client: &mut TestClient, method: &str) -> Value {
    let message = client
        .next_message()
        .await
        .unwrap_or_else(|| panic!("no {method} request arrived"));
    assert_eq!(message["method"], method, "{message}");
    assert!(
        message.get("id").is_some(),
        "a request has an id: {message}"
    );
    message
}

/// Waits for the response to `id`, failing on anything else.
pub async fn expect_response(client: &mut TestClient, id: i64) -> Value {
    let message = client
        .next_message()
        .await
        .unwrap_or_else(|| panic!("no response to id {id}"));
    assert_eq!(message["id"], id, "{message}");
    assert!(message.get("method").is_none(), "{message}");
    message
}

/// Lets spawned tasks run and asserts nothing reached `client`.
pub async fn assert_silent(client: &mut TestClient, quiet: Duration) {
    let got = client.drain(quiet).await;
    assert!(got.is_empty(), "expected no messages, got {got:?}");
}
