//! Drives the HTTP transports over real sockets: a server bound to an ephemeral loopback
//! port, a small MCP-over-HTTP client, and an SSE reader. Every JSON-RPC message the server
//! sends through [`McpHttp`] is validated against the official schema of the session's
//! revision.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;

use futures::StreamExt as _;
use futures::stream::BoxStream;
use mcp::Server;
use mcp::transport::http::{self, HttpConfig};
use reqwest::{RequestBuilder, Response, StatusCode};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::schema::validate_server_message;

/// How long a test waits for anything before failing.
pub const WAIT: Duration = Duration::from_secs(5);

/// A server serving a router on `127.0.0.1:<ephemeral>`, stopped when dropped.
pub struct HttpTestServer {
    /// The bound address.
    pub addr: SocketAddr,
    shutdown: CancellationToken,
}

impl HttpTestServer {
    /// Serves `server` as [`http::bind`] does: the router of [`http::router`], with requests
    /// to its endpoint answered without going through the router (what the generated
    /// binaries serve). [`HttpTestServer::serve`] serves a router as given.
    pub async fn start(server: Server, config: HttpConfig) -> Self {
        let bound = http::bind(server, config, "127.0.0.1:0".parse().unwrap())
            .await
            .expect("bind");
        Self::run(bound)
    }

    /// Serves the legacy [`mcp::transport::sse::router`] for `server`.
    pub async fn start_sse(server: Server, config: HttpConfig) -> Self {
        join(&server).await;
        let app = mcp::transport::sse::router(server, config.clone()).expect("router builds");
        Self::serve(app, config).await
    }

    /// Serves any router built with `config` (a clustered server's replica should have
    /// joined: see [`mcp::cluster::Cluster::start`]).
    pub async fn serve(app: axum::Router, config: HttpConfig) -> Self {
        let bound = http::HttpServer::bind(app, config, "127.0.0.1:0".parse().unwrap())
            .await
            .expect("bind");
        Self::run(bound)
    }

    fn run(bound: http::HttpServer) -> Self {
        let addr = bound.local_addr().unwrap();
        let shutdown = bound.shutdown_token();
        tokio::spawn(bound.run_until(std::future::pending()));
        HttpTestServer { addr, shutdown }
    }

    /// A server the test bound itself (to know its address before building it).
    pub fn adopt(addr: SocketAddr, shutdown: CancellationToken) -> Self {
        HttpTestServer { addr, shutdown }
    }

    /// `http://127.0.0.1:<port><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// A client for the endpoint at `/mcp`.
    pub fn client(&self) -> McpHttp {
        McpHttp::new(self.url("/mcp"))
    }

    /// A client of the stateless 2026-07-28 revision for the endpoint at `/mcp`.
    pub fn stateless(&self) -> StatelessHttp {
        StatelessHttp::new(self.url("/mcp"))
    }

    /// Stops the server.
    pub fn stop(&self) {
        self.shutdown.cancel();
    }
}

impl Drop for HttpTestServer {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// A plain HTTP client with no proxy (tests talk to loopback only).
pub fn plain_client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client")
}

/// One server-sent event.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SseEvent {
    /// `id:`.
    pub id: Option<String>,
    /// `event:`.
    pub event: Option<String>,
    /// The `data:` lines joined with newlines.
    pub data: String,
    /// `retry:`.
    pub retry: Option<u64>,
    /// Whether this was only a comment (a keep-alive).
    pub comment: bool,
}

impl SseEvent {
    /// The data as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data)
            .unwrap_or_else(|e| panic!("event data {:?} is not JSON: {e}", self.data))
    }

    /// Whether this is a priming event: an id and empty data.
    pub fn is_priming(&self) -> bool {
        !self.comment && self.id.is_some() && self.data.is_empty()
    }
}

/// Reads SSE events from a response body.
pub struct SseReader {
    body: BoxStream<'static, Result<Vec<u8>, reqwest::Error>>,
    buf: String,
    /// Whether the body ended.
    pub ended: bool,
}

impl SseReader {
    /// Reads the events of `response`.
    pub fn new(response: Response) -> Self {
        SseReader {
            body: response
                .bytes_stream()
                .map(|r| r.map(|b| b.to_vec()))
                .boxed(),
            buf: String::new(),
            ended: false,
        }
    }

