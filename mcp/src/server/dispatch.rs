//! Method dispatch: one decoded message in, at most one reply out. Requests that run user
//! code are tracked so `notifications/cancelled` (or the connection going away) can stop
//! them, in which case no response is sent.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;

use serde::Deserialize;
use serde_json::Value;

use super::{ConnState, Reply, RequestExtras, Server};
use crate::auth::{
    ArgsSource, AuditOutcome, AuthContext, AuthRequest, Decision, Seam, read_denied, reasons,
    safe_decide,
};
use crate::context::{Caller, Ctx, RequestCancel};
use crate::elicit::mrtr::Mrtr;
use crate::protocol::inbound::StatelessMeta;
use crate::protocol::jsonrpc::strip_position;
use crate::protocol::methods::{Capability, Method};
use crate::protocol::{
    CancelledParams, Era, ErrorObject, Message, Notification, Params, ProgressToken,
    ProtocolVersion, Request, RequestId, methods,
};

/// One request being served: who asked and under which id.
pub(crate) struct Scope {
    /// Shared with every `Ctx` of the request: a clone is one reference count, not one
    /// per field (the cancellation token's takes a lock).
    pub(crate) caller: Arc<Caller>,
    pub(crate) id: RequestId,
}

impl Scope {
    /// The scope of request `id` on `conn`, in the era `stateless` says, stopped by `cancel`.
    fn new(
        states: &Arc<crate::states::StateMap>,
        conn: &Arc<ConnState>,
        id: RequestId,
        stateless: Option<Arc<StatelessMeta>>,
        extras: RequestExtras,
        cancel: RequestCancel,
    ) -> Scope {
        let version = match &stateless {
            Some(_) => ProtocolVersion::V2026_07_28,
            None => conn.version().unwrap_or(ProtocolVersion::LATEST_HANDSHAKE),
        };
        Scope {
            caller: Arc::new(Caller {
                conn: Arc::clone(conn),
                own_sink: extras.sink,
                cancel,
                auth: AuthContext::new(conn.id.clone(), conn.transport, extras.principal)
                    .with_states(Arc::clone(states)),
                version,
                stateless,
                headers: extras.headers,
            }),
            id,
        }
    }

    pub(crate) fn ctx(
        &self,
        server: &Server,
        progress_token: Option<ProgressToken>,
        mrtr: Option<Arc<Mrtr>>,
    ) -> Ctx {
        Ctx::new(
            server.host(),
            Arc::clone(&self.caller),
            Some(self.id.clone()),
            progress_token,
            mrtr,
        )
    }

    pub(crate) fn version(&self) -> ProtocolVersion {
        self.caller.version
    }
}

/// A method this server serves, with what the dispatcher needs to know of it.
struct Served {
    method: Method,
    runs_handler: bool,
    long_lived: bool,
}

/// One request counted against its connection's `max_requests_per_connection`, released
/// however the request ends (answered, cancelled, or its future dropped). It borrows the
/// connection the request's future holds (a clone of the `Arc` was two atomic operations
/// per request).
struct Running<'a>(&'a ConnState);

impl<'a> Running<'a> {
    fn enter(conn: &'a ConnState, max: usize) -> Option<Running<'a>> {
        use std::sync::atomic::Ordering;
        conn.running
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .ok()
            .map(|_| Running(conn))
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0
            .running
            .fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}

/// Polls `fut` once, in the calling task's context.
async fn poll_once<F: Future + Unpin>(mut fut: F) -> Poll<F::Output> {
    std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut fut).poll(cx))).await
}

impl Server {
    pub(crate) async fn dispatch(
        &self,
        conn: &Arc<ConnState>,
        message: Message,
        extras: RequestExtras,
    ) -> Option<Reply> {
        match message {
            Message::Request(request) => {
                crate::util::Outlined::new(self.request(conn, request, extras)).await
            }
            Message::Notification(n) => {
                self.notification(conn, n);
                None
            }
            Message::Response(response) => {
                crate::elicit::deliver(conn, response);
                None
            }
        }
    }

