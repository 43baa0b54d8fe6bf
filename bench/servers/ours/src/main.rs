//! The benchmark server on this framework: the same four entries as the rmcp and floor
//! servers (`echo`, `add`, one text resource, one prompt), written the way a user would write
//! them. `--transport stdio|http` and `--bind` come from the generated command line. Without
//! `BENCH_GUARDED` no authorizer is set (the driver sets
//! MCP_ALLOW_UNAUTHORIZED_FOR_LOCAL_DEVELOPMENT for HTTP); with it, the server is configured
//! as the README says to deploy one.

mod entries;
mod growth;

use entries::*;

/// With `BENCH_LAYERS` set, the server runs behind three layers (timing, a rate limit and
/// a size limit that never trip): what middleware costs per call, end to end.
fn layers_from_env(builder: mcp::ServerBuilder) -> mcp::ServerBuilder {
    use mcp::layers::{RateLimit, SizeLimit, Timing};
    let builder = guard_from_env(growth::from_env(builder));
    if std::env::var_os("BENCH_LAYERS").is_none() {
        return builder;
    }
    builder
        .layer(Timing::new())
        .layer(RateLimit::per_principal(u32::MAX, 1e12))
        .layer(SizeLimit::new(1 << 20))
}

/// With `BENCH_GUARDED` set, the configuration users deploy: a tool authorizer (ask before
/// anything sensitive) and a read authorizer, so every call is decided and audited at the
/// default log level.
fn guard_from_env(builder: mcp::ServerBuilder) -> mcp::ServerBuilder {
    if std::env::var_os("BENCH_GUARDED").is_none() {
        return builder;
    }
    builder
        .authorizer(mcp::auth::ask_before_sensitive())
        .read_authorizer(mcp::auth::allow_all())
}

mcp::server! {
    name: "bench-ours",
    tools: [echo, add],
    resources: [about],
    prompts: [greet],
    configure: layers_from_env,
}
