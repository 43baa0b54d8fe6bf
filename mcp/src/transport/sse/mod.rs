//! The legacy HTTP+SSE transport (protocol 2024-11-05, deprecated since 2025-03-26), for
//! clients that predate Streamable HTTP.
//!
//! `GET /sse` opens a session: its first event is `endpoint`, whose data is the URL to POST
//! messages to (`/messages?sessionId=<id>`, the id from the OS CSPRNG). Each POST there is
//! answered `202 Accepted`; the responses, and everything else the server sends the
//! session (progress, logs, questions, list_changed), arrive as `event: message` on that
//! session's stream alone. Closing the GET stream ends the session: its questions close and
//! its running requests stop.
//!
//! The same safety rules as Streamable HTTP apply (Host and Origin checks, size limits,
//! bearer tokens, the boot guard); see [`crate::transport::http`]. One difference: a
//! `tools/call` lacking a tool's scopes is not turned into a 403 step-up challenge here
//! (clients of this transport predate step-up authorization); the tool seam answers it
//! with an `isError` result naming the missing scopes. Serve it on its own with
//! [`router`] or [`serve`], or beside Streamable HTTP with
//! [`HttpConfig::legacy_sse`](crate::transport::http::HttpConfig::legacy_sse).

pub(crate) mod routes;
pub(crate) mod table;

use std::net::SocketAddr;

use axum::Router;

use crate::transport::http::{self, HttpConfig, HttpError, Transports};

/// A router serving only the legacy HTTP+SSE transport (`GET /sse`,
/// `POST /messages?sessionId=...`), `GET /health`, and Protected Resource Metadata when
/// bearer auth is configured. The boot guard and configuration checks are those of
/// [`http::router`].
pub fn router(server: crate::Server, config: HttpConfig) -> Result<Router, HttpError> {
    http::build(
        server,
        config,
        Transports {
            streamable: false,
            legacy_sse: true,
        },
    )
    .map(|built| built.router)
}

/// Binds `addr` and serves [`router`] until Ctrl-C or SIGTERM (see [`http::serve`]).
pub async fn serve(
    server: crate::Server,
    config: HttpConfig,
    addr: SocketAddr,
) -> Result<(), HttpError> {
    let app = router(server.clone(), config.clone()).inspect_err(http::log_refusal)?;
    http::join_cluster(&server).await?;
    http::run_bound(app, config, addr).await
}
