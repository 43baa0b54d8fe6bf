//! Macro-defined tools, resources, templates and prompts, listed and called in memory through
//! the real dispatcher (`mcp::testing::TestClient`).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use mcp::testing::TestClient;
use serde_json::{Value, json};

mod calc {
    use mcp::prelude::*;
    use serde::Serialize;

    /// Adds two integers.
    #[tool(read_only, idempotent, title = "Add")]
    pub async fn add(
        /// The first addend.
        a: i64,
        /// The second addend.
        #[arg(default = 10)]
        b: i64,
    ) -> i64 {
        a + b
    }

    /// Greets someone.
    #[tool]
    pub async fn greet(
        /// Who to greet.
        #[arg(rename = "who")]
        name: String,
        /// An optional greeting word.
        word: Option<String>,
        #[arg(description = "Shout it.")] loud: Option<bool>,
    ) -> String {
        let text = format!("{}, {name}!", word.as_deref().unwrap_or("Hello"));
        if loud == Some(true) {
            text.to_uppercase()
        } else {
            text
        }
    }

    #[derive(Serialize, schemars::JsonSchema)]
    pub struct Stats {
        /// How many values.
        pub count: usize,
        /// Their sum.
        pub sum: f64,
    }

    /// Summarises numbers.
    #[tool(name = "stats.summary")]
    pub async fn stats(values: Vec<f64>) -> Result<Json<Stats>, ToolError> {
        if values.is_empty() {
            return Err(ToolError::new("give at least one value"));
        }
        Ok(Json(Stats {
            count: values.len(),
            sum: values.iter().sum(),
        }))
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    pub struct Range {
        /// The first number.
        pub from: u32,
        /// One past the last number.
        pub to: u32,
    }

    /// Counts through a range, reporting progress and logging.
    #[tool]
    pub async fn count(ctx: Ctx, #[args] range: Range) -> String {
        ctx.debug("a debug line");
        ctx.warning("a warning line");
        for i in range.from..range.to {
            ctx.progress(
                f64::from(i - range.from + 1),
                Some(f64::from(range.to - range.from)),
                None,
            );
        }
        format!("counted {}", range.to.saturating_sub(range.from))
    }

    /// Quotes the readme (reads another resource through Ctx).
    #[tool]
    pub async fn quote_readme(ctx: Ctx) -> Result<String, ToolError> {
        let contents = ctx
            .read_resource("file:///readme")
            .await
            .map_err(|e| ToolError::new(e.message))?;
        let text = serde_json::to_value(&contents[0]).unwrap()["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        Ok(format!("> {text}"))
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    pub struct Contact {
        /// Where to send it.
        pub email: String,
    }

    /// Asks the human for an address (typed elicitation).
    #[tool]
    pub async fn ask_address(ctx: Ctx) -> String {
        match ctx.elicit::<Contact>("Where should the report go?").await {
            Ok(Elicitation::Accepted(c)) => format!("sending to {}", c.email),
            Ok(_) => "no address".to_owned(),
            Err(e) => format!("cannot ask: {e}"),
        }
    }

    /// The project's readme.
    #[resource("file:///readme", mime = "text/markdown", title = "Readme")]
    pub async fn readme() -> &'static str {
        "# Calc"
    }

    /// A greeting for a name.
    #[resource("greeting://{name}", mime = "text/plain")]
    pub async fn greeting(#[arg(complete = ["Ana", "Andrés", "Bo"])] name: String) -> String {
        format!("Hello, {name}!")
    }

    /// A row by number.
    #[resource("db://rows/{id}", list = rows)]
    pub async fn row(id: u32) -> Json<serde_json::Value> {
        Json(serde_json::json!({"id": id, "double": id * 2}))
    }

    async fn rows(ctx: Ctx) -> Vec<Resource> {
        let _ = ctx.conn_id();
        vec![
            Resource::new("db://rows/1", "row 1"),
            Resource::new("db://rows/2", "row 2"),
        ]
    }

    async fn languages(request: CompletionRequest) -> Vec<String> {
        ["rust", "ruby", "go"]
            .into_iter()
            .filter(|l| l.starts_with(&request.value))
            .map(str::to_owned)
            .collect()
    }

    /// Reviews a piece of code.
    #[prompt(title = "Code review")]
    pub async fn review(
        /// The code to review.
        code: String,
        /// The language it is written in.
        #[arg(complete = languages)]
        language: Option<String>,
        /// How many points to make at most.
        points: Option<u8>,
    ) -> Vec<PromptMessage> {
        let language = language.unwrap_or_else(|| "code".to_owned());
        let points = points.unwrap_or(3);
        vec![
            PromptMessage::user(format!(
                "Review this {language} in {points} points:\n{code}"
            )),
            PromptMessage::assistant("Here is my review."),
        ]
    }

    mcp::server! {
        name: "calc",
        version: "9.9.9",
        instructions: "Add things.",
        tools: [add, greet, stats, count, quote_readme, ask_address],
        resources: [readme, greeting, row],
        prompts: [review],
        main: false,
    }
}

async fn client() -> TestClient {
    let mut c = TestClient::connect(&calc::server());
    c.initialize(json!({"elicitation": {}})).await.unwrap();
    c
}

fn tool<'a>(tools: &'a [Value], name: &str) -> &'a Value {
    tools
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no tool {name}"))
}

