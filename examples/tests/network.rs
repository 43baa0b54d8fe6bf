//! The example binaries over the network transports, as a user runs them:
//! `--transport http` (both protocol eras on `/mcp`, the legacy routes beside it with
//! `--legacy-sse`), `--transport sse`, `--bind` and `--port`, and the boot guard that
//! refuses to serve without authorization unless `--allow-unauthorized-for-local-development`
//! says otherwise (on loopback only, unless `--allow-unauthorized-on-network` says so too). Every MCP message is checked against the official schema of its
//! revision by the `mcp_tests` clients.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use mcp_tests::http::{McpHttp, SseReader, StatelessHttp, plain_client};
use serde_json::{Value, json};

const QUICKSTART: &str = env!("CARGO_BIN_EXE_quickstart");
/// The variable that lifts the boot guard: the example servers choose no read authorizer.
const LIFT: &str = "MCP_ALLOW_UNAUTHORIZED_FOR_LOCAL_DEVELOPMENT";
const FILES: &str = env!("CARGO_BIN_EXE_files");

/// Environment variables that would change what these tests see.
const CLEARED: [&str; 11] = [
    "MCP_TRANSPORT",
    "MCP_BIND",
    "MCP_PORT",
    "MCP_ALLOW_UNAUTHORIZED_ON_NETWORK",
    "MCP_LIST",
    "MCP_LOG_LEVEL",
    "MCP_LEGACY_SSE",
    "MCP_ALLOW_UNAUTHORIZED_FOR_LOCAL_DEVELOPMENT",
    "MCP_ENV",
    "MCP_REQUIRE_AUTHORIZATION",
    "FILES_ROOT",
];

fn command(bin: &str, args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(bin);
    cmd.args(args).stdin(Stdio::null());
    for var in CLEARED {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

/// Runs a binary to completion (with a watchdog).
fn run(bin: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
    let child = command(bin, args, env)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    watchdog(child.id());
    child.wait_with_output().expect("the binary ends")
}

fn watchdog(pid: u32) {
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(60));
        let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
    });
}

