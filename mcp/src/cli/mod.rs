//! The command line of a server binary: the `main` that `server!` generates calls
//! [`main`], and a binary with options of its own flattens [`Options`] into its parser.
//! Every option has an `MCP_*` environment variable too (`-h` for a summary, `--help` for
//! all of it):
//!
//! ```text
//! Usage: files [OPTIONS]
//!
//! Options:
//!   --transport <TRANSPORT>  How clients reach the server [env: MCP_TRANSPORT=] [default: stdio] [possible values: stdio, http, sse]
//!   --bind <ADDR>            Address to listen on (http and sse) [env: MCP_BIND=] [default: 127.0.0.1:8080]
//!   --port <PORT>            Listen on 127.0.0.1 at this port (http and sse): short for --bind 127.0.0.1:PORT [env: MCP_PORT=]
//!   --legacy-sse             With --transport http, also serve the legacy HTTP+SSE transport [env: MCP_LEGACY_SSE=]
//!   --allow-unauthorized-for-local-development
//!                            DANGER: serve over the network without the authorization the boot guard requires [env: MCP_ALLOW_UNAUTHORIZED_FOR_LOCAL_DEVELOPMENT=]
//!   --allow-unauthorized-on-network
//!                            DANGER: with the above, also listen on an address beyond loopback [env: MCP_ALLOW_UNAUTHORIZED_ON_NETWORK=]
//!   --list                   Print the tools, resources, templates and prompts as JSON and exit [env: MCP_LIST=]
//!   --print-config           Print the effective settings, each with where it came from, and exit [env: MCP_PRINT_CONFIG=]
//!   --log-level <FILTER>     Log filter for stderr: off, error, warn, info, debug, trace, or target=level directives [env: MCP_LOG_LEVEL=] [default: info]
//!   --audit-routine-level <LEVEL>
//!                            The log level of routine audit events: a read-only tool allowed and served, a read allowed and served [env: MCP_AUDIT_ROUTINE_LEVEL=]
//!   --allowed-host <HOST>    Also accept this Host header (name or name:port), beside the loopback names [env: MCP_ALLOWED_HOSTS=]
//!   --state-key-file <PATH>  A file holding the key that seals requestState (at least 32 bytes) [env: MCP_STATE_KEY_FILE=]
//!   --state-key <KEY>        The key itself (at least 32 characters); prefer MCP_STATE_KEY or a file [env: MCP_STATE_KEY]
//!   --redis-url <URL>        Run as one replica of several, sharing state on this Redis server [env: MCP_REDIS_URL]
//!   --redis-prefix <PREFIX>  The prefix of this deployment's Redis keys and channels [env: MCP_REDIS_PREFIX=] [default: mcp]
//!   --metrics-bind <ADDR>    Serve the metrics for a Prometheus scrape at http://ADDR/metrics (the `otel` feature) [env: MCP_METRICS_BIND=]
//!   -h, --help               Print help (see more with '--help')
//!   -V, --version            Print version
//!
//! Limits and timeouts (each defaults to the server's own value: see --print-config):
//!   --max-message-size <SIZE>          The largest message accepted: a stdio line or an HTTP body [env: MCP_MAX_MESSAGE_SIZE=]
//!   --max-in-flight <N>                Handlers running at once, across all clients [env: MCP_MAX_IN_FLIGHT=]
//!   --call-timeout <DURATION>          How long a tool, resource or prompt handler may run [env: MCP_CALL_TIMEOUT=]
//!   --request-state-ttl <DURATION>     How long a sealed 2026-07-28 requestState stays valid [env: MCP_REQUEST_STATE_TTL=]
//!   ... one for each limit: the README's Security section has the table
//! ```
//!
//! # Transports
//!
//! - `stdio` (the default unless the binary picks another): one client, the process that
//!   started this one.
//! - `http`: Streamable HTTP at `http://<bind>/mcp`, serving both protocol eras on that one
//!   endpoint (handshake-era sessions and stateless 2026-07-28 requests, chosen per
//!   request); with `--legacy-sse`, the legacy HTTP+SSE routes (`/sse`, `/messages`)
//!   beside it.
//! - `sse`: the legacy HTTP+SSE transport alone (2024-11-05 clients).
//!
//! The network transports bind `127.0.0.1:8080` unless `--bind` (or `--port N`, for
//! `127.0.0.1:N`) says otherwise, check `Host` and `Origin` on every request (see
//! [`crate::transport::http`]), and stop gracefully on Ctrl-C or SIGTERM.
//!
//! stdout carries protocol messages only; logs go to stderr.
//!
//! # The boot guard
//!
//! The network transports refuse to boot unless the server has a tool authorizer chosen by
//! a person and a read authorizer: the refusal says what is missing, on stderr, and the
//! process exits with status 1 (see [`crate::auth::deployment`]). Two flags, and nothing
//! else, change that:
//!
//! - `--allow-unauthorized-for-local-development`
//!   (`MCP_ALLOW_UNAUTHORIZED_FOR_LOCAL_DEVELOPMENT=1`) lifts the guard for a server on
//!   your own machine. Every boot logs a WARN naming the flag (or the variable) and what it
//!   leaves unguarded. Never use it in production.
//! - A lifted guard serves loopback addresses only: binding any other address is refused
//!   at boot unless `--allow-unauthorized-on-network` (`MCP_ALLOW_UNAUTHORIZED_ON_NETWORK=1`)
//!   says so too, which is also logged on every boot.
//!
//! `MCP_ENV` and `MCP_REQUIRE_AUTHORIZATION` no longer lift it; a refusal mentions either
//! when it is set.
//!
//! # Limits and timeouts
//!
//! Every limit and timeout of [`ServerConfig`](crate::server::ServerConfig) and
//! [`HttpConfig`](crate::transport::http::HttpConfig) has a flag and a variable named after it (`call_timeout`:
//! `--call-timeout`, `MCP_CALL_TIMEOUT`). Durations are written `300ms`, `60s`, `10m` or
//! `1h 30m`; sizes `65536`, `512KiB` or `4MiB`. The value the server sets in code is the
//! default; the command line changes it for one run, up to the ceiling the author set with
//! [`Setup::ceiling`] (going above one is a boot error naming the flag, the value and the
//! ceiling). `--print-config` prints every setting as it would run, in TOML's syntax, with
//! where each came from:
//!
//! ```text
//! $ MCP_CALL_TIMEOUT=90s files --root . --port 3000 --print-config
//! # The settings this server would run with; after each, where it came from.
//! transport = "stdio"                               # default
//! bind = "127.0.0.1:3000"                           # --port
//! ...
//! max_message_size = "4MiB"                         # default; at most 16MiB
//! call_timeout = "1m 30s"                           # MCP_CALL_TIMEOUT; at most 10m
//! ```
//!
//! # Several replicas
//!
//! `--redis-url` (`MCP_REDIS_URL`) makes the process one replica of several behind a load
//! balancer (see [`crate::cluster`]); it needs a binary built with the `redis` feature and
//! `--transport http`. Every replica must seal `requestState` with the same key, so the
//! binary refuses to start with `--redis-url` unless `--state-key-file` or
//! `MCP_STATE_KEY` gives one (generate it once, e.g. `openssl rand -hex 32`). A key is also
//! accepted without Redis: states then survive a restart.
//!
//! # A binary with options of its own
//!
//! Flatten [`Options`] into your own parser. The command line is built with clap 4 (the
//! `derive` and `env` features), re-exported as [`mcp::cli::clap`]: bring it into
//! scope as `clap` and derive with it, with no clap dependency of your own to keep in step.
//! Your parser's doc comment (or `about`) is the program's description in `--help`.
//!
//! ```no_run
//! use mcp::cli::clap::{self, Parser};
//! # fn server_builder() -> mcp::ServerBuilder { mcp::Server::builder("x", "1") }
//!
//! /// Serves the files under one directory.
//! #[derive(Parser)]
//! #[command(version)]
//! struct Args {
//!     /// The directory to serve.
//!     #[arg(long, env = "FILES_ROOT")]
//!     root: std::path::PathBuf,
//!     #[command(flatten)]
//!     mcp: mcp::cli::Options,
//! }
//!
//! fn main() -> std::process::ExitCode {
//!     let args = Args::parse();
//!     // ... use args.root ...
//!     args.mcp.run(mcp::Transport::Stdio, server_builder)
//! }
//! ```
//!
//! Hand [`Options::run`] (or [`main`]) the server's builder, as `server!`'s `server_builder`
//! gives it, so the limits can be applied; a built [`Server`] is served as it is. To give
//! the network transports an [`HttpConfig`](crate::transport::http::HttpConfig) of your own, or to cap what the command line
//! may set, hand it a [`Setup`].