async fn list(c: &mut TestClient, method: &str, key: &str) -> Vec<Value> {
    c.request(method, json!({})).await.unwrap()[key]
        .as_array()
        .unwrap()
        .clone()
}

#[tokio::test]
async fn the_functions_stay_plain_async_functions() {
    assert_eq!(calc::add(2, 3).await, 5);
    assert_eq!(calc::greet("Bo".into(), None, None).await, "Hello, Bo!");
}

#[tokio::test]
async fn input_schemas_come_from_the_parameters() {
    let mut c = client().await;
    let tools = list(&mut c, "tools/list", "tools").await;
    let add = tool(&tools, "add");
    assert_eq!(add["description"], "Adds two integers.");
    assert_eq!(add["title"], "Add");
    assert_eq!(
        add["annotations"],
        json!({"readOnlyHint": true, "idempotentHint": true})
    );
    let schema = &add["inputSchema"];
    assert_eq!(schema["type"], "object");
    assert_eq!(
        schema["properties"]["a"]["description"],
        "The first addend."
    );
    assert_eq!(schema["properties"]["a"]["type"], "integer");
    assert_eq!(schema["properties"]["b"]["default"], 10);
    assert_eq!(schema["required"], json!(["a"]));
    assert!(schema.get("$schema").is_none());

    let greet = &tool(&tools, "greet")["inputSchema"];
    assert_eq!(greet["properties"]["who"]["description"], "Who to greet.");
    assert!(greet["properties"].get("name").is_none(), "{greet}");
    assert_eq!(greet["properties"]["loud"]["description"], "Shout it.");
    assert_eq!(greet["required"], json!(["who"]));

    // A Ctx parameter is not an argument; an #[args] struct is the whole object.
    let count = &tool(&tools, "count")["inputSchema"];
    assert_eq!(
        count["properties"]["from"]["description"],
        "The first number."
    );
    assert!(count["properties"].get("ctx").is_none());
    assert_eq!(count["required"], json!(["from", "to"]));

    // No arguments at all: an empty object that admits nothing else.
    let quote = &tool(&tools, "quote_readme")["inputSchema"];
    assert_eq!(quote["additionalProperties"], false);
}

