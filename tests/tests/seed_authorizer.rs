//! Port of the seed's authorizer_test: the tool seam, its built-ins, containment of broken
//! policies, the closed context, tools/list filtering, `authorization_configured` and the
//! Deployment boot guards.

use std::sync::Arc;
use std::time::Duration;

use mcp::auth::{
    self, AuthRequest, AuthorizerSource, Decision, Seam, allow_all, allowlist, deny_all, policy,
    policy_async,
};
use mcp::protocol::Message;
use mcp::server::ServerConfig;
use mcp::testing::TestClient;
use mcp::{ConnId, Server, Transport};
use mcp_tests::{Runs, add_tool, counting_tool, deny_payload, initialized_client};
use parking_lot::Mutex;
use serde_json::{Value, json};

fn server_with(authorizer: Option<Arc<dyn auth::Authorizer>>) -> Server {
    let mut b = Server::builder("seed", "0.0.0").tool(add_tool());
    if let Some(a) = authorizer {
        b = b.authorizer(a);
    }
    b.build().expect("server builds")
}

async fn call_add(server: &Server) -> mcp::protocol::CallToolResult {
    let mut client = initialized_client(server, json!({})).await;
    client
        .call_tool("add", json!({"a": 2, "b": 3}))
        .await
        .expect("tools/call answers")
}

fn decide(a: &dyn auth::Authorizer, name: &str) -> Decision {
    let ctx_holder = context_for_test();
    let request = AuthRequest::for_test(Seam::Tool, name, None, json!({}), &ctx_holder);
    match a.decide(&request) {
        auth::Verdict::Now(d) => d,
        auth::Verdict::Later(_) => panic!("built-ins decide synchronously"),
    }
}

/// An `AuthContext` as the server builds it: captured from a real request.
fn context_for_test() -> auth::AuthContext {
    let seen: Arc<Mutex<Option<auth::AuthContext>>> = Arc::default();
    let s2 = Arc::clone(&seen);
    let server = Server::builder("ctx", "0")
        .tool(add_tool())
        .authorizer(policy(move |req| {
            *s2.lock() = Some(req.context().clone());
            Decision::Allow
        }))
        .build()
        .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(mcp::testing::handle_message(
        &server,
        &ConnId::new("probe"),
        Message::request(
            1,
            "tools/call",
            json!({"name": "add", "arguments": {"a": 1, "b": 1}}),
        ),
    ));
    seen.lock().clone().expect("the authorizer saw a context")
}

#[test]
fn builders_decide_as_documented() {
    assert_eq!(decide(&*allow_all(), "anything"), Decision::Allow);
    assert_eq!(
        decide(&*deny_all("nope"), "anything"),
        Decision::Deny("nope".into())
    );
    let list = allowlist(["add", "ping_tool"]);
    assert_eq!(decide(&*list, "add"), Decision::Allow);
    assert_eq!(decide(&*list, "ping_tool"), Decision::Allow);
    assert_eq!(
        decide(&*list, "delete"),
        Decision::Deny("not_allowlisted".into())
    );
}

#[tokio::test]
async fn no_authorizer_allows() {
    let result = call_add(&server_with(None)).await;
    assert!(!result.is_error());
    assert_eq!(result.content[0].as_text(), Some("5"));
}

#[tokio::test]
async fn allow_all_runs_the_tool() {
    let result = call_add(&server_with(Some(allow_all()))).await;
    assert!(!result.is_error());
    assert_eq!(result.content[0].as_text(), Some("5"));
}

#[tokio::test]
async fn deny_all_gives_the_authorization_required_payload() {
    let result = call_add(&server_with(Some(deny_all("blocked")))).await;
    let payload = deny_payload(&result);
    assert_eq!(
        payload,
        json!({
            "error": "authorization_required",
            "tool": "add",
            "decision": "deny",
            "detail": "blocked",
        })
    );
}

#[tokio::test]
async fn ask_without_elicitation_denies_saying_approval_could_not_be_requested() {
    let server = server_with(Some(policy(|_| Decision::ask("Add two numbers?"))));
    let payload = deny_payload(&call_add(&server).await);
    assert_eq!(payload["decision"], "ask");
    assert_eq!(payload["question"], "Add two numbers?");
    let detail = payload["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("approval_unavailable: this call needs a person's approval"),
        "{detail}"
    );
    assert_eq!(payload["tool"], "add");
}

