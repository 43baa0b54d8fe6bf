//! [`HttpConfig`]: everything the HTTP transports can be told, each with a safe default.

use std::fmt;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::oauth::BearerAuth;
use crate::auth::deployment::{BootGuard, LIFT_CODE, NETWORK_CODE};

/// The hosts accepted in the `Host` header by default: the loopback names, on any port.
pub const DEFAULT_ALLOWED_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

/// Settings of the Streamable HTTP and legacy HTTP+SSE transports.
///
/// Every setting has a default meant for a server on the local machine: loopback hosts and
/// origins only, bounded sessions, bodies and headers, and no authentication (which the
/// boot guard refuses unless authorizers are configured). Build it with the
/// chained setters:
///
/// ```
/// use std::time::Duration;
/// use mcp::transport::http::HttpConfig;
///
/// let config = HttpConfig::new()
///     .endpoint("/mcp")
///     .allow_host("mcp.example.com")
///     .allow_origin("https://app.example.com")
///     .max_sessions(500)
///     .session_idle_timeout(Duration::from_secs(600));
/// # let _ = config;
/// ```
#[derive(Clone)]
pub struct HttpConfig {
    pub(crate) endpoint: String,
    pub(crate) allowed_hosts: Vec<String>,
    pub(crate) allowed_origins: Vec<String>,
    pub(crate) max_body_bytes: Option<usize>,
    pub(crate) max_header_bytes: usize,
    pub(crate) header_read_timeout: Duration,
    pub(crate) session_idle_timeout: Duration,
    pub(crate) session_recheck: Duration,
    pub(crate) max_sessions: usize,
    pub(crate) keep_alive: Duration,
    pub(crate) retry: Duration,
    pub(crate) event_store_events: usize,
    pub(crate) event_store_bytes: usize,
    pub(crate) max_streams_per_session: usize,
    pub(crate) sessionless: bool,
    pub(crate) legacy_sse: bool,
    pub(crate) sse_path: String,
    pub(crate) messages_path: String,
    pub(crate) bearer: Option<BearerAuth>,
    /// Third-party sign-in's browser routes (the `oauth` feature).
    #[cfg(feature = "oauth")]
    pub(crate) connect: Option<crate::connect::Connect>,
    pub(crate) guard: BootGuard,
    pub(crate) shutdown: CancellationToken,
    pub(crate) shutdown_grace: Duration,
    pub(crate) per_core_threads: usize,
}

impl fmt::Debug for HttpConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpConfig")
            .field("endpoint", &self.endpoint)
            .field("allowed_hosts", &self.allowed_hosts)
            .field("allowed_origins", &self.allowed_origins)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("max_header_bytes", &self.max_header_bytes)
            .field("header_read_timeout", &self.header_read_timeout)
            .field("session_idle_timeout", &self.session_idle_timeout)
            .field("session_recheck", &self.session_recheck)
            .field("max_sessions", &self.max_sessions)
            .field("keep_alive", &self.keep_alive)
            .field("retry", &self.retry)
            .field("event_store_events", &self.event_store_events)
            .field("event_store_bytes", &self.event_store_bytes)
            .field("max_streams_per_session", &self.max_streams_per_session)
            .field("sessionless", &self.sessionless)
            .field("per_core_threads", &self.per_core_threads)
            .field("legacy_sse", &self.legacy_sse)
            .field("bearer", &self.bearer.is_some())
            .field(
                "allow_unauthorized_for_local_development",
                &self.guard.lifted(),
            )
            .field(
                "allow_unauthorized_on_network",
                &self.guard.network_allowed(),
            )
            .finish_non_exhaustive()
    }
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            endpoint: "/mcp".to_owned(),
            allowed_hosts: DEFAULT_ALLOWED_HOSTS
                .iter()
                .map(|h| (*h).to_owned())
                .collect(),
            allowed_origins: DEFAULT_ALLOWED_HOSTS
                .iter()
                .flat_map(|h| [format!("http://{h}"), format!("https://{h}")])
                .collect(),
            max_body_bytes: None,
            max_header_bytes: 16 * 1024,
            header_read_timeout: Duration::from_secs(75),
            session_idle_timeout: Duration::from_secs(30 * 60),
            session_recheck: Duration::from_secs(1),
            max_sessions: 1000,
            keep_alive: Duration::from_secs(15),
            retry: Duration::from_secs(3),
            event_store_events: 256,
            event_store_bytes: 256 * 1024,
            max_streams_per_session: 32,
            sessionless: false,
            legacy_sse: false,
            sse_path: "/sse".to_owned(),
            messages_path: "/messages".to_owned(),
            bearer: None,
            #[cfg(feature = "oauth")]
            connect: None,
            guard: BootGuard::default(),
            shutdown: CancellationToken::new(),
            shutdown_grace: Duration::from_secs(5),
            per_core_threads: 0,
        }
    }
}

