//! Third-party sign-in (`mcp::connect`) on replicas behind a load balancer without sticky
//! sessions: a link made by a call on one replica is opened, and the third party's
//! callback accepted, on another; the waiting call gets its token and its client the
//! completion notification all the same. Single use, the owner check and expiry hold
//! across replicas. Every scenario runs over the in-memory backend and over a real
//! `redis-server` (skipped when it is not installed, unless `MCP_REQUIRE_REDIS=1`).
//!
//! The replicas share one public origin, as behind a load balancer; the test's browser is
//! the load balancer too, sending each of its requests for that origin to the replica the
//! scenario names.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jsonwebtoken::{EncodingKey, Header, encode};
use mcp::Server;
use mcp::auth::{allow_all, policy};
use mcp::cluster::Cluster;
use mcp::cluster::memory::MemoryBackend;
use mcp::cluster::redis::RedisBackend;
use mcp::connect::{BrowserUser, Connect, FlowLimits, PendingFlow, SignedCookie};
use mcp::testing::third_party::MockProvider;
use mcp_tests::connect::{ISSUER, SECRET};
use mcp_tests::http::{HttpTestServer, McpHttp, SseReader, StatelessHttp, test_config};
use mcp_tests::redis::RedisServer;
use reqwest::StatusCode;
use serde_json::{Value, json};

/// The origin browsers and clients know the server by; the load balancer behind it picks
/// a replica.
const PUBLIC: &str = "http://mcp.test";
const COOKIE_KEY: &[u8] = b"the-cookie-key-of-this-server-32+bytes!";
const SHARED_KEY: &[u8] = b"the-replicas-share-this-32+-byte-state-key";
const A: usize = 0;
const B: usize = 1;

use mcp_tests::redis::BackendKind as Kind;
use mcp_tests::response_text as text;

/// Two replicas of one server with a `Connect`, sharing a backend, and the third party.
struct Replicas {
    replicas: Vec<HttpTestServer>,
    clusters: Vec<Cluster>,
    third_party: MockProvider,
    _redis: Option<RedisServer>,
}

impl Replicas {
    async fn start(kind: Kind, test: &str, link_ttl: Duration) -> Option<Replicas> {
        let (clusters, redis) = match kind {
            Kind::Memory => {
                let backend = MemoryBackend::new();
                (vec![backend.replica(), backend.replica()], None)
            }
            Kind::Redis => {
                let server = RedisServer::start(test)?;
                let prefix = format!("t-{test}-{}", std::process::id());
                let backend = RedisBackend::connect(&server.url(), &prefix)
                    .await
                    .expect("connect to the test redis");
                (vec![backend.replica(), backend.replica()], Some(server))
            }
        };
        let third_party = MockProvider::start().await.unwrap();
        let mut replicas = Vec::new();
        for cluster in &clusters {
            replicas.push(replica(cluster, &third_party, link_ttl).await);
        }
        Some(Replicas {
            replicas,
            clusters,
            third_party,
            _redis: redis,
        })
    }

    fn endpoint(&self, i: usize) -> String {
        self.replicas[i].url("/mcp")
    }

    /// A handshake-era session of `user` on replica `i`, declaring URL-mode elicitation.
    async fn session(&self, user: &str, i: usize) -> McpHttp {
        let mut c = McpHttp::new(self.endpoint(i));
        c.token = Some(bearer(user));
        c.initialize("2025-11-25", json!({"elicitation": {"url": {}}}))
            .await;
        c
    }

    /// Whether the shared token store holds `user`'s tokens, as replica `i` reads it.
    async fn stored(&self, user: &str, i: usize) -> bool {
        let key = format!("principal:{}:{user}", ISSUER.replace(':', "%3A"));
        let (_, store) =
            mcp::connect::shared_stores(&self.clusters[i]).expect("the cluster shares tokens");
        store.get(&key, "codehost").await.unwrap().is_some()
    }

    /// The browser of `user` (signed in to this server), or of nobody.
    fn browser(&self, user: Option<&str>) -> Browser<'_> {
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
            replicas: &self.replicas,
        }
    }
}

