//! The stateless revision (2026-07-28) in the dispatcher: which era a request belongs to,
//! its per-request metadata, the methods that exist only here (`server/discover`,
//! `subscriptions/listen`), how results are decorated (`resultType`, `_meta` serverInfo,
//! cache hints), and input-required results with sealed state.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;
use serde_json::{Value, json};

use super::dispatch::{Scope, parse_params};
use super::{Reply, Server};
use crate::elicit::mrtr::Mrtr;
use crate::elicit::state::{ApprovalState, Binding};
use crate::protocol::inbound::STATELESS_VERSIONS;
use crate::protocol::jsonrpc::encode_notification;
use crate::protocol::{
    CacheScope, CallToolResult, DiscoverResult, ErrorObject, GetPromptResult, InputRequiredResult,
    ListenParams, Meta, ReadResourceResult, RequestId, ServerCapabilities, SubscriptionFilter,
    codes, meta_keys, methods,
};
use crate::registry::{ListKind, Page};
use crate::server::{Outbound, Transport};

/// A cache hint for a cacheable result.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CacheHint {
    pub(crate) ttl_ms: u64,
    pub(crate) scope: CacheScope,
}

/// Results that carry their own `_meta`, into which `serverInfo` is merged.
pub(crate) trait HasMeta: Serialize {
    fn meta_mut(&mut self) -> &mut Option<Meta>;

    /// Writes the result as JSON, exactly as `Serialize` does.
    fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        serde_json::to_writer(out, self)
    }
}

impl HasMeta for CallToolResult {
    fn meta_mut(&mut self) -> &mut Option<Meta> {
        &mut self.meta
    }

    fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        CallToolResult::write_json(self, out)
    }
}

impl HasMeta for GetPromptResult {
    fn meta_mut(&mut self) -> &mut Option<Meta> {
        &mut self.meta
    }
}

impl HasMeta for ReadResourceResult {
    fn meta_mut(&mut self) -> &mut Option<Meta> {
        &mut self.meta
    }
}

/// Splices the 2026-07-28 members into a serialized result object.
pub(super) fn decorate(
    json: &str,
    result_type: Option<&str>,
    server_info: Option<&str>,
    cache: Option<CacheHint>,
) -> String {
    let mut out = String::with_capacity(json.len() + 160);
    decorate_into(&mut out, json, result_type, server_info, cache);
    out
}

/// [`decorate`], appending to `out`.
fn decorate_into(
    out: &mut String,
    json: &str,
    result_type: Option<&str>,
    server_info: Option<&str>,
    cache: Option<CacheHint>,
) {
    let inner = json
        .trim()
        .strip_prefix('{')
        .and_then(|s| s.strip_suffix('}'))
        .unwrap_or("")
        .trim();
    let members = (!inner.is_empty()).then_some(|out: &mut String| out.push_str(inner));
    decorate_members(out, members, result_type, server_info, cache);
}

/// Writes a 2026-07-28 result object to `out`: its own members first (`resultType`,
/// `_meta.serverInfo`, the cache hint), then the ones `members` appends (a result's
/// members, without braces), so a result can be written in place instead of spliced.
fn decorate_members(
    out: &mut String,
    members: Option<impl FnOnce(&mut String)>,
    result_type: Option<&str>,
    server_info: Option<&str>,
    cache: Option<CacheHint>,
) {
    out.push('{');
    let mut first = true;
    let mut sep = |out: &mut String| {
        if !first {
            out.push(',');
        }
        first = false;
    };
    if let Some(t) = result_type {
        sep(out);
        out.push_str("\"resultType\":\"");
        out.push_str(t);
        out.push('"');
    }
    if let Some(info) = server_info {
        sep(out);
        out.push_str("\"_meta\":{\"");
        out.push_str(meta_keys::SERVER_INFO);
        out.push_str("\":");
        out.push_str(info);
        out.push('}');
    }
    if let Some(c) = cache {
        use std::fmt::Write as _;
        sep(out);
        let _ = write!(
            out,
            "\"ttlMs\":{},\"cacheScope\":\"{}\"",
            c.ttl_ms,
            c.scope.as_str()
        );
    }
    if let Some(write) = members {
        sep(out);
        write(out);
    }
    out.push('}');
}

