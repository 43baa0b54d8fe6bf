//! Application state, extractors and the lifecycle hooks, through the in-memory client:
//! a tool, a resource and a prompt receive the state the server was given; a custom
//! extractor fills a parameter or refuses the call; a handler asking for a state the server
//! lacks stops `build()`; start-up hooks run once and their error is the boot's; state made
//! at start-up reaches handlers; shutdown hooks run once, last first.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use mcp::extract::{FromCtx, Rejection, State};
use mcp::macros_support::{PromptFactory, ResourceFactory, ToolFactory};
use mcp::prelude::*;
use mcp::protocol::CallToolResult;
use mcp::testing::TestClient;
use serde_json::{Value, json};
use std::sync::Mutex;

/// The application's configuration.
struct Config {
    greeting: String,
}

/// A counter shared by every call (stands in for a pool).
#[derive(Default)]
struct Counter {
    hits: AtomicUsize,
}

/// Greets, with the configured greeting, and counts the greetings.
#[tool(read_only)]
async fn greet(config: State<Config>, counter: State<Counter>, name: String) -> String {
    let n = counter.hits.fetch_add(1, Ordering::SeqCst) + 1;
    format!("{}, {name}! (#{n})", config.greeting)
}

/// The greeting, as a resource.
#[resource("config://greeting", mime = "text/plain")]
async fn greeting(config: State<Config>) -> String {
    config.greeting.clone()
}

/// A prompt using the greeting.
#[prompt]
async fn welcome(config: State<Config>, name: String) -> String {
    format!("{} {name}, how can I help?", config.greeting)
}

/// The tenant named in a 2026-07-28 request's `_meta` (`example.com/tenant`); calls
/// without one are refused.
struct Tenant(String);

impl FromCtx for Tenant {
    async fn from_ctx(ctx: &Ctx) -> Result<Self, Rejection> {
        ctx.meta()
            .and_then(|m| m.get("example.com/tenant"))
            .and_then(Value::as_str)
            .map(|t| Tenant(t.to_owned()))
            .ok_or_else(|| Rejection::new("this tool needs a tenant in _meta (example.com/tenant)"))
    }
}

/// Names the caller's tenant.
#[tool(read_only)]
async fn tenant(#[extract] tenant: Tenant, ctx: Ctx) -> String {
    let _ = ctx.request_id();
    format!("tenant {}", tenant.0)
}

fn server() -> Server {
    let builder = Server::builder("stateful", "1")
        .state(Config {
            greeting: "Hello".into(),
        })
        .state(Counter::default())
        .tool(<greet as ToolFactory>::def())
        .tool(<tenant as ToolFactory>::def())
        .prompt(<welcome as PromptFactory>::def());
    mcp::macros_support::add_resource(builder, <greeting as ResourceFactory>::def())
        .build()
        .expect("every state is given")
}

