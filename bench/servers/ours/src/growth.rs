//! What `driver growth` varies, read from the environment (see bench/README.md, "Growth"):
//!
//! - `BENCH_TOOLS=N` registers N generated tools beside the four entries, through the
//!   runtime builder API (`ToolDef::new` with a JSON Schema, no macros): `gen_00000` ...,
//!   each with one string argument and a schema of its own, the same names, descriptions
//!   and schemas as the rmcp and floor servers generate.
//!
//! The authorized variant (`ours+auth`) is the guarded configuration of `main.rs`
//! (`BENCH_GUARDED`), the one `driver all` measures.

/// The description of generated tool `i` (shared wording across the three servers).
fn description(i: usize) -> String {
    format!("Generated tool number {i} of the growth benchmark; returns ok.")
}

/// The description of its argument: one schema per tool, as real tools have (a server
/// cannot share one schema among them).
fn argument(i: usize) -> String {
    format!("Any text for gen_{i:05}.")
}

/// The builder with the generated tools the environment asks for.
pub fn from_env(mut builder: mcp::ServerBuilder) -> mcp::ServerBuilder {
    let tools: usize = std::env::var("BENCH_TOOLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    if tools > 0 {
        builder = builder.tools((0..tools).map(|i| {
            mcp::registry::ToolDef::new(
                format!("gen_{i:05}"),
                description(i),
                serde_json::json!({
                    "type": "object",
                    "properties": {"text": {"type": "string", "description": argument(i)}},
                    "required": ["text"]
                }),
                |_ctx, _args| async { "ok" },
            )
            .read_only()
        }));
    }
    builder
}
