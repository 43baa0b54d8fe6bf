//! The sampler: one thread per setting, finding the limit once and then reading what is
//! used every [`INTERVAL`] into atomics, so deciding on a request is two atomic loads and
//! never a system call.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};
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

/// What a server's settings ask to watch: the operator's limit (0 for the cgroup's) and the
/// high-water mark in percent. Servers with the same setting share one sampler.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Setting {
    /// The operator's limit in bytes, or 0 for the limit of the process's cgroup.
    pub(crate) limit: u64,
    /// From this percentage of the limit on, new work is refused.
    pub(crate) high_percent: u64,
    /// Where `/proc` and `/sys` are: `/` in production; tests give a directory that
    /// mirrors them.
    pub(crate) root: PathBuf,
}

impl Setting {
    /// Where usage is read and the limit, if there is one: finding a cgroup reads a few
    /// files under `/proc` and `/sys` (once per process for `/`).
    fn resolve(&self) -> Option<Marks> {
        let (source, limit) = match self.limit {
            0 => {
                let group = cgroup_of(&self.root)?;
                let limit = group.limit;
                (Source::Cgroup(group), limit)
            }
            bytes => (Source::Process, bytes),
        };
        Some(Marks::new(source, limit, self.high_percent))
    }

    /// Whether [`Setting::resolve`] is quick now: an operator's limit, or this process's
    /// cgroup being looked for already ([`expect_cgroup_early`]).
    fn resolves_quickly(&self) -> bool {
        self.limit != 0 || (self.root == Path::new("/") && LOOKING.load(Ordering::Relaxed))
    }
}

/// This process's memory cgroup, found once.
static CGROUP: OnceLock<Option<CgroupMemory>> = OnceLock::new();

/// Whether someone started looking for [`CGROUP`].
static LOOKING: AtomicBool = AtomicBool::new(false);

/// Says that [`find_cgroup_early`] is about to run on another thread: a server built from
/// now on takes the cgroup it finds (waiting for it if need be, or looking itself if that
/// thread has not started yet) and its first reading at once, rather than have its first
/// message wait for a sampler thread to start and look (about a tenth of a millisecond of
/// a cold start). The generated `main` says so before it starts its log thread, which
/// looks first thing.
pub(crate) fn expect_cgroup_early() {
    LOOKING.store(true, Ordering::Relaxed);
}

/// Finds this process's memory cgroup now (see [`expect_cgroup_early`]).
pub(crate) fn find_cgroup_early() {
    CGROUP.get_or_init(|| CgroupMemory::discover(Path::new("/")));
}

/// The memory cgroup of the process whose `/proc` and `/sys` are under `root`.
fn cgroup_of(root: &Path) -> Option<CgroupMemory> {
    if root == Path::new("/") {
        // Waits for a look already under way rather than look twice.
        CGROUP.get_or_init(|| CgroupMemory::discover(root)).clone()
    } else {
        CgroupMemory::discover(root)
    }
}

/// A limit found, and the marks around it.
#[derive(Debug)]
pub(crate) struct Marks {
    source: Source,
    /// The limit, in bytes.
    pub(crate) limit: u64,
    /// From this much used on, new work is refused.
    pub(crate) high: u64,
    /// Below this much, new work is taken again.
    low: u64,
}

impl Marks {
    fn new(source: Source, limit: u64, high_percent: u64) -> Marks {
        let share = |percent: u64| (u128::from(limit) * u128::from(percent) / 100) as u64;
        Marks {
            high: share(high_percent),
            low: share(high_percent.saturating_sub(HYSTERESIS_PERCENT)),
            source,
            limit,
        }
    }
}

/// One setting being watched, shared by every server with that setting.
#[derive(Debug)]
pub(crate) struct Watch {
    setting: Setting,
    /// Set by the sampler once it has looked for the limit and read usage once: `None`
    /// when there is no limit (the check is off). A decision asked for before then waits
    /// for it ([`Watch::settled`]).
    marks: OnceLock<Option<Marks>>,
    used: AtomicU64,
    over: AtomicBool,
    /// Samples in a row below `low` while over.
    calm: AtomicU32,
}