    async fn request(
        &self,
        conn: &Arc<ConnState>,
        request: Request,
        mut extras: RequestExtras,
    ) -> Option<Reply> {
        let Request { id, method, params } = request;
        // Shared with the frame, not copied: a tool call's arguments are a slice of it.
        let params = params.as_ref();
        let stateless = match extras.meta.take() {
            // The transport read and admitted the metadata already.
            Some(meta) => Some(meta),
            None => match conn.era_of(&method, raw(params), extras.era) {
                Era::Handshake => None,
                Era::Stateless => match StatelessMeta::read(&method, params) {
                    Ok(meta) => Some(Arc::new(meta)),
                    Err(e) => return Some(Reply::error(Some(&id), &e)),
                },
            },
        };
        let era = if stateless.is_some() {
            Era::Stateless
        } else {
            Era::Handshake
        };
        let Some(spec) = self.served(&method, era) else {
            return Some(Reply::error(
                Some(&id),
                &ErrorObject::method_not_found(format!("Unknown method: {method}")),
            ));
        };
        // Near the memory limit nothing new starts; `ping` and the requests that keep
        // running work going are still answered.
        if let Some(refusal) = self.admission().refuses(&method) {
            return Some(Reply::error(Some(&id), &refusal));
        }
        let cancellable = spec.runs_handler;
        // Requests that run handlers count against the connection's cap (a listen only
        // waits, and `max_listeners` bounds it).
        let running = if cancellable && !spec.long_lived {
            match Running::enter(conn, self.config().max_requests_per_connection) {
                Some(guard) => Some(guard),
                None => {
                    return Some(self.connection_busy(conn, id, &method, stateless, extras));
                }
            }
        } else {
            None
        };
        // Only a connection with a live transport can send notifications/cancelled. Such a
        // request gets a token of its own; the connection cancels it when it closes (see
        // `ConnState::close`), once it is registered below.
        let tracked = cancellable && conn.has_subscriber();
        let scope = Scope::new(
            &self.inner.states,
            conn,
            id,
            stateless,
            extras,
            RequestCancel::new(tracked),
        );
        // A request the client cancelled gets no response. One stopped because the server
        // closed the connection (its state was evicted, or another transport took over its
        // id) is answered: the transport may still be there, and silence would leave its
        // client waiting forever.
        let stopped = |scope: &Scope| {
            conn.closed.is_cancelled().then(|| {
                Reply::error(
                    Some(&scope.id),
                    &ErrorObject::invalid_request(
                        "Invalid request: the server closed this connection (its state was \
                         evicted or its id was taken over); reconnect and initialize again",
                    ),
                )
            })
        };
        if conn.closed.is_cancelled() {
            return stopped(&scope);
        }
        #[cfg(feature = "otel")]
        let traced = crate::telemetry::RequestTrace::start(&crate::telemetry::RequestFacts {
            method: spec.method.name(),
            params: raw(params),
            id: &scope.id,
            version: scope.version(),
            network_transport: match conn.transport {
                crate::conn::Transport::Stdio => "pipe",
                _ => "tcp",
            },
            session: (scope.caller.stateless.is_none()
                && conn.transport != crate::conn::Transport::Stdio)
                .then(|| conn.id.as_str()),
            headers: scope
                .caller
                .headers
                .as_deref()
                .map(|h| h as &dyn crate::telemetry::HeaderSource),
        });
        let mut route = std::pin::pin!(crate::util::Outlined::new(self.route(
            &scope,
            spec.method,
            params
        )));
        // Polled inside the request's span, when there is one; the future is not moved.
        #[cfg(feature = "otel")]
        let span = traced.as_ref().map(|t| t.span().clone());
        #[cfg(feature = "otel")]
        let mut route = crate::telemetry::InSpan::new(span.as_ref(), route.as_mut());
        #[cfg(feature = "otel")]
        let mut route = std::pin::Pin::new(&mut route);
        // How the request ended goes on its span and into the duration histogram.
        let done = |reply: Option<Reply>| {
            #[cfg(feature = "otel")]
            if let Some(t) = traced {
                t.finish(reply.as_ref());
            }
            reply
        };
        // Most requests finish on their first poll; nothing can cancel them before that, so
        // they never enter the in-flight table.
        if let Poll::Ready(reply) = poll_once(route.as_mut()).await {
            return done(Some(reply));
        }
        // A request still running may be resumed on another replica: its span's context
        // is kept for that one to link to.
        #[cfg(feature = "otel")]
        let traceparent = span
            .as_ref()
            .and_then(crate::telemetry::traceparent_of)
            .map(|tp| conn.traces.lock().insert(scope.id.clone(), tp));
        let cancel = scope.caller.cancel_token();
        if tracked {
            conn.in_flight
                .lock()
                .insert(scope.id.clone(), cancel.clone());
            // The connection may have closed while the request ran its first poll.
            if conn.closed.is_cancelled() {
                cancel.cancel();
            }
        }
        let reply = tokio::select! {
            biased;
            _ = cancel.cancelled() => stopped(&scope),
            reply = &mut route => Some(reply),
        };
        if tracked {
            conn.in_flight.lock().remove(&scope.id);
        }
        #[cfg(feature = "otel")]
        if traceparent.is_some() {
            conn.traces.lock().remove(&scope.id);
        }
        drop(running);
        done(reply)
    }

