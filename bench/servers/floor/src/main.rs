//! The floor: no framework, just the cost of parsing, dispatch, serialization and syscalls.
//! It answers the benchmark's requests correctly (initialize, the lists, `echo`, `add`, the
//! resource, the prompt) and nothing more: no validation beyond what serde does, no
//! concurrency on stdio, no cancellation, no authorization.
//!
//! ```text
//! floor [--transport stdio|http] [--bind 127.0.0.1:8080]
//! ```

mod growth;

use std::borrow::Cow;
use std::collections::HashSet;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde::Deserialize;
use serde_json::value::RawValue;

const LATEST_HANDSHAKE: &str = "2025-11-25";
const MODERN: &str = "2026-07-28";
const SERVER_INFO: &str = r#"{"name":"bench-floor","version":"0.0.0"}"#;

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow)]
    id: Option<&'a RawValue>,
    #[serde(borrow)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow)]
    params: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct CallParams<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(borrow)]
    arguments: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct EchoArgs<'a> {
    #[serde(borrow)]
    text: Cow<'a, str>,
}

#[derive(Deserialize)]
struct AddArgs {
    a: i64,
    b: i64,
}

#[derive(Deserialize)]
struct InitParams<'a> {
    #[serde(rename = "protocolVersion", borrow)]
    protocol_version: Cow<'a, str>,
}

#[derive(Deserialize)]
struct UriParams<'a> {
    #[serde(borrow)]
    uri: Cow<'a, str>,
}

#[derive(Deserialize)]
struct PromptParams<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    arguments: Option<GreetArgs<'a>>,
}

#[derive(Deserialize)]
struct GreetArgs<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
}

const TOOLS: &str = r#"{"tools":[{"name":"echo","description":"Returns its argument unchanged.","inputSchema":{"type":"object","properties":{"text":{"type":"string","description":"The text to return."}},"required":["text"]},"annotations":{"readOnlyHint":true,"idempotentHint":true}},{"name":"add","description":"Adds two integers.","inputSchema":{"type":"object","properties":{"a":{"type":"integer","description":"The first addend."},"b":{"type":"integer","description":"The second addend."}},"required":["a","b"]},"annotations":{"readOnlyHint":true,"idempotentHint":true}}]}"#;
const RESOURCES: &str = r#"{"resources":[{"uri":"bench://about","name":"about","description":"A short text about this server.","mimeType":"text/plain"}]}"#;
const ABOUT: &str = r#"{"contents":[{"uri":"bench://about","mimeType":"text/plain","text":"The benchmark server: echo, add, this resource and one prompt."}]}"#;
const PROMPTS: &str = r#"{"prompts":[{"name":"greet","description":"Asks for a greeting.","arguments":[{"name":"name","description":"Who to greet.","required":true}]}]}"#;

