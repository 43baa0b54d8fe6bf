//! Tasks in the dispatcher: when a `tools/call` becomes a task, how the task runs after
//! its request ended, and the `tasks/*` methods of both revisions (see [`crate::tasks`]).

use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt as _;
use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;

use super::dispatch::{Failure, Scope, parse_params};
use super::stateless::decorate;
use super::{Reply, Server};
use crate::context::{Caller, Ctx};
use crate::elicit::mrtr::Mrtr;
use crate::protocol::{
    CallToolResult, ErrorObject, Meta, ProgressToken, ProtocolVersion, meta_keys, methods,
};
use crate::registry::{ToolArgs, ToolDef};
use crate::server::Outbound;
use crate::tasks::{
    Admission, LiveTask, StopReason, TaskFlavour, TaskLimits, TaskRecord, TaskStatus, TaskSupport,
    new_task_id, now_ms, owner_key,
};

/// How a `tools/call` may run, decided before anyone is asked about it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum TaskPlan {
    /// An ordinary call.
    Sync,
    /// A call that is, or may become, a task.
    Task(Tasked),
}

/// How a call that may be a task runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Tasked {
    /// A task from the start (2025-11-25, the client asked), kept for `ttl`.
    Now { ttl: Duration },
    /// An ordinary call that becomes a task after `after` (2026-07-28, the request
    /// declared the extension); `required` when it may not finish as an ordinary call.
    Escalate { after: Duration, required: bool },
}

/// The `task` member of a 2025-11-25 `tools/call`.
#[derive(Deserialize)]
struct TaskField {
    #[serde(default)]
    task: Option<Value>,
}

/// `tasks/get`, `tasks/cancel`, `tasks/result` params.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TaskIdParams {
    task_id: String,
}

/// `tasks/update` params.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct UpdateParams {
    task_id: String,
    #[serde(default)]
    input_responses: Meta,
}

/// `tasks/list` params.
#[derive(Deserialize)]
struct ListParams {
    #[serde(default)]
    cursor: Option<String>,
}

/// How long a stopped task's handler may take to notice and wind down.
const WIND_DOWN: Duration = Duration::from_secs(1);

/// A tool's future as a task runs it: owned, contained, and `'static`.
type TaskFuture = BoxFuture<'static, Result<CallToolResult, Failure>>;

/// How a task's run ended.
enum Ended {
    Done(Result<CallToolResult, Failure>),
    Stopped(StopReason),
    TimedOut(Duration),
}

/// The -32021 a request gets when it needed the tasks extension and did not declare it.
fn tasks_not_declared() -> ErrorObject {
    Server::missing_capability(json!({"extensions": {meta_keys::TASKS_EXTENSION: {}}}))
}

/// The answer to a task id the caller may not see: the same as for one that never existed.
fn unknown_task() -> ErrorObject {
    ErrorObject::invalid_params("Invalid params: unknown taskId")
}

fn store_failed(e: crate::cluster::StoreError) -> ErrorObject {
    ErrorObject::internal(format!("Internal error: {e}"))
}

/// Whether the request declared the tasks extension in its own client capabilities.
fn declares_tasks(scope: &Scope) -> bool {
    scope.caller.stateless.as_ref().is_some_and(|m| {
        m.capabilities
            .other
            .get("extensions")
            .and_then(|e| e.get(meta_keys::TASKS_EXTENSION))
            .is_some_and(|v| !v.is_null())
    })
}

impl Server {
    /// The owner key of the caller: its principal, or its connection.
    fn task_owner(&self, scope: &Scope) -> String {
        owner_key(
            scope.caller.auth.principal(),
            &scope.caller.conn.id.to_string(),
        )
    }

    fn task_limits(&self) -> TaskLimits {
        TaskLimits {
            per_owner: self.config().max_tasks_per_owner,
            total: self.config().max_tasks,
        }
    }

