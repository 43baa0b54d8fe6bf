//! The command line itself (the `cli` feature): the options every server binary
//! understands, parsed with clap, and what `--list` and `--print-config` print.

use std::net::SocketAddr;
use std::process::ExitCode;

use clap::{Args, CommandFactory as _, FromArgMatches as _, Parser};

use super::limits::{Limits, Origin};
use super::{App, Plan, Setup, TransportArg, listing, print};
use crate::server::Transport;

/// The options every server binary understands; each has an environment variable too.
///
/// Flatten it into a parser of your own (`#[command(flatten)]`) to add options; its own
/// doc comment stays out of your `--help`. The network transports' options are in
/// [`NetworkOptions`](super::NetworkOptions) (the `http` feature), flattened here as
/// `network`.
#[derive(Args, Clone, Debug)]
#[command(about = None, long_about = None)]
#[non_exhaustive]
pub struct Options {
    // First: it records where every option's value came from, and the derive takes each
    // value out of the parsed matches as it reads the fields below.
    /// The limits and timeouts, under their own heading in `--help`.
    #[command(flatten)]
    pub limits: Limits,
    /// How clients reach the server.
    #[arg(long, env = "MCP_TRANSPORT", value_enum)]
    pub transport: Option<TransportArg>,
    /// The network transports' options: the address, the boot guard's flags, allowed
    /// hosts, the replicas' Redis.
    #[cfg(feature = "http")]
    #[command(flatten)]
    pub network: super::NetworkOptions,
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
    /// The log level of routine audit events: a read-only tool allowed and served, a read
    /// allowed and served. Denials, questions to a human and every call of a tool that is
    /// not read-only stay at INFO whatever this says; an audit sink receives every event.
    ///
    /// The default, info, logs a line per call; debug keeps routine lines out of an INFO
    /// log (about a third of the CPU of a guarded call on stdio). One of error, warn, info,
    /// debug, trace.
    #[arg(
        long,
        env = "MCP_AUDIT_ROUTINE_LEVEL",
        value_name = "LEVEL",
        value_parser = parse_level
    )]
    pub audit_routine_level: Option<tracing::Level>,
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
}

/// The smallest state key accepted, in bytes.
const MIN_KEY: usize = 32;

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
            "{} holds {} bytes; the state key must be at least {MIN_KEY} bytes: {}",
            key.1,
            key.0.len(),
            super::KEY_HINT
        ));
    }
    Ok(Some(key.0))
}

/// `--log-level`'s parser: the filter must read (see [`super::log_filter`]).
fn parse_filter(s: &str) -> Result<String, String> {
    super::log_filter(s).map(|_| s.to_owned())
}

/// `--audit-routine-level`'s parser: a level by name, in any case.
fn parse_level(s: &str) -> Result<tracing::Level, String> {
    match s.to_ascii_lowercase().as_str() {
        "error" => Ok(tracing::Level::ERROR),
        "warn" => Ok(tracing::Level::WARN),
        "info" => Ok(tracing::Level::INFO),
        "debug" => Ok(tracing::Level::DEBUG),
        "trace" => Ok(tracing::Level::TRACE),
        _ => Err(format!(
            "unknown level `{s}`: use error, warn, info, debug or trace"
        )),
    }
}

/// The parser `main` uses when the binary has no options of its own.
#[derive(Parser, Debug)]
struct Cli {
    #[command(flatten)]
    options: Options,
}

/// [`super::main`] with the `cli` feature.
pub(super) fn main<S: Into<Setup>>(app: App, server: impl FnOnce() -> S) -> ExitCode {
    let default = TransportArg::from_transport(app.transport).as_str();
    let mut command = Cli::command()
        .name(app.name)
        .bin_name(app.name)
        .version(app.version)
        .mut_arg("transport", |a| a.default_value(default));
    if let Some(about) = app.about {
        command = command.about(about);
    }
    let mut matches = command.get_matches();
    // `_mut` takes the values out rather than cloning every match first.
    let cli = match Cli::from_arg_matches_mut(&mut matches) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    cli.options.run(app.transport, server)
}