/// One open `subscriptions/listen` stream.
pub(crate) struct Listener {
    key: u64,
    request_id: RequestId,
    filter: SubscriptionFilter,
    sink: Outbound,
}

impl Listener {
    /// The resources this stream asked to hear updates of.
    pub(crate) fn resource_subscriptions(&self) -> &[String] {
        self.filter.resource_subscriptions.as_deref().unwrap_or(&[])
    }

    /// `notifications/tasks` for this stream: the task as a full DetailedTask.
    fn task_frame(&self, record: &crate::tasks::TaskRecord) -> String {
        let mut params = record.detailed_task();
        params.insert(
            "_meta".into(),
            json!({meta_keys::SUBSCRIPTION_ID: self.request_id}),
        );
        encode_notification(methods::TASKS_NOTIFICATION, Some(&params))
    }
}

/// Removes its listener when the listen request ends, however it ends.
struct ListenerGuard {
    server: Server,
    key: u64,
}

impl Drop for ListenerGuard {
    fn drop(&mut self) {
        self.server
            .inner
            .listeners
            .lock()
            .retain(|l| l.key != self.key);
    }
}

static LISTENER_KEYS: AtomicU64 = AtomicU64::new(1);

impl Server {
    /// A success reply shaped for the request's era.
    pub(crate) fn reply<T: Serialize>(
        &self,
        scope: &Scope,
        result: &T,
        cache: Option<CacheHint>,
    ) -> Reply {
        match scope.caller.stateless {
            None => Reply::result(&scope.id, result),
            Some(_) => {
                let json = serde_json::to_string(result).unwrap_or_else(|_| "{}".into());
                self.reply_raw(scope, &json, cache)
            }
        }
    }

    /// A success reply for one page of a list, its entries' JSON copied once, straight
    /// into the frame that goes out, shaped for the request's era.
    pub(crate) fn reply_page(
        &self,
        scope: &Scope,
        key: &str,
        page: &Page<'_>,
        cache: Option<CacheHint>,
    ) -> Reply {
        let len = page.members_len(key);
        let members = |out: &mut String| page.write_members(key, out);
        match scope.caller.stateless {
            None => Reply::result_with(&scope.id, len + 2, |frame| {
                frame.push('{');
                members(frame);
                frame.push('}');
            }),
            Some(_) => Reply::result_with(&scope.id, len + 160, |frame| {
                decorate_members(
                    frame,
                    Some(members),
                    Some("complete"),
                    Some(&self.inner.server_info_json),
                    cache,
                )
            }),
        }
    }

    /// A success reply from already serialized JSON, shaped for the request's era.
    pub(crate) fn reply_raw(&self, scope: &Scope, json: &str, cache: Option<CacheHint>) -> Reply {
        match scope.caller.stateless {
            None => Reply::raw_result(&scope.id, json),
            Some(_) => Reply::result_with(&scope.id, json.len() + 160, |frame| {
                decorate_into(
                    frame,
                    json,
                    Some("complete"),
                    Some(&self.inner.server_info_json),
                    cache,
                )
            }),
        }
    }

    /// A success reply for a result with its own `_meta`, shaped for the request's era.
    pub(crate) fn reply_with_meta<T: Serialize + HasMeta>(
        &self,
        scope: &Scope,
        mut result: T,
        cache: Option<CacheHint>,
    ) -> Reply {
        if scope.caller.stateless.is_none() {
            return Reply::result_written(&scope.id, |out| result.write_json(out));
        }
        if result.meta_mut().is_none() {
            // No `_meta` of its own: the server's identity is spliced in as the whole `_meta`.
            let mut json = Vec::with_capacity(128);
            let json = match result.write_json(&mut json) {
                Ok(()) => String::from_utf8(json).unwrap_or_else(|_| "{}".into()),
                Err(_) => "{}".into(),
            };
            return self.reply_raw(scope, &json, cache);
        }
        let info = serde_json::to_value(&self.inner.info).unwrap_or_default();
        result
            .meta_mut()
            .get_or_insert_with(Meta::new)
            .insert(meta_keys::SERVER_INFO.to_owned(), info);
        let json = serde_json::to_string(&result).unwrap_or_else(|_| "{}".into());
        Reply::raw_result(&scope.id, &decorate(&json, Some("complete"), None, cache))
    }

