//! Serving a [`Server`] over HTTP: the Streamable HTTP transport (one endpoint, default
//! `/mcp`, serving the handshake era, protocol 2025-03-26 to 2025-11-25, and the stateless
//! 2026-07-28 revision side by side), optionally the legacy HTTP+SSE transport
//! (2024-11-05) beside it, and the safety rules they share.
//!
//! [`router`] returns an [`axum::Router`] to mount in an application of your own (with your
//! own tower layers); [`serve`] binds an address (127.0.0.1 unless told otherwise), sets
//! `TCP_NODELAY` on every accepted socket and serves until Ctrl-C or SIGTERM, then shuts
//! down gracefully.
//!
//! ```no_run
//! use mcp::prelude::*;
//! use mcp::transport::http::{self, HttpConfig};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let server = Server::builder("files", "1.0.0")
//!     .authorizer(mcp::auth::ask_before_sensitive())
//!     .read_authorizer(mcp::auth::allow_all())
//!     .build()?;
//! http::serve(server, HttpConfig::new(), http::DEFAULT_ADDR).await?;
//! # Ok(()) }
//! ```
//!
//! # What every request goes through
//!
//! - **Host and Origin** are checked against allow-lists (the loopback names on any port by
//!   default) before anything else: a foreign one gets 403 with a JSON-RPC error body. This
//!   defeats DNS rebinding, where a web page makes the browser talk to a local server.
//!   `GET /health` is exempt: it reveals nothing but liveness.
//! - **Header and body sizes** are bounded (431 and 413, with a JSON-RPC error saying the
//!   limit). Bodies must be `Content-Type: application/json` (415); POSTs must accept both
//!   `application/json` and `text/event-stream`, GETs `text/event-stream` (406).
//! - **Bearer tokens**, when [`BearerAuth`] is configured: 401 with
//!   `WWW-Authenticate: Bearer resource_metadata="..."` without a valid token, 403
//!   `insufficient_scope` without the required scopes; the verified principal (never the
//!   client's own claims) reaches the authorizers and `Ctx`.
//!
//! # The boot guard
//!
//! A network transport has no process boundary to lean on. [`router`] and [`serve`] refuse
//! to start when the server lacks a tool authorizer chosen by a person or a read
//! authorizer; the error says what is missing and how to fix it.
//! [`HttpConfig::allow_unauthorized_for_local_development`] lifts the guard, with a warning
//! on every boot, for loopback addresses only: [`HttpServer::bind`] (and so [`serve`])
//! refuses any other address unless [`HttpConfig::allow_unauthorized_on_network`] is on
//! too. See [`mcp::auth::deployment`](crate::auth::deployment).
//!
//! # Streamable HTTP sessions
//!
//! `initialize` creates a session: its `Mcp-Session-Id` (from the OS CSPRNG) is its own
//! connection, so whatever it is asked (elicitation) belongs to it alone and cannot be
//! answered from another session. A request answers `application/json` when nothing comes
//! before its response, and becomes an SSE stream (priming event, progress, logs, questions
//! for that request, then the response) when something does. Streams are resumable with
//! `Last-Event-ID` from a bounded per-session store. `GET` opens the session's stream for
//! unsolicited messages (one per session; a second gets 409), `DELETE` ends the session.
//! Idle sessions expire; their number is capped (503 when full). Disconnecting from a
//! stream does not cancel its request (`notifications/cancelled` does).
//!
//! Handshake-era requests without `Mcp-Session-Id` (other than `initialize`) get 400 unless
//! [`HttpConfig::allow_sessionless_requests`] is on; then they run on one shared anonymous
//! connection that is never sent a request (no elicitation) and gets no progress or logs.
//!
//! # The stateless revision (2026-07-28)
//!
//! The era is chosen per request on the same endpoint: a request with `Mcp-Session-Id`, an
//! `initialize` without a 2026-07-28 marker, or one whose `MCP-Protocol-Version` names a
//! handshake revision while its body has no `_meta` protocol version is handshake-era;
//! everything else is stateless. A stateless request carries its own metadata in `_meta`
//! and mirrors it in headers (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, and
//! `Mcp-Param-*` for tool arguments whose schema has `x-mcp-header`); the headers are
//! checked against the body before anything runs, then the version and the method:
//!
//! | Outcome | Status | JSON-RPC error |
//! |---|---|---|
//! | `_meta` declares a version, no `MCP-Protocol-Version` header | 400 | -32020 |
//! | `_meta` lacks `protocolVersion` or `clientCapabilities` | 400 | -32602 |
//! | a header missing, malformed (bad base64) or not matching the body | 400 | -32020 |
//! | a version this server does not speak | 400 | -32022 `{supported, requested}` |
//! | a method this revision does not have (`initialize`, `ping`, ...) | 404 | -32601 |
//! | a client capability the request needed but did not declare | 400 | -32021 |
//! | a response, as JSON or as an SSE stream | 200 | |
//! | a notification | 202, empty body | |
//! | `GET` or `DELETE` without `Mcp-Session-Id` | 405 | -32600 |
//!
//! Every error keeps the request's id. A response is plain JSON unless the request
//! produces notifications first (progress; logs when its `_meta` asks for a level): then
//! it is an SSE stream of that request's notifications followed by its response. Closing
//! the stream cancels the request (its handler's future is dropped).
//! `subscriptions/listen` answers with a long-lived stream: the acknowledgement, the
//! change notifications it asked for (raised by any request or by the application),
//! keep-alive comments, and the listen's final result when the server shuts down
//! ([`serve`] and [`HttpServer`] call [`Server::shutdown`] on Ctrl-C, SIGTERM or the
//! shutdown token). No session id is minted or echoed, and `Last-Event-ID` is ignored.
//!
//! No CORS headers are added: a browser-based client on another origin needs a CORS layer
//! of your own (for example tower-http's `CorsLayer`) that allows the MCP headers and
//! exposes `Mcp-Session-Id`, and that origin in [`HttpConfig::allow_origin`].
//!
//! # Scope challenges on `tools/call`
//!
//! A tool may require scopes (`ToolDef::scopes`). With [`BearerAuth`] configured, calling
//! such a tool with a token that lacks them is answered with HTTP 403 and an
//! `insufficient_scope` challenge naming the endpoint's required scopes plus the tool's, so
//! the client can ask for a token with more scopes (step-up authorization). Without bearer
//! auth there is no token to step up, and the core's tool seam answers with an `isError`
//! result naming the missing scopes (a network caller without a token holds none).

