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

#![warn(missing_docs)]

extern crate self as mcp;

pub mod auth;
pub mod cli;
pub mod context;
pub mod elicit;
pub mod macros_support;
pub mod protocol;
pub mod registry;
pub mod server;
pub mod testing;
pub mod transport;
mod util;

pub use context::Ctx;
pub use mcp_macros::{prompt, resource, server, tool};
pub use server::{ConnId, Connection, Server, ServerBuilder, Transport};

/// The names most servers need, in one import.
pub mod prelude {
    pub use crate::auth::{self, Decision};
    pub use crate::context::{Ctx, Elicitation};
    pub use crate::protocol::{
        CallToolResult, ContentBlock, GetPromptResult, PromptMessage, Resource, ResourceContents,
        Role,
    };
    pub use crate::registry::{
        CompletionRequest, Json, PromptDef, PromptError, ResourceDef, ResourceError,
        ResourceTemplateDef, ToolDef, ToolError, complete_from,
    };
    pub use crate::server::{Server, ServerBuilder, Transport};
    pub use crate::{prompt, resource, tool};
}

/// The README's examples, compiled and run as doc tests so they stay true.
#[doc = include_str!("../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
