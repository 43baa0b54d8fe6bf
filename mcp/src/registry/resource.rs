//! Resources with a fixed URI, and templates that name a family of resources.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use super::BoxFuture;
use super::completion::Completer;
use super::output::{IntoResourceContents, ResourceError};
use super::template::{TemplateError, TemplateVars, UriTemplate};
use crate::context::Ctx;
use crate::protocol::{Resource, ResourceContents, ResourceTemplate};

/// One read: the concrete URI and, for a template, its variables.
#[derive(Clone, Debug)]
pub struct ResourceRequest {
    /// The URI being read.
    pub uri: String,
    /// The template's variables (empty for a fixed resource).
    pub vars: TemplateVars,
}

/// Reads a resource. Implemented for closures `Fn(Ctx, ResourceRequest) -> impl Future`
/// returning anything [`IntoResourceContents`].
pub trait ResourceHandler: Send + Sync + 'static {
    /// Reads the resource.
    fn read(
        &self,
        ctx: Ctx,
        request: ResourceRequest,
        mime: Option<Arc<str>>,
    ) -> BoxFuture<Result<Vec<ResourceContents>, ResourceError>>;
}

impl<F, Fut, R> ResourceHandler for F
where
    F: Fn(Ctx, ResourceRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = R> + Send + 'static,
    R: IntoResourceContents,
{
    fn read(
        &self,
        ctx: Ctx,
        request: ResourceRequest,
        mime: Option<Arc<str>>,
    ) -> BoxFuture<Result<Vec<ResourceContents>, ResourceError>> {
        let uri = request.uri.clone();
        let fut = self(ctx, request);
        Box::pin(async move { fut.await.into_contents(&uri, mime.as_deref()) })
    }
}

/// Lists the concrete resources a template currently stands for (shown by
/// `resources/list`).
pub trait ResourceLister: Send + Sync + 'static {
    /// The resources that exist now.
    fn list(&self, ctx: Ctx) -> BoxFuture<Vec<Resource>>;
}

impl<F, Fut> ResourceLister for F
where
    F: Fn(Ctx) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Vec<Resource>> + Send + 'static,
{
    fn list(&self, ctx: Ctx) -> BoxFuture<Vec<Resource>> {
        Box::pin(self(ctx))
    }
}

/// A resource with a fixed URI.
#[derive(Clone)]
pub struct ResourceDef {
    pub(crate) resource: Resource,
    pub(crate) mime: Option<Arc<str>>,
    pub(crate) cache_ttl: Option<Duration>,
    pub(crate) handler: Arc<dyn ResourceHandler>,
    /// The states the handler takes.
    pub(crate) needs: Vec<super::needs::Need>,
}

impl fmt::Debug for ResourceDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceDef")
            .field("resource", &self.resource)
            .finish_non_exhaustive()
    }
}

impl ResourceDef {
    /// Says the handler takes `State<T>`: [`ServerBuilder::build`] fails, naming the
    /// handler and the type, unless the server holds (or a start-up hook promises) a state of
    /// that type. The macros add it for every `State<T>` parameter.
    ///
    /// [`ServerBuilder::build`]: crate::ServerBuilder::build
    pub fn requires_state<T: Send + Sync + 'static>(mut self) -> Self {
        super::needs::add::<T>(&mut self.needs);
        self
    }

    /// A resource at `uri` with a programmatic `name`.
    pub fn new(
        uri: impl Into<String>,
        name: impl Into<String>,
        handler: impl ResourceHandler,
    ) -> Self {
        ResourceDef {
            needs: Vec::new(),
            resource: Resource::new(uri, name),
            mime: None,
            cache_ttl: None,
            handler: Arc::new(handler),
        }
    }

    /// The URI.
    pub fn uri(&self) -> &str {
        &self.resource.uri
    }

    /// The wire definition.
    pub fn resource(&self) -> &Resource {
        &self.resource
    }

    /// Sets the description.
    pub fn description(mut self, d: impl Into<String>) -> Self {
        self.resource.description = Some(d.into());
        self
    }

    /// Sets the display title.
    pub fn title(mut self, t: impl Into<String>) -> Self {
        self.resource.title = Some(t.into());
        self
    }

    /// Sets the MIME type (also the default for text the handler returns).
    pub fn mime_type(mut self, m: impl Into<String>) -> Self {
        let m = m.into();
        self.mime = Some(Arc::from(m.as_str()));
        self.resource.mime_type = Some(m);
        self
    }

    /// How long a 2026-07-28 client may cache a read of this resource (default: the server's
    /// `read_ttl`, 0 unless configured).
    pub fn cache_ttl(mut self, ttl: Duration) -> Self {
        self.cache_ttl = Some(ttl);
        self
    }

    /// Sets the size in bytes.
    pub fn size(mut self, size: u64) -> Self {
        self.resource.size = Some(size);
        self
    }

    /// Sets icons.
    pub fn icons(mut self, icons: Vec<crate::protocol::Icon>) -> Self {
        self.resource.icons = Some(icons);
        self
    }
}

