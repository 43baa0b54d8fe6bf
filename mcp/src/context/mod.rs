//! [`Ctx`]: what a tool, resource or prompt handler can do besides computing its result:
//! log to the client, report progress, notice cancellation, ask the human (elicitation),
//! ask the client's model (sampling), list the client's roots, see who is calling, and read
//! other resources.
//!
//! Everything a `Ctx` sends goes to the request's own connection (on Streamable HTTP, to the
//! request's own stream), never to anyone else.
//!
//! Asking works the same for handler authors on both protocol eras. On a handshake-era
//! connection an ask is a request to the client, awaited in place. On the 2026-07-28 era
//! the request ends with an input-required result, and the handler runs again when the
//! client retries with the answers (see [`crate::elicit`]): ask before you act.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::conn::{AuthContext, ConnId, ConnState, HttpHeaders, Outbound, Principal, Transport};
use crate::elicit::mrtr::Mrtr;
use crate::elicit::{ClientRequestError, request_client};
use crate::protocol::inbound::StatelessMeta;
use crate::protocol::jsonrpc::encode_notification;
use crate::protocol::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitAction,
    ElicitResult, ElicitUrlParams, InputRequest, ListRootsResult, LoggingLevel,
    LoggingMessageParams, ProgressParams, ProgressToken, ProtocolVersion, RequestId,
    ResourceContents, Root, methods,
};
use crate::tasks::{LiveTask, TaskFlavour};

mod cancel;
pub(crate) mod host;

pub(crate) use cancel::RequestCancel;

pub(crate) use host::Host;

/// The handle a handler gets for the request it serves. Cheap to clone.
#[derive(Clone)]
pub struct Ctx {
    inner: Arc<CtxInner>,
}

struct CtxInner {
    host: Arc<dyn Host>,
    caller: Arc<Caller>,
    request_id: Option<RequestId>,
    progress_token: Option<ProgressToken>,
    last_progress: Mutex<Option<f64>>,
    mrtr: Option<Arc<Mrtr>>,
    /// The task this call became, once it became one.
    task: std::sync::OnceLock<Arc<LiveTask>>,
}

/// Why a caller that could otherwise be asked cannot be: no channel reaches it.
pub(crate) const NO_CHANNEL: &str = "the connection has no open channel to put a question on";

/// Who a request came from and where its messages go: shared by the dispatcher and `Ctx`.
#[derive(Clone)]
pub(crate) struct Caller {
    pub(crate) conn: Arc<ConnState>,
    /// This request's own channel to the client (an HTTP request's stream, a task's), if
    /// it has one; without one, its messages go to the connection's live transport, looked
    /// up when one is sent ([`Caller::sink`]). Cloning the transport's queue for every
    /// request, most of which send nothing, cost a lock and four atomic operations.
    pub(crate) own_sink: Option<Outbound>,
    pub(crate) cancel: RequestCancel,
    pub(crate) auth: AuthContext,
    pub(crate) version: ProtocolVersion,
    /// Present on the 2026-07-28 era, where capabilities and log level come with each
    /// request instead of from the connection.
    pub(crate) stateless: Option<Arc<StatelessMeta>>,
    /// The HTTP request's headers, on the HTTP transports.
    pub(crate) headers: Option<Arc<HttpHeaders>>,
}

impl Caller {
    /// Where this request's messages go now: its own channel, else the connection's live
    /// transport, if one is attached.
    pub(crate) fn sink(&self) -> Option<Outbound> {
        self.own_sink.clone().or_else(|| self.conn.outbound())
    }

    /// Runs `send` with where this request's messages go, without cloning it; `None` when
    /// they go nowhere. For a message queued without waiting (`try_send`).
    pub(crate) fn with_sink<R>(&self, send: impl FnOnce(&Outbound) -> R) -> Option<R> {
        match &self.own_sink {
            Some(sink) => Some(send(sink)),
            None => self.conn.subscriber.read().as_ref().map(|s| send(&s.out)),
        }
    }

    /// The request's cancellation token (made now if nothing asked for it before).
    pub(crate) fn cancel_token(&self) -> &CancellationToken {
        self.cancel.token(&self.conn)
    }

