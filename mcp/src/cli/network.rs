//! The options only the network transports read (`--bind`, `--port`, `--legacy-sse`, the
//! boot guard's two flags, `--allowed-host`, `--redis-url`): present in a binary built
//! with the `http` feature, absent from the `--help` of a stdio-only one.

use std::net::{Ipv4Addr, SocketAddr};

use clap::Args;

use super::TransportArg;
use super::limits::{Limits, Origin};
use crate::auth::deployment::{LIFT_FLAG, LIFT_VAR, NETWORK_FLAG, NETWORK_VAR};
use crate::transport::http::HttpConfig;

/// The options of the network transports (http and sse), flattened into
/// [`Options`](super::Options); each has an environment variable too.
#[derive(Args, Clone, Debug)]
#[command(about = None, long_about = None)]
#[non_exhaustive]
pub struct NetworkOptions {
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
    /// Also accept this Host header (name or name:port), beside the loopback names: the
    /// name clients (or your load balancer) use for this server. Repeat it for several.
    #[arg(
        long = "allowed-host",
        env = "MCP_ALLOWED_HOSTS",
        value_name = "HOST",
        value_delimiter = ','
    )]
    pub allowed_hosts: Vec<String>,
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
    /// Serve the metrics for a Prometheus scrape at http://ADDR/metrics. Off unless given;
    /// the endpoint has no authentication of its own, so bind an address only your scraper
    /// reaches, never the MCP endpoint's.
    #[cfg(feature = "otel")]
    #[arg(long, env = "MCP_METRICS_BIND", value_name = "ADDR")]
    pub metrics_bind: Option<SocketAddr>,
}

impl NetworkOptions {
    /// The address the network transports listen on: `--port` on loopback, or `--bind`.
    pub fn address(&self) -> SocketAddr {
        self.port
            .map_or(self.bind, |port| (Ipv4Addr::LOCALHOST, port).into())
    }

    /// The command line's HTTP settings on top of the binary's.
    pub(crate) fn configure(&self, limits: &Limits, mut http: HttpConfig) -> HttpConfig {
        if self.legacy_sse {
            http = http.legacy_sse(true);
        }
        for host in &self.allowed_hosts {
            http = http.allow_host(host.clone());
        }
        if self.allow_unauthorized_for_local_development {
            let by = named(
                limits,
                "allow_unauthorized_for_local_development",
                LIFT_FLAG,
                LIFT_VAR,
            );
            http.guard.lift(Some(&by));
        }
        if self.allow_unauthorized_on_network {
            let by = named(
                limits,
                "allow_unauthorized_on_network",
                NETWORK_FLAG,
                NETWORK_VAR,
            );
            http.guard.allow_network(Some(&by));
        }
        http
    }

    /// The Redis server and key prefix replicas share, when `--redis-url` is given.
    pub(crate) fn cluster(&self) -> Option<(String, String)> {
        self.redis_url
            .clone()
            .map(|url| (url, self.redis_prefix.clone()))
    }

    /// Why `--redis-url` cannot be used as given, if it cannot.
    pub(crate) fn multi_replica_refusal(
        &self,
        transport: TransportArg,
        key: Option<&[u8]>,
    ) -> Option<String> {
        self.redis_url.as_ref()?;
        if transport != TransportArg::Http {
            return Some(format!(
                "refusing to start: --redis-url runs this server as one replica of several behind a load balancer, which only the Streamable HTTP transport supports (--transport http), not {}",
                transport.as_str()
            ));
        }
        if key.is_none() {
            return Some(format!(
                "refusing to start: --redis-url runs this server as one replica of several, and every replica must seal requestState (the state of 2026-07-28 multi-round requests and approvals) with the same key, or a retry that lands on another replica is refused. Give the same key to every replica with --state-key-file PATH (MCP_STATE_KEY_FILE) or MCP_STATE_KEY: {}",
                super::KEY_HINT
            ));
        }
        if !cfg!(feature = "redis") {
            return Some(
                "refusing to start: --redis-url needs a binary built with the `redis` feature of mcp-guarded"
                    .to_owned(),
            );
        }
        None
    }

    /// The `--print-config` rows of the network settings: the address and the boot guard.
    pub(crate) fn report(
        &self,
        http: &HttpConfig,
        origin: impl Fn(&str, &str, &str, bool) -> String,
    ) -> Vec<(&'static str, String, String)> {
        let (bind_id, bind_flag, bind_var) = match self.port {
            Some(_) => ("port", "--port", "MCP_PORT"),
            None => ("bind", "--bind", "MCP_BIND"),
        };
        let rows = vec![
            (
                "bind",
                format!("\"{}\"", self.address()),
                origin(bind_id, bind_flag, bind_var, false),
            ),
            (
                "allow_unauthorized_for_local_development",
                http.guard.lifted().to_string(),
                origin(
                    "allow_unauthorized_for_local_development",
                    LIFT_FLAG,
                    LIFT_VAR,
                    http.guard.lifted(),
                ),
            ),
            (
                "allow_unauthorized_on_network",
                http.guard.network_allowed().to_string(),
                origin(
                    "allow_unauthorized_on_network",
                    NETWORK_FLAG,
                    NETWORK_VAR,
                    http.guard.network_allowed(),
                ),
            ),
        ];
        #[cfg(feature = "otel")]
        let rows = {
            let mut rows = rows;
            rows.push((
                "metrics_bind",
                self.metrics_bind
                    .map_or_else(|| "\"off\"".to_owned(), |a| format!("\"{a}\"")),
                origin("metrics_bind", "--metrics-bind", "MCP_METRICS_BIND", false),
            ));
            rows
        };
        rows
    }
}

/// How the option `id` was given: its flag or its variable (`None` when neither was).
pub(crate) fn given(limits: &Limits, id: &str, flag: &str, var: &str) -> Option<String> {
    match limits.origin(id) {
        Origin::CommandLine => Some(flag.to_owned()),
        Origin::Env => Some(var.to_owned()),
        Origin::Code => None,
    }
}

/// The setting `id` as warnings name it: its variable if that is where it came from.
fn named(limits: &Limits, id: &str, flag: &str, var: &str) -> String {
    given(limits, id, flag, var).unwrap_or_else(|| flag.to_owned())
}

/// Connects to the Redis server replicas share.
#[cfg(feature = "redis")]
pub(crate) async fn join_cluster(
    url: &str,
    prefix: &str,
) -> Result<crate::cluster::Cluster, String> {
    let cluster = crate::cluster::redis::connect(url, prefix)
        .await
        .map_err(|e| format!("cannot join the replicas' Redis at {}: {e}", redact(url)))?;
    tracing::info!(target: "mcp", replica = cluster.replica_id(), "serving as one replica of several (shared state on Redis)");
    Ok(cluster)
}

#[cfg(not(feature = "redis"))]
pub(crate) async fn join_cluster(
    _url: &str,
    _prefix: &str,
) -> Result<crate::cluster::Cluster, String> {
    Err("--redis-url needs a binary built with the `redis` feature of mcp-guarded".to_owned())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redis_urls_are_shown_without_their_password() {
        assert_eq!(
            redact("redis://:secret@10.0.0.1:6379/0"),
            "redis://***@10.0.0.1:6379/0"
        );
        assert_eq!(redact("redis://10.0.0.1"), "redis://10.0.0.1");
    }
}
