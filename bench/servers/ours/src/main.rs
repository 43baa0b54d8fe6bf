//! The benchmark server on this framework: the same four entries as the rmcp and floor
//! servers (`echo`, `add`, one text resource, one prompt), written the way a user would write
//! them. `--transport stdio|http` and `--bind` come from the generated command line (the
//! driver sets MCP_ALLOW_UNAUTHORIZED_FOR_LOCAL_DEVELOPMENT: no server here authorizes).

use mcp::prelude::*;

/// Returns its argument unchanged.
#[tool(read_only, idempotent)]
async fn echo(
    /// The text to return.
    text: String,
) -> String {
    text
}

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

/// A short text about this server.
#[resource("bench://about", mime = "text/plain")]
async fn about() -> &'static str {
    "The benchmark server: echo, add, this resource and one prompt."
}

/// Asks for a greeting.
#[prompt]
async fn greet(
    /// Who to greet.
    name: String,
) -> String {
    format!("Say hello to {name}.")
}

mcp::server! {
    name: "bench-ours",
    tools: [echo, add],
    resources: [about],
    prompts: [greet],
}
