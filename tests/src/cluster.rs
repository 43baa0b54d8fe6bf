//! A cluster of real processes for the load-balancer fault tests: a throwaway
//! `redis-server`, N replicas of the `everything` example binary sharing it (with
//! `--redis-url` and one `--state-key-file`), and a real nginx in front ([`crate::nginx`]).
//! A test kills (SIGKILL, as a crash), freezes (SIGSTOP) and restarts single replicas;
//! everything is stopped when the cluster is dropped.
//!
//! The replicas are `target/<profile>/everything`, which `cargo test --workspace` builds;
//! `cargo test -p mcp-tests` alone does not (build it first with `cargo build -p
//! mcp-examples --bin everything`). When it, nginx or `redis-server` is missing,
//! [`Cluster::start`] says the test is skipped and returns `None`, unless
//! `MCP_REQUIRE_REDIS=1` (CI), in which case it panics.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::nginx::{Balancer, Nginx};
use crate::redis::{RedisServer, free_port, required};

/// How a [`Cluster`] is set up.
#[derive(Clone, Debug)]
pub struct Options {
    /// How many replicas.
    pub replicas: usize,
    /// Options every replica gets beyond the ones that make it a replica (e.g.
    /// `--sse-keep-alive 500ms`).
    pub replica_args: Vec<String>,
    /// How nginx balances.
    pub balancer: Balancer,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            replicas: 3,
            replica_args: Vec::new(),
            balancer: Balancer::default(),
        }
    }
}

/// One replica process.
struct Replica {
    child: Option<Child>,
    addr: SocketAddr,
    log: PathBuf,
}

/// Redis, the replicas and nginx, for one test.
pub struct Cluster {
    replicas: Vec<Replica>,
    nginx: Nginx,
    binary: PathBuf,
    args: Vec<String>,
    dir: PathBuf,
    _redis: RedisServer,
}

/// The `everything` binary next to this test binary, if it was built; says the test is
/// skipped (or panics, when required) if not.
fn everything(test: &str) -> Option<PathBuf> {
    let binary = crate::process::binary("everything");
    if binary.exists() {
        return Some(binary);
    }
    assert!(
        !required(),
        "{test}: MCP_REQUIRE_REDIS=1 but {} is not built (cargo build -p mcp-examples --bin everything)",
        binary.display()
    );
    println!(
        "{test}: skipped ({} is not built: cargo build -p mcp-examples --bin everything)",
        binary.display()
    );
    None
}

