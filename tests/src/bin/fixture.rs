//! A server binary for the fault, shutdown and soak tests: a tool that sleeps, tools that
//! fail in every way a careless tool can, and a sensitive tool behind an Ask.
//!
//! `FIXTURE_GRACE_MS` sets the shutdown grace period (default 5000). With `FIXTURE_HTTP` set
//! to an address (port 0 for any), it serves Streamable HTTP there instead of stdio and
//! prints the bound address as its first line on stdout; `FIXTURE_IDLE_MS` then sets the
//! session idle timeout (default 30 minutes).
//!
//! The lifecycle hooks: with `FIXTURE_HOOK_FILE` set, the start-up hook writes `start` to
//! that file and the shutdown hook appends `stop`; with `FIXTURE_FAIL_START` set, start-up
//! fails with that text.

use std::time::Duration;

use mcp::Transport;
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

fn builder() -> ServerBuilder {
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
}

/// The lifecycle hooks the environment asks for.
fn with_hooks(builder: ServerBuilder) -> ServerBuilder {
    let file = std::env::var_os("FIXTURE_HOOK_FILE");
    let fail = std::env::var("FIXTURE_FAIL_START").ok();
    let stop_file = file.clone();
    builder
        .on_start(move |_server| async move {
            if let Some(why) = fail {
                return Err(why);
            }
            if let Some(file) = file {
                std::fs::write(file, "start\n").map_err(|e| e.to_string())?;
            }
            Ok(())
        })
        .on_shutdown(move |_server| async move {
            if let Some(file) = stop_file {
                use std::io::Write as _;
                let mut f = std::fs::OpenOptions::new().append(true).open(file).unwrap();
                let _ = f.write_all(b"stop\n");
            }
        })
}

fn server() -> Server {
    builder().build().expect("the fixture server builds")
}

/// Serves Streamable HTTP on `addr`, printing the bound address first.
fn serve_http(addr: &str) -> std::process::ExitCode {
    use mcp::transport::http::{self, HttpConfig};
    let idle = std::env::var("FIXTURE_IDLE_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(Duration::from_secs(1800), Duration::from_millis);
    let config = HttpConfig::new()
        .allow_unauthorized_for_local_development(true)
        .session_idle_timeout(idle)
        .max_sessions(2000);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let addr = addr.parse().expect("FIXTURE_HTTP is an address");
        let bound = http::bind(server(), config, addr).await.expect("bind");
        println!("{}", bound.local_addr().expect("an address"));
        match bound.run().await {
            Ok(()) => std::process::ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e}");
                std::process::ExitCode::FAILURE
            }
        }
    })
}

fn main() -> std::process::ExitCode {
    if let Ok(addr) = std::env::var("FIXTURE_HTTP") {
        return serve_http(&addr);
    }
    mcp::cli::main(
        App {
            name: "fixture",
            version: "1",
            about: Some("A server for fault, shutdown and soak tests."),
            transport: Transport::Stdio,
        },
        || with_hooks(builder()),
    )
}
