//! The benchmark server on this framework: the same four entries as the rmcp and floor
//! servers (`echo`, `add`, one text resource, one prompt), written the way a user would write
//! them. `--transport stdio` and the rest of the command line are the generated ones;
//! `--transport http --bind ADDR` is served here with `mcp::transport::http::serve` until
//! the generated command line serves HTTP itself.

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

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--transport")
        && args.get(2).map(String::as_str) == Some("http")
    {
        let bind = match args.get(3).map(String::as_str) {
            Some("--bind") => args.get(4).and_then(|a| a.parse().ok()),
            _ => None,
        }
        .unwrap_or(mcp::transport::http::DEFAULT_ADDR);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("runtime");
        return match runtime.block_on(mcp::transport::http::serve(
            server(),
            // Like the rmcp and floor servers, no authorization: the comparison is of the
            // same work. (A real deployment chooses an authorizer; see mcp::auth.)
            mcp::transport::http::HttpConfig::new().allow_unauthorized_for_local_development(true),
            bind,
        )) {
            Ok(()) => std::process::ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e}");
                std::process::ExitCode::FAILURE
            }
        };
    }
    mcp::cli::main(
        mcp::cli::App {
            name: "bench-ours",
            version: env!("CARGO_PKG_VERSION"),
            about: None,
            transport: mcp::Transport::Stdio,
        },
        server,
    )
}
