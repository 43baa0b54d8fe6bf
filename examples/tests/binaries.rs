//! The example binaries as a user runs them: their command line, and real stdio sessions
//! (stdout must carry protocol messages only).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Output, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

const QUICKSTART: &str = env!("CARGO_BIN_EXE_quickstart");
const FILES: &str = env!("CARGO_BIN_EXE_files");

fn run(bin: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(bin);
    cmd.args(args).stdin(Stdio::null());
    for var in [
        "MCP_TRANSPORT",
        "MCP_BIND",
        "MCP_LIST",
        "MCP_LOG_LEVEL",
        "MCP_LEGACY_SSE",
        "MCP_ALLOW_UNAUTHORIZED_FOR_LOCAL_DEVELOPMENT",
        "FILES_ROOT",
    ] {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("the binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn help_and_version_describe_the_command_line() {
    let out = run(QUICKSTART, &["--help"], &[]);
    assert!(out.status.success());
    let help = text(&out.stdout);
    for expected in [
        "--transport",
        "MCP_TRANSPORT",
        "--bind",
        "MCP_BIND",
        "127.0.0.1:8080",
        "--list",
        "--log-level",
        "MCP_LOG_LEVEL",
        "[default: stdio]",
        "--legacy-sse",
        "MCP_LEGACY_SSE",
        "--allow-unauthorized-for-local-development",
        "MCP_ALLOW_UNAUTHORIZED_FOR_LOCAL_DEVELOPMENT",
        "--allow-unauthorized-on-network",
        "MCP_ALLOW_UNAUTHORIZED_ON_NETWORK",
        "--port",
        "MCP_PORT",
        "--print-config",
        "Limits and timeouts",
        "--call-timeout <DURATION>",
        "MCP_CALL_TIMEOUT",
        "--max-message-size <SIZE>",
        "--request-state-ttl",
    ] {
        assert!(help.contains(expected), "{expected} missing from:\n{help}");
    }
    let out = run(QUICKSTART, &["--version"], &[]);
    assert_eq!(
        text(&out.stdout).trim(),
        format!("quickstart {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn a_mistyped_transport_is_a_clear_usage_error() {
    let out = run(QUICKSTART, &["--transport", "stdoi"], &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("invalid value 'stdoi'"), "{err}");
    assert!(err.contains("[possible values: stdio, http, sse]"), "{err}");
    let out = run(QUICKSTART, &[], &[("MCP_TRANSPORT", "carrier-pigeon")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("invalid value 'carrier-pigeon'"));
}

#[test]
fn list_prints_everything_with_schemas() {
    for (args, env) in [(vec!["--list"], vec![]), (vec![], vec![("MCP_LIST", "1")])] {
        let out = run(QUICKSTART, &args, &env);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let listing: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
        assert_eq!(listing["server"]["name"], "quickstart");
        let tools: Vec<&str> = listing["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(tools, ["add", "countdown", "echo", "text_stats"]);
        let stats = &listing["tools"][3];
        assert_eq!(
            stats["outputSchema"]["properties"]["words"]["type"],
            "integer"
        );
        assert_eq!(listing["resources"][0]["uri"], "quickstart://about");
        assert_eq!(
            listing["resourceTemplates"][0]["uriTemplate"],
            "greeting://{name}"
        );
        assert_eq!(listing["prompts"][0]["name"], "review");
        assert!(!text(&out.stderr).contains('{'), "no JSON on stderr");
    }
}

/// A client talking to a spawned server over its stdin and stdout.
struct Session {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Session {
    fn start(bin: &str, args: &[&str]) -> Session {
        Session::start_with_env(bin, args, &[])
    }

    /// [`Session::start`] with variables set (after the defaults, so they win).
    fn start_with_env(bin: &str, args: &[&str], env: &[(&str, &str)]) -> Session {
        let mut child = Command::new(bin)
            .args(args)
            .env_remove("MCP_TRANSPORT")
            .env("MCP_LOG_LEVEL", "debug")
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the server starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let pid = child.id();
        // A watchdog, so a hung server fails the test instead of hanging it.
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(30));
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
        });
        Session {
            child,
            stdin,
            stdout,
        }
    }

    fn send(&mut self, message: Value) {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The next line of stdout, which must be one JSON-RPC message.
    fn receive(&mut self) -> Value {
        let mut line = String::new();
        let n = self.stdout.read_line(&mut line).unwrap();
        assert!(n > 0, "the server closed stdout");
        let message: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout carried a non-JSON line {line:?}: {e}"));
        assert_eq!(message["jsonrpc"], "2.0", "{line}");
        message
    }

    /// Receives until the response to `id`, returning it and what came before it.
    fn response(&mut self, id: i64) -> (Value, Vec<Value>) {
        let mut before = Vec::new();
        loop {
            let m = self.receive();
            if m["id"] == id && m.get("method").is_none() {
                return (m, before);
            }
            before.push(m);
        }
    }

    fn initialize(&mut self, capabilities: Value) {
        self.send(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": capabilities,
                "clientInfo": {"name": "binaries-test", "version": "0"}
            }}),
        );
        let (r, _) = self.response(0);
        assert!(r.get("result").is_some(), "{r}");
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    }

    fn call(&mut self, id: i64, tool: &str, arguments: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}}));
    }

    /// Closes stdin and returns the exit status and everything on stderr.
    fn finish(mut self) -> (bool, String) {
        drop(self.stdin);
        let mut rest = String::new();
        while self.stdout.read_line(&mut rest).unwrap_or(0) > 0 {
            assert!(
                rest.trim().is_empty() || serde_json::from_str::<Value>(rest.trim()).is_ok(),
                "non-JSON on stdout: {rest:?}"
            );
            rest.clear();
        }
        let out = self.child.wait_with_output().unwrap();
        (out.status.success(), text(&out.stderr))
    }
}

