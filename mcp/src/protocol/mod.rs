//! Wire types: the JSON-RPC envelope, every request, result, notification and content
//! block of the protocol, and the protocol revisions. Pure data and serde; no I/O.
//!
//! Input types tolerate unknown members; output is compact one-line JSON.

mod capabilities;
mod client_requests;
mod completion;
mod content;
pub mod inbound;
pub(crate) mod json_str;
pub mod jsonrpc;
mod lifecycle;
mod logging;
pub mod methods;
mod notifications;
mod params;
mod prompts;
mod reply;
mod resources;
mod stateless;
pub(crate) mod tool_schema;
mod tools;
mod version;

pub use capabilities::*;
pub use client_requests::*;
pub use completion::*;
pub use content::*;
pub use jsonrpc::Params;
pub use jsonrpc::{ErrorObject, Message, Notification, Request, RequestId, Response, codes};
pub use lifecycle::*;
pub use logging::*;
pub use notifications::*;
pub use prompts::*;
pub use reply::Reply;
pub use resources::*;
pub use stateless::*;
pub use tool_schema::ToolSchema;
pub use tools::*;
pub use version::*;

/// A JSON object used for `_meta` and other open maps.
pub type Meta = serde_json::Map<String, serde_json::Value>;

/// Params of list requests: an optional cursor.
#[derive(Clone, Debug, Default, serde::Deserialize, serde::Serialize)]
pub struct PaginatedParams {
    /// Where the previous page ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// `logging/setLevel` params.
#[derive(Clone, Debug, serde::Deserialize, serde::Serialize)]
pub struct SetLevelParams {
    /// The minimum level to send.
    pub level: String,
}
