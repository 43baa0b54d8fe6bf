//! Child processes: spawning a server with pipes or socket pairs as its stdin/stdout, its CPU
//! time (from the kernel's per-thread accounting while it runs, from `wait4` when it ends),
//! and its peak resident set.

use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How the server's stdin and stdout are wired.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wiring {
    /// Anonymous pipes (Python hosts, most CLIs).
    Pipes,
    /// One Unix socket pair per stream (Node.js hosts, hence most desktop apps).
    Sockets,
}

impl Wiring {
    pub fn name(self) -> &'static str {
        match self {
            Wiring::Pipes => "pipes",
            Wiring::Sockets => "socketpair",
        }
    }
}

/// A server to launch: its binary and the environment it runs with (on top of the driver's).
#[derive(Clone, Debug)]
pub struct Program {
    pub binary: PathBuf,
    pub env: Vec<(&'static str, String)>,
}

impl Program {
    /// `binary` with nothing added to its environment.
    pub fn new(binary: impl Into<PathBuf>) -> Program {
        Program {
            binary: binary.into(),
            env: Vec::new(),
        }
    }

    /// The command that starts it, stderr read and discarded by a thread of the driver
    /// (as a host reads a server's log: a pipe that is drained, not /dev/null, so a server
    /// that logs pays for its writes as it would in production).
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.binary);
        cmd.args(args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stderr(Stdio::piped());
        cmd
    }
}

/// Reads the child's stderr until it closes.
fn drain_stderr(child: &mut std::process::Child) {
    if let Some(mut err) = child.stderr.take() {
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut err, &mut std::io::sink());
        });
    }
}

/// A running server process.
pub struct Child {
    pub pid: i32,
    inner: std::process::Child,
    reaped: bool,
}

/// What the kernel says about a process that ended.
#[derive(Clone, Copy, Debug, Default)]
pub struct Usage {
    /// User + system CPU time, in microseconds.
    pub cpu_us: f64,
}

/// Spawns `binary args` with stdin/stdout wired as `wiring`; returns the child and the
/// parent's ends (what we write to, what we read from) as owned descriptors.
pub fn spawn_stdio(program: &Program, args: &[&str], wiring: Wiring) -> (Child, OwnedFd, OwnedFd) {
    let mut cmd = program.command(args);
    let (ours_in, ours_out);
    match wiring {
        Wiring::Pipes => {
            cmd.stdin(Stdio::piped()).stdout(Stdio::piped());
            let mut child = cmd.spawn().expect("spawn server");
            drain_stderr(&mut child);
            ours_in = OwnedFd::from(child.stdin.take().expect("stdin"));
            ours_out = OwnedFd::from(child.stdout.take().expect("stdout"));
            let pid = child.id() as i32;
            return (
                Child {
                    pid,
                    inner: child,
                    reaped: false,
                },
                ours_in,
                ours_out,
            );
        }
        Wiring::Sockets => {
            let (stdin_parent, stdin_child) = UnixStream::pair().expect("socketpair");
            let (stdout_parent, stdout_child) = UnixStream::pair().expect("socketpair");
            cmd.stdin(Stdio::from(OwnedFd::from(stdin_child)))
                .stdout(Stdio::from(OwnedFd::from(stdout_child)));
            ours_in = OwnedFd::from(stdin_parent);
            ours_out = OwnedFd::from(stdout_parent);
        }
    }
    let mut child = cmd.spawn().expect("spawn server");
    drain_stderr(&mut child);
    let pid = child.id() as i32;
    (
        Child {
            pid,
            inner: child,
            reaped: false,
        },
        ours_in,
        ours_out,
    )
}

/// Spawns `program args` with no stdin, stdout discarded and stderr drained (HTTP servers).
pub fn spawn_quiet(program: &Program, args: &[&str]) -> Child {
    let mut child = program
        .command(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn server");
    drain_stderr(&mut child);
    Child {
        pid: child.id() as i32,
        inner: child,
        reaped: false,
    }
}

impl Child {
    /// CPU time used so far, in microseconds: the sum over its live threads of the kernel's
    /// nanosecond run-time accounting (`/proc/<pid>/task/*/schedstat`).
    pub fn cpu_us_now(&self) -> f64 {
        let mut total_ns: u64 = 0;
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{}/task", self.pid)) else {
            return 0.0;
        };
        for task in tasks.flatten() {
            if let Ok(s) = std::fs::read_to_string(task.path().join("schedstat"))
                && let Some(first) = s.split_whitespace().next()
            {
                total_ns += first.parse::<u64>().unwrap_or(0);
            }
        }
        total_ns as f64 / 1000.0
    }

    /// Whether the process has ended (without reaping it).
    pub fn has_exited(&self) -> bool {
        match std::fs::read_to_string(format!("/proc/{}/stat", self.pid)) {
            Ok(s) => s[s.rfind(')').map_or(0, |i| i + 2)..].starts_with('Z'),
            Err(_) => true,
        }
    }

    /// Peak and current resident set size, in KiB (`VmHWM`, `VmRSS`).
    pub fn rss_kib(&self) -> (u64, u64) {
        let Ok(s) = std::fs::read_to_string(format!("/proc/{}/status", self.pid)) else {
            return (0, 0);
        };
        let field = |name: &str| {
            s.lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.split_whitespace().next())
                .and_then(|v| v.parse().ok())
                .unwrap_or(0)
        };
        (field("VmHWM:"), field("VmRSS:"))
    }

    /// Waits (at most `limit`, then kills it) for the process to end; returns its usage.
    pub fn wait_usage(&mut self, limit: Duration) -> Usage {
        let deadline = Instant::now() + limit;
        loop {
            let mut status = 0;
            let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
            // SAFETY: wait4 on our own child with valid out-pointers.
            let r = unsafe { libc::wait4(self.pid, &mut status, libc::WNOHANG, &mut ru) };
            if r == self.pid {
                self.reaped = true;
                let us = |t: libc::timeval| t.tv_sec as f64 * 1e6 + t.tv_usec as f64;
                return Usage {
                    cpu_us: us(ru.ru_utime) + us(ru.ru_stime),
                };
            }
            if r < 0 {
                self.reaped = true;
                return Usage::default();
            }
            if Instant::now() > deadline {
                let _ = self.inner.kill();
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Stops the process (SIGTERM, then SIGKILL) and returns its usage.
    pub fn stop(&mut self) -> Usage {
        // SAFETY: signalling our own child.
        unsafe {
            libc::kill(self.pid, libc::SIGTERM);
        }
        self.wait_usage(Duration::from_secs(3))
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if !self.reaped {
            let _ = self.inner.kill();
            let _ = self.inner.wait();
        }
    }
}