pub(crate) mod app;
pub(crate) mod build;
pub(crate) mod config;
mod error;
pub(crate) mod guard;
mod head_timeout;
pub(crate) mod oauth;
mod per_core;
pub(crate) mod sse_body;

use std::future::Future;
use std::io;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::sync::Arc;

use axum::Router;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// The axum version the routers are built with, so an application can name
/// [`axum::Router`] and add layers without a version mismatch.
pub use axum;
pub(crate) use build::{Built, Transports, build};
pub use config::{DEFAULT_ALLOWED_HOSTS, HttpConfig};
pub use error::HttpError;
pub use oauth::{BearerAuth, METADATA_PATH};

use crate::server::Server;
use crate::transport::streamable_http::Endpoint;

/// The address [`serve`] callers use when none is given: loopback only, port 8080 (the
/// same default as the binary's `--bind`).
pub const DEFAULT_ADDR: SocketAddr = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 8080));

/// The most threads [`HttpConfig::per_core_threads`] starts: far above any core count, low
/// enough that a typo cannot start thousands of threads.
pub const MAX_PER_CORE_THREADS: usize = 1024;

/// The router serving Streamable HTTP at the configured endpoint (and the legacy HTTP+SSE
/// routes when [`HttpConfig::legacy_sse`] is on), `GET /health`, and Protected Resource
/// Metadata when bearer auth is configured. Mount it in your own application, with your
/// own layers, at the root of the host.
///
/// Refuses (see the [module docs](self)) when the boot guard fails or the configuration
/// cannot work.
pub fn router(server: Server, config: HttpConfig) -> Result<Router, HttpError> {
    built(server, config).map(|built| built.router)
}

/// [`router`], with its endpoint for [`HttpServer::bind_built`].
pub(crate) fn built(server: Server, config: HttpConfig) -> Result<Built, HttpError> {
    let legacy_sse = config.legacy_sse;
    build(
        server,
        config,
        Transports {
            streamable: true,
            legacy_sse,
        },
    )
}

/// Binds `addr` and serves [`router`] until Ctrl-C or SIGTERM, then shuts down
/// gracefully: open SSE streams end, running requests get
/// [`HttpConfig::shutdown_grace`] to finish.
pub async fn serve(server: Server, config: HttpConfig, addr: SocketAddr) -> Result<(), HttpError> {
    bind(server, config, addr).await?.run().await
}

/// Binds `addr` (for [`HttpServer::local_addr`], e.g. with port 0) without serving yet.
pub async fn bind(
    server: Server,
    config: HttpConfig,
    addr: SocketAddr,
) -> Result<HttpServer, HttpError> {
    let built = built(server.clone(), config.clone()).inspect_err(log_refusal)?;
    join_cluster(&server).await?;
    HttpServer::bind_built(built, config, addr).await
}

