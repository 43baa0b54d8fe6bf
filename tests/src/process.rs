//! Drives a server binary over stdio, the way real hosts do: through pipes (Python hosts)
//! or a Unix socket pair (Node.js hosts). Every message the server writes is validated
//! against the official schema of the negotiated revision.

use std::collections::{HashMap, VecDeque};
use std::os::fd::OwnedFd;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};

use crate::schema::validate_server_message;

/// How the server's stdin and stdout are connected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wiring {
    /// Anonymous pipes.
    Pipes,
    /// One Unix socket pair per stream.
    SocketPair,
}

/// A server process under test.
pub struct StdioServer {
    child: Child,
    writer: Option<Box<dyn AsyncWrite + Send + Unpin>>,
    lines: tokio::io::Lines<BufReader<Box<dyn AsyncRead + Send + Unpin>>>,
    version: String,
    methods: HashMap<Value, String>,
    queued: VecDeque<Value>,
    next_id: i64,
    /// Every message the server sent, in order.
    pub received: Vec<Value>,
}

/// The path of a binary built from this workspace (`target/<profile>/<name>`).
pub fn binary(name: &str) -> std::path::PathBuf {
    let mut dir = std::env::current_exe().expect("test binary path");
    dir.pop();
    if dir.ends_with("deps") {
        dir.pop();
    }
    dir.join(name)
}

impl StdioServer {
    /// Spawns `program` with `args`, wired as asked.
    pub fn spawn(program: &std::path::Path, args: &[&str], wiring: Wiring) -> StdioServer {
        Self::spawn_with_env(program, args, &[], wiring)
    }

    /// Spawns `program` with `args` and extra environment variables, wired as asked.
    pub fn spawn_with_env(
        program: &std::path::Path,
        args: &[&str],
        env: &[(&str, &str)],
        wiring: Wiring,
    ) -> StdioServer {
        let mut cmd = Command::new(program);
        cmd.args(args)
            .envs(env.iter().copied())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        let (writer, reader): (
            Box<dyn AsyncWrite + Send + Unpin>,
            Box<dyn AsyncRead + Send + Unpin>,
        ) = match wiring {
            Wiring::Pipes => {
                cmd.stdin(Stdio::piped()).stdout(Stdio::piped());
                let mut child = cmd.spawn().expect("spawn server");
                let w = Box::new(child.stdin.take().unwrap());
                let r = Box::new(child.stdout.take().unwrap());
                return StdioServer::new(child, w, r);
            }
            Wiring::SocketPair => {
                let (ours_in, theirs_in) = std::os::unix::net::UnixStream::pair().unwrap();
                let (ours_out, theirs_out) = std::os::unix::net::UnixStream::pair().unwrap();
                cmd.stdin(Stdio::from(OwnedFd::from(theirs_in)))
                    .stdout(Stdio::from(OwnedFd::from(theirs_out)));
                ours_in.set_nonblocking(true).unwrap();
                ours_out.set_nonblocking(true).unwrap();
                (
                    Box::new(tokio::net::UnixStream::from_std(ours_in).unwrap()),
                    Box::new(tokio::net::UnixStream::from_std(ours_out).unwrap()),
                )
            }
        };
        let child = cmd.spawn().expect("spawn server");
        StdioServer::new(child, writer, reader)
    }

    fn new(
        child: Child,
        writer: Box<dyn AsyncWrite + Send + Unpin>,
        reader: Box<dyn AsyncRead + Send + Unpin>,
    ) -> StdioServer {
        StdioServer {
            child,
            writer: Some(writer),
            lines: BufReader::new(reader).lines(),
            version: "2025-11-25".to_owned(),
            methods: HashMap::new(),
            queued: VecDeque::new(),
            next_id: 1,
            received: Vec::new(),
        }
    }

    /// The revision messages are validated against.
    pub fn set_version(&mut self, version: &str) {
        self.version = version.to_owned();
    }

    /// Writes one raw line.
    pub async fn send_line(&mut self, line: &str) {
        let w = self.writer.as_mut().expect("stdin is open");
        w.write_all(line.as_bytes()).await.unwrap();
        w.write_all(b"\n").await.unwrap();
        w.flush().await.unwrap();
    }

    /// Sends a JSON message, remembering request methods for validating responses.
    pub async fn send(&mut self, message: Value) {
        if let (Some(id), Some(method)) = (
            message.get("id"),
            message.get("method").and_then(Value::as_str),
        ) {
            self.methods.insert(id.clone(), method.to_owned());
        }
        self.send_line(&message.to_string()).await;
    }

    /// Closes the server's stdin.
    pub async fn close_stdin(&mut self) {
        if let Some(mut w) = self.writer.take() {
            let _ = w.shutdown().await;
        }
    }

    /// Reads the next message (validated), or `None` at EOF or after `timeout`.
    pub async fn recv_within(&mut self, timeout: Duration) -> Option<Value> {
        if let Some(v) = self.queued.pop_front() {
            return Some(v);
        }
        let line = tokio::time::timeout(timeout, self.lines.next_line())
            .await
            .ok()?
            .ok()??;
        let value: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("server wrote a non-JSON line ({e}): {line:?}"));
        let method = value.get("id").and_then(|id| self.methods.get(id)).cloned();
        if let Err(e) = validate_server_message(&self.version, &value, method.as_deref()) {
            panic!("schema violation: {e}");
        }
        self.received.push(value.clone());
        Some(value)
    }

    /// Reads the next message, failing the test after 5 s.
    pub async fn recv(&mut self) -> Value {
        self.recv_within(Duration::from_secs(5))
            .await
            .expect("the server answered within 5 s")
    }

    /// Sends a request and returns its response; other messages are kept for `recv`.
    pub async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        let mut others = Vec::new();
        loop {
            let v = self
                .recv_within(Duration::from_secs(5))
                .await
                .unwrap_or_else(|| panic!("no response to {method}"));
            if v.get("id") == Some(&json!(id)) && v.get("method").is_none() {
                self.queued.extend(others);
                return v;
            }
            others.push(v);
        }
    }

    /// Performs the handshake at `version` and sends `notifications/initialized`.
    pub async fn initialize(&mut self, version: &str, capabilities: Value) -> Value {
        self.version = version.to_owned();
        let reply = self
            .request(
                "initialize",
                json!({"protocolVersion": version, "capabilities": capabilities,
                       "clientInfo": {"name": "wire-test", "version": "0"}}),
            )
            .await;
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        reply
    }

    /// The process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    /// Waits for the process to exit, up to `timeout`.
    pub async fn wait_exit(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        tokio::time::timeout(timeout, self.child.wait())
            .await
            .ok()?
            .ok()
    }
}

/// The resident memory of a process, in KiB (`VmRSS` from `/proc`; 0 once it is gone).
pub fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}
