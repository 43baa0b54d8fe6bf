//! Third-party sign-in through URL-mode elicitation (`mcp::connect`), over real sockets on
//! both eras: the URL elicitation and its completion notification (2025-11-25), the URL in
//! an input-required result and the retry (2026-07-28), -32042 only where it exists, the
//! browser's round trip through the connect route to a mock third party and back, and the
//! attacks: a link opened by someone else, replayed, expired; a client without the URL
//! capability is never sent one.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jsonwebtoken::{EncodingKey, Header, encode};
use mcp::Server;
use mcp::auth::{allow_all, policy};
use mcp::connect::{BrowserUser, Connect, MemoryTokenStore, SignedCookie, TokenStore};
use mcp::registry::ToolDef;
use mcp::testing::third_party::MockProvider;
use mcp_tests::connect::{ISSUER, NoArgs, SECRET};
use mcp_tests::http::{HttpTestServer, McpHttp, SseReader, StatelessHttp, test_config};
use reqwest::StatusCode;
use serde_json::{Value, json};

const COOKIE_KEY: &[u8] = b"the-cookie-key-of-this-server-32+bytes!";

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// The MCP server, its mock third party, the shared token store.
struct Setup {
    http: HttpTestServer,
    third_party: MockProvider,
    tokens: Arc<MemoryTokenStore>,
    resource: String,
}

impl Setup {
    async fn start(link_ttl: Duration) -> Setup {
        Self::start_with(link_ttl, false).await
    }

    async fn start_with(link_ttl: Duration, answer_url_required: bool) -> Setup {
        let third_party = MockProvider::start().await.unwrap();
        // The server's address is needed before it starts: the links name it.
        for attempt in 0.. {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port();
            let base = format!("http://127.0.0.1:{port}");
            let resource = format!("{base}/mcp");
            let tokens = Arc::new(MemoryTokenStore::new());
            let connect = Connect::builder(&base)
                .provider("codehost", third_party.provider())
                .identity(
                    SignedCookie::new("session", COOKIE_KEY)
                        .sign_in_page(format!("{base}/signin"))
                        .insecure_for_local_development(),
                )
                .token_store(tokens.clone())
                .link_ttl(link_ttl)
                .answer_url_required(answer_url_required)
                .build();
            let server = Server::builder("connect-fixture", "1.0.0")
                .state(connect.clone())
                .tool(mcp_tests::connect::repositories_tool())
                .authorizer(policy(|_| mcp::auth::Decision::Allow))
                .read_authorizer(allow_all())
                .build()
                .unwrap();
            let auth = mcp_tests::connect::bearer_auth(resource.as_str());
            let config = test_config().bearer_auth(auth).connect(connect);
            let app = mcp::transport::http::router(server, config.clone()).unwrap();
            let bound = mcp::transport::http::HttpServer::bind(
                app,
                config,
                format!("127.0.0.1:{port}").parse().unwrap(),
            )
            .await;
            // A port found free can be taken by a parallel test before the server binds it:
            // then the whole fixture is made again around another port.
            let bound = match bound {
                Ok(bound) => bound,
                Err(mcp::transport::http::HttpError::Io(e))
                    if e.kind() == std::io::ErrorKind::AddrInUse && attempt < 10 =>
                {
                    continue;
                }
                Err(e) => panic!("the fixture's server did not bind: {e}"),
            };
            let addr = bound.local_addr().unwrap();
            let shutdown = bound.shutdown_token();
            tokio::spawn(bound.run_until(std::future::pending()));
            let http = HttpTestServer::adopt(addr, shutdown);
            return Setup {
                http,
                third_party,
                tokens,
                resource,
            };
        }
        unreachable!("the attempts above return or panic")
    }

    fn bearer(&self, user: &str) -> String {
        let claims = json!({"sub": user, "iss": ISSUER, "aud": self.resource, "exp": now() + 300});
        encode(
            &Header::default(),
            &claims,
            &EncodingKey::from_secret(SECRET).unwrap(),
        )
        .unwrap()
    }

    /// A handshake-era session of `user` declaring `elicitation`.
    async fn session(&self, user: &str, elicitation: Value) -> McpHttp {
        let mut c = self.http.client();
        c.token = Some(self.bearer(user));
        c.initialize("2025-11-25", json!({"elicitation": elicitation}))
            .await;
        c
    }