    /// The answer to a request over the connection's cap: an `isError` result for a tool
    /// call (the model can read it and try again), -32603 for anything else.
    fn connection_busy(
        &self,
        conn: &Arc<ConnState>,
        id: RequestId,
        method: &str,
        stateless: Option<Arc<StatelessMeta>>,
        extras: RequestExtras,
    ) -> Reply {
        let max = self.config().max_requests_per_connection;
        let message = format!(
            "connection_busy: {max} requests are already running on this connection; \
             wait for one to finish and try again"
        );
        tracing::warn!(target: "mcp::server", conn_id = %conn.id, method, max, "request refused: the connection's limit of running requests is reached");
        if method != methods::TOOLS_CALL {
            return Reply::error(Some(&id), &ErrorObject::internal(message));
        }
        let scope = Scope::new(
            &self.inner.states,
            conn,
            id,
            stateless,
            extras,
            RequestCancel::new(false),
        );
        self.tool_reply(&scope, crate::protocol::CallToolResult::error(message))
    }

    /// The method named `method`, if this server serves it in `era`: it exists in that
    /// era and its capability is offered. Everything else is -32601.
    fn served(&self, method: &str, era: Era) -> Option<Served> {
        let m = Method::parse(method)?;
        let spec = m.spec();
        let caps = self.capabilities();
        let offered = match spec.capability {
            None => true,
            Some(Capability::Tools) => caps.tools.is_some(),
            Some(Capability::Resources) => caps.resources.is_some(),
            Some(Capability::Prompts) => caps.prompts.is_some(),
            Some(Capability::Completions) => caps.completions.is_some(),
            Some(Capability::Tasks) => caps.tasks.is_some(),
        };
        (!spec.notification && spec.exists_in(era) && offered).then_some(Served {
            method: m,
            runs_handler: spec.runs_handler,
            long_lived: spec.long_lived,
        })
    }

    /// The seams, then the layers around the handler. A tool call is authorized (and
    /// approved) inside `call_tool`, which runs the layers itself once it may proceed.
    async fn route(&self, scope: &Scope, method: Method, shared: Option<&Params>) -> Reply {
        let params = raw(shared);
        let result = match self.seam(scope, method, params).await {
            Err(e) => Err(e),
            Ok(()) if method == Method::ToolsCall => self.call_tool(scope, params, shared).await,
            // Without layers, nothing to wrap: the handler's future is not boxed.
            Ok(()) if self.inner.layers.is_empty() => self.serve(scope, method, params).await,
            Ok(()) => {
                let answer = self
                    .layered(
                        scope,
                        method,
                        params,
                        &[],
                        std::pin::pin!(async move {
                            crate::layers::Answer::new(self.serve(scope, method, params).await)
                        }),
                    )
                    .await;
                match answer {
                    Ok(reply) if method == Method::ToolsList && !self.inner.layers.is_empty() => {
                        Ok(self.hide_hidden_tools(scope, reply).await)
                    }
                    other => other,
                }
            }
        };
        result.unwrap_or_else(|e| Reply::error(Some(&scope.id), &e))
    }