    /// Whether the request was cancelled or its connection closed under it.
    pub(crate) fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled(&self.conn)
    }

    /// The capabilities that apply to this request.
    pub(crate) fn capabilities(&self) -> Option<Arc<ClientCapabilities>> {
        match &self.stateless {
            Some(m) => Some(Arc::clone(&m.capabilities)),
            None => self.conn.capabilities(),
        }
    }

    /// Whether the human behind this caller can be asked (form elicitation). Handshake era:
    /// a live transport on this very connection, a channel for this request, and the
    /// capability declared at initialize. 2026-07-28: the capability declared on this request.
    pub(crate) fn can_elicit(&self) -> bool {
        self.cannot_elicit().is_none()
    }

    /// Why the human behind this caller cannot be asked, in words for a deny; `None` when
    /// they can.
    pub(crate) fn cannot_elicit(&self) -> Option<&'static str> {
        let capable = self.capabilities().is_some_and(|c| c.can_elicit_form());
        self.cannot_ask(capable)
    }

    /// Why the human behind this caller cannot be sent a URL-mode elicitation (the client
    /// must declare `elicitation.url`, and the revision must have URL mode); `None` when
    /// they can.
    pub(crate) fn cannot_elicit_url(&self) -> Option<&'static str> {
        self.cannot_take_url().or_else(|| self.cannot_ask(true))
    }

    /// Why this client cannot be shown a URL at all, in a question or in a -32042 answer
    /// (which needs no channel to the client); `None` when it can.
    pub(crate) fn cannot_take_url(&self) -> Option<&'static str> {
        if !self.capabilities().is_some_and(|c| c.can_elicit_url()) {
            return Some("the client did not declare URL-mode elicitation (elicitation.url)");
        }
        if self.stateless.is_none() && self.version < ProtocolVersion::V2025_11_25 {
            return Some("the session's protocol revision predates URL-mode elicitation");
        }
        None
    }

    fn cannot_ask(&self, capable: bool) -> Option<&'static str> {
        match &self.stateless {
            Some(_) if capable => None,
            Some(_) => Some("the request did not declare the elicitation capability"),
            None if !capable => Some("the client did not declare the elicitation capability"),
            // Elicitation entered the protocol in 2025-06-18: an older session cannot be
            // sent `elicitation/create`, whatever it declared.
            None if self.version < ProtocolVersion::V2025_06_18 => {
                Some("the session's protocol revision predates elicitation")
            }
            // Its own channel or not, a question is answered through the connection.
            None if !self.conn.has_subscriber() => Some(NO_CHANNEL),
            None => None,
        }
    }

    /// Whether a log message at `level` should be sent for this request.
    pub(crate) fn wants_log(&self, level: LoggingLevel) -> bool {
        match &self.stateless {
            Some(m) => m.log_level().is_some_and(|min| level >= min),
            None => level >= self.conn.session.read().log_level,
        }
    }

    /// The verified principal's subject, if any.
    pub(crate) fn subject(&self) -> Option<&str> {
        self.auth.principal().map(|p| p.subject.as_str())
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

/// What a question to the client asks for.
enum AskFor {
    Elicit {
        message: String,
        /// `None`: generated from the answer type.
        schema: Option<Value>,
    },
    ElicitUrl(ElicitUrlParams),
    Sample(CreateMessageRequestParams),
    Roots,
}

/// A question to the client (elicitation, sampling, roots), ready to be awaited. On the
/// 2026-07-28 era each question has an input key in the input-required result;
/// [`Ask::key`] names it (stable keys let a handler that runs again find its answers),
/// otherwise one is generated.
#[must_use = "a question is asked when awaited"]
pub struct Ask<'c, R> {
    ctx: &'c Ctx,
    key: Option<String>,
    what: AskFor,
    answer: std::marker::PhantomData<fn() -> R>,
}

impl<'c, R: AskAnswer> Ask<'c, R> {
    fn new(ctx: &'c Ctx, what: AskFor) -> Self {
        Ask {
            ctx,
            key: None,
            what,
            answer: std::marker::PhantomData,
        }
    }

