//! Interoperability with a real client: the official TypeScript MCP SDK (from npm, pinned in
//! interop/js/package-lock.json, the one copy CI's interop run uses too) connects over
//! Streamable HTTP and over the legacy
//! HTTP+SSE transport, lists and calls tools (with progress and an elicitation it
//! approves), reads a resource, pings and, on Streamable HTTP, ends its session.
//!
//! Needs Node.js and npm; the SDK is installed into interop/js/node_modules on first run
//! (`npm ci`), so the first run needs the npm registry. Without npm the tests say
//! "skipped" and pass, unless `MCP_REQUIRE_NODE=1` (CI sets it) makes that a failure.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use std::sync::atomic::Ordering;
use std::time::Duration;

use mcp_tests::http::{HttpTestServer, fixture, test_config};
use serde_json::{Value, json};

fn interop_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../interop/js")
}

/// Whether this machine can run the SDK client: npm answers, or CI requires it (and the
/// test then fails loudly if it cannot). Says "skipped" and why otherwise.
fn node_available(test: &str) -> bool {
    if std::env::var_os("MCP_REQUIRE_NODE").is_some_and(|v| v == "1") {
        return true;
    }
    let found = Command::new("npm")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        eprintln!(
            "{test}: skipped (Node.js and npm are not installed; set MCP_REQUIRE_NODE=1 to fail instead)"
        );
    }
    found
}

/// Installs the pinned SDK once per test run.
fn ensure_sdk() {
    static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();
    let result = INSTALLED.get_or_init(|| {
        let dir = interop_dir();
        if dir
            .join("node_modules/@modelcontextprotocol/sdk/package.json")
            .exists()
        {
            return Ok(());
        }
        let output = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
            .current_dir(&dir)
            .output()
            .map_err(|e| {
                format!("could not run npm (Node.js and npm are needed for this test): {e}")
            })?;
        if output.status.success() {
            Ok(())
        } else {
            Err(format!(
                "npm ci in {} failed: {}",
                dir.display(),
                String::from_utf8_lossy(&output.stderr)
            ))
        }
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

async fn run_client(mode: &str, url: &str) -> Value {
    let child = tokio::process::Command::new("node")
        .arg(interop_dir().join("fixture-client.mjs"))
        .args([mode, url])
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(60), child)
        .await
        .expect("the TypeScript client finished within 60 s")
        .expect("node runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the TypeScript client failed ({}):\n{stderr}\n{stdout}",
        output.status
    );
    let line = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(line).unwrap_or_else(|e| panic!("client output {line:?}: {e}\n{stderr}"))
}

fn check_common(out: &Value) {
    assert_eq!(out["server"]["name"], "http-fixture");
    let tools: Vec<&str> = out["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert!(
        tools.contains(&"add") && tools.contains(&"spend"),
        "{tools:?}"
    );
    assert_eq!(out["sum"], "5");
    assert_eq!(out["progress"], json!([10, 20, 30]));
    assert_eq!(out["progressResult"], "done");
    assert_eq!(out["spend"], "spent");
    assert_eq!(out["questions"], json!(["Spend the money?"]));
    assert_eq!(out["resource"], "static text");
    assert_eq!(out["ping"], json!({}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typescript_sdk_speaks_streamable_http() {
    if !node_available("the_typescript_sdk_speaks_streamable_http") {
        return;
    }
    ensure_sdk();
    let fx = fixture();
    let spent = fx.spent.clone();
    let srv = HttpTestServer::start(fx.server, test_config()).await;
    let out = run_client("http", &srv.url("/mcp")).await;
    check_common(&out);
    assert_eq!(out["protocolVersion"], "2025-11-25");
    assert!(
        out["sessionId"].as_str().is_some_and(|s| s.len() >= 32),
        "{out}"
    );
    assert_eq!(out["terminated"], true);
    assert_eq!(spent.load(Ordering::SeqCst), 1);
    // The session the SDK terminated is gone.
    let mut stale = srv.client();
    stale.session = out["sessionId"].as_str().map(str::to_owned);
    stale.version = Some("2025-11-25".into());
    let ex = stale.exchange(json!(1), "ping", json!({})).await;
    assert_eq!(ex.status, reqwest::StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typescript_sdk_speaks_legacy_sse_beside_streamable_http() {
    if !node_available("the_typescript_sdk_speaks_legacy_sse_beside_streamable_http") {
        return;
    }
    ensure_sdk();
    let fx = fixture();
    let spent = fx.spent.clone();
    let srv = HttpTestServer::start(fx.server, test_config().legacy_sse(true)).await;
    let out = run_client("sse", &srv.url("/sse")).await;
    check_common(&out);
    assert_eq!(spent.load(Ordering::SeqCst), 1);
    // The same process serves Streamable HTTP to the same SDK.
    let out = run_client("http", &srv.url("/mcp")).await;
    check_common(&out);
    assert_eq!(spent.load(Ordering::SeqCst), 2);
}