    /// The cache hint for a list: private when what a caller sees may depend on who asks.
    pub(crate) fn list_cache(&self, scope: &Scope, kind: ListKind) -> Option<CacheHint> {
        scope.caller.stateless.as_ref()?;
        let identity_dependent = self.inner.read_authorizer.is_some()
            || scope.caller.auth.principal().is_some()
            || (kind == ListKind::Tools && self.inner.authorizer.is_some());
        Some(CacheHint {
            ttl_ms: self.config().list_ttl.as_millis() as u64,
            scope: if identity_dependent {
                CacheScope::Private
            } else {
                CacheScope::Public
            },
        })
    }

    /// The cache hint for a resource read.
    pub(crate) fn read_cache(
        &self,
        scope: &Scope,
        ttl: Option<std::time::Duration>,
        retried: bool,
    ) -> Option<CacheHint> {
        scope.caller.stateless.as_ref()?;
        let private =
            self.inner.read_authorizer.is_some() || scope.caller.auth.principal().is_some();
        Some(CacheHint {
            // A result reached through input-required rounds is not cacheable.
            ttl_ms: if retried {
                0
            } else {
                ttl.unwrap_or(self.config().read_ttl).as_millis() as u64
            },
            scope: if private || retried {
                CacheScope::Private
            } else {
                CacheScope::Public
            },
        })
    }

    /// The capabilities advertised on the 2026-07-28 era.
    fn stateless_capabilities(&self) -> ServerCapabilities {
        let mut caps = self.capabilities().clone();
        // Tasks are an extension on this revision; the core slot is never sent with it.
        if caps.tasks.take().is_some() {
            caps.extensions
                .get_or_insert_with(Meta::new)
                .insert(meta_keys::TASKS_EXTENSION.to_owned(), json!({}));
        }
        caps
    }

    pub(crate) fn discover(&self, scope: &Scope) -> Result<Reply, ErrorObject> {
        let result = DiscoverResult {
            supported_versions: STATELESS_VERSIONS
                .iter()
                .map(|v| v.as_str().to_owned())
                .collect(),
            capabilities: self.stateless_capabilities(),
            instructions: self.inner.instructions.clone(),
        };
        let cache = CacheHint {
            ttl_ms: self.config().discover_ttl.as_millis() as u64,
            scope: CacheScope::Public,
        };
        Ok(self.reply(scope, &result, Some(cache)))
    }

    /// Opens the MRTR state of a request: verifies a presented `requestState` against what
    /// the request is (method, target, arguments, principal) and combines its answers with
    /// the request's `inputResponses`. `None` on the handshake era.
    pub(crate) async fn open_mrtr(
        &self,
        scope: &Scope,
        binding: &Binding<'_>,
        request_state: Option<&str>,
        input_responses: Option<Meta>,
    ) -> Result<Option<Arc<Mrtr>>, ErrorObject> {
        if scope.caller.stateless.is_none() {
            return Ok(None);
        }
        let opened = match request_state {
            Some(state) => Some(self.inner.sealer.open(state, binding).await.map_err(|e| {
                tracing::info!(target: "mcp::elicit", method = %binding.method, target = %binding.target, reason = e.describe(), "requestState refused");
                match e {
                    crate::elicit::state::StateError::Unavailable => {
                        ErrorObject::internal(format!("Internal error: {}", e.describe()))
                    }
                    _ => ErrorObject::invalid_params(format!("Invalid params: {}", e.describe())),
                }
            })?),
            None => None,
        };
        Ok(Some(Arc::new(Mrtr::new(opened, input_responses))))
    }

    /// The input-required result for a suspended request: every ask it recorded and a
    /// sealed state carrying the answers so far.
    pub(crate) fn input_required(
        &self,
        scope: &Scope,
        mrtr: &Mrtr,
        binding: &Binding<'_>,
    ) -> Reply {
        let asked = mrtr.take_asked();
        let state = self.inner.sealer.seal(
            binding,
            mrtr.carried_answers(),
            mrtr.app_state_out(),
            mrtr.approval(),
        );
        let result = InputRequiredResult {
            result_type: "input_required".to_owned(),
            input_requests: (!asked.is_empty()).then_some(asked),
            request_state: Some(state),
        };
        let json = serde_json::to_string(&result).unwrap_or_else(|_| "{}".into());
        Reply::raw_result(
            &scope.id,
            &decorate(&json, None, Some(&self.inner.server_info_json), None),
        )
    }