    /// Names this question's input key on the 2026-07-28 era.
    pub fn key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }

    async fn run(self) -> Result<R, ClientRequestError> {
        let ctx = self.ctx;
        let (kind, method, params) = match self.what {
            AskFor::Elicit { message, schema } => {
                if !ctx.can_elicit() {
                    return Err(ClientRequestError::NotSupported);
                }
                let schema = schema.unwrap_or_else(R::schema);
                (
                    "elicit",
                    methods::ELICITATION_CREATE,
                    json!({"message": message, "requestedSchema": schema}),
                )
            }
            AskFor::ElicitUrl(mut params) => {
                if !ctx.can_elicit_url() {
                    return Err(ClientRequestError::NotSupported);
                }
                // The elicitation id is the handshake era's; 2026-07-28 correlates by key.
                if ctx.inner.caller.stateless.is_some() {
                    params.elicitation_id = None;
                }
                (
                    "elicit_url",
                    methods::ELICITATION_CREATE,
                    serde_json::to_value(&params).unwrap_or_default(),
                )
            }
            AskFor::Sample(params) => {
                if !ctx.client_supports(ClientCapability::Sampling) {
                    return Err(ClientRequestError::NotSupported);
                }
                (
                    "sample",
                    methods::SAMPLING_CREATE_MESSAGE,
                    serde_json::to_value(&params).unwrap_or_default(),
                )
            }
            AskFor::Roots => {
                if !ctx.client_supports(ClientCapability::Roots) {
                    return Err(ClientRequestError::NotSupported);
                }
                ("roots", methods::ROOTS_LIST, json!({}))
            }
        };
        let key = self.key.unwrap_or_else(|| ctx.next_key(kind));
        let raw: R::Raw = ctx.ask(&key, kind, method, params).await?;
        R::from_answer(raw)
    }
}

impl<'c, R: AskAnswer + Send + 'c> std::future::IntoFuture for Ask<'c, R> {
    type Output = Result<R, ClientRequestError>;
    type IntoFuture =
        std::pin::Pin<Box<dyn std::future::Future<Output = Self::Output> + Send + 'c>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.run())
    }
}

/// What a question's answer becomes: implemented for the answers of [`Ctx::elicit`],
/// [`Ctx::elicit_schema`], [`Ctx::sample`] and [`Ctx::roots`].
pub trait AskAnswer: Sized {
    /// The form's schema, for an elicitation whose schema comes from the answer type.
    fn schema() -> Value {
        json!({"type": "object", "properties": {}})
    }

    /// The client's answer as the protocol defines it.
    type Raw: DeserializeOwned + Send;

    /// Reads the client's answer.
    fn from_answer(raw: Self::Raw) -> Result<Self, ClientRequestError>;
}

impl<T: DeserializeOwned + schemars::JsonSchema> AskAnswer for Elicitation<T> {
    fn schema() -> Value {
        crate::schema::input_schema_for::<T>()
    }

    type Raw = ElicitResult;

    fn from_answer(result: ElicitResult) -> Result<Self, ClientRequestError> {
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
}

impl AskAnswer for ElicitResult {
    type Raw = ElicitResult;

    fn from_answer(raw: ElicitResult) -> Result<Self, ClientRequestError> {
        Ok(raw)
    }
}

impl AskAnswer for CreateMessageResult {
    type Raw = CreateMessageResult;

    fn from_answer(raw: CreateMessageResult) -> Result<Self, ClientRequestError> {
        Ok(raw)
    }
}

impl AskAnswer for Vec<Root> {
    type Raw = ListRootsResult;

    fn from_answer(raw: ListRootsResult) -> Result<Self, ClientRequestError> {
        Ok(raw.roots)
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

/// The answer to a URL-mode elicitation: whether the human agreed to open the URL (not
/// whether the flow behind it finished; that is learnt out of band).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UrlConsent {
    /// The human agreed to open the URL.
    Accepted,
    /// The human declined.
    Declined,
    /// The human dismissed the request.
    Cancelled,
}

impl AskAnswer for UrlConsent {
    type Raw = ElicitResult;

