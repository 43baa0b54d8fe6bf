//! The memory limit of the process's own cgroup, and what it uses now.
//!
//! cgroup v2: the process's line `0::/path` in `/proc/self/cgroup`, under the `cgroup2`
//! mount; the limit is the smallest `memory.max` of that group and its ancestors. cgroup
//! v1: the line naming the `memory` controller, under that controller's mount; the limit
//! is `hierarchical_memory_limit` from `memory.stat` (which folds in the ancestors), else
//! `memory.limit_in_bytes`. "max", or a number no machine has (v1 writes "unlimited" as
//! about 2^63), is no limit.
//!
//! What is "used" is the working set, as the kernel's OOM killer sees it: the charged
//! usage less the inactive file cache, which the kernel reclaims before killing anyone. A
//! server that writes logs would otherwise look full of page cache.

use std::path::{Path, PathBuf};

/// Limits at or above this are "no limit" (v1 reports unlimited as `PAGE_COUNTER_MAX`
/// pages, about 2^63 bytes; no machine has 2^60 bytes).
const UNLIMITED: u64 = 1 << 60;

/// Which interface a cgroup's files speak.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Version {
    /// cgroup v1: `memory.limit_in_bytes`, `memory.usage_in_bytes`.
    V1,
    /// cgroup v2: `memory.max`, `memory.current`.
    V2,
}

/// The memory cgroup this process is in, with a limit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CgroupMemory {
    /// The group's directory.
    pub(crate) dir: PathBuf,
    pub(crate) version: Version,
    /// Its limit, in bytes.
    pub(crate) limit: u64,
}

impl CgroupMemory {
    /// The limited memory cgroup of this process, if it is in one (`/` in production;
    /// tests give a directory that mirrors `/proc` and `/sys`).
    pub(crate) fn discover(root: &Path) -> Option<CgroupMemory> {
        let groups = std::fs::read_to_string(root.join("proc/self/cgroup")).ok()?;
        let mounts = std::fs::read_to_string(root.join("proc/self/mountinfo")).ok()?;
        // A hybrid host may mount cgroup2 without the memory controller: v1 wins when a
        // v1 hierarchy holds it.
        v1(root, &groups, &mounts).or_else(|| v2(root, &groups, &mounts))
    }

    /// What the group uses now (its working set), in bytes; `None` if it cannot be read.
    pub(crate) fn used(&self) -> Option<u64> {
        let (usage, inactive) = match self.version {
            Version::V1 => ("memory.usage_in_bytes", "total_inactive_file"),
            Version::V2 => ("memory.current", "inactive_file"),
        };
        let usage = read_number(&self.dir.join(usage))?;
        let stat = std::fs::read_to_string(self.dir.join("memory.stat")).unwrap_or_default();
        Some(usage.saturating_sub(stat_field(&stat, inactive).unwrap_or(0)))
    }
}

fn v1(root: &Path, groups: &str, mounts: &str) -> Option<CgroupMemory> {
    let path = groups.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        controllers
            .split(',')
            .any(|c| c == "memory")
            .then_some(path)
    })?;
    let (mount_root, mount_point) = mount_of(mounts, |fstype, options| {
        fstype == "cgroup" && options.split(',').any(|o| o == "memory")
    })?;
    let dir = group_dir(root, mount_root, mount_point, path);
    let stat = std::fs::read_to_string(dir.join("memory.stat")).unwrap_or_default();
    let limit = stat_field(&stat, "hierarchical_memory_limit")
        .or_else(|| read_number(&dir.join("memory.limit_in_bytes")))
        .filter(|&l| l < UNLIMITED)?;
    Some(CgroupMemory {
        dir,
        version: Version::V1,
        limit,
    })
}