/// A replica hears the bus before it accepts its first request.
pub(crate) async fn join_cluster(server: &Server) -> Result<(), HttpError> {
    let Some(cluster) = server.cluster() else {
        return Ok(());
    };
    cluster.start().await.map_err(|e| {
        let e = HttpError::Config(format!("cannot join the cluster: {e}"));
        log_refusal(&e);
        e
    })
}

pub(crate) fn log_refusal(e: &HttpError) {
    tracing::error!(target: "mcp::http", "{e}");
}

pub(crate) async fn run_bound(
    app: Router,
    config: HttpConfig,
    addr: SocketAddr,
) -> Result<(), HttpError> {
    HttpServer::bind(app, config, addr).await?.run().await
}

/// A TCP listener that sets `TCP_NODELAY` on every accepted socket. Without it, a small
/// SSE write that follows another can wait for the peer's delayed ACK (about 40 ms).
#[derive(Debug)]
pub struct NoDelayListener {
    inner: TcpListener,
}

impl NoDelayListener {
    /// Binds `addr`.
    pub async fn bind(addr: SocketAddr) -> io::Result<Self> {
        Ok(NoDelayListener {
            inner: TcpListener::bind(addr).await?,
        })
    }

    /// Wraps a bound listener.
    pub fn from_listener(inner: TcpListener) -> Self {
        NoDelayListener { inner }
    }
}

impl axum::serve::Listener for NoDelayListener {
    type Io = TcpStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            match self.inner.accept().await {
                Ok((stream, addr)) => {
                    if let Err(e) = stream.set_nodelay(true) {
                        tracing::debug!(target: "mcp::http", error = %e, "could not set TCP_NODELAY");
                    }
                    return (stream, addr);
                }
                Err(e) => {
                    // Out of descriptors or similar: back off instead of spinning.
                    tracing::warn!(target: "mcp::http", error = %e, "accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
            }
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.inner.local_addr()
    }
}

/// A bound HTTP server, ready to run.
#[derive(Debug)]
pub struct HttpServer {
    listener: NoDelayListener,
    app: Router,
    /// The endpoint of a router this crate built, answered without the router.
    endpoint: Option<Arc<Endpoint>>,
    shutdown: CancellationToken,
    grace: std::time::Duration,
    header_read_timeout: std::time::Duration,
    per_core_threads: usize,
}

impl HttpServer {
    /// Binds `addr` for `app` (a router from [`router`] or [`sse::router`](super::sse::router),
    /// possibly merged into yours); `config` supplies the shutdown token and grace period.
    pub async fn bind(
        app: Router,
        config: HttpConfig,
        addr: SocketAddr,
    ) -> Result<Self, HttpError> {
        Self::bind_endpoint(app, None, config, addr).await
    }

    /// Binds `addr` for a router this crate built as it is: requests to its endpoint go to
    /// the endpoint directly (see [`Endpoint`]), every other request to the router.
    pub(crate) async fn bind_built(
        built: Built,
        config: HttpConfig,
        addr: SocketAddr,
    ) -> Result<Self, HttpError> {
        Self::bind_endpoint(built.router, built.endpoint, config, addr).await
    }

    async fn bind_endpoint(
        app: Router,
        endpoint: Option<Arc<Endpoint>>,
        config: HttpConfig,
        addr: SocketAddr,
    ) -> Result<Self, HttpError> {
        config
            .guard
            .check_address(addr)
            .map_err(HttpError::Refused)?;
        let listener = NoDelayListener::bind(addr).await?;
        if !addr.ip().is_loopback() {
            if config
                .allowed_hosts
                .iter()
                .all(|h| DEFAULT_ALLOWED_HOSTS.contains(&h.as_str()))
            {
                tracing::warn!(target: "mcp::http", %addr,
                    "listening beyond loopback, but only loopback Host names are allowed: remote clients get 403 until HttpConfig::allow_host names this server");
            }
            if config.bearer.is_none() {
                tracing::warn!(target: "mcp::http", %addr, "listening beyond loopback without bearer authentication");
            }
        }
        tracing::info!(target: "mcp::http", addr = %listener.inner.local_addr()?, "MCP HTTP transport listening");
        Ok(HttpServer {
            listener,
            app,
            endpoint,
            shutdown: config.shutdown,
            grace: config.shutdown_grace,
            header_read_timeout: config.header_read_timeout,
            per_core_threads: config.per_core_threads,
        })
    }

    /// The bound address (with the real port when bound to port 0).
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.inner.local_addr()
    }

    /// The token that stops the server when cancelled.
    pub fn shutdown_token(&self) -> CancellationToken {
        self.shutdown.clone()
    }