impl Watch {
    fn new(setting: Setting) -> Watch {
        Watch {
            setting,
            marks: OnceLock::new(),
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

    /// The limit and marks, once the sampler has found them; `None` before that and when
    /// there is no limit.
    pub(crate) fn marks(&self) -> Option<&Marks> {
        self.marks.get().and_then(Option::as_ref)
    }

    /// The marks, once the sampler has looked for the limit and, if it found one, read
    /// usage once; waits for that if it has not happened yet. The sampler starts with the
    /// server and takes a fraction of a millisecond, so only a message arriving at once
    /// waits, and no message is decided on before the first reading.
    pub(crate) fn settled(&self) -> Option<&Marks> {
        self.marks.wait().as_ref()
    }

    /// Finds the limit, logs it and takes the first reading, then publishes the marks.
    fn settle(&self) {
        // However this ends (no limit, or a panic), the marks are settled, so that nothing
        // waiting for them waits forever.
        let _settles = Settles(self);
        let Some(marks) = self.setting.resolve() else {
            return;
        };
        tracing::info!(target: "mcp::pressure", limit_mib = marks.limit >> 20, high_water_mib = marks.high >> 20, source = marks.source.describe(), "new work is refused from {} MiB of the {} MiB memory limit", marks.high >> 20, marks.limit >> 20);
        // The first reading before the marks are published: a server booted under
        // pressure refuses its first message.
        self.sample(&marks);
        let _ = self.marks.set(Some(marks));
    }

    /// Turns the check off for good (no sampler will read usage again): settled as "no
    /// limit" if it was not settled yet, and never over if its first reading was taken.
    fn switch_off(&self) {
        let _ = self.marks.set(None);
        self.over.store(false, Ordering::Relaxed);
    }

    /// Records a sample of `used` bytes against `marks` (from the sampler's thread only);
    /// says whether the state changed.
    fn observe(&self, marks: &Marks, used: u64) -> Option<Crossing> {
        self.used.store(used, Ordering::Relaxed);
        if !self.over() {
            if used < marks.high {
                return None;
            }
            self.calm.store(0, Ordering::Relaxed);
            self.over.store(true, Ordering::Relaxed);
            return Some(Crossing::Entered);
        }
        if used >= marks.low {
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
    fn sample(&self, marks: &Marks) {
        let Some(used) = marks.source.used() else {
            return;
        };
        let mib = |bytes: u64| bytes >> 20;
        match self.observe(marks, used) {
            Some(Crossing::Entered) => {
                tracing::warn!(target: "mcp::pressure", used_mib = mib(used), limit_mib = mib(marks.limit), high_water_mib = mib(marks.high), source = marks.source.describe(), "memory pressure: refusing new requests and sessions until usage falls below {} MiB; work in progress continues", mib(marks.low));
                give_back_freed_memory();
            }
            Some(Crossing::Left) => {
                tracing::info!(target: "mcp::pressure", used_mib = mib(used), limit_mib = mib(marks.limit), "memory pressure over: taking new work again");
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

/// The watch of `setting`: an existing one, or a new one with its sampling thread (which
/// ends when the last server holding it is dropped, or at once if there is no limit).
///
/// The thread, not the caller, finds the limit and reads usage the first time: that is
/// a few files under `/proc` and `/sys`, about a tenth of a millisecond a process would
/// otherwise spend before it can read its first message. A message that arrives before the
/// first reading waits for it ([`Watch::settled`]).
pub(crate) fn shared(setting: Setting) -> Arc<Watch> {
    let mut watches = WATCHES.lock();
    watches.retain(|w| w.strong_count() > 0);
    if let Some(existing) = watches
        .iter()
        .filter_map(Weak::upgrade)
        .find(|w| w.setting == setting)
    {
        return existing;
    }
    let watch = Arc::new(Watch::new(setting));
    // When the limit is quick to find, the first reading is taken here: the first message
    // is then decided without waiting for the sampler's thread to start.
    if watch.setting.resolves_quickly() {
        watch.settle();
        if watch.marks().is_none() {
            // No limit: no sampler.
            watches.push(Arc::downgrade(&watch));
            return watch;
        }
    }
    let weak = Arc::downgrade(&watch);
    let started = std::thread::Builder::new()
        .name("mcp-memory".into())
        .spawn(move || sample_while_needed(&weak));
    if let Err(e) = started {
        tracing::warn!(target: "mcp::pressure", error = %e, "cannot start the memory sampler: memory-pressure admission is off");
        watch.switch_off();
    }
    watches.push(Arc::downgrade(&watch));
    watch
}

/// Settles a watch's marks as "no limit" when dropped, unless they are settled already.
struct Settles<'a>(&'a Watch);

impl Drop for Settles<'_> {
    fn drop(&mut self) {
        let _ = self.0.marks.set(None);
    }
}

/// The sampler's thread: finds the limit, announces it, then samples every [`INTERVAL`]
/// until no server holds the watch.
fn sample_while_needed(weak: &Weak<Watch>) {
    let Some(watch) = weak.upgrade() else {
        return;
    };
    if watch.marks.get().is_none() {
        watch.settle();
    }
    if watch.marks().is_none() {
        // No limit: nothing to sample.
        return;
    }
    drop(watch);
    loop {
        std::thread::sleep(INTERVAL);
        let Some(watch) = weak.upgrade() else {
            return;
        };
        if let Some(marks) = watch.marks() {
            watch.sample(marks);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setting(limit: u64, high_percent: u64) -> Setting {
        Setting {
            limit,
            high_percent,
            root: PathBuf::from("/"),
        }
    }

    #[test]
    fn refusing_starts_at_the_high_water_mark_and_ends_below_the_low_one() {
        let watch = Watch::new(setting(1000, 90));
        let marks = Marks::new(Source::Process, 1000, 90);
        assert_eq!((marks.high, marks.low), (900, 850));
        let observe = |used| watch.observe(&marks, used);
        assert_eq!(observe(899), None);
        assert!(!watch.over());
        assert_eq!(observe(900), Some(Crossing::Entered));
        assert!(watch.over());
        assert_eq!(observe(950), None, "one warning per crossing");
        assert_eq!(observe(860), None, "still within the hysteresis");
        assert!(watch.over());
        // Below the low mark for fewer samples than it takes; then back above it, which
        // starts the count again.
        for _ in 1..CALM_SAMPLES {
            assert_eq!(observe(849), None);
        }
        assert_eq!(observe(880), None);
        for _ in 1..CALM_SAMPLES {
            assert_eq!(observe(849), None);
        }
        assert!(watch.over());
        assert_eq!(observe(840), Some(Crossing::Left));
        assert!(!watch.over());
        assert_eq!(watch.used(), 840);
        assert_eq!(observe(800), None);
    }

    #[test]
    fn a_huge_limit_does_not_overflow_the_marks() {
        let watch = Watch::new(setting(u64::MAX, 100));
        let marks = Marks::new(Source::Process, u64::MAX, 100);
        assert_eq!(marks.high, u64::MAX);
        assert_eq!(watch.observe(&marks, u64::MAX - 1), None);
    }

    #[test]
    fn the_resident_set_of_this_process_reads() {
        let rss = resident().expect("/proc/self/statm");
        assert!(rss > 1 << 20, "{rss}");
    }

    /// A limit that is quick to find (an operator's, or this process's cgroup once looked
    /// for early) is settled by the time the server holding the watch is built: its first
    /// message waits for no thread.
    #[test]
    fn a_limit_found_early_is_settled_before_the_first_message() {
        expect_cgroup_early();
        find_cgroup_early();
        for watched in [setting(0, 91), setting(1 << 40, 92)] {
            let watch = shared(watched.clone());
            assert!(watch.marks.get().is_some(), "{watched:?} settled at once");
        }
        let operator = shared(setting(1 << 40, 92));
        let marks = operator.marks().expect("an operator's limit");
        assert_eq!(marks.limit, 1 << 40);
        assert!(operator.used() > 1 << 20, "the first reading was taken");
    }

    /// A watch whose sampler could not start refuses nothing, even when its first reading,
    /// taken as the server was built, was over the mark.
    #[test]
    fn a_watch_without_its_sampler_refuses_nothing() {
        let watch = Watch::new(setting(1000, 90));
        let marks = Marks::new(Source::Process, 1000, 90);
        assert_eq!(watch.observe(&marks, 950), Some(Crossing::Entered));
        let _ = watch.marks.set(Some(marks));
        watch.switch_off();
        assert!(!watch.over());
    }
}
