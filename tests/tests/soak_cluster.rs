//! Soak with humans in the loop, on real processes: three replicas of `everything` sharing
//! Redis behind nginx (round-robin, no sticky sessions), driven by 64 HTTP clients (half on
//! the handshake era with sessions, half on the stateless 2026-07-28 revision) and four
//! stdio clients (each with its own `everything` process, two per era).
//!
//! Every client loops over a weighted mix:
//!
//! - plain calls (`greet` with a name of its own, checked in the answer);
//! - `charge` calls, which the authorizer asks a human about: the client approves,
//!   declines or stays silent (a third each). On the handshake era a silent client never
//!   answers the `elicitation/create` and the server's own `--elicitation-timeout` ends the
//!   call with the deny; on 2026-07-28 it never sends the retry, and some of those sealed
//!   states are replayed with an approval after `--request-state-ttl`: they must be refused;
//! - tasks: created (`slow_compute`), polled with `tasks/get` to completion or cancelled with
//!   `tasks/cancel`, and on 2026-07-28 a task that asks (`confirm_delete`) answered with
//!   `tasks/update`;
//! - on the handshake era, sessions opened, used once and abandoned (never DELETEd), and the
//!   client's own session dropped for a new one every few operations.
//!
//! What must hold:
//!
//! - every request gets exactly one answer, matched by id (none lost: every wait is
//!   bounded; none duplicated: a stream is read to its end and any second response, or a
//!   response to an id nobody waits for, is an error), and every answer is the right one;
//! - every approved `charge` ran exactly once and every declined or silent one never: the
//!   example's ledger (`ledger://{account}`: how many charges ran for an account, and the
//!   sum of their ids) is read on each replica directly and must add up, per account, to
//!   the approved charges the client made;
//! - the replicas' resident memory (`VmRSS`, sampled every few seconds) is flat once warm:
//!   the peak of the last third of the load is at most 10% (or 8 MiB, whichever is larger)
//!   above the first sample after the first third;
//! - after the load, once sessions, tasks and sealed states have expired, nothing of them is
//!   left in Redis (only the deployment's `epoch` and the replicas' heartbeats), abandoned
//!   sessions answer 404 and expired tasks are unknown.
//!
//! `.ci/scaleout.sh` starts the replicas with short timeouts and runs this (ignored by
//! default) with `SCALEOUT_URL`, `SCALEOUT_REPLICAS` (`<pid>=<url>,...`), `SOAK_SECONDS`
//! (default 60), `SOAK_REDIS_URL`, `SOAK_REDIS_PREFIX`, `SOAK_EXPIRY_SECONDS` (how long after
//! the load everything must have expired), `SOAK_EVERYTHING` (the binary the stdio clients
//! spawn, with `SOAK_STDIO_ARGS`) and `SOAK_OUT` (the directory of `soak-rss.csv` and
//! `soak-summary.md`). `SOAK_SECONDS=1800 .ci/scaleout.sh soak` is the 30-minute run.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use mcp_tests::http::{McpHttp, SseReader, StatelessHttp};
use parking_lot::Mutex;
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// How long one request may wait for its answer before it counts as lost.
const PATIENCE: Duration = Duration::from_secs(30);
/// HTTP clients per era.
const HTTP_PER_ERA: usize = 32;
/// Stdio clients per era.
const STDIO_PER_ERA: usize = 2;
/// Sealed states of silent 2026-07-28 approvals each client keeps to replay after expiry.
const LATE_PER_CLIENT: usize = 4;

// ---- what the run saw ----

#[derive(Debug, Default)]
struct Tally {
    requests: u64,
    answered: u64,
    lost: u64,
    duplicated: u64,
    errors: Vec<String>,
    plain: u64,
    approved: u64,
    declined: u64,
    silent: u64,
    late_refused: u64,
    tasks_completed: u64,
    tasks_inline: u64,
    tasks_cancelled: u64,
    tasks_updated: u64,
    sessions_opened: u64,
    sessions_abandoned: u64,
}

impl Tally {
    fn error(&mut self, who: &str, what: impl std::fmt::Display) {
        if self.errors.len() < 200 {
            self.errors.push(format!("{who}: {what}"));
        }
    }
}

/// What the clients expect in the ledger, per account: charges and the sum of their ids.
type Expected = BTreeMap<String, (u64, u64)>;

struct Shared {
    tally: Mutex<Tally>,
    expected: Mutex<Expected>,
    /// Abandoned sessions (a sample) to check after expiry.
    abandoned: Mutex<Vec<McpHttp>>,
    /// Sealed states of silent approvals: (account, id, requestState, key).
    late: Mutex<Vec<(String, u64, Value, String)>>,
    /// A few 2026-07-28 task ids to check after expiry.
    tasks: Mutex<Vec<String>>,
    stop: AtomicBool,
}

impl Shared {
    fn count(&self, f: impl FnOnce(&mut Tally)) {
        f(&mut self.tally.lock());
    }
}

/// A small deterministic random source (xorshift64*), one per client.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 33) % n
    }
}

/// How the human answers an approval question.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Human {
    Approve,
    Decline,
    Silent,
    /// No question is expected.
    Absent,
}

fn answer_to(ask: &Value, human: Human) -> Option<Value> {
    let result = match human {
        Human::Approve => json!({"action": "accept", "content": {"approve": true}}),
        Human::Decline => json!({"action": "decline"}),
        Human::Silent | Human::Absent => return None,
    };
    Some(json!({"jsonrpc": "2.0", "id": ask["id"], "result": result}))
}

// ---- the links: a session, stateless HTTP, stdio ----

