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
//!   --allowed-host <HOST>    Also accept this Host header (name or name:port), beside the loopback names [env: MCP_ALLOWED_HOSTS=]
//!   --state-key-file <PATH>  A file holding the key that seals requestState (at least 32 bytes) [env: MCP_STATE_KEY_FILE=]
//!   --state-key <KEY>        The key itself (at least 32 characters); prefer MCP_STATE_KEY or a file [env: MCP_STATE_KEY]
//!   --redis-url <URL>        Run as one replica of several, sharing state on this Redis server [env: MCP_REDIS_URL]
//!   --redis-prefix <PREFIX>  The prefix of this deployment's Redis keys and channels [env: MCP_REDIS_PREFIX=] [default: mcp]
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
//! [`HttpConfig`] has a flag and a variable named after it (`call_timeout`:
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
//! the network transports an [`HttpConfig`] of your own, or to cap what the command line
//! may set, hand it a [`Setup`].

mod limits;
mod setup;

use std::io::{IsTerminal as _, Write as _};
use std::net::{Ipv4Addr, SocketAddr};
use std::process::ExitCode;

use clap::{Args, CommandFactory as _, FromArgMatches as _, Parser, ValueEnum};
use serde_json::{Value, json};

use crate::auth::deployment::{LIFT_FLAG, LIFT_VAR, NETWORK_FLAG, NETWORK_VAR};
use crate::server::{Server, Transport};
use crate::transport::http::HttpConfig;

/// The clap this command line is built with (4.x, with the `derive` and `env` features), so
/// a binary with options of its own can derive its parser without depending on clap
/// itself: `use mcp::cli::clap::{self, Parser};` (the derive refers to `clap::`).
pub use clap;
use limits::Origin;
pub use limits::{Amount, Limits};
pub use setup::Setup;

/// The transports a binary can serve.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
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

