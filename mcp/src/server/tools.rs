//! `tools/list` and `tools/call`: the tool seam, the Ask flow (an elicitation on the
//! handshake era, an input-required result with sealed state on 2026-07-28) and contained
//! execution.

use std::borrow::Cow;
use std::sync::Arc;

use serde::Deserialize;

use serde_json::Value;
use serde_json::value::RawValue;

use super::compat;
use super::dispatch::{Outcome, Scope, parse_params, progress_token, run_handler};
use super::modern::args_digest;
use super::{Reply, Server};
use crate::auth::{
    ArgsSource, AuditOutcome, AuthRequest, Decision, Seam, reasons, safe_decide, tool_denied,
};
use crate::context::Caller;
use crate::elicit::mrtr::Mrtr;
use crate::elicit::state::{ApprovalState, Binding};
use crate::elicit::{APPROVAL_KEY, Approval, ask_approval, judge};
use crate::protocol::{CallToolResult, ErrorObject, Meta, PaginatedParams, ProgressToken, methods};
use crate::registry::{ListKind, Page, ToolArgs, ToolDef, page};
use crate::server::Transport;

/// `tools/call` params read in place: the name and the arguments borrow from the request
/// (the public [`CallToolRequestParams`](crate::protocol::CallToolRequestParams) owns them).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CallParams<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(default, borrow)]
    arguments: Option<&'a RawValue>,
    #[serde(rename = "_meta", default)]
    meta: Option<Meta>,
    #[serde(default)]
    input_responses: Option<Meta>,
    #[serde(default)]
    request_state: Option<String>,
}

impl Server {
    pub(super) async fn list_tools(
        &self,
        scope: &Scope,
        params: Option<&RawValue>,
    ) -> Result<Reply, ErrorObject> {
        let p: PaginatedParams = parse_params(methods::TOOLS_LIST, params, false)?;
        self.read_gate(&scope.caller, methods::TOOLS_LIST, || {
            Value::Object(Default::default())
        })
        .await?;
        let snapshot = self.registry().snapshot();
        let entries = snapshot.tool_entries();
        let size = self.config().page_size;
        let page = if self.inner.authorizer.is_none() && !scopes_enforced(&scope.caller) {
            page(
                entries,
                |t| t.name(),
                p.cursor.as_deref(),
                size,
                |_, _| true,
            )
        } else {
            // Decided concurrently: one slow policy lookup must not add up per tool.
            let visible = futures::future::join_all(
                entries
                    .iter()
                    .map(|e| self.tool_visible(&scope.caller, &e.def)),
            )
            .await;
            page(
                entries,
                |t| t.name(),
                p.cursor.as_deref(),
                size,
                |i, _| visible[i],
            )
        }
        .map_err(|_| ErrorObject::invalid_params("Invalid params: unknown cursor"))?;
        let cache = self.list_cache(scope, ListKind::Tools);
        Ok(self.reply_raw(scope, &list_json("tools", page), cache))
    }

    /// Whether `caller` may see (and so call without being refused) `tool`: the tool seam
    /// allows it, or asks and this caller can be asked; and the caller holds its scopes.
    pub(crate) async fn tool_visible(&self, caller: &Caller, tool: &ToolDef) -> bool {
        if !has_scopes(caller, tool) {
            return false;
        }
        let Some(authorizer) = &self.inner.authorizer else {
            return true;
        };
        let request = AuthRequest::new(
            Seam::Tool,
            tool.name(),
            Some(tool),
            ArgsSource::Value(Value::Object(Default::default())),
            &caller.auth,
        );
        match safe_decide(&**authorizer, &request, self.config().authorizer_timeout).await {
            Decision::Allow => true,
            Decision::Ask(_) => caller.can_elicit(),
            Decision::Deny(_) => false,
        }
    }