    /// The handler of each method but `tools/call`, which [`Server::route`] runs itself.
    ///
    /// A request's future is as large as the largest of these: the rare ones whose state is
    /// large (a `subscriptions/listen` stream, the task methods) are boxed, so that every
    /// other request, on stdio a box of its own, stays small (a smaller box to allocate
    /// and copy into).
    async fn serve(
        &self,
        scope: &Scope,
        method: Method,
        params: Option<&str>,
    ) -> Result<Reply, ErrorObject> {
        match method {
            Method::Initialize => self.initialize(scope, params),
            Method::Ping => Ok(Reply::raw_result(&scope.id, "{}")),
            Method::LoggingSetLevel => self.set_level(scope, params),
            Method::ServerDiscover => self.discover(scope),
            Method::SubscriptionsListen => Box::pin(self.listen(scope, params)).await,
            Method::ToolsList => self.list_tools(scope, params).await,
            Method::ToolsCall => Err(ErrorObject::internal(
                "Internal error: tools/call reached the generic method table",
            )),
            Method::ResourcesList => self.list_resources(scope, params).await,
            Method::ResourcesTemplatesList => self.list_templates(scope, params).await,
            Method::ResourcesRead => self.read_resource(scope, params).await,
            Method::ResourcesSubscribe => self.subscribe(scope, params, true).await,
            Method::ResourcesUnsubscribe => self.subscribe(scope, params, false).await,
            Method::PromptsList => self.list_prompts(scope, params).await,
            Method::PromptsGet => self.get_prompt(scope, params).await,
            Method::CompletionComplete => self.complete(scope, params).await,
            Method::TasksGet => Box::pin(self.tasks_get(scope, params)).await,
            Method::TasksUpdate => Box::pin(self.tasks_update(scope, params)).await,
            Method::TasksCancel => Box::pin(self.tasks_cancel(scope, params)).await,
            Method::TasksResult => Box::pin(self.tasks_result(scope, params)).await,
            Method::TasksList => Box::pin(self.tasks_list(scope, params)).await,
            // `served` admits requests only.
            Method::Initialized | Method::Cancelled | Method::RootsListChanged => Err(
                ErrorObject::method_not_found(format!("Unknown method: {}", method.name())),
            ),
        }
    }

    fn notification(&self, conn: &ConnState, n: Notification) {
        self.act_on(conn, &n);
        if !self.inner.layers.is_empty() {
            let info = crate::layers::NotificationInfo {
                method: &n.method,
                params: n.params.as_ref().map(Params::get),
                conn_id: &conn.id,
                transport: conn.transport,
            };
            for layer in &self.inner.layers {
                layer.on_notification(&info);
            }
        }
    }

    fn act_on(&self, conn: &ConnState, n: &Notification) {
        match n.method.as_str() {
            methods::INITIALIZED => conn.session.write().initialized = true,
            methods::CANCELLED => {
                let Some(params) = &n.params else { return };
                let Ok(p) = serde_json::from_str::<CancelledParams>(params.get()) else {
                    return;
                };
                if let Some(id) = p.request_id
                    && let Some(token) = conn.in_flight.lock().get(&id)
                {
                    token.cancel();
                }
            }
            other => {
                tracing::debug!(target: "mcp::server", method = other, "ignoring notification");
            }
        }
    }

