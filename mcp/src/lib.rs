//! # mcp: a declarative framework for Model Context Protocol servers
//!
//! Write plain async functions, describe them once, and serve them over stdio (and, with
//! the network transports, HTTP), to clients speaking any MCP revision from 2024-11-05 on.
//!
//! Safety is built in: a sensitive tool (destructive, or marked sensitive) is never served
//! without an authorizer; an authorizer answers allow, deny or ask, and "ask" becomes a
//! real question to the human, bound to the connection that made the call and closed
//! exactly once.
//!
//! ```no_run
//! use mcp::prelude::*;
//!
//! /// Adds two integers.
//! #[tool(read_only, idempotent)]
//! async fn add(
//!     /// The first addend.
//!     a: i64,
//!     /// The second addend.
//!     b: i64,
//! ) -> i64 {
//!     a + b
//! }
//!
//! /// A greeting for a name.
//! #[resource("greeting://{name}", mime = "text/plain")]
//! async fn greeting(name: String) -> String {
//!     format!("Hello, {name}!")
//! }
//!
//! // The binary: `--help`, `--list`, `--transport stdio|http|sse`, ...
//! mcp::server! {
//!     name: "calculator",
//!     tools: [add],
//!     resources: [greeting],
//! }
//! ```
//!
//! The macros are [`tool`], [`resource`], [`prompt`] and [`server!`]. Without them, the
//! same server is built with [`Server::builder`]:
//!
//! ```
//! use mcp::prelude::*;
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Add { a: i64, b: i64 }
//!
//! let server = Server::builder("calculator", "1.0.0")
//!     .tool(ToolDef::from_fn("add", "Adds two integers.", |_ctx, x: Add| async move { x.a + x.b }))
//!     .build()
//!     .expect("a valid server");
//! # let _ = server;
//! ```

//!
//! # Features
//!
//! - `macros` (default): [`tool`], [`resource`], [`prompt`] and [`server!`].
//! - `cli` (default): the command line the generated `main` parses ([`cli`]).
//! - `http` (default): Streamable HTTP and the legacy HTTP+SSE transport
//!   (`transport::http`, `transport::sse`). stdio is always there; without `http` a binary
//!   serves stdio only.
//! - `oauth`: JWT access tokens (`auth::bearer::JwtVerifier`); implies `http`.
//! - `redis`: replicas sharing state on Redis (`cluster::redis`); implies `http`.
//! - `otel`: OpenTelemetry traces and metrics with OTLP export (`telemetry`).
//!
//! # Architecture: the path of a request, room by room
//!
//! ```text
//! transport (stdio, http, sse)   bytes in; one Connection per client
//!   │ protocol::jsonrpc          decode the envelope once; params stay raw JSON
//!   │ protocol::inbound          the era, decided once (EraSignals::era); a 2026-07-28
//!   │                            request's _meta parsed and admitted once (StatelessMeta)
//!   ▼
//! server::Connection::handle    the one entry point, the same for every transport
//!   │ protocol::methods          one table: which methods exist in which era, their
//!   │                            capability, read seam, cancellation, batching, headers
//!   │ server::dispatch           connection caps, cancellation, then route
//!   │ auth (seams)               tool authorizer and approval (elicit), read authorizer
//!   │ layers                     middleware: server layers, then a tool's own
//!   ▼
//! registry (handlers)            your #[tool], #[resource], #[prompt] with a Ctx
//!   │                            (context: log, progress, ask, read, who is calling)
//!   ▼
//! server (shaping)               the result shaped for the era (resultType, serverInfo,
//!                                cache hints, revision downgrades), one Reply out
//! ```
//!
//! The rooms are layered: `protocol` imports nothing of the crate; `conn` (connection
//! identity, outbound queues, parked questions) sits on it; `elicit`, `context`, `registry`
//! and `auth` build on those and never import `server`; `server` ties them together;
//! transports and `cli` sit on top. No module imports one above it. On Streamable HTTP,
//! local sessions, sessions shared by a cluster and stateless requests all run through one
//! exchange driver (JSON or SSE); where sessions live is a session backend chosen once.

#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

extern crate self as mcp;

pub mod auth;
pub mod cli;
pub mod cluster;
mod conn;
#[cfg(feature = "oauth")]
#[cfg_attr(docsrs, doc(cfg(feature = "oauth")))]
pub mod connect;
pub mod context;
pub mod elicit;
pub mod extract;
#[doc(hidden)]
pub mod fuzzing;
pub mod layers;
#[doc(hidden)]
pub mod macros_support;
pub mod pressure;
pub mod protocol;
pub mod registry;
mod schema;
pub mod server;
mod states;
pub mod tasks;
#[cfg(feature = "otel")]
#[cfg_attr(docsrs, doc(cfg(feature = "otel")))]
pub mod telemetry;
pub mod testing;
pub mod transport;
mod util;

pub use context::Ctx;
#[cfg(feature = "macros")]
#[cfg_attr(docsrs, doc(cfg(feature = "macros")))]
#[doc = include_str!("docs/tool.md")]
pub use mcp_macros::tool;

#[cfg(feature = "macros")]
#[cfg_attr(docsrs, doc(cfg(feature = "macros")))]
#[doc = include_str!("docs/tools.md")]
pub use mcp_macros::tools;

#[cfg(feature = "macros")]
#[cfg_attr(docsrs, doc(cfg(feature = "macros")))]
#[doc = include_str!("docs/resource.md")]
pub use mcp_macros::resource;

#[cfg(feature = "macros")]
#[cfg_attr(docsrs, doc(cfg(feature = "macros")))]
#[doc = include_str!("docs/prompt.md")]
pub use mcp_macros::prompt;

#[cfg(feature = "macros")]
#[cfg_attr(docsrs, doc(cfg(feature = "macros")))]
#[doc = include_str!("docs/server.md")]
pub use mcp_macros::server;
pub use server::{ConnId, Connection, Server, ServerBuilder, Transport};

/// The names most servers need, in one import: the macros, [`Ctx`], what handlers return
/// and the definitions the builder takes. Everything else lives in its module
/// ([`auth`] for policies, [`protocol`] for wire types, [`layers`] for middleware).
pub mod prelude {
    pub use crate::auth::Decision;
    pub use crate::context::{Ctx, Elicitation};
    pub use crate::protocol::{ContentBlock, PromptMessage, Resource, ResourceContents};
    pub use crate::registry::{
        CompletionRequest, Json, PromptDef, PromptError, ProtocolError, ResourceDef, ResourceError,
        ResourceTemplateDef, Structured, ToolDef, ToolError,
    };
    pub use crate::server::{Server, ServerBuilder};
    #[cfg(feature = "macros")]
    pub use crate::{prompt, resource, tool, tools};
}

/// The README's examples, compiled and run as doc tests so they stay true.
#[doc = include_str!("../../README.md")]
#[cfg(all(doctest, feature = "macros", feature = "cli", feature = "http"))]
pub struct ReadmeDoctests;
