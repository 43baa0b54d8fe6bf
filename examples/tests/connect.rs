//! The connect example as a user runs it: the binary serves the MCP endpoint, its demo
//! sign-in page and a mock code host; a 2026-07-28 client's call asks for a URL, a browser
//! signed in as the same user goes through the code host and back, and the retry answers.
//! Signed in as someone else, the link is refused.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use mcp_tests::http::StatelessHttp;
use serde_json::{Value, json};

const CONNECT: &str = env!("CARGO_BIN_EXE_connect");

/// The example, killed when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

async fn start() -> (Running, String) {
    let port = free_port();
    // Killed and waited for when `Running` drops, on every path.
    let running = Running(
        Command::new(CONNECT)
            .env("CONNECT_BIND", format!("127.0.0.1:{port}"))
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the example runs"),
    );
    let base = format!("http://127.0.0.1:{port}");
    let http = reqwest::Client::new();
    for _ in 0..100 {
        if http.get(format!("{base}/health")).send().await.is_ok() {
            return (running, base);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the connect example did not answer on {base}");
}

/// A browser signed in to the example's demo page as `user`, following redirects by hand.
async fn browser(base: &str, user: &str) -> (reqwest::Client, String) {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let signed_in = http
        .get(format!("{base}/signin?user={user}"))
        .send()
        .await
        .unwrap();
    let cookie = signed_in.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    (http, cookie)
}

async fn follow(http: &reqwest::Client, cookie: &str, link: &str) -> (u16, String) {
    let mut url = link.to_owned();
    for _ in 0..4 {
        let r = http
            .get(&url)
            .header("cookie", cookie)
            .send()
            .await
            .unwrap();
        if r.status().as_u16() != 302 {
            let status = r.status().as_u16();
            return (status, r.text().await.unwrap());
        }
        url = r.headers()["location"].to_str().unwrap().to_owned();
    }
    panic!("too many redirects");
}

fn client(base: &str, token: &str) -> StatelessHttp {
    let mut c = StatelessHttp::new(format!("{base}/mcp"))
        .with_capabilities(json!({"elicitation": {"url": {}}}));
    c.token = Some(token.to_owned());
    c
}

fn link_of(result: &Value) -> (String, String, String) {
    let (key, request) = result["inputRequests"]
        .as_object()
        .expect("input requests")
        .iter()
        .next()
        .expect("one");
    (
        key.clone(),
        request["params"]["url"].as_str().unwrap().to_owned(),
        result["requestState"].as_str().unwrap().to_owned(),
    )
}

#[tokio::test]
async fn the_example_connects_alice_and_refuses_bob_on_her_link() {
    let (_running, base) = start().await;
    let alice = client(&base, "alice-demo-token");
    let call = json!({"name": "repositories", "arguments": {}});
    let first = alice.request(json!(1), "tools/call", call.clone()).await;
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let (key, link, state) = link_of(&first["result"]);
    assert!(link.starts_with(&format!("{base}/connect/")), "{link}");

    // Bob's browser on Alice's link: refused, and the link is spent.
    let (http, bob) = browser(&base, "bob").await;
    let (status, page) = follow(&http, &bob, &link).await;
    assert_eq!(status, 403, "{page}");

    // A new link for Alice, opened in her own browser.
    let again = alice.request(json!(2), "tools/call", call.clone()).await;
    let (key2, link2, state2) = link_of(&again["result"]);
    assert_ne!(link2, link);
    let (http, alice_cookie) = browser(&base, "alice").await;
    let (status, page) = follow(&http, &alice_cookie, &link2).await;
    assert_eq!(status, 200, "{page}");
    let done = alice
        .request(
            json!(3),
            "tools/call",
            json!({"name": "repositories", "arguments": {},
                   "inputResponses": {key2: {"action": "accept"}}, "requestState": state2}),
        )
        .await;
    let text = done["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.starts_with("Your repositories"), "{done}");
    assert!(
        !text.contains("mock-access"),
        "the token stays on the server: {text}"
    );
    // The spent first link's round leads nowhere.
    let stale = alice
        .request(
            json!(4),
            "tools/call",
            json!({"name": "repositories", "arguments": {},
                   "inputResponses": {key: {"action": "accept"}}, "requestState": state}),
        )
        .await;
    // Alice is connected now, so even the old round finds her token.
    assert!(
        stale["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .starts_with("Your repositories"),
        "{stale}"
    );
}