    /// Decides how a call of `tool` runs. Refusals come first, before anyone is asked
    /// about a call that could not run: -32601 for a task the 2025-11-25 tool cannot be
    /// (or must be), -32021 for a 2026-07-28 request that did not declare the extension a
    /// `required` tool needs.
    ///
    /// Only a server that offers tasks looks: elsewhere `params.task` is an unknown member,
    /// ignored as the protocol says.
    pub(super) fn task_plan(
        &self,
        scope: &Scope,
        tool: &ToolDef,
        params: Option<&str>,
    ) -> Result<TaskPlan, ErrorObject> {
        let support = tool.task_support;
        if scope.caller.stateless.is_some() {
            // A legacy `params.task` means nothing here: the server decides.
            return Ok(match support {
                TaskSupport::Forbidden => TaskPlan::Sync,
                _ if !declares_tasks(scope) => {
                    if support == TaskSupport::Required {
                        return Err(tasks_not_declared());
                    }
                    TaskPlan::Sync
                }
                _ => TaskPlan::Task(Tasked::Escalate {
                    after: tool.task_policy.deadline(),
                    required: support == TaskSupport::Required,
                }),
            });
        }
        let tasks_exist = scope.version() >= ProtocolVersion::V2025_11_25;
        let task = params
            .and_then(|raw| serde_json::from_str::<TaskField>(raw).ok())
            .and_then(|f| f.task);
        let asked = task.as_ref().filter(|t| !t.is_null() && tasks_exist);
        match (support, asked) {
            (TaskSupport::Forbidden, Some(_)) => Err(ErrorObject::method_not_found(format!(
                "Method not found: tool {} does not support task-augmented calls",
                tool.name()
            ))),
            (TaskSupport::Required, None) => Err(ErrorObject::method_not_found(format!(
                "Method not found: tool {} must be called as a task (params.task, protocol 2025-11-25)",
                tool.name()
            ))),
            (_, Some(t)) => {
                let most = self.config().task_ttl;
                let ttl = t
                    .get("ttl")
                    .and_then(Value::as_u64)
                    .map_or(most, |ms| Duration::from_millis(ms).min(most));
                Ok(TaskPlan::Task(Tasked::Now { ttl }))
            }
            (_, None) => Ok(TaskPlan::Sync),
        }
    }

    /// A tool's future, owned and contained: a panic (in building it or while it runs) is
    /// a [`Failure`], not a crash.
    fn task_future(tool: &ToolDef, ctx: Ctx, args: ToolArgs) -> TaskFuture {
        let handler = Arc::clone(&tool.handler);
        async move {
            let run = std::panic::AssertUnwindSafe(async move { handler.call(ctx, args).await });
            run.catch_unwind().await.map_err(|payload| {
                let message = crate::util::panic_message(&payload);
                tracing::error!(target: "mcp::server", panic = %message, "handler panicked");
                Failure::Panicked
            })
        }
        .boxed()
    }

    /// Runs an allowed call that may be (or become) a task. Its answer is the call's own
    /// result (it finished, or it asked for input before it became a task) or the task's
    /// handle.
    pub(super) async fn run_tool_tasked(
        &self,
        scope: &Scope,
        tool: &ToolDef,
        args: ToolArgs,
        token: Option<ProgressToken>,
        mrtr: Option<&Arc<Mrtr>>,
        plan: Tasked,
    ) -> Result<super::dispatch::Outcome<CallToolResult>, TaskStarted> {
        use super::dispatch::Outcome;
        let Some(permit) = self.inner.in_flight.try_enter() else {
            return Ok(Outcome::Done(CallToolResult::error(format!(
                "server_busy: {} calls are already running; try again shortly",
                self.config().max_in_flight
            ))));
        };
        // The handler's own cancellation: the request's until the call becomes a task,
        // then the task's (closing the stream that created a task does not stop it).
        let stop = CancellationToken::new();
        let mut caller = Caller::clone(&scope.caller);
        caller.cancel = crate::context::RequestCancel::given(stop.clone());
        let owner = self.task_owner(scope);
        match plan {
            Tasked::Now { ttl } => {
                let record = self.new_record(&owner, tool, TaskFlavour::Core, ttl);
                let live = self
                    .admit(record, &stop, &scope.caller.conn)
                    .await
                    .map_err(TaskStarted::Refused)?;
                caller.own_sink = Some(self.task_channel(&live, &scope.caller));
                let ctx = Ctx::new(
                    self.host(),
                    Arc::new(caller),
                    Some(scope.id.clone()),
                    token,
                    None,
                );
                ctx.attach_task(Arc::clone(&live));
                let fut = Self::task_future(tool, ctx, args);
                drop(permit);
                self.spawn_task(Arc::clone(&live), tool.name(), fut, stop, scope.version());
                let record = live.snapshot().await;
                Err(TaskStarted::Created(Box::new(record)))
            }
            Tasked::Escalate { after, required } => {
                let ctx = Ctx::new(
                    self.host(),
                    Arc::new(caller),
                    Some(scope.id.clone()),
                    token,
                    mrtr.cloned(),
                );
                let mut fut = Self::task_future(tool, ctx.clone(), args);
                let timeout = tool.timeout.unwrap_or(self.config().call_timeout);
                let started = tokio::time::Instant::now();
                let escalate_at = started + after;
                let suspended = async {
                    match mrtr {
                        Some(m) => m.suspended().await,
                        None => std::future::pending().await,
                    }
                };
                let mut suspended = std::pin::pin!(suspended);
                // `Always` (no deadline) escalates as soon as the handler's first poll left
                // it waiting on something other than the client: not through a timer,
                // which fires at the next tick at the earliest, together with a short wait
                // of the handler's own, which (polled first) would then ask before the call
                // became a task.
                let deadline = async {
                    if !after.is_zero() {
                        tokio::time::sleep_until(escalate_at).await;
                    }
                };
                // The handler is polled first, so an ask it makes at once is recorded
                // before the suspension or the deadline is looked at.
                let escalate = tokio::select! {
                    biased;
                    r = &mut fut => return Ok(done(r)),
                    _ = &mut suspended => {
                        return Ok(match mrtr.and_then(|m| m.missing_capability()) {
                            Some(c) => Outcome::MissingCapability(c),
                            None => Outcome::NeedsInput,
                        });
                    }
                    () = deadline => true,
                    _ = tokio::time::sleep_until(started + timeout), if !required => false,
                };
                if !escalate {
                    return Ok(Outcome::Done(CallToolResult::error(
                        Failure::TimedOut(timeout)
                            .to_error("tool")
                            .message
                            .into_owned(),
                    )));
                }
                let record =
                    self.new_record(&owner, tool, TaskFlavour::Extension, self.config().task_ttl);
                let live = match self.admit(record, &stop, &scope.caller.conn).await {
                    Ok(live) => live,
                    // No room for another task: an optional one goes on as an ordinary
                    // call, within the call timeout.
                    Err(refusal) if !required => {
                        tracing::info!(target: "mcp::tasks", tool = %tool.name(), reason = %refusal.message, "running as an ordinary call");
                        let left = timeout.saturating_sub(started.elapsed());
                        return Ok(match tokio::time::timeout(left, fut).await {
                            Ok(r) => done(r),
                            Err(_) => Outcome::Done(CallToolResult::error(
                                Failure::TimedOut(timeout)
                                    .to_error("tool")
                                    .message
                                    .into_owned(),
                            )),
                        });
                    }
                    Err(refusal) => return Err(TaskStarted::Refused(refusal)),
                };
                ctx.attach_task(Arc::clone(&live));
                drop(permit);
                self.spawn_task(Arc::clone(&live), tool.name(), fut, stop, scope.version());
                let record = live.snapshot().await;
                Err(TaskStarted::Created(Box::new(record)))
            }
        }
    }