mod audit_line;
#[cfg(not(feature = "cli"))]
mod bare;
#[cfg(feature = "cli")]
mod limits;
mod log_format;
mod log_writer;
#[cfg(all(feature = "cli", feature = "http"))]
mod network;
#[cfg(feature = "cli")]
mod options;
mod settings;
mod setup;

use std::io::{IsTerminal as _, Write as _};
use std::net::SocketAddr;
use std::process::ExitCode;

use serde_json::{Value, json};

use crate::server::{Server, Transport};

/// The clap this command line is built with (4.x, with the `derive` and `env` features), so
/// a binary with options of its own can derive its parser without depending on clap
/// itself: `use mcp::cli::clap::{self, Parser};` (the derive refers to `clap::`).
#[cfg(feature = "cli")]
#[cfg_attr(docsrs, doc(cfg(feature = "cli")))]
pub use clap;
#[cfg(feature = "cli")]
#[cfg_attr(docsrs, doc(cfg(feature = "cli")))]
pub use limits::Limits;
pub use log_format::{LogFields, LogLine, LogTime};
#[cfg(all(feature = "cli", feature = "http"))]
#[cfg_attr(docsrs, doc(cfg(all(feature = "cli", feature = "http"))))]
pub use network::NetworkOptions;
#[cfg(feature = "cli")]
#[cfg_attr(docsrs, doc(cfg(feature = "cli")))]
pub use options::Options;
pub use settings::Amount;
use settings::NetConfig;
pub use setup::Setup;