/// One replica: the tool, its `Connect` in the cluster, the HTTP transport.
async fn replica(
    cluster: &Cluster,
    third_party: &MockProvider,
    link_ttl: Duration,
) -> HttpTestServer {
    let resource = format!("{PUBLIC}/mcp");
    let connect = Connect::builder(PUBLIC)
        .provider("codehost", third_party.provider())
        .identity(SignedCookie::new("session", COOKIE_KEY).insecure_for_local_development())
        .cluster(cluster)
        .link_ttl(link_ttl)
        // A call outwaits a short-lived link, so a late click finds it expired rather
        // than forgotten with its call.
        .wait(link_ttl.max(Duration::from_secs(3)))
        .build();
    let server = Server::builder("connect-cluster", "1.0.0")
        .state(connect.clone())
        .tool(mcp_tests::connect::repositories_tool())
        .authorizer(policy(|_| mcp::auth::Decision::Allow))
        .read_authorizer(allow_all())
        .state_key(SHARED_KEY)
        .cluster(cluster.clone())
        .build()
        .unwrap();
    let auth = mcp_tests::connect::bearer_auth(resource.as_str());
    HttpTestServer::start(server, test_config().bearer_auth(auth).connect(connect)).await
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn bearer(user: &str) -> String {
    let claims =
        json!({"sub": user, "iss": ISSUER, "aud": format!("{PUBLIC}/mcp"), "exp": now() + 300});
    encode(
        &Header::default(),
        &claims,
        &EncodingKey::from_secret(SECRET).unwrap(),
    )
    .unwrap()
}

/// A browser that follows redirects by hand; its requests for the public origin go to
/// the replica the scenario routes them to.
struct Browser<'a> {
    http: reqwest::Client,
    cookie: Option<String>,
    replicas: &'a [HttpTestServer],
}

impl Browser<'_> {
    /// GETs `url`, sent to replica `to` when it is this server's.
    async fn get(&self, url: &str, to: usize) -> reqwest::Response {
        let url = match url.strip_prefix(PUBLIC) {
            Some(path) => self.replicas[to].url(path),
            None => url.to_owned(),
        };
        let mut r = self.http.get(&url);
        if let Some(c) = &self.cookie {
            r = r.header("cookie", c);
        }
        r.send().await.unwrap()
    }

    /// Follows `url` through the third party and back, each request for this server going
    /// to the next replica of `route`; the last page's status and text.
    async fn follow(&self, url: &str, route: &[usize]) -> (StatusCode, String) {
        let mut url = url.to_owned();
        let mut route = route.iter();
        for _ in 0..4 {
            let to = if url.starts_with(PUBLIC) {
                *route
                    .next()
                    .expect("a replica for every request to this server")
            } else {
                0
            };
            let response = self.get(&url, to).await;
            if response.status() != StatusCode::FOUND {
                let status = response.status();
                return (status, response.text().await.unwrap());
            }
            url = location(&response);
        }
        panic!("too many redirects");
    }
}

fn location(response: &reqwest::Response) -> String {
    response.headers()["location"].to_str().unwrap().to_owned()
}

fn call(id: i64) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "repositories", "arguments": {}}})
    .to_string()
}

fn accept(ask: &Value) -> String {
    json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept"}}).to_string()
}

/// `user` calls the tool on replica `on` and accepts the URL elicitation: the stream the
/// call answers on, the elicitation's id, and the link.
async fn asked(s: &Replicas, user: &str, on: usize) -> (McpHttp, SseReader, String, String) {
    let client = s.session(user, on).await;
    let mut stream = SseReader::new(client.post(call(1)).send().await.unwrap());
    let ask = stream.next_json().await;
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    assert_eq!(ask["params"]["mode"], "url");
    let id = ask["params"]["elicitationId"].as_str().unwrap().to_owned();
    let link = ask["params"]["url"].as_str().unwrap().to_owned();
    assert!(link.starts_with(&format!("{PUBLIC}/connect/")), "{link}");
    client.post(accept(&ask)).send().await.unwrap();
    (client, stream, id, link)
}

/// The call's result after the completion notification for `id`.
async fn completed_then_answered(stream: &mut SseReader, id: &str) -> Value {
    let complete = stream.next_json().await;
    assert_eq!(
        complete["method"], "notifications/elicitation/complete",
        "{complete}"
    );
    assert_eq!(complete["params"]["elicitationId"], id);
    let done = stream.next_json().await;
    assert_eq!(done["id"], 1, "{done}");
    done
}

mcp_tests::on_both_backends!(
    a_link_made_on_one_replica_is_finished_on_another,
    a_replayed_link_or_callback_is_refused_on_another_replica,
    a_link_opened_by_someone_else_on_another_replica_fails_the_call,
    an_expired_link_is_refused_on_another_replica,
    on_2026_07_28_the_retry_on_another_replica_finds_the_account,
    the_flow_store_keeps_its_contract,
);

