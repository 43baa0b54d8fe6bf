use mcp::prelude::*;

/// Adds two integers.
#[tool(name = "add numbers")]
async fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// Nothing at all.
#[tool(name = "")]
async fn nothing() {}

/// Greets in German.
#[tool]
async fn grüßen() -> &'static str {
    "Hallo"
}

fn main() {}