    fn new_record(
        &self,
        owner: &str,
        tool: &ToolDef,
        flavour: TaskFlavour,
        ttl: Duration,
    ) -> TaskRecord {
        let now = now_ms();
        TaskRecord {
            task_id: new_task_id(),
            owner: owner.to_owned(),
            replica: Some(self.inner.tasks.replica.clone()),
            flavour,
            tool: tool.name().to_owned(),
            status: TaskStatus::Working,
            status_message: None,
            created_ms: now,
            updated_ms: now,
            ttl_ms: Some(ttl.as_millis() as u64),
            poll_interval_ms: self.config().task_poll_interval.as_millis().max(1) as u64,
            result: None,
            error: None,
            input_requests: Default::default(),
        }
    }

    /// Records a new task durably (`tasks/get` finds it on every replica once this
    /// returns) and makes it live here, or says why there is no room.
    async fn admit(
        &self,
        record: TaskRecord,
        stop: &CancellationToken,
        conn: &Arc<crate::conn::ConnState>,
    ) -> Result<Arc<LiveTask>, ErrorObject> {
        let engine = &self.inner.tasks;
        match engine.store.create(&record, self.task_limits()).await {
            Ok(Admission::Created) => {}
            Ok(Admission::OwnerFull) => {
                return Err(ErrorObject::internal(format!(
                    "task_limit: you already keep {} tasks; wait for one to expire",
                    self.config().max_tasks_per_owner
                )));
            }
            Ok(Admission::StoreFull) => {
                return Err(ErrorObject::internal(format!(
                    "task_limit: the server already keeps {} tasks; try again later",
                    self.config().max_tasks
                )));
            }
            Err(e) => return Err(store_failed(e)),
        }
        let live = LiveTask::new(record, Arc::clone(&engine.store), stop.clone());
        let server = Arc::downgrade(&self.inner);
        let conn = Arc::downgrade(conn);
        live.observe(Arc::new(move |record: &TaskRecord| {
            if let Some(inner) = server.upgrade() {
                Server { inner }.task_changed(record, conn.upgrade().as_deref());
            }
        }));
        engine.insert(&live);
        Ok(live)
    }

