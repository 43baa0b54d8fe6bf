//! Transports: how bytes reach the server. Each one attaches its clients as connections and
//! knows nothing of tools; tools know nothing of transports.
//!
//! - [`stdio`]: newline-delimited JSON-RPC on standard input and output.
//! - `http`: Streamable HTTP on one endpoint, with the safety rules every HTTP transport
//!   shares (Host and Origin checks, size limits, bearer tokens, the boot guard); the
//!   `http` feature (on by default).
//! - `sse`: the legacy HTTP+SSE transport of protocol 2024-11-05; the `http` feature.
//!
//! # Writing a transport
//!
//! Everything a transport needs is re-exported here. It attaches each client with
//! [`Server::connect`](crate::Server::connect) (an [`Outbound`] queue for what the server
//! sends on its own), hands every frame to the one entry point,
//! [`Connection::handle_frame`] (or [`Connection::handle_with`] for a decoded message with
//! [`RequestExtras`]: a per-request sink, the verified principal, the era and metadata it
//! already read, the HTTP headers), and writes the [`Reply`] it returns. Frames it rejects
//! before decoding get [`error_frame`].

#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub mod http;
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub mod sse;
pub mod stdio;
#[cfg(feature = "http")]
mod streamable_http;

pub use crate::conn::{HttpHeaders, Outbound, OutboundReceiver};
pub use crate::protocol::Reply;
pub use crate::server::{Connection, RequestExtras, error_frame};