/// How to make a state key, for messages about one.
#[cfg(feature = "cli")]
const KEY_HINT: &str =
    "generate one once with `openssl rand -hex 32` and give the same to every replica";

/// The transports a binary can serve. All three can be asked for; a binary built without
/// the `http` feature answers the network ones with an error that says so.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum TransportArg {
    /// Newline-delimited JSON-RPC on stdin and stdout (one client: the process that started
    /// this one).
    Stdio,
    /// Streamable HTTP.
    Http,
    /// The legacy HTTP+SSE transport (2024-11-05 clients).
    Sse,
}

impl TransportArg {
    fn from_transport(t: Transport) -> Self {
        match t {
            Transport::Http => TransportArg::Http,
            Transport::Sse => TransportArg::Sse,
            Transport::Stdio | Transport::Unknown => TransportArg::Stdio,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            TransportArg::Stdio => "stdio",
            TransportArg::Http => "http",
            TransportArg::Sse => "sse",
        }
    }
}

/// What the generated `main` knows about the binary.
#[derive(Clone, Copy, Debug)]
pub struct App {
    /// The server's name (also the command's name in `--help`).
    pub name: &'static str,
    /// The version `--version` prints.
    pub version: &'static str,
    /// One line for `--help`.
    pub about: Option<&'static str>,
    /// The transport used when neither `--transport` nor `MCP_TRANSPORT` is given.
    pub transport: Transport,
}

/// Parses the process's command line and runs the server: what `server!`'s `main` calls
/// (with its `server_builder`). `--help`, `--version` and usage errors exit as clap does
/// (usage errors with status 2). `server` makes what is served: a [`ServerBuilder`], a
/// built [`Server`], or a [`Setup`] that also carries HTTP settings and ceilings.
///
/// Built without the `cli` feature, the binary takes no options beyond `--help` and
/// `--version` (anything else is a usage error, status 2), reads its log filter from
/// `MCP_LOG_LEVEL` and serves `app.transport`.
///
/// [`ServerBuilder`]: crate::ServerBuilder
pub fn main<S: Into<Setup>>(app: App, server: impl FnOnce() -> S) -> ExitCode {
    #[cfg(feature = "cli")]
    return options::main(app, server);
    #[cfg(not(feature = "cli"))]
    return bare::main(app, server);
}

/// What serving needs beyond the [`Setup`]: the transport, the network transports'
/// address, the state key and the replicas' Redis.
pub(crate) struct Plan {
    transport: TransportArg,
    addr: SocketAddr,
    state_key: Option<Vec<u8>>,
    redis: Option<(String, String)>,
    /// Where to serve `/metrics` for a Prometheus scrape (`--metrics-bind`).
    #[cfg_attr(not(feature = "otel"), allow(dead_code))]
    metrics: Option<SocketAddr>,
}

