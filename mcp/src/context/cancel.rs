//! How a request is stopped, with its token made only when something waits on it.
//!
//! Most requests finish on their first poll, before anything could cancel them; a
//! `CancellationToken` costs an allocation, and a lock on every clone, drop and
//! `is_cancelled`. The token is made the first time it is needed: a handler awaiting
//! `Ctx::cancelled`, or the dispatcher registering a request that outlived its first poll.

use std::sync::OnceLock;

use tokio_util::sync::CancellationToken;

use crate::conn::ConnState;

/// A request's cancellation: its own token (one `notifications/cancelled` can reach, once
/// the dispatcher registers it) or the connection's.
#[derive(Clone, Debug)]
pub(crate) struct RequestCancel {
    token: OnceLock<CancellationToken>,
    own: bool,
}

impl RequestCancel {
    /// A token of the request's own when `own` (made on first use), else the connection's.
    pub(crate) fn new(own: bool) -> RequestCancel {
        RequestCancel {
            token: OnceLock::new(),
            own,
        }
    }

    /// This very token (a task's, which outlives the request that created it).
    pub(crate) fn given(token: CancellationToken) -> RequestCancel {
        RequestCancel {
            token: OnceLock::from(token),
            own: true,
        }
    }

    /// The token, made now if it was not yet.
    pub(crate) fn token(&self, conn: &ConnState) -> &CancellationToken {
        self.token.get_or_init(|| {
            if self.own {
                CancellationToken::new()
            } else {
                conn.closed.token().clone()
            }
        })
    }

    /// Whether the request was cancelled (or, without a token of its own, its connection
    /// closed). A token of its own that was never made was never registered, so nothing
    /// can have cancelled it.
    pub(crate) fn is_cancelled(&self, conn: &ConnState) -> bool {
        if !self.own {
            return conn.closed.is_cancelled();
        }
        self.token
            .get()
            .is_some_and(CancellationToken::is_cancelled)
    }
}