#[tokio::test]
async fn allowlist_denies_other_tools() {
    let runs = Runs::new();
    let server = Server::builder("seed", "0")
        .tool(add_tool())
        .tool(counting_tool("other", &runs))
        .authorizer(allowlist(["add"]))
        .build()
        .unwrap();
    let mut client = initialized_client(&server, json!({})).await;
    let ok = client
        .call_tool("add", json!({"a": 1, "b": 1}))
        .await
        .unwrap();
    assert_eq!(ok.content[0].as_text(), Some("2"));
    let denied = client.call_tool("other", json!({})).await.unwrap();
    let payload = deny_payload(&denied);
    assert_eq!(payload["decision"], "deny");
    assert_eq!(payload["detail"], "not_allowlisted");
    assert_eq!(runs.get(), 0);
    // Authorization runs before the lookup: an unknown tool is denied, not "not found".
    let unknown = client.call_tool("no_such_tool", json!({})).await.unwrap();
    assert_eq!(deny_payload(&unknown)["tool"], "no_such_tool");
}

#[tokio::test]
async fn a_denied_call_never_runs_the_handler() {
    let runs = Runs::new();
    let server = Server::builder("seed", "0")
        .tool(counting_tool("count", &runs))
        .authorizer(deny_all("blocked"))
        .build()
        .unwrap();
    let mut client = initialized_client(&server, json!({})).await;
    for _ in 0..3 {
        let r = client.call_tool("count", json!({})).await.unwrap();
        deny_payload(&r);
    }
    assert_eq!(runs.get(), 0);
}

#[tokio::test]
async fn a_panicking_authorizer_denies_and_the_server_keeps_serving() {
    let runs = Runs::new();
    let server = Server::builder("seed", "0")
        .tool(counting_tool("count", &runs))
        .authorizer(policy(|_| panic!("policy engine exploded")))
        .build()
        .unwrap();
    let mut client = initialized_client(&server, json!({})).await;
    for _ in 0..2 {
        let r = client.call_tool("count", json!({})).await.unwrap();
        let payload = deny_payload(&r);
        assert_eq!(payload["decision"], "deny");
        assert_eq!(payload["detail"], "authorizer_failed");
        // The panic message never reaches the client.
        assert!(!r.content[0].as_text().unwrap().contains("exploded"));
    }
    assert_eq!(runs.get(), 0);
    assert_eq!(client.request("ping", json!({})).await.unwrap(), json!({}));
}

/// A listing decides many tools in one run: a panic for some hides exactly those, and the
/// tools decided after it are still decided (shown), on every page.
#[tokio::test]
async fn a_listing_hides_only_the_tools_whose_decision_panicked() {
    let runs = Runs::new();
    let mut builder = Server::builder("seed", "0").page_size(7);
    for i in 0..20 {
        builder = builder.tool(counting_tool(&format!("t{i:02}"), &runs));
    }
    let server = builder
        .authorizer(policy(|req| {
            if req.name().ends_with('3') || req.name().ends_with('8') {
                panic!("policy engine exploded on {}", req.name());
            }
            Decision::Allow
        }))
        .build()
        .unwrap();
    let mut client = initialized_client(&server, json!({})).await;
    let listed: Vec<String> = mcp_tests::tool_names(&mut client).await;
    let expected: Vec<String> = (0..20)
        .map(|i| format!("t{i:02}"))
        .filter(|n| !n.ends_with('3') && !n.ends_with('8'))
        .collect();
    assert_eq!(listed, expected);
    assert_eq!(client.request("ping", json!({})).await.unwrap(), json!({}));
}

/// Records the tools it is asked about; allows the insensitive ones and asks about the rest,
/// and says so (`allows_every_insensitive_tool`) when `says_so`.
struct Recording {
    asked: Mutex<Vec<String>>,
    says_so: bool,
}

impl auth::Authorizer for Recording {
    fn decide<'a>(&'a self, request: &'a AuthRequest<'a>) -> auth::Verdict<'a> {
        self.asked.lock().push(request.name().to_owned());
        auth::Verdict::Now(if request.is_sensitive() {
            Decision::ask(format!("Run {}?", request.name()))
        } else {
            Decision::Allow
        })
    }
    fn allows_every_insensitive_tool(&self) -> bool {
        self.says_so
    }
}