    /// The approval question of the authorizer's Ask, as an input-required result.
    pub(crate) fn ask_approval_stateless(
        &self,
        scope: &Scope,
        binding: &Binding<'_>,
        tool: &str,
        prompt: &str,
    ) -> Reply {
        let asked = crate::protocol::InputRequest {
            method: methods::ELICITATION_CREATE.to_owned(),
            params: crate::elicit::approval_request(tool, prompt),
        };
        let state = self
            .inner
            .sealer
            .seal(binding, Meta::new(), None, ApprovalState::Asked);
        let result = InputRequiredResult {
            result_type: "input_required".to_owned(),
            input_requests: Some([(crate::elicit::APPROVAL_KEY.to_owned(), asked)].into()),
            request_state: Some(state),
        };
        let json = serde_json::to_string(&result).unwrap_or_else(|_| "{}".into());
        Reply::raw_result(
            &scope.id,
            &decorate(&json, None, Some(&self.inner.server_info_json), None),
        )
    }

    /// -32021 naming the capabilities the request needed.
    pub(crate) fn missing_capability(required: Value) -> ErrorObject {
        ErrorObject::new(
            codes::MISSING_CLIENT_CAPABILITY,
            "Missing required client capability",
        )
        .with_data(json!({"requiredCapabilities": required}))
    }

    /// `subscriptions/listen`: acknowledges, then streams the requested change
    /// notifications until the client cancels or the server shuts down.
    pub(crate) async fn listen(
        &self,
        scope: &Scope,
        params: Option<&str>,
    ) -> Result<Reply, ErrorObject> {
        let p: ListenParams = parse_params(methods::SUBSCRIPTIONS_LISTEN, params, true)?;
        let Some(sink) = scope.caller.sink() else {
            return Err(ErrorObject::internal(
                "subscriptions/listen needs a transport that can stream notifications",
            ));
        };
        if self.inner.listeners.lock().len() >= self.config().max_listeners {
            return Err(ErrorObject::internal(format!(
                "too many open subscriptions/listen streams (the limit is {})",
                self.config().max_listeners
            )));
        }
        let wanted_tasks = p.notifications.task_ids.clone().unwrap_or_default();
        let mut honoured = self.honoured(p.notifications);
        if !wanted_tasks.is_empty() {
            self.tasks_gate(scope)?;
            let mine = self.own_task_ids(scope, &wanted_tasks).await;
            honoured.task_ids = (!mine.is_empty()).then_some(mine);
        }
        let subscription = serde_json::to_value(&scope.id).unwrap_or_default();
        let ack = encode_notification(
            methods::SUBSCRIPTIONS_ACKNOWLEDGED,
            Some(&json!({
                "notifications": honoured,
                "_meta": {meta_keys::SUBSCRIPTION_ID: subscription},
            })),
        );
        if !sink.send(ack).await {
            return Err(ErrorObject::internal("the stream closed"));
        }
        let key = LISTENER_KEYS.fetch_add(1, Ordering::Relaxed);
        let tasks = honoured.task_ids.clone().unwrap_or_default();
        let listener = Arc::new(Listener {
            key,
            request_id: scope.id.clone(),
            filter: honoured,
            sink: sink.clone(),
        });
        self.inner.listeners.lock().push(Arc::clone(&listener));
        // Each task named is told as it is now, so that nothing between its creation and
        // this stream is missed; its changes follow.
        for id in &tasks {
            if let Some(record) = self.task_snapshot(scope, id).await {
                sink.send(listener.task_frame(&record)).await;
            }
        }
        let _guard = ListenerGuard {
            server: self.clone(),
            key,
        };
        tokio::select! {
            _ = self.inner.shutdown.cancelled() => {}
            _ = scope.caller.conn.input_closed.token().cancelled() => {
                return Err(ErrorObject::internal("the client's input closed"));
            }
        }
        if scope.caller.conn.transport == Transport::Stdio {
            // On stdio the end of a listen is also announced as a cancellation of it.
            let cancelled = encode_notification(
                methods::CANCELLED,
                Some(&json!({"requestId": scope.id, "reason": "server shutting down"})),
            );
            sink.send(cancelled).await;
        }
        let result = json!({
            "_meta": {
                meta_keys::SUBSCRIPTION_ID: subscription,
                meta_keys::SERVER_INFO: self.inner.info,
            }
        });
        Ok(Reply::raw_result(
            &scope.id,
            &decorate(&result.to_string(), Some("complete"), None, None),
        ))
    }

