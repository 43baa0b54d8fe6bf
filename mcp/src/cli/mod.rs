//! The command line of a server binary: the `main` that `server!` generates calls
//! [`main`], and a binary with options of its own flattens [`Options`] into its parser.
//!
//! ```text
//! Usage: files [OPTIONS]
//!
//! Options:
//!       --transport <TRANSPORT>
//!           How clients reach the server [env: MCP_TRANSPORT=] [default: stdio] [possible values: stdio, http, sse]
//!       --bind <ADDR>
//!           Address to listen on (http and sse) [env: MCP_BIND=] [default: 127.0.0.1:8080]
//!       --legacy-sse
//!           With --transport http, also serve the legacy HTTP+SSE transport [env: MCP_LEGACY_SSE=]
//!       --allow-unauthorized-for-local-development
//!           DANGER: serve over the network without the authorization the boot guard requires [env: MCP_ALLOW_UNAUTHORIZED_FOR_LOCAL_DEVELOPMENT=]
//!       --list
//!           Print the tools, resources, templates and prompts as JSON and exit [env: MCP_LIST=]
//!       --log-level <FILTER>
//!           Log filter for stderr: off, error, warn, info, debug, trace, or target=level directives [env: MCP_LOG_LEVEL=] [default: info]
//!   -h, --help
//!           Print help (see a summary with '-h')
//!   -V, --version
//!           Print version
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
//! The network transports bind `127.0.0.1:8080` unless `--bind` says otherwise, check
//! `Host` and `Origin` on every request (see [`crate::transport::http`]), and stop
//! gracefully on Ctrl-C or SIGTERM. They refuse to boot in production (`MCP_ENV` unset or
//! not `development`/`dev`/`test`) unless the server configures a tool authorizer and a
//! read authorizer: the refusal says what is missing, on stderr, and the process exits
//! with status 1. `--allow-unauthorized-for-local-development` overrides that refusal for
//! a server on your own machine; it is logged loudly on every boot. Never use it in
//! production.
//!
//! stdout carries protocol messages only; logs go to stderr.
//!
//! A binary with options of its own:
//!
//! ```no_run
//! use clap::Parser;
//! # fn server() -> mcp::Server { mcp::Server::builder("x", "1").build().unwrap() }
//!
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
//!     args.mcp.run(mcp::Transport::Stdio, server)
//! }
//! ```

use std::io::{IsTerminal as _, Write as _};
use std::net::SocketAddr;
use std::process::ExitCode;

use clap::{Args, CommandFactory as _, FromArgMatches as _, Parser, ValueEnum};
use serde_json::{Value, json};

use crate::server::{Server, Transport};

#[doc(hidden)]
pub use clap;

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

/// The options every server binary understands. Each has an environment variable too.
#[derive(Args, Clone, Debug)]
pub struct Options {
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
    /// For a server on your own machine only; never in production.
    #[arg(
        long,
        env = "MCP_ALLOW_UNAUTHORIZED_FOR_LOCAL_DEVELOPMENT",
        action = clap::ArgAction::SetTrue,
        value_parser = clap::builder::BoolishValueParser::new()
    )]
    pub allow_unauthorized_for_local_development: bool,
    /// Print the tools, resources, templates and prompts as JSON and exit.
    #[arg(
        long,
        env = "MCP_LIST",
        action = clap::ArgAction::SetTrue,
        value_parser = clap::builder::BoolishValueParser::new()
    )]
    pub list: bool,
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

/// Parses the process's command line and runs the server: what `server!`'s `main` calls.
/// `--help`, `--version` and usage errors exit as clap does (usage errors with status 2).
pub fn main(app: App, server: impl FnOnce() -> Server) -> ExitCode {
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
    /// Runs the server as these options say: list it, or serve it on the chosen transport
    /// (`default` when none was chosen) until the client goes away.
    pub fn run(self, default: Transport, server: impl FnOnce() -> Server) -> ExitCode {
        init_logging(&self.log_level);
        let server = server();
        if self.list {
            let listing = listing(&server);
            let mut out = std::io::stdout().lock();
            let text = serde_json::to_string_pretty(&listing).unwrap_or_default();
            return match writeln!(out, "{text}") {
                Ok(()) => ExitCode::SUCCESS,
                Err(_) => ExitCode::FAILURE,
            };
        }
        let transport = self
            .transport
            .unwrap_or_else(|| TransportArg::from_transport(default));
        // stdio serves one client on one pipe: the reader runs each request's first poll
        // itself, so a single-threaded runtime does the same work without cross-thread
        // wake-ups. Network transports serve many clients and use every core. Either way, a
        // handler with long CPU-bound work should move it to `tokio::task::spawn_blocking`.
        let mut builder = match transport {
            TransportArg::Stdio => tokio::runtime::Builder::new_current_thread(),
            TransportArg::Http | TransportArg::Sse => tokio::runtime::Builder::new_multi_thread(),
        };
        let runtime = match builder.enable_all().build() {
            Ok(rt) => rt,
            Err(e) => {
                eprintln!("error: could not start the async runtime: {e}");
                return ExitCode::FAILURE;
            }
        };
        let network = Network {
            bind: self.bind,
            legacy_sse: self.legacy_sse,
            allow_unauthorized_for_local_development: self.allow_unauthorized_for_local_development,
        };
        match runtime.block_on(serve(server, transport, network)) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::FAILURE
            }
        }
    }
}

/// How the network transports listen, from the command line.
#[derive(Clone, Copy, Debug)]
pub struct Network {
    /// The address to bind.
    pub bind: SocketAddr,
    /// With [`TransportArg::Http`], also serve the legacy HTTP+SSE routes.
    pub legacy_sse: bool,
    /// Boot even when the boot guard would refuse (local development only).
    pub allow_unauthorized_for_local_development: bool,
}

impl Network {
    /// Listening on `bind` with every other setting off.
    pub fn on(bind: SocketAddr) -> Self {
        Network {
            bind,
            legacy_sse: false,
            allow_unauthorized_for_local_development: false,
        }
    }
}

/// What the command line adds to a boot-guard refusal.
const CLI_OPT_OUT: &str = "From the command line: --allow-unauthorized-for-local-development \
     (or MCP_ALLOW_UNAUTHORIZED_FOR_LOCAL_DEVELOPMENT=1) skips this check, for a server on \
     your own machine only. Or set MCP_ENV=development.";

/// Serves `server` on one transport until it stops: stdio until the client closes its
/// input; HTTP until Ctrl-C or SIGTERM. The error is meant for the user (stderr).
pub async fn serve(
    server: Server,
    transport: TransportArg,
    network: Network,
) -> Result<(), String> {
    use crate::transport::http::{self, HttpConfig, HttpError};

    let (name, version) = (server.info().name.clone(), server.info().version.clone());
    let config = HttpConfig::new()
        .legacy_sse(network.legacy_sse)
        .allow_unauthorized_for_local_development(network.allow_unauthorized_for_local_development);
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
            "refusing to serve {name} over {}:\n{refusal}\n{CLI_OPT_OUT}",
            transport.as_str()
        ),
        other => other.to_string(),
    })?;
    let bound = http::HttpServer::bind(app, config, network.bind)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", network.bind))?;
    let addr = bound.local_addr().map_err(|e| e.to_string())?;
    let endpoints = match (transport, network.legacy_sse) {
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
}
