//! The benchmark server on this framework: the same four entries as the rmcp and floor
//! servers (`echo`, `add`, one text resource, one prompt), written the way a user would write
//! them. `--transport stdio|http` and `--bind` come from the generated command line (the
//! driver sets MCP_ALLOW_UNAUTHORIZED_FOR_LOCAL_DEVELOPMENT: no server here authorizes).

mod entries;

use entries::*;

mcp::server! {
    name: "bench-ours",
    tools: [echo, add],
    resources: [about],
    prompts: [greet],
}
