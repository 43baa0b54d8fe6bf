//! Quickstart: a handful of tools, a resource, a resource template and a prompt, served on
//! stdio.
//!
//! ```text
//! cargo run -p mcp-examples --bin quickstart            # serve on stdio
//! cargo run -p mcp-examples --bin quickstart -- --list  # print what it offers, as JSON
//! cargo run -p mcp-examples --bin quickstart -- --help
//! ```

use std::time::Duration;

use mcp::prelude::*;
use serde::Serialize;

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

/// Statistics of a text.
#[derive(Serialize, schemars::JsonSchema)]
struct TextStats {
    /// Whitespace-separated words.
    words: usize,
    /// Lines.
    lines: usize,
    /// Unicode scalar values.
    chars: usize,
}

/// Counts the words, lines and characters of a text.
#[tool(read_only, idempotent)]
async fn text_stats(
    /// The text to measure.
    text: String,
) -> Json<TextStats> {
    Json(TextStats {
        words: text.split_whitespace().count(),
        lines: text.lines().count(),
        chars: text.chars().count(),
    })
}

/// Repeats a phrase, optionally in capitals.
#[tool(read_only, idempotent)]
async fn echo(
    /// What to repeat.
    phrase: String,
    /// How many times.
    #[arg(default = 1)]
    times: u8,
    /// Shout it.
    loud: Option<bool>,
) -> Result<String, ToolError> {
    if times == 0 || times > 10 {
        return Err(ToolError::new("`times` must be between 1 and 10"));
    }
    let phrase = if loud == Some(true) {
        phrase.to_uppercase()
    } else {
        phrase
    };
    Ok(vec![phrase; usize::from(times)].join(" "))
}

/// Counts down to zero, one step every 100 ms, reporting progress; stops if cancelled.
#[tool(read_only)]
async fn countdown(
    ctx: Ctx,
    /// Where to start (at most 50).
    from: u32,
) -> Result<String, ToolError> {
    let from = from.min(50);
    ctx.info(format!("counting down from {from}"));
    for done in 1..=from {
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(100)) => {}
            _ = ctx.cancelled() => return Err(ToolError::new("cancelled")),
        }
        ctx.progress(f64::from(done), Some(f64::from(from)), None);
    }
    Ok("lift-off".to_owned())
}

/// What this server is and how to use it.
#[resource("quickstart://about", mime = "text/markdown", title = "About")]
async fn about() -> &'static str {
    "# quickstart\n\nAn example server: try the `add` tool, read `greeting://{name}`, or \
     render the `review` prompt."
}

/// A greeting for anyone, by name.
#[resource("greeting://{name}", mime = "text/plain")]
async fn greeting(#[arg(complete = ["Ada", "Alan", "Grace", "Linus"])] name: String) -> String {
    format!("Hello, {name}!")
}

async fn languages(request: CompletionRequest) -> Vec<String> {
    let typed = request.value.to_lowercase();
    ["c", "go", "python", "ruby", "rust", "typescript"]
        .into_iter()
        .filter(|l| l.starts_with(&typed))
        .map(str::to_owned)
        .collect()
}

/// Asks for a careful review of a piece of code.
#[prompt(title = "Code review")]
async fn review(
    /// The code to review.
    code: String,
    /// The language it is written in.
    #[arg(complete = languages)]
    language: Option<String>,
) -> Vec<PromptMessage> {
    let language = language.unwrap_or_else(|| "code".to_owned());
    vec![PromptMessage::user(format!(
        "Review this {language} for bugs, unclear names and missing tests:\n\n{code}"
    ))]
}

mcp::server! {
    name: "quickstart",
    title: "Quickstart",
    instructions: "Small demonstration tools: arithmetic, text statistics, echo, a countdown.",
    tools: [add, text_stats, echo, countdown],
    resources: [about, greeting],
    prompts: [review],
}