async fn a_link_made_on_one_replica_is_finished_on_another(kind: Kind) {
    let Some(s) = Replicas::start(kind, "connect_across", Duration::from_secs(60)).await else {
        return;
    };
    // Alice's link, made on A, is opened and comes back from the third party on B.
    let (_alice, mut stream, id, link) = asked(&s, "alice", A).await;
    let (status, page) = s.browser(Some("alice")).follow(&link, &[B, B]).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let done = completed_then_answered(&mut stream, &id).await;
    assert_eq!(text(&done), "called the code host with mock-access-1");
    assert!(s.stored("alice", A).await, "A reads the tokens B stored");

    // Bob's link, made on A, is opened on A and comes back on B.
    let (_bob, mut stream, id, link) = asked(&s, "bob", A).await;
    let (status, page) = s.browser(Some("bob")).follow(&link, &[A, B]).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let done = completed_then_answered(&mut stream, &id).await;
    assert_eq!(text(&done), "called the code host with mock-access-2");

    // Connected: a call on B asks nothing.
    let mut again = s.session("alice", B).await;
    let r = again
        .request(
            2,
            "tools/call",
            json!({"name": "repositories", "arguments": {}}),
        )
        .await;
    assert_eq!(text(&r), "called the code host with mock-access-1");
    assert_eq!(s.third_party.tokens_issued(), 2);
}

async fn a_replayed_link_or_callback_is_refused_on_another_replica(kind: Kind) {
    let Some(s) = Replicas::start(kind, "connect_replay", Duration::from_secs(60)).await else {
        return;
    };
    let (_alice, mut stream, id, link) = asked(&s, "alice", A).await;
    let browser = s.browser(Some("alice"));
    let first = browser.get(&link, A).await;
    assert_eq!(first.status(), StatusCode::FOUND);
    let to_third_party = location(&first);
    assert!(
        to_third_party.starts_with(&s.third_party.url()),
        "{to_third_party}"
    );

    // The same link again, on the other replica: it opened once already.
    let replayed = browser.get(&link, B).await;
    assert_eq!(replayed.status(), StatusCode::GONE);
    assert!(replayed.text().await.unwrap().contains("already used"));

    // The first opening goes on: the third party sends the browser back to B.
    let at_third_party = browser.get(&to_third_party, A).await;
    assert_eq!(at_third_party.status(), StatusCode::FOUND);
    let callback = location(&at_third_party);
    let back = browser.get(&callback, B).await;
    assert_eq!(back.status(), StatusCode::OK);
    let done = completed_then_answered(&mut stream, &id).await;
    assert_eq!(text(&done), "called the code host with mock-access-1");

    // Its callback, replayed on A: the state was spent.
    let replayed = browser.get(&callback, A).await;
    assert_eq!(replayed.status(), StatusCode::NOT_FOUND);
    // And the finished link, on either replica: gone.
    for i in [A, B] {
        assert_eq!(browser.get(&link, i).await.status(), StatusCode::NOT_FOUND);
    }
    assert_eq!(s.third_party.tokens_issued(), 1);
}

async fn a_link_opened_by_someone_else_on_another_replica_fails_the_call(kind: Kind) {
    let Some(s) = Replicas::start(kind, "connect_phishing", Duration::from_secs(60)).await else {
        return;
    };
    let (_alice, mut stream, _, link) = asked(&s, "alice", A).await;

    // Not signed in, on B: told to sign in; the link still works.
    let (status, _) = s.browser(None).follow(&link, &[B]).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);

    // Bob, signed in to this server, opens Alice's link on B.
    let (status, page) = s.browser(Some("bob")).follow(&link, &[B]).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{page}");
    assert!(page.contains("not yours"), "{page}");
    assert_eq!(s.third_party.tokens_issued(), 0, "bob never reached it");

    // Alice's call, waiting on A, hears at once that the flow failed.
    let done = stream.next_json().await;
    assert_eq!(done["id"], 1, "{done}");
    assert_eq!(done["result"]["isError"], true, "{done}");
    assert!(text(&done).contains("did not complete"), "{done}");

    // The link is spent everywhere, for Alice too.
    for i in [A, B] {
        let (status, _) = s.browser(Some("alice")).follow(&link, &[i]).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }
    assert!(!s.stored("alice", A).await && !s.stored("bob", A).await);
}

async fn an_expired_link_is_refused_on_another_replica(kind: Kind) {
    let Some(s) = Replicas::start(kind, "connect_expired", Duration::from_millis(500)).await else {
        return;
    };
    let (_alice, mut stream, _, link) = asked(&s, "alice", A).await;
    tokio::time::sleep(Duration::from_millis(700)).await;
    let (status, page) = s.browser(Some("alice")).follow(&link, &[B]).await;
    assert_eq!(status, StatusCode::GONE, "{page}");
    assert!(page.contains("expired"), "{page}");
    assert_eq!(s.third_party.tokens_issued(), 0);
    let done = stream.next_json().await;
    assert_eq!(done["result"]["isError"], true, "{done}");
}

