//! An in-memory client for testing servers: no process, no sockets, the real dispatcher.
//!
//! Messages go through the same decoder and dispatcher a transport uses, and everything the
//! server sends to this connection (replies, notifications, its own requests) arrives in one
//! ordered stream, as it would on stdio.
//!
//! ```
//! # tokio_test_block_on(async {
//! use mcp::prelude::*;
//! use mcp::testing::TestClient;
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Add { a: i64, b: i64 }
//! let server = Server::builder("calc", "1.0.0")
//!     .tool(ToolDef::from_fn("add", "Adds.", |_ctx, x: Add| async move { x.a + x.b }))
//!     .build()
//!     .unwrap();
//! let mut client = TestClient::connect(&server);
//! client.initialize(serde_json::json!({})).await.unwrap();
//! let result = client.call_tool("add", serde_json::json!({"a": 2, "b": 3})).await.unwrap();
//! assert_eq!(result.content[0].as_text(), Some("5"));
//! # });
//! # fn tokio_test_block_on<F: std::future::Future>(f: F) -> F::Output {
//! #     tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
//! # }
//! ```

#[cfg(feature = "oauth")]
pub mod third_party;

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::protocol::{CallToolResult, ErrorObject, Tool};
use crate::server::{ConnId, Connection, Outbound, OutboundReceiver, Server, Transport};

type Responder = Box<dyn Fn(&str, &Value) -> Result<Value, ErrorObject> + Send + Sync>;

/// A client attached to a server in memory.
pub struct TestClient {
    conn: Arc<Connection>,
    out: Outbound,
    rx: OutboundReceiver,
    next_id: i64,
    queued: VecDeque<Value>,
    responder: Option<Responder>,
    timeout: Duration,
    stateless: Option<Value>,
}

impl Drop for TestClient {
    /// Dropping the client is a disconnect: its running requests are cancelled and its
    /// parked questions closed, as when a real client goes away.
    fn drop(&mut self) {
        self.conn.close();
    }
}

impl TestClient {
    /// Attaches a new client with a fresh connection id.
    pub fn connect(server: &Server) -> Self {
        Self::connect_as(server, ConnId::random("test"), Transport::Unknown)
    }

    /// Attaches a client under a chosen connection id and transport.
    pub fn connect_as(server: &Server, id: ConnId, transport: Transport) -> Self {
        let (out, rx) = Outbound::channel(server.config().outbound_capacity);
        let conn = Arc::new(server.connect(id, transport, out.clone()));
        TestClient {
            conn,
            out,
            rx,
            next_id: 1,
            queued: VecDeque::new(),
            responder: None,
            timeout: Duration::from_secs(5),
            stateless: None,
        }
    }

    /// The connection's id.
    pub fn conn_id(&self) -> &ConnId {
        self.conn.id()
    }

    /// What the server holds for this connection right now (running requests, parked
    /// questions, ...).
    pub fn stats(&self) -> crate::server::ConnectionStats {
        self.conn.stats()
    }

