//! Boot guards for network transports.
//!
//! stdio inherits the operating system's process boundary: whoever can talk to the server
//! started it. A network transport has no such boundary, so it refuses to boot unless
//! authorization was *chosen* (not merely defaulted) and a read authorizer exists, whenever
//! authorization is required. It is required in production, and the environment counts as
//! production unless it identifies itself as development or test: an unknown environment
//! fails closed.

use std::fmt;

/// The environment variable naming the deployment environment (`development`, `dev`,
/// `test`; anything else, or nothing, is production).
pub const ENV_VAR: &str = "MCP_ENV";

/// The environment variable that overrides whether authorization is required
/// (`true`/`false`, `1`/`0`).
pub const REQUIRE_VAR: &str = "MCP_REQUIRE_AUTHORIZATION";

/// The deployment facts the guards read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deployment {
    environment: Option<String>,
    require_override: Option<String>,
}

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

impl Deployment {
    /// Reads the process environment.
    pub fn from_env() -> Self {
        Deployment {
            environment: std::env::var(ENV_VAR).ok(),
            require_override: std::env::var(REQUIRE_VAR).ok(),
        }
    }

    /// Builds the facts by hand (for tests and embedders with their own configuration).
    pub fn new(environment: Option<&str>, require_override: Option<&str>) -> Self {
        Deployment {
            environment: environment.map(str::to_owned),
            require_override: require_override.map(str::to_owned),
        }
    }

    /// Whether this is production: true unless the environment is identifiably
    /// development or test.
    pub fn production(&self) -> bool {
        !matches!(
            self.environment
                .as_deref()
                .map(str::to_ascii_lowercase)
                .as_deref(),
            Some("development" | "dev" | "test")
        )
    }

    /// Whether network transports need authorization: the override if it parses, else
    /// [`Deployment::production`]. An unparseable override requires it (fails closed).
    pub fn require_authorization(&self) -> bool {
        match self.require_override.as_deref().map(str::trim) {
            Some("false" | "0" | "no") => false,
            Some("true" | "1" | "yes") => true,
            Some(_) => true,
            None => self.production(),
        }
    }

    /// Refuses to boot when authorization is required and the tool seam's authorizer was
    /// not chosen by a person.
    pub fn enforce_authorization(
        &self,
        configured: bool,
        context: &str,
    ) -> Result<(), BootRefused> {
        if configured || !self.require_authorization() {
            return Ok(());
        }
        Err(BootRefused::new(format!(
            "{context} refuses to boot: authorization is required ({ENV_VAR} is not development or test) \
             but no authorizer is configured for tools. Choose one in server! (authorizer: ...) or with \
             ServerBuilder::authorizer, e.g. mcp::auth::ask_before_sensitive(), or set {REQUIRE_VAR}=false \
             for local development."
        )))
    }

    /// Refuses to boot when authorization is required and no read authorizer exists:
    /// `resources/read` would serve live state to anyone who connects.
    pub fn enforce_read_authorization(
        &self,
        configured: bool,
        context: &str,
    ) -> Result<(), BootRefused> {
        if configured || !self.require_authorization() {
            return Ok(());
        }
        Err(BootRefused::new(format!(
            "{context} refuses to boot: authorization is required but no read authorizer is configured, \
             so resources/read, prompts/get and every list would be served to any client that connects. \
             Set read_authorizer in server! or ServerBuilder::read_authorizer (mcp::auth::allowlist([...]) \
             of methods, or mcp::auth::allow_all() if the data is public), or set {REQUIRE_VAR}=false for \
             local development."
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_environments_are_production() {
        assert!(Deployment::new(None, None).production());
        assert!(Deployment::new(Some("staging"), None).production());
        assert!(!Deployment::new(Some("test"), None).production());
        assert!(!Deployment::new(Some("Development"), None).production());
    }

    #[test]
    fn require_follows_production_and_honours_the_override() {
        assert!(!Deployment::new(Some("test"), None).require_authorization());
        assert!(Deployment::new(Some("test"), Some("true")).require_authorization());
        assert!(!Deployment::new(None, Some("false")).require_authorization());
        assert!(Deployment::new(Some("dev"), Some("maybe")).require_authorization());
    }

    #[test]
    fn enforce_refuses_only_when_required_and_unconfigured() {
        let prod = Deployment::new(None, None);
        assert!(prod.enforce_authorization(true, "HTTP").is_ok());
        let err = prod
            .enforce_authorization(false, "MCP HTTP transport")
            .unwrap_err();
        assert!(
            err.message()
                .starts_with("MCP HTTP transport refuses to boot")
        );
        assert!(err.message().contains(REQUIRE_VAR));
        let err = prod
            .enforce_read_authorization(false, "MCP HTTP transport")
            .unwrap_err();
        assert!(err.message().contains("resources/read"));
        let dev = Deployment::new(Some("test"), None);
        assert!(dev.enforce_authorization(false, "x").is_ok());
        assert!(dev.enforce_read_authorization(false, "x").is_ok());
    }
}
