//! [`HttpConfig::per_core_threads`](super::HttpConfig::per_core_threads): connections served
//! on threads of their own, each running a single-threaded runtime, so a connection (and
//! its session's data) never moves between cores.
//!
//! A connection is spawned on its thread's runtime as the very future the shared runtime
//! would run (`Connections::serve`), so the two paths share one copy of hyper's connection
//! code in the binary: a wrapper future of its own here cost 60 KB.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use hyper_util::server::graceful::Watcher;
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

use super::Connections;

/// The running per-core threads. Dropping it stops them, and with them whatever their
/// connections still run: drop it once the graceful shutdown is over.
pub(super) struct PerCore {
    threads: Vec<CoreThread>,
    stop: CancellationToken,
}

struct CoreThread {
    runtime: tokio::runtime::Handle,
    /// Connections this thread is serving.
    open: Arc<AtomicUsize>,
}

/// One connection counted against its thread until it ends.
pub(super) struct Open(Arc<AtomicUsize>);

impl Open {
    /// Counts one more connection on `open`, until the returned guard is dropped.
    fn count(open: &Arc<AtomicUsize>) -> Open {
        open.fetch_add(1, Ordering::Relaxed);
        Open(Arc::clone(open))
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl PerCore {
    /// `n` threads, or `None` for 0 (or when a thread could not be started, which is logged):
    /// the shared runtime serves.
    pub(super) fn start(n: usize) -> Option<PerCore> {
        let stop = CancellationToken::new();
        let mut threads = Vec::with_capacity(n);
        for i in 0..n {
            match CoreThread::start(i, stop.clone()) {
                Ok(thread) => threads.push(thread),
                Err(e) => {
                    tracing::warn!(target: "mcp::http", error = %e, "could not start a per-core thread; serving on the shared runtime");
                    stop.cancel();
                    return None;
                }
            }
        }
        (!threads.is_empty()).then_some(PerCore { threads, stop })
    }

    /// Serves `io` on the thread serving the fewest connections (on the calling runtime
    /// when it cannot be moved there).
    pub(super) fn hand_over(&self, io: TcpStream, connections: &Connections, watcher: Watcher) {
        let Some(thread) = self
            .threads
            .iter()
            .min_by_key(|t| t.open.load(Ordering::Relaxed))
        else {
            tokio::spawn(connections.serve(io, watcher, None));
            return;
        };
        // Out of this runtime's reactor, into the thread's.
        let io = match io.into_std() {
            Ok(io) => io,
            Err(e) => {
                tracing::debug!(target: "mcp::http", error = %e, "could not hand a connection over; closed");
                return;
            }
        };
        let registered = {
            let _in_thread = thread.runtime.enter();
            TcpStream::from_std(io)
        };
        match registered {
            Ok(io) => {
                let open = Open::count(&thread.open);
                thread
                    .runtime
                    .spawn(connections.serve(io, watcher, Some(open)));
            }
            Err(e) => {
                tracing::debug!(target: "mcp::http", error = %e, "could not hand a connection over; closed");
            }
        }
    }
}

impl Drop for PerCore {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl CoreThread {
    /// Thread `i`: a current-thread runtime that runs what is spawned on it until `stop`.
    fn start(i: usize, stop: CancellationToken) -> std::io::Result<CoreThread> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let handle = runtime.handle().clone();
        std::thread::Builder::new()
            .name(format!("mcp-http-{i}"))
            .spawn(move || runtime.block_on(stop.cancelled()))?;
        Ok(CoreThread {
            runtime: handle,
            open: Arc::new(AtomicUsize::new(0)),
        })
    }
}