/// Starts the runtime the transport wants and serves `setup` on it until it stops. The
/// error is meant for the user (stderr).
fn run(setup: Setup, plan: Plan) -> Result<(), String> {
    // stdio serves one client on one pipe: the reader runs each request's first poll
    // itself, so a single-threaded runtime does the same work without cross-thread
    // wake-ups. Network transports serve many clients and use every core. Either way, a
    // handler with long CPU-bound work should move it to `tokio::task::spawn_blocking`.
    let mut builder = match plan.transport {
        TransportArg::Stdio => tokio::runtime::Builder::new_current_thread(),
        TransportArg::Http | TransportArg::Sse => tokio::runtime::Builder::new_multi_thread(),
    };
    let runtime = builder
        .enable_all()
        .build()
        .map_err(|e| format!("could not start the async runtime: {e}"))?;
    // Behind a pointer: tokio's `block_on` is instantiated once per scheduler, and each
    // copy would otherwise inline the whole serving future (~30 KiB of code apiece).
    let serving: std::pin::Pin<Box<dyn Future<Output = Result<(), String>>>> =
        Box::pin(async move {
            let cluster = match plan.redis {
                Some((url, prefix)) => Some(join_cluster(&url, &prefix).await?),
                None => None,
            };
            let (server, net) = setup.build(plan.state_key, cluster.clone())?;
            #[cfg(feature = "otel")]
            let telemetry = otel::start(server.name(), plan.metrics).await?;
            // Start-up hooks (and state made at start-up) run before anything is accepted;
            // their error stops the boot. Shutdown hooks run once serving has ended, however it
            // ended.
            server.start().await?;
            let served = serve(server.clone(), plan.transport, net, plan.addr).await;
            server.finish().await;
            if let Some(cluster) = cluster {
                cluster.leave().await;
            }
            #[cfg(feature = "otel")]
            if let Some((telemetry, scrape)) = telemetry {
                scrape.cancel();
                // The flush blocks on the exporters: off the runtime's threads.
                let _ = tokio::task::spawn_blocking(move || telemetry.shutdown()).await;
            }
            served
        });
    runtime.block_on(serving)
}

#[cfg(all(feature = "cli", feature = "http"))]
use network::join_cluster;

#[cfg(not(all(feature = "cli", feature = "http")))]
async fn join_cluster(_url: &str, _prefix: &str) -> Result<crate::cluster::Cluster, String> {
    Err("--redis-url needs a binary built with the `cli`, `http` and `redis` features of mcp-guarded".to_owned())
}

/// Why a binary without the `http` feature cannot serve `transport`.
#[cfg_attr(feature = "http", allow(dead_code))]
fn without_http(transport: TransportArg) -> String {
    format!(
        "this binary serves stdio only: --transport {} needs a build with the `http` feature of mcp-guarded (Streamable HTTP and the legacy HTTP+SSE transport; on by default)",
        transport.as_str()
    )
}

/// Serves `server` on one transport until it stops: stdio until the client closes its
/// input; HTTP (with `config`, on `addr`) until Ctrl-C or SIGTERM. The error is meant for
/// the user (stderr).
async fn serve(
    server: Server,
    transport: TransportArg,
    config: NetConfig,
    addr: SocketAddr,
) -> Result<(), String> {
    if transport == TransportArg::Stdio {
        let (name, version) = (&server.info().name, &server.info().version);
        tracing::info!(target: "mcp", "serving {name} {version} on stdio");
        return crate::transport::stdio::serve(server)
            .await
            .map_err(|e| format!("stdio transport failed: {e}"));
    }
    #[cfg(feature = "http")]
    return serve_network(server, transport, config, addr).await;
    #[cfg(not(feature = "http"))]
    {
        let _ = (server, config, addr);
        Err(without_http(transport))
    }
}

