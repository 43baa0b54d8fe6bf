//! The lifecycle hooks of a real binary (the fixture, through the generated command line):
//! start-up runs before anything is served and its error stops the boot with status 1;
//! shutdown runs once after serving ended, on stdio (stdin closed) and on HTTP (SIGTERM).

use std::io::{BufRead as _, BufReader, Write as _};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const FIXTURE: &str = env!("CARGO_BIN_EXE_fixture");

fn hook_file(name: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("mcp-hooks-{name}-{}", std::process::id()));
    let _ = std::fs::remove_file(&path);
    path
}

/// Waits for the process to exit, killing it after `limit`.
fn wait(child: &mut std::process::Child, limit: Duration) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("the fixture did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn on_stdio_start_up_runs_before_serving_and_shutdown_after_stdin_closes() {
    let file = hook_file("stdio");
    let mut child = Command::new(FIXTURE)
        .env("FIXTURE_HOOK_FILE", &file)
        .env("MCP_LOG_LEVEL", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-11-25","capabilities":{{}},"clientInfo":{{"name":"t","version":"1"}}}}}}"#
    )
    .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert!(line.contains("serverInfo"), "{line}");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "start\n",
        "start-up ran before the first answer, shutdown not yet"
    );
    drop(stdin);
    let status = wait(&mut child, Duration::from_secs(20));
    assert!(status.success(), "{status}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "start\nstop\n");
    let _ = std::fs::remove_file(&file);
}

#[test]
fn a_failing_start_up_stops_the_boot_with_its_message() {
    let output = Command::new(FIXTURE)
        .env("FIXTURE_FAIL_START", "the database is locked")
        .stdin(Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("start-up failed: the database is locked"),
        "{stderr}"
    );
    assert!(output.stdout.is_empty(), "nothing was served");
}

#[test]
fn on_http_shutdown_runs_once_after_sigterm() {
    let file = hook_file("http");
    let mut child = Command::new(FIXTURE)
        .args(["--transport", "http", "--port", "0"])
        .args(["--allow-unauthorized-for-local-development"])
        .env("FIXTURE_HOOK_FILE", &file)
        .env("MCP_LOG_LEVEL", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The boot log names the endpoint once the port accepts.
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    while !line.contains("Streamable HTTP at") {
        line.clear();
        if stderr.read_line(&mut line).unwrap() == 0 {
            panic!("the fixture exited before serving");
        }
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "start\n");
    // SAFETY: signalling a child process we spawned and have not reaped.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = wait(&mut child, Duration::from_secs(20));
    assert!(status.success(), "{status}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "start\nstop\n");
    let _ = std::fs::remove_file(&file);
}