    /// Tells who asked of a task's change: 2026-07-28 listen streams that named it (on
    /// every replica), or, for a 2025-11-25 task, its connection
    /// (`notifications/tasks/status`).
    fn task_changed(&self, record: &TaskRecord, conn: Option<&crate::conn::ConnState>) {
        match record.flavour {
            TaskFlavour::Extension => {
                self.notify_listeners_task(record);
                if let Some(cluster) = &self.inner.cluster {
                    cluster.publish_detached(crate::cluster::BusMessage::TaskChanged {
                        origin: cluster.replica_id().to_owned(),
                        record: Box::new(record.clone()),
                    });
                }
            }
            TaskFlavour::Core => {
                if let Some(out) = conn.and_then(crate::conn::ConnState::outbound) {
                    let params = Value::Object(record.core_task());
                    out.try_send(crate::protocol::jsonrpc::encode_notification(
                        methods::TASKS_STATUS,
                        Some(&params),
                    ));
                }
            }
        }
    }

    /// The task `id` as its owner sees it now, if `scope` is its owner.
    pub(super) async fn task_snapshot(&self, scope: &Scope, id: &str) -> Option<TaskRecord> {
        self.owned_task(scope, id)
            .await
            .ok()
            .map(|(record, _)| record)
    }

    /// Which of `ids` the caller of `scope` may hear about (its own tasks).
    pub(super) async fn own_task_ids(&self, scope: &Scope, ids: &[String]) -> Vec<String> {
        let mut mine = Vec::new();
        for id in ids.iter().take(self.config().max_tasks_per_owner) {
            if self.owned_task(scope, id).await.is_ok() && !mine.contains(id) {
                mine.push(id.clone());
            }
        }
        mine
    }

    /// Where a 2025-11-25 task's own messages go: tagged with the task, onto the stream of
    /// a `tasks/result` waiting on it, else onto the connection's own channel.
    fn task_channel(&self, live: &Arc<LiveTask>, caller: &Caller) -> Outbound {
        let (sink, mut rx) = Outbound::channel(self.config().outbound_capacity);
        let live = Arc::clone(live);
        let conn = Arc::clone(&caller.conn);
        let fallback = caller.sink();
        tokio::spawn(async move {
            while let Some(frame) = rx.recv().await {
                let frame = tag_related_task(&frame, live.id());
                let target = live
                    .side_channel()
                    .or_else(|| conn.outbound())
                    .or_else(|| fallback.clone().filter(|s| !s.is_closed()));
                if let Some(target) = target {
                    target.send(frame).await;
                }
            }
        });
        sink
    }

    /// Runs a task's handler to its end, apart from any request, and records how it
    /// ended.
    fn spawn_task(
        &self,
        live: Arc<LiveTask>,
        tool: &str,
        fut: TaskFuture,
        stop: CancellationToken,
        version: ProtocolVersion,
    ) {
        let server = self.clone();
        let limit = self.config().task_time_limit;
        let tracker = self.inner.tasks.tracker.clone();
        // Made here, inside the request's span: the task's span follows from it.
        #[cfg(feature = "otel")]
        let span = crate::telemetry::task_span(live.id(), tool);
        #[cfg(not(feature = "otel"))]
        let _ = tool;
        let run = async move {
            let record = live.snapshot().await;
            let ttl = record.ttl_ms.map_or(limit, Duration::from_millis);
            let limit = limit.min(ttl);
            let shutdown = server.inner.shutdown.clone();
            let mut fut = fut;
            // A stop comes first: a handler that answers the cancel it noticed does not
            // turn a cancelled (or shut down) task into a completed one.
            let ended = tokio::select! {
                biased;
                _ = live.stop_token().cancelled() => {
                    Ended::Stopped(live.stop_reason().unwrap_or(StopReason::Cancelled))
                }
                _ = shutdown.cancelled() => Ended::Stopped(StopReason::Shutdown),
                r = &mut fut => Ended::Done(r),
                _ = tokio::time::sleep(limit) => Ended::TimedOut(limit),
            };
            let finished = matches!(ended, Ended::Done(_));
            // The end is written first: what the handler does from here changes nothing.
            server.record_end(&live, ended, version).await;
            if !finished {
                // A cooperative handler (one watching `ctx.cancelled()`) gets a moment to
                // wind down before its future is dropped.
                stop.cancel();
                let _ = tokio::time::timeout(WIND_DOWN, fut).await;
            }
            server.inner.tasks.remove(live.id());
        };
        #[cfg(feature = "otel")]
        let run = tracing::Instrument::instrument(run, span);
        tracker.spawn(crate::util::Outlined::new(run));
    }

    /// Writes a task's end: a result is `completed` (on 2025-11-25 an `isError` one is
    /// `failed`), a JSON-RPC error, a panic, a timeout or a shutdown is `failed`, a cancel
    /// is `cancelled`.
    async fn record_end(&self, live: &LiveTask, ended: Ended, version: ProtocolVersion) {
        self.write_end(live, ended, version).await;
        #[cfg(feature = "otel")]
        crate::telemetry::record_task_end(
            &tracing::Span::current(),
            live.snapshot().await.status.as_str(),
        );
    }