impl Cluster {
    /// Starts Redis, `options.replicas` replicas and nginx for the test `test`, returning
    /// once nginx and every replica accept connections. `None` (with a line saying the test
    /// is skipped) when something it needs is not installed and `MCP_REQUIRE_REDIS` is not
    /// set. Blocks the calling thread while they start.
    pub fn start(test: &str, options: Options) -> Option<Cluster> {
        let binary = everything(test)?;
        let nginx_binary = crate::nginx::find(test)?;
        let redis = RedisServer::start(test)?;
        let dir = std::env::temp_dir().join(format!("mcp-lb-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("the cluster's directory");
        // The key every replica seals requestState with: the same file for all of them.
        let key = dir.join("state.key");
        let secret: String = (0..4).map(|_| format!("{:016x}", rand_u64())).collect();
        std::fs::write(&key, secret).expect("write the state key");
        let mut args: Vec<String> = [
            "--transport",
            "http",
            "--log-level",
            "warn",
            "--redis-url",
            &redis.url(),
            "--redis-prefix",
            &format!("lb-{test}-{}", std::process::id()),
            "--state-key-file",
            &key.display().to_string(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.extend(options.replica_args.iter().cloned());
        let mut replicas: Vec<Replica> = (0..options.replicas)
            .map(|i| Replica {
                child: None,
                addr: SocketAddr::from(([127, 0, 0, 1], free_port())),
                log: dir.join(format!("replica{i}.log")),
            })
            .collect();
        for r in &mut replicas {
            r.child = Some(spawn(&binary, &args, r));
        }
        for r in &mut replicas {
            // Another process may have taken the port since it was picked: a new one then,
            // as nobody knows this replica's address yet.
            let mut tries = 0;
            while let Err(log) = wait_listening(r) {
                tries += 1;
                assert!(
                    tries < 5 && log.contains("Address already in use"),
                    "the replica on {} exited at start:\n{log}",
                    r.addr
                );
                r.addr = SocketAddr::from(([127, 0, 0, 1], free_port()));
                r.child = Some(spawn(&binary, &args, r));
            }
        }
        let upstreams: Vec<SocketAddr> = replicas.iter().map(|r| r.addr).collect();
        let nginx = Nginx::start(
            &nginx_binary,
            &options.balancer,
            &upstreams,
            &dir.join("nginx"),
        );
        Some(Cluster {
            replicas,
            nginx,
            binary,
            args,
            dir,
            _redis: redis,
        })
    }

    /// The MCP endpoint through nginx.
    pub fn url(&self) -> String {
        self.nginx.url("/mcp")
    }

    /// The MCP endpoint of replica `i`, bypassing nginx.
    pub fn replica_url(&self, i: usize) -> String {
        format!("http://{}/mcp", self.replicas[i].addr)
    }

    /// The address of replica `i` (`127.0.0.1:<port>`), as nginx logs it.
    pub fn replica_addr(&self, i: usize) -> String {
        self.replicas[i].addr.to_string()
    }

    /// How many replicas there are (dead ones included).
    pub fn len(&self) -> usize {
        self.replicas.len()
    }

    /// Whether the cluster has no replica.
    pub fn is_empty(&self) -> bool {
        self.replicas.is_empty()
    }

    /// nginx.
    pub fn nginx(&self) -> &Nginx {
        &self.nginx
    }

    /// The replica whose address is `upstream` (`127.0.0.1:<port>`).
    pub fn replica_at(&self, upstream: &str) -> Option<usize> {
        self.replicas
            .iter()
            .position(|r| r.addr.to_string() == upstream.trim())
    }

    /// The replica that served `response` through nginx (the last one nginx tried, from
    /// its `X-Upstream` header).
    pub fn served_by(&self, response: &reqwest::Response) -> usize {
        let header = response
            .headers()
            .get("x-upstream")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_else(|| panic!("no X-Upstream header: not through nginx? {response:?}"));
        let last = header.rsplit(", ").next().unwrap_or_default();
        self.replica_at(last)
            .unwrap_or_else(|| panic!("X-Upstream {header:?} names no replica"))
    }

    /// Kills replica `i` with SIGKILL, as a crash would, and reaps it: its sockets are
    /// closed when this returns.
    pub fn kill(&mut self, i: usize) {
        if let Some(mut child) = self.replicas[i].child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Freezes replica `i` (SIGSTOP): its connections stay open and the kernel still
    /// accepts new ones, but it reads and answers nothing.
    pub fn freeze(&self, i: usize) {
        let pid = self.replicas[i]
            .child
            .as_ref()
            .expect("a running replica")
            .id();
        let status = Command::new("kill")
            .args(["-STOP", &pid.to_string()])
            .status()
            .expect("run kill(1)");
        assert!(status.success(), "kill -STOP {pid}");
    }

    /// Starts replica `i` again, on its address, after [`Cluster::kill`]; returns once it
    /// accepts connections. It is a new process: a new replica id, nothing in memory.
    pub fn restart(&mut self, i: usize) {
        self.kill(i);
        let r = &mut self.replicas[i];
        r.child = Some(spawn(&self.binary, &self.args, r));
        if let Err(log) = wait_listening(r) {
            panic!("the replica on {} exited at restart:\n{log}", r.addr);
        }
    }

    /// What replica `i` wrote on stderr (its log, at `warn`), across restarts.
    pub fn replica_log(&self, i: usize) -> String {
        std::fs::read_to_string(&self.replicas[i].log).unwrap_or_default()
    }

    /// Panics if any replica panicked (a fault must never panic the server).
    pub fn assert_no_replica_panicked(&self) {
        for i in 0..self.replicas.len() {
            let log = self.replica_log(i);
            assert!(!log.contains("panicked"), "replica {i} panicked:\n{log}");
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for i in 0..self.replicas.len() {
            self.kill(i);
        }
        if std::thread::panicking() {
            // What the processes said, for the failure's report.
            for i in 0..self.replicas.len() {
                eprintln!(
                    "--- replica {i} ({}) ---\n{}",
                    self.replicas[i].addr,
                    self.replica_log(i)
                );
            }
            eprintln!("--- nginx error log ---\n{}", self.nginx.error_log());
        } else {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// Starts the replica `r` with `args`, its stderr appended to its log.
fn spawn(binary: &Path, args: &[String], r: &Replica) -> Child {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&r.log)
        .expect("the replica's log");
    Command::new(binary)
        .args(args)
        .arg("--bind")
        .arg(r.addr.to_string())
        // The options come from the command line only.
        .env_remove("MCP_REDIS_URL")
        .env_remove("MCP_STATE_KEY")
        .env_remove("MCP_STATE_KEY_FILE")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("spawn a replica")
}

/// Waits until replica `r` accepts connections (it joins Redis before it listens), within
/// 30 s; panics if it does not. When the replica exits instead, `Err` with its log.
///
/// A connection accepted while the replica has already exited was answered by someone
/// else on its port, so the replica is asked again after a successful connect.
fn wait_listening(r: &mut Replica) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let connected = std::net::TcpStream::connect(r.addr).is_ok();
        if let Some(Ok(Some(status))) = r.child.as_mut().map(Child::try_wait) {
            r.child = None;
            let log = std::fs::read_to_string(&r.log).unwrap_or_default();
            return Err(format!("({status})\n{log}"));
        }
        if connected {
            return Ok(());
        }
        assert!(
            Instant::now() < deadline,
            "the replica on {} did not listen within 30 s",
            r.addr
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// 64 random bits from the standard library's per-process hasher keys (no RNG crate).
fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos(),
    );
    h.finish()
}

/// What `.ci/scaleout.sh` hands the live tests it runs: the load balancer's URL
/// (`SCALEOUT_URL`) and its replicas as `(pid, url)` (`SCALEOUT_REPLICAS`, `pid=url,...`).
pub fn live_replicas() -> (String, Vec<(i32, String)>) {
    let url = std::env::var("SCALEOUT_URL").expect("SCALEOUT_URL");
    let replicas = std::env::var("SCALEOUT_REPLICAS")
        .expect("SCALEOUT_REPLICAS")
        .split(',')
        .map(|r| {
            let (pid, url) = r.split_once('=').expect("<pid>=<url>");
            (pid.parse().expect("a pid"), url.to_owned())
        })
        .collect();
    (url, replicas)
}
