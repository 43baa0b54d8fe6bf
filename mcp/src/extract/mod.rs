//! Handler parameters that do not come from the arguments: the application's [`State`],
//! and anything a handler derives from its call ([`FromCtx`]): the caller, a tenant named in
//! `_meta`, a per-request database transaction.
//!
//! In `#[tool]`, `#[resource]` and `#[prompt]` functions, a parameter of type `Ctx` or
//! `State<T>` is recognised by its type; any other type implementing [`FromCtx`] is marked
//! `#[extract]`. Such parameters are never part of the input schema. Built in: `Ctx`,
//! `State<T>`, `Option<Principal>`, `Option<Meta>` (the `_meta`) and `Option<HttpHeaders>`.
//! Extractors run in the order the parameters are written, after the arguments were
//! decoded and the authorizer allowed the call; the first [`Rejection`] ends the call with its message (a tool error
//! result for a tool, an error for a resource read or a prompt).
//!
//! ```
//! use mcp::prelude::*;
//! use mcp::extract::{FromCtx, Rejection};
//!
//! /// The caller, from the verified principal; calls without one are refused.
//! struct CurrentUser(String);
//!
//! impl FromCtx for CurrentUser {
//!     async fn from_ctx(ctx: &Ctx) -> Result<Self, Rejection> {
//!         ctx.principal()
//!             .map(|p| CurrentUser(p.subject.clone()))
//!             .ok_or_else(|| Rejection::new("this tool needs a signed-in caller"))
//!     }
//! }
//!
//! /// Says who is calling.
//! #[tool(read_only)]
//! async fn whoami(#[extract] user: CurrentUser) -> String {
//!     user.0
//! }
//! # let _ = <whoami as mcp::macros_support::ToolFactory>::def();
//! ```

mod state;

use std::fmt;
use std::future::Future;

pub use state::State;

use crate::context::Ctx;

/// A value a handler derives from its call: implement it for a type, and a parameter of
/// that type marked `#[extract]` receives it. The built-in [`Ctx`] and [`State`] implement
/// it too.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be extracted from a call",
    label = "not an extractor",
    note = "a parameter marked #[extract] needs a type implementing mcp::extract::FromCtx; drop #[extract] to take it as an argument, or take shared state as `State<T>`"
)]
pub trait FromCtx: Sized + Send + 'static {
    /// Derives the value from the call's context, or says why it cannot.
    fn from_ctx(ctx: &Ctx) -> impl Future<Output = Result<Self, Rejection>> + Send;
}

/// Why an extractor could not give a handler its parameter: the call ends with this message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejection {
    message: String,
}

impl Rejection {
    /// A rejection with a message for the client (and the model reading it).
    pub fn new(message: impl Into<String>) -> Self {
        Rejection {
            message: message.into(),
        }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Rejection {}

impl FromCtx for Ctx {
    async fn from_ctx(ctx: &Ctx) -> Result<Self, Rejection> {
        Ok(ctx.clone())
    }
}

impl<T: Send + Sync + 'static> FromCtx for State<T> {
    async fn from_ctx(ctx: &Ctx) -> Result<Self, Rejection> {
        ctx.state::<T>().map(State::from).ok_or_else(|| {
            Rejection::new(format!(
                "this server has no state of type `{}`: give it with ServerBuilder::state (or server! {{ state: [..] }})",
                std::any::type_name::<T>()
            ))
        })
    }
}

/// The verified principal of the call, if there is one (HTTP with bearer tokens); `None`
/// otherwise. A handler that needs one writes its own extractor (see the module docs).
impl FromCtx for Option<crate::auth::Principal> {
    async fn from_ctx(ctx: &Ctx) -> Result<Self, Rejection> {
        Ok(ctx.principal().cloned())
    }
}

/// The request's `_meta`, if it had one.
impl FromCtx for Option<crate::protocol::Meta> {
    async fn from_ctx(ctx: &Ctx) -> Result<Self, Rejection> {
        Ok(ctx.meta().cloned())
    }
}

/// The HTTP request's headers (credentials removed), on the HTTP transports; `None` on stdio.
impl FromCtx for Option<crate::conn::HttpHeaders> {
    async fn from_ctx(ctx: &Ctx) -> Result<Self, Rejection> {
        Ok(ctx.http_headers().cloned())
    }
}
