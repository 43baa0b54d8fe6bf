//! [`Ctx`]: what a tool, resource or prompt handler can do besides computing its result:
//! log to the client, report progress, notice cancellation, ask the human (elicitation),
//! ask the client's model (sampling), list the client's roots, see who is calling, and read
//! other resources.
//!
//! Everything a `Ctx` sends goes to the request's own connection (on Streamable HTTP, to the
//! request's own stream), never to anyone else.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::auth::{AuthContext, Principal};
use crate::elicit::{ClientRequestError, request_client};
use crate::protocol::jsonrpc::encode_notification;
use crate::protocol::{
    CreateMessageRequestParams, CreateMessageResult, ElicitAction, ElicitResult, ListRootsResult,
    LoggingLevel, LoggingMessageParams, ProgressParams, ProgressToken, ProtocolVersion, RequestId,
    ResourceContents, Root, methods,
};
use crate::server::{ConnId, ConnState, Outbound, Server, Transport};

/// The handle a handler gets for the request it serves. Cheap to clone.
#[derive(Clone)]
pub struct Ctx {
    inner: Arc<CtxInner>,
}

pub(crate) struct CtxInner {
    pub(crate) server: Server,
    pub(crate) caller: Caller,
    pub(crate) request_id: Option<RequestId>,
    pub(crate) progress_token: Option<ProgressToken>,
    pub(crate) last_progress: Mutex<Option<f64>>,
}

/// Who a request came from and where its messages go: shared by the dispatcher and `Ctx`.
#[derive(Clone)]
pub(crate) struct Caller {
    pub(crate) conn: Arc<ConnState>,
    pub(crate) sink: Option<Outbound>,
    pub(crate) cancel: CancellationToken,
    pub(crate) auth: AuthContext,
    pub(crate) version: ProtocolVersion,
}

impl Caller {
    /// Whether the human behind this caller can be asked (form elicitation): a live
    /// transport on this very connection, a channel for this request, and the capability
    /// declared at initialize.
    pub(crate) fn can_elicit(&self) -> bool {
        self.sink.is_some()
            && self.conn.has_subscriber()
            && self
                .conn
                .capabilities()
                .is_some_and(|c| c.can_elicit_form())
    }
}

impl fmt::Debug for Ctx {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ctx")
            .field("conn_id", &self.inner.caller.conn.id)
            .field("request_id", &self.inner.request_id)
            .finish_non_exhaustive()
    }
}

/// The answer to a typed elicitation.
#[derive(Clone, Debug, PartialEq)]
pub enum Elicitation<T> {
    /// The human submitted the form.
    Accepted(T),
    /// The human declined.
    Declined,
    /// The human dismissed the request.
    Cancelled,
}

impl Ctx {
    pub(crate) fn new(
        server: Server,
        caller: Caller,
        request_id: Option<RequestId>,
        progress_token: Option<ProgressToken>,
    ) -> Self {
        Ctx {
            inner: Arc::new(CtxInner {
                server,
                caller,
                request_id,
                progress_token,
                last_progress: Mutex::new(None),
            }),
        }
    }

    /// The server serving this request.
    pub fn server(&self) -> &Server {
        &self.inner.server
    }

    /// The connection the request arrived on.
    pub fn conn_id(&self) -> &ConnId {
        &self.inner.caller.conn.id
    }

    /// The transport it arrived on.
    pub fn transport(&self) -> Transport {
        self.inner.caller.auth.transport()
    }

    /// The request's JSON-RPC id, if it has one.
    pub fn request_id(&self) -> Option<&RequestId> {
        self.inner.request_id.as_ref()
    }

    /// The protocol version this request speaks.
    pub fn protocol_version(&self) -> ProtocolVersion {
        self.inner.caller.version
    }

    /// The verified caller, if the request carried a valid token.
    pub fn principal(&self) -> Option<&Principal> {
        self.inner.caller.auth.principal()
    }

    /// The server-derived facts about the caller that authorizers see.
    pub fn auth_context(&self) -> &AuthContext {
        &self.inner.caller.auth
    }

    /// Whether the client cancelled this request (or went away).
    pub fn is_cancelled(&self) -> bool {
        self.inner.caller.cancel.is_cancelled()
    }

    /// Completes when the request is cancelled; use it in `select!` around long work.
    pub async fn cancelled(&self) {
        self.inner.caller.cancel.cancelled().await
    }

    /// Sends a log message to the client if `level` is at or above the level the client
    /// chose (`logging/setLevel`; `info` until it chooses).
    pub fn log(&self, level: LoggingLevel, data: impl Into<Value>) {
        if level < self.inner.caller.conn.session.read().log_level {
            return;
        }
        let Some(sink) = &self.inner.caller.sink else {
            return;
        };
        let params = LoggingMessageParams {
            level,
            logger: Some(self.inner.server.name().to_owned()),
            data: data.into(),
        };
        sink.try_send(encode_notification(methods::LOG_MESSAGE, Some(&params)));
    }

    /// Logs at `debug`.
    pub fn debug(&self, message: impl Into<String>) {
        self.log(LoggingLevel::Debug, message.into());
    }

    /// Logs at `info`.
    pub fn info(&self, message: impl Into<String>) {
        self.log(LoggingLevel::Info, message.into());
    }

    /// Logs at `notice`.
    pub fn notice(&self, message: impl Into<String>) {
        self.log(LoggingLevel::Notice, message.into());
    }

