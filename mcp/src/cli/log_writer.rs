//! stderr for the generated `main`'s log, written in batches by a thread of its own.
//!
//! With an authorizer set, every call writes an audit line at INFO. Written as it is
//! formatted, that is one `write(2)` per call: on stdio, where the protocol's own answers go
//! out many to a syscall, the log's writes cost more than the calls they describe (measured
//! with `strace -c`: 20,316 writes for 20,000 calls). Here a line is appended to a buffer
//! under a lock, and a writer thread hands the buffer to stderr: at once when it was idle,
//! then at most every [`BATCH`] (or [`FULL_BATCH`] bytes) while lines keep coming. Nothing
//! is dropped: a writer that finds the buffer over [`HIGH_WATER`] waits for it to drain. [`Logs::flush`] (and the
//! guard's drop) writes what is left before the process ends; only a process killed
//! outright can lose the last [`BATCH`] of lines.

use std::io::Write;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// How long the writer thread collects lines while they keep coming. Each batch wakes the
/// thread, writes and wakes anyone waiting for the drain: at 1 ms, on a busy HTTP server
/// those wake-ups took about 6% of the guarded server's CPU (16 clients, 18.6–19.2 µs per
/// request at 1 ms, 17.2–17.7 at 5 ms); longer batches gained no more.
const BATCH: Duration = Duration::from_millis(5);

/// A batch this large is written without waiting out the rest of [`BATCH`]: at hundreds of
/// thousands of audit lines a second, 5 ms of lines is ~400 KiB, held twice (the buffer
/// and the batch being written), which raised a busy stdio server's peak RSS by ~0.7 MiB.
const FULL_BATCH: usize = 64 << 10;

/// Above this many buffered bytes, a logging thread waits for the writer (back-pressure
/// instead of loss or unbounded memory).
const HIGH_WATER: usize = 1 << 20;

#[derive(Default)]
struct Buffer {
    bytes: Vec<u8>,
    /// The writer thread is parked until woken (no timed wait pending): the next line must
    /// wake it.
    parked: bool,
    /// A batch taken from `bytes` is being written.
    writing: bool,
    /// `flush` was called: write now rather than at the end of the batch.
    urgent: bool,
}