#[tokio::test]
async fn json_results_declare_an_output_schema_and_return_structured_content() {
    let mut c = client().await;
    let tools = list(&mut c, "tools/list", "tools").await;
    let stats = tool(&tools, "stats.summary");
    let out = &stats["outputSchema"];
    assert_eq!(out["type"], "object");
    assert_eq!(
        out["properties"]["count"]["description"],
        "How many values."
    );
    assert_eq!(out["required"], json!(["count", "sum"]));
    assert!(tool(&tools, "add").get("outputSchema").is_none());

    let r = c
        .call_tool("stats.summary", json!({"values": [1.5, 2.5]}))
        .await
        .unwrap();
    assert_eq!(r.structured_content, Some(json!({"count": 2, "sum": 4.0})));
    assert_eq!(r.content[0].as_text(), Some(r#"{"count":2,"sum":4.0}"#));
    let r = c
        .call_tool("stats.summary", json!({"values": []}))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(true));
    assert_eq!(r.content[0].as_text(), Some("give at least one value"));
}

#[tokio::test]
async fn calls_decode_arguments_with_defaults_and_renames() {
    let mut c = client().await;
    let r = c.call_tool("add", json!({"a": 2, "b": 3})).await.unwrap();
    assert_eq!(r.content[0].as_text(), Some("5"));
    let r = c.call_tool("add", json!({"a": 2})).await.unwrap();
    assert_eq!(r.content[0].as_text(), Some("12"), "the default applies");
    let r = c
        .call_tool("greet", json!({"who": "Ana", "word": "Hi", "loud": true}))
        .await
        .unwrap();
    assert_eq!(r.content[0].as_text(), Some("HI, ANA!"));
}

#[tokio::test]
async fn bad_arguments_are_explained_to_the_model() {
    let mut c = client().await;
    let r = c.call_tool("add", json!({"a": "five"})).await.unwrap();
    assert_eq!(r.is_error, Some(true));
    assert_eq!(
        r.content[0].as_text(),
        Some("Argument `a` must be an integer, but got the string \"five\".")
    );
    let r = c.call_tool("add", json!({"b": 1})).await.unwrap();
    let text = r.content[0].as_text().unwrap();
    assert!(
        text.starts_with("Missing required argument `a` (an integer"),
        "{text}"
    );
    assert!(!text.contains("line"), "{text}");
    let r = c.call_tool("greet", json!({"who": ["Ana"]})).await.unwrap();
    assert_eq!(
        r.content[0].as_text(),
        Some("Argument `who` must be a string, but got an array of 1 item(s).")
    );
    let r = c
        .call_tool("count", json!({"from": 1, "to": -3}))
        .await
        .unwrap();
    let text = r.content[0].as_text().unwrap();
    assert!(
        text.starts_with("Argument `to` must be an integer"),
        "{text}"
    );
    assert!(text.ends_with("but got the number -3."), "{text}");
}

#[tokio::test]
async fn ctx_logs_at_the_chosen_level_and_reports_progress() {
    let mut c = client().await;
    c.request("logging/setLevel", json!({"level": "warning"}))
        .await
        .unwrap();
    let r = c
        .request(
            "tools/call",
            json!({"name": "count", "arguments": {"from": 0, "to": 2}, "_meta": {"progressToken": "p1"}}),
        )
        .await
        .unwrap();
    assert_eq!(r["content"][0]["text"], "counted 2");
    let seen = c.drain(std::time::Duration::from_millis(50)).await;
    let logs: Vec<&Value> = seen
        .iter()
        .filter(|m| m["method"] == "notifications/message")
        .collect();
    assert_eq!(logs.len(), 1, "only the warning passes the level: {seen:?}");
    assert_eq!(logs[0]["params"]["data"], "a warning line");
    let progress: Vec<f64> = seen
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| m["params"]["progress"].as_f64().unwrap())
        .collect();
    assert_eq!(progress, vec![1.0, 2.0]);
}