/// Serves `server` on Streamable HTTP or the legacy HTTP+SSE transport.
#[cfg(feature = "http")]
async fn serve_network(
    server: Server,
    transport: TransportArg,
    config: NetConfig,
    addr: SocketAddr,
) -> Result<(), String> {
    use crate::transport::http::{self, HttpError};

    let (name, version) = (server.info().name.clone(), server.info().version.clone());
    if server.cluster().is_some() && config.legacy_sse {
        tracing::warn!(target: "mcp", "the legacy HTTP+SSE transport's sessions are not shared between replicas: route its clients to one replica (sticky sessions)");
    }
    let legacy_sse = config.legacy_sse;
    let built = match transport {
        TransportArg::Sse => {
            crate::transport::sse::router(server.clone(), config.clone()).map(|router| {
                http::Built {
                    router,
                    endpoint: None,
                }
            })
        }
        _ => http::built(server.clone(), config.clone()),
    };
    let built = built.map_err(|e| match e {
        HttpError::Refused(refusal) => format!(
            "refusing to serve {name} over {}:\n{refusal}",
            transport.as_str()
        ),
        other => other.to_string(),
    })?;
    http::join_cluster(&server)
        .await
        .map_err(|e| e.to_string())?;
    let bound = http::HttpServer::bind_built(built, config, addr)
        .await
        .map_err(|e| match e {
            HttpError::Refused(refusal) => refusal.to_string(),
            other => format!("cannot listen on {addr}: {other}"),
        })?;
    let addr = bound.local_addr().map_err(|e| e.to_string())?;
    // Listening for SIGTERM and Ctrl-C before saying where we serve: a supervisor that
    // stops the server as soon as it is announced gets a graceful stop.
    let stop = http::termination();
    let endpoints = match (transport, legacy_sse) {
        (TransportArg::Http, false) => format!("Streamable HTTP at http://{addr}/mcp"),
        (TransportArg::Http, true) => {
            format!("Streamable HTTP at http://{addr}/mcp and HTTP+SSE at http://{addr}/sse")
        }
        _ => format!("HTTP+SSE at http://{addr}/sse"),
    };
    tracing::info!(target: "mcp", "serving {name} {version}: {endpoints}");
    bound.run_until(stop).await.map_err(|e| e.to_string())
}

const LEVELS: [&str; 6] = ["off", "error", "warn", "info", "debug", "trace"];

/// The filter `--log-level` (or `MCP_LOG_LEVEL`) describes: tracing-subscriber's
/// `Targets`, which reads `level` and `target=level` items without a regex engine. A bare
/// word that is not a level would be read as a target name and silently log nothing, so it
/// is refused.
fn log_filter(s: &str) -> Result<tracing_subscriber::filter::Targets, String> {
    let hint = "use off, error, warn, info, debug or trace, or directives such as `info,mcp=debug`";
    let mut items = Vec::new();
    for part in s.split(',').map(str::trim) {
        if !part.contains('=') && !LEVELS.contains(&part.to_ascii_lowercase().as_str()) {
            return Err(format!("unknown log level `{part}`: {hint}"));
        }
        if part.contains('[') || part.contains('{') {
            return Err(format!(
                "`{part}`: span and field filters are not supported: {hint}"
            ));
        }
        items.push(part);
    }
    items.join(",").parse().map_err(|e| format!("{e}: {hint}"))
}

/// Logs to stderr, filtered by `filter` (INFO when it cannot be read). The lines go out
/// in batches from a thread of their own (see `log_writer`); the guard writes what is left
/// when it is dropped, so hold it until the process is about to end.
fn init_logging(filter: &str) -> log_writer::FlushOnDrop {
    use tracing_subscriber::Layer as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    let filter = log_filter(filter).unwrap_or_else(|_| {
        tracing_subscriber::filter::Targets::new()
            .with_default(tracing_subscriber::filter::LevelFilter::INFO)
    });
    let registry = tracing_subscriber::registry();
    // An empty slot for the OpenTelemetry layer, filled once the runtime runs (its
    // exporters need one); it sees spans whatever the log level.
    #[cfg(feature = "otel")]
    let registry =
        registry.with(otel::slot().with_filter(tracing_subscriber::filter::LevelFilter::INFO));
    let logs = log_writer::Logs::start();
    let coloured = std::io::stderr().is_terminal();
    let subscriber = registry.with(
        tracing_subscriber::fmt::layer()
            .event_format(LogLine::default())
            .fmt_fields(LogFields)
            .with_writer(logs.clone())
            .with_ansi(coloured)
            .with_filter(filter.clone()),
    );
    // The audit lines are written straight into this log when it is the one installed and
    // writes plain lines (`audit_line`).
    if let Some(is_ours) = install(subscriber)
        && !coloured
    {
        crate::auth::audit::write_lines_with(Box::new(audit_line::DirectAudit::new(
            logs.clone(),
            &filter,
            is_ours,
        )));
    }
    log_writer::FlushOnDrop(logs)
}

/// Installs `subscriber` as the process's; then, a test of whether a dispatcher is it.
fn install<S>(subscriber: S) -> Option<fn(&tracing::Dispatch) -> bool>
where
    S: tracing_subscriber::util::SubscriberInitExt + tracing::Subscriber + Send + Sync + 'static,
{
    subscriber.try_init().ok()?;
    Some(|dispatch| dispatch.is::<S>())
}

