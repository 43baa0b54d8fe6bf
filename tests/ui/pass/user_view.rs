//! DESIGN.md's "user's view", as written there: plain async functions and one server!,
//! which generates the binary's main (run here with stdin closed, so it exits at once).
use mcp::prelude::*;

/// Adds two integers.
#[tool(read_only, idempotent)]
async fn add(
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
) -> i64 {
    a + b
}

/// Deletes a file inside the sandbox.
#[tool(destructive)]
async fn delete_file(ctx: Ctx, path: String) -> Result<String, ToolError> {
    ctx.info(format!("deleting {path}"));
    Err(ToolError::new("this example deletes nothing"))
}

/// A greeting for a name.
#[resource("greeting://{name}", mime = "text/plain")]
async fn greeting(name: String) -> String {
    format!("Hello, {name}!")
}

/// Reviews a piece of code.
#[prompt]
async fn review(code: String, language: Option<String>) -> Vec<PromptMessage> {
    let language = language.unwrap_or_else(|| "the code".to_owned());
    vec![PromptMessage::user(format!("Review this {language}:\n{code}"))]
}

mcp::server! {
    name: "files",
    tools: [add, delete_file],
    resources: [greeting],
    prompts: [review],
    authorizer: mcp::auth::ask_before_sensitive(),
}
