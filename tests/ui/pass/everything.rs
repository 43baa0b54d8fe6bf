//! Every option of every macro, in one server that builds.
use mcp::prelude::*;
use mcp::protocol::CallToolResult;
use mcp::protocol::GetPromptResult;
use serde::{Deserialize, Serialize};

#[derive(Deserialize, schemars::JsonSchema)]
struct Search {
    /// What to look for.
    query: String,
    /// How many results.
    #[serde(default)]
    limit: Option<u32>,
}

#[derive(Serialize, schemars::JsonSchema)]
struct Hits {
    hits: Vec<String>,
}

/// Searches the index.
#[tool(
    name = "index.search",
    title = "Search",
    read_only,
    open_world = false,
    icons("https://example.com/search.png"),
    scopes("index:read"),
    timeout_ms = 5000,
    meta = serde_json::json!({"example.com/tier": "free"})
)]
async fn search(#[args] input: Search, ctx: Ctx) -> Result<Json<Hits>, ToolError> {
    ctx.progress(0.5, Some(1.0), Some("searching"));
    if ctx.is_cancelled() {
        return Err(ToolError::new("cancelled"));
    }
    let n = input.limit.unwrap_or(3) as usize;
    Ok(Json(Hits { hits: vec![input.query; n] }))
}

/// Writes a note.
#[tool(sensitive, idempotent)]
async fn write_note(
    /// The note's text.
    #[arg(rename = "text")]
    body: String,
    #[arg(default = 1, description = "How many copies.")] copies: u8,
) -> CallToolResult {
    CallToolResult::text(body.repeat(copies as usize))
}

/// Takes nothing, returns nothing.
#[tool]
async fn ping() {}

/// A row of a table by number.
#[resource("db://rows/{id}", mime = "application/json", list = rows, title = "Row")]
async fn row(id: u32, ctx: Ctx) -> Result<Json<serde_json::Value>, ResourceError> {
    let _ = ctx.principal();
    Ok(Json(serde_json::json!({"id": id})))
}

async fn rows() -> Vec<Resource> {
    vec![Resource::new("db://rows/1", "row 1")]
}

/// A file under the docs folder.
#[resource("docs:///{+path}", name = "doc")]
async fn doc(#[arg(complete = ["guide.md", "api.md"])] path: String) -> Vec<u8> {
    path.into_bytes()
}

/// The project's readme.
#[resource("file:///readme", mime = "text/markdown", size = 5)]
async fn readme() -> &'static str {
    "# Hi"
}

async fn languages(request: CompletionRequest) -> Vec<String> {
    ["rust", "go"]
        .into_iter()
        .filter(|l| l.starts_with(&request.value))
        .map(str::to_owned)
        .collect()
}

/// Explains a topic.
#[prompt(title = "Explain")]
async fn explain(
    /// The topic.
    topic: String,
    /// The language of the examples.
    #[arg(complete = languages)]
    language: Option<String>,
    /// How deep to go.
    level: Option<u8>,
) -> Result<GetPromptResult, PromptError> {
    let _ = (language, level);
    Ok(GetPromptResult {
        messages: vec![PromptMessage::user(topic)],
        ..Default::default()
    })
}

/// Raw identifiers and `mut` bindings work as parameter and tool names.
#[tool]
async fn r#loop(
    /// The kind of loop.
    mut r#type: String,
    #[arg(default = 2)] r#times: u8,
) -> String {
    r#type.push('!');
    r#type.repeat(r#times as usize)
}

mod nested {
    use mcp::prelude::*;

    /// Echoes.
    #[tool]
    pub async fn echo(text: String) -> String {
        text
    }
}

mcp::server! {
    name: "everything",
    version: "1.2.3",
    title: "Everything",
    description: "Every macro option at once.",
    instructions: "Use search first.",
    tools: [search, write_note, ping, nested::echo, r#loop],
    resources: [row, doc, readme],
    prompts: [explain],
    authorizer: mcp::auth::ask_before_sensitive(),
    read_authorizer: mcp::auth::allow_all(),
    transport: stdio,
    configure: |b: mcp::ServerBuilder| b.page_size(50),
    main: false,
}

fn main() {
    let s = server();
    assert_eq!(s.info().version, "1.2.3");
    let listing = mcp::cli::listing(&s);
    assert_eq!(listing["tools"].as_array().unwrap().len(), 5);
    let looped = listing["tools"].as_array().unwrap().iter().find(|t| t["name"] == "loop").unwrap();
    assert_eq!(looped["inputSchema"]["properties"]["type"]["description"], "The kind of loop.");
    assert_eq!(looped["inputSchema"]["properties"]["times"]["default"], 2);
    assert_eq!(listing["resources"].as_array().unwrap().len(), 1);
    assert_eq!(listing["resourceTemplates"].as_array().unwrap().len(), 2);
    assert_eq!(listing["prompts"][0]["arguments"].as_array().unwrap().len(), 3);
    // The functions stay callable as they were written.
    let _future = nested::echo("hi".to_owned());
}