#[test]
fn quickstart_serves_on_stdio_with_logs_on_stderr_only() {
    let mut s = Session::start(QUICKSTART, &[]);
    s.initialize(json!({}));
    s.call(1, "add", json!({"a": 2, "b": 40}));
    let (r, _) = s.response(1);
    assert_eq!(r["result"]["content"][0]["text"], "42");
    s.call(2, "text_stats", json!({"text": "two words\nthree"}));
    let (r, _) = s.response(2);
    assert_eq!(
        r["result"]["structuredContent"],
        json!({"words": 3, "lines": 2, "chars": 15})
    );
    s.call(3, "echo", json!({"phrase": "hi", "times": "twice"}));
    let (r, _) = s.response(3);
    assert_eq!(r["result"]["isError"], true);
    assert_eq!(
        r["result"]["content"][0]["text"],
        "Argument `times` must be an integer between 0 and 255, but got the string \"twice\"."
    );
    s.send(
        json!({"jsonrpc": "2.0", "id": 4, "method": "resources/read",
        "params": {"uri": "greeting://Ada"}}),
    );
    let (r, _) = s.response(4);
    assert_eq!(r["result"]["contents"][0]["text"], "Hello, Ada!");
    let (ok, stderr) = s.finish();
    assert!(ok);
    assert!(stderr.contains("serving quickstart"), "{stderr}");
}

#[test]
fn a_limit_from_the_command_line_is_the_one_the_server_enforces() {
    let mut s = Session::start(QUICKSTART, &["--max-message-size", "1KiB"]);
    s.initialize(json!({}));
    s.call(1, "echo", json!({"phrase": "x".repeat(2000), "times": 1}));
    // Too large to read, so answered without an id.
    let r = s.receive();
    assert_eq!(r["error"]["code"], -32600, "{r}");
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap()
            .contains("1024-byte limit"),
        "{r}"
    );
    s.call(2, "add", json!({"a": 1, "b": 1}));
    let (r, _) = s.response(2);
    assert_eq!(r["result"]["content"][0]["text"], "2", "it reads on");
    assert!(s.finish().0);
}

struct Sandbox(PathBuf);