    fn take_event(&mut self) -> Option<SseEvent> {
        let normalized = self.buf.replace("\r\n", "\n");
        self.buf = normalized;
        let end = self.buf.find("\n\n")?;
        let block: String = self.buf.drain(..end + 2).collect();
        let mut event = SseEvent::default();
        let mut data: Vec<&str> = Vec::new();
        let mut only_comments = true;
        for line in block.lines() {
            if line.is_empty() {
                continue;
            }
            if line.starts_with(':') {
                continue;
            }
            only_comments = false;
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "id" => event.id = Some(value.to_owned()),
                "event" => event.event = Some(value.to_owned()),
                "data" => data.push(value),
                "retry" => event.retry = value.parse().ok(),
                _ => {}
            }
        }
        event.data = data.join("\n");
        event.comment = only_comments;
        Some(event)
    }

    /// The next event (comments included), or `None` when the body ends. Panics after
    /// `timeout`.
    pub async fn next_within(&mut self, timeout: Duration) -> Option<SseEvent> {
        tokio::time::timeout(timeout, self.next_any())
            .await
            .expect("timed out waiting for an SSE event")
    }

    async fn next_any(&mut self) -> Option<SseEvent> {
        loop {
            if let Some(e) = self.take_event() {
                return Some(e);
            }
            if self.ended {
                return None;
            }
            match self.body.next().await {
                Some(Ok(chunk)) => self.buf.push_str(&String::from_utf8_lossy(&chunk)),
                Some(Err(_)) | None => self.ended = true,
            }
        }
    }

    /// The next event that is not a keep-alive comment, or `None` at the end.
    pub async fn next(&mut self) -> Option<SseEvent> {
        loop {
            match self.next_within(WAIT).await {
                Some(e) if e.comment => continue,
                other => return other,
            }
        }
    }

    /// The next message: the JSON of the next event with data (keep-alive comments and
    /// data-less priming events skipped), waiting up to 15 s for each event, as a message
    /// that follows a person's step (a browser flow) may take under load. Panics when the
    /// stream ends first.
    pub async fn next_json(&mut self) -> Value {
        loop {
            let e = self
                .next_within(Duration::from_secs(15))
                .await
                .expect("the stream ended early");
            if !e.comment && !e.data.is_empty() {
                return e.json();
            }
        }
    }

    /// Every remaining non-comment event until the body ends.
    pub async fn rest(&mut self) -> Vec<SseEvent> {
        let mut out = Vec::new();
        while let Some(e) = self.next().await {
            out.push(e);
        }
        out
    }

    /// Whether nothing but comments arrives within `quiet` (the body may stay open).
    pub async fn quiet_for(&mut self, quiet: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + quiet;
        loop {
            match tokio::time::timeout_at(deadline, self.next_any()).await {
                Err(_) => return true,
                Ok(Some(e)) if e.comment => continue,
                Ok(_) => return false,
            }
        }
    }
}

/// What a POST of a request produced.
#[derive(Debug)]
pub struct Exchange {
    /// The HTTP status.
    pub status: StatusCode,
    /// The response's content type.
    pub content_type: String,
    /// The messages before the response (SSE only), in order.
    pub before: Vec<Value>,
    /// The SSE events as received (SSE only), priming included.
    pub events: Vec<SseEvent>,
    /// The JSON-RPC response (or the JSON body of an error status).
    pub response: Value,
}

/// A small MCP client for Streamable HTTP.
#[derive(Clone)]
pub struct McpHttp {
    /// The underlying HTTP client.
    pub http: reqwest::Client,
    /// The endpoint URL.
    pub url: String,
    /// The session id, once initialized.
    pub session: Option<String>,
    /// The negotiated version, once initialized.
    pub version: Option<String>,
    /// A bearer token to send.
    pub token: Option<String>,
    methods: HashMap<String, String>,
}

impl McpHttp {
    /// A client for `url` with no session yet.
    pub fn new(url: impl Into<String>) -> Self {
        McpHttp {
            http: plain_client(),
            url: url.into(),
            session: None,
            version: None,
            token: None,
            methods: HashMap::new(),
        }
    }

