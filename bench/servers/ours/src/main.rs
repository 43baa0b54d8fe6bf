//! The benchmark server on this framework: the same four entries as the rmcp and floor
//! servers (`echo`, `add`, one text resource, one prompt), written the way a user would write
//! them. `--transport stdio|http` and `--bind` come from the generated command line (the
//! driver sets MCP_ALLOW_UNAUTHORIZED_FOR_LOCAL_DEVELOPMENT: no server here authorizes).

mod entries;
mod growth;

use entries::*;

/// With `BENCH_LAYERS` set, the server runs behind three layers (timing, a rate limit and
/// a size limit that never trip): what middleware costs per call, end to end.
fn layers_from_env(builder: mcp::ServerBuilder) -> mcp::ServerBuilder {
    let builder = growth::from_env(builder);
    use mcp::layers::{RateLimit, SizeLimit, Timing};
    if std::env::var_os("BENCH_LAYERS").is_none() {
        return builder;
    }
    builder
        .layer(Timing::new())
        .layer(RateLimit::per_principal(u32::MAX, 1e12))
        .layer(SizeLimit::new(1 << 20))
}

mcp::server! {
    name: "bench-ours",
    tools: [echo, add],
    resources: [about],
    prompts: [greet],
    configure: layers_from_env,
}