/// A progress token is a string or an integer; a call whose `_meta` carries anything else
/// there runs as a call without one (no progress), and the rest of `_meta` is not read.
#[tokio::test]
async fn a_progress_token_of_another_type_is_ignored_and_an_integer_one_is_kept() {
    let mut c = client().await;
    let progress_of = |seen: &[Value]| -> Vec<Value> {
        seen.iter()
            .filter(|m| m["method"] == "notifications/progress")
            .map(|m| m["params"]["progressToken"].clone())
            .collect()
    };
    for token in [
        json!({"not": "a token"}),
        json!(true),
        json!(1.5),
        json!(null),
    ] {
        let r = c
            .request(
                "tools/call",
                json!({"name": "count", "arguments": {"from": 0, "to": 2},
                       "_meta": {"progressToken": token, "other": {"deep": [1, 2]}}}),
            )
            .await
            .unwrap();
        assert_eq!(r["content"][0]["text"], "counted 2", "{token}");
        let seen = c.drain(std::time::Duration::from_millis(50)).await;
        assert!(progress_of(&seen).is_empty(), "{token}: {seen:?}");
    }
    let r = c
        .request(
            "tools/call",
            json!({"name": "count", "arguments": {"from": 0, "to": 2}, "_meta": {"progressToken": 7}}),
        )
        .await
        .unwrap();
    assert_eq!(r["content"][0]["text"], "counted 2");
    let seen = c.drain(std::time::Duration::from_millis(50)).await;
    assert_eq!(progress_of(&seen), vec![json!(7), json!(7)]);
}

#[tokio::test]
async fn ctx_reads_other_resources_and_elicits_typed_answers() {
    let mut c = client().await;
    let r = c.call_tool("quote_readme", json!({})).await.unwrap();
    assert_eq!(r.content[0].as_text(), Some("> # Calc"));

    c.on_server_request(|method, params| {
        assert_eq!(method, "elicitation/create");
        assert_eq!(
            params["requestedSchema"]["properties"]["email"]["description"],
            "Where to send it."
        );
        Ok(json!({"action": "accept", "content": {"email": "a@example.com"}}))
    });
    let r = c.call_tool("ask_address", json!({})).await.unwrap();
    assert_eq!(r.content[0].as_text(), Some("sending to a@example.com"));
}

#[tokio::test]
async fn resources_and_templates_are_listed_and_read() {
    let mut c = client().await;
    let resources = list(&mut c, "resources/list", "resources").await;
    let uris: Vec<&str> = resources
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert!(uris.contains(&"file:///readme"), "{uris:?}");
    assert!(
        uris.contains(&"db://rows/1"),
        "the template's lister: {uris:?}"
    );
    let readme = resources
        .iter()
        .find(|r| r["uri"] == "file:///readme")
        .unwrap();
    assert_eq!(readme["name"], "readme");
    assert_eq!(readme["title"], "Readme");
    assert_eq!(readme["description"], "The project's readme.");
    assert_eq!(readme["mimeType"], "text/markdown");

    let templates = list(&mut c, "resources/templates/list", "resourceTemplates").await;
    let greeting = templates
        .iter()
        .find(|t| t["uriTemplate"] == "greeting://{name}")
        .unwrap();
    assert_eq!(greeting["name"], "greeting");
    assert_eq!(greeting["description"], "A greeting for a name.");

    let r = c
        .request("resources/read", json!({"uri": "file:///readme"}))
        .await
        .unwrap();
    assert_eq!(
        r["contents"][0],
        json!({"uri": "file:///readme", "mimeType": "text/markdown", "text": "# Calc"})
    );
    let r = c
        .request("resources/read", json!({"uri": "greeting://J%C3%BCrgen"}))
        .await
        .unwrap();
    assert_eq!(r["contents"][0]["text"], "Hello, Jürgen!");
    assert_eq!(r["contents"][0]["mimeType"], "text/plain");
    let r = c
        .request("resources/read", json!({"uri": "db://rows/21"}))
        .await
        .unwrap();
    let row: Value = serde_json::from_str(r["contents"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(row, json!({"id": 21, "double": 42}));
    assert_eq!(r["contents"][0]["mimeType"], "application/json");

    let e = c
        .request("resources/read", json!({"uri": "db://rows/twelve"}))
        .await
        .unwrap_err();
    assert_eq!(e.code, -32602);
    assert!(
        e.message
            .contains("URI variable `id` must be a non-negative integer, but got \"twelve\""),
        "{}",
        e.message
    );
}

#[tokio::test]
async fn template_variables_and_prompt_arguments_complete() {
    let mut c = client().await;
    let r = c
        .request(
            "completion/complete",
            json!({"ref": {"type": "ref/resource", "uri": "greeting://{name}"},
                   "argument": {"name": "name", "value": "an"}}),
        )
        .await
        .unwrap();
    assert_eq!(r["completion"]["values"], json!(["Ana", "Andrés"]));
    let r = c
        .request(
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "review"},
                   "argument": {"name": "language", "value": "ru"}}),
        )
        .await
        .unwrap();
    assert_eq!(r["completion"]["values"], json!(["rust", "ruby"]));
}

