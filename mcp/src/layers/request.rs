//! What a layer sees of a request: its method and params, and the caller as the server
//! derived it. Read-only: a layer changes what happens by answering, not by editing.

use std::sync::OnceLock;
use std::time::Instant;

use serde::Deserialize;
use serde_json::Value;

use super::{Answer, Method};
use crate::conn::{ConnId, HttpHeaders, Principal, Transport};
use crate::context::Caller;
use crate::protocol::{CallToolResult, Era, ErrorObject, Meta, ProtocolVersion, Reply, RequestId};

/// How the server turns a layer's answer into a reply shaped for the request's era.
pub(crate) trait Shape: Send + Sync {
    /// A success with the given result object (JSON text, without era members).
    fn result(&self, json: &str) -> Reply;
    /// A tool result (downgraded for the negotiated revision).
    fn tool_result(&self, result: CallToolResult) -> Reply;
}

/// One request on its way through the layers.
pub struct Request<'a> {
    pub(crate) method: Method,
    pub(crate) params: Option<&'a str>,
    pub(crate) id: &'a RequestId,
    pub(crate) caller: &'a Caller,
    pub(crate) shape: &'a dyn Shape,
    head: OnceLock<Head>,
    received: Instant,
}

/// The members of the params most layers key on, read on first use.
#[derive(Default)]
struct Head {
    target: Option<String>,
    arguments: Option<Value>,
    meta: Option<Meta>,
}

impl<'a> Request<'a> {
    pub(crate) fn new(
        method: Method,
        params: Option<&'a str>,
        id: &'a RequestId,
        caller: &'a Caller,
        shape: &'a dyn Shape,
    ) -> Self {
        Request {
            method,
            params,
            id,
            caller,
            shape,
            head: OnceLock::new(),
            received: Instant::now(),
        }
    }

    fn head(&self) -> &Head {
        self.head.get_or_init(|| {
            #[derive(Deserialize)]
            struct Raw {
                #[serde(default)]
                name: Option<String>,
                #[serde(default)]
                uri: Option<String>,
                #[serde(default)]
                arguments: Option<Value>,
                #[serde(rename = "_meta", default)]
                meta: Option<Meta>,
            }
            let raw = self
                .params
                .and_then(|p| serde_json::from_str::<Raw>(p).ok());
            match raw {
                Some(r) => Head {
                    target: r.name.or(r.uri),
                    arguments: r.arguments,
                    meta: r.meta,
                },
                None => Head::default(),
            }
        })
    }

    /// When the request reached the layers (one clock read that every layer can share).
    pub fn received(&self) -> Instant {
        self.received
    }

    /// The method.
    pub fn method(&self) -> Method {
        self.method
    }

    /// The params as JSON text, as the client sent them.
    pub fn params(&self) -> Option<&str> {
        self.params
    }

    /// What the request is about: the tool or prompt name, or the resource URI.
    pub fn target(&self) -> Option<&str> {
        self.head().target.as_deref()
    }

    /// A tool call's or prompt's arguments.
    pub fn arguments(&self) -> Option<&Value> {
        self.head().arguments.as_ref()
    }

    /// The request's `_meta`, as sent.
    pub fn meta(&self) -> Option<&Meta> {
        match &self.caller.stateless {
            Some(m) => Some(m.meta()),
            None => self.head().meta.as_ref(),
        }
    }

    /// The request's JSON-RPC id.
    pub fn id(&self) -> &RequestId {
        self.id
    }

    /// The verified principal, if the request carried a valid token.
    pub fn principal(&self) -> Option<&Principal> {
        self.caller.auth.principal()
    }

    /// The transport the request arrived on.
    pub fn transport(&self) -> Transport {
        self.caller.auth.transport()
    }

    /// The connection (on HTTP, the session; shared by every stateless request).
    pub fn conn_id(&self) -> &ConnId {
        self.caller.auth.conn_id()
    }

    /// The protocol revision the request speaks.
    pub fn protocol_version(&self) -> ProtocolVersion {
        self.caller.version
    }

    /// The protocol era.
    pub fn era(&self) -> Era {
        self.caller.version.era()
    }

    /// The HTTP request's headers, on the HTTP transports.
    pub fn http_headers(&self) -> Option<&HttpHeaders> {
        self.caller.headers.as_deref()
    }

    /// The server's application state of type `T`, if it holds one (see
    /// [`ServerBuilder::state`](crate::ServerBuilder::state)).
    pub fn state<T: Send + Sync + 'static>(&self) -> Option<std::sync::Arc<T>> {
        self.caller.auth.state::<T>()
    }

    /// Answers with a result object (the method's result, without the members the server
    /// adds for the era, which it adds itself).
    pub fn answer(&self, result: &Value) -> Answer {
        Answer::new(Ok(self.shape.result(&result.to_string())))
    }

    /// Answers with a result object given as JSON text (as [`Answer::result_json`] gives
    /// it), for layers that store answers.
    pub fn answer_json(&self, result_json: &str) -> Answer {
        Answer::new(Ok(Reply::raw_result(self.id, result_json)))
    }

    /// Answers a tool call with a tool result (an `isError` one for a refusal the model
    /// should read).
    pub fn answer_tool(&self, result: CallToolResult) -> Answer {
        Answer::new(Ok(self.shape.tool_result(result)))
    }

    /// Refuses the request with a JSON-RPC error.
    pub fn refuse(&self, error: ErrorObject) -> Answer {
        Answer::new(Err(error))
    }
}

/// A notification from the client, as layers see it.
#[derive(Debug)]
pub struct NotificationInfo<'a> {
    /// The method.
    pub method: &'a str,
    /// The params as JSON text.
    pub params: Option<&'a str>,
    /// The connection it arrived on.
    pub conn_id: &'a ConnId,
    /// The transport.
    pub transport: Transport,
}