/// The OpenTelemetry layer of the generated `main`: a reloadable slot in the subscriber,
/// filled when `OTEL_*` variables ask for export.
#[cfg(feature = "otel")]
mod otel {
    use std::sync::OnceLock;

    use tokio_util::sync::CancellationToken;
    use tracing_subscriber::{Registry, reload};

    type Slot = Option<Box<dyn tracing_subscriber::Layer<Registry> + Send + Sync>>;

    static HANDLE: OnceLock<reload::Handle<Slot, Registry>> = OnceLock::new();

    /// The empty slot, remembered so that [`start`] can fill it.
    pub(super) fn slot() -> reload::Layer<Slot, Registry> {
        let (layer, handle) = reload::Layer::new(None);
        let _ = HANDLE.set(handle);
        layer
    }

    /// Starts export when the environment asks for it, and the scrape endpoint when
    /// `metrics` says where, saying so on stderr. The token stops the endpoint.
    pub(super) async fn start(
        service: &str,
        metrics: Option<std::net::SocketAddr>,
    ) -> Result<Option<(crate::telemetry::Telemetry, CancellationToken)>, String> {
        let Some(telemetry) = crate::telemetry::Telemetry::configure(service, metrics.is_some())
            .map_err(|e| e.to_string())?
        else {
            return Ok(None);
        };
        let layer = telemetry.install::<Registry>();
        if let Some(handle) = HANDLE.get() {
            let layer: Box<dyn tracing_subscriber::Layer<Registry> + Send + Sync> = Box::new(layer);
            let _ = handle.reload(Some(layer));
        }
        tracing::info!(target: "mcp::telemetry", "{}", crate::telemetry::describe_env());
        let stop = CancellationToken::new();
        #[cfg(feature = "http")]
        if let Some(addr) = metrics {
            let bound = crate::telemetry::serve_metrics(telemetry.clone(), addr, stop.clone())
                .await
                .map_err(|e| e.to_string())?;
            if !bound.ip().is_loopback() {
                tracing::warn!(target: "mcp::telemetry", %bound, "the /metrics endpoint is reachable beyond this machine and has no authentication of its own");
            }
            tracing::info!(target: "mcp::telemetry", "metrics for a Prometheus scrape at http://{bound}/metrics");
        }
        Ok(Some((telemetry, stop)))
    }
}

/// Writes `text` and a newline to stdout.
fn print(text: &str) -> Result<(), String> {
    writeln!(std::io::stdout().lock(), "{}", text.trim_end())
        .map_err(|e| format!("cannot write to stdout: {e}"))
}

/// Everything a server offers, with schemas, as `--list` prints it.
pub fn listing(server: &Server) -> Value {
    let snapshot = server.registry().snapshot();
    let info = server.info();
    json!({
        "server": info,
        "instructions": server.instructions(),
        "tools": snapshot.tools().map(|t| t.tool()).collect::<Vec<_>>(),
        "resources": snapshot.resources().map(|r| r.resource()).collect::<Vec<_>>(),
        "resourceTemplates": snapshot.templates().map(|t| t.template()).collect::<Vec<_>>(),
        "prompts": snapshot.prompts().map(|p| p.prompt()).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_filters_set_a_default_and_per_target_levels() {
        use tracing::Level;
        let f = log_filter(" warn , mcp=debug,mcp::audit=off").unwrap();
        assert!(f.would_enable("other", &Level::WARN));
        assert!(!f.would_enable("other", &Level::INFO));
        assert!(f.would_enable("mcp::stdio", &Level::DEBUG));
        assert!(!f.would_enable("mcp::stdio", &Level::TRACE));
        assert!(!f.would_enable("mcp::audit", &Level::ERROR));
        let f = log_filter("OFF").unwrap();
        assert!(!f.would_enable("mcp", &Level::ERROR));
        let f = log_filter("mcp=trace").unwrap();
        assert!(!f.would_enable("other", &Level::ERROR));
        assert!(
            log_filter("loud")
                .unwrap_err()
                .contains("unknown log level")
        );
    }

    #[test]
    fn asking_a_stdio_only_binary_for_http_names_the_feature() {
        let why = without_http(TransportArg::Http);
        assert!(why.contains("--transport http"), "{why}");
        assert!(why.contains("`http` feature"), "{why}");
    }
}
