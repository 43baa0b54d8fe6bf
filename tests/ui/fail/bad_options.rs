use mcp::prelude::*;

/// Adds two integers.
#[tool(readonly, timeout_ms = "soon")]
async fn add(#[arg(defualt = 1)] a: i64, b: i64) -> i64 {
    a + b
}

/// A tool whose return type is not a tool result.
#[tool]
async fn names() -> Vec<String> {
    Vec::new()
}

fn main() {}