    pub(super) async fn call_tool(
        &self,
        scope: &Scope,
        params: Option<&RawValue>,
    ) -> Result<Reply, ErrorObject> {
        let p: CallParams<'_> = parse_params(methods::TOOLS_CALL, params, true)?;
        let snapshot = self.registry().snapshot();
        let tool = snapshot.tool(&p.name);
        let raw_args = p.arguments.map(RawValue::get).unwrap_or("{}");
        let request = AuthRequest::new(
            Seam::Tool,
            &p.name,
            tool,
            ArgsSource::Raw(raw_args),
            &scope.caller.auth,
        );
        // On 2026-07-28 every round of this call is bound to this tool, these arguments
        // and this principal.
        let binding = scope.caller.modern.as_ref().map(|_| Binding {
            method: methods::TOOLS_CALL.to_owned(),
            target: p.name.clone().into_owned(),
            args_digest: args_digest(request.arguments()),
            principal: scope.caller.subject(),
        });
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
                Some(a) => {
                    Some(safe_decide(&**a, &request, self.config().authorizer_timeout).await)
                }
            }
        };

        let deny = |decision_kind: &str, detail: &str, outcome: AuditOutcome| {
            self.audit(
                &request,
                decision.as_ref().unwrap_or(&Decision::Allow),
                outcome,
            );
            Ok(self.tool_reply(scope, tool_denied(&p.name, decision_kind, detail)))
        };
        let approved = match &decision {
            None | Some(Decision::Allow) => false,
            Some(Decision::Deny(reason)) => return deny("deny", reason, AuditOutcome::Denied),
            Some(Decision::Ask(prompt)) => match (&mrtr, &binding) {
                (Some(m), Some(b)) => match self.approval_modern(scope, m, b, &p.name, prompt) {
                    Ok(()) => true,
                    Err(Ok(question)) => {
                        self.audit(
                            &request,
                            decision.as_ref().unwrap_or(&Decision::Allow),
                            AuditOutcome::AwaitingApproval,
                        );
                        return Ok(question);
                    }
                    Err(Err(detail)) => {
                        return deny("ask", &detail, AuditOutcome::NotApproved(detail.clone()));
                    }
                },
                _ => {
                    let outcome = match &scope.caller.sink {
                        Some(sink) if scope.caller.can_elicit() => {
                            ask_approval(
                                &scope.caller.conn,
                                sink,
                                &p.name,
                                prompt,
                                self.config().elicitation_timeout,
                            )
                            .await
                        }
                        // A client that cannot be asked gets the deny at once, with the
                        // question as the detail so a host can show it.
                        _ => Approval::NotApproved(prompt.clone()),
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

        let Some(tool) = tool else {
            return Err(ErrorObject::invalid_params(format!(
                "Tool not found: {}",
                p.name
            )));
        };
        let token = progress_token(p.meta.as_ref());
        let result = match self
            .execute_tool(
                scope,
                tool,
                p.arguments.map(|a| Arc::from(a.get())),
                token,
                mrtr.clone(),
            )
            .await
        {
            Outcome::Done(result) => result,
            Outcome::NeedsInput => {
                let (Some(m), Some(b)) = (&mrtr, &binding) else {
                    return Err(ErrorObject::internal("a handshake-era call cannot suspend"));
                };
                return Ok(self.input_required(scope, m, b));
            }
            Outcome::MissingCapability(required) => {
                return Err(Self::missing_capability(required));
            }
        };
        if let Some(d) = &decision {
            let outcome = if approved {
                AuditOutcome::Approved
            } else if result.is_error() {
                AuditOutcome::ToolError
            } else {
                AuditOutcome::Served
            };
            self.audit(&request, d, outcome);
        }
        Ok(self.tool_reply(scope, result))
    }

    /// The authorizer's Ask on the 2026-07-28 era. `Ok` when this exact call is approved;
    /// `Err(Ok(reply))` with the approval question as an input-required result;
    /// `Err(Err(detail))` when it is refused.
    fn approval_modern(
        &self,
        scope: &Scope,
        mrtr: &Mrtr,
        binding: &Binding,
        tool: &str,
        prompt: &str,
    ) -> Result<(), Result<Reply, String>> {
        match mrtr.approval() {
            ApprovalState::Approved => Ok(()),
            // The answer only counts alongside the sealed state issued with the question.
            ApprovalState::Asked => match mrtr.fresh_answer(APPROVAL_KEY).map(judge) {
                Some(Approval::Approved) => {
                    mrtr.set_approval(ApprovalState::Approved);
                    Ok(())
                }
                Some(Approval::NotApproved(detail)) => Err(Err(detail)),
                None => Err(Ok(self.ask_approval_modern(scope, binding, tool, prompt))),
            },
            ApprovalState::None if scope.caller.can_elicit() => {
                Err(Ok(self.ask_approval_modern(scope, binding, tool, prompt)))
            }
            ApprovalState::None => Err(Err(prompt.to_owned())),
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
        arguments: Option<Arc<str>>,
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
        let args = ToolArgs::from_json_text(arguments, tool.schema.clone());
        let timeout = tool.timeout.unwrap_or(self.config().call_timeout);
        match run_handler(mrtr.as_ref(), timeout, || tool.handler.call(ctx, args)).await {
            Ok(outcome) => outcome,
            Err(failure) => Outcome::Done(CallToolResult::error(
                failure.to_error("tool").message.into_owned(),
            )),
        }
    }
}

/// Scopes are checked for callers with a verified principal, and for every network caller
/// (no token means no scopes). stdio and in-process callers without a token sit inside the
/// OS process boundary.
fn scopes_enforced(caller: &Caller) -> bool {
    caller.auth.principal().is_some()
        || matches!(caller.auth.transport(), Transport::Http | Transport::Sse)
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

/// A list result `{"<key>":[...],"nextCursor":"..."}` assembled from entries serialized at
/// registration.
pub(crate) fn list_json(key: &str, page: Page<'_>) -> String {
    let mut json =
        String::with_capacity(64 + page.items.iter().map(|i| i.get().len() + 1).sum::<usize>());
    json.push_str("{\"");
    json.push_str(key);
    json.push_str("\":[");
    for (i, item) in page.items.iter().enumerate() {
        if i > 0 {
            json.push(',');
        }
        json.push_str(item.get());
    }
    json.push(']');
    if let Some(cursor) = page.next_cursor {
        json.push_str(",\"nextCursor\":");
        json.push_str(&Value::String(cursor).to_string());
    }
    json.push('}');
    json
}
