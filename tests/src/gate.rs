//! A tool that blocks until the test releases it, counting how many calls started,
//! finished, and were dropped before finishing (cancelled, timed out, or disconnected).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcp::Ctx;
use mcp::registry::{ToolArgs, ToolDef};
use serde_json::json;
use tokio::sync::Semaphore;

/// Shared counters and the release valve of gated tools.
#[derive(Clone)]
pub struct Gate {
    inner: Arc<GateInner>,
}

struct GateInner {
    started: AtomicUsize,
    finished: AtomicUsize,
    dropped: AtomicUsize,
    release: Semaphore,
}

/// Counts a call as dropped unless it reached the end.
struct Watch {
    gate: Arc<GateInner>,
    done: bool,
}

impl Drop for Watch {
    fn drop(&mut self) {
        let counter = if self.done {
            &self.gate.finished
        } else {
            &self.gate.dropped
        };
        counter.fetch_add(1, Ordering::SeqCst);
    }
}

impl Default for Gate {
    fn default() -> Self {
        Gate::new()
    }
}

impl Gate {
    /// A closed gate.
    pub fn new() -> Self {
        Gate {
            inner: Arc::new(GateInner {
                started: AtomicUsize::new(0),
                finished: AtomicUsize::new(0),
                dropped: AtomicUsize::new(0),
                release: Semaphore::new(0),
            }),
        }
    }

    /// A tool named `name` that waits at this gate and then answers `"released"`.
    pub fn tool(&self, name: &str) -> ToolDef {
        let gate = Arc::clone(&self.inner);
        ToolDef::new(
            name,
            "Waits at a gate.",
            json!({"type": "object"}),
            move |_ctx: Ctx, _args: ToolArgs| {
                let gate = Arc::clone(&gate);
                async move {
                    gate.started.fetch_add(1, Ordering::SeqCst);
                    let mut watch = Watch {
                        gate: Arc::clone(&gate),
                        done: false,
                    };
                    gate.release
                        .acquire()
                        .await
                        .expect("the gate is never closed")
                        .forget();
                    watch.done = true;
                    drop(watch);
                    "released"
                }
            },
        )
    }

    /// Lets `n` waiting (or future) calls through.
    pub fn release(&self, n: usize) {
        self.inner.release.add_permits(n);
    }

    /// Calls that started.
    pub fn started(&self) -> usize {
        self.inner.started.load(Ordering::SeqCst)
    }

    /// Calls that ran to the end.
    pub fn finished(&self) -> usize {
        self.inner.finished.load(Ordering::SeqCst)
    }

    /// Calls whose future was dropped before the end.
    pub fn dropped(&self) -> usize {
        self.inner.dropped.load(Ordering::SeqCst)
    }

    /// Waits until at least `n` calls started, failing the test after 5 s.
    pub async fn wait_started(&self, n: usize) {
        self.wait_for("started", n, || self.started()).await;
    }

    /// Waits until at least `n` calls were dropped, failing the test after 5 s.
    pub async fn wait_dropped(&self, n: usize) {
        self.wait_for("dropped", n, || self.dropped()).await;
    }

    async fn wait_for(&self, what: &str, n: usize, count: impl Fn() -> usize) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while count() < n {
            assert!(
                tokio::time::Instant::now() < deadline,
                "only {} of {n} calls {what} within 5 s",
                count()
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
}
