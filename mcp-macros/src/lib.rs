//! Procedural macros for the `mcp` framework.
//!
//! The attribute macros (`#[tool]`, `#[resource]`, `#[prompt]`) and `server!` live here; users
//! reach them through `mcp::prelude`.