    /// Logs at `warning`.
    pub fn warning(&self, message: impl Into<String>) {
        self.log(LoggingLevel::Warning, message.into());
    }

    /// Logs at `error`.
    pub fn error(&self, message: impl Into<String>) {
        self.log(LoggingLevel::Error, message.into());
    }

    /// Reports progress. Does nothing when the client sent no progress token, and drops a
    /// value that does not increase (the protocol requires strictly increasing progress).
    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let (Some(token), Some(sink)) = (&self.inner.progress_token, &self.inner.caller.sink)
        else {
            return;
        };
        {
            let mut last = self.inner.last_progress.lock();
            if last.is_some_and(|l| progress <= l) {
                return;
            }
            *last = Some(progress);
        }
        let params = ProgressParams {
            progress_token: token.clone(),
            progress,
            total,
            message: message.map(str::to_owned),
        };
        sink.try_send(encode_notification(methods::PROGRESS, Some(&params)));
    }

    /// Whether the client can be asked to fill in a form.
    pub fn can_elicit(&self) -> bool {
        self.inner.caller.can_elicit()
    }

    /// Asks the human to fill in a form described by `schema` (a flat object of primitive
    /// properties) and returns the raw result.
    pub async fn elicit_schema(
        &self,
        message: &str,
        schema: Value,
    ) -> Result<ElicitResult, ClientRequestError> {
        if !self.can_elicit() {
            return Err(ClientRequestError::NotSupported);
        }
        let params = serde_json::json!({"message": message, "requestedSchema": schema});
        let raw = self
            .client_request("elicit", methods::ELICITATION_CREATE, &params)
            .await?;
        serde_json::from_str(raw.get()).map_err(|e| ClientRequestError::Malformed(e.to_string()))
    }

    /// Asks the human for a value of type `T`; the form is generated from `T`'s schema.
    ///
    /// ```no_run
    /// # async fn f(ctx: mcp::Ctx) -> Result<(), mcp::elicit::ClientRequestError> {
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Contact { email: String }
    /// match ctx.elicit::<Contact>("Where should the report go?").await? {
    ///     mcp::context::Elicitation::Accepted(c) => println!("{}", c.email),
    ///     _ => println!("no address"),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn elicit<T: DeserializeOwned + schemars::JsonSchema>(
        &self,
        message: &str,
    ) -> Result<Elicitation<T>, ClientRequestError> {
        let schema = crate::registry::input_schema_for::<T>();
        let result = self.elicit_schema(message, schema).await?;
        match result.action {
            ElicitAction::Accept => {
                let content = Value::Object(result.content.unwrap_or_default());
                serde_json::from_value(content)
                    .map(Elicitation::Accepted)
                    .map_err(|e| ClientRequestError::Malformed(e.to_string()))
            }
            ElicitAction::Decline => Ok(Elicitation::Declined),
            ElicitAction::Cancel => Ok(Elicitation::Cancelled),
        }
    }

    /// Asks the client's model for a completion (`sampling/createMessage`).
    pub async fn sample(
        &self,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ClientRequestError> {
        let capable = self
            .inner
            .caller
            .conn
            .capabilities()
            .is_some_and(|c| c.can_sample());
        if !capable || self.inner.caller.sink.is_none() {
            return Err(ClientRequestError::NotSupported);
        }
        let raw = self
            .client_request("sample", methods::SAMPLING_CREATE_MESSAGE, &params)
            .await?;
        serde_json::from_str(raw.get()).map_err(|e| ClientRequestError::Malformed(e.to_string()))
    }

    /// Asks the client for its roots (`roots/list`).
    pub async fn roots(&self) -> Result<Vec<Root>, ClientRequestError> {
        let capable = self
            .inner
            .caller
            .conn
            .capabilities()
            .is_some_and(|c| c.can_list_roots());
        if !capable || self.inner.caller.sink.is_none() {
            return Err(ClientRequestError::NotSupported);
        }
        let raw = self
            .client_request("roots", methods::ROOTS_LIST, &serde_json::json!({}))
            .await?;
        serde_json::from_str::<ListRootsResult>(raw.get())
            .map(|r| r.roots)
            .map_err(|e| ClientRequestError::Malformed(e.to_string()))
    }

    async fn client_request<P: serde::Serialize>(
        &self,
        kind: &str,
        method: &str,
        params: &P,
    ) -> Result<Box<serde_json::value::RawValue>, ClientRequestError> {
        let sink = self
            .inner
            .caller
            .sink
            .as_ref()
            .ok_or(ClientRequestError::NotSupported)?;
        let timeout = self.inner.server.config().elicitation_timeout;
        tokio::select! {
            r = request_client(&self.inner.caller.conn, sink, kind, method, params, timeout) => r,
            _ = self.inner.caller.cancel.cancelled() => Err(ClientRequestError::Disconnected),
        }
    }

    /// Reads another resource of this server, as this caller (the read seam applies).
    pub async fn read_resource(
        &self,
        uri: &str,
    ) -> Result<Vec<ResourceContents>, crate::protocol::ErrorObject> {
        self.inner.server.read_resource_as(self, uri).await
    }

    pub(crate) fn caller(&self) -> &Caller {
        &self.inner.caller
    }

    /// The per-call timeout the server applies.
    pub fn call_timeout(&self) -> Duration {
        self.inner.server.config().call_timeout
    }
}