enum Link {
    /// 2025-11-25 over Streamable HTTP through nginx.
    Session(McpHttp),
    /// 2026-07-28 over Streamable HTTP through nginx.
    Stateless(StatelessHttp),
    /// Either era over stdio.
    Stdio(Box<StdioLink>),
}

struct StdioLink {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    stateless: bool,
}

fn stateless_caps() -> Value {
    json!({"elicitation": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}})
}

fn stateless_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": stateless_caps(),
        "io.modelcontextprotocol/clientInfo": {"name": "soak-cluster", "version": "0"},
    })
}

/// Opens a 2025-11-25 session through `url`, declaring elicitation.
async fn open_session(http: &reqwest::Client, url: &str) -> Result<McpHttp, String> {
    let mut c = McpHttp::new(url);
    c.http = http.clone();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "soak-cluster", "version": "0"}}});
    let r = c
        .post(init.to_string())
        .send()
        .await
        .map_err(|e| format!("initialize: {e}"))?;
    if r.status() != StatusCode::OK {
        return Err(format!("initialize: HTTP {}", r.status()));
    }
    let session = r
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .ok_or("initialize: no session id")?;
    let v: Value = r.json().await.map_err(|e| format!("initialize: {e}"))?;
    if v["result"]["protocolVersion"] != "2025-11-25" {
        return Err(format!("initialize: {v}"));
    }
    c.session = Some(session);
    c.version = Some("2025-11-25".into());
    let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let r = c
        .post(done.to_string())
        .send()
        .await
        .map_err(|e| format!("initialized: {e}"))?;
    if r.status() != StatusCode::ACCEPTED {
        return Err(format!("initialized: HTTP {}", r.status()));
    }
    Ok(c)
}

/// The answer of one request, or why there is none (lost, duplicated, broken).
#[derive(Debug)]
enum Failure {
    Lost(String),
    Duplicated(String),
    Broken(String),
}

impl Link {
    /// Sends one request and returns its one answer, answering the approval question the
    /// way `human` does. Every message on the way is looked at: a second response, a
    /// response to another id or a question nobody expected is a failure.
    async fn request(
        &mut self,
        id: u64,
        method: &str,
        params: Value,
        human: Human,
    ) -> Result<Value, Failure> {
        match tokio::time::timeout(PATIENCE, self.request_inner(id, method, params, human)).await {
            Ok(r) => r,
            Err(_) => Err(Failure::Lost(format!(
                "{method} {id}: no answer within {PATIENCE:?}"
            ))),
        }
    }

    async fn request_inner(
        &mut self,
        id: u64,
        method: &str,
        params: Value,
        human: Human,
    ) -> Result<Value, Failure> {
        match self {
            Link::Session(c) => {
                let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
                let r = c
                    .post(body.to_string())
                    .send()
                    .await
                    .map_err(|e| Failure::Broken(format!("{method} {id}: {e}")))?;
                let session = c.clone();
                read_http(r, id, method, human, Some(&session)).await
            }
            Link::Stateless(c) => {
                let r = c
                    .post(json!(id), method, params)
                    .send()
                    .await
                    .map_err(|e| Failure::Broken(format!("{method} {id}: {e}")))?;
                read_http(r, id, method, human, None).await
            }
            Link::Stdio(s) => s.request(id, method, params, human).await,
        }
    }
}

/// Reads a POST's answer (JSON or a stream read to its end).
async fn read_http(
    r: reqwest::Response,
    id: u64,
    method: &str,
    human: Human,
    session: Option<&McpHttp>,
) -> Result<Value, Failure> {
    let status = r.status();
    let sse = r
        .headers()
        .get("content-type")
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    if status != StatusCode::OK {
        let text = r.text().await.unwrap_or_default();
        return Err(Failure::Broken(format!(
            "{method} {id}: HTTP {status}: {text}"
        )));
    }
    if !sse {
        let v: Value = r
            .json()
            .await
            .map_err(|e| Failure::Broken(format!("{method} {id}: {e}")))?;
        if v["id"] != json!(id) {
            return Err(Failure::Broken(format!("{method} {id}: answered {v}")));
        }
        return Ok(v);
    }
    let mut reader = SseReader::new(r);
    let mut answer: Option<Value> = None;
    loop {
        // The outer timeout (PATIENCE, in `request`) bounds the wait.
        let Some(event) = reader.next_within(Duration::from_secs(3600)).await else {
            break;
        };
        if event.comment || event.data.is_empty() {
            continue;
        }
        let v: Value = serde_json::from_str(&event.data)
            .map_err(|e| Failure::Broken(format!("{method} {id}: not JSON ({e})")))?;
        match (v.get("method"), v.get("id")) {
            (Some(m), Some(_)) if m == "elicitation/create" && human != Human::Absent => {
                let Some(session) = session else {
                    return Err(Failure::Broken(format!(
                        "{method} {id}: a question on 2026-07-28: {v}"
                    )));
                };
                if let Some(reply) = answer_to(&v, human) {
                    let sent = session
                        .post(reply.to_string())
                        .send()
                        .await
                        .map_err(|e| Failure::Broken(format!("{method} {id}: answer: {e}")))?;
                    if sent.status() != StatusCode::ACCEPTED {
                        return Err(Failure::Broken(format!(
                            "{method} {id}: answer: HTTP {}",
                            sent.status()
                        )));
                    }
                }
            }
            (Some(_), Some(_)) => {
                return Err(Failure::Broken(format!(
                    "{method} {id}: an unexpected request: {v}"
                )));
            }
            (Some(_), None) => {} // a notification
            (None, _) => {
                if v["id"] != json!(id) {
                    return Err(Failure::Duplicated(format!(
                        "{method} {id}: a response to another id on its stream: {v}"
                    )));
                }
                if answer.is_some() {
                    return Err(Failure::Duplicated(format!(
                        "{method} {id}: a second response: {v}"
                    )));
                }
                answer = Some(v);
            }
        }
    }
    answer.ok_or_else(|| Failure::Lost(format!("{method} {id}: the stream ended unanswered")))
}

