use mcp::prelude::*;

/// A greeting.
#[resource("greeting://{name}")]
async fn greeting(name: String) -> String {
    format!("Hello, {name}!")
}

/// Adds two integers.
#[tool]
async fn add(a: i64, b: i64) -> i64 {
    a + b
}

struct Settings;

/// Forgot the attribute.
async fn forgotten() -> String {
    String::new()
}

mcp::server! {
    name: "mixed-up",
    tools: [greeting, Settings, forgotten],
    resources: [add],
    prompts: [add],
}