/// The options every server binary understands; each has an environment variable too.
///
/// Flatten it into a parser of your own (`#[command(flatten)]`) to add options; its own
/// doc comment stays out of your `--help`.
#[derive(Args, Clone, Debug)]
#[command(about = None, long_about = None)]
pub struct Options {
    // First: it records where every option's value came from, and the derive takes each
    // value out of the parsed matches as it reads the fields below.
    /// The limits and timeouts, under their own heading in `--help`.
    #[command(flatten)]
    pub limits: Limits,
    /// How clients reach the server.
    #[arg(long, env = "MCP_TRANSPORT", value_enum)]
    pub transport: Option<TransportArg>,
    /// Address to listen on (http and sse).
    #[arg(
        long,
        env = "MCP_BIND",
        value_name = "ADDR",
        default_value = "127.0.0.1:8080"
    )]
    pub bind: SocketAddr,
    /// Listen on 127.0.0.1 at this port (http and sse): short for --bind 127.0.0.1:PORT.
    #[arg(long, env = "MCP_PORT", value_name = "PORT", conflicts_with = "bind")]
    pub port: Option<u16>,
    /// With --transport http, also serve the legacy HTTP+SSE transport (GET /sse, POST
    /// /messages) beside the Streamable HTTP endpoint.
    #[arg(
        long,
        env = "MCP_LEGACY_SSE",
        action = clap::ArgAction::SetTrue,
        value_parser = clap::builder::BoolishValueParser::new()
    )]
    pub legacy_sse: bool,
    /// DANGER: serve over the network without the authorization the boot guard requires.
    ///
    /// Without it, http and sse refuse to boot unless the server has a tool authorizer
    /// chosen by a person and a read authorizer. With it, they serve tools without a chosen
    /// authorizer and reads without a read authorizer to any client that connects, with a
    /// warning on every boot, on loopback addresses only (see
    /// --allow-unauthorized-on-network). For a server on your own machine; never in
    /// production.
    #[arg(
        long,
        env = "MCP_ALLOW_UNAUTHORIZED_FOR_LOCAL_DEVELOPMENT",
        action = clap::ArgAction::SetTrue,
        value_parser = clap::builder::BoolishValueParser::new()
    )]
    pub allow_unauthorized_for_local_development: bool,
    /// DANGER: with --allow-unauthorized-for-local-development, also listen on an address
    /// beyond loopback (refused at boot without it).
    ///
    /// Anyone who can reach the address is then served unguarded; logged at WARN on every
    /// boot. Changes nothing on its own.
    #[arg(
        long,
        env = "MCP_ALLOW_UNAUTHORIZED_ON_NETWORK",
        action = clap::ArgAction::SetTrue,
        value_parser = clap::builder::BoolishValueParser::new()
    )]
    pub allow_unauthorized_on_network: bool,
    /// Print the tools, resources, templates and prompts as JSON and exit.
    #[arg(
        long,
        env = "MCP_LIST",
        action = clap::ArgAction::SetTrue,
        value_parser = clap::builder::BoolishValueParser::new()
    )]
    pub list: bool,
    /// Print the effective settings (transport, address, boot guard, every limit), each
    /// with where it came from, and exit.
    #[arg(
        long,
        env = "MCP_PRINT_CONFIG",
        action = clap::ArgAction::SetTrue,
        value_parser = clap::builder::BoolishValueParser::new()
    )]
    pub print_config: bool,
    /// Log filter for stderr: off, error, warn, info, debug, trace, or target=level directives.
    ///
    /// The syntax is a comma-separated list; each item is a level (the default for every
    /// target) or `target=level` (that target and the modules under it), e.g.
    /// `warn,mcp=debug`. Levels are case-insensitive. Span and field filters
    /// (`target[span{field}]=level`) are not supported.
    #[arg(
        long,
        env = "MCP_LOG_LEVEL",
        value_name = "FILTER",
        default_value = "info",
        value_parser = parse_filter
    )]
    pub log_level: String,
    /// Also accept this Host header (name or name:port), beside the loopback names: the
    /// name clients (or your load balancer) use for this server. Repeat it for several.
    #[arg(
        long = "allowed-host",
        env = "MCP_ALLOWED_HOSTS",
        value_name = "HOST",
        value_delimiter = ','
    )]
    pub allowed_hosts: Vec<String>,
    /// A file holding the key that seals requestState (at least 32 bytes; a trailing
    /// newline is ignored). Every replica behind one load balancer needs the same key.
    #[arg(long, env = "MCP_STATE_KEY_FILE", value_name = "PATH")]
    pub state_key_file: Option<std::path::PathBuf>,
    /// The key that seals requestState, itself (at least 32 characters). Prefer the
    /// MCP_STATE_KEY variable or --state-key-file: a command line is visible to other users.
    #[arg(
        long,
        env = "MCP_STATE_KEY",
        value_name = "KEY",
        hide_env_values = true,
        conflicts_with = "state_key_file"
    )]
    pub state_key: Option<String>,
    /// Run as one replica of several behind a load balancer, sharing sessions, resumable
    /// events, used requestState nonces and notifications on this Redis server
    /// (a redis:// URL, which may carry a password and a database number). Needs --transport
    /// http and a shared state key.
    #[arg(
        long,
        env = "MCP_REDIS_URL",
        value_name = "URL",
        hide_env_values = true
    )]
    pub redis_url: Option<String>,
    /// The prefix of this deployment's Redis keys and channels, so several deployments
    /// can share one Redis.
    #[arg(
        long,
        env = "MCP_REDIS_PREFIX",
        value_name = "PREFIX",
        default_value = "mcp"
    )]
    pub redis_prefix: String,
}

/// The smallest state key accepted, in bytes.
const MIN_KEY: usize = 32;

const KEY_HINT: &str =
    "generate one once with `openssl rand -hex 32` and give the same to every replica";

