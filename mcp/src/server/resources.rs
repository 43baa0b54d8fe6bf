//! Resources: lists, reads (fixed URIs first, then the most specific template) and
//! per-connection subscriptions.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use super::dispatch::{Outcome, Scope, contained, parse_params, run_handler};
use super::{Reply, Server};
use crate::context::{Caller, Ctx};
use crate::elicit::mrtr::Mrtr;
use crate::elicit::state::{ArgsDigest, Binding};
use crate::protocol::{
    Era, ErrorObject, PaginatedParams, ReadResourceResult, RequestId, Resource, ResourceContents,
    ResourceUriParams, codes, methods,
};
use crate::registry::{ListKind, Listed, ResourceError, ResourceRequest, page};

impl Server {
    pub(super) async fn list_resources(
        &self,
        scope: &Scope,
        params: Option<&str>,
    ) -> Result<Reply, ErrorObject> {
        let p: PaginatedParams = parse_params(methods::RESOURCES_LIST, params, false)?;
        let snapshot = self.registry().snapshot();
        let limit = self.config().page_limit();
        let cache = self.list_cache(scope, ListKind::Resources);
        let bad_cursor = |_| ErrorObject::invalid_params("Invalid params: unknown cursor");
        let listers: Vec<_> = snapshot
            .templates()
            .filter_map(|t| t.lister.clone())
            .collect();
        if listers.is_empty() {
            let page = page(
                snapshot.resource_entries(),
                |r| r.uri(),
                p.cursor.as_deref(),
                limit,
                |_, _| true,
            )
            .map_err(bad_cursor)?;
            return Ok(self.reply_page(scope, "resources", &page, cache));
        }
        // Templates that list their instances make the list dynamic: gather, order by URI,
        // then page like any other list.
        let mut all: Vec<Arc<Listed<Resource>>> = snapshot
            .resources()
            .map(|r| Arc::new(Listed::new(r.resource.clone(), &r.resource)))
            .collect();
        for lister in listers {
            let ctx = scope.ctx(self, None, None);
            let listed = contained(self.config().call_timeout, || lister.list(ctx))
                .await
                .map_err(|f| f.to_error("resource lister"))?;
            for r in listed {
                let json = r.clone();
                all.push(Arc::new(Listed::new(r, &json)));
            }
        }
        all.sort_by(|a, b| a.def.uri.cmp(&b.def.uri));
        all.dedup_by(|a, b| a.def.uri == b.def.uri);
        let page = page(
            &all,
            |r| r.uri.as_str(),
            p.cursor.as_deref(),
            limit,
            |_, _| true,
        )
        .map_err(bad_cursor)?;
        Ok(self.reply_page(scope, "resources", &page, cache))
    }

    pub(super) async fn list_templates(
        &self,
        scope: &Scope,
        params: Option<&str>,
    ) -> Result<Reply, ErrorObject> {
        let p: PaginatedParams = parse_params(methods::RESOURCES_TEMPLATES_LIST, params, false)?;
        let snapshot = self.registry().snapshot();
        let page = page(
            snapshot.template_entries(),
            |t| t.uri_template(),
            p.cursor.as_deref(),
            self.config().page_limit(),
            |_, _| true,
        )
        .map_err(|_| ErrorObject::invalid_params("Invalid params: unknown cursor"))?;
        let cache = self.list_cache(scope, ListKind::Resources);
        Ok(self.reply_page(scope, "resourceTemplates", &page, cache))
    }

    pub(super) async fn read_resource(
        &self,
        scope: &Scope,
        params: Option<&str>,
    ) -> Result<Reply, ErrorObject> {
        let p: ResourceUriParams = parse_params(methods::RESOURCES_READ, params, true)?;
        let retried = p.request_state.is_some() || p.input_responses.is_some();
        let binding = scope.caller.stateless.as_ref().map(|_| Binding {
            method: methods::RESOURCES_READ,
            target: &p.uri,
            args_digest: ArgsDigest::Given(""),
            principal: scope.caller.subject(),
        });
        let mrtr = match &binding {
            Some(b) => {
                self.open_mrtr(scope, b, p.request_state.as_deref(), p.input_responses)
                    .await?
            }
            None => None,
        };
        match self
            .read_core(
                &scope.caller,
                Some(scope.id.clone()),
                &p.uri,
                mrtr.clone(),
                false,
            )
            .await?
        {
            Outcome::Done((contents, ttl)) => {
                let cache = self.read_cache(scope, ttl, retried);
                let result = ReadResourceResult {
                    contents,
                    meta: None,
                };
                Ok(self.reply_with_meta(scope, result, cache))
            }
            Outcome::NeedsInput => match (&mrtr, &binding) {
                (Some(m), Some(b)) => Ok(self.input_required(scope, m, b)),
                _ => Err(ErrorObject::internal("a handshake-era read cannot suspend")),
            },
            Outcome::MissingCapability(required) => Err(Self::missing_capability(required)),
        }
    }