    /// The browser of `user` (signed in to this server), or of nobody.
    fn browser(&self, user: Option<&str>) -> Browser {
        let cookie = user.map(|u| {
            let jar = SignedCookie::new("session", COOKIE_KEY);
            let set = jar.issue(&BrowserUser::new(u, Some(ISSUER)), Duration::from_secs(600));
            set.split(';').next().unwrap().to_owned()
        });
        Browser {
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
            cookie,
        }
    }

    async fn stored(&self, user: &str) -> bool {
        let key = format!("principal:{}:{user}", ISSUER.replace(':', "%3A"));
        self.tokens.get(&key, "codehost").await.unwrap().is_some()
    }
}

/// A browser that follows redirects by hand, so each hop can be checked.
struct Browser {
    http: reqwest::Client,
    cookie: Option<String>,
}

impl Browser {
    async fn get(&self, url: &str) -> reqwest::Response {
        let mut r = self.http.get(url);
        if let Some(c) = &self.cookie {
            r = r.header("cookie", c);
        }
        r.send().await.unwrap()
    }

    /// Opens a link and follows it through the third party and back; returns the last
    /// page's status and text.
    async fn connect(&self, link: &str) -> (StatusCode, String) {
        let mut url = link.to_owned();
        for _ in 0..4 {
            let response = self.get(&url).await;
            if response.status() != StatusCode::FOUND {
                let status = response.status();
                return (status, response.text().await.unwrap());
            }
            url = response.headers()["location"].to_str().unwrap().to_owned();
        }
        panic!("too many redirects from {link}");
    }
}

fn assert_valid(version: &str, name: &str, instance: &Value) {
    mcp_tests::schema::SchemaValidator::for_version(version)
        .validate(name, instance)
        .unwrap_or_else(|e| panic!("{name} ({version}): {e}\n{instance}"));
}

fn call(id: i64) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "repositories", "arguments": {}}})
    .to_string()
}

fn accept(ask: &Value) -> String {
    json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept"}}).to_string()
}

#[tokio::test]
async fn a_url_elicitation_connects_the_account_of_the_user_who_asked() {
    let s = Setup::start(Duration::from_secs(60)).await;
    let alice = s.session("alice", json!({"url": {}})).await;
    let response = alice.post(call(1)).send().await.unwrap();
    let mut stream = SseReader::new(response);
    let ask = stream.next_json().await;
    assert_eq!(ask["method"], "elicitation/create");
    let params = &ask["params"];
    assert_eq!(params["mode"], "url");
    let id = params["elicitationId"].as_str().expect("an elicitation id");
    let link = params["url"].as_str().unwrap().to_owned();
    assert!(link.starts_with(&s.http.url("/connect/")), "{link}");
    assert!(
        !link.contains("alice") && !link.contains("codehost"),
        "no personal data in the link: {link}"
    );
    assert_valid("2025-11-25", "ElicitRequest", &ask);
    alice.post(accept(&ask)).send().await.unwrap();

    // Alice's browser goes through the third party and back.
    let (status, page) = s.browser(Some("alice")).connect(&link).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert!(page.contains("connected"), "{page}");
    assert_eq!(s.third_party.tokens_issued(), 1);

    // The client hears the flow finished, then the call's result, with the token used
    // server-side only.
    let complete = stream.next_json().await;
    assert_eq!(complete["method"], "notifications/elicitation/complete");
    assert_eq!(complete["params"]["elicitationId"], id);
    let done = stream.next_json().await;
    assert_eq!(done["id"], 1);
    assert_eq!(
        done["result"]["content"][0]["text"],
        "called the code host with mock-access-1"
    );
    assert!(s.stored("alice").await);

    // The link is spent: replaying it changes nothing.
    let (status, page) = s.browser(Some("alice")).connect(&link).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{page}");
    // Connected now: no question the next time.
    let mut again = s.session("alice", json!({"url": {}})).await;
    let r = again
        .request(
            2,
            "tools/call",
            json!({"name": "repositories", "arguments": {}}),
        )
        .await;
    assert_eq!(
        r["result"]["content"][0]["text"],
        "called the code host with mock-access-1"
    );
    assert_eq!(s.third_party.tokens_issued(), 1);
}

