//! Transports: how bytes reach the server. Each one attaches its clients as connections and
//! knows nothing of tools; tools know nothing of transports.
//!
//! - [`stdio`]: newline-delimited JSON-RPC on standard input and output.
//! - [`http`]: Streamable HTTP on one endpoint, with the safety rules every HTTP transport
//!   shares (Host and Origin checks, size limits, bearer tokens, the boot guard).
//! - [`sse`]: the legacy HTTP+SSE transport of protocol 2024-11-05.

pub mod http;
pub mod sse;
pub mod stdio;
mod streamable_http;