fn v2(root: &Path, groups: &str, mounts: &str) -> Option<CgroupMemory> {
    let path = groups.lines().find_map(|line| line.strip_prefix("0::"))?;
    let (mount_root, mount_point) = mount_of(mounts, |fstype, _| fstype == "cgroup2")?;
    let dir = group_dir(root, mount_root, mount_point, path);
    // The tightest limit on the way up to the mount (the root group has no memory.max).
    let top = root.join(mount_point.trim_start_matches('/'));
    let limit = dir
        .ancestors()
        .take_while(|d| d.starts_with(&top))
        .filter_map(|d| read_limit(&d.join("memory.max")))
        .min()?;
    Some(CgroupMemory {
        dir,
        version: Version::V2,
        limit,
    })
}

/// The directory of the group at `path` (as `/proc/self/cgroup` names it) under a mount of
/// the hierarchy whose root is `mount_root`. In a cgroup namespace, or a container whose
/// mount shows only its own group, the path does not lead anywhere under the mount: the
/// mount point itself is then the group.
fn group_dir(root: &Path, mount_root: &str, mount_point: &str, path: &str) -> PathBuf {
    let point = root.join(mount_point.trim_start_matches('/'));
    let relative = path
        .strip_prefix(mount_root)
        .unwrap_or(path)
        .trim_start_matches('/');
    let dir = point.join(relative);
    if dir.is_dir() { dir } else { point }
}

/// The root and mount point of the first mount in `/proc/self/mountinfo` whose file system
/// type and super options `wanted` accepts. A line reads `id parent major:minor root
/// mount-point options [optional fields] - fstype source super-options`.
fn mount_of(mounts: &str, wanted: impl Fn(&str, &str) -> bool) -> Option<(&str, &str)> {
    mounts.lines().find_map(|line| {
        let (left, right) = line.split_once(" - ")?;
        let mut right = right.split(' ');
        let (fstype, _source) = (right.next()?, right.next()?);
        let options = right.next().unwrap_or("");
        if !wanted(fstype, options) {
            return None;
        }
        let mut left = left.split(' ').skip(3);
        Some((left.next()?, left.next()?))
    })
}

/// A limit file: a number of bytes, or "max" (none).
fn read_limit(file: &Path) -> Option<u64> {
    read_number(file).filter(|&l| l < UNLIMITED)
}

fn read_number(file: &Path) -> Option<u64> {
    std::fs::read_to_string(file).ok()?.trim().parse().ok()
}

