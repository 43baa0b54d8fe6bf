//! Shared helpers for the integration tests: the official MCP JSON Schemas as a validator
//! for every message a server emits, and a harness that drives a server binary over stdio
//! (pipes or a Unix socket pair).

pub mod process;
pub mod schema;

pub use process::{StdioServer, Wiring};
pub use schema::{SchemaValidator, validate_server_message};