/// The state key from `--state-key-file` or `MCP_STATE_KEY`, if either is given.
fn read_state_key(options: &Options) -> Result<Option<Vec<u8>>, String> {
    let key = match (&options.state_key_file, &options.state_key) {
        (Some(path), _) => {
            let mut bytes = std::fs::read(path)
                .map_err(|e| format!("cannot read the state key file {}: {e}", path.display()))?;
            while bytes.last().is_some_and(|b| b.is_ascii_whitespace()) {
                bytes.pop();
            }
            (bytes, format!("the state key file {}", path.display()))
        }
        (None, Some(text)) => (text.trim().as_bytes().to_vec(), "MCP_STATE_KEY".to_owned()),
        (None, None) => return Ok(None),
    };
    if key.0.len() < MIN_KEY {
        return Err(format!(
            "{} holds {} bytes; the state key must be at least {MIN_KEY} bytes: {KEY_HINT}",
            key.1,
            key.0.len()
        ));
    }
    Ok(Some(key.0))
}

/// Why `--redis-url` cannot be used as given, if it cannot.
fn multi_replica_refusal(
    options: &Options,
    transport: TransportArg,
    key: Option<&[u8]>,
) -> Option<String> {
    options.redis_url.as_ref()?;
    if transport != TransportArg::Http {
        return Some(format!(
            "refusing to start: --redis-url runs this server as one replica of several behind a load balancer, which only the Streamable HTTP transport supports (--transport http), not {}",
            transport.as_str()
        ));
    }
    if key.is_none() {
        return Some(format!(
            "refusing to start: --redis-url runs this server as one replica of several, and every replica must seal requestState (the state of 2026-07-28 multi-round requests and approvals) with the same key, or a retry that lands on another replica is refused. Give the same key to every replica with --state-key-file PATH (MCP_STATE_KEY_FILE) or MCP_STATE_KEY: {KEY_HINT}"
        ));
    }
    if !cfg!(feature = "redis") {
        return Some(
            "refusing to start: --redis-url needs a binary built with the `redis` feature of the mcp crate"
                .to_owned(),
        );
    }
    None
}

const LEVELS: [&str; 6] = ["off", "error", "warn", "info", "debug", "trace"];

/// A level, or `target=level` directives. A bare word that is not a level would be read as
/// a target name and silently log nothing, so it is refused.
fn parse_filter(s: &str) -> Result<String, String> {
    log_filter(s).map(|_| s.to_owned())
}

/// The filter `--log-level` describes: tracing-subscriber's `Targets`, which reads
/// `level` and `target=level` items without a regex engine.
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

/// The parser `main` uses when the binary has no options of its own.
#[derive(Parser, Debug)]
struct Cli {
    #[command(flatten)]
    options: Options,
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
/// [`ServerBuilder`]: crate::ServerBuilder
pub fn main<S: Into<Setup>>(app: App, server: impl FnOnce() -> S) -> ExitCode {
    let default = TransportArg::from_transport(app.transport).as_str();
    let mut command = Cli::command()
        .name(app.name)
        .bin_name(app.name)
        .version(app.version)
        .mut_arg("transport", |a| a.default_value(default));
    if let Some(about) = app.about {
        command = command.about(about);
    }
    let matches = command.get_matches();
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    cli.options.run(app.transport, server)
}

impl Options {
    /// Runs the server as these options say: list it, print its settings, or serve it on
    /// the chosen transport (`default` when none was chosen) until the client goes away.
    /// `server` makes what is served: a [`ServerBuilder`] (which the limits, the state key
    /// and the cluster are applied to), a built [`Server`] (served as it is), or a
    /// [`Setup`] (either of those with HTTP settings and ceilings).
    ///
    /// [`ServerBuilder`]: crate::ServerBuilder
    pub fn run<S: Into<Setup>>(self, default: Transport, server: impl FnOnce() -> S) -> ExitCode {
        init_logging(&self.log_level);
        match self.start(default, server().into()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::FAILURE
            }
        }
    }

