//! The boot guard of the network transports.
//!
//! stdio inherits the operating system's process boundary: whoever can talk to the server
//! started it. A network transport has no such boundary, so it refuses to boot unless
//! authorization was *chosen* for tools (not merely defaulted) and a read authorizer exists.
//!
//! Exactly two settings change that, both explicit and both logged at WARN on every boot:
//!
//! - **Lifting the guard**, for a server on your own machine: the command line's
//!   `--allow-unauthorized-for-local-development` (or
//!   `MCP_ALLOW_UNAUTHORIZED_FOR_LOCAL_DEVELOPMENT=1`), or
//!   [`HttpConfig::allow_unauthorized_for_local_development`](crate::transport::http::HttpConfig::allow_unauthorized_for_local_development)
//!   in code. The warning names the setting and what it leaves unguarded. A lifted guard
//!   serves loopback addresses only.
//! - **Serving a lifted guard beyond loopback**: `--allow-unauthorized-on-network` (or
//!   `MCP_ALLOW_UNAUTHORIZED_ON_NETWORK=1`), or
//!   [`HttpConfig::allow_unauthorized_on_network`](crate::transport::http::HttpConfig::allow_unauthorized_on_network).
//!   A second setting, so that one stray flag never exposes an unguarded server.
//!
//! `MCP_ENV` and `MCP_REQUIRE_AUTHORIZATION` no longer lift the guard: a variable that
//! describes the environment is too easily left set where it does not belong (a stray
//! `MCP_ENV=dev` in production served unguarded, without a word). When the guard refuses
//! and either is set, the refusal says that it was read and ignored.

use std::fmt;
use std::net::SocketAddr;

/// The command line's flag that lifts the guard.
pub(crate) const LIFT_FLAG: &str = "--allow-unauthorized-for-local-development";
/// The variable that lifts the guard.
pub(crate) const LIFT_VAR: &str = "MCP_ALLOW_UNAUTHORIZED_FOR_LOCAL_DEVELOPMENT";
/// The command line's flag that lets a lifted guard serve beyond loopback.
pub(crate) const NETWORK_FLAG: &str = "--allow-unauthorized-on-network";
/// The variable that lets a lifted guard serve beyond loopback.
pub(crate) const NETWORK_VAR: &str = "MCP_ALLOW_UNAUTHORIZED_ON_NETWORK";
/// The code that lifts the guard.
pub(crate) const LIFT_CODE: &str = "HttpConfig::allow_unauthorized_for_local_development(true)";
/// The code that lets a lifted guard serve beyond loopback.
pub(crate) const NETWORK_CODE: &str = "HttpConfig::allow_unauthorized_on_network(true)";

/// Variables that once lifted the guard and now only describe the environment.
const FORMER_VARS: [&str; 2] = ["MCP_ENV", "MCP_REQUIRE_AUTHORIZATION"];

/// A refusal to boot, with what is missing and how to fix it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BootRefused {
    message: String,
}

impl BootRefused {
    /// A refusal with a full explanation.
    pub fn new(message: impl Into<String>) -> Self {
        BootRefused {
            message: message.into(),
        }
    }

    /// The explanation.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for BootRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for BootRefused {}

/// The guard's two settings, each with the name of what set it (a flag, a variable or a
/// method), so that warnings and refusals name it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct BootGuard {
    lifted_by: Option<String>,
    network_by: Option<String>,
}

impl BootGuard {
    /// Lifts the guard (`setting` names what did), or puts it back with `None`.
    pub(crate) fn lift(&mut self, setting: Option<&str>) {
        self.lifted_by = setting.map(str::to_owned);
    }

    /// Lets a lifted guard serve beyond loopback (`setting` names what did), or not.
    pub(crate) fn allow_network(&mut self, setting: Option<&str>) {
        self.network_by = setting.map(str::to_owned);
    }

    /// Whether the guard is lifted.
    pub(crate) fn lifted(&self) -> bool {
        self.lifted_by.is_some()
    }

    /// Whether a lifted guard may serve beyond loopback.
    pub(crate) fn network_allowed(&self) -> bool {
        self.network_by.is_some()
    }

    /// Refuses to boot when tools have no chosen authorizer or reads have no read
    /// authorizer, unless the guard is lifted; a lifted guard is logged at WARN, naming the
    /// setting and what it leaves unguarded.
    pub(crate) fn check(
        &self,
        tools_chosen: bool,
        reads_guarded: bool,
        context: &str,
    ) -> Result<(), BootRefused> {
        let mut gaps = Vec::new();
        if !tools_chosen {
            gaps.push(Gap::Tools);
        }
        if !reads_guarded {
            gaps.push(Gap::Reads);
        }
        match (&self.lifted_by, gaps.is_empty()) {
            (None, true) => Ok(()),
            (None, false) => Err(refusal(context, &gaps)),
            (Some(setting), true) => {
                tracing::warn!(target: "mcp::auth",
                    "{setting} is set, but {context} has a tool authorizer and a read authorizer, so it lifts nothing: remove it");
                Ok(())
            }
            (Some(setting), false) => {
                let unguarded: Vec<&str> = gaps.iter().map(|g| g.unguarded()).collect();
                tracing::warn!(target: "mcp::auth",
                    "BOOT GUARD LIFTED by {setting}: {context} serves {}. For a server on your own machine only; never in production.",
                    unguarded.join("; and "));
                Ok(())
            }
        }
    }

