//! A memory cgroup of its own for a server under test: made under the host's memory
//! controller (cgroup v1 `/sys/fs/cgroup/memory`, or the v2 root when it delegates
//! `memory`), limited, without swap, and removed when dropped. Making one needs root; a
//! test without it skips unless `MCP_REQUIRE_CGROUP=1`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The interface of the hierarchy the group is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    /// cgroup v1.
    V1,
    /// cgroup v2.
    V2,
}

/// A memory cgroup made for one test.
pub struct MemoryCgroup {
    /// Its directory.
    pub dir: PathBuf,
    /// Its interface.
    pub version: Version,
}

impl MemoryCgroup {
    /// A new group named after `name` with a limit of `limit` bytes and no swap; `Err`
    /// says why none can be made here.
    pub fn create(name: &str, limit: u64) -> Result<MemoryCgroup, String> {
        let unique = format!("{name}-{}-{}", std::process::id(), nanos());
        let v1 = Path::new("/sys/fs/cgroup/memory");
        let v2 = Path::new("/sys/fs/cgroup");
        let (dir, version) = if v1.join("memory.limit_in_bytes").exists() {
            (v1.join(unique), Version::V1)
        } else if std::fs::read_to_string(v2.join("cgroup.subtree_control"))
            .is_ok_and(|c| c.split_whitespace().any(|c| c == "memory"))
        {
            (v2.join(unique), Version::V2)
        } else {
            return Err("no cgroup memory controller is mounted at /sys/fs/cgroup".into());
        };
        std::fs::create_dir(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let group = MemoryCgroup { dir, version };
        let limit = limit.to_string();
        match version {
            Version::V1 => {
                group.write("memory.limit_in_bytes", &limit)?;
                // No swap to escape to (the file is there when swap accounting is on).
                if group.dir.join("memory.memsw.limit_in_bytes").exists() {
                    group.write("memory.memsw.limit_in_bytes", &limit)?;
                }
            }
            Version::V2 => {
                group.write("memory.max", &limit)?;
                if group.dir.join("memory.swap.max").exists() {
                    group.write("memory.swap.max", "0")?;
                }
            }
        }
        Ok(group)
    }

    fn write(&self, file: &str, value: &str) -> Result<(), String> {
        std::fs::write(self.dir.join(file), value)
            .map_err(|e| format!("cannot write {value} to {}/{file}: {e}", self.dir.display()))
    }

    /// A file of the group, as text ("" if unreadable).
    pub fn read(&self, file: &str) -> String {
        std::fs::read_to_string(self.dir.join(file)).unwrap_or_default()
    }

    /// A `name value` line of one of its files (`memory.stat`, `memory.oom_control`,
    /// `memory.events`).
    pub fn field(&self, file: &str, name: &str) -> Option<u64> {
        self.read(file).lines().find_map(|line| {
            let (key, value) = line.split_once(' ')?;
            (key == name).then(|| value.trim().parse().ok())?
        })
    }

    /// The most memory the group has used, in bytes (v1; v2 kernels from 5.19 have
    /// `memory.peak`).
    pub fn peak(&self) -> Option<u64> {
        let file = match self.version {
            Version::V1 => "memory.max_usage_in_bytes",
            Version::V2 => "memory.peak",
        };
        self.read(file).trim().parse().ok()
    }

    /// How many processes of the group the OOM killer killed (`None` where the kernel does
    /// not say).
    pub fn oom_kills(&self) -> Option<u64> {
        match self.version {
            Version::V1 => self.field("memory.oom_control", "oom_kill"),
            Version::V2 => self.field("memory.events", "oom_kill"),
        }
    }

    /// A command that runs `program` inside the group: a shell moves itself in, then
    /// becomes the program, so nothing the program allocates is charged elsewhere.
    pub fn command(&self, program: &Path) -> std::process::Command {
        let mut cmd = std::process::Command::new("/bin/sh");
        cmd.arg("-c")
            .arg(r#"echo $$ > "$0/cgroup.procs" && exec "$@""#)
            .arg(&self.dir)
            .arg(program);
        cmd
    }
}

impl Drop for MemoryCgroup {
    fn drop(&mut self) {
        // The group can be removed once its last process is gone; the kernel may take a
        // moment after the exit.
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::fs::remove_dir(&self.dir).is_err() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

fn nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// A group for the calling test, or `None` (with the reason printed) when this machine
/// cannot make one and `MCP_REQUIRE_CGROUP` is not `1`.
pub fn create_or_skip(name: &str, limit: u64) -> Option<MemoryCgroup> {
    match MemoryCgroup::create(name, limit) {
        Ok(group) => Some(group),
        Err(why) if std::env::var("MCP_REQUIRE_CGROUP").as_deref() == Ok("1") => {
            panic!("MCP_REQUIRE_CGROUP=1 but {why}")
        }
        Err(why) => {
            eprintln!("skipping: {why} (run as root, or set MCP_REQUIRE_CGROUP=1 to fail instead)");
            None
        }
    }
}