    /// What [`Options::run`] does; the error is meant for the user (stderr).
    fn start(self, default: Transport, setup: Setup) -> Result<(), String> {
        if self.list {
            let (server, _) = setup.build(None, None)?;
            let text = serde_json::to_string_pretty(&listing(&server)).unwrap_or_default();
            return print(&text);
        }
        let transport = self
            .transport
            .unwrap_or_else(|| TransportArg::from_transport(default));
        let (setup, limits) = setup.tune(&self.limits)?;
        let setup = setup.map_http(|http| self.configure_http(http));
        let addr = self.address();
        if self.print_config {
            return print(&self.report(transport, addr, &setup, &limits));
        }
        let state_key = read_state_key(&self)?;
        if let Some(refusal) = multi_replica_refusal(&self, transport, state_key.as_deref()) {
            return Err(refusal);
        }
        // stdio serves one client on one pipe: the reader runs each request's first poll
        // itself, so a single-threaded runtime does the same work without cross-thread
        // wake-ups. Network transports serve many clients and use every core. Either way, a
        // handler with long CPU-bound work should move it to `tokio::task::spawn_blocking`.
        let mut builder = match transport {
            TransportArg::Stdio => tokio::runtime::Builder::new_current_thread(),
            TransportArg::Http | TransportArg::Sse => tokio::runtime::Builder::new_multi_thread(),
        };
        let runtime = builder
            .enable_all()
            .build()
            .map_err(|e| format!("could not start the async runtime: {e}"))?;
        let redis = self
            .redis_url
            .clone()
            .map(|url| (url, self.redis_prefix.clone()));
        runtime.block_on(async move {
            let cluster = match redis {
                Some((url, prefix)) => Some(join_cluster(&url, &prefix).await?),
                None => None,
            };
            let (server, http) = setup.build(state_key, cluster.clone())?;
            let served = serve(server, transport, http, addr).await;
            if let Some(cluster) = cluster {
                cluster.leave().await;
            }
            served
        })
    }

    /// The address the network transports listen on: `--port` on loopback, or `--bind`.
    pub fn address(&self) -> SocketAddr {
        self.port
            .map_or(self.bind, |port| (Ipv4Addr::LOCALHOST, port).into())
    }

    /// The command line's HTTP settings on top of the binary's.
    fn configure_http(&self, mut http: HttpConfig) -> HttpConfig {
        if self.legacy_sse {
            http = http.legacy_sse(true);
        }
        for host in &self.allowed_hosts {
            http = http.allow_host(host.clone());
        }
        if self.allow_unauthorized_for_local_development {
            let by = self.named(
                "allow_unauthorized_for_local_development",
                LIFT_FLAG,
                LIFT_VAR,
            );
            http.guard.lift(Some(&by));
        }
        if self.allow_unauthorized_on_network {
            let by = self.named("allow_unauthorized_on_network", NETWORK_FLAG, NETWORK_VAR);
            http.guard.allow_network(Some(&by));
        }
        http
    }

    /// How the option `id` was given: its flag or its variable (`None` when neither was).
    fn given(&self, id: &str, flag: &str, var: &str) -> Option<String> {
        match self.limits.origin(id) {
            Origin::CommandLine => Some(flag.to_owned()),
            Origin::Env => Some(var.to_owned()),
            Origin::Code => None,
        }
    }

    /// The setting `id` as warnings name it: its variable if that is where it came from.
    fn named(&self, id: &str, flag: &str, var: &str) -> String {
        self.given(id, flag, var).unwrap_or_else(|| flag.to_owned())
    }

    /// What `--print-config` prints: every setting, in TOML's syntax, with where it came
    /// from after the `#`.
    fn report(
        &self,
        transport: TransportArg,
        addr: SocketAddr,
        setup: &Setup,
        limits: &[limits::Effective],
    ) -> String {
        let origin = |id: &str, flag: &str, var: &str, code: bool| {
            self.given(id, flag, var)
                .unwrap_or_else(|| if code { "set in code" } else { "default" }.to_owned())
        };
        let (bind_id, bind_flag, bind_var) = match self.port {
            Some(_) => ("port", "--port", "MCP_PORT"),
            None => ("bind", "--bind", "MCP_BIND"),
        };
        let guard = setup.http_settings();
        let mut rows = vec![
            (
                "transport",
                format!("{:?}", transport.as_str()),
                origin("transport", "--transport", "MCP_TRANSPORT", false),
            ),
            (
                "bind",
                format!("\"{addr}\""),
                origin(bind_id, bind_flag, bind_var, false),
            ),
            (
                "allow_unauthorized_for_local_development",
                guard.guard.lifted().to_string(),
                origin(
                    "allow_unauthorized_for_local_development",
                    LIFT_FLAG,
                    LIFT_VAR,
                    guard.guard.lifted(),
                ),
            ),
            (
                "allow_unauthorized_on_network",
                guard.guard.network_allowed().to_string(),
                origin(
                    "allow_unauthorized_on_network",
                    NETWORK_FLAG,
                    NETWORK_VAR,
                    guard.guard.network_allowed(),
                ),
            ),
        ];
        for limit in limits {
            let (name, value) = limit.entry();
            rows.push((name, value, limit.note()));
        }
        let width = rows
            .iter()
            .map(|(name, value, _)| name.len() + value.len())
            .max()
            .unwrap_or(0);
        let mut out = String::from(
            "# The settings this server would run with; after each, where it came from.\n",
        );
        for (name, value, note) in rows {
            let pad = width - name.len() - value.len();
            out.push_str(&format!("{name} = {value}{:pad$}  # {note}\n", ""));
        }
        out
    }
}

