//! The four entries every benchmark server serves (`echo`, `add`, one text resource, one
//! prompt), written the way a user would write them. Shared by the `ours` server and the
//! micro-benchmarks (`bench/micro`, through `#[path]`), so both measure the same code.

use mcp::prelude::*;

/// Returns its argument unchanged.
#[tool(read_only, idempotent)]
pub async fn echo(
    /// The text to return.
    text: String,
) -> String {
    text
}

/// Adds two integers.
#[tool(read_only, idempotent)]
pub async fn add(
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
) -> i64 {
    a + b
}

/// A short text about this server.
#[resource("bench://about", mime = "text/plain")]
pub async fn about() -> &'static str {
    "The benchmark server: echo, add, this resource and one prompt."
}

/// Asks for a greeting.
#[prompt]
pub async fn greet(
    /// Who to greet.
    name: String,
) -> String {
    format!("Say hello to {name}.")
}