/// A server binary listening on an ephemeral loopback port.
struct Listening {
    child: Child,
    addr: SocketAddr,
    stderr: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Listening {
    /// Starts `bin` with `--bind 127.0.0.1:0` and waits for the line naming its address.
    fn start(bin: &str, args: &[&str], env: &[(&str, &str)]) -> Listening {
        let mut all = args.to_vec();
        all.extend(["--bind", "127.0.0.1:0"]);
        Listening::start_as(bin, &all, env)
    }

    /// Starts `bin` with exactly `args` and waits for the line naming its address.
    fn start_as(bin: &str, args: &[&str], env: &[(&str, &str)]) -> Listening {
        let mut child = command(bin, args, env)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the server starts");
        watchdog(child.id());
        let (tx, rx) = mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut seen = Vec::new();
        let addr = loop {
            let line = rx
                .recv_timeout(Duration::from_secs(30))
                .unwrap_or_else(|_| {
                    panic!("no address announced; stderr so far:\n{}", seen.join("\n"))
                });
            seen.push(line.clone());
            if let Some(rest) = line.split("http://").nth(1) {
                let addr = rest.split('/').next().unwrap();
                break addr.parse().unwrap_or_else(|_| panic!("{line}"));
            }
        };
        Listening {
            child,
            addr,
            stderr: rx,
            seen,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Stops the server with SIGTERM; whether it exited cleanly, and its stdout and stderr.
    fn stop(mut self) -> (bool, String, String) {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let status = self.child.wait().expect("the server ends");
        let mut stdout = String::new();
        if let Some(mut out) = self.child.stdout.take() {
            let _ = std::io::Read::read_to_string(&mut out, &mut stdout);
        }
        while let Ok(line) = self.stderr.recv_timeout(Duration::from_secs(5)) {
            self.seen.push(line);
        }
        (status.success(), stdout, self.seen.join("\n"))
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test]
async fn quickstart_serves_both_eras_over_http() {
    let server = Listening::start(QUICKSTART, &["--transport", "http"], &[(LIFT, "1")]);
    assert!(
        server.seen.iter().any(|l| l.contains("/mcp")),
        "{:?}",
        server.seen
    );

    // The stateless revision: no handshake, every request on its own.
    let stateless = StatelessHttp::new(server.url("/mcp"));
    let discovered = stateless
        .request(json!(1), "server/discover", json!({}))
        .await;
    assert_eq!(
        discovered["result"]["supportedVersions"],
        json!(["2026-07-28"])
    );
    let sum = stateless
        .request(
            json!(2),
            "tools/call",
            json!({"name": "add", "arguments": {"a": 40, "b": 2}}),
        )
        .await;
    assert_eq!(sum["result"]["content"][0]["text"], "42");
    let counted = stateless
        .exchange(
            json!(3),
            "tools/call",
            json!({"name": "countdown", "arguments": {"from": 2},
                "_meta": {"progressToken": "c"}}),
        )
        .await;
    assert!(counted.content_type.starts_with("text/event-stream"));
    assert_eq!(counted.before.len(), 2, "{:?}", counted.before);
    assert_eq!(counted.response["result"]["content"][0]["text"], "lift-off");

    // The handshake era, on the same endpoint.
    let mut legacy = McpHttp::new(server.url("/mcp"));
    legacy.initialize("2025-11-25", json!({})).await;
    let sum = legacy
        .request(
            1,
            "tools/call",
            json!({"name": "add", "arguments": {"a": 1, "b": 2}}),
        )
        .await;
    assert_eq!(sum["result"]["content"][0]["text"], "3");

    // The legacy HTTP+SSE routes are off unless asked for.
    let r = plain_client()
        .get(server.url("/sse"))
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);

    let (clean, stdout, stderr) = server.stop();
    assert!(clean, "SIGTERM stops the server gracefully:\n{stderr}");
    assert!(
        stdout.is_empty(),
        "stdout carries nothing over HTTP: {stdout:?}"
    );
}

/// Reads the `endpoint` event of a legacy stream.
async fn legacy_endpoint(url: &str) -> String {
    let r = plain_client()
        .get(url)
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let mut events = SseReader::new(r);
    let endpoint = events.next().await.expect("the endpoint event");
    assert_eq!(endpoint.event.as_deref(), Some("endpoint"));
    endpoint.data
}

#[tokio::test]
async fn the_legacy_sse_transport_beside_http_or_alone() {
    let beside = Listening::start(
        QUICKSTART,
        &["--transport", "http"],
        &[(LIFT, "1"), ("MCP_LEGACY_SSE", "1")],
    );
    assert!(
        legacy_endpoint(&beside.url("/sse"))
            .await
            .starts_with("/messages?sessionId=")
    );
    let stateless = StatelessHttp::new(beside.url("/mcp"));
    stateless.request(json!(1), "tools/list", json!({})).await;
    assert!(beside.stop().0);

    let alone = Listening::start(QUICKSTART, &["--transport", "sse"], &[(LIFT, "1")]);
    let r = plain_client()
        .get(alone.url("/sse"))
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    let mut events = SseReader::new(r);
    let endpoint = events.next().await.unwrap().data;
    let post = |body: Value| {
        plain_client()
            .post(alone.url(&endpoint))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
    };
    let r = post(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2024-11-05", "capabilities": {},
        "clientInfo": {"name": "network-test", "version": "1"}}}),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 202);
    let init = events.next().await.unwrap().json();
    assert_eq!(init["id"], 1);
    assert_eq!(init["result"]["protocolVersion"], "2024-11-05");
    mcp_tests::validate_server_message("2024-11-05", &init, Some("initialize")).unwrap();
    post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await
        .unwrap();
    post(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "add", "arguments": {"a": 2, "b": 2}}}))
    .await
    .unwrap();
    let sum = events.next().await.unwrap().json();
    assert_eq!(sum["result"]["content"][0]["text"], "4");
    mcp_tests::validate_server_message("2024-11-05", &sum, Some("tools/call")).unwrap();
    // Streamable HTTP is not served by --transport sse.
    let r = plain_client()
        .post(alone.url("/mcp"))
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    drop(events);
    assert!(alone.stop().0);
}

