//! `prompts/list` and `prompts/get`.

use std::sync::Arc;

use super::compat;
use super::dispatch::{Outcome, Scope, parse_params, run_handler};
use super::stateless::args_digest;
use super::{Reply, Server};
use crate::elicit::state::{ArgsDigest, Binding};
use crate::protocol::{ErrorObject, GetPromptRequestParams, PaginatedParams, methods};
use crate::registry::{ListKind, PromptArgs, PromptError, page};

impl Server {
    pub(super) async fn list_prompts(
        &self,
        scope: &Scope,
        params: Option<&str>,
    ) -> Result<Reply, ErrorObject> {
        let p: PaginatedParams = parse_params(methods::PROMPTS_LIST, params, false)?;
        let snapshot = self.registry().snapshot();
        let page = page(
            snapshot.prompt_entries(),
            |p| p.name(),
            p.cursor.as_deref(),
            self.config().page_limit(),
            |_, _| true,
        )
        .map_err(|_| ErrorObject::invalid_params("Invalid params: unknown cursor"))?;
        let cache = self.list_cache(scope, ListKind::Prompts);
        Ok(self.reply_page(scope, "prompts", &page, cache))
    }

    pub(super) async fn get_prompt(
        &self,
        scope: &Scope,
        params: Option<&str>,
    ) -> Result<Reply, ErrorObject> {
        let p: GetPromptRequestParams = parse_params(methods::PROMPTS_GET, params, true)?;
        let args = p.arguments.unwrap_or_default();
        let snapshot = self.registry().snapshot();
        let Some(prompt) = snapshot.prompt(&p.name) else {
            return Err(ErrorObject::invalid_params(format!(
                "Prompt not found: {}",
                p.name
            )));
        };
        let missing = prompt.missing_arguments(&args);
        if !missing.is_empty() {
            return Err(ErrorObject::invalid_params(format!(
                "Missing required argument(s) for prompt {}: {}",
                p.name,
                missing.join(", ")
            )));
        }
        // The arguments go to the handler, and a suspended prompt is sealed after it ran:
        // their digest is taken now.
        let digest = scope
            .caller
            .stateless
            .as_ref()
            .map(|_| args_digest(&serde_json::to_value(&args).unwrap_or_default()));
        let binding = digest.as_deref().map(|digest| Binding {
            method: methods::PROMPTS_GET,
            target: &p.name,
            args_digest: ArgsDigest::Given(digest),
            principal: scope.caller.subject(),
        });
        let mrtr = match &binding {
            Some(b) => {
                self.open_mrtr(scope, b, p.request_state.as_deref(), p.input_responses)
                    .await?
            }
            None => None,
        };
        let handler = Arc::clone(&prompt.handler);
        let Some(_permit) = self.inner.in_flight.try_enter() else {
            return Err(ErrorObject::internal(
                "server_busy: too many requests are running; try again shortly",
            ));
        };
        let ctx = scope.ctx(self, None, mrtr.clone());
        let outcome = run_handler(mrtr.as_ref(), self.config().call_timeout, || {
            handler.get(ctx, PromptArgs(args))
        })
        .await
        .map_err(|f| f.to_error("prompt"))?;
        let rendered = match outcome {
            Outcome::Done(rendered) => rendered,
            Outcome::NeedsInput => {
                return match (&mrtr, &binding) {
                    (Some(m), Some(b)) => Ok(self.input_required(scope, m, b)),
                    _ => Err(ErrorObject::internal(
                        "a handshake-era prompt cannot suspend",
                    )),
                };
            }
            Outcome::MissingCapability(required) => {
                return Err(Self::missing_capability(required));
            }
        };
        let mut result = match rendered {
            Ok(result) => result,
            Err(PromptError::InvalidParams(m)) => return Err(ErrorObject::invalid_params(m)),
            Err(PromptError::Failed(m)) => {
                return Err(ErrorObject::internal(format!("Prompt failed: {m}")));
            }
        };
        if result.description.is_none() {
            result.description = prompt.prompt.description.clone();
        }
        compat::prompt_result(scope.version(), &mut result);
        Ok(self.reply_with_meta(scope, result, None))
    }
}
