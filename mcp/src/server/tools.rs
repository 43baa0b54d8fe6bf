//! `tools/list` and `tools/call`: the tool seam, the Ask flow (an elicitation on the
//! handshake era, an input-required result with sealed state on 2026-07-28) and contained
//! execution.

use std::borrow::Cow;
use std::sync::Arc;

use serde::Deserialize;

use serde_json::Value;
use serde_json::value::RawValue;

use super::compat;
use super::dispatch::{Failure, Outcome, Scope, parse_params, run_handler};
use super::tasks::{TaskPlan, TaskStarted};
use super::{Reply, Server};
use crate::auth::{
    ArgsSource, AuditOutcome, AuthRequest, Decision, Seam, approval_unavailable, decide_all_now,
    decide_later, reasons, tool_denied, url_step_refused,
};
use crate::context::{Caller, NO_CHANNEL};
use crate::elicit::mrtr::Mrtr;
use crate::elicit::state::{ApprovalState, ArgsDigest, Binding};
use crate::elicit::{APPROVAL_KEY, Approval, ask_approval, judge};
use crate::protocol::inbound::{CallMembers, Member};
use crate::protocol::methods::Method;
use crate::protocol::{
    CallToolResult, ErrorObject, Meta, PaginatedParams, Params, ProgressToken, methods,
};
use crate::registry::{ListKind, ToolArgs, ToolDef, ToolFacts, page_from, page_start};
use crate::server::Transport;

/// How many tools a listing behind an authorizer decides at once (concurrently): a page
/// cut short by its bytes wastes at most this many decisions past its last entry.
const DECIDED_AT_ONCE: usize = 64;

/// `tools/call` params read in place: the name and the arguments borrow from the request
/// (the public [`CallToolRequestParams`](crate::protocol::CallToolRequestParams) owns them).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CallParams<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(default, borrow)]
    arguments: Option<&'a RawValue>,
    #[serde(rename = "_meta", default, borrow)]
    meta: Option<CallMeta<'a>>,
    #[serde(default)]
    input_responses: Option<Meta>,
    #[serde(default)]
    request_state: Option<String>,
}

/// What a call reads of its `_meta` here: the progress token, left raw. The rest (on
/// 2026-07-28, the client's capabilities and info) is read where it is used, not parsed
/// into a map a second time.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CallMeta<'a> {
    #[serde(default, borrow)]
    progress_token: Option<&'a RawValue>,
}

/// A call's params as the dispatcher uses them.
struct Call<'a> {
    name: Cow<'a, str>,
    /// The arguments' JSON text.
    arguments: Option<&'a str>,
    /// The progress token's JSON text.
    progress_token: Option<&'a str>,
    input_responses: Option<Meta>,
    request_state: Option<String>,
}

impl<'a> Call<'a> {
    /// The call's params as the head read with the envelope found them (on 2026-07-28,
    /// as the edge's metadata keeps them: `_meta` and all, so a second pass over `_meta`
    /// was ~6% of such a call); read from `params` otherwise: when no head was read with
    /// them, for a call that answers the server's questions, and when the name is not a
    /// string (the reader's error names it).
    fn read(
        scope: &'a Scope,
        params: Option<&'a str>,
        shared: Option<&'a Params>,
    ) -> Result<Call<'a>, ErrorObject> {
        let found = match scope.caller.stateless.as_deref() {
            Some(meta) => meta.call_members(),
            None => shared.and_then(Params::call_members),
        };
        if let Some(call) = found.and_then(Call::found) {
            return Ok(call);
        }
        let p: CallParams<'_> = parse_params(methods::TOOLS_CALL, params, true)?;
        Ok(Call {
            name: p.name,
            arguments: p.arguments.map(RawValue::get),
            progress_token: p.meta.and_then(|m| m.progress_token).map(RawValue::get),
            input_responses: p.input_responses,
            request_state: p.request_state,
        })
    }

    /// A call from the members the edge found, when the name is a string.
    fn found(members: CallMembers<'a>) -> Option<Call<'a>> {
        let Member::Text(name) = members.name else {
            return None;
        };
        Some(Call {
            name,
            arguments: members.arguments,
            progress_token: members.progress_token,
            input_responses: None,
            request_state: None,
        })
    }
}