    async fn write_end(&self, live: &LiveTask, ended: Ended, version: ProtocolVersion) {
        let flavour = live.flavour();
        match ended {
            Ended::Done(Ok(mut result)) => {
                if let Some(error) = result.failure.take() {
                    let message = error.message.to_string();
                    live.end(TaskStatus::Failed, None, Some(*error), Some(message))
                        .await;
                    return;
                }
                super::compat::tool_result(version, &mut result);
                let status = if flavour == TaskFlavour::Core && result.is_error() {
                    TaskStatus::Failed
                } else {
                    TaskStatus::Completed
                };
                let value = serde_json::to_value(&result).unwrap_or_default();
                live.end(status, Some(value), None, None).await;
            }
            Ended::Done(Err(failure)) => {
                let error = failure.to_error("tool");
                let message = error.message.to_string();
                live.end(TaskStatus::Failed, None, Some(error), Some(message))
                    .await;
            }
            Ended::Stopped(StopReason::Cancelled) => {
                live.end(
                    TaskStatus::Cancelled,
                    None,
                    None,
                    Some("cancelled by the client".into()),
                )
                .await;
            }
            Ended::Stopped(StopReason::Shutdown) => {
                let message = "server_shutdown: the server stopped while the task ran";
                live.end(
                    TaskStatus::Failed,
                    None,
                    Some(ErrorObject::internal(message)),
                    Some(message.into()),
                )
                .await;
            }
            Ended::TimedOut(limit) => {
                let message = format!(
                    "task_timeout: the task did not finish within {} s",
                    limit.as_secs()
                );
                live.end(
                    TaskStatus::Failed,
                    None,
                    Some(ErrorObject::internal(message.clone())),
                    Some(message),
                )
                .await;
            }
        }
    }

    /// Ends every task running here (the server is stopping) and waits, a bounded time,
    /// until each one's end is written.
    pub(crate) async fn end_tasks(&self) {
        let engine = &self.inner.tasks;
        for live in engine.running() {
            live.stop(StopReason::Shutdown);
        }
        engine.tracker.close();
        if tokio::time::timeout(Duration::from_secs(5), engine.tracker.wait())
            .await
            .is_err()
        {
            tracing::warn!(target: "mcp::tasks", "some tasks' ends could not be written before shutdown");
        }
    }

    /// The handle a request gets for the task it created.
    pub(super) fn task_created_reply(&self, scope: &Scope, record: &TaskRecord) -> Reply {
        match record.flavour {
            TaskFlavour::Core => {
                let body = json!({"task": Value::Object(record.core_task())});
                Reply::raw_result(&scope.id, &body.to_string())
            }
            TaskFlavour::Extension => {
                let body = Value::Object(record.extension_task()).to_string();
                Reply::raw_result(
                    &scope.id,
                    &decorate(
                        &body,
                        Some("task"),
                        Some(&self.inner.server_info_json),
                        None,
                    ),
                )
            }
        }
    }

    /// The task `id` as the caller may see it: its owner's, of the caller's revision, and
    /// (when its replica died) ended `failed` first. Anyone else gets `unknown taskId`.
    async fn owned_task(
        &self,
        scope: &Scope,
        id: &str,
    ) -> Result<(TaskRecord, Option<Arc<LiveTask>>), ErrorObject> {
        let engine = &self.inner.tasks;
        let live = engine.live(id);
        let record = match &live {
            Some(l) => Some(l.snapshot().await),
            // A stored record past its ttl is gone, whatever a store that failed to drop
            // it says.
            None => engine
                .store
                .get(id)
                .await
                .map_err(store_failed)?
                .filter(|r| !r.expired(now_ms())),
        };
        let flavour = if scope.caller.stateless.is_some() {
            TaskFlavour::Extension
        } else {
            TaskFlavour::Core
        };
        let Some(record) =
            record.filter(|r| r.owner == self.task_owner(scope) && r.flavour == flavour)
        else {
            return Err(unknown_task());
        };
        if live.is_some() || record.status.is_terminal() {
            return Ok((record, live));
        }
        Ok((self.orphan_check(record).await?, None))
    }

    /// A task that is not terminal and not running here: if the replica that ran it is
    /// gone, it is ended `failed`, saying so.
    async fn orphan_check(&self, record: TaskRecord) -> Result<TaskRecord, ErrorObject> {
        if self.runner_alive(&record).await? {
            return Ok(record);
        }
        self.end_orphan(record).await
    }

    /// Whether the replica recorded as running a task that does not run here is alive.
    async fn runner_alive(&self, record: &TaskRecord) -> Result<bool, ErrorObject> {
        let engine = &self.inner.tasks;
        Ok(match (&record.replica, &self.inner.cluster) {
            // Ours, and not running: this process lost it (it cannot happen short of a
            // store shared with an earlier run of the same replica id).
            (Some(r), _) if *r == engine.replica => false,
            (Some(r), Some(cluster)) => cluster.bus().is_alive(r).await.map_err(store_failed)?,
            _ => false,
        })
    }