impl Sandbox {
    fn new(name: &str) -> Sandbox {
        let dir = std::env::temp_dir().join(format!("mcp-files-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("root/docs")).unwrap();
        std::fs::write(dir.join("root/notes.txt"), "remember the milk").unwrap();
        std::fs::write(dir.join("root/docs/guide.md"), "# Guide").unwrap();
        std::fs::write(dir.join("secret.txt"), "outside").unwrap();
        Sandbox(dir)
    }

    fn root(&self) -> PathBuf {
        self.0.join("root")
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn root_arg(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

#[test]
fn files_needs_a_root() {
    let out = run(FILES, &[], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--root"),
        "{}",
        text(&out.stderr)
    );
    let sandbox = Sandbox::new("list");
    let root = root_arg(&sandbox.root());
    let out = run(FILES, &["--list"], &[("FILES_ROOT", root.as_str())]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let listing: Value = serde_json::from_slice(&out.stdout).unwrap();
    let delete = listing["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "delete_file")
        .unwrap();
    assert_eq!(delete["annotations"]["destructiveHint"], true);
}

#[test]
fn a_binary_with_options_of_its_own_describes_itself_in_help() {
    let out = run(FILES, &["--help"], &[]);
    assert!(out.status.success());
    let help = text(&out.stdout);
    assert!(
        help.starts_with("Serves the files under one directory over MCP\n\nUsage: files"),
        "{help}"
    );
    assert!(!help.contains("every server binary"), "{help}");
    assert!(help.contains("--call-timeout"), "{help}");
}

#[test]
fn limits_come_from_flags_and_variables_within_the_servers_ceilings() {
    let sandbox = Sandbox::new("limits");
    let root = root_arg(&sandbox.root());
    let out = run(
        FILES,
        &[
            "--root",
            &root,
            "--print-config",
            "--max-sessions",
            "50",
            "--port",
            "3000",
        ],
        &[("MCP_CALL_TIMEOUT", "90s")],
    );
    let config = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let line = |name: &str| {
        config
            .lines()
            .find(|l| l.starts_with(&format!("{name} = ")))
            .unwrap_or_else(|| panic!("no {name} in:\n{config}"))
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(line("bind"), "bind = \"127.0.0.1:3000\" # --port");
    assert_eq!(
        line("call_timeout"),
        "call_timeout = \"1m 30s\" # MCP_CALL_TIMEOUT; at most 10m"
    );
    assert_eq!(line("max_sessions"), "max_sessions = 50 # --max-sessions");
    assert_eq!(
        line("max_message_size"),
        "max_message_size = \"4MiB\" # default; at most 16MiB"
    );
    assert_eq!(
        line("request_state_ttl"),
        "request_state_ttl = \"10m\" # default"
    );

    // Above the ceiling the author set: a boot error naming the flag, the value and the
    // ceiling, from the command line and from the variable alike.
    for (args, env, said) in [
        (vec!["--call-timeout", "11m"], vec![], "--call-timeout 11m"),
        (
            vec![],
            vec![("MCP_MAX_MESSAGE_SIZE", "64MiB")],
            "MCP_MAX_MESSAGE_SIZE=64MiB",
        ),
    ] {
        let mut all = vec!["--root", root.as_str(), "--print-config"];
        all.extend(args);
        let out = run(FILES, &all, &env);
        assert_eq!(out.status.code(), Some(1));
        let err = text(&out.stderr);
        assert!(
            err.contains(&format!("error: {said} is above the ceiling")),
            "{err}"
        );
        assert!(err.contains("at most"), "{err}");
        assert!(out.stdout.is_empty());
    }
    // A value that cannot be read is a usage error naming the flag.
    let out = run(FILES, &["--root", &root, "--call-timeout", "soon"], &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("'--call-timeout <DURATION>'"), "{err}");
    assert!(err.contains("300ms"), "{err}");
}

#[test]
fn files_stays_inside_its_root() {
    let sandbox = Sandbox::new("confine");
    let root = root_arg(&sandbox.root());
    let mut s = Session::start(FILES, &["--root", &root]);
    s.initialize(json!({}));
    s.call(1, "read_file", json!({"path": "docs/guide.md"}));
    let (r, _) = s.response(1);
    assert_eq!(r["result"]["content"][0]["text"], "# Guide");
    for (id, path) in [
        (2, "../secret.txt"),
        (3, "/etc/passwd"),
        (4, "docs/../../secret.txt"),
    ] {
        s.call(id, "read_file", json!({"path": path}));
        let (r, _) = s.response(id);
        assert_eq!(r["result"]["isError"], true, "{path}: {r}");
        assert!(
            !r["result"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains("outside\""),
            "{r}"
        );
    }
    s.call(5, "list_files", json!({}));
    let (r, _) = s.response(5);
    let paths: Vec<&str> = r["result"]["structuredContent"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["docs", "notes.txt"]);
    let (ok, _) = s.finish();
    assert!(ok);
}

#[test]
fn files_asks_before_deleting() {
    let sandbox = Sandbox::new("delete");
    let root = root_arg(&sandbox.root());
    let notes = sandbox.root().join("notes.txt");
    let mut s = Session::start(FILES, &["--root", &root]);
    s.initialize(json!({"elicitation": {}}));

    // Declined: the file stays.
    s.call(1, "delete_file", json!({"path": "notes.txt"}));
    let question = s.receive();
    assert_eq!(question["method"], "elicitation/create", "{question}");
    assert!(
        question["params"]["message"]
            .as_str()
            .unwrap()
            .contains("delete_file"),
        "{question}"
    );
    s.send(json!({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "decline"}}));
    let (r, _) = s.response(1);
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(notes.exists());

    // Approved: it is deleted.
    s.call(2, "delete_file", json!({"path": "notes.txt"}));
    let question = s.receive();
    assert_eq!(question["method"], "elicitation/create");
    s.send(json!({"jsonrpc": "2.0", "id": question["id"],
        "result": {"action": "accept", "content": {"approve": true}}}));
    let (r, _) = s.response(2);
    assert_eq!(
        r["result"]["content"][0]["text"], "deleted notes.txt",
        "{r}"
    );
    assert!(!notes.exists());
    let (ok, _) = s.finish();
    assert!(ok);
}

/// The audit lines a stdio session of `files` wrote, for the tool `name`.
fn audit_lines<'a>(stderr: &'a str, name: &str) -> Vec<&'a str> {
    stderr
        .lines()
        .filter(|l| l.contains("mcp::audit") && l.contains(&format!(" name={name} ")))
        .collect()
}

#[test]
fn the_audit_routine_level_keeps_routine_allows_out_of_an_info_log() {
    let sandbox = Sandbox::new("audit-level");
    let root = root_arg(&sandbox.root());
    let info = ("MCP_LOG_LEVEL", "info");
    for (args, env, routine_logged) in [
        (vec![], vec![info], true),
        (vec!["--audit-routine-level", "debug"], vec![info], false),
        (
            vec![],
            vec![info, ("MCP_AUDIT_ROUTINE_LEVEL", "DEBUG")],
            false,
        ),
    ] {
        let mut all = vec!["--root", root.as_str()];
        all.extend(&args);
        let mut s = Session::start_with_env(FILES, &all, &env);
        s.initialize(json!({"elicitation": {}}));
        s.call(1, "read_file", json!({"path": "docs/guide.md"}));
        let (r, _) = s.response(1);
        assert_eq!(r["result"]["content"][0]["text"], "# Guide");
        s.call(2, "delete_file", json!({"path": "notes.txt"}));
        let question = s.receive();
        s.send(json!({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "decline"}}));
        let (r, _) = s.response(2);
        assert_eq!(r["result"]["isError"], true, "{r}");
        // The process ends with stdin: every line written before it is on stderr.
        let (ok, stderr) = s.finish();
        assert!(ok, "{stderr}");
        let reads = audit_lines(&stderr, "read_file");
        assert_eq!(
            reads.len(),
            usize::from(routine_logged),
            "{args:?} {env:?}:\n{stderr}"
        );
        if routine_logged {
            assert!(reads[0].contains(" INFO "), "{}", reads[0]);
            assert!(reads[0].contains("decision=\"allow\""), "{}", reads[0]);
            assert!(reads[0].contains("outcome=\"served\""), "{}", reads[0]);
        }
        // A question to a human is never routine.
        let deletes = audit_lines(&stderr, "delete_file");
        assert!(
            deletes
                .iter()
                .any(|l| l.contains(" INFO ") && l.contains("decision=\"ask\"")),
            "{args:?} {env:?}:\n{stderr}"
        );
    }
    let out = run(
        FILES,
        &[
            "--root",
            &root,
            "--print-config",
            "--audit-routine-level",
            "debug",
        ],
        &[],
    );
    let config = text(&out.stdout);
    assert!(
        config
            .lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>()
                == [
                    "audit_routine_level",
                    "=",
                    "\"debug\"",
                    "#",
                    "--audit-routine-level"
                ]),
        "{config}"
    );
    let out = run(
        FILES,
        &["--root", &root, "--audit-routine-level", "loud"],
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("unknown level `loud`"));
}