    fn from_answer(raw: ElicitResult) -> Result<Self, ClientRequestError> {
        Ok(match raw.action {
            ElicitAction::Accept => UrlConsent::Accepted,
            ElicitAction::Decline => UrlConsent::Declined,
            ElicitAction::Cancel => UrlConsent::Cancelled,
        })
    }
}

/// Tells the client that started a URL-mode elicitation that its flow finished
/// (`notifications/elicitation/complete`, 2025-11-25): made by
/// [`Ctx::elicitation_completion`], kept by whatever sees the flow finish (a route of your
/// server), sent once.
#[derive(Clone, Debug)]
pub struct ElicitationCompletion {
    sink: Outbound,
    elicitation_id: String,
}

impl ElicitationCompletion {
    pub(crate) fn new(sink: Outbound, elicitation_id: &str) -> Self {
        ElicitationCompletion {
            sink,
            elicitation_id: elicitation_id.to_owned(),
        }
    }

    /// The elicitation it completes.
    pub fn elicitation_id(&self) -> &str {
        &self.elicitation_id
    }

    /// Sends the notification, if the client's channel is still open; returns whether it
    /// was queued.
    pub fn send(&self) -> bool {
        let params = crate::protocol::ElicitationCompleteParams {
            elicitation_id: self.elicitation_id.clone(),
        };
        self.sink.try_send(encode_notification(
            methods::ELICITATION_COMPLETE,
            Some(&params),
        ))
    }
}

/// A client capability a handler may require.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientCapability {
    /// `sampling`.
    Sampling,
    /// `elicitation` (form mode).
    Elicitation,
    /// `roots`.
    Roots,
}

impl ClientCapability {
    fn declared_in(self, caps: &ClientCapabilities) -> bool {
        match self {
            ClientCapability::Sampling => caps.can_sample(),
            ClientCapability::Elicitation => caps.can_elicit_form(),
            ClientCapability::Roots => caps.can_list_roots(),
        }
    }

    fn as_object(self) -> Value {
        match self {
            ClientCapability::Sampling => json!({"sampling": {}}),
            ClientCapability::Elicitation => json!({"elicitation": {}}),
            ClientCapability::Roots => json!({"roots": {}}),
        }
    }
}

impl Ctx {
    pub(crate) fn new(
        host: Arc<dyn Host>,
        caller: Arc<Caller>,
        request_id: Option<RequestId>,
        progress_token: Option<ProgressToken>,
        mrtr: Option<Arc<Mrtr>>,
    ) -> Self {
        Ctx {
            inner: Arc::new(CtxInner {
                host,
                caller,
                request_id,
                progress_token,
                last_progress: Mutex::new(None),
                mrtr,
                task: std::sync::OnceLock::new(),
            }),
        }
    }

    /// Makes this call a task: from now on its questions go through the task.
    pub(crate) fn attach_task(&self, task: Arc<LiveTask>) {
        let _ = self.inner.task.set(task);
    }

    /// The id of the task this call runs as, once it became one (see [`crate::tasks`]).
    pub fn task_id(&self) -> Option<&str> {
        self.inner.task.get().map(|t| t.id())
    }

    /// A 2026-07-28 task sends no progress or log messages: the extension has no stream
    /// for them.
    fn silenced(&self) -> bool {
        self.inner
            .task
            .get()
            .is_some_and(|t| t.flavour() == TaskFlavour::Extension)
    }