impl StdioLink {
    async fn spawn(binary: &str, args: &[String], stateless: bool) -> Result<StdioLink, String> {
        let mut child = Command::new(binary)
            .args(["--transport", "stdio", "--log-level", "warn"])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("spawn {binary}: {e}"))?;
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut link = StdioLink {
            child,
            stdin,
            lines,
            stateless,
        };
        if !stateless {
            let init = json!({"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
                "clientInfo": {"name": "soak-cluster", "version": "0"}});
            let r = link
                .request(0, "initialize", init, Human::Absent)
                .await
                .map_err(|e| format!("initialize: {e:?}"))?;
            if r["result"]["protocolVersion"] != "2025-11-25" {
                return Err(format!("initialize: {r}"));
            }
            link.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
                .await
                .map_err(|e| format!("{e:?}"))?;
        }
        Ok(link)
    }

    async fn send(&mut self, v: &Value) -> Result<(), Failure> {
        self.stdin
            .write_all(format!("{v}\n").as_bytes())
            .await
            .map_err(|e| Failure::Broken(format!("stdin: {e}")))
    }

    async fn request(
        &mut self,
        id: u64,
        method: &str,
        mut params: Value,
        human: Human,
    ) -> Result<Value, Failure> {
        if self.stateless {
            params["_meta"] = stateless_meta();
        }
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await?;
        loop {
            let line = self
                .lines
                .next_line()
                .await
                .map_err(|e| Failure::Broken(format!("stdout: {e}")))?
                .ok_or_else(|| Failure::Lost(format!("{method} {id}: the server exited")))?;
            let v: Value = serde_json::from_str(&line)
                .map_err(|e| Failure::Broken(format!("not JSON ({e}): {line}")))?;
            match (v.get("method"), v.get("id")) {
                (Some(m), Some(_)) if m == "elicitation/create" && human != Human::Absent => {
                    if let Some(reply) = answer_to(&v, human) {
                        self.send(&reply).await?;
                    }
                }
                (Some(_), Some(_)) => {
                    return Err(Failure::Broken(format!("an unexpected request: {v}")));
                }
                (Some(_), None) => {}
                (None, _) if v["id"] == json!(id) => return Ok(v),
                // Requests are sequential here: an answer to any other id is one that
                // came a second time (or to nothing).
                (None, _) => {
                    return Err(Failure::Duplicated(format!(
                        "{method} {id}: an answer to another id: {v}"
                    )));
                }
            }
        }
    }
}

// ---- one client ----

struct Client {
    name: String,
    link: Link,
    http: reqwest::Client,
    url: String,
    next_id: u64,
    rng: Rng,
    shared: Arc<Shared>,
    /// Approved charges: count and sum of ids.
    charged: (u64, u64),
    late_kept: usize,
    ops_in_session: u32,
}

fn text_of(v: &Value) -> &str {
    v["result"]["content"][0]["text"].as_str().unwrap_or("")
}

fn is_deny(v: &Value) -> Option<String> {
    if v["result"]["isError"] != true {
        return None;
    }
    let payload: Value = serde_json::from_str(text_of(v)).ok()?;
    (payload["error"] == "authorization_required").then(|| {
        payload["detail"]
            .as_str()
            .or(payload["reason"].as_str())
            .unwrap_or("")
            .to_owned()
    })
}

