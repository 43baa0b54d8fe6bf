//! Sessions kept by this replica alone: the table is the truth, streams are numbered and
//! stored in the session for `Last-Event-ID`.

use std::sync::{Arc, Weak};
use std::time::Duration;

use axum::body::Bytes;
use axum::response::Response;
use tokio::sync::mpsc;

use crate::auth::Principal;
use crate::layers::BoxFuture;
use crate::protocol::Message;
use crate::server::{Reply, Server};
use crate::transport::http::guard::bad_request;
use crate::transport::streamable_http::errors::{already_open, session_not_found};
use crate::transport::streamable_http::exchange::{StreamLog, done};
use crate::transport::streamable_http::session::{
    AlreadyOpen, EventId, Lookup, Opened, Resume, STANDALONE, Session, SessionBackend, SessionTable,
};

/// Sessions on this replica only.
pub(crate) struct LocalSessions;

impl SessionBackend for LocalSessions {
    fn attach(&self, _table: Weak<SessionTable>) -> Option<crate::cluster::BusHandler> {
        None
    }

    fn lookup<'a>(
        &'a self,
        table: &'a Arc<SessionTable>,
        _server: &'a Server,
        id: &'a str,
        principal: Option<&'a Principal>,
    ) -> Lookup<'a> {
        let found = match table.get(id) {
            // A session is bound to the principal that created it: anyone else is told it
            // does not exist, as for an id never issued.
            Some(s) if s.owned_by(principal) => {
                s.touch();
                Ok(s)
            }
            _ => Err(session_not_found()),
        };
        futures::future::Either::Left(std::future::ready(found))
    }

    fn created<'a>(&'a self, _session: &'a Session) -> BoxFuture<'a, Result<(), Response>> {
        Box::pin(async { Ok(()) })
    }

    fn deliver<'a>(&'a self, session: &'a Session, message: Message) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let _ = session.conn.handle(message).await;
        })
    }

    fn stream_log(
        &self,
        session: &Arc<Session>,
        priming: Option<Duration>,
        _requests: &[Message],
    ) -> Box<dyn StreamLog> {
        Box::new(LocalLog {
            session: Arc::clone(session),
            priming,
            stream: None,
        })
    }

    fn open_get<'a>(
        &'a self,
        session: &'a Arc<Session>,
        last_event_id: Option<&'a str>,
        priming: Option<Duration>,
    ) -> BoxFuture<'a, Result<Opened, Response>> {
        let opened = match last_event_id {
            None => match session.open_standalone(priming) {
                Ok(rx) => Ok((rx, true)),
                Err(AlreadyOpen) => Err(already_open(session)),
            },
            Some(text) => match EventId::parse(text) {
                None => Err(bad_request(format!(
                    "Bad Request: Last-Event-ID {text:?} is not an event id of this server"
                ))),
                Some(cursor) => match session.resume(cursor) {
                    Resume::Stream(rx) => Ok((rx, cursor.stream == STANDALONE)),
                    Resume::Unknown => Err(bad_request(format!(
                        "Bad Request: Last-Event-ID {text:?} names no stream of this session"
                    ))),
                },
            },
        };
        Box::pin(async move { opened })
    }

    fn remove<'a>(
        &'a self,
        table: &'a SessionTable,
        id: &'a str,
    ) -> BoxFuture<'a, Result<(), Response>> {
        table.remove(id);
        Box::pin(async { Ok(()) })
    }

    fn push<'a>(&'a self, session: &'a Session, frame: String) -> BoxFuture<'a, ()> {
        session.publish(STANDALONE, frame);
        Box::pin(async {})
    }

    fn keep_alive<'a>(&'a self, _busy: Vec<Arc<str>>) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }
}

/// A local session's stream: numbered and stored in the session, for `Last-Event-ID`.
struct LocalLog {
    session: Arc<Session>,
    priming: Option<Duration>,
    stream: Option<u64>,
}

impl StreamLog for LocalLog {
    fn open(&mut self, live: mpsc::Sender<Bytes>) -> BoxFuture<'_, ()> {
        self.stream = Some(self.session.open_stream(live, self.priming));
        done()
    }

    fn publish(&mut self, frame: String) -> BoxFuture<'_, bool> {
        if let Some(id) = self.stream {
            self.session.publish(id, frame);
        }
        Box::pin(async { true })
    }

    fn finish(&mut self, replies: Vec<Reply>) -> BoxFuture<'_, ()> {
        if let Some(id) = self.stream {
            for reply in replies {
                self.session.publish(id, reply.into_frame());
            }
            self.session.finish(id);
        }
        done()
    }
}
