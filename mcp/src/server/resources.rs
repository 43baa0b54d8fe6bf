//! Resources: lists, reads (fixed URIs first, then the most specific template) and
//! per-connection subscriptions.

use std::sync::Arc;

use serde_json::json;
use serde_json::value::RawValue;

use super::dispatch::{Scope, contained, parse_params};
use super::tools::list_reply;
use super::{Reply, Server};
use crate::context::{Caller, Ctx};
use crate::protocol::{
    Era, ErrorObject, PaginatedParams, ReadResourceResult, RequestId, Resource, ResourceContents,
    ResourceUriParams, codes, methods,
};
use crate::registry::{Listed, ResourceError, ResourceRequest, page};

impl Server {
    pub(super) async fn list_resources(
        &self,
        scope: &Scope,
        params: Option<&RawValue>,
    ) -> Result<Reply, ErrorObject> {
        let p: PaginatedParams = parse_params(methods::RESOURCES_LIST, params, false)?;
        self.read_gate(&scope.caller, methods::RESOURCES_LIST, || json!({}))
            .await?;
        let snapshot = self.registry().snapshot();
        let size = self.config().page_size;
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
                size,
                |_, _| true,
            )
            .map_err(bad_cursor)?;
            return Ok(list_reply(&scope.id, "resources", page));
        }
        // Templates that list their instances make the list dynamic: gather, order by URI,
        // then page like any other list.
        let mut all: Vec<Arc<Listed<Resource>>> = snapshot
            .resources()
            .map(|r| Arc::new(Listed::new(r.resource.clone(), &r.resource)))
            .collect();
        for lister in listers {
            let ctx = scope.ctx(self, None);
            for r in lister.list(ctx).await {
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
            size,
            |_, _| true,
        )
        .map_err(bad_cursor)?;
        Ok(list_reply(&scope.id, "resources", page))
    }

    pub(super) async fn list_templates(
        &self,
        scope: &Scope,
        params: Option<&RawValue>,
    ) -> Result<Reply, ErrorObject> {
        let p: PaginatedParams = parse_params(methods::RESOURCES_TEMPLATES_LIST, params, false)?;
        self.read_gate(&scope.caller, methods::RESOURCES_TEMPLATES_LIST, || {
            json!({})
        })
        .await?;
        let snapshot = self.registry().snapshot();
        let page = page(
            snapshot.template_entries(),
            |t| t.uri_template(),
            p.cursor.as_deref(),
            self.config().page_size,
            |_, _| true,
        )
        .map_err(|_| ErrorObject::invalid_params("Invalid params: unknown cursor"))?;
        Ok(list_reply(&scope.id, "resourceTemplates", page))
    }

    pub(super) async fn read_resource(
        &self,
        scope: &Scope,
        params: Option<&RawValue>,
    ) -> Result<Reply, ErrorObject> {
        let p: ResourceUriParams = parse_params(methods::RESOURCES_READ, params, true)?;
        let contents = self
            .read_core(&scope.caller, Some(scope.id.clone()), &p.uri)
            .await?;
        Ok(Reply::result(
            &scope.id,
            &ReadResourceResult {
                contents,
                meta: None,
            },
        ))
    }

    /// Reads a resource on behalf of a handler's `Ctx`, as that caller.
    pub(crate) async fn read_resource_as(
        &self,
        ctx: &Ctx,
        uri: &str,
    ) -> Result<Vec<ResourceContents>, ErrorObject> {
        self.read_core(ctx.caller(), ctx.request_id().cloned(), uri)
            .await
    }

    async fn read_core(
        &self,
        caller: &Caller,
        request_id: Option<RequestId>,
        uri: &str,
    ) -> Result<Vec<ResourceContents>, ErrorObject> {
        self.read_gate(caller, methods::RESOURCES_READ, || json!({"uri": uri}))
            .await?;
        let snapshot = self.registry().snapshot();
        let (handler, mime, vars) = if let Some(r) = snapshot.resource(uri) {
            (Arc::clone(&r.handler), r.mime.clone(), Default::default())
        } else if let Some((t, vars)) = snapshot.match_template(uri) {
            (Arc::clone(&t.handler), t.mime.clone(), vars)
        } else {
            return Err(not_found(caller, uri));
        };
        let Ok(_permit) = self.inner.in_flight.clone().try_acquire_owned() else {
            return Err(ErrorObject::internal(
                "server_busy: too many requests are running; try again shortly",
            ));
        };
        let ctx = Ctx::new(self.clone(), caller.clone(), request_id, None);
        let request = ResourceRequest {
            uri: uri.to_owned(),
            vars,
        };
        match contained(self.config().call_timeout, handler.read(ctx, request, mime)).await {
            Ok(Ok(contents)) => Ok(contents),
            Ok(Err(ResourceError::NotFound)) => Err(not_found(caller, uri)),
            Ok(Err(ResourceError::InvalidParams(m))) => Err(ErrorObject::invalid_params(m)),
            Ok(Err(ResourceError::Failed(m))) => {
                Err(ErrorObject::internal(format!("Resource read failed: {m}")))
            }
            Err(failure) => Err(failure.to_error("resource")),
        }
    }

    pub(super) async fn subscribe(
        &self,
        scope: &Scope,
        params: Option<&RawValue>,
        on: bool,
    ) -> Result<Reply, ErrorObject> {
        let method = if on {
            methods::RESOURCES_SUBSCRIBE
        } else {
            methods::RESOURCES_UNSUBSCRIBE
        };
        let p: ResourceUriParams = parse_params(method, params, true)?;
        self.read_gate(&scope.caller, method, || json!({"uri": p.uri}))
            .await?;
        let mut subs = scope.caller.conn.subscriptions.lock();
        if on {
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