struct Shared {
    buffer: Mutex<Buffer>,
    /// Wakes the writer thread.
    work: Condvar,
    /// Wakes threads waiting for the buffer to drain.
    drained: Condvar,
    /// How long the writer collects lines while they keep coming ([`BATCH`]).
    batch: Duration,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Buffer> {
        // A panic while holding the lock leaves bytes that are still worth writing.
        self.buffer.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The log's stderr (a [`tracing_subscriber::fmt::MakeWriter`]); cloning shares it.
#[derive(Clone)]
pub(super) struct Logs {
    /// `None` when the writer thread could not be started: lines go to stderr directly.
    shared: Option<Arc<Shared>>,
}

impl Logs {
    /// Starts the writer thread (or, when no thread can be started, writes directly).
    pub(super) fn start() -> Logs {
        crate::pressure::expect_cgroup_early();
        Logs::start_with(std::io::stderr(), warm_up, BATCH)
    }

    /// [`Logs::start`] writing to `out` in batches of `batch`; the thread runs `first`
    /// before it waits for lines.
    pub(super) fn start_with(
        mut out: impl Write + Send + 'static,
        first: fn(),
        batch: Duration,
    ) -> Logs {
        let shared = Arc::new(Shared {
            buffer: Mutex::new(Buffer {
                parked: true,
                ..Buffer::default()
            }),
            work: Condvar::new(),
            drained: Condvar::new(),
            batch,
        });
        let thread_shared = shared.clone();
        let started = std::thread::Builder::new()
            .name("mcp-log".into())
            .spawn(move || {
                first();
                write_batches(&thread_shared, &mut out)
            });
        Logs {
            shared: started.is_ok().then_some(shared),
        }
    }

    /// Appends one formatted line (or any bytes) to the buffer.
    pub(super) fn append(&self, bytes: &[u8]) {
        let Some(shared) = &self.shared else {
            let _ = std::io::stderr().write_all(bytes);
            return;
        };
        let mut buffer = shared.lock();
        while buffer.bytes.len() > HIGH_WATER {
            buffer = shared
                .drained
                .wait(buffer)
                .unwrap_or_else(|e| e.into_inner());
        }
        let before = buffer.bytes.len();
        buffer.bytes.extend_from_slice(bytes);
        if buffer.parked {
            buffer.parked = false;
            shared.work.notify_one();
        } else if before < FULL_BATCH && buffer.bytes.len() >= FULL_BATCH {
            // Once per batch: a notification is a system call.
            shared.work.notify_one();
        }
    }

    /// Returns once everything appended so far has been written to stderr.
    pub(super) fn flush(&self) {
        let Some(shared) = &self.shared else {
            return;
        };
        let mut buffer = shared.lock();
        buffer.urgent = true;
        shared.work.notify_one();
        while !buffer.bytes.is_empty() || buffer.writing {
            let (next, timeout) = shared
                .drained
                .wait_timeout(buffer, Duration::from_secs(5))
                .unwrap_or_else(|e| e.into_inner());
            buffer = next;
            // A writer thread that died (stderr gone) must not hold the process up.
            if timeout.timed_out() {
                break;
            }
        }
        buffer.urgent = false;
    }
}

/// Flushes when dropped: the generated `main` holds one for as long as it serves.
pub(super) struct FlushOnDrop(pub(super) Logs);

impl Drop for FlushOnDrop {
    fn drop(&mut self) {
        self.0.flush();
    }
}

/// The writer thread: takes the buffer, writes it, and either waits out the rest of the
/// batch (lines are coming) or parks until the next line (none came).
fn write_batches(shared: &Shared, out: &mut impl Write) {
    let mut batch = Vec::new();
    let mut buffer = shared.lock();
    loop {
        if buffer.bytes.is_empty() {
            buffer.parked = true;
            buffer = shared.work.wait(buffer).unwrap_or_else(|e| e.into_inner());
            continue;
        }
        std::mem::swap(&mut batch, &mut buffer.bytes);
        buffer.writing = true;
        drop(buffer);
        // stderr gone (the host closed it): the lines have nowhere to go.
        let _ = out.write_all(&batch).and_then(|()| out.flush());
        batch.clear();
        buffer = shared.lock();
        buffer.writing = false;
        shared.drained.notify_all();
        if !buffer.urgent && buffer.bytes.len() < FULL_BATCH {
            buffer = shared
                .work
                .wait_timeout(buffer, shared.batch)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

/// One event's writes.
pub(super) struct Line<'a>(&'a Logs);

impl Write for Line<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.append(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Logs {
    type Writer = Line<'a>;

    fn make_writer(&'a self) -> Self::Writer {
        Line(self)
    }
}

/// What the log thread does before its first line, while the main thread boots: work the
/// first message would otherwise wait for.
fn warm_up() {
    // The cgroup first: the server being built may be waiting for it.
    crate::pressure::find_cgroup_early();
    warm_cpu_feature_cache();
}

/// Asks the CPU what it can do, so that the first caller of a SIMD routine does not.
///
/// memchr (the stdio transport's line splitting) and httparse look up the CPU's features on
/// their first call, and the standard library's lookup runs a dozen `cpuid` instructions,
/// each a trap to the hypervisor in a virtual machine: 67 µs on the benchmark's machine,
/// spent between a client's first message and its answer. The log thread is the first
/// thread the generated `main` starts, long before the first message is read; it fills the
/// standard library's cache (which any thread may fill) while the main thread boots.
fn warm_cpu_feature_cache() {
    #[cfg(target_arch = "x86_64")]
    let _ = std::arch::is_x86_feature_detected!("avx2");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sink the writer thread writes to, counting its writes.
    #[derive(Clone, Default)]
    struct Recorded(Arc<Mutex<(Vec<u8>, usize)>>);

    impl Write for Recorded {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            let mut r = self.0.lock().unwrap();
            r.0.extend_from_slice(bytes);
            r.1 += 1;
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn started(out: Recorded) -> Logs {
        let logs = Logs::start_with(out, || {}, BATCH);
        assert!(logs.shared.is_some(), "the writer thread started");
        logs
    }

    #[test]
    fn every_line_arrives_in_order_and_in_few_writes() {
        let out = Recorded::default();
        let logs = started(out.clone());
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let logs = logs.clone();
                std::thread::spawn(move || {
                    for i in 0..5_000 {
                        let line = format!("thread {t} line {i}\n");
                        let mut w = Line(&logs);
                        w.write_all(line.as_bytes()).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        logs.flush();
        let (bytes, writes) = out.0.lock().unwrap().clone();
        let text = String::from_utf8(bytes).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 20_000, "no line lost or split");
        for t in 0..4 {
            let mine: Vec<usize> = lines
                .iter()
                .filter_map(|l| l.strip_prefix(&format!("thread {t} line ")))
                .map(|n| n.parse().unwrap())
                .collect();
            assert_eq!(mine, (0..5_000).collect::<Vec<_>>(), "thread {t} in order");
        }
        assert!(writes < 2_000, "{writes} writes for 20,000 lines");
    }

    #[test]
    fn a_line_alone_is_written_without_waiting_for_more() {
        let out = Recorded::default();
        let logs = started(out.clone());
        Line(&logs).write_all(b"first\n").unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while out.0.lock().unwrap().0.is_empty() {
            assert!(std::time::Instant::now() < deadline, "the line never came");
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(out.0.lock().unwrap().0, b"first\n");
    }

    /// Lines that keep coming fill a batch before its time is up: it is written then, so
    /// the buffer (and the server's memory) stays small however fast lines come.
    #[test]
    fn a_full_batch_is_written_without_waiting_out_its_time() {
        let out = Recorded::default();
        let logs = Logs::start_with(out.clone(), || {}, Duration::from_secs(600));
        let arrived = |len: usize| {
            let deadline = std::time::Instant::now() + Duration::from_secs(30);
            while out.0.lock().unwrap().0.len() < len {
                assert!(std::time::Instant::now() < deadline, "the batch never came");
                std::thread::sleep(Duration::from_millis(1));
            }
        };
        // The first line wakes the idle writer, which then collects lines for ten minutes.
        Line(&logs).write_all(b"first\n").unwrap();
        arrived(6);
        Line(&logs).write_all(b"second\n").unwrap();
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(out.0.lock().unwrap().0.len(), 6, "a small batch waits");
        let full = vec![b'x'; FULL_BATCH];
        Line(&logs).write_all(&full).unwrap();
        arrived(6 + 7 + FULL_BATCH);
    }

    #[test]
    fn flush_returns_once_everything_is_written() {
        let out = Recorded::default();
        let logs = started(out.clone());
        for i in 0..100 {
            Line(&logs).write_all(format!("{i}\n").as_bytes()).unwrap();
        }
        logs.flush();
        assert_eq!(
            String::from_utf8(out.0.lock().unwrap().0.clone())
                .unwrap()
                .lines()
                .count(),
            100
        );
    }
}