/// Writes `text` and a newline to stdout.
fn print(text: &str) -> Result<(), String> {
    writeln!(std::io::stdout().lock(), "{}", text.trim_end())
        .map_err(|e| format!("cannot write to stdout: {e}"))
}

/// Connects to the Redis server replicas share.
#[cfg(feature = "redis")]
async fn join_cluster(url: &str, prefix: &str) -> Result<crate::cluster::Cluster, String> {
    let cluster = crate::cluster::redis::connect(url, prefix)
        .await
        .map_err(|e| format!("cannot join the replicas' Redis at {}: {e}", redact(url)))?;
    tracing::info!(target: "mcp", replica = cluster.replica_id(), "serving as one replica of several (shared state on Redis)");
    Ok(cluster)
}

#[cfg(not(feature = "redis"))]
async fn join_cluster(_url: &str, _prefix: &str) -> Result<crate::cluster::Cluster, String> {
    Err("--redis-url needs a binary built with the `redis` feature of the mcp crate".to_owned())
}

/// A Redis URL without its password, for messages.
#[cfg_attr(not(feature = "redis"), allow(dead_code))]
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            format!("{}://***{}", &url[..scheme], &url[at..])
        }
        _ => url.to_owned(),
    }
}

/// Serves `server` on one transport until it stops: stdio until the client closes its
/// input; HTTP (with `config`, on `addr`) until Ctrl-C or SIGTERM. The error is meant for
/// the user (stderr).
pub async fn serve(
    server: Server,
    transport: TransportArg,
    config: HttpConfig,
    addr: SocketAddr,
) -> Result<(), String> {
    use crate::transport::http::{self, HttpError};

    let (name, version) = (server.info().name.clone(), server.info().version.clone());
    if server.cluster().is_some() && config.legacy_sse {
        tracing::warn!(target: "mcp", "the legacy HTTP+SSE transport's sessions are not shared between replicas: route its clients to one replica (sticky sessions)");
    }
    let legacy_sse = config.legacy_sse;
    let built = match transport {
        TransportArg::Stdio => {
            tracing::info!(target: "mcp", "serving {name} {version} on stdio");
            return crate::transport::stdio::serve(server)
                .await
                .map_err(|e| format!("stdio transport failed: {e}"));
        }
        TransportArg::Http => http::router(server, config.clone()),
        TransportArg::Sse => crate::transport::sse::router(server, config.clone()),
    };
    let app = built.map_err(|e| match e {
        HttpError::Refused(refusal) => format!(
            "refusing to serve {name} over {}:\n{refusal}",
            transport.as_str()
        ),
        other => other.to_string(),
    })?;
    let bound = http::HttpServer::bind(app, config, addr)
        .await
        .map_err(|e| match e {
            HttpError::Refused(refusal) => refusal.to_string(),
            other => format!("cannot listen on {addr}: {other}"),
        })?;
    let addr = bound.local_addr().map_err(|e| e.to_string())?;
    let endpoints = match (transport, legacy_sse) {
        (TransportArg::Http, false) => format!("Streamable HTTP at http://{addr}/mcp"),
        (TransportArg::Http, true) => {
            format!("Streamable HTTP at http://{addr}/mcp and HTTP+SSE at http://{addr}/sse")
        }
        _ => format!("HTTP+SSE at http://{addr}/sse"),
    };
    tracing::info!(target: "mcp", "serving {name} {version}: {endpoints}");
    bound.run().await.map_err(|e| e.to_string())
}