/// A `name value` line of `memory.stat`.
fn stat_field(stat: &str, name: &str) -> Option<u64> {
    stat.lines().find_map(|line| {
        let (key, value) = line.split_once(' ')?;
        (key == name).then(|| value.trim().parse().ok())?
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory standing in for `/`: `/proc/self/{cgroup,mountinfo}` and the files
    /// under the cgroup mounts, removed when dropped.
    struct Root(PathBuf);

    impl Root {
        fn new(name: &str) -> Root {
            let dir = std::env::temp_dir().join(format!(
                "mcp-cgroup-{name}-{}-{}",
                std::process::id(),
                crate::util::random_token(6)
            ));
            std::fs::create_dir_all(dir.join("proc/self")).unwrap();
            Root(dir)
        }

        fn write(&self, path: &str, text: &str) -> &Self {
            let file = self.0.join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, text).unwrap();
            self
        }

        fn discover(&self) -> Option<CgroupMemory> {
            CgroupMemory::discover(&self.0)
        }
    }

    impl Drop for Root {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    const V1_MOUNTS: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";
    const V1_GROUPS: &str = "4:memory:/jobs/a\n3:cpuset:/\n0::/\n";
    const V2_MOUNTS: &str = "\
25 20 0:22 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate
";

    /// A cgroup v1 memory group `jobs/a` with this `memory.limit_in_bytes` and
    /// `memory.stat`.
    fn v1_group(name: &str, limit: &str, stat: &str) -> Root {
        let root = Root::new(name);
        root.write("proc/self/cgroup", V1_GROUPS)
            .write("proc/self/mountinfo", V1_MOUNTS)
            .write("sys/fs/cgroup/memory/jobs/a/memory.limit_in_bytes", limit)
            .write("sys/fs/cgroup/memory/jobs/a/memory.stat", stat);
        root
    }

    #[test]
    fn v1_reads_the_memory_controllers_group_and_its_working_set() {
        let root = Root::new("v1");
        root.write("proc/self/cgroup", V1_GROUPS)
            .write("proc/self/mountinfo", V1_MOUNTS)
            .write(
                "sys/fs/cgroup/memory/jobs/a/memory.limit_in_bytes",
                "134217728\n",
            )
            .write(
                "sys/fs/cgroup/memory/jobs/a/memory.usage_in_bytes",
                "50000000\n",
            )
            .write(
                "sys/fs/cgroup/memory/jobs/a/memory.stat",
                "cache 300\ninactive_file 7\ntotal_inactive_file 1000000\n",
            );
        let found = root.discover().expect("a limited group");
        assert_eq!(found.version, Version::V1);
        assert_eq!(found.limit, 128 << 20);
        assert_eq!(found.dir, root.0.join("sys/fs/cgroup/memory/jobs/a"));
        assert_eq!(
            found.used(),
            Some(49_000_000),
            "usage less the inactive cache"
        );
    }

    #[test]
    fn v1_takes_the_hierarchical_limit_an_ancestor_sets() {
        let root = v1_group(
            "v1h",
            "9223372036854771712\n",
            "hierarchical_memory_limit 67108864\n",
        );
        assert_eq!(root.discover().unwrap().limit, 64 << 20);
    }

    #[test]
    fn v1_unlimited_is_no_limit() {
        let root = v1_group(
            "v1u",
            "9223372036854771712\n",
            "hierarchical_memory_limit 9223372036854771712\n",
        );
        assert_eq!(root.discover(), None);
    }

    #[test]
    fn v2_takes_the_tightest_memory_max_up_to_the_mount() {
        let root = Root::new("v2");
        root.write("proc/self/cgroup", "0::/app.slice/server.service\n")
            .write("proc/self/mountinfo", V2_MOUNTS)
            .write("sys/fs/cgroup/app.slice/memory.max", "104857600\n")
            .write("sys/fs/cgroup/app.slice/server.service/memory.max", "max\n")
            .write(
                "sys/fs/cgroup/app.slice/server.service/memory.current",
                "60000000\n",
            )
            .write(
                "sys/fs/cgroup/app.slice/server.service/memory.stat",
                "anon 1\ninactive_file 4000000\nactive_file 9\n",
            );
        let found = root.discover().expect("a limited group");
        assert_eq!(found.version, Version::V2);
        assert_eq!(found.limit, 100 << 20, "the parent's limit binds");
        assert_eq!(found.used(), Some(56_000_000));
        // Its own, tighter limit wins over the parent's.
        root.write(
            "sys/fs/cgroup/app.slice/server.service/memory.max",
            "52428800\n",
        );
        assert_eq!(root.discover().unwrap().limit, 50 << 20);
    }

    #[test]
    fn v2_max_everywhere_is_no_limit_and_no_cgroup_is_none() {
        let root = Root::new("v2max");
        root.write("proc/self/cgroup", "0::/a\n")
            .write("proc/self/mountinfo", V2_MOUNTS)
            .write("sys/fs/cgroup/a/memory.max", "max\n")
            .write("sys/fs/cgroup/a/memory.current", "1\n");
        assert_eq!(root.discover(), None);
        let empty = Root::new("none");
        assert_eq!(empty.discover(), None, "no /proc files at all");
    }

    #[test]
    fn a_namespaced_group_is_the_mount_itself() {
        // In a container with its own cgroup namespace the path names a group the mount
        // does not show: the mount point is the group.
        let root = Root::new("ns");
        root.write("proc/self/cgroup", "0::/../../host/path\n")
            .write("proc/self/mountinfo", V2_MOUNTS)
            .write("sys/fs/cgroup/memory.max", "268435456\n")
            .write("sys/fs/cgroup/memory.current", "1000\n");
        let found = root.discover().unwrap();
        assert_eq!(found.dir, root.0.join("sys/fs/cgroup"));
        assert_eq!(found.limit, 256 << 20);
        assert_eq!(found.used(), Some(1000));
    }
}