    /// Serves until Ctrl-C, SIGTERM or the shutdown token.
    pub async fn run(self) -> Result<(), HttpError> {
        self.run_until(termination()).await
    }

    /// Serves until `signal` completes or the shutdown token is cancelled.
    pub async fn run_until(
        self,
        signal: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), HttpError> {
        let token = self.shutdown.clone();
        let trigger = token.clone();
        let grace = self.grace;
        tokio::spawn(async move {
            tokio::select! {
                _ = signal => trigger.cancel(),
                _ = trigger.cancelled() => {}
            }
        });
        let mut listener = self.listener;
        let connections = Connections {
            app: self.app,
            endpoint: self.endpoint,
            limit: self.header_read_timeout,
            http1: hyper::server::conn::http1::Builder::new(),
        };
        let graceful = hyper_util::server::graceful::GracefulShutdown::new();
        let per_core = per_core::PerCore::start(self.per_core_threads);
        loop {
            tokio::select! {
                (io, _) = axum::serve::Listener::accept(&mut listener) => {
                    match &per_core {
                        Some(threads) => threads.hand_over(io, &connections, graceful.watcher()),
                        None => {
                            tokio::spawn(connections.serve(io, graceful.watcher(), None));
                        }
                    }
                }
                _ = token.cancelled() => break,
            }
        }
        drop(listener);
        tokio::select! {
            _ = graceful.shutdown() => {}
            _ = tokio::time::sleep(grace) => {
                tracing::warn!(target: "mcp::http", "requests still running after the shutdown grace period; abandoning them");
            }
        }
        // Every connection has ended (or was abandoned): the threads' runtimes can go.
        drop(per_core);
        Ok(())
    }
}

/// What serving one accepted connection needs, shared by every connection.
#[derive(Clone)]
struct Connections {
    app: Router,
    endpoint: Option<Arc<Endpoint>>,
    limit: std::time::Duration,
    // hyper's own header timer is not set: it would arm and disarm a timer per request
    // (see `head_timeout`); each connection keeps the same limit with one of its own.
    http1: hyper::server::conn::http1::Builder,
}

impl Connections {
    /// Serves `io` until the client closes it or it waits too long for a request head.
    /// Each connection is hyper's HTTP/1 connection itself, not `axum::serve`'s: that one
    /// goes through hyper-util's protocol-sniffing builder with upgrades, about 7 KiB more
    /// per open connection (an idle GET SSE stream held 21 KiB, now 14; MCP needs neither
    /// HTTP/2 nor upgrades).
    /// `watcher` is made where connections are accepted, before a shutdown can start, so
    /// that a connection handed to another thread is never missed by the shutdown.
    /// `open`, when given, is held until the connection ends (a per-core thread's count).
    fn serve(
        &self,
        io: TcpStream,
        watcher: hyper_util::server::graceful::Watcher,
        open: Option<per_core::Open>,
    ) -> impl Future<Output = ()> + Send + 'static {
        let activity = head_timeout::Activity::new();
        let service = head_timeout::Watched {
            app: self.app.clone(),
            endpoint: self.endpoint.clone(),
            activity: Arc::clone(&activity),
        };
        let connection = self
            .http1
            .serve_connection(hyper_util::rt::TokioIo::new(io), service);
        let connection = watcher.watch(connection);
        let limit = self.limit;
        async move {
            let _open = open;
            tokio::select! {
                biased;
                ended = connection => if let Err(e) = ended {
                    tracing::trace!(target: "mcp::http", error = %e, "connection ended with an error");
                },
                () = head_timeout::expired(&activity, limit) => {
                    tracing::debug!(target: "mcp::http", ?limit, "no request head within the limit; connection closed");
                }
            }
        }
    }
}

/// Completes on Ctrl-C or SIGTERM. The handlers are installed when this is called, not when
/// the future is first polled, so a signal that arrives between the call and serving (say,
/// right after the boot log named the address) still stops the server gracefully instead
/// of killing the process.
pub fn termination() -> impl Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    let (interrupt, terminate) = {
        use tokio::signal::unix::{SignalKind, signal};
        (
            signal(SignalKind::interrupt()).ok(),
            signal(SignalKind::terminate()).ok(),
        )
    };
    async move {
        #[cfg(unix)]
        {
            let wait = |s: Option<tokio::signal::unix::Signal>| async move {
                match s {
                    Some(mut s) => {
                        s.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                _ = wait(interrupt) => {}
                _ = wait(terminate) => {}
            }
        }
        #[cfg(not(unix))]
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
        tracing::info!(target: "mcp::http", "shutting down");
    }
}