    /// Ends `failed` a task whose replica is gone, saying so; the record as stored.
    async fn end_orphan(&self, mut record: TaskRecord) -> Result<TaskRecord, ErrorObject> {
        let message = "replica_lost: the replica running this task stopped before it finished";
        record.end(
            TaskStatus::Failed,
            None,
            Some(ErrorObject::internal(message)),
            Some(message.into()),
        );
        Ok(self.end_in_store(record).await?.0)
    }

    /// Writes the end of a task no replica here runs. Returns the record as stored and
    /// whether this write is the one that ended it (someone else's end stands otherwise).
    async fn end_in_store(
        &self,
        mut record: TaskRecord,
    ) -> Result<(TaskRecord, bool), ErrorObject> {
        record.updated_ms = now_ms().max(record.updated_ms);
        let store = &self.inner.tasks.store;
        if store.update(&record).await.map_err(store_failed)? {
            return Ok((record, true));
        }
        let stored = store.get(&record.task_id).await.map_err(store_failed)?;
        Ok((stored.unwrap_or(record), false))
    }

    /// Checks a `tasks/*` request on 2026-07-28 declared the extension (-32021 if not).
    pub(super) fn tasks_gate(&self, scope: &Scope) -> Result<(), ErrorObject> {
        if scope.caller.stateless.is_some() && !declares_tasks(scope) {
            return Err(tasks_not_declared());
        }
        Ok(())
    }

    /// `tasks/get`: the task as its revision shows it.
    pub(super) async fn tasks_get(
        &self,
        scope: &Scope,
        params: Option<&str>,
    ) -> Result<Reply, ErrorObject> {
        self.tasks_gate(scope)?;
        let p: TaskIdParams = parse_params(methods::TASKS_GET, params, true)?;
        let (record, _) = self.owned_task(scope, &p.task_id).await?;
        Ok(match record.flavour {
            TaskFlavour::Core => {
                Reply::raw_result(&scope.id, &Value::Object(record.core_task()).to_string())
            }
            TaskFlavour::Extension => self.reply_raw(
                scope,
                &Value::Object(record.detailed_task()).to_string(),
                None,
            ),
        })
    }

    /// `tasks/update` (2026-07-28): delivers answers to the task's waiting questions,
    /// wherever it runs, and acknowledges at once.
    pub(super) async fn tasks_update(
        &self,
        scope: &Scope,
        params: Option<&str>,
    ) -> Result<Reply, ErrorObject> {
        self.tasks_gate(scope)?;
        let p: UpdateParams = parse_params(methods::TASKS_UPDATE, params, true)?;
        let (record, live) = self.owned_task(scope, &p.task_id).await?;
        match live {
            Some(live) => live.answer(p.input_responses).await,
            None if !record.status.is_terminal() => {
                self.route_to_runner(&record, |to| crate::cluster::BusMessage::TaskInput {
                    to,
                    task_id: record.task_id.clone(),
                    responses: p.input_responses.clone(),
                })
                .await?;
            }
            None => {}
        }
        Ok(self.reply_raw(scope, "{}", None))
    }

    /// Sends a message to the replica running `record`; when no replica receives it, the
    /// task is ended `failed` (its replica is gone).
    async fn route_to_runner(
        &self,
        record: &TaskRecord,
        message: impl FnOnce(String) -> crate::cluster::BusMessage,
    ) -> Result<(), ErrorObject> {
        let (Some(cluster), Some(replica)) = (&self.inner.cluster, &record.replica) else {
            self.orphan_check(record.clone()).await?;
            return Ok(());
        };
        let received = cluster
            .publish(message(replica.clone()))
            .await
            .map_err(store_failed)?;
        if received == 0 {
            self.orphan_check(record.clone()).await?;
        }
        Ok(())
    }

