//! Any HTTP request to the HTTP transports (Streamable HTTP, legacy HTTP+SSE, sessionless
//! requests on): method, path, headers and body from the input, in which `$SESSION` stands
//! for a live session's id. Parses every header the transports read: Host and Origin,
//! Accept and Content-Type, Content-Length, Mcp-Session-Id, MCP-Protocol-Version,
//! Last-Event-ID, Authorization.
//!
//! Input: `METHOD PATH\nName: value\n...\n\nbody`. Checks: nothing panics or hangs; a
//! request reaches the transport only if its Host (and Origin, if any) is a loopback name,
//! by a reference check of our own; every JSON body parses; a session id the client
//! supplied is never answered as if it were issued.

#![no_main]

use std::sync::OnceLock;
use std::time::Duration;

use futures::StreamExt as _;
use libfuzzer_sys::fuzz_target;
use mcp::transport::http::axum::Router;
use mcp::transport::http::axum::body::Body;
use mcp::transport::http::axum::http::{HeaderName, HeaderValue, Method, Request, Uri};
use mcp::transport::http::{HttpConfig, router};
use mcp_fuzz::{runtime, server};
use tower::ServiceExt as _;

fn app() -> &'static Router {
    static APP: OnceLock<Router> = OnceLock::new();
    APP.get_or_init(|| {
        let config = HttpConfig::new()
            .allow_unauthorized_for_local_development(true)
            .legacy_sse(true)
            .allow_sessionless_requests(true)
            .max_sessions(64);
        router(server().clone(), config).expect("the router builds")
    })
}

/// The reference DNS-rebinding rule: a loopback name, optionally with a port.
fn loopback_host(host: &str) -> bool {
    let host = host.trim().to_ascii_lowercase();
    let (name, port) = match host.strip_prefix("[::1]") {
        Some(rest) => ("[::1]", rest),
        None => match host.find(':') {
            Some(i) => (&host[..i], &host[i..]),
            None => (host.as_str(), ""),
        },
    };
    let port_ok = port.is_empty()
        || port
            .strip_prefix(':')
            .is_some_and(|p| p.parse::<u16>().is_ok());
    matches!(name, "localhost" | "127.0.0.1" | "[::1]") && port_ok
}

fn loopback_origin(origin: &str) -> bool {
    let Some((scheme, rest)) = origin.trim().split_once("://") else {
        return false;
    };
    let scheme = scheme.to_ascii_lowercase();
    let authority = rest.split('/').next().unwrap_or("");
    (scheme == "http" || scheme == "https") && !authority.contains('@') && loopback_host(authority)
}

struct Answer {
    status: u16,
    session: Option<String>,
    json: bool,
    body: Vec<u8>,
}

async fn send(request: Request<Body>) -> Answer {
    let response = app().clone().oneshot(request).await.expect("infallible");
    let status = response.status().as_u16();
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let json = response
        .headers()
        .get("content-type")
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    let mut stream = response.into_body().into_data_stream();
    let mut body = Vec::new();
    // SSE streams may never end: read what comes within a moment, then hang up.
    let deadline = tokio::time::sleep(Duration::from_millis(50));
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            chunk = stream.next() => match chunk {
                Some(Ok(bytes)) if body.len() < 1 << 20 => body.extend_from_slice(&bytes),
                _ => break,
            },
            () = &mut deadline => break,
        }
    }
    Answer {
        status,
        session,
        json,
        body,
    }
}

fn request(method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Request<Body> {
    let mut b = Request::builder().method(method).uri(path);
    for (n, v) in headers {
        b = b.header(*n, *v);
    }
    b.body(Body::from(body.to_owned()))
        .expect("a valid request")
}

const JSON_HEADERS: [(&str, &str); 3] = [
    ("host", "127.0.0.1:8080"),
    ("content-type", "application/json"),
    ("accept", "application/json, text/event-stream"),
];

async fn open_session() -> String {
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"fuzz","version":"0"}}}"#;
    let a = send(request("POST", "/mcp", &JSON_HEADERS, init)).await;
    a.session.expect("initialize opens a session")
}

async fn close_session(id: &str) {
    let mut headers = JSON_HEADERS.to_vec();
    headers.push(("mcp-session-id", id));
    send(request("DELETE", "/mcp", &headers, "")).await;
}

fuzz_target!(|data: &[u8]| {
    runtime().block_on(async {
        let session = open_session().await;
        let input = String::from_utf8_lossy(data).replace("$SESSION", &session);
        let (head, body) = input.split_once("\n\n").unwrap_or((&input, ""));
        let mut lines = head.lines();
        let first = lines.next().unwrap_or("");
        let (method, path) = first.split_once(' ').unwrap_or((first, "/mcp"));
        let method = Method::from_bytes(method.as_bytes()).unwrap_or(Method::POST);
        let uri: Uri = path
            .trim()
            .parse()
            .unwrap_or_else(|_| Uri::from_static("/mcp"));
        let mut builder = Request::builder().method(method).uri(uri.clone());
        let mut supplied_session = None;
        let mut host = None;
        let mut origin = None;
        for line in lines {
            let Some((name, value)) = line.split_once(':') else {
                continue;
            };
            let value = value.strip_prefix(' ').unwrap_or(value);
            let (Ok(n), Ok(v)) = (
                HeaderName::from_bytes(name.as_bytes()),
                HeaderValue::from_str(value),
            ) else {
                continue;
            };
            let text = v.to_str().ok().map(str::to_owned);
            match n.as_str() {
                "mcp-session-id" => supplied_session = supplied_session.or(text),
                "host" => host = host.or(Some(text)),
                "origin" => origin = origin.or(Some(text)),
                _ => {}
            }
            builder = builder.header(n, v);
        }
        let Ok(request) = builder.body(Body::from(body.to_owned())) else {
            close_session(&session).await;
            return;
        };
        let answer = send(request).await;

        if answer.json {
            assert!(
                serde_json::from_slice::<serde_json::Value>(&answer.body).is_ok(),
                "a JSON response that does not parse: {:?}",
                String::from_utf8_lossy(&answer.body)
            );
        }
        // The guard: only MCP routes are guarded, after the header-size check.
        let guarded = ["/mcp", "/sse", "/messages"].contains(&uri.path());
        if guarded && answer.status != 431 {
            let host_ok = match &host {
                Some(Some(h)) => loopback_host(h),
                Some(None) => false,
                None => uri.authority().is_some_and(|a| loopback_host(a.as_str())),
            };
            let origin_ok = match &origin {
                None => true,
                Some(Some(o)) => loopback_origin(o),
                Some(None) => false,
            };
            let refused = answer.status == 403
                && String::from_utf8_lossy(&answer.body).contains("DNS rebinding");
            let no_host = answer.status == 403
                && String::from_utf8_lossy(&answer.body).contains("no Host header");
            assert_eq!(
                refused || no_host,
                !(host_ok && origin_ok),
                "guard verdict for Host {host:?} Origin {origin:?}: status {}",
                answer.status
            );
        }
        // A session id is only ever one the server issued.
        if let Some(answered) = &answer.session {
            let issued_now = answered != &session;
            assert!(
                !issued_now || supplied_session.as_deref() != Some(answered.as_str()),
                "the server adopted a client-chosen session id {answered:?}"
            );
            if issued_now {
                close_session(answered).await;
            }
        }
        close_session(&session).await;
    });
});
