//! URL-elicitation references (`mcp::connect`): links a tool sends users to, opened and
//! returned from in any order, by their owner, by someone else or by no one, with the
//! references and states the server issued, changed by a character, or made up.
//!
//! Input: a byte program. Each step calls the tool as alice or bob (which issues a link, or
//! answers with the caller's token once connected), opens a link (`{path}/{reference}`),
//! or comes back from the third party (`{path}/callback?state=..&code=..`), as alice, bob
//! or nobody.
//!
//! Checks, against a model of what was issued: a link sends the browser on to the third
//! party only if the server issued it, nobody opened it before, and its owner opens it; a
//! return connects an account only for a state the server sent, once, to the same person,
//! without an error; a caller's token is always one from a sign-in that caller completed.

#![no_main]

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use futures::future::BoxFuture;
use libfuzzer_sys::fuzz_target;
use mcp::auth::{Decision, Principal, allow_all, policy};
use mcp::connect::{BrowserUser, Connect, MemoryTokenStore, Provider, TokenSet, identity_fn};
use mcp::prelude::*;
use mcp::protocol::Era;
use mcp::protocol::jsonrpc::Message;
use mcp::server::{Outbound, RequestExtras};
use mcp::transport::http::axum::Router;
use mcp::transport::http::axum::body::Body;
use mcp::transport::http::axum::http::{HeaderValue, Request};
use mcp::{ConnId, Transport};
use mcp_fuzz::{Program, runtime};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tower::ServiceExt as _;

/// A third party that hands out `tok-<code>` for any code, with no network.
struct Fake;

impl Provider for Fake {
    fn authorize_url(&self, state: &str, challenge: &str, _redirect_uri: &str) -> String {
        format!("https://third.example/authorize?state={state}&code_challenge={challenge}")
    }

    fn exchange<'a>(
        &'a self,
        code: &'a str,
        _verifier: &'a str,
        _redirect_uri: &'a str,
    ) -> BoxFuture<'a, Result<TokenSet, String>> {
        let tokens = TokenSet::new(format!("tok-{code}"), None, None, None);
        Box::pin(async move { Ok(tokens) })
    }
}

#[derive(Deserialize, JsonSchema)]
struct Nothing {}

const WHO: [&str; 3] = ["alice", "bob", ""];

/// The most steps one input takes. A link's whole life (a call that parks it, the visit,
/// the callback) is three steps; longer programs mostly repeat them, and unbounded, inputs
/// of up to 4 KiB ran thousands of requests each.
const MAX_STEPS: usize = 64;

/// One of `known`, one of them with a character changed, or made-up text.
fn pick(p: &mut Program<'_>, known: &[String]) -> String {
    let how = p.byte().unwrap_or(0);
    let i = usize::from(p.byte().unwrap_or(0));
    match (how % 4, known.is_empty()) {
        (0 | 1, false) => known[i % known.len()].clone(),
        (2, false) => {
            let mut s: Vec<char> = known[i % known.len()].chars().collect();
            let at = usize::from(p.byte().unwrap_or(0)) % s.len().max(1);
            if let Some(c) = s.get_mut(at) {
                *c = if *c == 'A' { 'B' } else { 'A' };
            }
            s.into_iter().collect()
        }
        _ => p.text(12),
    }
}

