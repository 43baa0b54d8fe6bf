use mcp::prelude::*;

/// Runs as a task some of the time: not a task support the protocol knows.
#[tool(task = "sometimes")]
async fn report() -> &'static str {
    "done"
}

/// An escalation deadline for a tool that is never a task.
#[tool(escalate_after_ms = 500)]
async fn export() -> &'static str {
    "done"
}

fn main() {}
