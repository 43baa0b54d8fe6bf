//! The generated `main` without the `cli` feature: no parser, so nothing to compile but the
//! server. It answers `--help` and `--version`, refuses every other argument (a binary
//! that ignored `--transport http` would quietly serve something else), reads its log
//! filter from `MCP_LOG_LEVEL` and serves the server's default transport.

use std::ffi::OsString;
use std::net::{Ipv4Addr, SocketAddr};
use std::process::ExitCode;

use super::{App, Plan, Setup, TransportArg};

/// Where the network transports listen when nothing can say otherwise.
const ADDRESS: SocketAddr = SocketAddr::new(std::net::IpAddr::V4(Ipv4Addr::LOCALHOST), 8080);

/// What the arguments ask for.
#[derive(Debug, PartialEq, Eq)]
enum Asked {
    Serve,
    Help,
    Version,
    /// A usage error, with its message.
    Wrong(String),
}

fn asked(args: &[OsString]) -> Asked {
    match args {
        [] => Asked::Serve,
        [one] if one == "--help" || one == "-h" => Asked::Help,
        [one] if one == "--version" || one == "-V" => Asked::Version,
        _ => Asked::Wrong(format!(
            "unexpected argument '{}': this binary was built without the `cli` feature of mcp-guarded, so it takes no options (set MCP_LOG_LEVEL for its log filter)",
            args[0].to_string_lossy()
        )),
    }
}

fn help(app: &App) -> String {
    let transport = TransportArg::from_transport(app.transport).as_str();
    let mut text = String::new();
    if let Some(about) = app.about {
        text.push_str(about);
        text.push_str("\n\n");
    }
    text.push_str(&format!(
        "Usage: {}\n\nServes MCP on {transport}{}. Built without the `cli` feature of mcp-guarded: no options.\n\nEnvironment:\n  MCP_LOG_LEVEL  Log filter for stderr: off, error, warn, info, debug, trace, or target=level directives [default: info]\n\nOptions:\n  -h, --help     Print help\n  -V, --version  Print version\n",
        app.name,
        if transport == "stdio" {
            String::new()
        } else {
            format!(" at {ADDRESS}")
        }
    ));
    text
}

/// [`super::main`] without the `cli` feature.
pub(super) fn main<S: Into<Setup>>(app: App, server: impl FnOnce() -> S) -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    match asked(&args) {
        Asked::Help => return print(&help(&app)),
        Asked::Version => return print(&format!("{} {}", app.name, app.version)),
        Asked::Wrong(message) => {
            eprintln!("error: {message}\n\nFor more information, try '--help'.");
            return ExitCode::from(2);
        }
        Asked::Serve => {}
    }
    let filter = std::env::var("MCP_LOG_LEVEL").unwrap_or_else(|_| "info".to_owned());
    if let Err(e) = super::log_filter(&filter) {
        eprintln!("error: MCP_LOG_LEVEL: {e}");
        return ExitCode::from(2);
    }
    let logs = super::init_logging(&filter);
    let plan = Plan {
        transport: TransportArg::from_transport(app.transport),
        addr: ADDRESS,
        state_key: None,
        redis: None,
        metrics: None,
    };
    let served = super::run(server().into(), plan);
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

fn print(text: &str) -> ExitCode {
    match super::print(text) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_help_and_version_are_understood() {
        let args = |a: &[&str]| a.iter().map(OsString::from).collect::<Vec<_>>();
        assert_eq!(asked(&args(&[])), Asked::Serve);
        assert_eq!(asked(&args(&["-h"])), Asked::Help);
        assert_eq!(asked(&args(&["--version"])), Asked::Version);
        let Asked::Wrong(why) = asked(&args(&["--transport", "http"])) else {
            panic!("accepted an option it cannot honour")
        };
        assert!(why.contains("'--transport'"), "{why}");
        assert!(why.contains("`cli` feature"), "{why}");
        let app = App {
            name: "s",
            version: "1",
            about: Some("A server."),
            transport: crate::Transport::Stdio,
        };
        let text = help(&app);
        assert!(text.starts_with("A server.\n\nUsage: s"), "{text}");
        assert!(text.contains("MCP_LOG_LEVEL"), "{text}");
    }
}
