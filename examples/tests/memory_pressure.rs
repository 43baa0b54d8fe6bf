//! The `everything` binary in a real memory cgroup: driven towards its limit by slow calls
//! holding large arguments, it refuses new work with 503 `memory_pressure` before the
//! kernel would kill it, keeps answering pings and finishing the calls it took, and takes
//! work again once they are done. Needs root to make the cgroup; skips without it unless
//! `MCP_REQUIRE_CGROUP=1`.

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use mcp_tests::cgroup::{MemoryCgroup, create_or_skip};
use mcp_tests::http::McpHttp;
use reqwest::StatusCode;
use serde_json::json;

const EVERYTHING: &str = env!("CARGO_BIN_EXE_everything");
const MIB: u64 = 1 << 20;
/// The group's limit.
const LIMIT: u64 = 128 * MIB;
/// Refusing from this share of it leaves room for the calls already read when the
/// sampler (every 100 ms) sees the mark crossed.
const HIGH_WATER: u64 = 70;
/// Each call's argument: a few copies of it (the body, the decoded string) stay alive
/// while the call sleeps.
const LABEL: usize = 4 << 20;

/// The server in its group, killed (and the group removed) when dropped.
struct Served {
    child: Child,
    url: String,
    stderr: mpsc::Receiver<String>,
    /// Every log line so far.
    seen: Vec<String>,
    // Dropped after the child is reaped.
    group: MemoryCgroup,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Served {
    fn start(group: MemoryCgroup) -> Served {
        let mut child = group
            .command(EVERYTHING.as_ref())
            .args(["--transport", "http", "--port", "0"])
            .args(["--memory-high-water", &HIGH_WATER.to_string()])
            .args(["--max-message-size", "8MiB"])
            .env("MCP_LOG_LEVEL", "info")
            .env_remove("MCP_MEMORY_LIMIT")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn everything");
        let (tx, stderr) = mpsc::channel();
        let out = BufReader::new(child.stderr.take().unwrap());
        std::thread::spawn(move || {
            for line in out.lines().map_while(Result::ok) {
                eprintln!("[everything] {line}");
                let _ = tx.send(line);
            }
        });
        let mut served = Served {
            child,
            url: String::new(),
            stderr,
            seen: Vec::new(),
            group,
        };
        let boot = served.wait_for_line("Streamable HTTP at http://", Duration::from_secs(30));
        let at = boot.split("Streamable HTTP at ").nth(1).unwrap();
        served.url = at.split_whitespace().next().unwrap().to_owned();
        served
    }

    /// The first log line containing `text`, waiting for it if it has not come yet.
    fn wait_for_line(&mut self, text: &str, within: Duration) -> String {
        if let Some(line) = self.seen.iter().find(|l| l.contains(text)) {
            return line.clone();
        }
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stderr.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if line.contains(text) {
                        return line;
                    }
                }
                Err(_) => panic!("no log line with {text:?} within {within:?}"),
            }
        }
    }

    /// How many log lines so far contain `text`.
    fn count(&mut self, text: &str) -> usize {
        self.seen.extend(self.stderr.try_iter());
        self.seen.iter().filter(|l| l.contains(text)).count()
    }

    fn alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn near_its_cgroup_limit_the_server_refuses_new_work_and_is_not_killed() {
    let Some(group) = create_or_skip("mcp-memory-pressure", LIMIT) else {
        return;
    };
    let started = Instant::now();
    let mut server = tokio::task::block_in_place(|| Served::start(group));
    let boot = tokio::task::block_in_place(|| {
        server.wait_for_line("new work is refused from", Duration::from_secs(5))
    });
    assert!(boot.contains("of the 128 MiB memory limit"), "{boot}");
    let mut client = McpHttp::new(server.url.clone());
    client.initialize("2025-11-25", json!({})).await;

    // Calls that hold 4 MiB each for a few seconds, one every 150 ms (the sampler reads
    // every 100 ms), until one is refused.
    let label = "x".repeat(LABEL);
    let mut calls = Vec::new();
    let mut refusal = None;
    for id in 1..=40u64 {
        let mut c = client.clone();
        let params = json!({"name": "slow_compute", "arguments": {"seconds": 3, "label": label}});
        calls.push(tokio::spawn(async move {
            c.exchange(json!(id), "tools/call", params).await
        }));
        tokio::time::sleep(Duration::from_millis(150)).await;
        // A running call takes 3 s: whatever has ended already was refused.
        if let Some(i) = calls.iter().position(|c| c.is_finished()) {
            let answer = calls.remove(i).await.unwrap();
            assert_eq!(
                answer.status,
                StatusCode::SERVICE_UNAVAILABLE,
                "{:?}",
                answer.response
            );
            refusal = Some(answer.response);
            break;
        }
    }
    let body = refusal.expect("a call refused before the 40th");
    assert!(
        body["id"].is_u64(),
        "the refusal answers its request: {body}"
    );
    assert_eq!(body["error"]["code"], -32030);
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.starts_with("memory_pressure: "), "{message}");
    assert_eq!(body["error"]["data"]["limitBytes"], LIMIT);
    let used_at_refusal = body["error"]["data"]["usedBytes"].as_u64().unwrap();
    assert!(used_at_refusal > LIMIT / 2, "{used_at_refusal}");
    tokio::task::block_in_place(|| {
        server.wait_for_line(
            "memory pressure: refusing new requests",
            Duration::from_secs(5),
        )
    });

    // Under pressure: a new session and another call get 503 with Retry-After; a ping and
    // a cancellation (of nothing) go through.
    let fresh = McpHttp::new(server.url.clone());
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "late", "version": "1"}}});
    let r = fresh.post(init.to_string()).send().await.unwrap();
    assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(r.headers()["retry-after"], "2");
    let ping = client.exchange(json!("p"), "ping", json!({})).await;
    assert_eq!(ping.status, StatusCode::OK, "{:?}", ping.response);
    assert_eq!(ping.response["result"], json!({}));
    let cancel = json!({"requestId": 999, "reason": "test"});
    assert_eq!(
        client.notify("notifications/cancelled", Some(cancel)).await,
        StatusCode::ACCEPTED
    );

    // Every call taken runs to its end; those sent after the first refusal may have been
    // refused too.
    let (mut taken, mut refused) = (0, 1);
    for call in calls {
        let answer = call.await.unwrap();
        if answer.status == StatusCode::SERVICE_UNAVAILABLE {
            assert_eq!(answer.response["error"]["code"], -32030);
            refused += 1;
            continue;
        }
        assert_eq!(answer.status, StatusCode::OK);
        let text = answer.response["result"]["content"][0]["text"]
            .as_str()
            .unwrap();
        assert!(
            text.ends_with(": computed after 3 s"),
            "{}",
            &text[text.len() - 40..]
        );
        taken += 1;
    }
    assert!(
        taken >= 2,
        "only {taken} calls were taken before the first refusal"
    );

    // With the calls done and their memory released, new work is taken again.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut id = 1000;
    loop {
        id += 1;
        let greet = json!({"name": "greet", "arguments": {"name": "again"}});
        let answer = client.exchange(json!(id), "tools/call", greet).await;
        if answer.status == StatusCode::OK {
            assert_eq!(
                answer.response["result"]["content"][0]["text"],
                "Hello, again!"
            );
            break;
        }
        assert_eq!(answer.status, StatusCode::SERVICE_UNAVAILABLE);
        assert!(
            Instant::now() < deadline,
            "still refused: {:?}",
            answer.response
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tokio::task::block_in_place(|| {
        server.wait_for_line("memory pressure over", Duration::from_secs(5))
    });

    // One warning on entering, one line on leaving, each time.
    let entered = server.count("memory pressure: refusing new requests");
    assert!(entered >= 1);
    assert_eq!(server.count("memory pressure over"), entered);

    // It was never killed.
    assert!(server.alive(), "the server exited");
    let group = &server.group;
    let oom_kills = group.oom_kills();
    assert!(
        matches!(oom_kills, Some(0) | None),
        "OOM kills: {oom_kills:?}"
    );
    eprintln!(
        "limit {} MiB; refusing from {} MiB; first refusal at {:.1} MiB; {taken} calls taken, \
         {refused} refused, {entered} crossing(s); peak usage {:.1} MiB; failcnt {}; oom_kill {oom_kills:?}; {:.1} s",
        LIMIT / MIB,
        LIMIT * HIGH_WATER / 100 / MIB,
        used_at_refusal as f64 / MIB as f64,
        group.peak().unwrap_or(0) as f64 / MIB as f64,
        group.read("memory.failcnt").trim(),
        started.elapsed().as_secs_f64(),
    );
}