impl Client {
    fn era(&self) -> &'static str {
        match &self.link {
            Link::Session(_) => "2025-11-25",
            Link::Stateless(_) => "2026-07-28",
            Link::Stdio(s) if s.stateless => "2026-07-28",
            Link::Stdio(_) => "2025-11-25",
        }
    }

    fn stateless(&self) -> bool {
        self.era() == "2026-07-28"
    }

    fn session_link(&self) -> bool {
        matches!(self.link, Link::Session(_))
    }

    /// One request, counted: Ok with the answer, or None (the failure is recorded).
    async fn ask(&mut self, method: &str, params: Value, human: Human) -> Option<Value> {
        self.next_id += 1;
        let id = self.next_id;
        self.shared.count(|t| t.requests += 1);
        let outcome = self.link.request(id, method, params, human).await;
        let name = self.name.clone();
        match outcome {
            Ok(v) => {
                self.shared.count(|t| t.answered += 1);
                Some(v)
            }
            Err(Failure::Lost(e)) => {
                self.shared.count(|t| {
                    t.lost += 1;
                    t.error(&name, e);
                });
                None
            }
            Err(Failure::Duplicated(e)) => {
                self.shared.count(|t| {
                    t.duplicated += 1;
                    t.error(&name, e);
                });
                None
            }
            Err(Failure::Broken(e)) => {
                self.shared.count(|t| t.error(&name, e));
                None
            }
        }
    }

    fn wrong(&self, what: impl std::fmt::Display) {
        let name = self.name.clone();
        self.shared.count(|t| t.error(&name, what));
    }

    async fn run(mut self, until: Instant) {
        while Instant::now() < until && !self.shared.stop.load(Ordering::Relaxed) {
            let roll = self.rng.below(100);
            match roll {
                0..40 => self.plain().await,
                40..70 => self.charge().await,
                70..90 => self.task().await,
                _ => self.churn().await,
            }
            if self.session_link() {
                self.ops_in_session += 1;
                // Drop the session for a new one now and then (never DELETEd).
                if self.ops_in_session >= 25 {
                    self.replace_session().await;
                }
            }
        }
        self.finish().await;
    }

    async fn replace_session(&mut self) {
        match open_session(&self.http, &self.url).await {
            Ok(fresh) => {
                let old = std::mem::replace(&mut self.link, Link::Session(fresh));
                self.ops_in_session = 0;
                self.shared.count(|t| {
                    t.sessions_opened += 1;
                    t.sessions_abandoned += 1;
                });
                if let Link::Session(old) = old {
                    let mut kept = self.shared.abandoned.lock();
                    if kept.len() < 200 {
                        kept.push(old);
                    }
                }
            }
            Err(e) => self.wrong(format!("open a session: {e}")),
        }
    }

    async fn plain(&mut self) {
        let who = format!("{}-{}", self.name, self.next_id + 1);
        let Some(v) = self
            .ask(
                "tools/call",
                json!({"name": "greet", "arguments": {"name": who}}),
                Human::Absent,
            )
            .await
        else {
            return;
        };
        if text_of(&v) == format!("Hello, {who}!") {
            self.shared.count(|t| t.plain += 1);
        } else {
            self.wrong(format!("greet: {v}"));
        }
    }

    async fn charge(&mut self) {
        let human = match self.rng.below(3) {
            0 => Human::Approve,
            1 => Human::Decline,
            _ => Human::Silent,
        };
        let charge_id = self.next_id + 1;
        let account = self.name.clone();
        let params = json!({"name": "charge", "arguments": {"account": account, "id": charge_id}});
        let outcome = if self.stateless() {
            let Some(first) = self.ask("tools/call", params.clone(), Human::Absent).await else {
                return;
            };
            let result = &first["result"];
            let key = result["inputRequests"]
                .as_object()
                .and_then(|m| m.keys().next().cloned());
            let (Some(key), true) = (key, result["resultType"] == "input_required") else {
                self.wrong(format!("charge: no approval round: {first}"));
                return;
            };
            let state = result["requestState"].clone();
            let response = match human {
                Human::Approve => json!({"action": "accept", "content": {"approve": true}}),
                Human::Decline => json!({"action": "decline"}),
                _ => {
                    // Silence: no retry. A few are replayed, approved, after expiry.
                    if self.late_kept < LATE_PER_CLIENT {
                        self.late_kept += 1;
                        self.shared
                            .late
                            .lock()
                            .push((account.clone(), charge_id, state, key));
                    }
                    self.shared.count(|t| t.silent += 1);
                    return;
                }
            };
            let mut retry = params;
            retry["requestState"] = state;
            retry["inputResponses"] = json!({ key: response });
            match self.ask("tools/call", retry, Human::Absent).await {
                Some(v) => v,
                None => return,
            }
        } else {
            match self.ask("tools/call", params, human).await {
                Some(v) => v,
                None => return,
            }
        };
        match human {
            Human::Approve => {
                if text_of(&outcome) == format!("charged {account} ({charge_id})") {
                    self.charged.0 += 1;
                    self.charged.1 = self.charged.1.wrapping_add(charge_id);
                    self.shared.count(|t| t.approved += 1);
                } else {
                    self.wrong(format!("approved charge: {outcome}"));
                }
            }
            Human::Decline => match is_deny(&outcome) {
                Some(d) if d.contains("decline") => self.shared.count(|t| t.declined += 1),
                _ => self.wrong(format!("declined charge: {outcome}")),
            },
            _ => match is_deny(&outcome) {
                Some(d) if d.contains("timed out") => self.shared.count(|t| t.silent += 1),
                _ => self.wrong(format!("unanswered charge: {outcome}")),
            },
        }
    }

    /// `tasks/get` until the status is one of `want` (or terminal), within PATIENCE.
    async fn poll(&mut self, task: &str, want: &[&str]) -> Option<Value> {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let v = self
                .ask("tasks/get", json!({"taskId": task}), Human::Absent)
                .await?;
            let status = v["result"]["status"].as_str().unwrap_or("").to_owned();
            if want.contains(&status.as_str())
                || ["completed", "failed", "cancelled"].contains(&status.as_str())
            {
                return Some(v["result"].clone());
            }
            if status != "working" && status != "input_required" {
                self.wrong(format!("tasks/get {task}: {v}"));
                return None;
            }
            if Instant::now() > deadline {
                self.wrong(format!("task {task} stayed {status}"));
                return None;
            }
            tokio::time::sleep(Duration::from_millis(150)).await;
        }
    }

    async fn task(&mut self) {
        let roll = self.rng.below(10);
        let stateless = self.stateless();
        // 2026-07-28: a third of them ask, and are answered with tasks/update.
        if stateless && roll >= 7 {
            return self.task_with_input().await;
        }
        let cancel = roll >= 4;
        let label = format!("{}-{}", self.name, self.next_id + 1);
        let seconds = if cancel { 60.0 } else { 0.5 };
        let mut params = json!({"name": "slow_compute",
            "arguments": {"seconds": seconds, "label": label}});
        if !stateless {
            params["task"] = json!({});
        }
        let Some(created) = self.ask("tools/call", params, Human::Absent).await else {
            return;
        };
        let result = &created["result"];
        let id = if stateless {
            if result["resultType"] != "task" {
                // A quick call may stay a call.
                if !cancel && text_of(&created) == format!("{label}: computed after 0.5 s") {
                    self.shared.count(|t| t.tasks_inline += 1);
                } else {
                    self.wrong(format!("slow_compute: {created}"));
                }
                return;
            }
            result["taskId"].as_str()
        } else {
            result["task"]["taskId"].as_str()
        };
        let Some(id) = id.map(str::to_owned) else {
            self.wrong(format!("slow_compute: no task: {created}"));
            return;
        };
        if stateless {
            let mut kept = self.shared.tasks.lock();
            if kept.len() < 100 {
                kept.push(id.clone());
            }
        }
        if cancel {
            let Some(ack) = self
                .ask("tasks/cancel", json!({"taskId": id}), Human::Absent)
                .await
            else {
                return;
            };
            let acked = if stateless {
                ack["result"]["resultType"] == "complete"
            } else {
                ack["result"]["status"] == "cancelled"
            };
            if !acked {
                self.wrong(format!("tasks/cancel: {ack}"));
                return;
            }
            let Some(t) = self.poll(&id, &["cancelled"]).await else {
                return;
            };
            if t["status"] == "cancelled" {
                self.shared.count(|t| t.tasks_cancelled += 1);
            } else {
                self.wrong(format!("a cancelled task: {t}"));
            }
            return;
        }
        let Some(t) = self.poll(&id, &["completed"]).await else {
            return;
        };
        if t["status"] != "completed" {
            self.wrong(format!("task {id}: {t}"));
            return;
        }
        let text = if stateless {
            t["result"]["content"][0]["text"].clone()
        } else {
            let Some(r) = self
                .ask("tasks/result", json!({"taskId": id}), Human::Absent)
                .await
            else {
                return;
            };
            r["result"]["content"][0]["text"].clone()
        };
        if text == format!("{label}: computed after 0.5 s").as_str() {
            self.shared.count(|t| t.tasks_completed += 1);
        } else {
            self.wrong(format!("task {id} answered {text}"));
        }
    }

    async fn task_with_input(&mut self) {
        let file = format!("{}-{}", self.name, self.next_id + 1);
        let Some(created) = self
            .ask(
                "tools/call",
                json!({"name": "confirm_delete", "arguments": {"filename": file}}),
                Human::Absent,
            )
            .await
        else {
            return;
        };
        let Some(id) = created["result"]["taskId"].as_str().map(str::to_owned) else {
            self.wrong(format!("confirm_delete: {created}"));
            return;
        };
        let Some(waiting) = self.poll(&id, &["input_required"]).await else {
            return;
        };
        let Some(key) = waiting["inputRequests"]
            .as_object()
            .and_then(|m| m.keys().next().cloned())
        else {
            self.wrong(format!("task {id} asks nothing: {waiting}"));
            return;
        };
        let Some(ack) = self
            .ask(
                "tasks/update",
                json!({"taskId": id, "inputResponses":
                    {key: {"action": "accept", "content": {"confirm": true}}}}),
                Human::Absent,
            )
            .await
        else {
            return;
        };
        if ack["result"]["resultType"] != "complete" {
            self.wrong(format!("tasks/update: {ack}"));
            return;
        }
        let Some(t) = self.poll(&id, &["completed"]).await else {
            return;
        };
        if t["result"]["content"][0]["text"] == format!("Deleted {file}").as_str() {
            self.shared.count(|t| t.tasks_updated += 1);
        } else {
            self.wrong(format!("task {id} after its update: {t}"));
        }
    }

    async fn churn(&mut self) {
        if !self.session_link() {
            let method = if self.stateless() {
                "server/discover"
            } else {
                "ping"
            };
            if let Some(v) = self.ask(method, json!({}), Human::Absent).await {
                let fine = if method == "ping" {
                    v["result"] == json!({})
                } else {
                    v["result"]["supportedVersions"].is_array()
                };
                if !fine {
                    self.wrong(format!("{method}: {v}"));
                }
            }
            return;
        }
        // A session opened, used once, abandoned.
        let mut fresh = match open_session(&self.http, &self.url).await {
            Ok(s) => Link::Session(s),
            Err(e) => return self.wrong(format!("open a session: {e}")),
        };
        self.shared.count(|t| {
            t.sessions_opened += 1;
            t.sessions_abandoned += 1;
            t.requests += 1;
        });
        self.next_id += 1;
        match fresh
            .request(self.next_id, "tools/list", json!({}), Human::Absent)
            .await
        {
            Ok(v) if v["result"]["tools"].is_array() => self.shared.count(|t| t.answered += 1),
            Ok(v) => {
                self.shared.count(|t| t.answered += 1);
                self.wrong(format!("tools/list: {v}"));
            }
            Err(e) => self.wrong(format!("tools/list on a fresh session: {e:?}")),
        }
        if let Link::Session(s) = fresh {
            let mut kept = self.shared.abandoned.lock();
            if kept.len() < 200 {
                kept.push(s);
            }
        }
    }

    async fn finish(mut self) {
        let expected = self.charged;
        if let Link::Stdio(_) = self.link {
            // Its own process: the ledger is read there, then the process ends at EOF.
            let got = self
                .ask(
                    "resources/read",
                    json!({"uri": format!("ledger://{}", self.name)}),
                    Human::Absent,
                )
                .await
                .map(|v| ledger_entry(&v));
            match got {
                Some(Some(got)) if got == expected => {}
                other => self.wrong(format!("ledger: expected {expected:?}, read {other:?}")),
            }
            if let Link::Stdio(s) = self.link {
                let StdioLink {
                    mut child, stdin, ..
                } = *s;
                drop(stdin);
                match tokio::time::timeout(Duration::from_secs(10), child.wait()).await {
                    Ok(Ok(status)) if status.success() => {}
                    other => {
                        let name = self.name.clone();
                        self.shared
                            .count(|t| t.error(&name, format!("stdio exit: {other:?}")));
                    }
                }
            }
            return;
        }
        self.shared
            .expected
            .lock()
            .insert(self.name.clone(), expected);
    }
}