impl HttpConfig {
    /// The defaults (see [`HttpConfig`]).
    pub fn new() -> Self {
        Self::default()
    }

    /// The path of the Streamable HTTP endpoint (default `/mcp`).
    pub fn endpoint(mut self, path: impl Into<String>) -> Self {
        self.endpoint = path.into();
        self
    }

    /// Adds a host accepted in the `Host` header: `name` (any port) or `name:port`. `"*"`
    /// accepts every host, which disables the DNS-rebinding defence: only do that behind a
    /// proxy that checks the host itself.
    pub fn allow_host(mut self, host: impl Into<String>) -> Self {
        self.allowed_hosts.push(host.into());
        self
    }

    /// Replaces the accepted hosts (default: `localhost`, `127.0.0.1`, `[::1]` on any port).
    pub fn allowed_hosts<I, S>(mut self, hosts: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.allowed_hosts = hosts.into_iter().map(Into::into).collect();
        self
    }

    /// Adds an origin accepted in the `Origin` header: `scheme://host` (any port) or
    /// `scheme://host:port`. `"*"` accepts every origin. Requests without an `Origin`
    /// header (anything but a browser) are not affected.
    pub fn allow_origin(mut self, origin: impl Into<String>) -> Self {
        self.allowed_origins.push(origin.into());
        self
    }

    /// Replaces the accepted origins (default: `http` and `https` on the loopback names,
    /// any port).
    pub fn allowed_origins<I, S>(mut self, origins: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.allowed_origins = origins.into_iter().map(Into::into).collect();
        self
    }

    /// The largest request body, in bytes (default: the server's `max_message_size`,
    /// 4 MiB unless changed). A larger one gets 413.
    pub fn max_body_bytes(mut self, n: usize) -> Self {
        self.max_body_bytes = Some(n);
        self
    }

    /// The largest total size of a request's header names and values, in bytes (default
    /// 16 KiB). A larger one gets 431.
    pub fn max_header_bytes(mut self, n: usize) -> Self {
        self.max_header_bytes = n;
        self
    }

    /// How long a connection may take to send a request's head (default 75 s). A client
    /// that sends its headers slowly, or not at all, is disconnected after it instead of
    /// holding the connection (and its buffers) for as long as it likes; so is a kept-alive
    /// connection left idle that long between requests (clients reconnect). A request's
    /// body and its response, an SSE stream included, are not bounded by it. In front of a
    /// proxy that keeps connections to the server alive, keep the proxy's idle timeout
    /// below it: nginx's upstream `keepalive_timeout` and AWS load balancers' are 60 s.
    pub fn header_read_timeout(mut self, d: Duration) -> Self {
        self.header_read_timeout = d;
        self
    }

    /// How long a session may go without a request or an open stream before it expires
    /// (default 30 minutes). Requests naming an expired session get 404.
    pub fn session_idle_timeout(mut self, d: Duration) -> Self {
        self.session_idle_timeout = d;
        self
    }

