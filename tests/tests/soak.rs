//! Load and soak against the fixture server process: many requests in flight, in both
//! eras, every response matched to its request, zero errors, memory flat once warmed up,
//! and HTTP sessions cleaned up after expiry.
//!
//! The short versions run with `cargo test` (a few seconds each). The long ones are ignored
//! by default; run them with
//!
//! ```text
//! SOAK_SECONDS=180 cargo test -p mcp-tests --release --test soak -- --ignored --nocapture
//! ```
//!
//! They print the server's resident memory over time (`VmRSS` from `/proc`).

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::Semaphore;

use mcp_tests::process::rss_kib;

const FIXTURE: &str = env!("CARGO_BIN_EXE_fixture");

/// What a run saw.
#[derive(Debug, Default)]
struct Report {
    sent: u64,
    matched: u64,
    errors: Vec<String>,
    /// (seconds since start, KiB).
    rss: Vec<(u64, u64)>,
}

impl Report {
    fn print(&self, name: &str) {
        eprintln!(
            "{name}: {} requests, {} matched, {} errors",
            self.sent,
            self.matched,
            self.errors.len()
        );
        for (t, kib) in &self.rss {
            eprintln!("  t={t:>4}s  RSS {:>7.1} MiB", *kib as f64 / 1024.0);
        }
        for e in self.errors.iter().take(5) {
            eprintln!("  error: {}", &e[..e.len().min(300)]);
        }
    }

    fn assert_clean(&self) {
        assert!(self.sent > 0);
        let first: Vec<&str> = self
            .errors
            .iter()
            .take(3)
            .map(|e| &e[..e.len().min(300)])
            .collect();
        assert!(
            self.errors.is_empty(),
            "{} errors: {first:?}",
            self.errors.len()
        );
        assert_eq!(
            self.sent, self.matched,
            "every request gets its own response"
        );
    }

    /// RSS after warm-up (the first quarter of the run) may grow by at most 10% or 4 MiB.
    fn assert_flat(&self) {
        let n = self.rss.len();
        assert!(n >= 4, "too few samples: {:?}", self.rss);
        let warm = self.rss[n / 4].1;
        let peak = self.rss[n / 4..].iter().map(|(_, k)| *k).max().unwrap_or(0);
        let allowed = (warm / 10).max(4 * 1024);
        assert!(
            peak <= warm + allowed,
            "RSS grew from {warm} KiB after warm-up to {peak} KiB: {:?}",
            self.rss
        );
    }
}

fn spawn_stdio() -> Child {
    Command::new(FIXTURE)
        .args(["--log-level", "warn"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn the fixture")
}

fn stateless_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "soak", "version": "0"},
    })
}

/// The n-th request of a run and how to check its answer.
/// Checks one answer.
type Check = Box<dyn Fn(&Value) -> bool + Send>;

fn nth_request(n: u64, stateless: bool) -> (Value, Check) {
    let mut params = match n % 4 {
        0 => json!({"name": "echo", "arguments": {"text": format!("m{n}")}}),
        1 => json!({}),
        2 => json!({"name": "sleep", "arguments": {"ms": 1}}),
        _ => json!({}),
    };
    let method = match (n % 4, stateless) {
        (0 | 2, _) => "tools/call",
        (1, _) => "tools/list",
        (_, false) => "ping",
        (_, true) => "server/discover",
    };
    if stateless {
        params["_meta"] = stateless_meta();
    }
    let message = json!({"jsonrpc": "2.0", "id": n, "method": method, "params": params});
    let check: Check = match n % 4 {
        0 => {
            let expected = format!("m{n}");
            Box::new(move |r: &Value| r["result"]["content"][0]["text"] == expected.as_str())
        }
        1 => Box::new(|r: &Value| {
            r["result"]["tools"]
                .as_array()
                .is_some_and(|t| t.iter().any(|t| t["name"] == "echo"))
        }),
        2 => Box::new(|r: &Value| r["result"]["content"][0]["text"] == "slept 1 ms"),
        _ if stateless => Box::new(|r: &Value| r["result"]["supportedVersions"].is_array()),
        _ => Box::new(|r: &Value| r["result"] == json!({})),
    };
    (message, check)
}

