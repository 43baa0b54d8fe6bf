//! Attacks that must find nothing: on the Ask (elicitation), on authorization, and on the
//! HTTP transport's sessions, hosts and tokens. Each names what it tries.
//!
//! Covered elsewhere (see README, Security): forged ids, another connection's answer and
//! late answers (seed_elicitation.rs), sealed-state tampering, replay, expiry and swaps
//! (stateless.rs), late-registered sensitive tools (seed_sensitive_guard.rs), names through
//! completion and panicking authorizers (seed_server.rs, seed_authorizer.rs,
//! seed_read_surface.rs), foreign Host/Origin (http_safety.rs), requests after DELETE and
//! the session cap (http_sessions.rs), expired / other-audience / query-string tokens and
//! sessions bound to their principal (http_oauth.rs).

use std::time::Duration;

use mcp::auth::{Decision, policy};
use mcp::registry::{ToolArgs, ToolDef};
use mcp::{ConnId, Ctx, Server, Transport};
use mcp_tests::{
    Runs, answer, assert_silent, call_frame, counting_tool, deny_payload_value, expect_response,
    expect_server_request, first_text, initialized_client,
};
use serde_json::{Value, json};

const QUIET: Duration = Duration::from_millis(150);

fn approve() -> Value {
    json!({"action": "accept", "content": {"approve": true}})
}

/// `pay` answers with the arguments it ran with and counts its runs; the authorizer asks
/// before every call.
fn asking(runs: &Runs) -> Server {
    let runs = runs.clone();
    Server::builder("attacks", "1")
        .tool(ToolDef::new(
            "pay",
            "Pays an amount.",
            json!({"type": "object"}),
            move |_ctx: Ctx, args: ToolArgs| {
                let runs = runs.clone();
                async move {
                    runs.bump();
                    format!("paid {}", args.raw_json())
                }
            },
        ))
        .authorizer(policy(|_| Decision::ask("Pay?")))
        .build()
        .unwrap()
}

// ---- the Ask ----