/// (charges, sum of ids) from a `resources/read` of `ledger://...`.
fn ledger_entry(v: &Value) -> Option<(u64, u64)> {
    let text = v["result"]["contents"][0]["text"].as_str()?;
    let entry: Value = serde_json::from_str(text).ok()?;
    Some((entry["charges"].as_u64()?, entry["idSum"].as_u64()?))
}

// ---- resident memory ----

/// The resident memory of a replica, in KiB (0 once it is gone).
fn rss_kib(pid: i32) -> u64 {
    u32::try_from(pid).map_or(0, mcp_tests::process::rss_kib)
}

/// One sample: seconds since the start, the phase, KiB per replica.
type Sample = (f64, &'static str, Vec<u64>);

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

// ---- the run ----

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_owned())
}

/// The keys under `prefix:` in Redis, by `redis-cli --scan`.
fn redis_keys(url: &str, prefix: &str) -> Result<Vec<String>, String> {
    let out = std::process::Command::new("redis-cli")
        .args(["-u", url, "--scan", "--pattern", &format!("{prefix}:*")])
        .output()
        .map_err(|e| format!("redis-cli: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .filter(|l| !l.is_empty())
        .collect())
}

/// Keys that outlive every session and task: the deployment's epoch and the replicas'
/// heartbeats.
fn expected_to_stay(key: &str, prefix: &str) -> bool {
    let rest = key.strip_prefix(prefix).and_then(|r| r.strip_prefix(':'));
    matches!(rest, Some(r) if r == "epoch" || r.starts_with("alive:"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs replicas, Redis and a load balancer: run by .ci/scaleout.sh"]
async fn soak_with_humans_in_the_loop() {
    let (url, replicas) = mcp_tests::cluster::live_replicas();
    let seconds: u64 = env_or("SOAK_SECONDS", "60").parse().expect("SOAK_SECONDS");
    let expiry = Duration::from_secs(env_or("SOAK_EXPIRY_SECONDS", "15").parse().unwrap());
    let redis_url = std::env::var("SOAK_REDIS_URL").ok();
    let prefix = std::env::var("SOAK_REDIS_PREFIX").ok();
    let everything = std::env::var("SOAK_EVERYTHING").ok();
    let stdio_args: Vec<String> = env_or("SOAK_STDIO_ARGS", "")
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    let out = PathBuf::from(env_or(
        "SOAK_OUT",
        concat!(env!("CARGO_MANIFEST_DIR"), "/../target/scaleout"),
    ));
    std::fs::create_dir_all(&out).unwrap();
    let sample_every = Duration::from_secs((seconds / 30).clamp(2, 10));

    let http = reqwest::Client::builder()
        .no_proxy()
        .pool_max_idle_per_host(2 * HTTP_PER_ERA + 8)
        .timeout(PATIENCE)
        .build()
        .unwrap();
    let shared = Arc::new(Shared {
        tally: Mutex::new(Tally::default()),
        expected: Mutex::new(Expected::new()),
        abandoned: Mutex::new(Vec::new()),
        late: Mutex::new(Vec::new()),
        tasks: Mutex::new(Vec::new()),
        stop: AtomicBool::new(false),
    });

    // RSS of every replica, sampled from the start to the end of the expiry wait.
    let start = Instant::now();
    let samples: Arc<Mutex<Vec<Sample>>> = Arc::new(Mutex::new(Vec::new()));
    let phase: Arc<Mutex<&'static str>> = Arc::new(Mutex::new("load"));
    let sampler = {
        let samples = Arc::clone(&samples);
        let phase = Arc::clone(&phase);
        let pids: Vec<i32> = replicas.iter().map(|(p, _)| *p).collect();
        tokio::spawn(async move {
            loop {
                let row = pids.iter().map(|p| rss_kib(*p)).collect();
                let now = *phase.lock();
                samples
                    .lock()
                    .push((start.elapsed().as_secs_f64(), now, row));
                tokio::time::sleep(sample_every).await;
            }
        })
    };

    let until = start + Duration::from_secs(seconds);
    let mut clients = Vec::new();
    for c in 0..2 * HTTP_PER_ERA {
        let stateless = c % 2 == 1;
        let name = format!("{}{c:02}", if stateless { "m" } else { "h" });
        let link = if stateless {
            let mut s = StatelessHttp::new(&url).with_capabilities(stateless_caps());
            s.http = http.clone();
            Link::Stateless(s)
        } else {
            match open_session(&http, &url).await {
                Ok(s) => Link::Session(s),
                Err(e) => panic!("{name}: {e}"),
            }
        };
        if !stateless {
            shared.count(|t| t.sessions_opened += 1);
        }
        clients.push(Client {
            name,
            link,
            http: http.clone(),
            url: url.clone(),
            next_id: 0,
            rng: Rng::new(c as u64 + 1),
            shared: Arc::clone(&shared),
            charged: (0, 0),
            late_kept: 0,
            ops_in_session: 0,
        });
    }
    let mut stdio_clients = 0;
    if let Some(binary) = &everything {
        for c in 0..2 * STDIO_PER_ERA {
            let stateless = c % 2 == 1;
            let name = format!("s{}{c}", if stateless { "m" } else { "h" });
            let link = StdioLink::spawn(binary, &stdio_args, stateless)
                .await
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            stdio_clients += 1;
            clients.push(Client {
                name,
                link: Link::Stdio(Box::new(link)),
                http: http.clone(),
                url: url.clone(),
                next_id: 0,
                rng: Rng::new(1000 + c as u64),
                shared: Arc::clone(&shared),
                charged: (0, 0),
                late_kept: 0,
                ops_in_session: 0,
            });
        }
    }
    println!(
        "soak: {} HTTP clients ({HTTP_PER_ERA} per era) through {url} and {stdio_clients} stdio \
         clients for {seconds} s; RSS of {} replicas every {sample_every:?}",
        2 * HTTP_PER_ERA,
        replicas.len()
    );
    let handles: Vec<_> = clients
        .into_iter()
        .map(|c| tokio::spawn(c.run(until)))
        .collect();
    for h in handles {
        if let Err(e) = h.await {
            shared.count(|t| t.error("client", format!("panicked: {e}")));
        }
    }
    let load_ended = start.elapsed();
    *phase.lock() = "expiry";
    println!("soak: load ended after {:.1} s", load_ended.as_secs_f64());

    // The ledger on every replica, read directly: approved charges ran exactly once,
    // declined and silent ones never.
    let expected = shared.expected.lock().clone();
    let mut ledger_mismatches = Vec::new();
    let direct: Vec<StatelessHttp> = replicas
        .iter()
        .map(|(_, u)| {
            let mut s = StatelessHttp::new(u).with_capabilities(stateless_caps());
            s.http = http.clone();
            s
        })
        .collect();
    let read_ledger = |account: String| {
        let direct = direct.clone();
        async move {
            let mut sum = (0u64, 0u64);
            for (i, c) in direct.iter().enumerate() {
                let r = c
                    .request(
                        json!(i),
                        "resources/read",
                        json!({"uri": format!("ledger://{account}")}),
                    )
                    .await;
                let (n, s) = ledger_entry(&r).unwrap_or_else(|| panic!("ledger: {r}"));
                sum.0 += n;
                sum.1 = sum.1.wrapping_add(s);
            }
            sum
        }
    };
    for (account, want) in &expected {
        let got = read_ledger(account.clone()).await;
        if got != *want {
            ledger_mismatches.push(format!("{account}: expected {want:?}, ran {got:?}"));
        }
    }

    // Expiry: sessions, tasks and sealed states are gone, from the replicas and from Redis.
    let expired_at = Instant::now() + expiry;
    let mut keys_left: Option<Vec<String>> = None;
    let mut first_clean = None;
    if let (Some(redis), Some(prefix)) = (&redis_url, &prefix) {
        let during = redis_keys(redis, prefix).expect("redis-cli");
        println!(
            "soak: {} keys under {prefix}: right after the load",
            during.len()
        );
        // Poll until only the lasting keys remain, or until expiry + 10 s.
        let deadline = expired_at + Duration::from_secs(10);
        loop {
            let keys = redis_keys(redis, prefix).expect("redis-cli");
            let left: Vec<String> = keys
                .into_iter()
                .filter(|k| !expected_to_stay(k, prefix))
                .collect();
            if left.is_empty() && first_clean.is_none() {
                first_clean = Some(Instant::now().duration_since(start) - load_ended);
            }
            if Instant::now() >= deadline || (left.is_empty() && Instant::now() >= expired_at) {
                keys_left = Some(left);
                break;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    } else {
        tokio::time::sleep_until(expired_at.into()).await;
    }
    let mut after_expiry = Vec::new();
    // Abandoned sessions answer 404, on whichever replica nginx picks.
    let abandoned = std::mem::take(&mut *shared.abandoned.lock());
    let mut abandoned_alive = 0;
    for s in abandoned.iter().take(60) {
        let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
        let status = s.post(ping.to_string()).send().await.map(|r| r.status());
        if !matches!(status, Ok(StatusCode::NOT_FOUND)) {
            abandoned_alive += 1;
            after_expiry.push(format!("an abandoned session answered {status:?}"));
        }
    }
    // Expired tasks are unknown.
    let tasks = std::mem::take(&mut *shared.tasks.lock());
    let through_lb = {
        let mut s = StatelessHttp::new(&url).with_capabilities(stateless_caps());
        s.http = http.clone();
        s
    };
    for id in tasks.iter().take(30) {
        let r = through_lb
            .request(json!("t"), "tasks/get", json!({"taskId": id}))
            .await;
        if r["error"]["code"] != -32602 {
            after_expiry.push(format!("task {id} after its ttl: {r}"));
        }
    }
    // Silent approvals replayed, approved, after the state's ttl: refused, nothing runs.
    let late = std::mem::take(&mut *shared.late.lock());
    for (account, id, state, key) in &late {
        let r = through_lb
            .request(
                json!("late"),
                "tools/call",
                json!({"name": "charge", "arguments": {"account": account, "id": id},
                    "requestState": state,
                    "inputResponses": {key: {"action": "accept", "content": {"approve": true}}}}),
            )
            .await;
        if r["error"]["code"] == -32602 {
            shared.count(|t| t.late_refused += 1);
        } else {
            after_expiry.push(format!("a late approval of {account}/{id}: {r}"));
        }
    }
    // ... and the ledger did not move.
    for (account, want) in &expected {
        let got = read_ledger(account.clone()).await;
        if got != *want {
            ledger_mismatches.push(format!(
                "{account} after the late approvals: expected {want:?}, ran {got:?}"
            ));
        }
    }
    sampler.abort();
    let end = start.elapsed().as_secs_f64();
    let pids: Vec<i32> = replicas.iter().map(|(p, _)| *p).collect();
    samples
        .lock()
        .push((end, "expiry", pids.iter().map(|p| rss_kib(*p)).collect()));

    // ---- the report ----
    let samples = samples.lock().clone();
    let mut csv = String::from("t_s,phase");
    for i in 1..=replicas.len() {
        let _ = write!(csv, ",replica{i}_kib");
    }
    csv.push('\n');
    for (t, ph, row) in &samples {
        let _ = write!(csv, "{t:.1},{ph}");
        for k in row {
            let _ = write!(csv, ",{k}");
        }
        csv.push('\n');
    }
    std::fs::write(out.join("soak-rss.csv"), &csv).unwrap();

    // Warm: the first sample after the first third of the load; the last third of the load
    // must stay within 10% (at least 8 MiB) of it.
    let load: Vec<&Sample> = samples.iter().filter(|s| s.1 == "load").collect();
    let third = load_ended.as_secs_f64() / 3.0;
    let warm_at = load
        .iter()
        .position(|s| s.0 >= third)
        .unwrap_or(load.len() / 3);
    let mut rss_rows = Vec::new();
    let mut rss_failures = Vec::new();
    for (i, (pid, _)) in replicas.iter().enumerate() {
        let col: Vec<(f64, u64)> = load.iter().map(|s| (s.0, s.2[i])).collect();
        let first = col.first().map_or(0, |c| c.1);
        let warm = col.get(warm_at).map_or(0, |c| c.1);
        let last_third: Vec<u64> = col
            .iter()
            .filter(|c| c.0 >= 2.0 * third)
            .map(|c| c.1)
            .collect();
        let peak = last_third.iter().copied().max().unwrap_or(warm);
        let end_load = col.last().map_or(0, |c| c.1);
        let after = samples.last().map_or(0, |s| s.2[i]);
        let allowed = (warm / 10).max(8 * 1024);
        let flat = peak <= warm + allowed;
        if !flat {
            rss_failures.push(format!(
                "replica {} (pid {pid}): RSS {:.1} MiB warm, {:.1} MiB peak in the last third (allowed +{:.1} MiB)",
                i + 1,
                mib(warm),
                mib(peak),
                mib(allowed)
            ));
        }
        rss_rows.push(format!(
            "| replica {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:+.1} | {} |",
            i + 1,
            mib(first),
            mib(warm),
            mib(peak),
            mib(end_load),
            mib(after),
            mib(peak) - mib(warm),
            if flat { "flat" } else { "GREW" }
        ));
    }

    let t = std::mem::take(&mut *shared.tally.lock());
    let mut summary = String::new();
    let _ = writeln!(
        summary,
        "Soak: {} s of load, {} HTTP clients ({HTTP_PER_ERA} on 2025-11-25 sessions, {HTTP_PER_ERA} on 2026-07-28) through nginx to {} replicas, {stdio_clients} stdio clients.\n",
        seconds,
        2 * HTTP_PER_ERA,
        replicas.len()
    );
    let _ = writeln!(summary, "| What | Count |\n|---|---|");
    for (what, n) in [
        ("requests", t.requests),
        ("answered (exactly once)", t.answered),
        ("lost", t.lost),
        ("duplicated", t.duplicated),
        ("errors", t.errors.len() as u64),
        ("plain calls", t.plain),
        ("approvals: approved (ran once)", t.approved),
        ("approvals: declined (never ran)", t.declined),
        ("approvals: silent (never ran)", t.silent),
        (
            "silent approvals replayed after expiry, refused",
            t.late_refused,
        ),
        ("tasks completed (polled)", t.tasks_completed),
        ("tasks that stayed quick calls", t.tasks_inline),
        ("tasks cancelled", t.tasks_cancelled),
        ("tasks answered with tasks/update", t.tasks_updated),
        ("sessions opened", t.sessions_opened),
        ("sessions abandoned (no DELETE)", t.sessions_abandoned),
        ("ledger mismatches", ledger_mismatches.len() as u64),
        (
            "keys left in Redis after expiry",
            keys_left.as_ref().map_or(0, |k| k.len() as u64),
        ),
        (
            "abandoned sessions still answering after expiry",
            abandoned_alive,
        ),
    ] {
        let _ = writeln!(summary, "| {what} | {n} |");
    }
    if let Some(clean) = first_clean {
        let _ = writeln!(
            summary,
            "\nRedis held only `epoch` and the heartbeats {:.1} s after the load.",
            clean.as_secs_f64()
        );
    }
    let _ = writeln!(
        summary,
        "\nRSS (MiB; warm = first sample after the first third of the load, peak = the last third's highest, after = the end of the expiry wait):\n"
    );
    let _ = writeln!(
        summary,
        "| Replica | start | warm | peak (last third) | end of load | after expiry | peak - warm | |\n|---|---|---|---|---|---|---|---|"
    );
    for row in &rss_rows {
        let _ = writeln!(summary, "{row}");
    }
    std::fs::write(out.join("soak-summary.md"), &summary).unwrap();
    println!("\n{summary}");
    for e in t.errors.iter().take(20) {
        println!("error: {}", &e[..e.len().min(400)]);
    }
    for m in ledger_mismatches.iter().take(20) {
        println!("ledger: {m}");
    }
    if let Some(keys) = &keys_left {
        for k in keys.iter().take(20) {
            println!("left in Redis: {k}");
        }
    }
    for a in after_expiry.iter().take(20) {
        println!("after expiry: {a}");
    }

    assert!(t.requests > 0 && t.approved > 0 && t.declined > 0 && t.silent > 0);
    assert!(t.tasks_cancelled > 0 && t.sessions_abandoned > 0);
    assert_eq!(t.lost, 0, "lost answers");
    assert_eq!(t.duplicated, 0, "duplicated answers");
    assert!(t.errors.is_empty(), "{} errors", t.errors.len());
    assert_eq!(t.requests, t.answered, "every request answered once");
    assert!(ledger_mismatches.is_empty(), "{ledger_mismatches:?}");
    assert!(after_expiry.is_empty(), "{after_expiry:?}");
    if let Some(keys) = keys_left {
        assert!(keys.is_empty(), "{} keys left in Redis", keys.len());
    }
    assert!(rss_failures.is_empty(), "{rss_failures:?}");
}