    /// How long to wait for a message before giving up (default 5 s).
    pub fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
    }

    /// Answers the server's own requests (elicitation, sampling, roots) automatically while
    /// waiting in [`TestClient::request`]: `f(method, params)` returns the result or an error.
    pub fn on_server_request(
        &mut self,
        f: impl Fn(&str, &Value) -> Result<Value, ErrorObject> + Send + Sync + 'static,
    ) {
        self.responder = Some(Box::new(f));
    }

    /// Sends any JSON value as one frame, exactly as a transport would receive it. The
    /// reply, if any, arrives on the stream like every other message.
    pub fn send(&self, message: Value) {
        self.send_frame(message.to_string().into_bytes());
    }

    /// Sends raw bytes as one frame (for malformed-input tests). The frame goes through
    /// [`Connection::handle_frame`], so the server's message size limit applies as it does
    /// on a transport.
    pub fn send_frame(&self, frame: Vec<u8>) {
        let conn = Arc::clone(&self.conn);
        let out = self.out.clone();
        tokio::spawn(async move {
            if let Some(reply) = conn.handle_frame(&frame).await {
                out.send(reply.into_frame()).await;
            }
        });
    }

    /// The next message from the server, or `None` if nothing arrives within the timeout.
    pub async fn next_message(&mut self) -> Option<Value> {
        if let Some(v) = self.queued.pop_front() {
            return Some(v);
        }
        self.receive().await
    }

    /// Waits `quiet` and returns every message that arrived (to assert that nothing did).
    pub async fn drain(&mut self, quiet: Duration) -> Vec<Value> {
        let mut all: Vec<Value> = self.queued.drain(..).collect();
        while let Ok(Some(frame)) = tokio::time::timeout(quiet, self.rx.recv()).await {
            all.push(serde_json::from_str(&frame).unwrap_or(Value::Null));
        }
        all
    }

    async fn receive(&mut self) -> Option<Value> {
        let frame = tokio::time::timeout(self.timeout, self.rx.recv())
            .await
            .ok()??;
        Some(serde_json::from_str(&frame).unwrap_or(Value::Null))
    }

    /// Speaks the stateless 2026-07-28 revision from now on: every request carries `_meta`
    /// with the protocol version and these client capabilities (unless the request sets
    /// them itself).
    pub fn use_stateless(&mut self, capabilities: Value) {
        self.stateless = Some(capabilities);
    }

    /// The `_meta` a 2026-07-28 request carries.
    pub fn stateless_meta(capabilities: Value) -> Value {
        json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": capabilities,
            "io.modelcontextprotocol/clientInfo": {"name": "mcp-test-client", "version": "0"},
        })
    }

    fn with_meta(&self, mut params: Value) -> Value {
        let Some(caps) = &self.stateless else {
            return params;
        };
        if !params.is_object() {
            params = json!({});
        }
        let meta = params
            .as_object_mut()
            .map(|p| p.entry("_meta").or_insert_with(|| json!({})))
            .and_then(Value::as_object_mut);
        if let (Some(meta), Value::Object(defaults)) = (meta, Self::stateless_meta(caps.clone())) {
            for (k, v) in defaults {
                meta.entry(k).or_insert(v);
            }
        }
        params
    }

    /// Sends a request and waits for its response. Other messages that arrive meanwhile are
    /// kept for [`TestClient::next_message`], except the server's own requests, which the
    /// responder (if set) answers.
    pub async fn request(&mut self, method: &str, params: Value) -> Result<Value, ErrorObject> {
        let message = self.request_message(method, params).await?;
        match message.get("error") {
            Some(e) => Err(serde_json::from_value(e.clone())
                .unwrap_or_else(|_| ErrorObject::internal("malformed error"))),
            None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
        }
    }

    /// Like [`TestClient::request`], returning the whole response message (for checking it
    /// against a schema).
    pub async fn request_message(
        &mut self,
        method: &str,
        params: Value,
    ) -> Result<Value, ErrorObject> {
        let id = self.next_id;
        self.next_id += 1;
        let params = self.with_meta(params);
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let Some(message) = self.receive().await else {
                return Err(ErrorObject::internal(format!(
                    "no response to {method} within {:?}",
                    self.timeout
                )));
            };
            if message.get("id") == Some(&json!(id)) && message.get("method").is_none() {
                return Ok(message);
            }
            if let (Some(responder), Some(m), Some(sid)) = (
                &self.responder,
                message.get("method").and_then(Value::as_str),
                message.get("id"),
            ) {
                let answer = match responder(m, message.get("params").unwrap_or(&Value::Null)) {
                    Ok(result) => json!({"jsonrpc": "2.0", "id": sid, "result": result}),
                    Err(e) => json!({"jsonrpc": "2.0", "id": sid, "error": e}),
                };
                self.send(answer);
                continue;
            }
            self.queued.push_back(message);
        }
    }

    /// Sends a notification.
    pub fn notify(&self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Performs the handshake with these client capabilities, at the newest handshake
    /// revision, and sends `notifications/initialized`.
    pub async fn initialize(&mut self, capabilities: Value) -> Result<Value, ErrorObject> {
        self.initialize_version("2025-11-25", capabilities).await
    }

    /// Performs the handshake asking for a specific revision.
    pub async fn initialize_version(
        &mut self,
        version: &str,
        capabilities: Value,
    ) -> Result<Value, ErrorObject> {
        let result = self
            .request(
                "initialize",
                json!({
                    "protocolVersion": version,
                    "capabilities": capabilities,
                    "clientInfo": {"name": "mcp-test-client", "version": "0"}
                }),
            )
            .await?;
        self.notify("notifications/initialized", json!({}));
        Ok(result)
    }

    /// Lists every tool, following cursors.
    pub async fn list_tools(&mut self) -> Result<Vec<Tool>, ErrorObject> {
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let page = self.request("tools/list", params).await?;
            let items: Vec<Tool> = serde_json::from_value(page["tools"].clone())
                .map_err(|e| ErrorObject::internal(e.to_string()))?;
            tools.extend(items);
            match page.get("nextCursor").and_then(Value::as_str) {
                Some(c) => cursor = Some(c.to_owned()),
                None => return Ok(tools),
            }
        }
    }

    /// Calls a tool.
    pub async fn call_tool(
        &mut self,
        name: &str,
        arguments: Value,
    ) -> Result<CallToolResult, ErrorObject> {
        let result = self
            .request("tools/call", json!({"name": name, "arguments": arguments}))
            .await?;
        serde_json::from_value(result).map_err(|e| ErrorObject::internal(e.to_string()))
    }

    /// `params` declaring the tasks extension on this request, when speaking 2026-07-28
    /// (the extension is declared per request); unchanged on the handshake era.
    fn declaring_tasks(&self, mut params: Value) -> Value {
        let Some(caps) = &self.stateless else {
            return params;
        };
        let mut caps = caps.clone();
        if !caps.is_object() {
            caps = json!({});
        }
        caps["extensions"][crate::protocol::meta_keys::TASKS_EXTENSION] = json!({});
        params["_meta"][crate::protocol::meta_keys::CLIENT_CAPABILITIES] = caps;
        params
    }

    /// Calls a tool allowing it to run as a task: on 2025-11-25 the request carries
    /// `params.task`, on 2026-07-28 it declares the tasks extension. Returns the raw
    /// result: a task's handle (`task` on 2025-11-25, `resultType: "task"` on 2026-07-28)
    /// or the call's own result.
    pub async fn call_tool_as_task(
        &mut self,
        name: &str,
        arguments: Value,
    ) -> Result<Value, ErrorObject> {
        let mut params = json!({"name": name, "arguments": arguments});
        if self.stateless.is_none() {
            params["task"] = json!({});
        }
        let params = self.declaring_tasks(params);
        self.request("tools/call", params).await
    }

    /// `tasks/get`.
    pub async fn get_task(&mut self, task_id: &str) -> Result<Value, ErrorObject> {
        let params = self.declaring_tasks(json!({"taskId": task_id}));
        self.request("tasks/get", params).await
    }

    /// `tasks/update` with answers by input key (2026-07-28).
    pub async fn update_task(
        &mut self,
        task_id: &str,
        input_responses: Value,
    ) -> Result<Value, ErrorObject> {
        let params =
            self.declaring_tasks(json!({"taskId": task_id, "inputResponses": input_responses}));
        self.request("tasks/update", params).await
    }

    /// `tasks/cancel`.
    pub async fn cancel_task(&mut self, task_id: &str) -> Result<Value, ErrorObject> {
        let params = self.declaring_tasks(json!({"taskId": task_id}));
        self.request("tasks/cancel", params).await
    }

    /// Polls `tasks/get` until the task is in one of `statuses` (or, with none given,
    /// terminal), for at most `within`; returns the last answer.
    pub async fn wait_task(
        &mut self,
        task_id: &str,
        statuses: &[&str],
        within: Duration,
    ) -> Result<Value, ErrorObject> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let task = self.get_task(task_id).await?;
            let status = task["status"].as_str().unwrap_or_default();
            let reached = if statuses.is_empty() {
                matches!(status, "completed" | "failed" | "cancelled")
            } else {
                statuses.contains(&status)
            };
            if reached {
                return Ok(task);
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(ErrorObject::internal(format!(
                    "task {task_id} is still {status} after {within:?}"
                )));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// Handles one message for connection `id` with no transport attached, as an in-process
/// caller would send it: the connection's state stays in the server's table between calls
/// (an `initialize` is remembered), and it can never be asked anything.
pub async fn handle_message(
    server: &Server,
    id: &ConnId,
    message: crate::protocol::Message,
) -> Option<crate::server::Reply> {
    server.unattached(id).handle(message).await
}
