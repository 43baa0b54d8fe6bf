use mcp::prelude::*;

/// Adds two integers.
#[tool(name = "add")]
async fn add_integers(a: i64, b: i64) -> i64 {
    a + b
}

/// Adds two numbers.
#[tool(name = "add")]
async fn add_floats(a: f64, b: f64) -> f64 {
    a + b
}

/// A greeting.
#[resource("greeting://{name}")]
async fn greeting(name: String) -> String {
    format!("Hello, {name}!")
}

/// Another greeting.
#[resource("greeting://{name}")]
async fn salutation(name: String) -> String {
    format!("Hi, {name}!")
}

/// Reviews code.
#[prompt]
async fn review(code: String) -> String {
    code
}

/// Also reviews code.
#[prompt(name = "review")]
async fn critique(code: String) -> String {
    code
}

mcp::server! {
    name: "dupes",
    tools: [add_integers, add_floats, add_integers],
    resources: [greeting, salutation],
    prompts: [review, critique],
}