async fn on_2026_07_28_the_retry_on_another_replica_finds_the_account(kind: Kind) {
    let Some(s) = Replicas::start(kind, "connect_stateless", Duration::from_secs(60)).await else {
        return;
    };
    let client = |i: usize| {
        let mut c = StatelessHttp::new(s.endpoint(i))
            .with_capabilities(json!({"elicitation": {"url": {}}}));
        c.token = Some(bearer("alice"));
        c
    };
    let first = client(A)
        .request(
            json!(1),
            "tools/call",
            json!({"name": "repositories", "arguments": {}}),
        )
        .await;
    let result = &first["result"];
    assert_eq!(result["resultType"], "input_required", "{first}");
    let (key, request) = result["inputRequests"]
        .as_object()
        .unwrap()
        .iter()
        .next()
        .unwrap();
    let link = request["params"]["url"].as_str().unwrap();
    let state = result["requestState"].as_str().unwrap();

    let (status, page) = s.browser(Some("alice")).follow(link, &[B, A]).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let retried = client(B)
        .request(
            json!(2),
            "tools/call",
            json!({"name": "repositories", "arguments": {},
                   "inputResponses": {key: {"action": "accept"}}, "requestState": state}),
        )
        .await;
    assert_eq!(
        text(&retried),
        "called the code host with mock-access-1",
        "{retried}"
    );
}

async fn the_flow_store_keeps_its_contract(kind: Kind) {
    let Some(s) = Replicas::start(kind, "connect_flow_store", Duration::from_secs(60)).await else {
        return;
    };
    // Both replicas' views of the one store.
    let (a, _) = mcp::connect::shared_stores(&s.clusters[A]).unwrap();
    let (b, _) = mcp::connect::shared_stores(&s.clusters[B]).unwrap();
    let now_ms = now() * 1000;
    let flow = |owner: &str, expires_at_ms: u64| PendingFlow {
        owner: BrowserUser::new(owner, Some(ISSUER)),
        provider: "codehost".into(),
        replica: Some(s.clusters[A].replica_id().to_owned()),
        expires_at_ms,
        opened: false,
        verifier: None,
    };
    let limits = FlowLimits {
        per_owner: 2,
        total: 100,
    };
    let live = now_ms + 60_000;
    assert!(a.create("c-1", &flow("carol", live), limits).await.unwrap());
    assert_eq!(b.get("c-1").await.unwrap(), Some(flow("carol", live)));

    // Opened once, across replicas, however many try at the same moment.
    let opens = futures::future::join_all((0..8).map(|i| {
        let store = if i % 2 == 0 { &a } else { &b };
        let state = format!("state-{i}");
        async move {
            store
                .open("c-1", Some((&state, "the-verifier")))
                .await
                .unwrap()
        }
    }))
    .await;
    assert_eq!(opens.iter().filter(|o| **o).count(), 1, "{opens:?}");
    let winner = opens.iter().position(|o| *o).unwrap();
    let opened = b.get("c-1").await.unwrap().unwrap();
    assert!(opened.opened);
    assert_eq!(opened.verifier.as_deref(), Some("the-verifier"));
    assert!(!a.open("c-1", None).await.unwrap());

    // The winner's state names the link, once; the losers' name nothing.
    let state = format!("state-{winner}");
    let (x, y) = tokio::join!(a.take_state(&state), b.take_state(&state));
    let taken: Vec<_> = [x.unwrap(), y.unwrap()].into_iter().flatten().collect();
    assert_eq!(taken, vec!["c-1".to_owned()]);
    let loser = format!("state-{}", (winner + 1) % 8);
    assert_eq!(a.take_state(&loser).await.unwrap(), None);

    // Ended once.
    let (x, y) = tokio::join!(a.take("c-1"), b.take("c-1"));
    assert_eq!(
        [x.unwrap(), y.unwrap()].into_iter().flatten().count(),
        1,
        "exactly one replica ends the flow"
    );
    assert_eq!(a.get("c-1").await.unwrap(), None);

    // At most two live links per owner; an ended or expired one frees its place.
    assert!(a.create("c-2", &flow("carol", live), limits).await.unwrap());
    assert!(b.create("c-3", &flow("carol", live), limits).await.unwrap());
    assert!(!a.create("c-4", &flow("carol", live), limits).await.unwrap());
    assert!(b.create("d-1", &flow("dave", live), limits).await.unwrap());
    assert!(a.take("c-2").await.unwrap().is_some());
    assert!(a.create("c-4", &flow("carol", live), limits).await.unwrap());
    assert!(
        a.create("e-1", &flow("erin", now_ms - 1), limits)
            .await
            .unwrap()
    );
    assert!(
        b.get("e-1").await.unwrap().unwrap().expired(now_ms),
        "an expired link is still known as such"
    );
    assert!(a.create("e-2", &flow("erin", live), limits).await.unwrap());
    assert!(a.create("e-3", &flow("erin", live), limits).await.unwrap());
    let tight = FlowLimits {
        per_owner: 8,
        total: 5,
    };
    // c-3, c-4, d-1, e-2, e-3 are live: the store is full.
    assert!(!b.create("f-1", &flow("frank", live), tight).await.unwrap());
}
