use mcp::prelude::*;

/// Not async.
#[tool]
fn blocking(a: i64) -> i64 {
    a
}

/// Generic.
#[tool]
async fn generic<T: serde::de::DeserializeOwned>(value: T) -> String {
    let _ = value;
    String::new()
}

/// Takes impl Trait.
#[tool]
async fn shown(value: impl std::fmt::Display) -> String {
    value.to_string()
}

/// Destructures.
#[tool]
async fn pair((a, b): (i64, i64)) -> i64 {
    a + b
}

/// Borrows.
#[tool]
async fn borrowed(name: &str) -> String {
    name.to_owned()
}

struct Counter;

impl Counter {
    /// A method.
    #[tool]
    async fn count(&self) -> i64 {
        0
    }
}

fn main() {}