fn text(result: &CallToolResult) -> String {
    serde_json::to_value(&result.content).unwrap()[0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn handlers_receive_the_servers_state_outside_their_schema() {
    let server = server();
    let mut client = TestClient::connect(&server);
    client.initialize(json!({})).await.unwrap();

    let tools = client.list_tools().await.unwrap();
    let greet = tools.iter().find(|t| t.name == "greet").unwrap();
    let schema = serde_json::to_value(&greet.input_schema).unwrap();
    assert_eq!(schema["required"], json!(["name"]), "{schema}");
    assert!(schema["properties"].get("config").is_none(), "{schema}");

    let r = client
        .call_tool("greet", json!({"name": "Ada"}))
        .await
        .unwrap();
    assert_eq!(text(&r), "Hello, Ada! (#1)");
    let r = client
        .call_tool("greet", json!({"name": "Bob"}))
        .await
        .unwrap();
    assert_eq!(
        text(&r),
        "Hello, Bob! (#2)",
        "one state shared by every call"
    );
    assert_eq!(
        server
            .state::<Counter>()
            .unwrap()
            .hits
            .load(Ordering::SeqCst),
        2
    );

    let read = client
        .request("resources/read", json!({"uri": "config://greeting"}))
        .await
        .unwrap();
    assert_eq!(read["contents"][0]["text"], "Hello");
    let prompt = client
        .request(
            "prompts/get",
            json!({"name": "welcome", "arguments": {"name": "Ada"}}),
        )
        .await
        .unwrap();
    assert_eq!(
        prompt["messages"][0]["content"]["text"],
        "Hello Ada, how can I help?"
    );
}

#[tokio::test]
async fn a_custom_extractor_fills_its_parameter_or_refuses_the_call() {
    let server = server();
    let mut client = TestClient::connect(&server);
    // `Ctx::meta` is the 2026-07-28 request's `_meta`.
    client.use_stateless(json!({}));
    let answer = client
        .request(
            "tools/call",
            json!({"name": "tenant", "arguments": {}, "_meta": {"example.com/tenant": "acme"}}),
        )
        .await
        .unwrap();
    assert_eq!(answer["content"][0]["text"], "tenant acme");
    assert_ne!(answer["isError"], json!(true), "{answer}");

    let refused = client.call_tool("tenant", json!({})).await.unwrap();
    assert!(refused.is_error(), "{refused:?}");
    assert!(text(&refused).contains("needs a tenant"), "{refused:?}");
}

#[test]
fn a_handler_asking_for_a_missing_state_stops_the_build() {
    let e = Server::builder("stateless", "1")
        .state(Counter::default())
        .tool(<greet as ToolFactory>::def())
        .build()
        .unwrap_err();
    let text = e.to_string();
    assert!(text.contains("tool \"greet\""), "{text}");
    assert!(text.contains("State<state::Config>"), "{text}");
    assert!(text.contains("ServerBuilder::state"), "{text}");

    let builder = Server::builder("stateless", "1");
    let e = mcp::macros_support::add_resource(builder, <greeting as ResourceFactory>::def())
        .build()
        .unwrap_err();
    assert!(
        e.to_string().contains("resource \"config://greeting\""),
        "{e}"
    );
}

#[tokio::test]
async fn state_made_at_start_up_reaches_handlers_and_hooks_run_once_in_order() {
    let log = Arc::new(Mutex::new(Vec::<String>::new()));
    let (a, b, c) = (log.clone(), log.clone(), log.clone());
    let server = Server::builder("lifecycle", "1")
        .state(Counter::default())
        .state_with(|| async {
            // Stands in for connecting a pool and running migrations.
            Ok::<_, std::io::Error>(Config {
                greeting: "Welcome".into(),
            })
        })
        .on_start(move |server: Server| async move {
            let greeting = server.state::<Config>().map(|c| c.greeting.clone());
            a.lock().unwrap().push(format!("start sees {greeting:?}"));
            Ok::<_, String>(())
        })
        .on_shutdown(move |_| async move { b.lock().unwrap().push("close pool".into()) })
        .on_shutdown(move |_| async move { c.lock().unwrap().push("flush".into()) })
        .tool(<greet as ToolFactory>::def())
        .build()
        .expect("Config is promised by state_with");

    server.start().await.unwrap();
    server.start().await.unwrap();
    let mut client = TestClient::connect(&server);
    client.initialize(json!({})).await.unwrap();
    let r = client
        .call_tool("greet", json!({"name": "Ada"}))
        .await
        .unwrap();
    assert_eq!(text(&r), "Welcome, Ada! (#1)");
    server.finish().await;
    server.finish().await;
    assert_eq!(
        *log.lock().unwrap(),
        vec![
            "start sees Some(\"Welcome\")".to_owned(),
            "flush".to_owned(),
            "close pool".to_owned()
        ]
    );
}

#[tokio::test]
async fn a_failing_start_up_names_what_failed() {
    let server = Server::builder("broken", "1")
        .state_with(|| async { Err::<Config, _>("database is locked") })
        .tool(<greet as ToolFactory>::def())
        .state(Counter::default())
        .build()
        .unwrap();
    let e = server.start().await.unwrap_err();
    assert!(e.contains("state::Config"), "{e}");
    assert!(e.contains("database is locked"), "{e}");

    let server = Server::builder("broken", "1")
        .on_start(|_| async { Err::<(), _>("no such directory") })
        .build()
        .unwrap();
    let e = server.start().await.unwrap_err();
    assert_eq!(e, "start-up failed: no such directory");
}

/// Which tools the policy allows: state the authorizer reads.
struct Allowed {
    tools: Vec<&'static str>,
}

/// Counts the calls it passes on, in the server's `Counter` state.
struct CountCalls;

impl mcp::layers::Layer for CountCalls {
    fn on_call_tool<'a>(
        &'a self,
        req: &'a mcp::layers::Request<'a>,
        next: mcp::layers::Next<'a>,
    ) -> mcp::layers::Pending<'a> {
        if let Some(counter) = req.state::<Counter>() {
            counter.hits.fetch_add(100, Ordering::SeqCst);
        }
        next.run(req)
    }
}

