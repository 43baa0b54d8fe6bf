//! The sampler: one thread per setting, reading what is used every [`INTERVAL`] into
//! atomics, so deciding on a request is one atomic load and never a system call.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;

use super::cgroup::CgroupMemory;

/// How often usage is read.
pub(crate) const INTERVAL: Duration = Duration::from_millis(100);

/// How far below the high-water mark usage must fall, as a share of the limit in percent,
/// before new work is taken again: one release of memory should not flap the state.
const HYSTERESIS_PERCENT: u64 = 5;

/// How many samples in a row must be below the low-water mark to take new work again
/// (half a second): usage swings with each request read and each freed buffer given back,
/// and a client told to retry later should find the state it was told about.
const CALM_SAMPLES: u32 = 5;

/// Where usage is read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    /// The working set of the process's cgroup.
    Cgroup(CgroupMemory),
    /// The process's resident set (`/proc/self/statm`), against an operator's limit.
    Process,
}

impl Source {
    fn used(&self) -> Option<u64> {
        match self {
            Source::Cgroup(group) => group.used(),
            Source::Process => resident(),
        }
    }

    fn describe(&self) -> &'static str {
        match self {
            Source::Cgroup(_) => "the cgroup's working set",
            Source::Process => "the process's resident set",
        }
    }
}

/// The resident set of this process, in bytes.
fn resident() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split(' ').nth(1)?.parse().ok()?;
    // SAFETY: sysconf only reads a configuration value.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * u64::try_from(page).unwrap_or(4096))
}

/// A change of state the sampler saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Crossing {
    /// Usage reached the high-water mark: new work is refused.
    Entered,
    /// Usage fell below the low-water mark: new work is taken again.
    Left,
}

/// One limit being watched, shared by every server with the same setting.
#[derive(Debug)]
pub(crate) struct Watch {
    source: Source,
    /// The limit, in bytes.
    pub(crate) limit: u64,
    /// From this much used on, new work is refused.
    pub(crate) high: u64,
    /// Below this much, new work is taken again.
    low: u64,
    used: AtomicU64,
    over: AtomicBool,
    /// Samples in a row below `low` while over.
    calm: AtomicU32,
}

impl Watch {
    /// A watch of `source` against `limit`, refusing from `high_percent` of it.
    pub(crate) fn new(source: Source, limit: u64, high_percent: u64) -> Watch {
        let share = |percent: u64| (u128::from(limit) * u128::from(percent) / 100) as u64;
        Watch {
            high: share(high_percent),
            low: share(high_percent.saturating_sub(HYSTERESIS_PERCENT)),
            source,
            limit,
            used: AtomicU64::new(0),
            over: AtomicBool::new(false),
            calm: AtomicU32::new(0),
        }
    }

    /// Whether new work is refused now.
    pub(crate) fn over(&self) -> bool {
        self.over.load(Ordering::Relaxed)
    }

    /// What was used at the last sample, in bytes.
    pub(crate) fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    /// Records a sample of `used` bytes (from the sampler's thread only); says whether the
    /// state changed.
    pub(crate) fn observe(&self, used: u64) -> Option<Crossing> {
        self.used.store(used, Ordering::Relaxed);
        if !self.over() {
            if used < self.high {
                return None;
            }
            self.calm.store(0, Ordering::Relaxed);
            self.over.store(true, Ordering::Relaxed);
            return Some(Crossing::Entered);
        }
        if used >= self.low {
            self.calm.store(0, Ordering::Relaxed);
            return None;
        }
        if self.calm.fetch_add(1, Ordering::Relaxed) + 1 < CALM_SAMPLES {
            return None;
        }
        self.over.store(false, Ordering::Relaxed);
        Some(Crossing::Left)
    }