    /// The part of a filter this server can honour.
    fn honoured(&self, wanted: SubscriptionFilter) -> SubscriptionFilter {
        let caps = self.capabilities();
        let yes =
            |asked: Option<bool>, offered: bool| (asked == Some(true) && offered).then_some(true);
        let resources = caps.resources.is_some();
        SubscriptionFilter {
            tools_list_changed: yes(wanted.tools_list_changed, caps.tools.is_some()),
            prompts_list_changed: yes(wanted.prompts_list_changed, caps.prompts.is_some()),
            resources_list_changed: yes(wanted.resources_list_changed, resources),
            resource_subscriptions: wanted
                .resource_subscriptions
                .filter(|uris| resources && !uris.is_empty()),
            // Decided by `listen`, which checks who owns each one.
            task_ids: None,
        }
    }

    /// Routes a list_changed to every listen stream that asked for it.
    pub(crate) fn notify_listeners_list_changed(&self, kind: ListKind) {
        let (method, wants): (&str, fn(&SubscriptionFilter) -> bool) = match kind {
            ListKind::Tools => (methods::TOOLS_LIST_CHANGED, |f| {
                f.tools_list_changed == Some(true)
            }),
            ListKind::Prompts => (methods::PROMPTS_LIST_CHANGED, |f| {
                f.prompts_list_changed == Some(true)
            }),
            ListKind::Resources => (methods::RESOURCES_LIST_CHANGED, |f| {
                f.resources_list_changed == Some(true)
            }),
        };
        let listeners: Vec<Arc<Listener>> = self.inner.listeners.lock().clone();
        for l in listeners.iter().filter(|l| wants(&l.filter)) {
            let frame = encode_notification(
                method,
                Some(&json!({"_meta": {meta_keys::SUBSCRIPTION_ID: l.request_id}})),
            );
            l.sink.try_send(frame);
        }
    }

    /// Routes a task's change to every listen stream that asked for it.
    pub(crate) fn notify_listeners_task(&self, record: &crate::tasks::TaskRecord) {
        let listeners: Vec<Arc<Listener>> = self.inner.listeners.lock().clone();
        for l in &listeners {
            let wanted = l
                .filter
                .task_ids
                .as_ref()
                .is_some_and(|ids| ids.contains(&record.task_id));
            if wanted {
                l.sink.try_send(l.task_frame(record));
            }
        }
    }

    /// Routes a resources/updated to every listen stream subscribed to `uri`.
    pub(crate) fn notify_listeners_updated(&self, uri: &str) {
        let listeners: Vec<Arc<Listener>> = self.inner.listeners.lock().clone();
        for l in &listeners {
            let subscribed = l
                .filter
                .resource_subscriptions
                .as_ref()
                .is_some_and(|uris| uris.iter().any(|u| u == uri));
            if subscribed {
                let frame = encode_notification(
                    methods::RESOURCES_UPDATED,
                    Some(&json!({"uri": uri, "_meta": {meta_keys::SUBSCRIPTION_ID: l.request_id}})),
                );
                l.sink.try_send(frame);
            }
        }
    }
}

/// The canonical digest of a request's arguments, for binding sealed state to them.
pub(crate) fn args_digest(args: &Value) -> String {
    crate::auth::audit::digest_json(args)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decorates_results() {
        let cache = Some(CacheHint {
            ttl_ms: 5,
            scope: CacheScope::Public,
        });
        assert_eq!(
            decorate("{}", Some("complete"), Some("{\"name\":\"s\"}"), cache),
            r#"{"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s"}},"ttlMs":5,"cacheScope":"public"}"#
        );
        assert_eq!(
            decorate(r#"{"tools":[]}"#, Some("complete"), None, None),
            r#"{"resultType":"complete","tools":[]}"#
        );
        assert_eq!(decorate(r#"{"a":1}"#, None, None, None), r#"{"a":1}"#);
    }
}
