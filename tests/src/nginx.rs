//! A throwaway nginx in front of replicas on loopback, configured per test: the load
//! balancer of the README's "Deploying" section by default ([`Balancer::default`]), with
//! knobs for the variants the fault tests need. It runs as one process (`master_process
//! off`, so killing it leaves no worker behind), writes its files in a directory of its
//! own, and is stopped when dropped.
//!
//! Beyond the README's configuration it only observes: every response carries an
//! `X-Upstream` header naming the replica(s) nginx tried (`$upstream_addr`), and the access
//! log records the same per request, so a test knows which replica served what and whether
//! nginx retried.
//!
//! When nginx is not installed, [`find`] says the test is skipped, unless
//! `MCP_REQUIRE_REDIS=1` is set (CI sets it and installs nginx), in which case it panics.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::redis::{free_port, required};

/// How nginx balances and retries; [`Balancer::default`] is the README's configuration.
#[derive(Clone, Debug)]
pub struct Balancer {
    /// `max_fails` of every upstream server: failures within `fail_timeout` that take it
    /// out of the rotation for `fail_timeout` (0: never taken out).
    pub max_fails: u32,
    /// `fail_timeout` of every upstream server.
    pub fail_timeout: Duration,
    /// `proxy_read_timeout`: how long nginx waits between two reads from a replica.
    pub read_timeout: Duration,
    /// `proxy_next_upstream`: when nginx tries another replica.
    pub next_upstream: &'static str,
    /// `keepalive` of the upstream block (idle connections kept to the replicas).
    pub keepalive: u32,
}

impl Default for Balancer {
    fn default() -> Self {
        Balancer {
            max_fails: 1,
            fail_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(3600),
            next_upstream: "error timeout",
            keepalive: 32,
        }
    }
}

/// nginx's spelling of a duration, in the largest unit that divides it (`1h`, `10s`,
/// `300ms`).
fn nginx_time(d: Duration) -> String {
    let ms = d.as_millis();
    for (unit, size) in [("h", 3_600_000), ("m", 60_000), ("s", 1000)] {
        if ms > 0 && ms.is_multiple_of(size) {
            return format!("{}{unit}", ms / size);
        }
    }
    format!("{ms}ms")
}

impl Balancer {
    /// The `nginx.conf` that listens on `port`, balances over `upstreams` and keeps its
    /// files under `dir`.
    pub fn config(&self, port: u16, upstreams: &[SocketAddr], dir: &Path) -> String {
        let dir = dir.display();
        let servers: String = upstreams
            .iter()
            .map(|a| {
                format!(
                    "    server {a} max_fails={} fail_timeout={};\n",
                    self.max_fails,
                    nginx_time(self.fail_timeout)
                )
            })
            .collect();
        format!(
            r#"# The load balancer of the README's "Deploying" section, on loopback, for one test.
daemon off;
master_process off;
pid {dir}/nginx.pid;
error_log {dir}/error.log info;
events {{ worker_connections 1024; }}
http {{
  log_format upstream '$request_method $status upstream=$upstream_addr';
  access_log {dir}/access.log upstream;
  client_body_temp_path {dir}/tmp-body;
  proxy_temp_path {dir}/tmp-proxy;
  fastcgi_temp_path {dir}/tmp-fastcgi;
  uwsgi_temp_path {dir}/tmp-uwsgi;
  scgi_temp_path {dir}/tmp-scgi;

  upstream mcp_replicas {{
{servers}    keepalive {keepalive};
  }}

  server {{
    listen 127.0.0.1:{port};
    location / {{
        proxy_pass http://mcp_replicas;
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_set_header Host $http_host;
        proxy_buffering off;
        proxy_cache off;
        proxy_read_timeout {read_timeout};
        proxy_next_upstream {next_upstream};
        # Observation only: which replica(s) nginx tried for this response.
        add_header X-Upstream $upstream_addr always;
    }}
  }}
}}
"#,
            keepalive = self.keepalive,
            read_timeout = nginx_time(self.read_timeout),
            next_upstream = self.next_upstream,
        )
    }
}