/// Keeps `window` requests in flight on one stdio server for `duration`.
async fn stdio_run(duration: Duration, stateless: bool, window: usize, sample: Duration) -> Report {
    let mut child = spawn_stdio();
    let pid = child.id().expect("a pid");
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    if !stateless {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "soak", "version": "0"}}});
        stdin
            .write_all(format!("{init}\n").as_bytes())
            .await
            .unwrap();
        let reply = lines.next_line().await.unwrap().unwrap();
        assert!(reply.contains("\"result\""), "{reply}");
        let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        stdin
            .write_all(format!("{done}\n").as_bytes())
            .await
            .unwrap();
    }

    let pending: Arc<Mutex<HashMap<u64, Check>>> = Arc::new(Mutex::new(HashMap::new()));
    let window_slots = Arc::new(Semaphore::new(window));
    let report = Arc::new(Mutex::new(Report::default()));

    let reader = {
        let pending = Arc::clone(&pending);
        let slots = Arc::clone(&window_slots);
        let report = Arc::clone(&report);
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                let message: Value = match serde_json::from_str(&line) {
                    Ok(v) => v,
                    Err(e) => {
                        report
                            .lock()
                            .errors
                            .push(format!("non-JSON line ({e}): {line}"));
                        continue;
                    }
                };
                if message.get("method").is_some() {
                    continue; // a notification (logs)
                }
                let Some(id) = message["id"].as_u64() else {
                    report
                        .lock()
                        .errors
                        .push(format!("a response without our id: {line}"));
                    continue;
                };
                let check = pending.lock().remove(&id);
                let mut r = report.lock();
                match check {
                    Some(check) if check(&message) => r.matched += 1,
                    Some(_) => r.errors.push(format!("wrong answer: {line}")),
                    None => r
                        .errors
                        .push(format!("an answer to nothing pending: {line}")),
                }
                drop(r);
                slots.add_permits(1);
            }
        })
    };

    let start = Instant::now();
    let mut next_sample = Duration::ZERO;
    let mut n = 1u64;
    while start.elapsed() < duration {
        if start.elapsed() >= next_sample {
            report
                .lock()
                .rss
                .push((start.elapsed().as_secs(), rss_kib(pid)));
            next_sample += sample;
        }
        let permit = window_slots.acquire().await.unwrap();
        permit.forget();
        let (message, check) = nth_request(n, stateless);
        pending.lock().insert(n, check);
        stdin
            .write_all(format!("{message}\n").as_bytes())
            .await
            .unwrap();
        report.lock().sent += 1;
        n += 1;
    }
    // Every request in flight gets its answer.
    let drained = tokio::time::timeout(Duration::from_secs(10), async {
        while !pending.lock().is_empty() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    if drained.is_err() {
        let left = pending.lock().len();
        report
            .lock()
            .errors
            .push(format!("{left} requests never answered"));
    }
    report
        .lock()
        .rss
        .push((start.elapsed().as_secs(), rss_kib(pid)));
    drop(stdin);
    let status = tokio::time::timeout(Duration::from_secs(3), child.wait())
        .await
        .expect("the server exits at EOF")
        .unwrap();
    assert!(status.success(), "{status:?}");
    reader.await.unwrap();
    std::mem::take(&mut *report.lock())
}

#[tokio::test]
async fn stdio_load_short_both_eras() {
    for stateless in [false, true] {
        let r = stdio_run(
            Duration::from_secs(2),
            stateless,
            64,
            Duration::from_secs(1),
        )
        .await;
        r.print(if stateless {
            "stdio 2026-07-28"
        } else {
            "stdio handshake"
        });
        r.assert_clean();
    }
}

#[tokio::test]
#[ignore = "long: SOAK_SECONDS (default 180) of stdio in each era"]
async fn stdio_soak_long_both_eras() {
    let secs = soak_seconds();
    let (handshake, stateless) = tokio::join!(
        stdio_run(
            Duration::from_secs(secs),
            false,
            64,
            Duration::from_secs(10)
        ),
        stdio_run(Duration::from_secs(secs), true, 64, Duration::from_secs(10)),
    );
    handshake.print("stdio handshake");
    stateless.print("stdio 2026-07-28");
    for r in [&handshake, &stateless] {
        r.assert_clean();
        r.assert_flat();
    }
}

fn soak_seconds() -> u64 {
    std::env::var("SOAK_SECONDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(180)
}

// ---- Streamable HTTP ----

/// The fixture serving Streamable HTTP, and its address.
async fn spawn_http(idle: Duration) -> (Child, String) {
    let mut child = Command::new(FIXTURE)
        .args(["--log-level", "warn"])
        .env("FIXTURE_HTTP", "127.0.0.1:0")
        .env("FIXTURE_IDLE_MS", idle.as_millis().to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn the fixture");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let addr = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
        .await
        .expect("the fixture prints its address")
        .unwrap()
        .expect("an address");
    (child, format!("http://{addr}/mcp"))
}

/// The JSON-RPC response with `id` in a POST's answer (JSON or SSE).
async fn response_for(r: reqwest::Response, id: u64) -> Result<Value, String> {
    let status = r.status();
    let sse = r
        .headers()
        .get("content-type")
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    let text = r.text().await.map_err(|e| e.to_string())?;
    if !status.is_success() {
        return Err(format!("HTTP {status}: {text}"));
    }
    let candidates: Vec<Value> = if sse {
        text.lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter(|d| !d.is_empty())
            .filter_map(|d| serde_json::from_str(d).ok())
            .collect()
    } else {
        vec![serde_json::from_str(&text).map_err(|e| format!("{e}: {text}"))?]
    };
    candidates
        .into_iter()
        .find(|m| m["id"] == json!(id) && m.get("method").is_none())
        .ok_or_else(|| format!("no response to {id} in {text}"))
}

struct HttpClient {
    http: reqwest::Client,
    url: String,
}

impl HttpClient {
    fn post(&self, session: Option<&str>, body: &Value) -> reqwest::RequestBuilder {
        let mut b = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string());
        if let Some(s) = session {
            b = b
                .header("mcp-session-id", s)
                .header("mcp-protocol-version", "2025-11-25");
        }
        b
    }

    async fn open(&self) -> Result<String, String> {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "soak", "version": "0"}}});
        let r = self
            .post(None, &init)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        let session = r
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
            .ok_or("no session id")?;
        response_for(r, 0).await?;
        let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let r = self
            .post(Some(&session), &done)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        if r.status() != reqwest::StatusCode::ACCEPTED {
            return Err(format!("initialized: HTTP {}", r.status()));
        }
        Ok(session)
    }

    /// A stateless 2026-07-28 request: no session, its metadata mirrored in headers.
    fn post_stateless(&self, body: &Value) -> reqwest::RequestBuilder {
        let mut b = self
            .post(None, body)
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", body["method"].as_str().unwrap_or_default());
        if let Some(name) = body["params"]["name"].as_str() {
            b = b.header("mcp-name", name);
        }
        b
    }

    async fn status_of_ping(&self, session: &str) -> reqwest::StatusCode {
        let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
        self.post(Some(session), &ping)
            .send()
            .await
            .unwrap()
            .status()
    }
}