    /// In a cluster, how long a replica serves a session from the copy it read from the
    /// shared store without reading the record again (default 1 s; at most half the
    /// session idle timeout; zero: every request reads it, one Redis round trip each).
    ///
    /// Nothing a client does is missed meanwhile: a replica that changes or deletes a
    /// session tells the others over the bus and answers only once each applied it (or
    /// this long has passed, after which no copy read before the change is served). What
    /// the store loses without a message (a flush, an eviction) is noticed within this
    /// long; while this replica's bus is broken every request reads the store.
    pub fn session_recheck(mut self, d: Duration) -> Self {
        self.session_recheck = d;
        self
    }

    /// How many sessions may exist at once (default 1000). An `initialize` beyond it gets
    /// 503 with a JSON-RPC error saying so. Keep it below the server's `max_connections`.
    pub fn max_sessions(mut self, n: usize) -> Self {
        self.max_sessions = n;
        self
    }

    /// How often an idle SSE stream gets a keep-alive comment (default 15 s).
    pub fn keep_alive(mut self, d: Duration) -> Self {
        self.keep_alive = d;
        self
    }

    /// The reconnection delay sent as `retry:` with the priming event (default 3 s).
    pub fn retry(mut self, d: Duration) -> Self {
        self.retry = d;
        self
    }

    /// How many SSE events each session keeps for replay to a client resuming with
    /// `Last-Event-ID` (default 256).
    pub fn event_store_size(mut self, events: usize) -> Self {
        self.event_store_events = events;
        self
    }

    /// How many bytes of SSE events each session keeps for replay (default 256 KiB; the
    /// newest event is kept whatever its size).
    pub fn event_store_bytes(mut self, bytes: usize) -> Self {
        self.event_store_bytes = bytes;
        self
    }

    /// How many SSE responses one session may hold open at once (default 32): its GET
    /// stream, resumptions with `Last-Event-ID`, and POSTs answered as streams. A GET
    /// beyond it gets 429 with a JSON-RPC error saying so. A POST answered as a stream is
    /// never refused (running requests are bounded by the server's
    /// `max_requests_per_connection`), but it counts.
    pub fn max_streams_per_session(mut self, n: usize) -> Self {
        self.max_streams_per_session = n;
        self
    }

    /// Whether handshake-era requests without `Mcp-Session-Id` are served (default `false`:
    /// they get 400). When on, they run on one shared anonymous connection that has no
    /// channel: it is never asked anything (no elicitation, sampling or roots), gets no
    /// progress or logs, and cannot answer anyone's question. Requests that change
    /// per-connection state (`logging/setLevel`, `resources/subscribe`) still need a session.
    pub fn allow_sessionless_requests(mut self, on: bool) -> Self {
        self.sessionless = on;
        self
    }

    /// Also serves the legacy HTTP+SSE transport (protocol 2024-11-05) from the same router:
    /// `GET /sse` and `POST /messages?sessionId=...` (default off).
    pub fn legacy_sse(mut self, on: bool) -> Self {
        self.legacy_sse = on;
        self
    }

    /// The legacy transport's paths (defaults `/sse` and `/messages`).
    pub fn legacy_sse_paths(mut self, sse: impl Into<String>, messages: impl Into<String>) -> Self {
        self.sse_path = sse.into();
        self.messages_path = messages.into();
        self
    }

    /// Requires a bearer token on every MCP request and serves Protected Resource Metadata
    /// (OAuth 2.1 resource server).
    pub fn bearer_auth(mut self, auth: BearerAuth) -> Self {
        self.bearer = Some(auth);
        self
    }

    /// Serves the browser routes of third-party sign-in (`/connect/...`, see
    /// `mcp::connect`) beside the MCP endpoint. They take no bearer token (a browser
    /// has none): they learn who opened a link from the `Connect`'s own
    /// [`BrowserIdentity`](crate::connect::BrowserIdentity).
    #[cfg(feature = "oauth")]
    pub fn connect(mut self, connect: crate::connect::Connect) -> Self {
        self.connect = Some(connect);
        self
    }

