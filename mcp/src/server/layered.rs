//! The pipeline between the method table and the handlers: the read seam for every method
//! that has one, then the layers (the server's, then a tool's own), then the handler; on
//! the way out, a `tools/list` answer a layer changed loses every tool the caller may not
//! see. See [`crate::layers`] for why the seams come first.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::{Value, json};

use super::dispatch::Scope;
use super::{Reply, Server};
use crate::layers::request::Shape;
use crate::layers::{Answer, Inner, Layer, Next, Pending, Request};
use crate::protocol::methods::Method;
use crate::protocol::{CallToolResult, ErrorObject};

/// Shapes a layer's answer for the request's era, as the handlers' answers are.
struct Shaper<'a> {
    server: &'a Server,
    scope: &'a Scope,
}

impl Shape for Shaper<'_> {
    fn result(&self, json: &str) -> Reply {
        self.server.reply_raw(self.scope, json, None)
    }

    fn tool_result(&self, result: CallToolResult) -> Reply {
        self.server.tool_reply(self.scope, result)
    }
}

/// What the read seam sees of a request: the members of its params that say what is read.
fn seam_arguments(method: Method, params: Option<&str>) -> Result<Value, ErrorObject> {
    let members: &[&str] = match method {
        Method::PromptsGet => &["name", "arguments"],
        Method::CompletionComplete => &["ref"],
        Method::ResourcesRead | Method::ResourcesSubscribe | Method::ResourcesUnsubscribe => {
            &["uri"]
        }
        Method::SubscriptionsListen => &["notifications"],
        Method::TasksGet | Method::TasksUpdate | Method::TasksCancel | Method::TasksResult => {
            &["taskId"]
        }
        _ => &[],
    };
    if members.is_empty() {
        return Ok(json!({}));
    }
    let parsed: Value = match params {
        Some(raw) => serde_json::from_str(raw).map_err(|_| {
            ErrorObject::invalid_params(format!(
                "Invalid params for {}: params must be an object",
                method.name()
            ))
        })?,
        None => json!({}),
    };
    let mut out = serde_json::Map::new();
    for m in members {
        let v = parsed.get(*m).cloned();
        let v = match (*m, v) {
            ("arguments", None) => json!({}),
            (_, v) => v.unwrap_or(Value::Null),
        };
        out.insert((*m).to_owned(), v);
    }
    Ok(Value::Object(out))
}

impl Server {
    /// The read seam, for a method the table says it gates.
    pub(super) async fn seam(
        &self,
        scope: &Scope,
        method: Method,
        params: Option<&str>,
    ) -> Result<(), ErrorObject> {
        if !method.spec().read_seam || self.inner.read_authorizer.is_none() {
            return Ok(());
        }
        let args = seam_arguments(method, params)?;
        self.read_gate(&scope.caller, method.name(), || args).await
    }

    /// Runs `handler` inside the server's layers and then `tool_layers`.
    pub(super) async fn layered<'a>(
        &'a self,
        scope: &'a Scope,
        method: Method,
        params: Option<&'a str>,
        tool_layers: &'a [Arc<dyn Layer>],
        handler: Pin<&'a mut (dyn Future<Output = Answer> + Send + 'a)>,
    ) -> Result<Reply, ErrorObject> {
        let shaper = Shaper {
            server: self,
            scope,
        };
        let req = Request::new(method, params, &scope.id, &scope.caller, &shaper);
        // The handler stays where its caller pinned it: no allocation, no copy.
        let handler: Inner<'_> = Pending::borrowed(handler);
        // A tool's own layers run inside the server's.
        let innermost: Inner<'_> = if tool_layers.is_empty() {
            handler
        } else {
            Next::new(tool_layers, handler).run(&req)
        };
        let answer = Next::new(&self.inner.layers, innermost).run(&req).await;
        answer.into_outcome()
    }
}