    /// `tasks/cancel`: the task is recorded `cancelled` before the answer, and its handler
    /// stops. 2026-07-28 acknowledges (a task that already ended too); 2025-11-25 answers
    /// with the task, and -32602 for one that already ended.
    pub(super) async fn tasks_cancel(
        &self,
        scope: &Scope,
        params: Option<&str>,
    ) -> Result<Reply, ErrorObject> {
        self.tasks_gate(scope)?;
        let p: TaskIdParams = parse_params(methods::TASKS_CANCEL, params, true)?;
        let (mut record, live) = self.owned_task(scope, &p.task_id).await?;
        let core = record.flavour == TaskFlavour::Core;
        if record.status.is_terminal() {
            if core {
                return Err(ErrorObject::invalid_params(format!(
                    "Invalid params: task {} is already {}",
                    record.task_id,
                    record.status.as_str()
                )));
            }
            return Ok(self.reply_raw(scope, "{}", None));
        }
        let message = Some("cancelled by the client".to_owned());
        match live {
            Some(live) => {
                live.end(TaskStatus::Cancelled, None, None, message).await;
                live.stop(StopReason::Cancelled);
                record = live.snapshot().await;
            }
            None => {
                record.end(TaskStatus::Cancelled, None, None, message);
                let (stored, ended_here) = self.end_in_store(record).await?;
                record = stored;
                if ended_here {
                    let id = record.task_id.clone();
                    self.route_to_runner(&record, |to| crate::cluster::BusMessage::TaskCancel {
                        to,
                        task_id: id,
                    })
                    .await?;
                }
            }
        }
        if core {
            if record.status != TaskStatus::Cancelled {
                return Err(ErrorObject::invalid_params(format!(
                    "Invalid params: task {} is already {}",
                    record.task_id,
                    record.status.as_str()
                )));
            }
            return Ok(Reply::raw_result(
                &scope.id,
                &Value::Object(record.core_task()).to_string(),
            ));
        }
        Ok(self.reply_raw(scope, "{}", None))
    }

    /// `tasks/result` (2025-11-25): waits until the task ends, carrying its requests to
    /// the client meanwhile, then answers exactly as the call would have.
    pub(super) async fn tasks_result(
        &self,
        scope: &Scope,
        params: Option<&str>,
    ) -> Result<Reply, ErrorObject> {
        let p: TaskIdParams = parse_params(methods::TASKS_RESULT, params, true)?;
        let (mut record, live) = self.owned_task(scope, &p.task_id).await?;
        if let Some(live) = &live {
            live.set_side_channel(scope.caller.sink());
            let mut watch = live.watch();
            loop {
                if watch.borrow_and_update().is_terminal() {
                    break;
                }
                tokio::select! {
                    changed = watch.changed() => if changed.is_err() { break },
                    _ = scope.caller.cancel_token().cancelled() => break,
                }
            }
            live.set_side_channel(None);
            record = live.snapshot().await;
        }
        let poll = Duration::from_millis(record.poll_interval_ms.max(10));
        // Running elsewhere: its replica ends it by its time limit (or, dead, it is ended
        // here). A record still not terminal well after that is one the shared store
        // keeps contradicting (its writes refused, its reads unchanged): the wait ends
        // with an error rather than never.
        let deadline = tokio::time::Instant::now() + self.result_wait_bound(&record);
        while !record.status.is_terminal() {
            if tokio::time::Instant::now() >= deadline {
                return Err(ErrorObject::internal(
                    "the task did not end within its time limit; its record in the shared store does not change",
                ));
            }
            // Running on another replica: read the store as the client would poll it.
            tokio::select! {
                _ = tokio::time::sleep(poll) => {}
                _ = scope.caller.cancel_token().cancelled() => {
                    return Err(ErrorObject::internal("the request was cancelled"));
                }
            }
            record = self.owned_task(scope, &p.task_id).await?.0;
        }
        let related = json!({"taskId": record.task_id});
        if let Some(Value::Object(mut result)) = record.result {
            let meta = result
                .entry("_meta")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(meta) = meta {
                meta.insert(meta_keys::RELATED_TASK.into(), related);
            }
            return Ok(Reply::raw_result(
                &scope.id,
                &Value::Object(result).to_string(),
            ));
        }
        let mut error = record.error.unwrap_or_else(|| match record.status {
            TaskStatus::Cancelled => ErrorObject::internal("the task was cancelled"),
            _ => ErrorObject::internal("the task failed"),
        });
        let mut data = match error.data.take() {
            Some(Value::Object(d)) => d,
            Some(other) => Map::from_iter([("detail".to_owned(), other)]),
            None => Map::new(),
        };
        data.insert("_meta".into(), json!({meta_keys::RELATED_TASK: related}));
        error.data = Some(Value::Object(data));
        Err(error)
    }

    /// How long a `tasks/result` may wait for a task running elsewhere: until its time
    /// limit (counted from its creation) and a margin for the replica to write the end.
    fn result_wait_bound(&self, record: &TaskRecord) -> Duration {
        const MARGIN: Duration = Duration::from_secs(10);
        let limit = self.config().task_time_limit;
        let ends_ms = record
            .created_ms
            .saturating_add(u64::try_from(limit.as_millis()).unwrap_or(u64::MAX));
        let left = Duration::from_millis(ends_ms.saturating_sub(now_ms()));
        left.min(limit) + MARGIN
    }