#[tokio::test]
async fn prompts_take_their_arguments_from_the_parameters() {
    let mut c = client().await;
    let prompts = list(&mut c, "prompts/list", "prompts").await;
    assert_eq!(prompts.len(), 1);
    let review = &prompts[0];
    assert_eq!(review["name"], "review");
    assert_eq!(review["title"], "Code review");
    assert_eq!(review["description"], "Reviews a piece of code.");
    assert_eq!(
        review["arguments"],
        json!([
            {"name": "code", "description": "The code to review.", "required": true},
            {"name": "language", "description": "The language it is written in.", "required": false},
            {"name": "points", "description": "How many points to make at most.", "required": false},
        ])
    );

    let r = c
        .request(
            "prompts/get",
            json!({"name": "review", "arguments": {"code": "fn main() {}", "language": "rust"}}),
        )
        .await
        .unwrap();
    assert_eq!(r["messages"][0]["role"], "user");
    assert_eq!(
        r["messages"][0]["content"]["text"],
        "Review this rust in 3 points:\nfn main() {}"
    );
    assert_eq!(r["messages"][1]["role"], "assistant");

    let e = c
        .request("prompts/get", json!({"name": "review", "arguments": {}}))
        .await
        .unwrap_err();
    assert_eq!(e.code, -32602);
    assert!(e.message.contains("code"), "{}", e.message);
    let e = c
        .request(
            "prompts/get",
            json!({"name": "review", "arguments": {"code": "x", "points": "many"}}),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code, -32602);
    assert!(
        e.message
            .contains("argument `points` must be a non-negative integer, but got \"many\""),
        "{}",
        e.message
    );
}

#[test]
fn tools_of_one_argument_type_share_one_schema() {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Query {
        q: String,
    }
    let tool = |name: &str| {
        mcp::registry::ToolDef::from_fn(name, "Searches.", |_ctx, a: Query| async move { a.q })
    };
    let (a, b) = (tool("a"), tool("b"));
    assert!(same_text(a.input_schema(), b.input_schema()));
    assert!(same_text(&a.tool().input_schema, b.input_schema()));
    // A tool that accepts unknown arguments gets its own schema; the others keep theirs.
    let loose = tool("c").allow_unknown_arguments();
    assert!(loose.input_schema().get("additionalProperties").is_none());
    assert!(
        loose
            .tool()
            .input_schema
            .get("additionalProperties")
            .is_none()
    );
    assert_eq!(
        tool("d").input_schema().get("additionalProperties"),
        Some(false.into())
    );
}

/// Whether two schemas share one copy of their text.
fn same_text(a: &mcp::protocol::ToolSchema, b: &mcp::protocol::ToolSchema) -> bool {
    std::ptr::eq(a.as_str(), b.as_str())
}