#[tokio::test]
async fn answering_twice_runs_the_tool_once_and_answers_once() {
    let runs = Runs::new();
    let server = asking(&runs);
    let mut c = initialized_client(&server, json!({"elicitation": {}})).await;
    c.send(call_frame(1, "pay", json!({"amount": 5})));
    let ask = expect_server_request(&mut c, "elicitation/create").await;
    c.send(answer(&ask["id"], approve()));
    let done = expect_response(&mut c, 1).await;
    assert_eq!(first_text(&done["result"]), r#"paid {"amount":5}"#);
    // The same approval again, then a decline: both are strays now.
    c.send(answer(&ask["id"], approve()));
    c.send(answer(&ask["id"], json!({"action": "decline"})));
    assert_silent(&mut c, QUIET).await;
    assert_eq!(runs.get(), 1);
}

#[tokio::test]
async fn a_decline_then_an_approval_stays_a_decline() {
    let runs = Runs::new();
    let server = asking(&runs);
    let mut c = initialized_client(&server, json!({"elicitation": {}})).await;
    c.send(call_frame(1, "pay", json!({"amount": 5})));
    let ask = expect_server_request(&mut c, "elicitation/create").await;
    c.send(answer(&ask["id"], json!({"action": "decline"})));
    let refused = expect_response(&mut c, 1).await;
    assert_eq!(
        deny_payload_value(&refused["result"])["detail"],
        "user decline"
    );
    c.send(answer(&ask["id"], approve()));
    assert_silent(&mut c, QUIET).await;
    assert_eq!(runs.get(), 0);
}

#[tokio::test]
async fn an_answer_closes_only_the_question_it_names_with_that_calls_own_arguments() {
    let runs = Runs::new();
    let server = asking(&runs);
    let mut c = initialized_client(&server, json!({"elicitation": {}})).await;
    c.send(call_frame(1, "pay", json!({"amount": 1})));
    let small = expect_server_request(&mut c, "elicitation/create").await;
    c.send(call_frame(2, "pay", json!({"amount": 1_000_000})));
    let big = expect_server_request(&mut c, "elicitation/create").await;
    assert_ne!(small["id"], big["id"]);

    // The approval of the small payment, with content naming the big one, runs the small
    // one: the answer cannot carry arguments, the call runs with those it was asked about.
    c.send(answer(
        &small["id"],
        json!({"action": "accept", "content": {"approve": true, "amount": 1_000_000}}),
    ));
    let done = expect_response(&mut c, 1).await;
    assert_eq!(first_text(&done["result"]), r#"paid {"amount":1}"#);
    assert_silent(&mut c, QUIET).await;
    assert_eq!(runs.get(), 1);
    // The big one is still waiting for its own answer.
    assert_eq!(c.stats().pending, 1);
    c.send(answer(&big["id"], json!({"action": "cancel"})));
    let refused = expect_response(&mut c, 2).await;
    assert_eq!(
        deny_payload_value(&refused["result"])["detail"],
        "user cancel"
    );
    assert_eq!(runs.get(), 1);
}

#[tokio::test]
async fn answers_in_the_wrong_shape_are_not_approvals() {
    let runs = Runs::new();
    let server = asking(&runs);
    let mut c = initialized_client(&server, json!({"elicitation": {}})).await;
    c.send(call_frame(1, "pay", json!({})));
    let ask = expect_server_request(&mut c, "elicitation/create").await;
    let id = ask["id"].clone();
    for shape in [
        // A request or a notification carrying the answer.
        json!({"jsonrpc": "2.0", "id": id, "method": "elicitation/create", "result": approve()}),
        json!({"jsonrpc": "2.0", "method": "notifications/elicitation", "params": {"id": id, "result": approve()}}),
        // A result and an error at once.
        json!({"jsonrpc": "2.0", "id": id, "result": approve(), "error": {"code": 1, "message": "x"}}),
        // The id in another type, or with different case or padding.
        json!({"jsonrpc": "2.0", "id": [id], "result": approve()}),
        json!({"jsonrpc": "2.0", "id": id.as_str().unwrap().to_uppercase(), "result": approve()}),
        json!({"jsonrpc": "2.0", "id": format!(" {}", id.as_str().unwrap()), "result": approve()}),
        // A batch (sessions after 2025-03-26 have none).
        json!([{"jsonrpc": "2.0", "id": id, "result": approve()}]),
    ] {
        c.send(shape);
    }
    // Whatever errors came back, the tool did not run and the question is still open.
    let _ = c.drain(QUIET).await;
    assert_eq!(runs.get(), 0);
    assert_eq!(c.stats().pending, 1);
    c.send(answer(&id, approve()));
    let done = expect_response(&mut c, 1).await;
    assert_eq!(first_text(&done["result"]), "paid {}");
}

// ---- authorization ----

/// `open` is allowed, `secret` denied, `ask_me` asked, `scoped` needs a scope.
fn guarded(runs: &Runs) -> Server {
    Server::builder("attacks", "1")
        .tool(counting_tool("open", runs))
        .tool(counting_tool("secret", runs))
        .tool(counting_tool("ask_me", runs))
        .tool(counting_tool("scoped", runs).scopes(["admin"]))
        .authorizer(policy(|req| match req.name() {
            "secret" => Decision::deny("no"),
            "ask_me" => Decision::ask("Sure?"),
            _ => Decision::Allow,
        }))
        .build()
        .unwrap()
}

#[tokio::test]
async fn tools_hidden_from_the_list_are_refused_at_call_on_every_path() {
    let runs = Runs::new();
    let server = guarded(&runs);
    // A network caller without a token (so no scopes) that cannot be asked.
    let mut c =
        mcp::testing::TestClient::connect_as(&server, ConnId::random("attacker"), Transport::Http);
    c.initialize(json!({})).await.unwrap();
    let listed: Vec<String> = mcp_tests::tool_names(&mut c).await;
    assert_eq!(listed, ["open"]);
    let completed = c
        .request(
            "completion/complete",
            json!({"ref": {"type": "ref/tool", "name": "x"}, "argument": {"name": "name", "value": ""}}),
        )
        .await
        .unwrap();
    assert_eq!(completed["completion"]["values"], json!(["open"]));

    for hidden in ["secret", "ask_me", "scoped"] {
        let r = c.call_tool(hidden, json!({})).await.unwrap();
        assert!(r.is_error(), "{hidden}: {r:?}");
    }
    // The same through the 2026-07-28 era.
    c.use_stateless(json!({}));
    for hidden in ["secret", "ask_me", "scoped"] {
        let r = c
            .request("tools/call", json!({"name": hidden, "arguments": {}}))
            .await
            .unwrap();
        assert_eq!(r["isError"], true, "{hidden}: {r}");
    }
    assert_eq!(runs.get(), 0);

    // And through a 2025-03-26 batch.
    let mut b =
        mcp::testing::TestClient::connect_as(&server, ConnId::random("batch"), Transport::Http);
    b.initialize_version("2025-03-26", json!({})).await.unwrap();
    b.send(json!([
        call_frame(1, "secret", json!({})),
        call_frame(2, "ask_me", json!({})),
        call_frame(3, "scoped", json!({})),
    ]));
    let replies = b.next_message().await.expect("a batch reply");
    let replies = replies.as_array().expect("an array");
    assert_eq!(replies.len(), 3);
    for r in replies {
        assert_eq!(r["result"]["isError"], true, "{r}");
    }
    assert_eq!(runs.get(), 0);
    let r = b.call_tool("open", json!({})).await.unwrap();
    assert!(!r.is_error());
}

// ---- HTTP: sessions, hosts, tokens ----

mod http {
    use super::*;
    use mcp::auth::Principal;
    use mcp::auth::bearer::{TokenError, verifier_fn};
    use mcp::transport::http::BearerAuth;
    use mcp_tests::http::{HttpTestServer, fixture, plain_client, test_config, with_header};
    use reqwest::StatusCode;

    const RESOURCE: &str = "https://mcp.example.test/mcp";

    /// Tokens are `<subject>:<scope> <scope>...`; anything else is invalid.
    fn bearer() -> BearerAuth {
        BearerAuth::new(
            verifier_fn(|token: String| async move {
                match token.split_once(':') {
                    Some((sub, scopes)) => Ok(Principal::new(
                        sub,
                        scopes.split_whitespace().map(str::to_owned).collect(),
                    )),
                    None => Err(TokenError::Invalid("not a test token".into())),
                }
            }),
            RESOURCE,
        )
        .authorization_server("https://auth.example.test")
    }

    fn init_body(id: i64) -> String {
        json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "attacker", "version": "1"}}})
        .to_string()
    }

    #[tokio::test]
    async fn a_client_chosen_session_id_is_never_adopted_and_guesses_find_nothing() {
        let srv = HttpTestServer::start(fixture().server, test_config()).await;
        let chosen = "fixated-session-id-chosen-by-the-attacker";
        let mut victim = srv.client();
        victim.session = Some(chosen.to_owned());
        // initialize under a session id the server never issued: no session is created.
        let r = victim.post(init_body(1)).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::NOT_FOUND);
        victim.session = None;
        victim.initialize("2025-11-25", json!({})).await;
        let issued = victim.session.clone().unwrap();
        assert_ne!(issued, chosen);
        assert!(issued.len() >= 32, "{issued}");
        let mut attacker = srv.client();
        attacker.session = Some(chosen.to_owned());
        let r = attacker.post(init_body(2)).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::NOT_FOUND);

        // Guesses in the issued format, and the issued id with one character changed.
        let mut guesses: Vec<String> = (0..50)
            .map(|i| format!("{:0>32}", format!("{i:x}")))
            .collect();
        let mut near = issued.clone().into_bytes();
        near[0] = if near[0] == b'A' { b'B' } else { b'A' };
        guesses.push(String::from_utf8(near).unwrap());
        for guess in guesses {
            attacker.session = Some(guess.clone());
            let ping = json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}).to_string();
            assert_eq!(
                attacker.post(ping).send().await.unwrap().status(),
                StatusCode::NOT_FOUND,
                "{guess}"
            );
            assert_eq!(
                attacker.get().send().await.unwrap().status(),
                StatusCode::NOT_FOUND
            );
            assert_eq!(
                attacker.delete().send().await.unwrap().status(),
                StatusCode::NOT_FOUND
            );
        }
        // The victim's session is untouched.
        assert_eq!(
            victim.request(4, "ping", json!({})).await["result"],
            json!({})
        );
    }

    #[tokio::test]
    async fn after_delete_nothing_of_the_session_answers() {
        let srv = HttpTestServer::start(fixture().server, test_config()).await;
        let mut c = srv.client();
        c.initialize("2025-11-25", json!({})).await;
        assert_eq!(
            c.delete().send().await.unwrap().status(),
            StatusCode::NO_CONTENT
        );
        let resume = with_header(c.get(), "last-event-id", "0-0");
        assert_eq!(resume.send().await.unwrap().status(), StatusCode::NOT_FOUND);
        assert_eq!(
            c.get().send().await.unwrap().status(),
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            c.delete().send().await.unwrap().status(),
            StatusCode::NOT_FOUND
        );
        let call = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                          "params": {"name": "add", "arguments": {"a": 1, "b": 2}}});
        assert_eq!(
            c.post(call.to_string()).send().await.unwrap().status(),
            StatusCode::NOT_FOUND
        );
    }

    #[tokio::test]
    async fn a_session_opened_with_more_scopes_lends_none_to_a_weaker_token() {
        let fx = fixture();
        let srv = HttpTestServer::start(fx.server, test_config().bearer_auth(bearer())).await;
        let mut c = srv.client();
        c.token = Some("alice:files:write".to_owned());
        c.initialize("2025-11-25", json!({})).await;
        let done = c
            .request(
                1,
                "tools/call",
                json!({"name": "write_files", "arguments": {}}),
            )
            .await;
        assert_eq!(done["result"]["content"][0]["text"], "written");

        // The same subject, the same session, a token without the scope: refused.
        c.token = Some("alice:".to_owned());
        let r = c
            .post(
                json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                       "params": {"name": "write_files", "arguments": {}}})
                .to_string(),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::FORBIDDEN);
        let tools = c.request(3, "tools/list", json!({})).await;
        assert!(
            !tools.to_string().contains("write_files"),
            "a weaker token still sees the tool: {tools}"
        );
        // What the client claims about itself in the body grants nothing either.
        let claimed = c
            .post(
                json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                       "params": {"name": "write_files", "arguments": {},
                                  "_meta": {"scopes": ["files:write"], "principal": "root"}}})
                .to_string(),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(claimed.status(), StatusCode::FORBIDDEN);

        // A 2025-03-26 batch skips the HTTP step-up challenge; the tool seam still refuses.
        let mut b = srv.client();
        b.token = Some("bob:".to_owned());
        b.initialize("2025-03-26", json!({})).await;
        let r = b
            .post(
                json!([{"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                        "params": {"name": "write_files", "arguments": {}}}])
                .to_string(),
            )
            .send()
            .await
            .unwrap();
        let body: Value = r.json().await.unwrap();
        assert_eq!(body[0]["result"]["isError"], true, "{body}");
        assert!(body.to_string().contains("insufficient_scope"), "{body}");
    }

    #[tokio::test]
    async fn hosts_and_origins_that_only_look_local_are_refused() {
        let srv = HttpTestServer::start(fixture().server, test_config()).await;
        let port = srv.addr.port();
        let post = || {
            plain_client()
                .post(srv.url("/mcp"))
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .body(init_body(1))
        };
        for host in [
            "localhost.".to_owned(),
            "localhost.evil.example".to_owned(),
            "127.0.0.1.nip.io".to_owned(),
            format!("evil.example:{port}"),
            format!("localhost:{port}:1"),
            "[::1]evil".to_owned(),
            "0x7f000001".to_owned(),
            "2130706433".to_owned(),
            "localhost@evil.example".to_owned(),
            format!("localhost:{port}0000"),
            String::new(),
        ] {
            let r = with_header(post(), "host", &host).send().await.unwrap();
            assert_eq!(r.status(), StatusCode::FORBIDDEN, "Host {host:?}");
        }
        for origin in [
            "null".to_owned(),
            "http://localhost@evil.example".to_owned(),
            "http://evil.example/@localhost".to_owned(),
            "http://localhost.evil.example".to_owned(),
            "http://evil.example#localhost".to_owned(),
            "file://".to_owned(),
            "chrome-extension://localhost".to_owned(),
            format!("http://localhost:{port}0000"),
            "http://[::1]evil".to_owned(),
        ] {
            let r = with_header(post(), "origin", &origin).send().await.unwrap();
            assert_eq!(r.status(), StatusCode::FORBIDDEN, "Origin {origin:?}");
        }
        // Case does not matter, ports are free by default.
        for (host, origin) in [
            (
                format!("LOCALHOST:{port}"),
                format!("HTTP://LocalHost:{port}"),
            ),
            (format!("127.0.0.1:{port}"), "https://127.0.0.1".to_owned()),
            (format!("[::1]:{port}"), format!("http://[::1]:{port}")),
        ] {
            let r = with_header(with_header(post(), "host", &host), "origin", &origin)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), StatusCode::OK, "{host} {origin}");
        }
    }
}