/// An authorizer that allows every insensitive tool may say so: a listing then asks it
/// only about the sensitive tools and shows the same; calls are still decided one by one.
#[tokio::test]
async fn a_listing_asks_only_about_sensitive_tools_an_authorizer_does_not_settle() {
    for says_so in [false, true] {
        let runs = Runs::new();
        let recording = Arc::new(Recording {
            asked: Mutex::new(Vec::new()),
            says_so,
        });
        let server = Server::builder("seed", "0")
            .tool(counting_tool("plain", &runs))
            .tool(counting_tool("wipe", &runs).destructive())
            .tool(counting_tool("peek", &runs).read_only())
            .authorizer(Arc::clone(&recording) as Arc<dyn auth::Authorizer>)
            .build()
            .unwrap();
        // No elicitation: a tool that needs a question is hidden from this client.
        let mut client = initialized_client(&server, json!({})).await;
        assert_eq!(
            mcp_tests::tool_names(&mut client).await,
            ["peek", "plain"],
            "says_so: {says_so}"
        );
        let asked = std::mem::take(&mut *recording.asked.lock());
        if says_so {
            assert_eq!(asked, ["wipe"]);
        } else {
            assert_eq!(asked.len(), 3, "{asked:?}");
        }
        client.call_tool("plain", json!({})).await.unwrap();
        assert_eq!(*recording.asked.lock(), ["plain"], "says_so: {says_so}");
        assert_eq!(runs.get(), 1);
    }
}

/// The built-ins that say they allow every insensitive tool do, at once, with any
/// arguments; the others, and a closure of the user's, do not say so.
#[test]
fn only_the_built_ins_that_allow_every_insensitive_tool_say_so() {
    let runs = Runs::new();
    let plain = counting_tool("plain", &runs);
    let nobody = context_for_test();
    for settled in [allow_all(), auth::ask_before_sensitive()] {
        assert!(settled.allows_every_insensitive_tool());
        for arguments in [json!({}), json!({"path": "/etc", "force": true})] {
            let request =
                AuthRequest::for_test(Seam::Tool, "plain", Some(&plain), arguments, &nobody);
            assert!(matches!(
                settled.decide(&request),
                auth::Verdict::Now(Decision::Allow)
            ));
        }
    }
    assert!(!allowlist(["plain"]).allows_every_insensitive_tool());
    assert!(!deny_all("no").allows_every_insensitive_tool());
    assert!(!policy(|_| Decision::Allow).allows_every_insensitive_tool());
}

#[tokio::test]
async fn a_panicking_async_authorizer_denies_too() {
    let runs = Runs::new();
    let server = Server::builder("seed", "0")
        .tool(counting_tool("count", &runs))
        .authorizer(policy_async(|_req| async move {
            tokio::task::yield_now().await;
            panic!("async policy exploded")
        }))
        .build()
        .unwrap();
    let mut client = initialized_client(&server, json!({})).await;
    let r = client.call_tool("count", json!({})).await.unwrap();
    assert_eq!(deny_payload(&r)["detail"], "authorizer_failed");
    assert_eq!(runs.get(), 0);
    assert_eq!(client.request("ping", json!({})).await.unwrap(), json!({}));
}

#[tokio::test]
async fn an_off_contract_answer_denies_and_the_server_lives() {
    let runs = Runs::new();
    let server = Server::builder("seed", "0")
        .tool(counting_tool("count", &runs))
        // An Ask with nothing to ask is outside the contract.
        .authorizer(policy(|_| Decision::ask("   ")))
        .build()
        .unwrap();
    let mut client = initialized_client(&server, json!({"elicitation": {}})).await;
    let r = client.call_tool("count", json!({})).await.unwrap();
    let payload = deny_payload(&r);
    assert_eq!(payload["decision"], "deny");
    assert_eq!(payload["detail"], "authorizer_contract_violation");
    assert_eq!(runs.get(), 0);
    assert_eq!(client.request("ping", json!({})).await.unwrap(), json!({}));
}

