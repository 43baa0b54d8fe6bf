//! [`Setup`]: what a binary hands the command line, beside the options it parsed: the
//! server, the HTTP settings it starts from, and the ceilings operators may not exceed.

#[cfg(feature = "cli")]
use super::limits::{self, Effective, Limits};
use super::settings::{Amount, NetConfig};
use crate::server::{Server, ServerBuilder};
#[cfg(feature = "http")]
use crate::transport::http::HttpConfig;

/// What the command line serves: a server (a [`ServerBuilder`], which the command line can
/// still tune and finish with a shared state key and a cluster, or a built [`Server`],
/// served as it is), the `HttpConfig` its network transports start from (the `http`
/// feature), and the most an operator may set each limit to (the `cli` feature: without a
/// command line, nothing can change a limit).
///
/// The values set in code (on the builder and the `HttpConfig`) are the defaults; the
/// command line and the `MCP_*` variables may change them, up to the ceilings set here.
/// Going above a ceiling is a boot error naming the flag, the value and the ceiling.
///
/// ```no_run
/// # #[cfg(feature = "http")] {
/// use std::time::Duration;
/// use mcp::cli::Setup;
/// use mcp::transport::http::HttpConfig;
/// # fn server_builder() -> mcp::ServerBuilder { mcp::Server::builder("x", "1") }
///
/// // With `main: false` in server!, this main gives the same command line as the
/// // generated one, with the settings below as its defaults and ceilings.
/// fn main() -> std::process::ExitCode {
///     let app = mcp::cli::App {
///         name: "files",
///         version: env!("CARGO_PKG_VERSION"),
///         about: Some("Serves the files under one directory."),
///         transport: mcp::Transport::Stdio,
///     };
///     mcp::cli::main(app, || {
///         Setup::from(server_builder().call_timeout(Duration::from_secs(30)))
///             .http(HttpConfig::new().max_sessions(100))
///             // Operators may raise call_timeout to 10 minutes, and no further.
///             .ceiling("call_timeout", Duration::from_secs(600))
///             .ceiling("max_sessions", 500)
///     })
/// }
/// # }
/// ```
pub struct Setup {
    server: Served,
    http: NetConfig,
    ceilings: Vec<(&'static str, Amount)>,
    /// `--audit-routine-level`, when given.
    audit_routine_level: Option<tracing::Level>,
}

enum Served {
    Builder(Box<ServerBuilder>),
    Built(Server),
}

impl From<ServerBuilder> for Setup {
    fn from(builder: ServerBuilder) -> Self {
        Setup::with(Served::Builder(Box::new(builder)))
    }
}

impl From<Server> for Setup {
    fn from(server: Server) -> Self {
        Setup::with(Served::Built(server))
    }
}

impl Setup {
    fn with(server: Served) -> Self {
        Setup {
            server,
            http: NetConfig::new(),
            ceilings: Vec::new(),
            audit_routine_level: None,
        }
    }

    /// The HTTP settings the network transports start from (default [`HttpConfig::new`]);
    /// the command line's `--legacy-sse`, `--allowed-host`, the boot-guard flags and the
    /// HTTP limits are applied on top.
    #[cfg(feature = "http")]
    #[cfg_attr(docsrs, doc(cfg(feature = "http")))]
    pub fn http(mut self, config: HttpConfig) -> Self {
        self.http = config;
        self
    }

    /// The most the command line (or its `MCP_*` variable) may set the limit `name` to:
    /// `name` is the builder method that sets it (`"call_timeout"`, `"max_sessions"`; the
    /// README's limits table lists them all), `max` a `Duration` for a timeout and a
    /// `usize` for a count or a size in bytes. A ceiling below the framework's default
    /// lowers the default to it. An unknown name, or a ceiling of the wrong kind, is a boot
    /// error.
    pub fn ceiling(mut self, name: &'static str, max: impl Into<Amount>) -> Self {
        self.ceilings.push((name, max.into()));
        self
    }

    /// Applies the limits given on the command line, within the ceilings; what each limit
    /// now is, and where it came from.
    #[cfg(feature = "cli")]
    pub(crate) fn tune(mut self, given: &Limits) -> Result<(Self, Vec<Effective>), String> {
        let effective = match self.server {
            Served::Builder(builder) => {
                let mut config = builder.limits().clone();
                let effective =
                    limits::apply(given, &self.ceilings, false, &mut config, &mut self.http)?;
                self.server = Served::Builder(Box::new(builder.config(config)));
                effective
            }
            Served::Built(ref server) => {
                let mut config = server.config().clone();
                limits::apply(given, &self.ceilings, true, &mut config, &mut self.http)?
            }
        };
        Ok((self, effective))
    }

    /// Sets the level of routine audit events (`--audit-routine-level`).
    #[cfg(feature = "cli")]
    pub(crate) fn audit_routine_level(mut self, level: Option<tracing::Level>) -> Self {
        self.audit_routine_level = level;
        self
    }

    /// The level routine audit events will be logged at, and whether code chose it (rather
    /// than the command line or the default).
    #[cfg(feature = "cli")]
    pub(crate) fn effective_audit_routine_level(&self) -> (tracing::Level, bool) {
        let in_code = match &self.server {
            Served::Builder(builder) => builder.limits().audit_routine_level,
            Served::Built(server) => server.config().audit_routine_level,
        };
        match self.audit_routine_level {
            Some(level) => (level, false),
            None => (in_code, in_code != tracing::Level::INFO),
        }
    }

    /// Lets the command line add its flags to the HTTP settings.
    #[cfg(all(feature = "cli", feature = "http"))]
    pub(crate) fn map_http(mut self, f: impl FnOnce(HttpConfig) -> HttpConfig) -> Self {
        self.http = f(self.http);
        self
    }

    /// The HTTP settings as they stand.
    #[cfg(all(feature = "cli", feature = "http"))]
    pub(crate) fn http_settings(&self) -> &HttpConfig {
        &self.http
    }

    /// Builds the server, applying `state_key` and `cluster` when given (a built server
    /// cannot take them).
    pub(crate) fn build(
        self,
        state_key: Option<Vec<u8>>,
        cluster: Option<crate::cluster::Cluster>,
    ) -> Result<(Server, NetConfig), String> {
        let server = match self.server {
            Served::Built(server) => {
                if state_key.is_some() || cluster.is_some() || self.audit_routine_level.is_some() {
                    return Err("this binary hands the command line an already built server, so --state-key-file, MCP_STATE_KEY, --redis-url and --audit-routine-level cannot be applied to it; pass its ServerBuilder instead (server! does)"
                        .to_owned());
                }
                server
            }
            Served::Builder(builder) => {
                let mut builder = *builder;
                if let Some(level) = self.audit_routine_level {
                    builder = builder.audit_routine_level(level);
                }
                if let Some(key) = state_key {
                    builder = builder.state_key(key);
                }
                if let Some(cluster) = cluster {
                    builder = builder.cluster(cluster);
                }
                builder.build().map_err(|e| e.to_string())?
            }
        };
        Ok((server, self.http))
    }
}
