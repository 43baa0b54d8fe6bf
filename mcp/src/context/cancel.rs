//! How a request is stopped, with its token made only when something waits on it.
//!
//! Most requests finish on their first poll, before anything could cancel them; a
//! `CancellationToken` costs an allocation, and a lock on every clone, drop and
//! `is_cancelled`. The token is made the first time it is needed: a handler awaiting
//! `Ctx::cancelled`, or the dispatcher registering a request that outlived its first poll.

use std::sync::OnceLock;

use tokio_util::sync::CancellationToken;

use crate::conn::ConnState;

/// A request's cancellation: the connection's (a request no `notifications/cancelled` can
/// reach), or a token of its own, made on first use (one the dispatcher registers once the
/// request outlives its first poll, or a task's).
#[derive(Clone, Debug)]
pub(crate) enum RequestCancel {
    /// Stopped when its connection closes.
    Connection,
    /// Stopped by its own token.
    Own(OnceLock<CancellationToken>),
}

impl RequestCancel {
    /// A token of the request's own when `own` (made on first use), else the connection's.
    pub(crate) fn new(own: bool) -> RequestCancel {
        if own {
            RequestCancel::Own(OnceLock::new())
        } else {
            RequestCancel::Connection
        }
    }

    /// This very token (a task's, which outlives the request that created it).
    pub(crate) fn given(token: CancellationToken) -> RequestCancel {
        RequestCancel::Own(OnceLock::from(token))
    }

    /// The token, made now if it was not yet.
    pub(crate) fn token<'a>(&'a self, conn: &'a ConnState) -> &'a CancellationToken {
        match self {
            RequestCancel::Connection => conn.closed.token(),
            RequestCancel::Own(token) => token.get_or_init(CancellationToken::new),
        }
    }

    /// Whether the request was cancelled (or, without a token of its own, its connection
    /// closed). A token of its own that was never made was never registered, so nothing
    /// can have cancelled it.
    pub(crate) fn is_cancelled(&self, conn: &ConnState) -> bool {
        match self {
            RequestCancel::Connection => conn.closed.is_cancelled(),
            RequestCancel::Own(token) => token.get().is_some_and(CancellationToken::is_cancelled),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conn::{ConnId, Transport};

    fn conn() -> ConnState {
        ConnState::new(ConnId::new("c"), Transport::Stdio, 0, 8, None)
    }

    /// Without a token of its own a request follows its connection; with one, only its
    /// token (however it was made) stops it.
    #[test]
    fn a_request_is_stopped_by_its_own_token_or_its_connection() {
        let conn = conn();
        let follows = RequestCancel::new(false);
        let own = RequestCancel::new(true);
        let given = RequestCancel::given(CancellationToken::new());
        assert!(!follows.is_cancelled(&conn) && !own.is_cancelled(&conn));
        let made = own.token(&conn).clone();
        conn.close();
        assert!(follows.is_cancelled(&conn));
        assert!(
            follows.token(&conn).is_cancelled(),
            "the connection's own token"
        );
        assert!(
            !own.is_cancelled(&conn),
            "closing does not reach an unregistered token"
        );
        made.cancel();
        assert!(
            own.is_cancelled(&conn),
            "the token made first is the one kept"
        );
        given.token(&conn).cancel();
        assert!(given.is_cancelled(&conn));
    }
}
