//! The Streamable HTTP transport: the handshake era (protocol 2025-03-26 to 2025-11-25:
//! sessions, POST, GET and DELETE) and the stateless 2026-07-28 revision, served together
//! on one endpoint. See [`crate::transport::http`] for the public API and the rules it
//! follows.
//!
//! # Which path a request takes
//!
//! [`classify`] picks, per request:
//!
//! - the **session** path when it carries `Mcp-Session-Id`;
//! - a **new session** for `initialize` without a 2026-07-28 marker (a `_meta` protocol
//!   version in the body, or an `MCP-Protocol-Version` header that is not a handshake
//!   revision);
//! - the **sessionless handshake** path when the body has no `_meta` protocol version and
//!   the header names a handshake revision (400 unless sessionless requests are allowed;
//!   when they are, a request with neither marker takes this path too, as a client older
//!   than the header would send it);
//! - the **stateless** 2026-07-28 path for everything else ([`stateless`]).
//!
//! GET and DELETE without `Mcp-Session-Id` get 405: the stateless revision has no stream
//! to open and no session to end.
//!
//! Every request to the endpoint, whichever way it arrives, is answered by
//! [`Endpoint`]: the Host/Origin guard, bearer authentication, then its method.
mod backend;
mod endpoint;
mod errors;
mod exchange;
mod headers;
mod post;
mod request;
pub(crate) mod session;
mod session_methods;
mod stateless;

use std::sync::Arc;

pub(crate) use endpoint::{Endpoint, EndpointService};
pub(crate) use session::SessionTable;

use crate::transport::http::config::HttpConfig;

/// The session table of a router: sessions on this replica, or shared by a cluster.
pub(crate) fn session_table(
    config: &HttpConfig,
    cluster: Option<&crate::cluster::Cluster>,
) -> Arc<SessionTable> {
    let backend: Arc<dyn session::SessionBackend> = match cluster {
        None => Arc::new(backend::local::LocalSessions),
        Some(c) => Arc::new(backend::cluster::ClusterSessions::new(
            c.clone(),
            config.session_idle_timeout,
            config.event_store_events,
            config.session_recheck,
        )),
    };
    SessionTable::new(config, backend)
}