    /// A POST with the standard headers: JSON body, both accept types, the session and
    /// version headers once known, the bearer token if any.
    pub fn post(&self, body: impl Into<String>) -> RequestBuilder {
        let mut b = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.into());
        if let Some(s) = &self.session {
            b = b.header("mcp-session-id", s);
        }
        if let Some(v) = &self.version {
            b = b.header("mcp-protocol-version", v);
        }
        if let Some(t) = &self.token {
            b = b.bearer_auth(t);
        }
        b
    }

    /// A GET of the session's stream.
    pub fn get(&self) -> RequestBuilder {
        self.stream_request(reqwest::Method::GET)
    }

    /// A HEAD to the endpoint, with the headers [`Self::get`] sends.
    pub fn head(&self) -> RequestBuilder {
        self.stream_request(reqwest::Method::HEAD)
    }

    fn stream_request(&self, method: reqwest::Method) -> RequestBuilder {
        let mut b = self
            .http
            .request(method, &self.url)
            .header("accept", "text/event-stream");
        if let Some(s) = &self.session {
            b = b.header("mcp-session-id", s);
        }
        if let Some(v) = &self.version {
            b = b.header("mcp-protocol-version", v);
        }
        if let Some(t) = &self.token {
            b = b.bearer_auth(t);
        }
        b
    }

    /// A DELETE of the session.
    pub fn delete(&self) -> RequestBuilder {
        let mut b = self.http.delete(&self.url);
        if let Some(s) = &self.session {
            b = b.header("mcp-session-id", s);
        }
        if let Some(t) = &self.token {
            b = b.bearer_auth(t);
        }
        b
    }

    fn check(&self, message: &Value) {
        let version = self.version.as_deref().unwrap_or("2025-11-25");
        let method = message
            .get("id")
            .and_then(|id| self.methods.get(&id.to_string()))
            .map(String::as_str);
        if let Err(e) = validate_server_message(version, message, method) {
            panic!("the server sent a message the {version} schema rejects: {e}\n{message}");
        }
    }

    /// Sends `initialize` and records the session and version. Panics on failure.
    pub async fn initialize(&mut self, version: &str, capabilities: Value) -> Value {
        let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": capabilities,
            "clientInfo": {"name": "http-test", "version": "1.0.0"}}});
        let response = self
            .post(body.to_string())
            .send()
            .await
            .expect("initialize");
        assert_eq!(response.status(), StatusCode::OK, "initialize status");
        let session = response
            .headers()
            .get("mcp-session-id")
            .expect("initialize answers with Mcp-Session-Id")
            .to_str()
            .unwrap()
            .to_owned();
        let value: Value = response.json().await.expect("initialize JSON");
        let negotiated = value["result"]["protocolVersion"]
            .as_str()
            .expect("a protocolVersion")
            .to_owned();
        self.session = Some(session);
        self.version = Some(negotiated);
        self.methods.insert("0".into(), "initialize".into());
        self.check(&value);
        let status = self.notify("notifications/initialized", None).await;
        assert_eq!(status, StatusCode::ACCEPTED);
        value["result"].clone()
    }

    /// Posts a notification; the status.
    pub async fn notify(&self, method: &str, params: Option<Value>) -> StatusCode {
        let mut body = json!({"jsonrpc": "2.0", "method": method});
        if let Some(p) = params {
            body["params"] = p;
        }
        self.post(body.to_string())
            .send()
            .await
            .expect("notify")
            .status()
    }

    /// Posts a request and reads the answer, JSON or SSE.
    pub async fn exchange(&mut self, id: Value, method: &str, params: Value) -> Exchange {
        self.methods.insert(id.to_string(), method.to_owned());
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let response = self.post(body.to_string()).send().await.expect("POST");
        self.read_exchange(response).await
    }

    /// Reads a POST's answer.
    pub async fn read_exchange(&self, response: Response) -> Exchange {
        let status = response.status();
        let content_type = response
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default();
        if content_type.starts_with("text/event-stream") {
            let mut reader = SseReader::new(response);
            let mut events = Vec::new();
            let mut before = Vec::new();
            let mut response = Value::Null;
            while let Some(e) = reader.next().await {
                events.push(e.clone());
                if e.data.is_empty() {
                    continue;
                }
                let v = e.json();
                self.check(&v);
                if v.get("method").is_none() && v.get("id").is_some() {
                    response = v;
                } else {
                    before.push(v);
                }
            }
            Exchange {
                status,
                content_type,
                before,
                events,
                response,
            }
        } else {
            let text = response.text().await.unwrap_or_default();
            let value: Value = if text.is_empty() {
                Value::Null
            } else {
                serde_json::from_str(&text).unwrap_or(Value::String(text))
            };
            if status == StatusCode::OK {
                self.check(&value);
            }
            Exchange {
                status,
                content_type,
                before: Vec::new(),
                events: Vec::new(),
                response: value,
            }
        }
    }

    /// Posts a request and returns its JSON-RPC response, asserting a 200.
    pub async fn request(&mut self, id: i64, method: &str, params: Value) -> Value {
        let ex = self.exchange(json!(id), method, params).await;
        assert_eq!(ex.status, StatusCode::OK, "{method}: {:?}", ex.response);
        ex.response
    }
}