#[test]
fn the_boot_guard_refuses_to_serve_without_authorization() {
    for (bin, args) in [
        (
            QUICKSTART,
            vec!["--transport", "http", "--bind", "127.0.0.1:0"],
        ),
        (
            QUICKSTART,
            vec!["--transport", "sse", "--bind", "127.0.0.1:0"],
        ),
    ] {
        let out = run(bin, &args, &[]);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
        let err = text(&out.stderr);
        assert!(err.contains("refusing to serve quickstart over"), "{err}");
        assert!(
            err.contains("no authorizer is configured for tools"),
            "{err}"
        );
        assert!(err.contains("no read authorizer is configured"), "{err}");
        assert!(
            err.contains("--allow-unauthorized-for-local-development"),
            "{err}"
        );
        assert!(!err.contains("listening"), "nothing was bound: {err}");
        assert!(out.stdout.is_empty());
    }
}

#[tokio::test]
async fn the_opt_out_boots_and_warns_naming_the_setting_and_what_is_unguarded() {
    for (args, env, setting) in [
        (
            vec![
                "--transport",
                "http",
                "--allow-unauthorized-for-local-development",
            ],
            vec![],
            "--allow-unauthorized-for-local-development",
        ),
        (
            vec!["--transport", "http"],
            vec![("MCP_ALLOW_UNAUTHORIZED_FOR_LOCAL_DEVELOPMENT", "1")],
            "MCP_ALLOW_UNAUTHORIZED_FOR_LOCAL_DEVELOPMENT",
        ),
    ] {
        let server = Listening::start(QUICKSTART, &args, &env);
        let stateless = StatelessHttp::new(server.url("/mcp"));
        let sum = stateless
            .request(
                json!(1),
                "tools/call",
                json!({"name": "add", "arguments": {"a": 1, "b": 1}}),
            )
            .await;
        assert_eq!(sum["result"]["content"][0]["text"], "2");
        let (clean, _, stderr) = server.stop();
        assert!(clean);
        let warning = stderr
            .lines()
            .find(|l| l.contains("BOOT GUARD LIFTED"))
            .unwrap_or_else(|| panic!("no warning in:\n{stderr}"));
        assert!(warning.contains("WARN"), "{warning}");
        assert!(
            warning.contains(&format!("LIFTED by {setting}:")),
            "{warning}"
        );
        assert!(
            warning.contains("tools without an authorizer a person chose"),
            "{warning}"
        );
        assert!(warning.contains("without a read authorizer"), "{warning}");
    }
}

#[test]
fn mcp_env_and_require_authorization_no_longer_lift_the_boot_guard() {
    for (var, value) in [
        ("MCP_ENV", "development"),
        ("MCP_ENV", "dev"),
        ("MCP_ENV", "test"),
        ("MCP_REQUIRE_AUTHORIZATION", "false"),
    ] {
        let out = run(
            QUICKSTART,
            &["--transport", "http", "--bind", "127.0.0.1:0"],
            &[(var, value)],
        );
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{var}={value}: {err}");
        assert!(err.contains("refuses to boot"), "{err}");
        assert!(
            err.contains(&format!(
                "{var}={value} is set; it no longer lifts the boot guard"
            )),
            "{err}"
        );
        assert!(!err.contains("listening"), "nothing was bound: {err}");
    }
}

