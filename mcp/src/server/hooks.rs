//! The server's own lifecycle: hooks that run once before anything is served (and can stop
//! the boot) and once after serving has ended.

use std::future::Future;
use std::pin::Pin;

use super::Server;

type HookFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// A start-up hook: runs once, before the transport accepts anything.
pub(crate) type StartHook = Box<dyn FnOnce(Server) -> HookFuture<Result<(), String>> + Send>;

/// A shutdown hook: runs once, after the transport stopped and in-flight calls ended.
pub(crate) type StopHook = Box<dyn FnOnce(Server) -> HookFuture<()> + Send>;

/// The hooks a built server still has to run; each list is taken when it runs, so it runs
/// once however often `start` or `shutdown` is called.
#[derive(Default)]
pub(crate) struct Hooks {
    pub(crate) start: parking_lot::Mutex<Vec<StartHook>>,
    pub(crate) stop: parking_lot::Mutex<Vec<StopHook>>,
}

impl Server {
    /// Runs the start-up hooks ([`ServerBuilder::on_start`], [`ServerBuilder::state_with`])
    /// in the order they were added, once: a second call does nothing. The first error stops
    /// the rest and is returned, naming what failed; a binary made by `server!` prints it and
    /// exits with status 1 before serving anything.
    ///
    /// The generated `main` calls this before serving; a `main` of your own (or a test)
    /// calls it before handing the server to a transport.
    ///
    /// [`ServerBuilder::on_start`]: crate::ServerBuilder::on_start
    /// [`ServerBuilder::state_with`]: crate::ServerBuilder::state_with
    pub async fn start(&self) -> Result<(), String> {
        let hooks = std::mem::take(&mut *self.inner.hooks.start.lock());
        for hook in hooks {
            hook(self.clone()).await?;
        }
        Ok(())
    }

    /// Runs the shutdown hooks ([`ServerBuilder::on_shutdown`]) once, the last added first
    /// (a second call does nothing).
    /// The generated `main` calls it after the transport stopped (stdin closed, SIGTERM or
    /// Ctrl-C) and the calls in flight ended.
    ///
    /// [`ServerBuilder::on_shutdown`]: crate::ServerBuilder::on_shutdown
    pub async fn finish(&self) {
        self.end_tasks().await;
        let hooks = std::mem::take(&mut *self.inner.hooks.stop.lock());
        for hook in hooks.into_iter().rev() {
            hook(self.clone()).await;
        }
    }

    /// The application's state of type `T`, if the server holds one (see
    /// [`ServerBuilder::state`](crate::ServerBuilder::state)).
    pub fn state<T: Send + Sync + 'static>(&self) -> Option<std::sync::Arc<T>> {
        self.inner.states.get::<T>()
    }
}