#[tokio::test]
async fn a_stalling_authorizer_denies_with_authorizer_timeout() {
    let runs = Runs::new();
    let server = Server::builder("seed", "0")
        .tool(counting_tool("count", &runs))
        .authorizer(policy_async(|_req| async move {
            tokio::time::sleep(Duration::from_secs(30)).await;
            Decision::Allow
        }))
        .config(ServerConfig {
            authorizer_timeout: Duration::from_millis(50),
            ..ServerConfig::default()
        })
        .build()
        .unwrap();
    let mut client = initialized_client(&server, json!({})).await;
    let started = std::time::Instant::now();
    let r = client.call_tool("count", json!({})).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(2));
    let payload = deny_payload(&r);
    assert_eq!(payload["decision"], "deny");
    assert_eq!(payload["detail"], "authorizer_timeout");
    assert_eq!(runs.get(), 0);
}

/// Both seams see exactly the server-derived context: the connection id and the declared
/// transport (and no principal without a verified token), even after an `initialize` that
/// sent `clientInfo`.
#[tokio::test]
async fn both_seams_see_exactly_conn_id_and_transport() {
    let seen: Arc<Mutex<Vec<(Seam, String)>>> = Arc::default();
    let record = |seen: &Arc<Mutex<Vec<(Seam, String)>>>| {
        let seen = Arc::clone(seen);
        policy(move |req| {
            seen.lock()
                .push((req.seam(), format!("{:?}", req.context())));
            assert!(req.context().principal().is_none());
            Decision::Allow
        })
    };
    let server = Server::builder("seed", "0")
        .tool(add_tool())
        .authorizer(record(&seen))
        .read_authorizer(record(&seen))
        .build()
        .unwrap();
    for conn in ["conn-a", "conn-b"] {
        let mut client = TestClient::connect_as(&server, ConnId::new(conn), Transport::Sse);
        // TestClient::initialize sends clientInfo {name: "mcp-test-client", ...}.
        client.initialize(json!({"elicitation": {}})).await.unwrap();
        client.list_tools().await.unwrap();
        client
            .call_tool("add", json!({"a": 1, "b": 2}))
            .await
            .unwrap();
    }
    let seen = seen.lock();
    let expect = |conn: &str| {
        format!(r#"AuthContext {{ conn_id: ConnId("{conn}"), transport: Sse, principal: None }}"#)
    };
    // Per connection: the read seam for tools/list, the tool seam filtering it, then the
    // tool seam for the call.
    assert_eq!(seen.len(), 6, "{seen:?}");
    for (i, (seam, ctx)) in seen.iter().enumerate() {
        let conn = if i < 3 { "conn-a" } else { "conn-b" };
        assert_eq!(ctx, &expect(conn), "entry {i} ({seam:?})");
        assert!(!ctx.contains("mcp-test-client"));
    }
    assert!(seen.iter().any(|(s, _)| *s == Seam::Read));
    assert!(seen.iter().any(|(s, _)| *s == Seam::Tool));
}

#[tokio::test]
async fn a_connection_without_a_transport_gets_the_servers_declared_transport() {
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let s2 = Arc::clone(&seen);
    let server = Server::builder("seed", "0")
        .tool(add_tool())
        .transport(Transport::Stdio)
        .authorizer(policy(move |req| {
            s2.lock().push(format!("{:?}", req.context()));
            Decision::Allow
        }))
        .build()
        .unwrap();
    let id = ConnId::new("in-process");
    mcp::testing::handle_message(
        &server,
        &id,
        Message::request(
            1,
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "evil", "version": "1", "transport": "stdio"}}),
        ),
    )
    .await
    .unwrap();
    let reply = mcp::testing::handle_message(
        &server,
        &id,
        Message::request(
            2,
            "tools/call",
            json!({"name": "add", "arguments": {"a": 1, "b": 1}}),
        ),
    )
    .await
    .unwrap();
    assert_eq!(reply.to_value()["result"]["content"][0]["text"], "2");
    assert_eq!(
        *seen.lock(),
        [r#"AuthContext { conn_id: ConnId("in-process"), transport: Stdio, principal: None }"#]
    );
}

fn listing_server(authorizer: Option<Arc<dyn auth::Authorizer>>) -> Server {
    let runs = Runs::new();
    let mut b = Server::builder("seed", "0")
        .tool(counting_tool("open", &runs))
        .tool(counting_tool("secret", &runs))
        .tool(counting_tool("risky", &runs))
        .tool(counting_tool("boom", &runs));
    if let Some(a) = authorizer {
        b = b.authorizer(a);
    }
    b.build().unwrap()
}

fn listing_policy() -> Arc<dyn auth::Authorizer> {
    policy(|req| match req.name() {
        "secret" => Decision::deny("hidden"),
        "risky" => Decision::ask("Run risky?"),
        "boom" => panic!("policy bug for boom"),
        _ => Decision::Allow,
    })
}