/// The progress token `text` holds, when it is one (a token of another type is ignored).
fn progress_token(text: Option<&str>) -> Option<ProgressToken> {
    serde_json::from_str(text?).ok()
}

impl Server {
    pub(super) async fn list_tools(
        &self,
        scope: &Scope,
        params: Option<&str>,
    ) -> Result<Reply, ErrorObject> {
        let p: PaginatedParams = parse_params(methods::TOOLS_LIST, params, false)?;
        let snapshot = self.registry().snapshot();
        let entries = snapshot.tool_entries();
        let limit = self.config().page_limit();
        let start = page_start(entries, |t| t.name(), p.cursor.as_deref())
            .map_err(|_| ErrorObject::invalid_params("Invalid params: unknown cursor"))?;
        let page = if self.inner.authorizer.is_none() && !scopes_enforced(&scope.caller) {
            page_from(entries, |t| t.name(), start, limit, |_, _| true)
        } else {
            // Only the tools this page can show are decided (from the cursor until the first
            // visible one that does not fit), so a whole listing costs about one decision per
            // tool, not one per tool per page. Decided a batch at a time, concurrently: one
            // slow policy lookup must not add up per tool.
            let facts = snapshot.tool_facts();
            let mut decided: Vec<bool> = Vec::new();
            let (mut count, mut bytes) = (0, 0);
            'decide: while start + decided.len() < entries.len() {
                let from = start + decided.len();
                let to = (from + limit.room_after(count).min(DECIDED_AT_ONCE)).min(entries.len());
                let batch: Vec<(&ToolDef, &ToolFacts)> = entries[from..to]
                    .iter()
                    .zip(&facts[from..to])
                    .map(|(e, f)| (&e.def, f))
                    .collect();
                let verdicts = self.tools_visible(&scope.caller, &batch).await;
                for (fact, shown) in facts[from..to].iter().zip(verdicts) {
                    decided.push(shown);
                    if shown {
                        if !limit.admits(count, bytes, fact.cost) {
                            break 'decide;
                        }
                        count += 1;
                        bytes += fact.cost;
                    }
                }
            }
            // The page ends within what was decided: nothing past it is scanned.
            page_from(
                &entries[..start + decided.len()],
                |t| t.name(),
                start,
                limit,
                |i, _| decided[i - start],
            )
        };
        let cache = self.list_cache(scope, ListKind::Tools);
        Ok(self.reply_page(scope, "tools", &page, cache))
    }

    /// Whether `caller` may see (and so call without being refused) each of `tools`: the
    /// tool seam allows it, or asks and this caller can be asked; and the caller holds its
    /// scopes. The decisions an authorizer gives at once are taken in place, without a
    /// future per tool; only those it gives later are awaited, together (one slow policy
    /// lookup must not add up per tool).
    pub(crate) async fn tools_visible(
        &self,
        caller: &Caller,
        tools: &[(&ToolDef, &ToolFacts)],
    ) -> Vec<bool> {
        let Some(authorizer) = &self.inner.authorizer else {
            return tools.iter().map(|&t| may_see(caller, t)).collect();
        };
        // What the authorizer says it allows anyway is shown without asking it; requests
        // are built only for the tools it is asked about (with their place in `tools`).
        let settled = authorizer.allows_every_insensitive_tool();
        let mut visible = vec![false; tools.len()];
        let mut requests: Vec<(usize, AuthRequest<'_>)> = Vec::new();
        for (at, (&(tool, facts), shown)) in tools.iter().zip(&mut visible).enumerate() {
            if !may_see(caller, (tool, facts)) {
                continue;
            }
            if settled && !facts.sensitive {
                *shown = true;
                continue;
            }
            let request = AuthRequest::new(
                Seam::Tool,
                &facts.name,
                Some(tool),
                // Listing asks with no arguments: `{}` as text costs nothing to build or
                // to drop.
                ArgsSource::Raw("{}"),
                &caller.auth,
            )
            .with_sensitivity(facts.sensitive);
            requests.push((at, request));
        }
        let shows = |decision: &Decision| match decision {
            Decision::Allow => true,
            Decision::Ask(_) => caller.can_elicit(),
            Decision::Url(_) => caller.cannot_take_url().is_none(),
            Decision::Deny(_) => false,
        };
        let mut waiting = Vec::new();
        let timeout = self.config().authorizer_timeout;
        let each = requests.iter().map(|(at, r)| (*at, r));
        decide_all_now(&**authorizer, each, |at, request, outcome| match outcome {
            Ok(decision) => visible[at] = shows(&decision),
            Err(later) => waiting.push((at, decide_later(later, request, timeout))),
        });
        if !waiting.is_empty() {
            let (at, later): (Vec<usize>, Vec<_>) = waiting.into_iter().unzip();
            for (at, decision) in at.into_iter().zip(futures::future::join_all(later).await) {
                visible[at] = shows(&decision);
            }
        }
        visible
    }

    pub(super) async fn call_tool(
        &self,
        scope: &Scope,
        params: Option<&str>,
        shared: Option<&Params>,
    ) -> Result<Reply, ErrorObject> {
        let p = Call::read(scope, params, shared)?;
        let snapshot = self.registry().snapshot();
        let tool = snapshot.tool(&p.name);
        let raw_args = p.arguments;
        // Behind an authorizer, a typed tool's arguments are decoded before it decides: it
        // may read them, nobody is asked about a call that cannot run, and the handler gets
        // the decoded value. Without one, the handler decodes them as it runs.
        let (decoded, argument_error) = match (&self.inner.authorizer, tool) {
            (Some(_), Some(t)) if has_scopes(&scope.caller, t) => {
                match t.decode_arguments(raw_args) {
                    Some(Ok(decoded)) => (Some(decoded), None),
                    Some(Err(e)) => (None, Some(e)),
                    None => (None, None),
                }
            }
            _ => (None, None),
        };
        let mut request = AuthRequest::new(
            Seam::Tool,
            &p.name,
            tool,
            ArgsSource::Raw(raw_args.unwrap_or("{}")),
            &scope.caller.auth,
        )
        .with_decoded(decoded)
        .with_channel(match scope.caller.stateless {
            None => Some(&*scope.caller),
            Some(_) => None,
        });
        // On 2026-07-28 every round of this call is bound to this tool, these arguments
        // and this principal.
        let digest_of_args = || request.argument_digest();
        let binding = call_binding(scope, &p.name, &digest_of_args);
        // Whether it may be a task is settled before anyone is asked about it.
        let plan = match tool.filter(|t| has_scopes(&scope.caller, t)) {
            Some(t) if argument_error.is_none() && self.capabilities().tasks.is_some() => {
                self.task_plan(scope, t, params)?
            }
            _ => TaskPlan::Sync,
        };
        let mrtr = match &binding {
            Some(b) => {
                self.open_mrtr(scope, b, p.request_state.as_deref(), p.input_responses)
                    .await?
            }
            None => None,
        };

        let decision = if let Some(t) = tool.filter(|t| !has_scopes(&scope.caller, t)) {
            Some(Decision::deny(format!(
                "{}: this tool requires the scope(s) {}",
                reasons::INSUFFICIENT_SCOPE,
                t.required_scopes().join(" ")
            )))
        } else {
            match &self.inner.authorizer {
                None if tool.is_some_and(ToolDef::is_sensitive) => {
                    Some(Decision::deny(reasons::SENSITIVE_TOOL_UNGUARDED))
                }
                None => None,
                Some(a) => Some(self.decide(&**a, &request).await),
            }
        };

        let decided = decision.as_ref().unwrap_or(&Decision::Allow);
        let deny = |decision_kind: &str, detail: &str, outcome: AuditOutcome| {
            self.audit(&request, decided, outcome);
            Ok(self.tool_reply(scope, tool_denied(&p.name, decision_kind, detail)))
        };
        let unaskable = |prompt: &str, why: &str| {
            let outcome =
                AuditOutcome::NotApproved(format!("{}: {why}", reasons::APPROVAL_UNAVAILABLE));
            self.audit(&request, decided, outcome);
            Ok(self.tool_reply(scope, approval_unavailable(&p.name, prompt, why)))
        };
        let approved = match &decision {
            // A deny wins over everything else: nothing about a forbidden tool leaks.
            Some(Decision::Deny(reason)) => return deny("deny", reason, AuditOutcome::Denied),
            // Nobody is asked about a call that cannot run.
            _ if argument_error.is_some() || tool.is_none() => false,
            None | Some(Decision::Allow) => false,
            Some(Decision::Url(step)) => {
                let at = UrlStepAt {
                    request: &request,
                    decision: decided,
                    step,
                    tool: &p.name,
                };
                return self.url_step(scope, at, mrtr.as_ref(), binding.as_ref());
            }
            Some(Decision::Ask(prompt)) => match (&mrtr, &binding) {
                (Some(m), Some(b)) => match self.approval_stateless(scope, m, b, &p.name, prompt) {
                    StatelessApproval::Approved => true,
                    StatelessApproval::Question(question) => {
                        self.audit(&request, decided, AuditOutcome::AwaitingApproval);
                        return Ok(question);
                    }
                    StatelessApproval::Refused(detail) => {
                        return deny("ask", &detail, AuditOutcome::NotApproved(detail.clone()));
                    }
                    StatelessApproval::Unaskable(why) => return unaskable(prompt, why),
                },
                _ => {
                    let why = scope.caller.cannot_elicit();
                    let outcome = match (scope.caller.sink(), why) {
                        (Some(sink), None) => {
                            ask_approval(
                                &scope.caller.conn,
                                &sink,
                                &p.name,
                                prompt,
                                self.config().elicitation_timeout,
                            )
                            .await
                        }
                        // A client that cannot be asked gets the deny at once.
                        _ => return unaskable(prompt, why.unwrap_or(NO_CHANNEL)),
                    };
                    match outcome {
                        Approval::Approved => true,
                        Approval::NotApproved(detail) => {
                            return deny("ask", &detail, AuditOutcome::NotApproved(detail.clone()));
                        }
                    }
                }
            },
        };
        if let Some(e) = argument_error {
            if let Some(d) = &decision {
                self.audit(&request, d, AuditOutcome::ToolError);
            }
            return Ok(self.tool_reply(scope, CallToolResult::error(e.to_string())));
        }

        let Some(tool) = tool else {
            return Err(ErrorObject::invalid_params(format!(
                "Tool not found: {}",
                p.name
            )));
        };
        let token = progress_token(p.progress_token);
        let args = tool.call_args(
            p.arguments.map(|a| Params::part_of(shared, a)),
            request.take_decoded(),
        );
        // The same binding, on the request the decoded arguments have left.
        let digest_of_args = || request.argument_digest();
        let binding = call_binding(scope, &p.name, &digest_of_args);
        // Allowed (or approved): now the layers, around the tool.
        let call = Approved {
            request: &request,
            decision: decision.as_ref(),
            approved,
            mrtr: mrtr.as_ref(),
            binding: binding.as_ref(),
            plan,
        };
        if self.inner.layers.is_empty() && tool.layers.is_empty() {
            return self.run_tool(scope, tool, args, token, call).await;
        }
        // Boxed, with the tool's future inside: a call's future is as large as its
        // largest path, and every call without layers would otherwise carry this one's
        // state (the tool's future pinned beside the layers' chain) in its own.
        Box::pin(async move {
            let run = std::pin::pin!(async move {
                crate::layers::Answer::new(self.run_tool(scope, tool, args, token, call).await)
            });
            self.layered(scope, Method::ToolsCall, params, &tool.layers, run)
                .await
        })
        .await
    }

    /// Runs an allowed call and audits how it ended.
    async fn run_tool(
        &self,
        scope: &Scope,
        tool: &ToolDef,
        args: ToolArgs,
        token: Option<ProgressToken>,
        call: Approved<'_>,
    ) -> Result<Reply, ErrorObject> {
        let outcome = match call.plan {
            TaskPlan::Sync => {
                self.execute_tool(scope, tool, args, token, call.mrtr.cloned())
                    .await
            }
            // Boxed: the task path's state stays out of every ordinary call's future.
            TaskPlan::Task(plan) => {
                match Box::pin(self.run_tool_tasked(scope, tool, args, token, call.mrtr, plan))
                    .await
                {
                    Ok(outcome) => outcome,
                    Err(started) => return self.task_started(scope, &call, started),
                }
            }
        };
        self.finish_call(scope, &call, outcome)
    }

    /// The answer to a call that became a task (its handle), or could not.
    fn task_started(
        &self,
        scope: &Scope,
        call: &Approved<'_>,
        started: TaskStarted,
    ) -> Result<Reply, ErrorObject> {
        match started {
            TaskStarted::Created(record) => {
                if let Some(d) = call.decision {
                    let outcome = if call.approved {
                        AuditOutcome::Approved
                    } else {
                        AuditOutcome::Served
                    };
                    self.audit(call.request, d, outcome);
                }
                Ok(self.task_created_reply(scope, &record))
            }
            TaskStarted::Refused(error) => Err(error),
        }
    }

    /// The answer to a call that ran: its result (audited), the input it needs, or the
    /// error it failed with.
    fn finish_call(
        &self,
        scope: &Scope,
        call: &Approved<'_>,
        outcome: Outcome<CallToolResult>,
    ) -> Result<Reply, ErrorObject> {
        let mut result = match outcome {
            Outcome::Done(result) => result,
            Outcome::NeedsInput => {
                let (Some(m), Some(b)) = (call.mrtr, call.binding) else {
                    return Err(ErrorObject::internal("a handshake-era call cannot suspend"));
                };
                return Ok(self.input_required(scope, m, b));
            }
            Outcome::MissingCapability(required) => {
                return Err(Self::missing_capability(required));
            }
        };
        if let Some(d) = call.decision {
            let outcome = if call.approved {
                AuditOutcome::Approved
            } else if result.is_error() {
                AuditOutcome::ToolError
            } else {
                AuditOutcome::Served
            };
            self.audit(call.request, d, outcome);
        }
        if let Some(error) = result.failure.take() {
            // -32042 does not exist on 2026-07-28: the URLs it names are asked for in an
            // input-required result instead.
            if let (Some(m), Some(b)) = (call.mrtr, call.binding)
                && let Some(asks) = url_asks(&error)
            {
                for (key, request) in asks {
                    m.record_ask(key, request);
                }
                return Ok(self.input_required(scope, m, b));
            }
            return Err(*error);
        }
        Ok(self.tool_reply(scope, result))
    }

    /// A `tools/list` answer after the layers, without any tool this caller may not see
    /// (or that does not exist): whatever a layer added, a hidden tool stays hidden.
    pub(super) async fn hide_hidden_tools(&self, scope: &Scope, reply: Reply) -> Reply {
        let answer = crate::layers::Answer::new(Ok(reply));
        let Some(mut result) = answer.result() else {
            return answer
                .into_outcome()
                .unwrap_or_else(|e| Reply::error(Some(&scope.id), &e));
        };
        let snapshot = self.registry().snapshot();
        if let Some(Value::Array(tools)) = result.get_mut("tools") {
            let listed = std::mem::take(tools);
            let defs: Vec<Option<(&ToolDef, &ToolFacts)>> = listed
                .iter()
                .map(|t| {
                    t.get("name")
                        .and_then(Value::as_str)
                        .and_then(|n| snapshot.tool_with_facts(n))
                })
                .collect();
            let known: Vec<(&ToolDef, &ToolFacts)> = defs.iter().flatten().copied().collect();
            let mut verdicts = self.tools_visible(&scope.caller, &known).await.into_iter();
            *tools = listed
                .into_iter()
                .zip(defs)
                .filter_map(|(t, def)| {
                    // An entry naming no registered tool is never shown.
                    let visible = def.is_some() && verdicts.next() == Some(true);
                    visible.then_some(t)
                })
                .collect();
        }
        let cache = self.list_cache(scope, ListKind::Tools);
        self.reply_raw(scope, &result.to_string(), cache)
    }

    /// The authorizer's Ask on the 2026-07-28 era: approved for this exact call, a question
    /// to return as an input-required result, refused, or impossible to ask.
    fn approval_stateless(
        &self,
        scope: &Scope,
        mrtr: &Mrtr,
        binding: &Binding<'_>,
        tool: &str,
        prompt: &str,
    ) -> StatelessApproval {
        match mrtr.approval() {
            ApprovalState::Approved => StatelessApproval::Approved,
            // The answer only counts alongside the sealed state issued with the question.
            ApprovalState::Asked => match mrtr.fresh_answer(APPROVAL_KEY).map(judge) {
                Some(Approval::Approved) => {
                    mrtr.set_approval(ApprovalState::Approved);
                    StatelessApproval::Approved
                }
                Some(Approval::NotApproved(detail)) => StatelessApproval::Refused(detail),
                None => StatelessApproval::Question(
                    self.ask_approval_stateless(scope, binding, tool, prompt),
                ),
            },
            ApprovalState::None => match scope.caller.cannot_elicit() {
                None => StatelessApproval::Question(
                    self.ask_approval_stateless(scope, binding, tool, prompt),
                ),
                Some(why) => StatelessApproval::Unaskable(why),
            },
        }
    }

    /// The authorizer's URL step: -32042 on 2025-11-25, an input-required result asking
    /// for the URL on 2026-07-28 (and, on the retry, the human's answer judged), a deny for
    /// a client that cannot be sent a URL.
    fn url_step(
        &self,
        scope: &Scope,
        at: UrlStepAt<'_>,
        mrtr: Option<&Arc<Mrtr>>,
        binding: Option<&Binding<'_>>,
    ) -> Result<Reply, ErrorObject> {
        let refuse = |reason: &str, why: &str| {
            let outcome = AuditOutcome::NotApproved(format!("{reason}: {why}"));
            self.audit(at.request, at.decision, outcome);
            let result = url_step_refused(at.tool, at.step, reason, why);
            Ok(self.tool_reply(scope, result))
        };
        if let Some(why) = scope.caller.cannot_take_url() {
            return refuse(reasons::URL_STEP_UNAVAILABLE, why);
        }
        let (Some(m), Some(b)) = (mrtr, binding) else {
            self.audit(at.request, at.decision, AuditOutcome::AwaitingUrl);
            return Err(at.step.required_error());
        };
        let key = at.step.input_key();
        // Only an answer sent with the sealed state that asked for this very step counts.
        let answered = m
            .fresh_answer(&key)
            .map(|a| a.get("action").and_then(Value::as_str).unwrap_or_default());
        match answered {
            None => {
                let request = crate::protocol::InputRequest {
                    method: methods::ELICITATION_CREATE.to_owned(),
                    params: serde_json::to_value(at.step.params(false)).unwrap_or_default(),
                };
                m.record_ask(key, request);
                self.audit(at.request, at.decision, AuditOutcome::AwaitingUrl);
                Ok(self.input_required(scope, m, b))
            }
            Some("accept") => refuse(
                reasons::URL_STEP_UNFINISHED,
                "the user agreed to open the URL, but the step there is not finished; call again once it is",
            ),
            Some("cancel") => refuse(reasons::URL_STEP_DECLINED, "user cancel"),
            Some(_) => refuse(reasons::URL_STEP_DECLINED, "user decline"),
        }
    }

    pub(super) fn tool_reply(&self, scope: &Scope, mut result: CallToolResult) -> Reply {
        compat::tool_result(scope.version(), &mut result);
        self.reply_with_meta(scope, result, None)
    }

    /// Runs a tool under the in-flight cap and the call timeout. A panic or a timeout becomes
    /// an `isError` result naming only the kind of failure: the panic message goes to the
    /// log, since it can carry upstream bytes.
    async fn execute_tool(
        &self,
        scope: &Scope,
        tool: &ToolDef,
        args: ToolArgs,
        token: Option<ProgressToken>,
        mrtr: Option<Arc<Mrtr>>,
    ) -> Outcome<CallToolResult> {
        let Some(_permit) = self.inner.in_flight.try_enter() else {
            return Outcome::Done(CallToolResult::error(format!(
                "server_busy: {} calls are already running; try again shortly",
                self.config().max_in_flight
            )));
        };
        let ctx = scope.ctx(self, token, mrtr.clone());
        let timeout = tool.timeout.unwrap_or(self.config().call_timeout);
        // Only for a tool whose author opted in (arguments and results can be personal),
        // and apart from the path every other call takes.
        #[cfg(feature = "otel")]
        if tool.trace_content && crate::telemetry::tracing_on() {
            let arguments = Arc::<str>::from(args.raw_json());
            let ran = run_handler(mrtr.as_ref(), timeout, || tool.handler.call(ctx, args)).await;
            let outcome = tool_outcome(ran);
            if let Outcome::Done(result) = &outcome {
                crate::telemetry::record_tool_content(&arguments, result);
            }
            return outcome;
        }
        tool_outcome(run_handler(mrtr.as_ref(), timeout, || tool.handler.call(ctx, args)).await)
    }
}