    /// What serves this request (the server, seen through the narrow [`Host`] view).
    pub(crate) fn host(&self) -> &Arc<dyn Host> {
        &self.inner.host
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

    /// The request's `_meta` on the 2026-07-28 era, as the client sent it (its reserved
    /// members are also read for you: [`Ctx::client_capabilities`], [`Ctx::log`]'s level).
    pub fn meta(&self) -> Option<&crate::protocol::Meta> {
        self.inner
            .caller
            .stateless
            .as_deref()
            .map(StatelessMeta::meta)
    }

    /// The W3C trace context the client sent in `_meta`, on the 2026-07-28 era.
    pub fn trace_context(&self) -> Option<&crate::protocol::inbound::TraceContext> {
        self.inner.caller.stateless.as_ref()?.trace.as_ref()
    }

    /// The HTTP request's headers (read-only), on the HTTP transports.
    pub fn http_headers(&self) -> Option<&HttpHeaders> {
        self.inner.caller.headers.as_deref()
    }

    /// The verified caller, if the request carried a valid token.
    pub fn principal(&self) -> Option<&Principal> {
        self.inner.caller.auth.principal()
    }

    /// The server-derived facts about the caller that authorizers see.
    pub fn auth_context(&self) -> &AuthContext {
        &self.inner.caller.auth
    }

    /// The capabilities the client declared (at initialize, or on this 2026-07-28 request).
    pub fn client_capabilities(&self) -> Option<Arc<ClientCapabilities>> {
        self.inner.caller.capabilities()
    }

    /// Whether the client declared `capability`.
    pub fn client_supports(&self, capability: ClientCapability) -> bool {
        self.client_capabilities()
            .is_some_and(|c| capability.declared_in(&c))
    }

    /// Requires a client capability. On the 2026-07-28 era a request without it fails with
    /// -32021 (`MissingRequiredClientCapability`, naming the capability) and this call never
    /// returns; on the handshake era it returns `NotSupported`.
    pub async fn require(&self, capability: ClientCapability) -> Result<(), ClientRequestError> {
        if self.client_supports(capability) {
            return Ok(());
        }
        if self.inner.task.get().is_some() {
            return Err(ClientRequestError::NotSupported);
        }
        match &self.inner.mrtr {
            Some(m) => m.require(capability.as_object()).await,
            None => Err(ClientRequestError::NotSupported),
        }
    }

    /// Whether the client cancelled this request (or went away).
    pub fn is_cancelled(&self) -> bool {
        self.inner.caller.is_cancelled()
    }

    /// Completes when the request is cancelled; use it in `select!` around long work.
    pub async fn cancelled(&self) {
        self.inner.caller.cancel_token().cancelled().await
    }

    /// Sends a log message to the client if it wants messages at `level`: on the handshake
    /// era at or above the level set with `logging/setLevel` (`info` until then); on the
    /// 2026-07-28 era only when the request asked for a log level, at or above it.
    pub fn log(&self, level: LoggingLevel, data: impl Into<Value>) {
        if !self.inner.caller.wants_log(level) || self.silenced() {
            return;
        }
        let params = LoggingMessageParams {
            level,
            logger: Some(self.inner.host.name().to_owned()),
            data: data.into(),
        };
        let frame = encode_notification(methods::LOG_MESSAGE, Some(&params));
        self.inner.caller.with_sink(|sink| sink.try_send(frame));
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
        let Some(token) = &self.inner.progress_token else {
            return;
        };
        if self.silenced() {
            return;
        }
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
        let frame = encode_notification(methods::PROGRESS, Some(&params));
        self.inner.caller.with_sink(|sink| sink.try_send(frame));
    }

    /// Whether the client can be asked to fill in a form.
    pub fn can_elicit(&self) -> bool {
        match self.inner.task.get().map(|t| t.flavour()) {
            // A 2025-11-25 task asks on whichever stream waits on it: the capability is
            // what counts.
            Some(TaskFlavour::Core) => self
                .client_capabilities()
                .is_some_and(|c| c.can_elicit_form()),
            _ => self.inner.caller.can_elicit(),
        }
    }

    /// Asks the human to fill in a form described by `schema` (a flat object of primitive
    /// properties); answers with the raw result. Await it, or name its input key first
    /// with [`Ask::key`].
    pub fn elicit_schema(&self, message: &str, schema: Value) -> Ask<'_, ElicitResult> {
        Ask::new(
            self,
            AskFor::Elicit {
                message: message.to_owned(),
                schema: Some(schema),
            },
        )
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
    /// // The same question under a key of our choosing (2026-07-28 input key):
    /// let again = ctx.elicit::<Contact>("Where to?").key("contact").await?;
    /// # let _ = again; Ok(()) }
    /// ```
    pub fn elicit<T: DeserializeOwned + schemars::JsonSchema>(
        &self,
        message: &str,
    ) -> Ask<'_, Elicitation<T>> {
        Ask::new(
            self,
            AskFor::Elicit {
                message: message.to_owned(),
                schema: None,
            },
        )
    }