/// The nginx binary: on `PATH`, or `/usr/sbin/nginx` (Debian's, not on a user's `PATH`).
/// `None`, with a line saying `test` is skipped, when there is none and nginx is not
/// required; panics when it is (`MCP_REQUIRE_REDIS=1`).
pub fn find(test: &str) -> Option<PathBuf> {
    let runs = |p: &Path| {
        Command::new(p)
            .arg("-v")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let found = [PathBuf::from("nginx"), PathBuf::from("/usr/sbin/nginx")]
        .into_iter()
        .find(|p| runs(p));
    if found.is_none() {
        assert!(
            !required(),
            "{test}: MCP_REQUIRE_REDIS=1 but nginx is not installed (apt-get install nginx)"
        );
        println!(
            "{test}: skipped (nginx is not installed; set MCP_REQUIRE_REDIS=1 to fail instead)"
        );
    }
    found
}

/// One request as the access log recorded it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Logged {
    /// The HTTP method.
    pub method: String,
    /// The status nginx answered.
    pub status: u16,
    /// The replicas nginx tried, in order (more than one: it retried).
    pub upstreams: Vec<String>,
}

/// A running nginx.
pub struct Nginx {
    child: Option<Child>,
    port: u16,
    dir: PathBuf,
}

impl Nginx {
    /// Writes the configuration of `balancer` over `upstreams` into `dir` and starts nginx
    /// (`binary`) on a free loopback port, returning once it accepts connections.
    pub fn start(
        binary: &Path,
        balancer: &Balancer,
        upstreams: &[SocketAddr],
        dir: &Path,
    ) -> Nginx {
        std::fs::create_dir_all(dir).expect("nginx's directory");
        let port = free_port();
        let conf = dir.join("nginx.conf");
        std::fs::write(&conf, balancer.config(port, upstreams, dir)).expect("write nginx.conf");
        let child = Command::new(binary)
            .arg("-e")
            .arg(dir.join("error.log"))
            .arg("-c")
            .arg(&conf)
            .arg("-p")
            .arg(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn nginx");
        let mut nginx = Nginx {
            child: Some(child),
            port,
            dir: dir.to_owned(),
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Some(Ok(Some(status))) = nginx.child.as_mut().map(Child::try_wait) {
                panic!("nginx exited at start ({status}):\n{}", nginx.error_log());
            }
            assert!(
                Instant::now() < deadline,
                "nginx did not listen on {port} within 20 s:\n{}",
                nginx.error_log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        nginx
    }

    /// `http://127.0.0.1:<port><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Its error log so far.
    pub fn error_log(&self) -> String {
        std::fs::read_to_string(self.dir.join("error.log")).unwrap_or_default()
    }

    /// The access log once `complete` holds for it, or as it is after 5 s: nginx writes a
    /// request's line after its response has gone out, so a client that has read every
    /// answer can still be ahead of the log.
    pub async fn access_log_when(&self, complete: impl Fn(&[Logged]) -> bool) -> Vec<Logged> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            let log = self.access_log();
            if complete(&log) || std::time::Instant::now() >= deadline {
                return log;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }

    /// Every request it finished so far (a stream is logged when it ends).
    pub fn access_log(&self) -> Vec<Logged> {
        std::fs::read_to_string(self.dir.join("access.log"))
            .unwrap_or_default()
            .lines()
            .filter_map(|line| {
                let (request, upstreams) = line.split_once(" upstream=")?;
                let (method, status) = request.split_once(' ')?;
                Some(Logged {
                    method: method.to_owned(),
                    status: status.parse().ok()?,
                    upstreams: upstreams
                        .split(", ")
                        .filter(|u| *u != "-")
                        .map(str::to_owned)
                        .collect(),
                })
            })
            .collect()
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
