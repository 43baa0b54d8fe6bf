//! A throwaway `redis-server` for tests: started from `PATH` on a random loopback port,
//! with no persistence, and killed when dropped.
//!
//! When `redis-server` is not installed, [`RedisServer::start`] prints a line saying the
//! test is skipped and returns `None`, unless `MCP_REQUIRE_REDIS=1` is set (CI sets it),
//! in which case it panics: a run that must prove the Redis backend cannot pass without it.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `redis-server`.
pub struct RedisServer {
    child: Child,
    port: u16,
}

/// Whether the environment demands Redis (`MCP_REQUIRE_REDIS=1`).
pub fn required() -> bool {
    std::env::var("MCP_REQUIRE_REDIS").is_ok_and(|v| v == "1" || v == "true")
}

impl RedisServer {
    /// Starts one for the test `test`, or returns `None` (with a "skipped" line) when
    /// `redis-server` is not installed and Redis is not required.
    pub fn start(test: &str) -> Option<RedisServer> {
        let installed = Command::new("redis-server")
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !installed {
            assert!(
                !required(),
                "{test}: MCP_REQUIRE_REDIS=1 but redis-server is not on PATH (apt-get install redis-server)"
            );
            println!(
                "{test}: skipped (redis-server is not on PATH; set MCP_REQUIRE_REDIS=1 to fail instead)"
            );
            return None;
        }
        // A free port: bind one, then let redis take it. A race with another process is
        // possible but unlikely; the start-up check below catches it.
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free loopback port")
            .port();
        let child = Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--daemonize",
                "no",
                "--loglevel",
                "warning",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn redis-server");
        let mut server = RedisServer { child, port };
        let deadline = Instant::now() + Duration::from_secs(10);
        while !server.answers() {
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("{test}: redis-server exited at start ({status})");
            }
            assert!(
                Instant::now() < deadline,
                "{test}: redis-server did not answer on port {port} within 10 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(server)
    }

    /// `redis://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    fn answers(&self) -> bool {
        use std::io::{Read as _, Write as _};
        let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
        if s.write_all(b"PING\r\n").is_err() {
            return false;
        }
        let mut buf = [0u8; 7];
        s.read_exact(&mut buf).is_ok() && &buf == b"+PONG\r\n"
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Which backend a scale-out scenario runs on.
#[derive(Clone, Copy, Debug)]
pub enum BackendKind {
    /// `MemoryBackend`: replicas in this process.
    Memory,
    /// `RedisBackend` on a throwaway [`RedisServer`].
    Redis,
}

/// Declares a test module per scenario, with a test on each backend:
/// `on_both_backends!(scenario_a, scenario_b)` calls `scenario_a(BackendKind::Memory)` and
/// `scenario_a(BackendKind::Redis)`, each on a two-worker runtime.
#[macro_export]
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn memory() {
                super::$name($crate::redis::BackendKind::Memory).await
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn redis() {
                super::$name($crate::redis::BackendKind::Redis).await
            }
        }
    )*};
}