    /// Whether the client can be sent a URL-mode elicitation (it declared
    /// `elicitation.url`, and on the handshake era this request can carry a request to it).
    pub fn can_elicit_url(&self) -> bool {
        match self.inner.task.get().map(|t| t.flavour()) {
            // A 2025-11-25 task asks on whichever stream waits on it.
            Some(TaskFlavour::Core) => self
                .client_capabilities()
                .is_some_and(|c| c.can_elicit_url()),
            _ => self.inner.caller.cannot_elicit_url().is_none(),
        }
    }

    /// Asks the human to open `url` (URL-mode elicitation) for an out-of-band flow, such as
    /// signing in to a third party, whose data never passes through the client or the
    /// model. The answer says whether they agreed to open it; whether the flow finished is
    /// for your server to learn (see `mcp::connect`, which does all of it). On
    /// 2025-11-25 it is an `elicitation/create` with `mode: "url"` and `elicitation_id`
    /// (random and unique: the client treats it as opaque), sent only to a client that declared `elicitation.url`; on 2026-07-28 it is a URL
    /// request among the input-required result's `inputRequests`. Put no credential or
    /// personal data in `url`.
    pub fn elicit_url(
        &self,
        message: &str,
        url: &str,
        elicitation_id: &str,
    ) -> Ask<'_, UrlConsent> {
        Ask::new(
            self,
            AskFor::ElicitUrl(ElicitUrlParams::new(
                message,
                url,
                Some(elicitation_id.to_owned()),
            )),
        )
    }

    /// A handle that tells this client, later and from anywhere, that the URL-mode
    /// elicitation `elicitation_id` finished (2025-11-25; `None` on 2026-07-28, where the
    /// client learns it by retrying, and when this request has no channel to the client).
    pub fn elicitation_completion(&self, elicitation_id: &str) -> Option<ElicitationCompletion> {
        if self.inner.caller.stateless.is_some() {
            return None;
        }
        let sink = self.inner.caller.sink()?;
        Some(ElicitationCompletion::new(sink, elicitation_id))
    }

