//! `BENCH_TOOLS=N` (see bench/README.md, "Growth"): N generated tools added to the tool
//! router at run time (`ToolRouter::add_route` with `ToolRoute::new_dyn`), with the same
//! names, descriptions and schemas as the other two servers generate. Built once per
//! process; each service (one per HTTP session) gets clones of the routes.

use std::sync::{Arc, OnceLock};

use rmcp::handler::server::router::tool::{ToolRoute, ToolRouter};
use rmcp::model::{CallToolResult, ContentBlock, Tool, ToolAnnotations};

use crate::Bench;

fn generated() -> &'static [ToolRoute<Bench>] {
    static ROUTES: OnceLock<Vec<ToolRoute<Bench>>> = OnceLock::new();
    ROUTES.get_or_init(|| {
        let n: usize = std::env::var("BENCH_TOOLS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        (0..n)
            .map(|i| {
                // One schema per tool, as real tools have.
                let serde_json::Value::Object(schema) = serde_json::json!({
                    "type": "object",
                    "properties": {"text": {"type": "string", "description": format!("Any text for gen_{i:05}.")}},
                    "required": ["text"]
                }) else {
                    unreachable!("an object")
                };
                let tool = Tool::new(
                    format!("gen_{i:05}"),
                    format!("Generated tool number {i} of the growth benchmark; returns ok."),
                    Arc::new(schema),
                )
                .annotate(ToolAnnotations::new().read_only(true));
                ToolRoute::new_dyn(tool, |_ctx| {
                    Box::pin(async {
                        Ok(CallToolResult::success(vec![ContentBlock::text("ok")]).into())
                    })
                })
            })
            .collect()
    })
}

/// Adds the generated tools (none unless `BENCH_TOOLS` is set) to `router`.
pub fn add_generated(router: &mut ToolRouter<Bench>) {
    for route in generated() {
        router.add_route(route.clone());
    }
}
