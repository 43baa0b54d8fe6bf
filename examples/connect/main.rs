//! A tool that works with the user's account at a third party (a code host), connected
//! through URL-mode elicitation with the check the specification requires: the person who
//! opens the sign-in link is the person whose call made it.
//!
//! Everything runs in this one process: the MCP server on Streamable HTTP, its connect
//! routes, a demo sign-in page for the browser, and a mock code host (an OAuth
//! authorization server, `mcp::testing::third_party::MockProvider`, on a loopback port of
//! its own).
//!
//! ```text
//! cargo run -p mcp-examples --bin connect            # serves http://127.0.0.1:8080/mcp
//! ```
//!
//! Then:
//! 1. In a browser, sign in to this server: http://127.0.0.1:8080/signin?user=alice
//!    (a demo page: anyone can be anyone; yours would be a real login).
//! 2. Connect an MCP client to http://127.0.0.1:8080/mcp with the bearer token
//!    `alice-demo-token` (or `bob-demo-token`), declaring URL-mode elicitation
//!    (`"elicitation": {"url": {}}`), and call `repositories`.
//! 3. The client shows a link to http://127.0.0.1:8080/connect/...; open it in the
//!    browser. As alice, it goes on to the code host and back, and the call answers with
//!    the code host's data. Signed in as bob, the link is refused and spent.
//!
//! `CONNECT_BIND` changes the address (default `127.0.0.1:8080`).

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use mcp::auth::Principal;
use mcp::auth::bearer::{TokenError, verifier_fn};
use mcp::connect::{BrowserUser, Connect, ConnectError, SignedCookie};
use mcp::extract::State;
use mcp::prelude::*;
use mcp::testing::third_party::MockProvider;
use mcp::transport::http::{self, BearerAuth, HttpConfig};

/// The demo users' bearer tokens (a real server verifies JWTs: `JwtVerifier`).
const USERS: [(&str, &str); 2] = [("alice-demo-token", "alice"), ("bob-demo-token", "bob")];
/// The identity provider the demo principals and the demo sign-in both name.
const ISSUER: &str = "https://login.demo.invalid";
/// Signs the demo sign-in cookie (a real server keeps its key secret, out of the code).
const COOKIE_KEY: &[u8] = b"demo-only-cookie-key-keep-yours-secret!!";

/// Lists your repositories at the code host (connecting your account there first).
#[tool(read_only)]
async fn repositories(ctx: Ctx, connect: State<Connect>) -> Result<String, ConnectError> {
    let token = connect.token(&ctx, "codehost").await?;
    // A real tool calls the third party's API here, with the token, server-side.
    Ok(format!(
        "Your repositories (fetched with a token of {} characters that never left this server): demo-app, notes",
        token.access_token().len()
    ))
}

/// Forgets your code host account on this server.
#[tool(destructive)]
async fn disconnect(ctx: Ctx, connect: State<Connect>) -> Result<String, ConnectError> {
    Ok(match connect.disconnect(&ctx, "codehost").await? {
        true => "Disconnected.".to_owned(),
        false => "Nothing was connected.".to_owned(),
    })
}

mcp::server! {
    name: "connect-example",
    instructions: "Call `repositories` to see your code host repositories; the first call asks you to connect your account.",
    tools: [repositories, disconnect],
    // Disconnecting asks the user first (it is destructive).
    authorizer: mcp::auth::ask_before_sensitive(),
    read_authorizer: mcp::auth::allow_all(),
    main: false,
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn serve() -> Result<(), String> {
    let addr: SocketAddr = std::env::var("CONNECT_BIND")
        .unwrap_or_else(|_| "127.0.0.1:8080".to_owned())
        .parse()
        .map_err(|e| format!("CONNECT_BIND: {e}"))?;
    let base = format!("http://{addr}");
    let code_host = MockProvider::start()
        .await
        .map_err(|e| format!("cannot start the mock code host: {e}"))?;
    let cookies = SignedCookie::new("demo_session", COOKIE_KEY)
        .sign_in_page(format!("{base}/signin"))
        .insecure_for_local_development();
    let connect = Connect::builder(&base)
        .provider("codehost", code_host.provider())
        .identity(cookies.clone())
        .build();
    let server = server_builder()
        .state(connect.clone())
        .build()
        .map_err(|e| e.to_string())?;
    let verifier = verifier_fn(|token| async move {
        match USERS.iter().find(|(t, _)| *t == token) {
            Some((_, user)) => Ok(Principal {
                subject: (*user).to_owned(),
                scopes: Vec::new(),
                issuer: Some(ISSUER.to_owned()),
            }),
            None => Err(TokenError::Invalid("unknown demo token".into())),
        }
    });
    let config = HttpConfig::new()
        .bearer_auth(BearerAuth::new(verifier, format!("{base}/mcp")).authorization_server(ISSUER))
        .connect(connect);
    let app = http::router(server, config.clone())
        .map_err(|e| e.to_string())?
        .merge(sign_in_page(cookies));
    let bound = http::HttpServer::bind(app, config, addr)
        .await
        .map_err(|e| e.to_string())?;
    eprintln!(
        "serving {base}/mcp (tokens: alice-demo-token, bob-demo-token); sign a browser in at {base}/signin?user=alice; mock code host at {}",
        code_host.url()
    );
    bound.run().await.map_err(|e| e.to_string())
}

/// The demo sign-in page: signs the browser in as `?user=` (alice or bob) with the
/// cookie the connect route reads, then goes back to `return_to` if it is one of this
/// server's links.
fn sign_in_page(cookies: SignedCookie) -> http::axum::Router {
    use http::axum::extract::Query;
    use http::axum::http::{StatusCode, header};
    use http::axum::response::IntoResponse;
    use std::collections::HashMap;

    http::axum::Router::new().route(
        "/signin",
        http::axum::routing::get(move |Query(q): Query<HashMap<String, String>>| {
            let cookies = cookies.clone();
            async move {
                let Some(user) = q.get("user").filter(|u| USERS.iter().any(|(_, n)| n == *u))
                else {
                    return (
                        StatusCode::OK,
                        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
                        "<p>Sign in as <a href=\"?user=alice\">alice</a> or <a href=\"?user=bob\">bob</a> (demo).</p>".to_owned(),
                    )
                        .into_response();
                };
                let cookie =
                    cookies.issue(&BrowserUser::new(user.as_str(), Some(ISSUER)), Duration::from_secs(3600));
                let back = q
                    .get("return_to")
                    .filter(|r| r.starts_with('/') || r.starts_with("http://127.0.0.1"))
                    .cloned();
                match back {
                    Some(to) => (
                        StatusCode::FOUND,
                        [(header::SET_COOKIE, cookie), (header::LOCATION, to)],
                        String::new(),
                    )
                        .into_response(),
                    None => (
                        StatusCode::OK,
                        [(header::SET_COOKIE, cookie), (header::CONTENT_TYPE, "text/plain".to_owned())],
                        format!("Signed in as {user} (demo)."),
                    )
                        .into_response(),
                }
            }
        }),
    )
}