/// The URL-mode elicitations of a -32042 error, as 2026-07-28 input requests (keyed by
/// their elicitation ids, which the wire of that revision does not carry).
fn url_asks(error: &ErrorObject) -> Option<Vec<(String, crate::protocol::InputRequest)>> {
    if error.code != crate::protocol::codes::URL_ELICITATION_REQUIRED {
        return None;
    }
    #[derive(Deserialize)]
    struct Data {
        elicitations: Vec<crate::protocol::ElicitUrlParams>,
    }
    let data: Data = serde_json::from_value(error.data.clone()?).ok()?;
    let asks = data
        .elicitations
        .into_iter()
        .enumerate()
        .map(|(n, mut e)| {
            let key = match e.elicitation_id.take() {
                Some(id) => format!("url-{id}"),
                None => format!("url-{}", n + 1),
            };
            let request = crate::protocol::InputRequest {
                method: methods::ELICITATION_CREATE.to_owned(),
                params: serde_json::to_value(&e).unwrap_or_default(),
            };
            (key, request)
        })
        .collect();
    Some(asks)
}

/// A handler's outcome, its failure (a panic, a timeout) as an `isError` result naming only
/// the kind of failure.
fn tool_outcome(ran: Result<Outcome<CallToolResult>, Failure>) -> Outcome<CallToolResult> {
    match ran {
        Ok(outcome) => outcome,
        Err(failure) => Outcome::Done(CallToolResult::error(
            failure.to_error("tool").message.into_owned(),
        )),
    }
}