/// Percent-encodes a query value (the model's made-up values may hold anything).
fn encode(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

async fn get(app: &Router, uri: &str, who: &str) -> Option<(u16, Option<String>, String)> {
    let mut request = Request::builder().uri(uri);
    if !who.is_empty() {
        request = request.header("x-who", HeaderValue::from_str(who).ok()?);
    }
    let response = app
        .clone()
        .oneshot(request.body(Body::empty()).ok()?)
        .await
        .expect("infallible");
    let status = response.status().as_u16();
    let location = response
        .headers()
        .get("location")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = axum_body(response.into_body()).await;
    Some((status, location, body))
}

async fn axum_body(body: Body) -> String {
    use futures::StreamExt as _;
    let mut stream = body.into_data_stream();
    let mut out = Vec::new();
    while let Some(Ok(chunk)) = stream.next().await {
        out.extend_from_slice(&chunk);
    }
    String::from_utf8_lossy(&out).into_owned()
}

fuzz_target!(|data: &[u8]| {
    let connect = Connect::builder("http://127.0.0.1:1")
        .provider("codehost", Fake)
        .identity(identity_fn(
            |headers: mcp::transport::http::axum::http::HeaderMap| async move {
                let who = headers.get("x-who")?.to_str().ok()?.to_owned();
                Some(BrowserUser::new(who, None))
            },
        ))
        .tokens(MemoryTokenStore::new())
        // A client that takes URLs but whose request cannot carry a question gets the link
        // in a -32042 error at once (no waiting call).
        .answer_url_required(true)
        .max_pending(8)
        .build();
    let server = Server::builder("connect", "1")
        .state(connect.clone())
        .tool(ToolDef::from_fn(
            "token",
            "The caller's token.",
            |ctx: Ctx, _n: Nothing| async move {
                let connect = ctx.state::<Connect>().expect("the Connect state");
                let token = connect.token(&ctx, "codehost").await?;
                Ok::<_, mcp::connect::ConnectError>(token.access_token().to_owned())
            },
        ))
        .authorizer(policy(|_| Decision::Allow))
        .read_authorizer(allow_all())
        .build()
        .expect("the server builds");
    let app = connect.routes();
    let path = connect.path().to_owned();
    let mut p = Program(data);

    runtime().block_on(async {
        let mut conns = Vec::new();
        for who in &WHO[..2] {
            let (sink, _rx) = Outbound::channel(64);
            let conn = server.connect(ConnId::new(who), Transport::Http, sink);
            let principal = Arc::new(Principal::new(*who, Vec::new()));
            let init = Message::request(
                0,
                "initialize",
                json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {"elicitation": {"url": {}}},
                "clientInfo": {"name": "fuzz", "version": "0"}}),
            );
            let extras = || RequestExtras {
                era: Some(Era::Handshake),
                principal: Some(Arc::clone(&principal)),
                ..Default::default()
            };
            conn.handle_with(init, extras())
                .await
                .expect("initialize answers");
            conn.handle_with(
                Message::notification("notifications/initialized", None),
                extras(),
            )
            .await;
            conns.push((conn, principal, _rx));
        }

        // The model: who owns each reference and each state; which were used.
        let mut references: HashMap<String, &str> = HashMap::new();
        let mut reference_list: Vec<String> = Vec::new();
        let mut attempted: HashSet<String> = HashSet::new();
        let mut redirected: HashSet<String> = HashSet::new();
        let mut states: HashMap<String, &str> = HashMap::new();
        let mut state_list: Vec<String> = Vec::new();
        // The states that connected an account (each may once).
        let mut returned: HashSet<String> = HashSet::new();
        let mut tokens: HashMap<&str, HashSet<String>> = HashMap::new();
        let mut id = 0;

        let mut steps = 0;
        while let Some(op) = p.byte() {
            steps += 1;
            if steps > MAX_STEPS {
                break;
            }
            match op % 3 {
                0 => {
                    let who = usize::from(op / 3 % 2);
                    let (conn, principal, _) = &conns[who];
                    id += 1;
                    let call = Message::request(
                        id,
                        "tools/call",
                        json!({"name": "token", "arguments": {}}),
                    );
                    let extras = RequestExtras {
                        era: Some(Era::Handshake),
                        principal: Some(Arc::clone(principal)),
                        ..Default::default()
                    };
                    let reply = conn
                        .handle_with(call, extras)
                        .await
                        .expect("a call is answered");
                    let v: Value = serde_json::from_str(reply.frame()).expect("JSON");
                    if let Some(url) = v["error"]["data"]["elicitations"][0]["url"].as_str() {
                        let reference = url.rsplit('/').next().unwrap_or("").to_owned();
                        references.insert(reference.clone(), WHO[who]);
                        reference_list.push(reference);
                    } else if let Some(text) = v["result"]["content"][0]["text"].as_str()
                        && v["result"]["isError"] != json!(true)
                    {
                        assert!(
                            tokens.get(WHO[who]).is_some_and(|t| t.contains(text)),
                            "{} got a token from a sign-in they did not complete: {text}",
                            WHO[who]
                        );
                    }
                }
                1 => {
                    let who = WHO[usize::from(op / 3 % 3)];
                    let reference = pick(&mut p, &reference_list);
                    let uri = format!("{path}/{}", encode(&reference));
                    let Some((status, location, _)) = get(&app, &uri, who).await else {
                        continue;
                    };
                    let owner = references.get(&reference).copied();
                    let untried = !attempted.contains(&reference);
                    if status == 302 || status == 303 {
                        assert!(
                            owner == Some(who) && !redirected.contains(&reference),
                            "{who:?} was sent on with reference {reference:?} (owner {owner:?})"
                        );
                        redirected.insert(reference.clone());
                        let location = location.expect("a redirect names where");
                        let state = location
                            .split(['?', '&'])
                            .find_map(|kv| kv.strip_prefix("state="))
                            .expect("the third party gets a state")
                            .to_owned();
                        states.insert(state.clone(), who);
                        state_list.push(state);
                    } else if owner == Some(who) && untried {
                        panic!("the owner's untried link was refused: {status}");
                    }
                    attempted.insert(reference);
                }
                _ => {
                    let who = WHO[usize::from(op / 3 % 3)];
                    let state = pick(&mut p, &state_list);
                    let code = p.text(12);
                    let error = p.byte().unwrap_or(0) % 8 == 0;
                    let mut uri = format!(
                        "{path}/callback?state={}&code={}",
                        encode(&state),
                        encode(&code)
                    );
                    if error {
                        uri.push_str("&error=access_denied");
                    }
                    let Some((status, _, body)) = get(&app, &uri, who).await else {
                        continue;
                    };
                    if status == 200 && body.contains("Connected") {
                        let owner = states.get(&state).copied();
                        assert!(
                            owner == Some(who) && !error && !returned.contains(&state),
                            "{who:?} connected with state {state:?} (owner {owner:?})"
                        );
                        tokens.entry(who).or_default().insert(format!("tok-{code}"));
                        returned.insert(state);
                    }
                }
            }
        }
    });
});