#[tokio::test]
async fn authorizers_and_layers_read_the_state_too() {
    let builder = Server::builder("guarded", "1")
        .state(Config {
            greeting: "Hi".into(),
        })
        .state(Counter::default())
        .state(Allowed {
            tools: vec!["greet"],
        })
        .authorizer(mcp::auth::policy(|req| {
            let allowed = req
                .context()
                .state::<Allowed>()
                .is_some_and(|a| a.tools.contains(&req.name()));
            if allowed {
                mcp::auth::Decision::Allow
            } else {
                mcp::auth::Decision::deny("not in the allowed list")
            }
        }))
        .layer(CountCalls)
        .tool(<greet as ToolFactory>::def())
        .tool(<tenant as ToolFactory>::def());
    let server = builder.build().unwrap();
    let mut client = TestClient::connect(&server);
    client.initialize(json!({})).await.unwrap();
    let r = client
        .call_tool("greet", json!({"name": "Ada"}))
        .await
        .unwrap();
    assert_eq!(text(&r), "Hi, Ada! (#101)", "the layer counted first");
    let denied = client.call_tool("tenant", json!({})).await.unwrap();
    assert!(
        text(&denied).contains("not in the allowed list"),
        "{denied:?}"
    );
}

/// What one session has seen: per-connection state.
#[derive(Default)]
struct Seen {
    calls: AtomicUsize,
}

/// Counts this session's calls.
#[tool(read_only)]
async fn count_mine(ctx: Ctx) -> String {
    let seen = ctx.session_state::<Seen>();
    (seen.calls.fetch_add(1, Ordering::SeqCst) + 1).to_string()
}

#[tokio::test]
async fn each_session_keeps_its_own_state_and_its_end_is_seen_once() {
    let ended = Arc::new(Mutex::new(Vec::<(String, usize)>::new()));
    let log = ended.clone();
    let server = Server::builder("sessions", "1")
        .tool(<count_mine as ToolFactory>::def())
        .on_session_end(move |end| {
            let calls = end
                .state::<Seen>()
                .map_or(0, |s| s.calls.load(Ordering::SeqCst));
            log.lock().unwrap().push((end.conn_id().to_string(), calls));
        })
        .build()
        .unwrap();
    let mut a = TestClient::connect(&server);
    let mut b = TestClient::connect(&server);
    a.initialize(json!({})).await.unwrap();
    b.initialize(json!({})).await.unwrap();
    for expected in ["1", "2", "3"] {
        let r = a.call_tool("count_mine", json!({})).await.unwrap();
        assert_eq!(text(&r), expected);
    }
    let r = b.call_tool("count_mine", json!({})).await.unwrap();
    assert_eq!(text(&r), "1", "another session starts from its own state");
    let a_id = a.conn_id().to_string();
    assert!(ended.lock().unwrap().is_empty());

    drop(a);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while ended.lock().unwrap().is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(*ended.lock().unwrap(), vec![(a_id, 3)]);
    drop(b);
    while ended.lock().unwrap().len() < 2 && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(ended.lock().unwrap().len(), 2, "each session ends once");
}
