use mcp::extract::State;
use mcp::prelude::*;

struct NotAnExtractor;

/// Marks as extracted a type that is not an extractor.
#[tool]
async fn wrong(#[extract] value: NotAnExtractor) -> String {
    let _ = value;
    String::new()
}

/// Takes a state that cannot be shared between calls on several threads.
#[tool]
async fn unshareable(counter: State<std::cell::Cell<u8>>) -> String {
    counter.get().to_string()
}

fn main() {}