    /// Puts a request to the read seam. `args` builds the arguments the seam sees, only
    /// when a read authorizer exists.
    pub(crate) async fn read_gate(
        &self,
        caller: &Caller,
        method: &str,
        args: impl FnOnce() -> Value,
    ) -> Result<(), ErrorObject> {
        let Some(authorizer) = &self.inner.read_authorizer else {
            return Ok(());
        };
        let request = AuthRequest::new(
            Seam::Read,
            method,
            None,
            ArgsSource::Value(args()),
            &caller.auth,
        );
        let decision = self.decide(&**authorizer, &request).await;
        let (outcome, result) = match &decision {
            Decision::Allow => (AuditOutcome::Served, Ok(())),
            Decision::Deny(reason) => (AuditOutcome::Denied, Err(read_denied(method, reason))),
            // Reads cannot be approved interactively, and the operator's question is not
            // echoed to the client.
            Decision::Ask(_) => (
                AuditOutcome::Denied,
                Err(read_denied(
                    method,
                    reasons::INTERACTIVE_APPROVAL_UNSUPPORTED,
                )),
            ),
            // -32042 is a JSON-RPC error, which is what a read's refusal is anyway; it
            // exists on 2025-11-25 only, and only a client that takes URLs is sent one.
            Decision::Url(step) => match caller.cannot_take_url() {
                None if caller.stateless.is_none() => {
                    (AuditOutcome::AwaitingUrl, Err(step.required_error()))
                }
                why => {
                    let why = why.unwrap_or("a read on 2026-07-28 cannot carry a URL");
                    let detail = format!("{}: {why}", reasons::URL_STEP_UNAVAILABLE);
                    (
                        AuditOutcome::NotApproved(detail.clone()),
                        Err(read_denied(method, &detail)),
                    )
                }
            },
        };
        self.audit(&request, &decision, outcome);
        result
    }

    /// Puts a request to an authorizer (contained, under the authorizer timeout), inside an
    /// `mcp.authorize` span when telemetry is on.
    pub(crate) async fn decide(
        &self,
        authorizer: &dyn crate::auth::Authorizer,
        request: &AuthRequest<'_>,
    ) -> Decision {
        let timeout = self.config().authorizer_timeout;
        #[cfg(feature = "otel")]
        if crate::telemetry::active() {
            use tracing::Instrument as _;
            let seam = request.seam().as_str();
            let span = crate::telemetry::authorize_span(seam, request.name());
            let decision = safe_decide(authorizer, request, timeout)
                .instrument(span.clone())
                .await;
            crate::telemetry::record_decision(&span, seam, decision.kind());
            return decision;
        }
        safe_decide(authorizer, request, timeout).await
    }

    /// Records an authorization decision.
    pub(crate) fn audit(
        &self,
        request: &AuthRequest<'_>,
        decision: &Decision,
        outcome: AuditOutcome,
    ) {
        let routine = matches!(decision, Decision::Allow)
            && matches!(outcome, AuditOutcome::Served)
            && request
                .tool()
                .is_none_or(crate::registry::ToolDef::is_read_only);
        let level = if routine {
            self.config().audit_routine_level
        } else {
            tracing::Level::INFO
        };
        let wanted = self.inner.audit.is_some() || crate::auth::audit::logged_at(level);
        if !wanted {
            return;
        }
        let context = request.context();
        crate::auth::audit::emit(
            self.inner.audit.as_ref(),
            level,
            &crate::auth::audit::AuditRecord {
                seam: request.seam(),
                name: request.name(),
                conn_id: context.conn_id(),
                transport: context.transport(),
                subject: context.principal().map(|p| p.subject.as_str()),
                argument_digest: request.argument_digest(),
                decision: decision.kind(),
                detail: decision.detail(),
                outcome: &outcome,
            },
        );
    }
}

/// How a contained handler failed.
pub(crate) enum Failure {
    /// It panicked (the message went to the log only).
    Panicked,
    /// It ran past its timeout and was dropped.
    TimedOut(std::time::Duration),
}

impl Failure {
    /// The JSON-RPC error for a failed resource, prompt or completion handler. It names
    /// only the kind of failure: a panic message can carry upstream bytes.
    pub(crate) fn to_error(&self, what: &str) -> ErrorObject {
        match self {
            Failure::Panicked => ErrorObject::internal(crate::util::callback_panicked(what)),
            Failure::TimedOut(t) => ErrorObject::internal(format!(
                "callback_timeout: the {what} handler did not finish within {} ms",
                t.as_millis()
            )),
        }
    }
}