    /// Samples once, and logs a crossing.
    fn sample(&self) {
        let Some(used) = self.source.used() else {
            return;
        };
        let mib = |bytes: u64| bytes >> 20;
        match self.observe(used) {
            Some(Crossing::Entered) => {
                tracing::warn!(target: "mcp::pressure", used_mib = mib(used), limit_mib = mib(self.limit), high_water_mib = mib(self.high), source = self.source.describe(), "memory pressure: refusing new requests and sessions until usage falls below {} MiB; work in progress continues", mib(self.low));
                give_back_freed_memory();
            }
            Some(Crossing::Left) => {
                tracing::info!(target: "mcp::pressure", used_mib = mib(used), limit_mib = mib(self.limit), "memory pressure over: taking new work again");
            }
            None if self.over() => give_back_freed_memory(),
            None => {}
        }
    }
}

/// Returns memory the allocator holds but nobody uses to the kernel. glibc keeps freed
/// blocks of its per-thread arenas for reuse; under pressure that memory counts against the
/// limit and would keep the server refusing work long after the work that needed it ended.
/// Only called while over the mark, from the sampler's thread.
fn give_back_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes the allocator's own locks and has no preconditions.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// The watches alive in this process, so servers with the same setting share one sampler.
static WATCHES: Mutex<Vec<Weak<Watch>>> = Mutex::new(Vec::new());

/// The watch of `source` against `limit` from `high_percent`: an existing one, or a new one
/// with its sampling thread (which ends when the last server holding it is dropped).
pub(crate) fn shared(source: Source, limit: u64, high_percent: u64) -> Arc<Watch> {
    let wanted = Watch::new(source, limit, high_percent);
    let mut watches = WATCHES.lock();
    watches.retain(|w| w.strong_count() > 0);
    if let Some(existing) = watches
        .iter()
        .filter_map(Weak::upgrade)
        .find(|w| w.source == wanted.source && w.limit == wanted.limit && w.high == wanted.high)
    {
        return existing;
    }
    let watch = Arc::new(wanted);
    // The first sample before anyone asks: a server booted under pressure refuses at once.
    watch.sample();
    let weak = Arc::downgrade(&watch);
    let started = std::thread::Builder::new()
        .name("mcp-memory".into())
        .spawn(move || {
            while let Some(watch) = weak.upgrade() {
                watch.sample();
                drop(watch);
                std::thread::sleep(INTERVAL);
            }
        });
    if let Err(e) = started {
        tracing::warn!(target: "mcp::pressure", error = %e, "cannot start the memory sampler: memory-pressure admission is off");
        return Arc::new(Watch::new(Source::Process, u64::MAX, 100));
    }
    watches.push(Arc::downgrade(&watch));
    watch
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusing_starts_at_the_high_water_mark_and_ends_below_the_low_one() {
        let watch = Watch::new(Source::Process, 1000, 90);
        assert_eq!((watch.high, watch.low), (900, 850));
        assert_eq!(watch.observe(899), None);
        assert!(!watch.over());
        assert_eq!(watch.observe(900), Some(Crossing::Entered));
        assert!(watch.over());
        assert_eq!(watch.observe(950), None, "one warning per crossing");
        assert_eq!(watch.observe(860), None, "still within the hysteresis");
        assert!(watch.over());
        // Below the low mark for fewer samples than it takes; then back above it, which
        // starts the count again.
        for _ in 1..CALM_SAMPLES {
            assert_eq!(watch.observe(849), None);
        }
        assert_eq!(watch.observe(880), None);
        for _ in 1..CALM_SAMPLES {
            assert_eq!(watch.observe(849), None);
        }
        assert!(watch.over());
        assert_eq!(watch.observe(840), Some(Crossing::Left));
        assert!(!watch.over());
        assert_eq!(watch.used(), 840);
        assert_eq!(watch.observe(800), None);
    }

    #[test]
    fn a_huge_limit_does_not_overflow_the_marks() {
        let watch = Watch::new(Source::Process, u64::MAX, 100);
        assert_eq!(watch.high, u64::MAX);
        assert_eq!(watch.observe(u64::MAX - 1), None);
    }

    #[test]
    fn the_resident_set_of_this_process_reads() {
        let rss = resident().expect("/proc/self/statm");
        assert!(rss > 1 << 20, "{rss}");
    }
}