async fn listed_names(server: &Server, capabilities: Value) -> Vec<String> {
    let mut client = initialized_client(server, capabilities).await;
    let names = mcp_tests::tool_names(&mut client).await;
    assert_eq!(client.request("ping", json!({})).await.unwrap(), json!({}));
    names
}

#[tokio::test]
async fn tools_list_hides_denied_and_unaskable_tools_and_survives_a_panicking_policy() {
    let server = listing_server(Some(listing_policy()));
    // Cannot be asked: Ask hides the tool like Deny. The panicking policy hides only its tool.
    assert_eq!(listed_names(&server, json!({})).await, ["open"]);
    // Can be asked: the Ask'd tool is listed (it can run after approval).
    assert_eq!(
        listed_names(&server, json!({"elicitation": {}})).await,
        ["open", "risky"]
    );
}

#[tokio::test]
async fn tools_list_without_an_authorizer_lists_everything() {
    let server = listing_server(None);
    assert_eq!(
        listed_names(&server, json!({})).await,
        ["boom", "open", "risky", "secret"]
    );
}

#[tokio::test]
async fn tools_list_ask_needs_a_live_transport_to_be_listed() {
    // The elicitation capability alone is not enough: a connection without a transport
    // cannot be asked, so the Ask'd tool stays hidden from it.
    let server = listing_server(Some(listing_policy()));
    let id = ConnId::new("no-transport");
    mcp::testing::handle_message(
        &server,
        &id,
        Message::request(
            1,
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
                       "clientInfo": {"name": "c", "version": "1"}}),
        ),
    )
    .await
    .unwrap();
    let reply =
        mcp::testing::handle_message(&server, &id, Message::request(2, "tools/list", json!({})))
            .await
            .unwrap()
            .to_value();
    let names: Vec<&str> = reply["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["open"]);
}

#[test]
fn authorization_configured_needs_an_authorizer_chosen_by_a_person() {
    let build = |b: mcp::ServerBuilder| b.tool(add_tool()).build().unwrap();
    // No authorizer, even with the source forced to Configured: false.
    let s = build(Server::builder("s", "0").authorizer_source(AuthorizerSource::Configured));
    assert!(!s.authorization_configured());
    // Chosen with the builder: true.
    let s = build(Server::builder("s", "0").authorizer(deny_all("x")));
    assert!(s.authorization_configured());
    assert_eq!(s.authorizer_source(), AuthorizerSource::Configured);
    // A framework fallback, however strict, is not a decision.
    let s = build(Server::builder("s", "0").fallback_authorizer(allowlist(Vec::<String>::new())));
    assert!(!s.authorization_configured());
    assert_eq!(s.authorizer_source(), AuthorizerSource::Default);
    // An authorizer whose source is set to Default is not configured either.
    let s = build(
        Server::builder("s", "0")
            .authorizer(deny_all("x"))
            .authorizer_source(AuthorizerSource::Default),
    );
    assert!(!s.authorization_configured());
    // The default source is Default: a forgetful embedder fails closed.
    assert_eq!(AuthorizerSource::default(), AuthorizerSource::Default);
    let s = build(Server::builder("s", "0"));
    assert_eq!(s.authorizer_source(), AuthorizerSource::Default);
    assert!(!s.authorization_configured());
    // The read seam is presence only.
    assert!(!s.read_authorization_configured());
    let s = build(Server::builder("s", "0").read_authorizer(deny_all("x")));
    assert!(s.read_authorization_configured());
    assert!(!s.authorization_configured());
}

/// The network boot guard (seed: `Deployment.enforce_*`), seen through the legacy SSE
/// transport it guards. There is no environment in which it relaxes by itself: only the
/// explicit opt-out lifts it (see `http_safety.rs` and the examples' network tests).
fn sse_boots(server: Server) -> Result<(), String> {
    let config = mcp::transport::http::HttpConfig::new();
    mcp::transport::sse::router(server, config)
        .map(drop)
        .map_err(|e| e.to_string())
}