    /// Lifts the boot guard: serves even without a tool authorizer chosen by a person or a
    /// read authorizer (see [`mcp::auth::deployment`](crate::auth::deployment)). For a
    /// server on your own machine only: it is logged at WARN on every boot, naming what is
    /// unguarded, and serves loopback addresses only unless
    /// [`HttpConfig::allow_unauthorized_on_network`] is on too.
    pub fn allow_unauthorized_for_local_development(mut self, on: bool) -> Self {
        self.guard.lift(on.then_some(LIFT_CODE));
        self
    }

    /// Lets a lifted boot guard serve an address beyond loopback (default off: binding one
    /// is refused at boot). Changes nothing unless
    /// [`HttpConfig::allow_unauthorized_for_local_development`] is on; logged at WARN on
    /// every boot.
    pub fn allow_unauthorized_on_network(mut self, on: bool) -> Self {
        self.guard.allow_network(on.then_some(NETWORK_CODE));
        self
    }

    /// A token that, when cancelled, ends every open SSE stream and session so a graceful
    /// shutdown can complete. [`serve`](super::serve) cancels it on Ctrl-C or SIGTERM.
    pub fn shutdown_token(mut self, token: CancellationToken) -> Self {
        self.shutdown = token;
        self
    }

    /// Serves connections on `n` threads of their own, each running a single-threaded
    /// runtime, instead of on the shared multi-threaded one (default 0: shared). A
    /// connection stays on the thread that took it (the one serving fewest), so its
    /// session's data stays in one core's cache: with many busy clients each request
    /// costs less. The price: a busy thread's connections wait rather than move to an idle
    /// one, and every task a handler spawns runs on its connection's thread (move heavy
    /// work to `tokio::task::spawn_blocking`). Set it to the number of cores. It applies to
    /// [`serve`](super::serve) and [`HttpServer`](super::HttpServer); a
    /// [`router`](super::router) you serve yourself runs where you serve it. At most
    /// [`MAX_PER_CORE_THREADS`](super::MAX_PER_CORE_THREADS) (a larger `n` is lowered to it).
    pub fn per_core_threads(mut self, n: usize) -> Self {
        self.per_core_threads = n.min(super::MAX_PER_CORE_THREADS);
        self
    }

    /// How long [`serve`](super::serve) lets requests finish after a shutdown signal
    /// (default 5 s).
    pub fn shutdown_grace(mut self, d: Duration) -> Self {
        self.shutdown_grace = d;
        self
    }

    pub(crate) fn validate(&self) -> Result<(), String> {
        for (name, path) in [
            ("endpoint", &self.endpoint),
            ("legacy SSE path", &self.sse_path),
            ("legacy messages path", &self.messages_path),
        ] {
            if !path.starts_with('/') || path.contains(['?', '#', '{', '}', '*']) {
                return Err(format!(
                    "the {name} {path:?} must be an absolute path without a query, a fragment or wildcards"
                ));
            }
        }
        if self.legacy_sse && [&self.sse_path, &self.messages_path].contains(&&self.endpoint) {
            return Err("the legacy SSE paths must differ from the endpoint".into());
        }
        for (name, value) in [
            ("max_sessions", self.max_sessions),
            ("max_header_bytes", self.max_header_bytes),
            ("event_store_size", self.event_store_events),
            ("max_streams_per_session", self.max_streams_per_session),
        ] {
            if value == 0 {
                return Err(format!("{name} must be at least 1"));
            }
        }
        if self.max_body_bytes == Some(0) {
            return Err("max_body_bytes must be at least 1".into());
        }
        if self.session_idle_timeout.is_zero()
            || self.keep_alive.is_zero()
            || self.header_read_timeout.is_zero()
        {
            return Err(
                "session_idle_timeout, keep_alive and header_read_timeout must be positive".into(),
            );
        }
        if self.allowed_hosts.is_empty() {
            return Err("allowed_hosts is empty: no request could be served".into());
        }
        Ok(())
    }
}