/// A URL step the authorizer asked for, with what refusing or auditing it needs.
struct UrlStepAt<'a> {
    request: &'a AuthRequest<'a>,
    decision: &'a Decision,
    step: &'a crate::auth::UrlStep,
    tool: &'a str,
}

/// A call the seams let through, with what auditing its end needs.
struct Approved<'a> {
    request: &'a AuthRequest<'a>,
    decision: Option<&'a Decision>,
    approved: bool,
    mrtr: Option<&'a Arc<Mrtr>>,
    binding: Option<&'a Binding<'a>>,
    plan: TaskPlan,
}

/// How the authorizer's Ask ends on the 2026-07-28 era.
enum StatelessApproval {
    /// This exact call was approved.
    Approved,
    /// The approval question, as an input-required result.
    Question(Reply),
    /// The human said no (or answered in a shape that is not a yes).
    Refused(String),
    /// The request cannot be asked, for this reason.
    Unaskable(&'static str),
}

/// Scopes are checked for callers with a verified principal, and for every network caller
/// (no token means no scopes). stdio and in-process callers without a token sit inside the
/// OS process boundary.
fn scopes_enforced(caller: &Caller) -> bool {
    caller.auth.principal().is_some()
        || matches!(caller.auth.transport(), Transport::Http | Transport::Sse)
}

/// [`has_scopes`] for a listed tool: its facts say whether it requires any, without
/// reading its definition.
fn may_see(caller: &Caller, (tool, facts): (&ToolDef, &ToolFacts)) -> bool {
    !facts.scoped || has_scopes(caller, tool)
}

fn has_scopes(caller: &Caller, tool: &ToolDef) -> bool {
    if tool.required_scopes().is_empty() || !scopes_enforced(caller) {
        return true;
    }
    caller
        .auth
        .principal()
        .is_some_and(|p| p.has_scopes(tool.required_scopes()))
}

/// What every round of a 2026-07-28 `tools/call` is bound to: this tool, these arguments
/// (their digest computed only if a state is sealed or opened) and this principal. `None`
/// in the handshake era.
fn call_binding<'a>(
    scope: &'a Scope,
    tool: &'a str,
    digest_of_args: &'a (dyn Fn() -> &'a str + Sync),
) -> Option<Binding<'a>> {
    scope.caller.stateless.as_ref().map(|_| Binding {
        method: methods::TOOLS_CALL,
        target: tool,
        args_digest: ArgsDigest::Lazy(digest_of_args),
        principal: scope.caller.subject(),
    })
}
