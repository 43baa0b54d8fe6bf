//! Where sessions live: this replica alone ([`local::LocalSessions`]), or a cluster of
//! replicas sharing them through a store and a bus ([`cluster::ClusterSessions`]). The
//! endpoint's handlers ask the backend, chosen once when the session table is built, and
//! never branch on which one it is.

pub(super) mod cluster;
pub(super) mod local;

use std::sync::{Arc, Weak};
use std::time::Duration;

use axum::body::Bytes;
use axum::response::Response;
use tokio::sync::mpsc;

use super::exchange::StreamLog;
use super::session::{Session, SessionTable};
use crate::auth::Principal;
use crate::layers::BoxFuture;
use crate::protocol::Message;
use crate::server::Server;

/// A GET stream: its events, and whether it is the session's standalone stream (which ends
/// only at shutdown) rather than a resumed POST stream.
pub(crate) type Opened = (mpsc::Receiver<Bytes>, bool);

/// What differs between sessions kept here and sessions shared by replicas.
pub(crate) trait SessionBackend: Send + Sync + 'static {
    /// Called once the table exists; a cluster listens to the other replicas here (the
    /// returned handler must be kept alive by the table).
    fn attach(&self, table: Weak<SessionTable>) -> Option<crate::cluster::BusHandler>;

    /// The session a request names, if it is alive and owned by `principal`; the error
    /// response otherwise (404, or 503 when a shared store is unreachable).
    fn lookup<'a>(
        &'a self,
        table: &'a Arc<SessionTable>,
        server: &'a Server,
        id: &'a str,
        principal: Option<&'a Principal>,
    ) -> BoxFuture<'a, Result<Arc<Session>, Response>>;

    /// A session whose `initialize` just succeeded here; an error response when it could
    /// not be made known where it must be.
    fn created<'a>(&'a self, session: &'a Session) -> BoxFuture<'a, Result<(), Response>>;

    /// A notification, or an answer to one of the server's questions, on a session.
    fn deliver<'a>(&'a self, session: &'a Session, message: Message) -> BoxFuture<'a, ()>;

    /// Where the stream of an exchange about to run `requests` goes.
    fn stream_log(
        &self,
        session: &Arc<Session>,
        live: mpsc::Sender<Bytes>,
        priming: Option<Duration>,
        requests: &[Message],
    ) -> Box<dyn StreamLog>;

    /// Opens the session's GET stream, or resumes the stream `last_event_id` names.
    fn open_get<'a>(
        &'a self,
        session: &'a Arc<Session>,
        last_event_id: Option<&'a str>,
        priming: Option<Duration>,
    ) -> BoxFuture<'a, Result<Opened, Response>>;

    /// Ends a session (everywhere).
    fn remove<'a>(
        &'a self,
        table: &'a SessionTable,
        id: &'a str,
    ) -> BoxFuture<'a, Result<(), Response>>;

    /// A frame the server sends the session outside any request, for its GET stream.
    fn push<'a>(&'a self, session: &'a Session, frame: String) -> BoxFuture<'a, ()>;

    /// Sessions busy on this replica: a cluster extends their life everywhere.
    fn keep_alive<'a>(&'a self, busy: Vec<Arc<str>>) -> BoxFuture<'a, ()>;
}