    /// Refuses to listen beyond loopback while the guard is lifted, unless the second
    /// setting allows it (then logged at WARN).
    pub(crate) fn check_address(&self, addr: SocketAddr) -> Result<(), BootRefused> {
        let Some(lifted_by) = &self.lifted_by else {
            return Ok(());
        };
        if addr.ip().is_loopback() {
            return Ok(());
        }
        if let Some(network_by) = &self.network_by {
            tracing::warn!(target: "mcp::auth",
                "{lifted_by} and {network_by}: serving with the boot guard lifted on {addr}, beyond loopback: anyone who can reach it is served");
            return Ok(());
        }
        Err(BootRefused::new(format!(
            "refusing to listen on {addr}: the boot guard is lifted by {lifted_by}, which is for a \
             server on your own machine, and {addr} is reachable from other machines. Do one of:\n\
             - listen on loopback only: --port PORT or --bind 127.0.0.1:PORT;\n\
             - configure a tool authorizer and a read authorizer, and remove {lifted_by};\n\
             - to serve unguarded beyond loopback anyway (a lab, a private network you trust), \
             also set {NETWORK_FLAG} ({NETWORK_VAR}=1), or {NETWORK_CODE} in code."
        )))
    }
}

/// Something the guard protects that is missing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Gap {
    /// No authorizer was chosen for tools.
    Tools,
    /// No read authorizer exists.
    Reads,
}

impl Gap {
    /// Why the guard refuses, and how to fix it in the server.
    fn missing(self, context: &str) -> String {
        match self {
            Gap::Tools => format!(
                "{context} refuses to boot: no authorizer is configured for tools, so any client \
                 that connects could call them. Choose one in server! (authorizer: ...) or with \
                 ServerBuilder::authorizer, e.g. mcp::auth::ask_before_sensitive()."
            ),
            Gap::Reads => format!(
                "{context} refuses to boot: no read authorizer is configured, so resources/read, \
                 prompts/get and every list would be served to any client that connects. Set \
                 read_authorizer in server! or ServerBuilder::read_authorizer \
                 (mcp::auth::allowlist([...]) of methods, or mcp::auth::allow_all() if the data is \
                 public)."
            ),
        }
    }

    /// What a lifted guard leaves open.
    fn unguarded(self) -> &'static str {
        match self {
            Gap::Tools => "tools without an authorizer a person chose for them",
            Gap::Reads => {
                "resources, prompts, completions and lists without a read authorizer, to any client that connects"
            }
        }
    }
}

/// The refusal for `gaps`: what is missing, the two ways to lift the guard, and a word on
/// the variables that no longer do.
fn refusal(context: &str, gaps: &[Gap]) -> BootRefused {
    let mut message: Vec<String> = gaps.iter().map(|g| g.missing(context)).collect();
    message.push(format!(
        "For a server on your own machine only, the guard can be lifted: {LIFT_FLAG} \
         ({LIFT_VAR}=1) on the command line, or {LIFT_CODE} in code. It is logged at WARN on \
         every boot and serves loopback addresses only."
    ));
    for var in FORMER_VARS {
        if let Ok(value) = std::env::var(var) {
            message.push(format!(
                "{var}={value} is set; it no longer lifts the boot guard (use one of the above)."
            ));
        }
    }
    BootRefused::new(message.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lifted(by: &str) -> BootGuard {
        let mut guard = BootGuard::default();
        guard.lift(Some(by));
        guard
    }

    #[test]
    fn the_guard_refuses_each_gap_and_names_both_ways_to_lift_it() {
        let guard = BootGuard::default();
        assert!(guard.check(true, true, "HTTP").is_ok());
        let err = guard.check(false, true, "MCP HTTP transport").unwrap_err();
        let text = err.message();
        assert!(
            text.starts_with("MCP HTTP transport refuses to boot"),
            "{text}"
        );
        assert!(
            text.contains("no authorizer is configured for tools"),
            "{text}"
        );
        assert!(!text.contains("read authorizer is configured"), "{text}");
        assert!(
            text.contains(LIFT_FLAG) && text.contains(LIFT_CODE),
            "{text}"
        );
        let err = guard.check(true, false, "x").unwrap_err();
        assert!(err.message().contains("resources/read"), "{err}");
        let err = guard.check(false, false, "x").unwrap_err();
        assert_eq!(err.message().matches("refuses to boot").count(), 2, "{err}");
    }

    #[test]
    fn a_lifted_guard_boots_and_serves_loopback_only_unless_told_twice() {
        let guard = lifted(LIFT_FLAG);
        assert!(guard.check(false, false, "x").is_ok());
        assert!(guard.check_address("127.0.0.1:0".parse().unwrap()).is_ok());
        assert!(guard.check_address("[::1]:0".parse().unwrap()).is_ok());
        for addr in ["0.0.0.0:8080", "10.1.2.3:80", "[::]:8080"] {
            let err = guard.check_address(addr.parse().unwrap()).unwrap_err();
            let text = err.message();
            assert!(
                text.contains(&format!("refusing to listen on {addr}")),
                "{text}"
            );
            assert!(text.contains(&format!("lifted by {LIFT_FLAG}")), "{text}");
            assert!(text.contains("--port PORT"), "{text}");
            assert!(
                text.contains(NETWORK_FLAG) && text.contains(NETWORK_VAR),
                "{text}"
            );
        }
        let mut guard = guard;
        guard.allow_network(Some(NETWORK_FLAG));
        assert!(guard.check_address("0.0.0.0:8080".parse().unwrap()).is_ok());
        // The second setting alone lifts nothing.
        let mut alone = BootGuard::default();
        alone.allow_network(Some(NETWORK_FLAG));
        assert!(alone.check(false, true, "x").is_err());
        assert!(alone.check_address("0.0.0.0:1".parse().unwrap()).is_ok());
    }
}
