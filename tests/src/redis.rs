//! A throwaway `redis-server` for tests: started from `PATH` on a random loopback port,
//! with no persistence (or, for the fault tests, an append-only file of its own), and
//! killed when dropped. The fault tests also kill and restart it, and send it commands.
//!
//! When `redis-server` is not installed, [`RedisServer::start`] prints a line saying the
//! test is skipped and returns `None`, unless `MCP_REQUIRE_REDIS=1` is set (CI sets it),
//! in which case it panics: a run that must prove the Redis backend cannot pass without it.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `redis-server`.
pub struct RedisServer {
    child: Option<Child>,
    port: u16,
    /// The directory of its append-only file, when it persists.
    dir: Option<std::path::PathBuf>,
}

/// Whether the environment demands Redis (`MCP_REQUIRE_REDIS=1`).
pub fn required() -> bool {
    std::env::var("MCP_REQUIRE_REDIS").is_ok_and(|v| v == "1" || v == "true")
}

/// Whether `redis-server` is on `PATH`; when it is not, says the test is skipped (or
/// panics when Redis is required).
fn installed(test: &str) -> bool {
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
    }
    installed
}

impl RedisServer {
    /// Starts one for the test `test`, or returns `None` (with a "skipped" line) when
    /// `redis-server` is not installed and Redis is not required.
    pub fn start(test: &str) -> Option<RedisServer> {
        RedisServer::launch(test, None)
    }

    /// [`RedisServer::start`], persisting every write before it answers (`appendonly yes`,
    /// `appendfsync always`) in a directory of its own, so that a restart keeps the data.
    pub fn start_persistent(test: &str) -> Option<RedisServer> {
        static DIRS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = DIRS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("mcp-redis-{test}-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a directory for the append-only file");
        RedisServer::launch(test, Some(dir))
    }

    fn launch(test: &str, dir: Option<std::path::PathBuf>) -> Option<RedisServer> {
        if !installed(test) {
            return None;
        }
        // A free port: bind one, then let redis take it. A race with another process is
        // possible but unlikely; the start-up check below catches it.
        let mut server = RedisServer {
            child: None,
            port: free_port(),
            dir,
        };
        server.spawn(test);
        Some(server)
    }

    fn spawn(&mut self, test: &str) {
        let port = self.port.to_string();
        let mut args = vec![
            "--port",
            &port,
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--daemonize",
            "no",
            "--loglevel",
            "warning",
        ];
        let dir;
        match &self.dir {
            Some(d) => {
                dir = d.display().to_string();
                args.extend([
                    "--dir",
                    &dir,
                    "--appendonly",
                    "yes",
                    "--appendfsync",
                    "always",
                ]);
            }
            None => args.extend(["--appendonly", "no"]),
        }
        let child = Command::new("redis-server")
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn redis-server");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self.answers() {
            if let Some(Ok(Some(status))) = self.child.as_mut().map(Child::try_wait) {
                panic!("{test}: redis-server exited at start ({status})");
            }
            assert!(
                Instant::now() < deadline,
                "{test}: redis-server did not answer on port {port} within 10 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kills it (SIGKILL, as a crash would): the port stops answering.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Kills it and starts it again on the same port (with the same append-only file when
    /// it persists; empty otherwise), returning once it answers.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn("restart");
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Sends one command on a connection of its own and returns the first line of the
    /// reply (`+OK`, `:3`, `-ERR ...`, `$5` ...).
    pub fn command(&self, args: &[&str]) -> String {
        use std::io::{BufRead as _, Write as _};
        let mut s = std::net::TcpStream::connect(("127.0.0.1", self.port)).expect("connect");
        let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
        let mut frame = format!("*{}\r\n", args.len());
        for a in args {
            frame.push_str(&format!("${}\r\n{a}\r\n", a.len()));
        }
        s.write_all(frame.as_bytes()).expect("send a command");
        let mut line = String::new();
        std::io::BufReader::new(s)
            .read_line(&mut line)
            .expect("a reply");
        line.trim_end().to_owned()
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
        self.kill();
        if let Some(dir) = &self.dir {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// A loopback port nobody listens on (bound, then released), never the same one twice in
/// this process.
///
/// The kernel may hand a released port out again at once, so two tests starting servers
/// side by side could both be given it: one server would then fail to bind while the
/// other answered both tests' readiness probes (a cluster test once lost a replica that
/// way). Remembering every port given out rules that out within a test binary.
pub fn free_port() -> u16 {
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free loopback port")
            .port();
        if !given.contains(&port) {
            given.push(port);
            return port;
        }
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
