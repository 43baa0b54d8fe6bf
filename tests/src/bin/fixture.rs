//! A server binary for the fault, shutdown and soak tests: a tool that sleeps, tools that
//! fail in every way a careless tool can, and a sensitive tool behind an Ask.
//!
//! `FIXTURE_GRACE_MS` sets the shutdown grace period (default 5000).

use std::time::Duration;

use mcp::auth::{Decision, policy};
use mcp::cli::App;
use mcp::prelude::*;
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
struct Sleep {
    /// How long to sleep, in milliseconds.
    ms: u64,
}

#[derive(Deserialize, JsonSchema)]
struct Echo {
    /// What to echo back.
    text: String,
}

fn server() -> Server {
    let grace = std::env::var("FIXTURE_GRACE_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5000);
    Server::builder("fixture", "1")
        .tool(ToolDef::from_fn(
            "sleep",
            "Sleeps, saying when it starts.",
            |ctx: Ctx, s: Sleep| async move {
                ctx.info("sleeping");
                tokio::time::sleep(Duration::from_millis(s.ms)).await;
                format!("slept {} ms", s.ms)
            },
        ))
        .tool(ToolDef::from_fn(
            "echo",
            "Echoes its text.",
            |_ctx: Ctx, e: Echo| async move { e.text },
        ))
        .tool(ToolDef::from_fn(
            "panic",
            "Panics.",
            |_ctx: Ctx, _e: Echo| async move {
                if true {
                    panic!("a careless tool");
                }
                ""
            },
        ))
        .tool(
            ToolDef::from_fn(
                "spend",
                "Spends credits after asking.",
                |_ctx: Ctx, e: Echo| async move { format!("spent {}", e.text) },
            )
            .sensitive(),
        )
        .authorizer(policy(|req| {
            if req.name() == "spend" {
                Decision::ask("Spend credits?")
            } else {
                Decision::Allow
            }
        }))
        .shutdown_grace(Duration::from_millis(grace))
        .call_timeout(Duration::from_secs(30))
        .build()
        .expect("the fixture server builds")
}

fn main() -> std::process::ExitCode {
    mcp::cli::main(
        App {
            name: "fixture",
            version: "1",
            about: Some("A server for fault, shutdown and soak tests."),
            transport: Transport::Stdio,
        },
        server,
    )
}