    /// Reads a resource on behalf of a handler's `Ctx`, as that caller.
    pub(crate) async fn read_resource_as(
        &self,
        ctx: &Ctx,
        uri: &str,
    ) -> Result<Vec<ResourceContents>, ErrorObject> {
        match self
            .read_core(ctx.caller(), ctx.request_id().cloned(), uri, None, true)
            .await?
        {
            Outcome::Done((contents, _)) => Ok(contents),
            _ => Err(ErrorObject::internal(
                "the resource needs input it cannot ask for here",
            )),
        }
    }

    /// Reads `uri`, through the read seam when `gate` (a request's own read passed it on
    /// its way in); the contents and the resource's own cache TTL.
    async fn read_core(
        &self,
        caller: &Arc<Caller>,
        request_id: Option<RequestId>,
        uri: &str,
        mrtr: Option<Arc<Mrtr>>,
        gate: bool,
    ) -> Result<Outcome<(Vec<ResourceContents>, Option<Duration>)>, ErrorObject> {
        if gate {
            self.read_gate(caller, methods::RESOURCES_READ, || json!({"uri": uri}))
                .await?;
        }
        let snapshot = self.registry().snapshot();
        let (handler, mime, vars, ttl) = if let Some(r) = snapshot.resource(uri) {
            (
                Arc::clone(&r.handler),
                r.mime.clone(),
                Default::default(),
                r.cache_ttl,
            )
        } else if let Some((t, vars)) = snapshot.match_template(uri) {
            (Arc::clone(&t.handler), t.mime.clone(), vars, t.cache_ttl)
        } else {
            return Err(not_found(caller, uri));
        };
        let Some(_permit) = self.inner.in_flight.try_enter() else {
            return Err(ErrorObject::internal(
                "server_busy: too many requests are running; try again shortly",
            ));
        };
        let ctx = Ctx::new(
            self.host(),
            Arc::clone(caller),
            request_id,
            None,
            mrtr.clone(),
        );
        let request = ResourceRequest {
            uri: uri.to_owned(),
            vars,
        };
        let read = || handler.read(ctx, request, mime);
        match run_handler(mrtr.as_ref(), self.config().call_timeout, read).await {
            Ok(Outcome::Done(Ok(contents))) => Ok(Outcome::Done((contents, ttl))),
            Ok(Outcome::Done(Err(ResourceError::NotFound))) => Err(not_found(caller, uri)),
            Ok(Outcome::Done(Err(ResourceError::InvalidParams(m)))) => {
                Err(ErrorObject::invalid_params(m))
            }
            Ok(Outcome::Done(Err(ResourceError::Failed(m)))) => {
                Err(ErrorObject::internal(format!("Resource read failed: {m}")))
            }
            Ok(Outcome::NeedsInput) => Ok(Outcome::NeedsInput),
            Ok(Outcome::MissingCapability(c)) => Ok(Outcome::MissingCapability(c)),
            Err(failure) => Err(failure.to_error("resource")),
        }
    }

    pub(super) async fn subscribe(
        &self,
        scope: &Scope,
        params: Option<&str>,
        on: bool,
    ) -> Result<Reply, ErrorObject> {
        let method = if on {
            methods::RESOURCES_SUBSCRIBE
        } else {
            methods::RESOURCES_UNSUBSCRIBE
        };
        let p: ResourceUriParams = parse_params(method, params, true)?;
        let mut subs = scope.caller.conn.subscriptions.lock();
        if on {
            let max = self.config().max_subscriptions;
            if subs.len() >= max && !subs.contains(&p.uri) {
                return Err(ErrorObject::invalid_params(format!(
                    "Invalid params: this connection already holds {max} subscriptions, the limit; \
                     unsubscribe from some first"
                )));
            }
            subs.insert(p.uri);
        } else {
            subs.remove(&p.uri);
        }
        Ok(Reply::raw_result(&scope.id, "{}"))
    }
}

/// Resource-not-found in the caller's era: -32002 on handshake revisions, -32602 on
/// 2026-07-28, both with `data.uri`.
fn not_found(caller: &Caller, uri: &str) -> ErrorObject {
    let code = match caller.version.era() {
        Era::Handshake => codes::RESOURCE_NOT_FOUND,
        Era::Stateless => codes::INVALID_PARAMS,
    };
    ErrorObject::new(code, format!("Resource not found: {uri}")).with_data(json!({"uri": uri}))
}