/// How a handler that may ask for input ended.
pub(crate) enum Outcome<T> {
    /// It finished.
    Done(T),
    /// It suspended waiting for input (2026-07-28): answer with an input-required result.
    NeedsInput,
    /// It required a client capability the request did not declare: answer -32021.
    MissingCapability(Value),
}

/// Runs a handler that may suspend for input (when `mrtr` is present), contained like
/// [`contained`].
pub(crate) async fn run_handler<T, F: std::future::Future<Output = T>>(
    mrtr: Option<&Arc<Mrtr>>,
    timeout: std::time::Duration,
    start: impl FnOnce() -> F,
) -> Result<Outcome<T>, Failure> {
    let Some(m) = mrtr else {
        return contained(timeout, start).await.map(Outcome::Done);
    };
    // The handler is polled first, so every ask it makes in one poll (a `join!` of several)
    // is recorded before the suspension is noticed.
    tokio::select! {
        biased;
        r = contained(timeout, start) => r.map(Outcome::Done),
        _ = m.suspended() => Ok(match m.missing_capability() {
            Some(c) => Outcome::MissingCapability(c),
            None => Outcome::NeedsInput,
        }),
    }
}

/// Runs a handler with a timeout and panic containment, logging a panic's message.
/// `start` makes the handler's future; it is called inside the containment, because a
/// handler can panic before it returns its future as well as while it runs.
pub(crate) async fn contained<T, F: std::future::Future<Output = T>>(
    timeout: std::time::Duration,
    start: impl FnOnce() -> F,
) -> Result<T, Failure> {
    use futures::FutureExt as _;
    // The deadline counts from here, as `tokio::time::timeout` would; the timer is only
    // armed if the handler does not finish on its first poll (most do), so those never
    // touch the timer wheel. A timeout too large for the clock never fires.
    let deadline = tokio::time::Instant::now().checked_add(timeout);
    let fut = async move { start().await };
    let mut fut = std::pin::pin!(std::panic::AssertUnwindSafe(fut).catch_unwind());
    // Returned from inside the `if let`, whose scrutinee ends with it: a `match` on the
    // first poll would keep its (result-sized) value in this future's state across the wait.
    if let Poll::Ready(r) = poll_once(fut.as_mut()).await {
        return settle(Ok(r), timeout);
    }
    let outcome = match deadline {
        Some(deadline) => tokio::time::timeout_at(deadline, fut).await,
        None => Ok(fut.await),
    };
    settle(outcome, timeout)
}

/// What a contained handler's run came to: its value, a logged panic, or the timeout.
fn settle<T>(
    outcome: Result<std::thread::Result<T>, tokio::time::error::Elapsed>,
    timeout: std::time::Duration,
) -> Result<T, Failure> {
    match outcome {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(payload)) => {
            let message = crate::util::panic_message(&payload);
            tracing::error!(target: "mcp::server", panic = %message, "handler panicked");
            Err(Failure::Panicked)
        }
        Err(_) => Err(Failure::TimedOut(timeout)),
    }
}

/// The params as they were sent.
fn raw(params: Option<&Params>) -> Option<&str> {
    params.map(Params::get)
}

/// Parses a method's params. Absent params are `{}` unless the method requires them.
pub(crate) fn parse_params<'a, T: Deserialize<'a>>(
    method: &str,
    params: Option<&'a str>,
    required: bool,
) -> Result<T, ErrorObject> {
    let text = match params {
        Some(text) => text,
        None if required => {
            return Err(ErrorObject::invalid_params(format!(
                "{method} requires params"
            )));
        }
        None => "{}",
    };
    serde_json::from_str(text).map_err(|e| {
        ErrorObject::invalid_params(format!(
            "Invalid params for {method}: {}",
            strip_position(&e)
        ))
    })
}