#[tokio::test]
async fn a_link_opened_by_someone_else_is_refused_and_spent() {
    let s = Setup::start(Duration::from_secs(60)).await;
    let alice = s.session("alice", json!({"url": {}})).await;
    let mut stream = SseReader::new(alice.post(call(1)).send().await.unwrap());
    let ask = stream.next_json().await;
    let link = ask["params"]["url"].as_str().unwrap().to_owned();
    alice.post(accept(&ask)).send().await.unwrap();

    // Not signed in: told to sign in, and the link still works afterwards.
    let (status, page) = s.browser(None).connect(&link).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{page}");
    assert!(page.contains("/signin?return_to="), "{page}");

    // Bob (signed in to this server) opens Alice's link: the phishing the spec warns of.
    let (status, page) = s.browser(Some("bob")).connect(&link).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{page}");
    assert!(page.contains("not yours"), "{page}");
    assert!(!page.contains("alice"), "the page names nobody: {page}");
    assert_eq!(
        s.third_party.tokens_issued(),
        0,
        "bob never reached the third party"
    );
    assert!(!s.stored("alice").await && !s.stored("bob").await);

    // Alice's call learns the flow failed; her own browser cannot use the link any more.
    let done = stream.next_json().await;
    assert_eq!(done["id"], 1);
    assert_eq!(done["result"]["isError"], true);
    assert!(
        done["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("did not complete"),
        "{done}"
    );
    let (status, _) = s.browser(Some("alice")).connect(&link).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn expired_and_forged_links_are_refused() {
    let s = Setup::start(Duration::from_millis(300)).await;
    let alice = s.session("alice", json!({"url": {}})).await;
    let mut stream = SseReader::new(alice.post(call(1)).send().await.unwrap());
    let ask = stream.next_json().await;
    let link = ask["params"]["url"].as_str().unwrap().to_owned();
    alice.post(accept(&ask)).send().await.unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    let (status, page) = s.browser(Some("alice")).connect(&link).await;
    assert!(
        status == StatusCode::GONE || status == StatusCode::NOT_FOUND,
        "{status} {page}"
    );
    assert_eq!(s.third_party.tokens_issued(), 0);
    let done = stream.next_json().await;
    assert_eq!(done["result"]["isError"], true, "{done}");

    for forged in ["not-a-link", &"A".repeat(43), &"x".repeat(500)] {
        let (status, _) = s
            .browser(Some("alice"))
            .connect(&s.http.url(&format!("/connect/{forged}")))
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{forged}");
    }
    // A callback with a made-up state.
    let (status, _) = s
        .browser(Some("alice"))
        .connect(&s.http.url("/connect/callback?code=x&state=made-up"))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_refusal_at_the_third_party_ends_the_call() {
    let s = Setup::start(Duration::from_secs(60)).await;
    s.third_party.refuse_authorizations(true);
    let alice = s.session("alice", json!({"url": {}})).await;
    let mut stream = SseReader::new(alice.post(call(1)).send().await.unwrap());
    let ask = stream.next_json().await;
    alice.post(accept(&ask)).send().await.unwrap();
    let link = ask["params"]["url"].as_str().unwrap().to_owned();
    let (status, page) = s.browser(Some("alice")).connect(&link).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{page}");
    assert!(page.contains("access_denied"), "{page}");
    let done = stream.next_json().await;
    assert_eq!(done["result"]["isError"], true, "{done}");
}

#[tokio::test]
async fn a_client_without_the_url_capability_is_never_sent_a_url() {
    let s = Setup::start(Duration::from_secs(60)).await;
    // Form mode only (2025-11-25).
    let mut forms = s.session("alice", json!({"form": {}})).await;
    let ex = forms
        .exchange(
            json!(1),
            "tools/call",
            json!({"name": "repositories", "arguments": {}}),
        )
        .await;
    assert!(
        ex.before
            .iter()
            .all(|m| m["method"] != "elicitation/create"),
        "{:?}",
        ex.before
    );
    assert_eq!(ex.response["result"]["isError"], true);
    assert!(
        ex.response["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("URL-mode elicitation"),
        "{}",
        ex.response
    );
    // 2026-07-28 without the capability: no URL, and never -32042.
    let mut stateless = StatelessHttp::new(s.http.url("/mcp")).with_capabilities(json!({}));
    stateless.token = Some(s.bearer("alice"));
    let r = stateless
        .request(
            json!(2),
            "tools/call",
            json!({"name": "repositories", "arguments": {}}),
        )
        .await;
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(r.get("error").is_none());
    assert_eq!(s.third_party.tokens_issued(), 0);
}

#[tokio::test]
async fn answering_url_required_gives_32042_with_the_url_and_the_retry_connects() {
    let s = Setup::start_with(Duration::from_secs(60), true).await;
    let mut alice = s.session("alice", json!({"url": {}})).await;
    let ex = alice
        .exchange(
            json!(1),
            "tools/call",
            json!({"name": "repositories", "arguments": {}}),
        )
        .await;
    assert!(
        ex.before
            .iter()
            .all(|m| m["method"] != "elicitation/create"),
        "{:?}",
        ex.before
    );
    let body = ex.response;
    assert_eq!(body["error"]["code"], -32042, "{body}");
    let elicitation = &body["error"]["data"]["elicitations"][0];
    assert_eq!(elicitation["mode"], "url");
    assert!(elicitation["elicitationId"].is_string(), "{body}");
    assert_valid("2025-11-25", "URLElicitationRequiredError", &body);
    let url = elicitation["url"].as_str().expect("the URL to open");
    // The user opens it; the retry finds the account connected.
    let (status, page) = s.browser(Some("alice")).connect(url).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let r = alice
        .request(
            2,
            "tools/call",
            json!({"name": "repositories", "arguments": {}}),
        )
        .await;
    assert_eq!(
        r["result"]["content"][0]["text"],
        "called the code host with mock-access-1"
    );

    // On 2026-07-28 the same server never answers -32042: the URL is an input request.
    let mut c = StatelessHttp::new(s.http.url("/mcp"))
        .with_capabilities(json!({"elicitation": {"url": {}}}));
    c.token = Some(s.bearer("carol"));
    let r = c
        .request(
            json!(3),
            "tools/call",
            json!({"name": "repositories", "arguments": {}}),
        )
        .await;
    assert!(r.get("error").is_none(), "{r}");
    assert_eq!(r["result"]["resultType"], "input_required", "{r}");
}

#[tokio::test]
async fn on_2026_07_28_the_url_rides_in_input_requests_and_the_retry_connects() {
    let s = Setup::start(Duration::from_secs(60)).await;
    let mut c = StatelessHttp::new(s.http.url("/mcp"))
        .with_capabilities(json!({"elicitation": {"url": {}}}));
    c.token = Some(s.bearer("alice"));
    let first = c
        .request(
            json!(1),
            "tools/call",
            json!({"name": "repositories", "arguments": {}}),
        )
        .await;
    let result = &first["result"];
    assert_eq!(result["resultType"], "input_required", "{first}");
    let requests = result["inputRequests"].as_object().expect("input requests");
    assert_eq!(requests.len(), 1);
    let (key, request) = requests.iter().next().unwrap();
    assert_eq!(request["method"], "elicitation/create");
    assert_eq!(request["params"]["mode"], "url");
    assert!(
        request["params"].get("elicitationId").is_none(),
        "no elicitation id on 2026-07-28: {request}"
    );
    assert_valid("2026-07-28", "InputRequest", request);
    let state = result["requestState"].as_str().expect("a sealed state");
    let link = request["params"]["url"].as_str().unwrap();

    let (status, page) = s.browser(Some("alice")).connect(link).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let retried = c
        .request(
            json!(3),
            "tools/call",
            json!({"name": "repositories", "arguments": {},
                   "inputResponses": {key: {"action": "accept"}}, "requestState": state}),
        )
        .await;
    assert_eq!(
        retried["result"]["content"][0]["text"], "called the code host with mock-access-1",
        "{retried}"
    );
    assert!(retried.get("error").is_none());

    // Retrying before the browser went through: the call says so (and asks nothing more).
    let mut bob = StatelessHttp::new(s.http.url("/mcp"))
        .with_capabilities(json!({"elicitation": {"url": {}}}));
    bob.token = Some(s.bearer("bob"));
    let first = bob
        .request(
            json!(4),
            "tools/call",
            json!({"name": "repositories", "arguments": {}}),
        )
        .await;
    let key = first["result"]["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    let state = first["result"]["requestState"].as_str().unwrap();
    let early = bob
        .request(
            json!(5),
            "tools/call",
            json!({"name": "repositories", "arguments": {},
                   "inputResponses": {key: {"action": "accept"}}, "requestState": state}),
        )
        .await;
    assert_eq!(early["result"]["isError"], true, "{early}");
    assert!(
        early["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("not finished"),
        "{early}"
    );
    assert!(!s.stored("bob").await);
}

#[tokio::test]
async fn a_tool_failing_with_32042_asks_for_the_urls_on_2026_07_28_instead() {
    use mcp::protocol::ElicitUrlParams;
    use mcp::registry::ProtocolError;
    let server = Server::builder("url-required", "1.0.0")
        .tool(ToolDef::from_fn(
            "pay",
            "Pays, once the user confirmed at the bank.",
            |_ctx, _: NoArgs| async move {
                Err::<String, _>(ProtocolError::url_elicitation_required(
                    "confirm the payment at your bank first",
                    vec![ElicitUrlParams::new(
                        "Confirm the payment",
                        "https://bank.example/confirm/7f3a",
                        Some("pay-7f3a".to_owned()),
                    )],
                ))
            },
        ))
        .build()
        .unwrap();
    let mut c = mcp::testing::TestClient::connect(&server);
    c.initialize(json!({"elicitation": {"url": {}}}))
        .await
        .unwrap();
    let e = c
        .request("tools/call", json!({"name": "pay", "arguments": {}}))
        .await
        .unwrap_err();
    assert_eq!(e.code, -32042);
    assert_eq!(
        e.data.as_ref().unwrap()["elicitations"][0]["elicitationId"],
        "pay-7f3a"
    );

    let mut c = mcp::testing::TestClient::connect(&server);
    c.use_stateless(json!({"elicitation": {"url": {}}}));
    let r = c
        .request("tools/call", json!({"name": "pay", "arguments": {}}))
        .await
        .unwrap();
    assert_eq!(r["resultType"], "input_required", "{r}");
    let asked = &r["inputRequests"]["url-pay-7f3a"];
    assert_eq!(asked["method"], "elicitation/create", "{r}");
    assert_eq!(asked["params"]["url"], "https://bank.example/confirm/7f3a");
    assert!(asked["params"].get("elicitationId").is_none());
    assert!(r["requestState"].is_string());
}

#[tokio::test]
async fn tokens_are_kept_per_user_and_provider_in_memory_and_on_redis() {
    use mcp::connect::TokenSet;
    let memory = MemoryTokenStore::new();
    let server = mcp_tests::redis::RedisServer::start("connect_tokens");
    let redis = match &server {
        Some(s) => Some(
            mcp::cluster::redis::RedisBackend::connect(&s.url(), "t-connect")
                .await
                .unwrap(),
        ),
        None => None,
    };
    let mut stores: Vec<&dyn TokenStore> = vec![&memory];
    if let Some(r) = &redis {
        stores.push(r);
    }
    for store in stores {
        let tokens = TokenSet::new(
            "access-1",
            Some("refresh-1".into()),
            Some(Duration::from_secs(60)),
            None,
        );
        assert_eq!(store.get("alice", "codehost").await.unwrap(), None);
        store.put("alice", "codehost", &tokens).await.unwrap();
        assert_eq!(
            store.get("alice", "codehost").await.unwrap(),
            Some(tokens.clone())
        );
        assert_eq!(store.get("bob", "codehost").await.unwrap(), None);
        assert_eq!(store.get("alice", "mail").await.unwrap(), None);
        assert!(
            !format!("{tokens:?}").contains("access-1"),
            "tokens stay out of logs"
        );
        assert!(store.remove("alice", "codehost").await.unwrap());
        assert!(!store.remove("alice", "codehost").await.unwrap());
        assert_eq!(store.get("alice", "codehost").await.unwrap(), None);
    }
}

/// Alice connects through the browser with access tokens that live 32 s: fresh when
/// issued, due for a refresh (30 s before expiry) once two seconds have passed.
async fn connected_with_short_lived_tokens(s: &Setup) {
    s.third_party.access_token_lifetime(Duration::from_secs(32));
    let alice = s.session("alice", json!({"url": {}})).await;
    let mut stream = SseReader::new(alice.post(call(1)).send().await.unwrap());
    let ask = stream.next_json().await;
    alice.post(accept(&ask)).send().await.unwrap();
    let link = ask["params"]["url"].as_str().unwrap().to_owned();
    let (status, page) = s.browser(Some("alice")).connect(&link).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let _complete = stream.next_json().await;
    let done = stream.next_json().await;
    assert_eq!(
        done["result"]["content"][0]["text"], "called the code host with mock-access-1",
        "the token just issued is used as it is: {done}"
    );
    assert_eq!(s.third_party.refreshes(), 0);
    tokio::time::sleep(Duration::from_millis(2100)).await;
}

/// A call of Alice's on a fresh session: the messages before its response, and the
/// response.
async fn call_as_alice(s: &Setup, id: i64) -> mcp_tests::http::Exchange {
    let mut alice = s.session("alice", json!({"url": {}})).await;
    alice
        .exchange(
            json!(id),
            "tools/call",
            json!({"name": "repositories", "arguments": {}}),
        )
        .await
}

fn asked_nothing(ex: &mcp_tests::http::Exchange) {
    assert!(
        ex.before
            .iter()
            .all(|m| m["method"] != "elicitation/create"),
        "{:?}",
        ex.before
    );
}

#[tokio::test]
async fn an_expired_token_is_refreshed_once_without_asking_the_user() {
    let s = Setup::start(Duration::from_secs(60)).await;
    connected_with_short_lived_tokens(&s).await;
    s.third_party
        .access_token_lifetime(Duration::from_secs(3600));
    // Two calls at once, each on its own session: one refresh serves both.
    let (first, second) = tokio::join!(call_as_alice(&s, 2), call_as_alice(&s, 3));
    for ex in [&first, &second] {
        asked_nothing(ex);
        assert_eq!(
            ex.response["result"]["content"][0]["text"], "called the code host with mock-access-2",
            "{}",
            ex.response
        );
    }
    assert_eq!(s.third_party.refreshes(), 1);
    let key = format!("principal:{}:alice", ISSUER.replace(':', "%3A"));
    let stored = s.tokens.get(&key, "codehost").await.unwrap().unwrap();
    assert_eq!(stored.access_token(), "mock-access-2");
    assert_eq!(
        stored.refresh_token(),
        Some("mock-refresh-1"),
        "the third party did not rotate it: the old one stays"
    );
    assert!(!stored.expired());
}

#[tokio::test]
async fn a_revoked_refresh_token_sends_the_user_through_the_browser_again() {
    let s = Setup::start(Duration::from_secs(60)).await;
    connected_with_short_lived_tokens(&s).await;
    s.third_party.revoke_refresh_tokens();
    let alice = s.session("alice", json!({"url": {}})).await;
    let mut stream = SseReader::new(alice.post(call(2)).send().await.unwrap());
    let ask = stream.next_json().await;
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    assert_eq!(ask["params"]["mode"], "url");
    assert!(
        !s.stored("alice").await,
        "the tokens the third party disowned are forgotten"
    );
    assert_eq!(s.third_party.refreshes(), 0, "the refresh was refused");

    alice.post(accept(&ask)).send().await.unwrap();
    let link = ask["params"]["url"].as_str().unwrap().to_owned();
    let (status, page) = s.browser(Some("alice")).connect(&link).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let _complete = stream.next_json().await;
    let done = stream.next_json().await;
    assert_eq!(
        done["result"]["content"][0]["text"],
        "called the code host with mock-access-2"
    );
}

#[tokio::test]
async fn an_unreachable_third_party_is_an_error_not_a_new_sign_in() {
    let s = Setup::start(Duration::from_secs(60)).await;
    connected_with_short_lived_tokens(&s).await;
    s.third_party.stop();
    let ex = call_as_alice(&s, 2).await;
    asked_nothing(&ex);
    assert_eq!(ex.response["result"]["isError"], true, "{}", ex.response);
    assert!(
        ex.response["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("could not renew"),
        "{}",
        ex.response
    );
    assert!(s.stored("alice").await, "an outage forgets nothing");
}