/// A JSON-RPC error: code and message.
type Fail = (i32, &'static str);

/// The result object (JSON text) for one request.
fn answer(method: &str, params: Option<&RawValue>) -> Result<String, Fail> {
    let params = params.map_or("{}", RawValue::get);
    let bad = (-32602, "Invalid params");
    Ok(match method {
        "tools/call" => {
            let p: CallParams = serde_json::from_str(params).map_err(|_| bad)?;
            let args = p.arguments.map_or("{}", RawValue::get);
            let text: Cow<str> = match &*p.name {
                "echo" => {
                    serde_json::from_str::<EchoArgs>(args)
                        .map_err(|_| bad)?
                        .text
                }
                "add" => {
                    let a: AddArgs = serde_json::from_str(args).map_err(|_| bad)?;
                    a.a.wrapping_add(a.b).to_string().into()
                }
                name if growth::is_generated(name) => "ok".into(),
                _ => return Err((-32602, "Unknown tool")),
            };
            let mut out = String::with_capacity(text.len() + 48);
            out.push_str(r#"{"content":[{"type":"text","text":"#);
            out.push_str(&serde_json::to_string(&*text).unwrap_or_default());
            out.push_str("}]}");
            out
        }
        "tools/list" => growth::tools_list().to_owned(),
        "resources/list" => RESOURCES.to_owned(),
        "resources/read" => {
            let p: UriParams = serde_json::from_str(params).map_err(|_| bad)?;
            if p.uri != "bench://about" {
                return Err((-32002, "Resource not found"));
            }
            ABOUT.to_owned()
        }
        "prompts/list" => PROMPTS.to_owned(),
        "prompts/get" => {
            let p: PromptParams = serde_json::from_str(params).map_err(|_| bad)?;
            let (true, Some(args)) = (p.name == "greet", p.arguments) else {
                return Err(bad);
            };
            let text = format!("Say hello to {}.", args.name);
            format!(
                r#"{{"messages":[{{"role":"user","content":{{"type":"text","text":{}}}}}]}}"#,
                serde_json::to_string(&text).unwrap_or_default()
            )
        }
        "ping" => "{}".to_owned(),
        "initialize" => {
            let p: InitParams = serde_json::from_str(params).map_err(|_| bad)?;
            let version = match &*p.protocol_version {
                v @ ("2024-11-05" | "2025-03-26" | "2025-06-18" | "2025-11-25") => v,
                _ => LATEST_HANDSHAKE,
            };
            format!(
                r#"{{"protocolVersion":"{version}","capabilities":{{"tools":{{}},"resources":{{}},"prompts":{{}}}},"serverInfo":{SERVER_INFO}}}"#
            )
        }
        _ => return Err((-32601, "Method not found")),
    })
}

/// Appends the response line for one request to `out`.
fn respond(out: &mut Vec<u8>, id: &RawValue, result: Result<String, Fail>) {
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    out.extend_from_slice(id.get().as_bytes());
    match result {
        Ok(r) => {
            out.extend_from_slice(br#","result":"#);
            out.extend_from_slice(r.as_bytes());
        }
        Err((code, message)) => {
            let _ = write!(out, r#","error":{{"code":{code},"message":"{message}"}}"#);
        }
    }
    out.push(b'}');
}

/// One line in, at most one line out.
fn handle_line(line: &[u8], out: &mut Vec<u8>) {
    let Ok(env) = serde_json::from_slice::<Envelope>(line) else {
        out.extend_from_slice(
            br#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"}}"#,
        );
        out.push(b'\n');
        return;
    };
    let (Some(id), Some(method)) = (env.id, env.method) else {
        return; // a notification (or a response): nothing to say
    };
    respond(out, id, answer(&method, env.params));
    out.push(b'\n');
}

/// stdio: read what is there, answer every complete line, write all answers at once.
fn serve_stdio() {
    let mut input = std::io::stdin().lock();
    let mut output = std::io::stdout().lock();
    let mut buf = vec![0u8; 64 * 1024];
    let mut filled = 0;
    let mut out = Vec::with_capacity(64 * 1024);
    loop {
        if filled == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
        let n = match input.read(&mut buf[filled..]) {
            Ok(0) => return,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return,
        };
        // Only the bytes just read can hold a newline: what was left over holds none, so a
        // long line is scanned once, not once per read.
        let mut scan = filled;
        filled += n;
        let mut start = 0;
        while let Some(pos) = buf[scan..filled].iter().position(|&b| b == b'\n') {
            let end = scan + pos;
            handle_line(&buf[start..end], &mut out);
            start = end + 1;
            scan = start;
        }
        buf.copy_within(start..filled, 0);
        filled -= start;
        if !out.is_empty() {
            if output.write_all(&out).is_err() {
                return;
            }
            out.clear();
        }
    }
}

type Body = http_body_util::Full<bytes::Bytes>;

struct Http {
    sessions: Mutex<HashSet<String>>,
    next: AtomicU64,
}

fn reply(status: u16, body: impl Into<bytes::Bytes>) -> hyper::Response<Body> {
    let mut r = hyper::Response::new(Body::new(body.into()));
    *r.status_mut() = hyper::StatusCode::from_u16(status).unwrap_or_default();
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    r
}

fn error(status: u16, id: Option<&RawValue>, code: i32, message: &str) -> hyper::Response<Body> {
    let id = id.map_or("null", RawValue::get);
    reply(
        status,
        format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":{code},"message":"{message}"}}}}"#),
    )
}

impl Http {
    async fn handle(
        &self,
        req: hyper::Request<hyper::body::Incoming>,
    ) -> Result<hyper::Response<Body>, std::convert::Infallible> {
        use http_body_util::BodyExt as _;
        if req.method() != hyper::Method::POST {
            return Ok(reply(405, ""));
        }
        let (parts, body) = req.into_parts();
        let Ok(body) = body.collect().await else {
            return Ok(reply(400, ""));
        };
        let body = body.to_bytes();
        let header = |name: &str| parts.headers.get(name).and_then(|v| v.to_str().ok());
        let Ok(env) = serde_json::from_slice::<Envelope>(&body) else {
            return Ok(error(400, None, -32700, "Parse error"));
        };
        let Some(method) = env.method.as_deref() else {
            return Ok(reply(202, ""));
        };
        let Some(id) = env.id else {
            return Ok(reply(202, "")); // notifications/initialized and friends
        };
        let modern = header("mcp-protocol-version") == Some(MODERN);
        let mut session = None;
        if modern {
            // Stateless: the headers must agree with the body.
            if header("mcp-method") != Some(method) {
                return Ok(error(
                    400,
                    Some(id),
                    -32020,
                    "Mcp-Method does not match the body",
                ));
            }
            if method == "tools/call" {
                #[derive(Deserialize)]
                struct Named<'a> {
                    #[serde(borrow)]
                    name: Cow<'a, str>,
                    #[serde(rename = "_meta")]
                    meta: Option<serde::de::IgnoredAny>,
                }
                let params = env.params.map_or("{}", RawValue::get);
                let Ok(named) = serde_json::from_str::<Named>(params) else {
                    return Ok(error(400, Some(id), -32602, "Invalid params"));
                };
                if named.meta.is_none() {
                    return Ok(error(400, Some(id), -32602, "Missing _meta"));
                }
                if header("mcp-name") != Some(&*named.name) {
                    return Ok(error(
                        400,
                        Some(id),
                        -32020,
                        "Mcp-Name does not match the body",
                    ));
                }
            }
        } else if method == "initialize" {
            let n = self.next.fetch_add(1, Ordering::Relaxed);
            let sid = format!("{:016x}{:016x}", n, std::process::id());
            self.sessions.lock().unwrap().insert(sid.clone());
            session = Some(sid);
        } else {
            let known =
                header("mcp-session-id").is_some_and(|s| self.sessions.lock().unwrap().contains(s));
            if !known {
                return Ok(error(404, Some(id), -32600, "Unknown session"));
            }
        }
        let result = answer(method, env.params).map(|r| {
            if !modern {
                return r;
            }
            // 2026-07-28: every result says it is complete and who answered.
            let inner = r.strip_prefix('{').unwrap_or("}");
            let sep = if inner == "}" { "" } else { "," };
            format!(
                r#"{{"resultType":"complete","_meta":{{"io.modelcontextprotocol/serverInfo":{SERVER_INFO}}}{sep}{inner}"#
            )
        });
        let mut out = Vec::with_capacity(256);
        respond(&mut out, id, result);
        let mut response = reply(200, out);
        if let Some(sid) = session
            && let Ok(v) = hyper::header::HeaderValue::from_str(&sid)
        {
            response.headers_mut().insert("mcp-session-id", v);
        }
        Ok(response)
    }
}

async fn serve_http(bind: SocketAddr) {
    let state = Arc::new(Http {
        sessions: Mutex::new(HashSet::new()),
        next: AtomicU64::new(1),
    });
    let listener = tokio::net::TcpListener::bind(bind).await.expect("bind");
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let _ = stream.set_nodelay(true);
        let state = Arc::clone(&state);
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let state = Arc::clone(&state);
                async move { state.handle(req).await }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await;
        });
    }
}

fn main() {
    let mut transport = "stdio".to_owned();
    let mut bind: SocketAddr = "127.0.0.1:8080".parse().unwrap();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--transport" => transport = args.next().expect("--transport needs a value"),
            "--bind" => {
                bind = args
                    .next()
                    .and_then(|a| a.parse().ok())
                    .expect("--bind needs an address")
            }
            other => panic!("unknown argument {other}"),
        }
    }
    match transport.as_str() {
        "stdio" => serve_stdio(),
        "http" => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("runtime")
            .block_on(serve_http(bind)),
        other => panic!("unknown transport {other}"),
    }
}
