//! [`App`]: what every handler of one router shares (the server, the configuration, the
//! session tables). Below the route handlers that use it and the builder that makes it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio_util::sync::CancellationToken;

use super::config::HttpConfig;
use super::oauth::BearerAuth;
use crate::server::Server;
use crate::transport::sse::table::SseTable;
use crate::transport::streamable_http::session::SessionTable;

/// What every handler of one router shares.
pub(crate) struct App {
    pub(crate) server: Server,
    pub(crate) config: HttpConfig,
    pub(crate) max_body: usize,
    pub(crate) bearer: Option<Arc<BearerAuth>>,
    pub(crate) sessions: Arc<SessionTable>,
    pub(crate) sse_sessions: Arc<SseTable>,
    /// Whether the task that shuts the server down with the router is running.
    pub(crate) shutdown_watched: AtomicBool,
    /// Cancelled when the router is dropped, ending that task.
    pub(crate) dropped: CancellationToken,
}

impl App {
    /// Starts (once: when the router is built inside a runtime, else on the first request)
    /// the task
    /// that calls [`Server::shutdown`] when the configuration's shutdown token is
    /// cancelled: open `subscriptions/listen` streams then end with their final result
    /// while the HTTP server drains.
    pub(crate) fn watch_shutdown(&self) {
        // Every request asks; only the first writes. A swap on each request would take the
        // flag's cache line from the other core every time both serve requests.
        if self.shutdown_watched.load(Ordering::Acquire)
            || self.shutdown_watched.swap(true, Ordering::AcqRel)
        {
            return;
        }
        if let Some(cluster) = self.server.cluster() {
            cluster.start_in_background();
        }
        let server = self.server.clone();
        let shutdown = self.config.shutdown.clone();
        let dropped = self.dropped.clone();
        tokio::spawn(async move {
            tokio::select! {
                _ = shutdown.cancelled() => server.shutdown(),
                _ = dropped.cancelled() => {}
            }
        });
    }
}

impl Drop for App {
    fn drop(&mut self) {
        self.dropped.cancel();
    }
}