/// `clients` clients for `duration`. Half of them, in the handshake era, each open a
/// session, make `per_session` requests, and delete it, except every tenth session, which
/// they abandon to expiry; the other half send stateless 2026-07-28 requests back to back.
async fn http_run(
    clients: usize,
    duration: Duration,
    per_session: u64,
    idle: Duration,
    sample: Duration,
) -> (Report, usize) {
    let (child, url) = spawn_http(idle).await;
    let pid = child.id().expect("a pid");
    let client = Arc::new(HttpClient {
        http: reqwest::Client::builder()
            .pool_max_idle_per_host(clients)
            .build()
            .unwrap(),
        url,
    });
    let report = Arc::new(Mutex::new(Report::default()));
    let abandoned: Arc<Mutex<Vec<String>>> = Arc::new(Mutex::new(Vec::new()));
    let sessions = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let sampler = {
        let report = Arc::clone(&report);
        tokio::spawn(async move {
            loop {
                report
                    .lock()
                    .rss
                    .push((start.elapsed().as_secs(), rss_kib(pid)));
                tokio::time::sleep(sample).await;
            }
        })
    };
    let mut tasks = Vec::new();
    for c in 0..clients {
        let client = Arc::clone(&client);
        let report = Arc::clone(&report);
        let abandoned = Arc::clone(&abandoned);
        let sessions = Arc::clone(&sessions);
        tasks.push(tokio::spawn(async move {
            // Every other client speaks the stateless revision: no session, only requests.
            if c % 2 == 1 {
                let mut n = 0;
                while start.elapsed() < duration {
                    n += 1;
                    let id = (c as u64) << 40 | n;
                    let (message, check) = nth_request(id, true);
                    report.lock().sent += 1;
                    let outcome = match client.post_stateless(&message).send().await {
                        Ok(r) => response_for(r, id).await,
                        Err(e) => Err(e.to_string()),
                    };
                    let mut r = report.lock();
                    match outcome {
                        Ok(v) if check(&v) => r.matched += 1,
                        Ok(v) => r.errors.push(format!("wrong answer: {v}")),
                        Err(e) => r.errors.push(e),
                    }
                }
                return;
            }
            while start.elapsed() < duration {
                let nth = sessions.fetch_add(1, Ordering::Relaxed);
                let session = match client.open().await {
                    Ok(s) => s,
                    Err(e) => {
                        report.lock().errors.push(format!("client {c}: open: {e}"));
                        continue;
                    }
                };
                for i in 1..=per_session {
                    let id = nth * 1000 + i;
                    let (mut message, check) = nth_request(id, false);
                    message["id"] = json!(id);
                    report.lock().sent += 1;
                    let outcome = match client.post(Some(&session), &message).send().await {
                        Ok(r) => response_for(r, id).await,
                        Err(e) => Err(e.to_string()),
                    };
                    let mut r = report.lock();
                    match outcome {
                        Ok(v) if check(&v) => r.matched += 1,
                        Ok(v) => r.errors.push(format!("wrong answer: {v}")),
                        Err(e) => r.errors.push(e),
                    }
                }
                if nth % 10 == 9 {
                    abandoned.lock().push(session);
                } else {
                    let r = client
                        .http
                        .delete(&client.url)
                        .header("mcp-session-id", &session)
                        .send()
                        .await;
                    if !r.is_ok_and(|r| r.status() == reqwest::StatusCode::NO_CONTENT) {
                        report.lock().errors.push("DELETE failed".into());
                    }
                    if client.status_of_ping(&session).await != reqwest::StatusCode::NOT_FOUND {
                        report
                            .lock()
                            .errors
                            .push("a deleted session still answers".into());
                    }
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    // Abandoned sessions expire: after the idle timeout they are gone.
    tokio::time::sleep(idle + Duration::from_millis(500)).await;
    let abandoned = abandoned.lock().clone();
    for s in &abandoned {
        let status = client.status_of_ping(s).await;
        if status != reqwest::StatusCode::NOT_FOUND {
            report
                .lock()
                .errors
                .push(format!("an idle session did not expire: {status}"));
        }
    }
    report
        .lock()
        .rss
        .push((start.elapsed().as_secs(), rss_kib(pid)));
    sampler.abort();
    drop(child);
    let report = std::mem::take(&mut *report.lock());
    (report, abandoned.len())
}

#[tokio::test]
async fn http_load_short_64_clients() {
    let (r, abandoned) = http_run(
        64,
        Duration::from_secs(2),
        5,
        Duration::from_millis(800),
        Duration::from_secs(1),
    )
    .await;
    r.print("http 64 clients");
    eprintln!("  {abandoned} sessions abandoned and expired");
    r.assert_clean();
    assert!(abandoned > 0);
}

#[tokio::test]
#[ignore = "long: SOAK_SECONDS (default 180) of 64 HTTP clients"]
async fn http_soak_long_64_clients() {
    let (r, abandoned) = http_run(
        64,
        Duration::from_secs(soak_seconds()),
        20,
        Duration::from_secs(3),
        Duration::from_secs(10),
    )
    .await;
    r.print("http 64 clients");
    eprintln!("  {abandoned} sessions abandoned and expired");
    r.assert_clean();
    r.assert_flat();
}