    /// `tasks/list` (2025-11-25): the caller's tasks, oldest first, a page at a time (a
    /// task whose replica died is ended `failed` first, as `tasks/get` would).
    pub(super) async fn tasks_list(
        &self,
        scope: &Scope,
        params: Option<&str>,
    ) -> Result<Reply, ErrorObject> {
        let p: ListParams = parse_params(methods::TASKS_LIST, params, false)?;
        let owner = self.task_owner(scope);
        let mine: Vec<TaskRecord> = self
            .inner
            .tasks
            .store
            .list(&owner)
            .await
            .map_err(store_failed)?
            .into_iter()
            .filter(|r| r.flavour == TaskFlavour::Core)
            .collect();
        let start = match &p.cursor {
            None => 0,
            Some(c) => {
                mine.iter()
                    .position(|r| &r.task_id == c)
                    .ok_or_else(|| ErrorObject::invalid_params("Invalid params: unknown cursor"))?
                    + 1
            }
        };
        let size = self.config().page_size.max(1);
        let next = (start + size < mine.len())
            .then(|| mine.get(start + size - 1).map(|last| last.task_id.clone()))
            .flatten();
        // A task whose replica died is listed as what it is, failed (as tasks/get would
        // say), never `working` for ever: one liveness look per replica on the page.
        let mut alive = std::collections::HashMap::new();
        let mut page = Vec::new();
        for record in mine.into_iter().skip(start).take(size) {
            let orphan =
                !record.status.is_terminal() && self.inner.tasks.live(&record.task_id).is_none();
            let record = if orphan {
                let runner_alive = match alive.get(&record.replica) {
                    Some(known) => *known,
                    None => {
                        let known = self.runner_alive(&record).await?;
                        alive.insert(record.replica.clone(), known);
                        known
                    }
                };
                if runner_alive {
                    record
                } else {
                    self.end_orphan(record).await?
                }
            } else {
                record
            };
            page.push(Value::Object(record.core_task()));
        }
        let mut body = json!({"tasks": page});
        if let Some(last) = next {
            body["nextCursor"] = json!(last);
        }
        Ok(Reply::raw_result(&scope.id, &body.to_string()))
    }

    /// Answers from another replica for a task running here.
    pub(super) fn task_input_here(&self, id: &str, responses: Meta) {
        if let Some(live) = self.inner.tasks.live(id) {
            tokio::spawn(async move { live.answer(responses).await });
        }
    }

    /// A cancel recorded by another replica for a task running here.
    pub(super) fn task_cancel_here(&self, id: &str) {
        if let Some(live) = self.inner.tasks.live(id) {
            live.stop(StopReason::Cancelled);
        }
    }

    /// Stops every task running here whose record says it was cancelled: the
    /// `tasks/cancel` that recorded it may have been published while the bus was away.
    pub(super) async fn stop_tasks_cancelled_elsewhere(&self) {
        for id in self.inner.tasks.live_ids() {
            match self.inner.tasks.store.get(&id).await {
                Ok(Some(record)) if record.status == TaskStatus::Cancelled => {
                    self.task_cancel_here(&id);
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(target: "mcp::tasks", error = %e, "could not check a running task against the store after the bus came back");
                }
            }
        }
    }
}

/// How a run that became a task's handle, or could not, ends the call.
pub(super) enum TaskStarted {
    /// The task exists: answer with its handle.
    Created(Box<TaskRecord>),
    /// No task could be made (limits, the store): answer with this error.
    Refused(ErrorObject),
}

fn done(r: Result<CallToolResult, Failure>) -> super::dispatch::Outcome<CallToolResult> {
    super::dispatch::Outcome::Done(r.unwrap_or_else(|failure| {
        CallToolResult::error(failure.to_error("tool").message.into_owned())
    }))
}

/// A frame with `params._meta["io.modelcontextprotocol/related-task"]` added.
fn tag_related_task(frame: &str, task_id: &str) -> String {
    let Ok(Value::Object(mut message)) = serde_json::from_str::<Value>(frame) else {
        return frame.to_owned();
    };
    let params = message
        .entry("params")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(params) = params {
        let meta = params
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(meta) = meta {
            meta.insert(meta_keys::RELATED_TASK.into(), json!({"taskId": task_id}));
        }
    }
    Value::Object(message).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_tagged_with_their_task() {
        let tagged = tag_related_task(
            r#"{"jsonrpc":"2.0","id":"e1","method":"elicitation/create","params":{"message":"ok?"}}"#,
            "t1",
        );
        let v: Value = serde_json::from_str(&tagged).unwrap();
        assert_eq!(
            v["params"]["_meta"][meta_keys::RELATED_TASK]["taskId"],
            "t1"
        );
        assert_eq!(v["params"]["message"], "ok?");
        assert_eq!(tag_related_task("not json", "t1"), "not json");
    }
}
