//! Drives the real stdio transport ([`mcp::transport::stdio::serve_io`]) in memory, over a
//! pair of byte pipes: the line framing, the reader's limits and the writer's batching are
//! all exercised, without spawning a process.

use std::time::Duration;

use mcp::Server;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};
use tokio::task::JoinHandle;

/// A server running `serve_io` on in-memory pipes.
pub struct PipeServer {
    input: Option<DuplexStream>,
    output: Lines<BufReader<DuplexStream>>,
    task: Option<JoinHandle<std::io::Result<()>>>,
    next_id: i64,
}

impl PipeServer {
    /// Starts serving `server`. `buffer` is the capacity of each pipe in bytes: a small one
    /// makes a writer block as soon as the other side stops reading.
    pub fn start(server: Server, buffer: usize) -> PipeServer {
        Self::start_until(server, buffer, std::future::pending())
    }

    /// Like [`PipeServer::start`], stopping gracefully when `stop` completes (as on
    /// SIGTERM): see [`mcp::transport::stdio::serve_io_until`].
    pub fn start_until(
        server: Server,
        buffer: usize,
        stop: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> PipeServer {
        let (client_in, server_in) = tokio::io::duplex(buffer);
        let (server_out, client_out) = tokio::io::duplex(buffer);
        let task = tokio::spawn(mcp::transport::stdio::serve_io_until(
            server, server_in, server_out, stop,
        ));
        PipeServer {
            input: Some(client_in),
            output: BufReader::new(client_out).lines(),
            task: Some(task),
            next_id: 1,
        }
    }

    /// Writes raw bytes to the server's input.
    pub async fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        let input = self.input.as_mut().expect("input is open");
        input.write_all(bytes).await?;
        input.flush().await
    }

    /// Writes one line (a newline is appended).
    pub async fn send_line(&mut self, line: &str) {
        let mut bytes = line.as_bytes().to_vec();
        bytes.push(b'\n');
        self.write(&bytes)
            .await
            .expect("the server reads its input");
    }

    /// Writes one JSON message as a line.
    pub async fn send(&mut self, message: Value) {
        self.send_line(&message.to_string()).await;
    }

    /// The next line the server wrote, parsed; `None` after `timeout` or at EOF. Panics on
    /// a line that is not JSON: stdout carries protocol messages only.
    pub async fn recv_within(&mut self, timeout: Duration) -> Option<Value> {
        let line = tokio::time::timeout(timeout, self.output.next_line())
            .await
            .ok()?
            .ok()??;
        Some(
            serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("the server wrote a non-JSON line ({e}): {line:?}")),
        )
    }

    /// The next message, failing after 5 s.
    pub async fn recv(&mut self) -> Value {
        self.recv_within(Duration::from_secs(5))
            .await
            .expect("the server wrote a message within 5 s")
    }

    /// Sends a request and waits for its response, skipping anything else.
    pub async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        loop {
            let message = self.recv().await;
            if message.get("id") == Some(&json!(id)) && message.get("method").is_none() {
                return message;
            }
        }
    }

    /// Performs the handshake with `capabilities`.
    pub async fn initialize(&mut self, capabilities: Value) -> Value {
        let reply = self
            .request(
                "initialize",
                json!({"protocolVersion": "2025-11-25", "capabilities": capabilities,
                       "clientInfo": {"name": "pipe-test", "version": "0"}}),
            )
            .await;
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        reply
    }

    /// Takes the server's input, to write to it from another task.
    pub fn take_input(&mut self) -> DuplexStream {
        self.input.take().expect("input is open")
    }

    /// Closes the server's input (EOF), as a host does when it is done.
    pub fn close_input(&mut self) {
        self.input = None;
    }

    /// Waits up to `timeout` for `serve_io` to return; `None` if it is still running.
    pub async fn finished_within(&mut self, timeout: Duration) -> Option<std::io::Result<()>> {
        let task = self.task.as_mut()?;
        let result = tokio::time::timeout(timeout, task).await.ok()?;
        self.task = None;
        Some(result.expect("serve_io does not panic"))
    }
}

impl Drop for PipeServer {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}
