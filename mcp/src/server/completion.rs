//! `completion/complete`: values for prompt arguments and template variables from their
//! completers, and (the seed's extension) tool names, filtered by what the caller may see.

use std::sync::Arc;

use super::dispatch::{Scope, contained, parse_params};
use super::{Reply, Server};
use crate::protocol::{
    CompleteRequestParams, CompleteResult, Completion, CompletionReference, ErrorObject, methods,
};
use crate::registry::{Completer, CompletionRequest, prefix_matches};

/// The most values one completion may return (the protocol's limit).
pub(crate) const MAX_VALUES: usize = 100;

impl Server {
    pub(super) async fn complete(
        &self,
        scope: &Scope,
        params: Option<&str>,
    ) -> Result<Reply, ErrorObject> {
        let p: CompleteRequestParams = parse_params(methods::COMPLETION_COMPLETE, params, true)?;
        let snapshot = self.registry().snapshot();
        let request = CompletionRequest::served(
            p.argument.name.clone(),
            p.argument.value.clone(),
            p.context
                .as_ref()
                .and_then(|c| c.arguments.clone())
                .unwrap_or_default(),
            self.host(),
        );
        let completer: Option<Arc<dyn Completer>> = match &p.reference {
            CompletionReference::Prompt { name } => {
                let prompt = snapshot.prompt(name).ok_or_else(|| {
                    ErrorObject::invalid_params(format!("Prompt not found: {name}"))
                })?;
                prompt.completers.get(&p.argument.name).cloned()
            }
            CompletionReference::Resource { uri } => {
                let template = snapshot.template(uri).ok_or_else(|| {
                    ErrorObject::invalid_params(format!("Resource template not found: {uri}"))
                })?;
                template.completers.get(&p.argument.name).cloned()
            }
            CompletionReference::Tool { .. } => {
                // Only tool *names* complete, and only those this caller may see: a name
                // must never leak through completion to a caller tools/list would hide it from.
                let values = if p.argument.name == "name" {
                    let tools: Vec<_> = snapshot.tools().zip(snapshot.tool_facts()).collect();
                    let verdicts = self.tools_visible(&scope.caller, &tools).await;
                    let visible: Vec<String> = tools
                        .iter()
                        .zip(verdicts)
                        .filter(|(_, ok)| *ok)
                        .map(|((t, _), _)| t.name().to_owned())
                        .collect();
                    prefix_matches(&visible, &p.argument.value)
                } else {
                    Vec::new()
                };
                let max = self.config().max_completion_values;
                return Ok(self.reply(scope, &completion(values, max), None));
            }
        };
        let values = match completer {
            Some(c) => contained(self.config().call_timeout, || c.complete(request))
                .await
                .map_err(|f| f.to_error("completion"))?,
            None => Vec::new(),
        };
        let max = self.config().max_completion_values;
        Ok(self.reply(scope, &completion(values, max), None))
    }
}

/// At most `max` values (never more than the protocol's 100), with the total and whether
/// there were more.
fn completion(mut values: Vec<String>, max: usize) -> CompleteResult {
    let max = max.min(MAX_VALUES);
    let total = values.len();
    values.truncate(max);
    CompleteResult {
        completion: Completion {
            values,
            total: Some(total as u64),
            has_more: Some(total > max),
        },
    }
}
