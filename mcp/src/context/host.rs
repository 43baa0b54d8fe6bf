//! What a [`Ctx`](super::Ctx) needs from the server serving its request, as a narrow trait,
//! so that `Ctx` (and the handlers built on it) sit below the server and never import it.

use std::any::Any;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use super::Ctx;
use crate::protocol::{ErrorObject, ResourceContents};

/// A boxed future borrowing its host.
pub(crate) type HostFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The server as a request's context sees it.
pub(crate) trait Host: Send + Sync + 'static {
    /// The server's name (the `logger` of log messages).
    fn name(&self) -> &str;

    /// How long a question to the client may stay unanswered.
    fn elicitation_timeout(&self) -> Duration;

    /// The per-call timeout.
    fn call_timeout(&self) -> Duration;

    /// Reads a resource of this server as the caller of `ctx` (the read seam applies).
    fn read_resource<'a>(
        &'a self,
        ctx: &'a Ctx,
        uri: &'a str,
    ) -> HostFuture<'a, Result<Vec<ResourceContents>, ErrorObject>>;

    /// The application's state of the type `id`, if the server holds one.
    fn state(&self, id: std::any::TypeId) -> Option<std::sync::Arc<dyn Any + Send + Sync>>;

    /// The host itself, for the server to recognise its own type.
    fn into_any(self: std::sync::Arc<Self>) -> std::sync::Arc<dyn Any + Send + Sync>;
}