/// The HTTP settings most tests use: the boot guard lifted (their servers choose no
/// authorizers), on loopback.
pub fn test_config() -> HttpConfig {
    HttpConfig::new().allow_unauthorized_for_local_development(true)
}

/// The server most HTTP tests run, and what its tools report.
pub struct Fixture {
    /// The server.
    pub server: Server,
    /// How many times the guarded tool `spend` really ran.
    pub spent: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    /// How many `wait` calls ran to completion.
    pub waited: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct WaitArgs {
    ms: u64,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoArgs {}

/// Tools: `add` (a+b), `job` (sleeps `ms`, as a task when allowed), `progress` (three
/// progress notifications, then "done"), `log`
/// (an info log, then "logged"), `spend` (sensitive: the authorizer asks first; counts its
/// runs), `wait` (sleeps `ms`, counts completions), `write_files` (needs scope
/// `files:write`), `whoami` (the verified principal's subject and scopes). A resource
/// `test://static`. The tool authorizer asks before `spend` and allows the rest; reads are
/// allowed.
pub fn fixture() -> Fixture {
    fixture_in(None, None)
}

/// [`fixture`], as one replica of `cluster` when one is given, sealing `requestState`
/// with `state_key` when one is given.
pub fn fixture_in(cluster: Option<mcp::cluster::Cluster>, state_key: Option<&[u8]>) -> Fixture {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use mcp::auth::{Decision, allow_all, policy};
    use mcp::registry::{ResourceDef, ToolDef};

    let spent = Arc::new(AtomicUsize::new(0));
    let waited = Arc::new(AtomicUsize::new(0));
    let s2 = Arc::clone(&spent);
    let w2 = Arc::clone(&waited);
    let server = Server::builder("http-fixture", "1.0.0")
        .tool(ToolDef::from_fn(
            "add",
            "Adds two integers.",
            |_ctx, x: AddArgs| async move { x.a + x.b },
        ))
        .tool(ToolDef::from_fn(
            "progress",
            "Reports progress three times, then answers.",
            |ctx: mcp::Ctx, _: NoArgs| async move {
                for i in 1..=3 {
                    ctx.progress(f64::from(i) * 10.0, Some(30.0), Some("working"));
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                "done"
            },
        ))
        .tool(ToolDef::from_fn(
            "log",
            "Logs at info, then answers.",
            |ctx: mcp::Ctx, _: NoArgs| async move {
                ctx.info("hello from the tool");
                "logged"
            },
        ))
        .tool(
            ToolDef::from_fn(
                "spend",
                "Spends money (asks first).",
                move |_ctx, _: NoArgs| {
                    let spent = Arc::clone(&s2);
                    async move {
                        spent.fetch_add(1, Ordering::SeqCst);
                        "spent"
                    }
                },
            )
            .sensitive(),
        )
        .tool(ToolDef::from_fn(
            "wait",
            "Sleeps, then answers.",
            move |ctx: mcp::Ctx, x: WaitArgs| {
                let waited = Arc::clone(&w2);
                async move {
                    ctx.progress(1.0, None, Some("started"));
                    tokio::time::sleep(Duration::from_millis(x.ms)).await;
                    waited.fetch_add(1, Ordering::SeqCst);
                    format!("waited {} ms", x.ms)
                }
            },
        ))
        .tool(
            ToolDef::from_fn(
                "write_files",
                "Writes files.",
                |_ctx, _: NoArgs| async move { "written" },
            )
            .scopes(["files:write"]),
        )
        .tool(ToolDef::from_fn(
            "whoami",
            "Names the verified caller.",
            |ctx: mcp::Ctx, _: NoArgs| async move {
                match ctx.principal() {
                    Some(p) => format!("{} [{}]", p.subject, p.scopes.join(" ")),
                    None => "anonymous".to_owned(),
                }
            },
        ))
        .tool(
            ToolDef::from_fn(
                "job",
                "Sleeps `ms` as a task when the client allows it, stopping when cancelled.",
                |ctx: mcp::Ctx, x: WaitArgs| async move {
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_millis(x.ms)) => format!("job done after {} ms", x.ms),
                        _ = ctx.cancelled() => "job stopped".to_owned(),
                    }
                },
            )
            .task_support(mcp::tasks::TaskSupport::Optional),
        )
        .resource(ResourceDef::new(
            "test://static",
            "static",
            |_ctx, _req| async move { "static text" },
        ))
        .authorizer(policy(|req| {
            if req.name() == "spend" {
                Decision::ask("Spend the money?")
            } else {
                Decision::Allow
            }
        }))
        .read_authorizer(allow_all());
    let server = match cluster {
        Some(c) => server.cluster(c),
        None => server,
    };
    let server = match state_key {
        Some(k) => server.state_key(k),
        None => server,
    }
    .build()
    .expect("fixture builds");
    Fixture {
        server,
        spent,
        waited,
    }
}

/// Replaces a header on a request (reqwest's `header` appends a second value).
pub fn with_header(b: RequestBuilder, name: &'static str, value: &str) -> RequestBuilder {
    let mut map = reqwest::header::HeaderMap::new();
    map.insert(
        reqwest::header::HeaderName::from_static(name),
        reqwest::header::HeaderValue::from_str(value).expect("a valid header value"),
    );
    b.headers(map)
}

/// The stateless revision.
pub const MODERN: &str = "2026-07-28";

/// A header value as a 2026-07-28 client sends it: as is when it is plain visible ASCII
/// (spaces inside allowed), `=?base64?<base64 of UTF-8>?=` otherwise (non-ASCII, control
/// characters, leading or trailing whitespace, or text that looks like that form).
pub fn header_value(text: &str) -> String {
    use base64::Engine as _;
    let sentinel = text.starts_with("=?base64?") && text.ends_with("?=");
    let padded = text.starts_with(' ') || text.ends_with(' ');
    let visible = text.bytes().all(|b| (0x20..=0x7e).contains(&b));
    let plain = !text.is_empty() && visible && !padded && !sentinel;
    if plain {
        text.to_owned()
    } else {
        format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(text.as_bytes())
        )
    }
}