    /// Asks the client's model for a completion (`sampling/createMessage`).
    pub fn sample(&self, params: CreateMessageRequestParams) -> Ask<'_, CreateMessageResult> {
        Ask::new(self, AskFor::Sample(params))
    }

    /// Asks the client for its roots (`roots/list`).
    pub fn roots(&self) -> Ask<'_, Vec<Root>> {
        Ask::new(self, AskFor::Roots)
    }

    /// The state this handler stored with [`Ctx::set_request_state`] in the previous round
    /// of a 2026-07-28 multi round-trip request (verified: the client cannot forge it).
    pub fn request_state<T: DeserializeOwned>(&self) -> Option<T> {
        let value = self.inner.mrtr.as_ref()?.app_state()?;
        serde_json::from_value(value.clone()).ok()
    }

    /// Stores state for the next round of a 2026-07-28 multi round-trip request; it travels
    /// sealed inside `requestState`. Does nothing on the handshake era, where the handler
    /// simply keeps running.
    pub fn set_request_state<T: Serialize>(&self, state: &T) {
        if let (Some(m), Ok(v)) = (&self.inner.mrtr, serde_json::to_value(state)) {
            m.set_app_state(v);
        }
    }

    fn next_key(&self, kind: &str) -> String {
        match &self.inner.mrtr {
            Some(m) => m.next_key(kind),
            None => String::new(),
        }
    }

    /// One ask of the client, in whichever way the request's era allows.
    async fn ask<R: DeserializeOwned>(
        &self,
        key: &str,
        kind: &str,
        method: &str,
        params: Value,
    ) -> Result<R, ClientRequestError> {
        if let Some(task) = self.inner.task.get() {
            return self.ask_in_task(task, key, kind, method, params).await;
        }
        if self.inner.caller.stateless.is_some() {
            let Some(mrtr) = &self.inner.mrtr else {
                // Only tools/call, prompts/get and resources/read may ask on this era.
                return Err(ClientRequestError::NotSupported);
            };
            if let Some(answer) = mrtr.answer(key) {
                match serde_json::from_value::<R>(answer) {
                    Ok(r) => return Ok(r),
                    Err(e) => {
                        // A malformed answer counts as no answer: ask again.
                        tracing::debug!(target: "mcp::elicit", key, error = %e, "malformed input response; asking again");
                    }
                }
            }
            let request = InputRequest {
                method: method.to_owned(),
                params,
            };
            return mrtr.suspend(key.to_owned(), request).await;
        }
        self.ask_client(kind, method, params).await
    }

    /// An ask inside a task: one of its input requests on 2026-07-28; on 2025-11-25 a
    /// request to the client (tagged with the task on its way out) while the task says
    /// `input_required`.
    async fn ask_in_task<R: DeserializeOwned>(
        &self,
        task: &LiveTask,
        key: &str,
        kind: &str,
        method: &str,
        params: Value,
    ) -> Result<R, ClientRequestError> {
        match task.flavour() {
            TaskFlavour::Extension => {
                let request = InputRequest {
                    method: method.to_owned(),
                    params,
                };
                let answer = task.ask(key, request).await?;
                serde_json::from_value(answer)
                    .map_err(|e| ClientRequestError::Malformed(e.to_string()))
            }
            TaskFlavour::Core => {
                task.set_waiting(true).await;
                let answer = self.ask_client(kind, method, params).await;
                task.set_waiting(false).await;
                answer
            }
        }
    }

    /// A request to the client on this call's channel, awaited in place.
    async fn ask_client<R: DeserializeOwned>(
        &self,
        kind: &str,
        method: &str,
        params: Value,
    ) -> Result<R, ClientRequestError> {
        let sink = self
            .inner
            .caller
            .sink()
            .ok_or(ClientRequestError::NotSupported)?;
        let timeout = self.inner.host.elicitation_timeout();
        let raw = tokio::select! {
            r = request_client(&self.inner.caller.conn, &sink, kind, method, &params, timeout) => r?,
            _ = self.inner.caller.cancel_token().cancelled() => return Err(ClientRequestError::Disconnected),
        };
        serde_json::from_str(raw.get()).map_err(|e| ClientRequestError::Malformed(e.to_string()))
    }

    /// Reads another resource of this server, as this caller (the read seam applies).
    pub async fn read_resource(
        &self,
        uri: &str,
    ) -> Result<Vec<ResourceContents>, crate::protocol::ErrorObject> {
        self.inner.host.read_resource(self, uri).await
    }

    pub(crate) fn caller(&self) -> &Arc<Caller> {
        &self.inner.caller
    }

    /// The application's state of type `T`, if the server holds one (see
    /// [`ServerBuilder::state`](crate::ServerBuilder::state)); handlers usually take a
    /// [`State<T>`](crate::extract::State) parameter instead.
    pub fn state<T: Send + Sync + 'static>(&self) -> Option<Arc<T>> {
        self.inner
            .host
            .state(std::any::TypeId::of::<T>())?
            .downcast::<T>()
            .ok()
    }

    /// State kept for this connection (a handshake-era session: a stdio client, an HTTP
    /// session), made with `T::default()` on first use and shared by its later calls. On
    /// a 2026-07-28 request, which has no session, it lasts for the one request.
    /// [`ServerBuilder::on_session_end`](crate::ServerBuilder::on_session_end) sees it when
    /// the session ends.
    pub fn session_state<T: Default + Send + Sync + 'static>(&self) -> Arc<T> {
        self.inner
            .caller
            .conn
            .session_states()
            .get_or_insert_with(T::default)
    }

    /// The per-call timeout the server applies.
    pub fn call_timeout(&self) -> Duration {
        self.inner.host.call_timeout()
    }
}