impl Options {
    /// Runs the server as these options say: list it, print its settings, or serve it on
    /// the chosen transport (`default` when none was chosen) until the client goes away.
    /// `server` makes what is served: a [`ServerBuilder`] (which the limits, the state key
    /// and the cluster are applied to), a built [`Server`](crate::Server) (served as it
    /// is), or a [`Setup`] (either of those with HTTP settings and ceilings).
    ///
    /// [`ServerBuilder`]: crate::ServerBuilder
    pub fn run<S: Into<Setup>>(self, default: Transport, server: impl FnOnce() -> S) -> ExitCode {
        let logs = super::init_logging(&self.log_level);
        let served = self.start(default, server().into());
        // The log's last lines before the error, so stderr reads in order.
        drop(logs);
        match served {
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
        let setup = setup.audit_routine_level(self.audit_routine_level);
        #[cfg(feature = "http")]
        let setup = setup.map_http(|http| self.network.configure(&self.limits, http));
        if self.print_config {
            return print(&self.report(transport, &setup, &limits));
        }
        let state_key = read_state_key(&self)?;
        #[cfg(feature = "http")]
        if let Some(refusal) = self
            .network
            .multi_replica_refusal(transport, state_key.as_deref())
        {
            return Err(refusal);
        }
        #[cfg(not(feature = "http"))]
        if transport != TransportArg::Stdio {
            return Err(super::without_http(transport));
        }
        let plan = Plan {
            transport,
            addr: self.address(),
            state_key,
            #[cfg(feature = "http")]
            redis: self.network.cluster(),
            #[cfg(not(feature = "http"))]
            redis: None,
            #[cfg(all(feature = "http", feature = "otel"))]
            metrics: self.network.metrics_bind,
            #[cfg(not(all(feature = "http", feature = "otel")))]
            metrics: None,
        };
        super::run(setup, plan)
    }

    /// The address the network transports listen on: `--port` on loopback, or `--bind`
    /// (`127.0.0.1:8080` in a binary without the `http` feature, which has neither).
    pub fn address(&self) -> SocketAddr {
        #[cfg(feature = "http")]
        return self.network.address();
        #[cfg(not(feature = "http"))]
        return (std::net::Ipv4Addr::LOCALHOST, 8080).into();
    }

    /// How the option `id` was given, for `--print-config`.
    fn origin(&self, id: &str, flag: &str, var: &str, code: bool) -> String {
        match self.limits.origin(id) {
            Origin::CommandLine => flag.to_owned(),
            Origin::Env => var.to_owned(),
            Origin::Code if code => "set in code".to_owned(),
            Origin::Code => "default".to_owned(),
        }
    }

    /// What `--print-config` prints: every setting, as TOML, with where it came from.
    fn report(
        &self,
        transport: TransportArg,
        setup: &Setup,
        limits: &[super::limits::Effective],
    ) -> String {
        let mut rows = vec![(
            "transport",
            format!("{:?}", transport.as_str()),
            self.origin("transport", "--transport", "MCP_TRANSPORT", false),
        )];
        #[cfg(feature = "http")]
        rows.extend(
            self.network
                .report(setup.http_settings(), |id, flag, var, code| {
                    self.origin(id, flag, var, code)
                }),
        );
        #[cfg(not(feature = "http"))]
        let _ = setup;
        #[cfg(feature = "otel")]
        rows.push((
            "opentelemetry",
            format!("{:?}", crate::telemetry::export_target()),
            "OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_PROTOCOL".to_owned(),
        ));
        let (level, in_code) = setup.effective_audit_routine_level();
        rows.push((
            "audit_routine_level",
            format!("{:?}", level.as_str().to_ascii_lowercase()),
            self.origin(
                "audit_routine_level",
                "--audit-routine-level",
                "MCP_AUDIT_ROUTINE_LEVEL",
                in_code,
            ),
        ));
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
        #[cfg(feature = "http")]
        {
            let e = Cli::try_parse_from(["x", "--bind", "nowhere"]).unwrap_err();
            assert!(e.to_string().contains("--bind"), "{e}");
        }
    }

    #[cfg(feature = "http")]
    #[test]
    fn multi_replica_mode_needs_http_and_a_shared_key() {
        use crate::Server;
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
        let why = o
            .network
            .multi_replica_refusal(TransportArg::Http, None)
            .unwrap();
        assert!(why.contains("same key"), "{why}");
        assert!(why.contains("--state-key-file"), "{why}");
        let why = o
            .network
            .multi_replica_refusal(TransportArg::Stdio, Some(b"k"))
            .unwrap();
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
        assert_eq!(o.network.allowed_hosts, vec!["a.example", "b:8080"]);
        assert_eq!(o.network.redis_prefix, "mcp");
        // A built server cannot take a key or a cluster; a builder can.
        let built = Server::builder("s", "1").build().unwrap();
        assert!(Setup::from(built).build(Some(vec![0; 32]), None).is_err());
        let from_builder = Setup::from(Server::builder("s", "1")).build(Some(vec![7; 32]), None);
        assert!(from_builder.is_ok());
        std::fs::remove_dir_all(&dir).ok();
    }

    #[cfg(feature = "http")]
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
        assert_eq!(cli.options.network.bind, "127.0.0.1:0".parse().unwrap());
        assert!(cli.options.network.legacy_sse);
        assert!(cli.options.network.allow_unauthorized_for_local_development);
        let cli = Cli::try_parse_from(["x"]).unwrap();
        assert!(!cli.options.network.legacy_sse);
        assert!(!cli.options.network.allow_unauthorized_for_local_development);
        assert_eq!(cli.options.network.bind, "127.0.0.1:8080".parse().unwrap());
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

    #[cfg(feature = "http")]
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