/// The schema definition of a 2026-07-28 error, by code, and whether it describes the
/// whole response (`true`) or only its `error` member.
fn error_definition(code: i64) -> Option<(&'static str, bool)> {
    Some(match code {
        -32700 => ("ParseError", false),
        -32600 => ("InvalidRequestError", false),
        -32601 => ("MethodNotFoundError", false),
        -32602 => ("InvalidParamsError", false),
        -32603 => ("InternalError", false),
        -32020 => ("HeaderMismatchError", true),
        -32021 => ("MissingRequiredClientCapabilityError", true),
        -32022 => ("UnsupportedProtocolVersionError", true),
        _ => return None,
    })
}

/// Checks one message a server sent on the 2026-07-28 revision: valid against the
/// official schema (errors against the definition of their code too), and never a
/// request (this revision has no server-to-client requests). Panics otherwise.
pub fn check_stateless(message: &Value, request_method: Option<&str>) {
    assert!(
        !(message.get("method").is_some() && message.get("id").is_some()),
        "the server sent a request on 2026-07-28: {message}"
    );
    if let Err(e) = validate_server_message(MODERN, message, request_method) {
        panic!("the server sent a message the {MODERN} schema rejects: {e}\n{message}");
    }
    if let Some(code) = message["error"]["code"].as_i64()
        && let Some((definition, whole)) = error_definition(code)
    {
        let schema = crate::schema::SchemaValidator::for_version(MODERN);
        let instance = if whole { message } else { &message["error"] };
        if let Err(e) = schema.validate(definition, instance) {
            panic!("the error does not match {definition}: {e}");
        }
    }
}

/// A client of the stateless 2026-07-28 revision over Streamable HTTP: every request
/// carries `_meta` (version, capabilities, client info) and the headers that mirror it;
/// every message the server sends back is checked with [`check_stateless`].
#[derive(Clone)]
pub struct StatelessHttp {
    /// The underlying HTTP client.
    pub http: reqwest::Client,
    /// The endpoint URL.
    pub url: String,
    /// The client capabilities every request declares.
    pub capabilities: Value,
    /// A bearer token to send.
    pub token: Option<String>,
}

impl StatelessHttp {
    /// A client for `url` declaring no capabilities.
    pub fn new(url: impl Into<String>) -> Self {
        StatelessHttp {
            http: plain_client(),
            url: url.into(),
            capabilities: json!({}),
            token: None,
        }
    }

    /// The same client declaring `capabilities`.
    pub fn with_capabilities(mut self, capabilities: Value) -> Self {
        self.capabilities = capabilities;
        self
    }

