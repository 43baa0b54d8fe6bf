//! The legacy transport's sessions: each lives as long as its GET stream.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::RwLock;
use tokio_util::sync::CancellationToken;

use crate::auth::Principal;
use crate::server::{Connection, Outbound};
use crate::transport::http::config::HttpConfig;

/// One legacy session.
pub(crate) struct SseSession {
    pub(crate) conn: Connection,
    pub(crate) out: Outbound,
    pub(crate) owner: Option<(String, Option<String>)>,
    pub(crate) closed: CancellationToken,
}

impl SseSession {
    pub(crate) fn owned_by(&self, principal: Option<&Principal>) -> bool {
        match (&self.owner, principal) {
            (None, None) => true,
            (Some((sub, iss)), Some(p)) => *sub == p.subject && *iss == p.issuer,
            _ => false,
        }
    }
}

/// The legacy transport's sessions: each lives as long as its GET stream.
pub(crate) struct SseTable {
    pub(crate) map: RwLock<HashMap<Arc<str>, Arc<SseSession>>>,
    pub(crate) max: usize,
}

impl SseTable {
    pub(crate) fn new(config: &HttpConfig) -> Arc<Self> {
        Arc::new(SseTable {
            map: RwLock::new(HashMap::new()),
            max: config.max_sessions,
        })
    }

    pub(crate) fn get(&self, id: &str) -> Option<Arc<SseSession>> {
        self.map.read().get(id).cloned()
    }

    pub(crate) fn remove(&self, id: &str) {
        if let Some(s) = self.map.write().remove(id) {
            s.closed.cancel();
            s.conn.close_pending();
            tracing::debug!(target: "mcp::sse", conn_id = %s.conn.id(), "SSE session ended");
        }
    }
}
