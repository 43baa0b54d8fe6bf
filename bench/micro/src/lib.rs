//! The benchmark tool set as a library (no `main`), for in-process micro-benchmarks, and a
//! server with many tools for the list benchmark.

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
    main: false,
}

/// The benchmark server plus `n` more tools (`tool_0` .. `tool_{n-1}`), each with a
/// two-argument schema like `add`'s.
pub fn server_with_tools(n: usize) -> Server {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Args {
        /// The first addend.
        a: i64,
        /// The second addend.
        b: i64,
    }
    let mut builder = server_builder().page_size(n + 10);
    for i in 0..n {
        builder = builder.tool(
            ToolDef::from_fn::<Args, _, _, _>(
                format!("tool_{i}"),
                "Adds two integers.",
                |_ctx, args: Args| async move { args.a + args.b },
            )
            .read_only(),
        );
    }
    builder.build().expect("server")
}