    /// The `_meta` every request carries.
    pub fn meta(&self) -> Value {
        json!({
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": self.capabilities,
            "io.modelcontextprotocol/clientInfo": {"name": "http-stateless-test", "version": "1.0.0"},
        })
    }

    /// `params` with the request `_meta` merged in (members already in `params._meta`
    /// win).
    pub fn with_meta(&self, mut params: Value) -> Value {
        let mut meta = self.meta();
        if let Some(own) = params.get("_meta").and_then(Value::as_object) {
            for (k, v) in own {
                meta[k] = v.clone();
            }
        }
        if !params.is_object() {
            params = json!({});
        }
        params["_meta"] = meta;
        params
    }

    /// A POST of `body` with the content negotiation headers (and the token) only.
    pub fn post_raw(&self, body: &Value) -> RequestBuilder {
        let mut b = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string());
        if let Some(t) = &self.token {
            b = b.bearer_auth(t);
        }
        b
    }

    /// A POST of a request with its `_meta` and the standard headers a conforming client
    /// sends (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` where the method has one).
    pub fn post(&self, id: Value, method: &str, params: Value) -> RequestBuilder {
        let params = self.with_meta(params);
        let name = match method {
            "tools/call" | "prompts/get" => params["name"].as_str().map(str::to_owned),
            "resources/read" => params["uri"].as_str().map(str::to_owned),
            "tasks/get" | "tasks/update" | "tasks/cancel" => {
                params["taskId"].as_str().map(str::to_owned)
            }
            _ => None,
        };
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let mut b = self
            .post_raw(&body)
            .header("mcp-protocol-version", MODERN)
            .header("mcp-method", method);
        if let Some(name) = name {
            b = b.header("mcp-name", header_value(&name));
        }
        b
    }

    /// Posts a request and reads the answer.
    pub async fn exchange(&self, id: Value, method: &str, params: Value) -> Exchange {
        let response = self.post(id, method, params).send().await.expect("POST");
        self.read(method, response).await
    }

    /// Posts a request and returns its JSON-RPC response, asserting a 200.
    pub async fn request(&self, id: Value, method: &str, params: Value) -> Value {
        let ex = self.exchange(id, method, params).await;
        assert_eq!(ex.status, StatusCode::OK, "{method}: {}", ex.response);
        ex.response
    }

    /// Reads the answer to a request of `method`, checking every message, that no
    /// session id is minted, and that a stream has no event ids and disables proxy
    /// buffering.
    pub async fn read(&self, method: &str, response: Response) -> Exchange {
        let status = response.status();
        assert!(
            response.headers().get("mcp-session-id").is_none(),
            "the stateless revision never mints a session id"
        );
        let content_type = response
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default();
        if content_type.starts_with("text/event-stream") {
            assert_eq!(
                response
                    .headers()
                    .get("x-accel-buffering")
                    .map(|v| v.to_str().unwrap()),
                Some("no")
            );
            let mut reader = SseReader::new(response);
            let mut events = Vec::new();
            let mut before = Vec::new();
            let mut answer = Value::Null;
            while let Some(e) = reader.next().await {
                assert!(
                    e.id.is_none(),
                    "streams of 2026-07-28 have no event ids: {e:?}"
                );
                assert!(answer.is_null(), "nothing may follow the response: {e:?}");
                events.push(e.clone());
                let v = e.json();
                if v.get("method").is_none() {
                    check_stateless(&v, Some(method));
                    answer = v;
                } else {
                    check_stateless(&v, None);
                    before.push(v);
                }
            }
            Exchange {
                status,
                content_type,
                before,
                events,
                response: answer,
            }
        } else {
            let text = response.text().await.unwrap_or_default();
            let value: Value = if text.is_empty() {
                Value::Null
            } else {
                serde_json::from_str(&text)
                    .unwrap_or_else(|e| panic!("a body that is not JSON ({e}): {text:?}"))
            };
            if !value.is_null() {
                check_stateless(&value, Some(method));
            }
            Exchange {
                status,
                content_type,
                before: Vec::new(),
                events: Vec::new(),
                response: value,
            }
        }
    }
}

/// A replica joins its cluster before it serves, as [`http::serve`] does: the bus listens
/// before the first request.
async fn join(server: &Server) {
    if let Some(cluster) = server.cluster() {
        cluster
            .start()
            .await
            .expect("the replica joins its cluster");
    }
}