/// A family of resources named by a URI template; variables bind to the handler's request.
#[derive(Clone)]
pub struct ResourceTemplateDef {
    pub(crate) template: ResourceTemplate,
    pub(crate) parsed: UriTemplate,
    pub(crate) mime: Option<Arc<str>>,
    pub(crate) cache_ttl: Option<Duration>,
    pub(crate) handler: Arc<dyn ResourceHandler>,
    pub(crate) lister: Option<Arc<dyn ResourceLister>>,
    pub(crate) completers: HashMap<String, Arc<dyn Completer>>,
    /// The states the handler takes.
    pub(crate) needs: Vec<super::needs::Need>,
}

impl fmt::Debug for ResourceTemplateDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceTemplateDef")
            .field("template", &self.template)
            .finish_non_exhaustive()
    }
}

impl ResourceTemplateDef {
    /// Says the handler takes `State<T>`: [`ServerBuilder::build`] fails, naming the
    /// handler and the type, unless the server holds (or a start-up hook promises) a state of
    /// that type. The macros add it for every `State<T>` parameter.
    ///
    /// [`ServerBuilder::build`]: crate::ServerBuilder::build
    pub fn requires_state<T: Send + Sync + 'static>(mut self) -> Self {
        super::needs::add::<T>(&mut self.needs);
        self
    }

    /// A template such as `greeting://{name}` with a programmatic `name`.
    pub fn new(
        uri_template: &str,
        name: impl Into<String>,
        handler: impl ResourceHandler,
    ) -> Result<Self, TemplateError> {
        let parsed = UriTemplate::parse(uri_template)?;
        Ok(ResourceTemplateDef {
            needs: Vec::new(),
            template: ResourceTemplate {
                uri_template: uri_template.to_owned(),
                name: name.into(),
                title: None,
                description: None,
                mime_type: None,
                annotations: None,
                icons: None,
                meta: None,
            },
            parsed,
            mime: None,
            cache_ttl: None,
            handler: Arc::new(handler),
            lister: None,
            completers: HashMap::new(),
        })
    }

    /// The template text.
    pub fn uri_template(&self) -> &str {
        &self.template.uri_template
    }

    /// The wire definition.
    pub fn template(&self) -> &ResourceTemplate {
        &self.template
    }

    /// The parsed template.
    pub fn parsed(&self) -> &UriTemplate {
        &self.parsed
    }

    /// Sets the description.
    pub fn description(mut self, d: impl Into<String>) -> Self {
        self.template.description = Some(d.into());
        self
    }

    /// Sets the display title.
    pub fn title(mut self, t: impl Into<String>) -> Self {
        self.template.title = Some(t.into());
        self
    }

    /// Sets the MIME type of every match.
    pub fn mime_type(mut self, m: impl Into<String>) -> Self {
        let m = m.into();
        self.mime = Some(Arc::from(m.as_str()));
        self.template.mime_type = Some(m);
        self
    }

    /// How long a 2026-07-28 client may cache a read of a resource of this template.
    pub fn cache_ttl(mut self, ttl: Duration) -> Self {
        self.cache_ttl = Some(ttl);
        self
    }

    /// Lists the concrete resources this template currently stands for.
    pub fn list_with(mut self, lister: impl ResourceLister) -> Self {
        self.lister = Some(Arc::new(lister));
        self
    }

    /// Completes values of one template variable.
    pub fn complete(mut self, variable: impl Into<String>, completer: Arc<dyn Completer>) -> Self {
        self.completers.insert(variable.into(), completer);
        self
    }
}