#[test]
fn the_listing_is_built_once() {
    use mcp::macros_support::ToolFactory as _;
    let a = calc::add::def();
    let b = calc::add::def();
    assert!(same_text(a.input_schema(), b.input_schema()));
    // One copy of the schema per argument type: the listed tool shares the one calls are
    // checked against (issue 20, memory per registered tool).
    assert!(same_text(&a.tool().input_schema, a.input_schema()));
    assert!(same_text(&a.tool().input_schema, &b.tool().input_schema));
    assert_eq!(
        <calc::stats as mcp::macros_support::ToolFactory>::NAME,
        "stats.summary"
    );
    let s = calc::server();
    assert_eq!(s.info().version, "9.9.9");
    assert_eq!(s.instructions(), Some("Add things."));
}

mod guarded {
    use mcp::prelude::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    pub static DELETED: AtomicUsize = AtomicUsize::new(0);

    /// Deletes a file.
    #[tool(destructive)]
    pub async fn delete_file(
        /// The file to delete.
        path: String,
    ) -> String {
        DELETED.fetch_add(1, Ordering::SeqCst);
        format!("deleted {path}")
    }

    /// Lists files.
    #[tool(read_only)]
    pub async fn list_files() -> &'static str {
        "a.txt"
    }

    mcp::server! {
        name: "guarded",
        tools: [delete_file, list_files],
        authorizer: mcp::auth::ask_before_sensitive(),
        main: false,
    }
}

#[tokio::test]
async fn a_destructive_tool_asks_before_it_runs() {
    use guarded::DELETED;
    let asked = Arc::new(AtomicUsize::new(0));
    let mut c = TestClient::connect(&guarded::server());
    c.initialize(json!({"elicitation": {}})).await.unwrap();

    // A read-only tool runs without a question.
    let seen = Arc::clone(&asked);
    c.on_server_request(move |method, _| {
        seen.fetch_add(1, Ordering::SeqCst);
        panic!("unexpected {method}")
    });
    let r = c.call_tool("list_files", json!({})).await.unwrap();
    assert_eq!(r.content[0].as_text(), Some("a.txt"));
    assert_eq!(asked.load(Ordering::SeqCst), 0);

    // The human says no: the tool does not run.
    let seen = Arc::clone(&asked);
    c.on_server_request(move |method, params| {
        assert_eq!(method, "elicitation/create");
        seen.fetch_add(1, Ordering::SeqCst);
        let message = params["message"].as_str().unwrap();
        assert!(message.contains("delete_file"), "{message}");
        assert!(message.contains("notes.txt"), "{message}");
        Ok(json!({"action": "decline"}))
    });
    let r = c
        .call_tool("delete_file", json!({"path": "notes.txt"}))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(true));
    assert_eq!(asked.load(Ordering::SeqCst), 1);
    assert_eq!(DELETED.load(Ordering::SeqCst), 0, "declined: nothing ran");

    // The human approves: it runs, once.
    let seen = Arc::clone(&asked);
    c.on_server_request(move |_, _| {
        seen.fetch_add(1, Ordering::SeqCst);
        Ok(json!({"action": "accept", "content": {"approve": true}}))
    });
    let r = c
        .call_tool("delete_file", json!({"path": "notes.txt"}))
        .await
        .unwrap();
    assert_eq!(r.content[0].as_text(), Some("deleted notes.txt"));
    assert_eq!(asked.load(Ordering::SeqCst), 2);
    assert_eq!(DELETED.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_client_that_cannot_be_asked_is_refused() {
    let mut c = TestClient::connect(&guarded::server());
    c.initialize(json!({})).await.unwrap();
    let tools = c.list_tools().await.unwrap();
    assert_eq!(
        tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        vec!["list_files"],
        "a tool that needs a question is hidden from a client that cannot answer one"
    );
    let r = c
        .call_tool("delete_file", json!({"path": "x"}))
        .await
        .unwrap();
    assert_eq!(r.is_error, Some(true));
    let text = r.content[0].as_text().unwrap_or_default().to_owned();
    assert!(text.contains("authorization_required"), "{text}");
}