#[tokio::test]
async fn a_lifted_guard_serves_loopback_only_unless_a_second_setting_says_otherwise() {
    let lifted = [
        "--transport",
        "http",
        "--allow-unauthorized-for-local-development",
    ];
    let mut args = lifted.to_vec();
    args.extend(["--bind", "0.0.0.0:0"]);
    let out = run(QUICKSTART, &args, &[]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("refusing to listen on 0.0.0.0:0"), "{err}");
    assert!(
        err.contains("lifted by --allow-unauthorized-for-local-development"),
        "{err}"
    );
    assert!(err.contains("--port PORT"), "{err}");
    assert!(
        err.contains("--allow-unauthorized-on-network (MCP_ALLOW_UNAUTHORIZED_ON_NETWORK=1)"),
        "{err}"
    );
    assert!(!err.contains("listening"), "nothing was bound: {err}");

    // The second setting, from the command line or its variable: served, and said so.
    for (extra, env) in [
        (vec!["--allow-unauthorized-on-network"], vec![]),
        (vec![], vec![("MCP_ALLOW_UNAUTHORIZED_ON_NETWORK", "1")]),
    ] {
        let mut all = args.clone();
        all.extend(extra);
        let server = Listening::start_as(QUICKSTART, &all, &env);
        let url = format!("http://127.0.0.1:{}/mcp", server.addr.port());
        let sum = StatelessHttp::new(url)
            .request(
                json!(1),
                "tools/call",
                json!({"name": "add", "arguments": {"a": 2, "b": 3}}),
            )
            .await;
        assert_eq!(sum["result"]["content"][0]["text"], "5");
        let (clean, _, stderr) = server.stop();
        assert!(clean);
        assert!(stderr.contains("beyond loopback"), "{stderr}");
    }
}

#[tokio::test]
async fn port_is_a_loopback_shorthand_that_conflicts_with_bind() {
    let server = Listening::start_as(
        QUICKSTART,
        &[
            "--transport",
            "http",
            "--port",
            "0",
            "--allow-unauthorized-for-local-development",
        ],
        &[],
    );
    assert!(server.addr.ip().is_loopback(), "{}", server.addr);
    let sum = StatelessHttp::new(server.url("/mcp"))
        .request(
            json!(1),
            "tools/call",
            json!({"name": "add", "arguments": {"a": 1, "b": 2}}),
        )
        .await;
    assert_eq!(sum["result"]["content"][0]["text"], "3");
    assert!(server.stop().0);
    let out = run(
        QUICKSTART,
        &[
            "--transport",
            "http",
            "--port",
            "0",
            "--bind",
            "127.0.0.1:0",
        ],
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("--port"), "{err}");
    assert!(err.contains("cannot be used with"), "{err}");
}

#[tokio::test]
async fn files_asks_before_deleting_over_http() {
    let dir = std::env::temp_dir().join(format!("mcp-files-http-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("notes.txt"), "remember the milk").unwrap();
    let root = dir.to_string_lossy().into_owned();
    let server = Listening::start(
        FILES,
        &["--root", &root, "--transport", "http"],
        &[(LIFT, "1")],
    );
    let c = StatelessHttp::new(server.url("/mcp")).with_capabilities(json!({"elicitation": {}}));
    let read = c
        .request(
            json!(1),
            "tools/call",
            json!({"name": "read_file", "arguments": {"path": "notes.txt"}}),
        )
        .await;
    assert_eq!(read["result"]["content"][0]["text"], "remember the milk");
    let delete = json!({"name": "delete_file", "arguments": {"path": "notes.txt"}});
    let ask = c.request(json!(2), "tools/call", delete.clone()).await;
    assert_eq!(ask["result"]["resultType"], "input_required", "{ask}");
    let question = &ask["result"]["inputRequests"]["mcp.approve"];
    assert_eq!(question["method"], "elicitation/create");
    assert!(dir.join("notes.txt").exists());
    let mut retry = delete.clone();
    retry["requestState"] = ask["result"]["requestState"].clone();
    retry["inputResponses"] =
        json!({"mcp.approve": {"action": "accept", "content": {"approve": true}}});
    let done = c.request(json!(3), "tools/call", retry).await;
    assert_eq!(done["result"]["content"][0]["text"], "deleted notes.txt");
    assert!(!dir.join("notes.txt").exists());
    assert!(server.stop().0);
    let _ = std::fs::remove_dir_all(&dir);
}