#[test]
fn deployment_enforce_refuses_only_when_unconfigured() {
    let bare = Server::builder("s", "0").tool(add_tool()).build().unwrap();
    let err = sse_boots(bare).unwrap_err();
    assert!(
        err.contains("MCP HTTP+SSE transport refuses to boot"),
        "{err}"
    );
    assert!(
        err.contains("no authorizer is configured for tools"),
        "{err}"
    );
    assert!(err.contains("resources/read"), "{err}");
    let both = Server::builder("s", "0")
        .tool(add_tool())
        .authorizer(allow_all())
        .read_authorizer(allow_all())
        .build()
        .unwrap();
    assert!(sse_boots(both).is_ok());
}

#[test]
fn deployment_guard_uses_the_source_aware_predicate() {
    // A fallback authorizer is not a decision: the tool gate refuses, the read gate (presence
    // only) does not.
    let fallback = Server::builder("s", "0")
        .tool(add_tool())
        .fallback_authorizer(deny_all("x"))
        .read_authorizer(allow_all())
        .build()
        .unwrap();
    let err = sse_boots(fallback).unwrap_err();
    assert!(err.contains("for tools"), "{err}");
    assert!(!err.contains("no read authorizer"), "{err}");
}

#[tokio::test]
async fn a_whole_filtered_listing_decides_each_tool_about_once() {
    // Beyond the seed: with an authorizer, a page decides only the tools it can show, so
    // listing n tools page by page costs about n decisions, not n per page.
    for asynchronous in [false, true] {
        let builder = Server::builder("many", "0.0.0").page_size(10);
        let (pages, spent, _) = list_filtered(builder, asynchronous).await;
        assert_eq!(pages, 20);
        // Each page looks one visible tool (and the hidden ones before it) past its end.
        assert!(
            (300..=300 + 2 * pages).contains(&spent),
            "{spent} decisions for 300 tools in {pages} pages"
        );
    }
}

#[tokio::test]
async fn pages_cut_by_their_bytes_list_every_visible_tool_once() {
    let builder = Server::builder("many", "0.0.0").page_bytes(2048);
    let (pages, spent, largest) = list_filtered(builder, false).await;
    assert!(pages > 5, "{pages} pages");
    assert!(largest <= 2048 + 200, "a page of {largest} bytes");
    // A page cut by its bytes decides at most a batch (64) past its end.
    assert!(
        (300..=300 + 64 * pages).contains(&spent),
        "{spent} decisions for 300 tools in {pages} pages"
    );
}

/// Lists 300 tools, every third hidden by the authorizer, page by page to the end; checks
/// every visible tool is listed once. Returns the pages, the decisions taken and the
/// largest page's `tools` array in bytes.
async fn list_filtered(mut b: mcp::ServerBuilder, asynchronous: bool) -> (usize, usize, usize) {
    let decisions = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = decisions.clone();
    for i in 0..300 {
        b = b.tool(
            mcp::registry::ToolDef::new(
                format!("tool_{i:03}"),
                "d",
                json!({"type": "object"}),
                |_c, _a| async { mcp::protocol::CallToolResult::text("x") },
            )
            .read_only(),
        );
    }
    // Every third tool is hidden: pages skip over them.
    let decide = move |name: &str| {
        counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let n: usize = name[5..].parse().unwrap();
        if n.is_multiple_of(3) {
            Decision::deny("hidden")
        } else {
            Decision::Allow
        }
    };
    let server = if asynchronous {
        // Decided later (after a yield): the listing awaits those decisions together.
        b.authorizer(policy_async(move |req| {
            let decision = decide(&req.name);
            async move {
                tokio::task::yield_now().await;
                decision
            }
        }))
    } else {
        b.authorizer(policy(move |req| decide(req.name())))
    }
    .build()
    .unwrap();
    let mut client = initialized_client(&server, json!({})).await;
    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    let (mut pages, mut largest) = (0, 0);
    loop {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let r = client.request("tools/list", params).await.unwrap();
        pages += 1;
        largest = largest.max(r["tools"].to_string().len());
        let tools = r["tools"].as_array().unwrap();
        assert!(!tools.is_empty());
        names.extend(tools.iter().map(|t| t["name"].as_str().unwrap().to_owned()));
        match r["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    assert_eq!(names.len(), 200);
    names.dedup();
    assert_eq!(names.len(), 200, "a tool listed twice");
    assert!(
        names
            .iter()
            .all(|n| n[5..].parse::<usize>().unwrap() % 3 != 0)
    );
    let spent = decisions.load(std::sync::atomic::Ordering::SeqCst);
    (pages, spent, largest)
}