fn init_logging(filter: &str) {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let filter = log_filter(filter).unwrap_or_else(|_| {
        tracing_subscriber::filter::Targets::new()
            .with_default(tracing_subscriber::filter::LevelFilter::INFO)
    });
    let _ = tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_ansi(std::io::stderr().is_terminal()),
        )
        .with(filter)
        .try_init();
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
    fn parses_every_option_and_rejects_typos() {
        let cli = Cli::try_parse_from(["x", "--transport", "stdio", "--list"]).unwrap();
        assert_eq!(cli.options.transport, Some(TransportArg::Stdio));
        assert!(cli.options.list);
        let e = Cli::try_parse_from(["x", "--transport", "stdoi"]).unwrap_err();
        let text = e.to_string();
        assert!(text.contains("invalid value 'stdoi'"), "{text}");
        assert!(text.contains("stdio, http, sse"), "{text}");
        let e = Cli::try_parse_from(["x", "--log-level", "loud"]).unwrap_err();
        assert!(e.to_string().contains("unknown log level `loud`"), "{e}");
        for ok in ["debug", "WARN", "info,mcp=trace", "off"] {
            assert!(
                Cli::try_parse_from(["x", "--log-level", ok]).is_ok(),
                "{ok}"
            );
        }
        let e = Cli::try_parse_from(["x", "--log-level", "mcp[{conn}]=debug"]).unwrap_err();
        assert!(e.to_string().contains("not supported"), "{e}");
        let e = Cli::try_parse_from(["x", "--log-level", "mcp=loud"]).unwrap_err();
        assert!(e.to_string().contains("--log-level"), "{e}");
        let e = Cli::try_parse_from(["x", "--bind", "nowhere"]).unwrap_err();
        assert!(e.to_string().contains("--bind"), "{e}");
    }

    #[test]
    fn multi_replica_mode_needs_http_and_a_shared_key() {
        let dir = std::env::temp_dir().join(format!("mcp-key-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let short = dir.join("short");
        std::fs::write(&short, "too short\n").unwrap();
        let good = dir.join("good");
        std::fs::write(&good, format!("{}\n", "k".repeat(64))).unwrap();
        let parse = |args: &[&str]| Cli::try_parse_from(args).unwrap().options;

        let o = parse(&[
            "x",
            "--transport",
            "http",
            "--redis-url",
            "redis://127.0.0.1:1",
        ]);
        let why = multi_replica_refusal(&o, TransportArg::Http, None).unwrap();
        assert!(why.contains("same key"), "{why}");
        assert!(why.contains("--state-key-file"), "{why}");
        let why = multi_replica_refusal(&o, TransportArg::Stdio, Some(b"k")).unwrap();
        assert!(why.contains("--transport http"), "{why}");

        let o = parse(&["x", "--state-key-file", short.to_str().unwrap()]);
        let e = read_state_key(&o).unwrap_err();
        assert!(e.contains("at least 32 bytes"), "{e}");
        let o = parse(&["x", "--state-key-file", good.to_str().unwrap()]);
        assert_eq!(read_state_key(&o).unwrap(), Some(b"k".repeat(64)));
        let o = parse(&[
            "x",
            "--state-key-file",
            dir.join("missing").to_str().unwrap(),
        ]);
        assert!(read_state_key(&o).unwrap_err().contains("cannot read"));
        let o = parse(&["x", "--state-key", &"s".repeat(40)]);
        assert_eq!(read_state_key(&o).unwrap(), Some(b"s".repeat(40)));
        assert!(
            Cli::try_parse_from(["x", "--state-key", "a", "--state-key-file", "b"]).is_err(),
            "one key source at a time"
        );
        let o = parse(&[
            "x",
            "--allowed-host",
            "a.example",
            "--allowed-host",
            "b:8080",
        ]);
        assert_eq!(o.allowed_hosts, vec!["a.example", "b:8080"]);
        assert_eq!(o.redis_prefix, "mcp");
        assert_eq!(
            redact("redis://:secret@10.0.0.1:6379/0"),
            "redis://***@10.0.0.1:6379/0"
        );
        // A built server cannot take a key or a cluster; a builder can.
        let built = Server::builder("s", "1").build().unwrap();
        assert!(Setup::from(built).build(Some(vec![0; 32]), None).is_err());
        let from_builder = Setup::from(Server::builder("s", "1")).build(Some(vec![7; 32]), None);
        assert!(from_builder.is_ok());
        std::fs::remove_dir_all(&dir).ok();
    }

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
    }

    #[test]
    fn network_flags_parse_with_loopback_8080_by_default() {
        let cli = Cli::try_parse_from([
            "x",
            "--transport",
            "http",
            "--bind",
            "127.0.0.1:0",
            "--legacy-sse",
            "--allow-unauthorized-for-local-development",
        ])
        .unwrap();
        assert_eq!(cli.options.transport, Some(TransportArg::Http));
        assert_eq!(cli.options.bind, "127.0.0.1:0".parse().unwrap());
        assert!(cli.options.legacy_sse);
        assert!(cli.options.allow_unauthorized_for_local_development);
        let cli = Cli::try_parse_from(["x"]).unwrap();
        assert!(!cli.options.legacy_sse);
        assert!(!cli.options.allow_unauthorized_for_local_development);
        assert_eq!(cli.options.bind, "127.0.0.1:8080".parse().unwrap());
    }

    // The parser of the module docs' "binary with options of its own" example, without its
    // doc comment: no description of its own, and the framework's must not stand in.
    #[derive(Parser)]
    #[command(name = "files", version)]
    struct OwnArgs {
        /// The directory to serve.
        #[arg(long, env = "FILES_ROOT")]
        root: std::path::PathBuf,
        #[command(flatten)]
        mcp: Options,
    }

    #[test]
    fn a_binary_with_options_of_its_own_does_not_show_the_frameworks_doc_as_its_description() {
        let help = OwnArgs::command().render_long_help().to_string();
        assert!(help.starts_with("Usage: files"), "{help}");
        assert!(!help.contains("every server binary"), "{help}");
        let short = OwnArgs::command().render_help().to_string();
        assert!(short.starts_with("Usage: files"), "{short}");
        // A description of its own is kept.
        let mut described = OwnArgs::command().about("Serves files.");
        assert!(
            described
                .render_help()
                .to_string()
                .starts_with("Serves files.")
        );
    }

    #[test]
    fn every_option_has_an_environment_variable() {
        let command = Cli::command();
        for arg in command.get_arguments() {
            let id = arg.get_id().as_str();
            if matches!(id, "help" | "version") {
                continue;
            }
            let env = arg
                .get_env()
                .unwrap_or_else(|| panic!("--{id} has no variable"));
            assert!(env.to_string_lossy().starts_with("MCP_"), "{id}");
        }
        let help = command.clone().render_long_help().to_string();
        assert!(help.contains("[env: MCP_CALL_TIMEOUT=]"), "{help}");
        assert!(help.contains("Limits and timeouts"), "{help}");
    }

    #[test]
    fn port_binds_loopback_and_conflicts_with_bind() {
        let o = Cli::try_parse_from(["x", "--port", "3000"])
            .unwrap()
            .options;
        assert_eq!(o.address(), "127.0.0.1:3000".parse().unwrap());
        let o = Cli::try_parse_from(["x", "--bind", "0.0.0.0:9"])
            .unwrap()
            .options;
        assert_eq!(o.address(), "0.0.0.0:9".parse().unwrap());
        let e = Cli::try_parse_from(["x", "--port", "1", "--bind", "127.0.0.1:2"]).unwrap_err();
        assert!(e.to_string().contains("cannot be used with"), "{e}");
        assert!(Cli::try_parse_from(["x", "--port", "70000"]).is_err());
    }
}
