//! Completion providers: suggestions for prompt arguments and template variables.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use super::BoxFuture;

/// What is being completed: the argument, its partial value, and the values already chosen
/// for the other arguments; [`CompletionRequest::state`] reaches the application's state.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct CompletionRequest {
    /// The argument (or template variable) name.
    pub argument: String,
    /// What has been typed so far.
    pub value: String,
    /// Other arguments' values.
    pub context: HashMap<String, String>,
    /// The server asked, for its state.
    host: Option<Arc<dyn crate::context::Host>>,
}

impl std::fmt::Debug for CompletionRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompletionRequest")
            .field("argument", &self.argument)
            .field("value", &self.value)
            .field("context", &self.context)
            .finish_non_exhaustive()
    }
}

impl CompletionRequest {
    /// A request for `argument`, typed so far as `value` (for testing a completer).
    pub fn new(argument: impl Into<String>, value: impl Into<String>) -> Self {
        CompletionRequest {
            argument: argument.into(),
            value: value.into(),
            ..CompletionRequest::default()
        }
    }

    /// The request as the server makes it, able to reach its state.
    pub(crate) fn served(
        argument: String,
        value: String,
        context: HashMap<String, String>,
        host: Arc<dyn crate::context::Host>,
    ) -> Self {
        CompletionRequest {
            argument,
            value,
            context,
            host: Some(host),
        }
    }

    /// The application's state of type `T`, if the server holds one (see
    /// [`ServerBuilder::state`](crate::ServerBuilder::state)).
    pub fn state<T: Send + Sync + 'static>(&self) -> Option<Arc<T>> {
        self.host
            .as_ref()?
            .state(std::any::TypeId::of::<T>())?
            .downcast::<T>()
            .ok()
    }
}

/// Suggests values for one argument. The server truncates to 100 values and fills in
/// `total` and `hasMore`.
pub trait Completer: Send + Sync + 'static {
    /// Returns the candidate values for the request.
    fn complete(&self, request: CompletionRequest) -> BoxFuture<Vec<String>>;
}

impl<F, Fut> Completer for F
where
    F: Fn(CompletionRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Vec<String>> + Send + 'static,
{
    fn complete(&self, request: CompletionRequest) -> BoxFuture<Vec<String>> {
        Box::pin(self(request))
    }
}

/// A completer over a fixed list: the values starting with what was typed
/// (case-insensitively), in the list's order.
///
/// ```
/// let languages = mcp::registry::complete_from(["rust", "ruby", "go"]);
/// # let _ = languages;
/// ```
pub fn complete_from<I, S>(values: I) -> Arc<dyn Completer>
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    let values: Arc<[String]> = values.into_iter().map(Into::into).collect();
    Arc::new(move |req: CompletionRequest| {
        let values = Arc::clone(&values);
        async move { prefix_matches(&values, &req.value) }
    })
}

/// The values that start with `prefix`, case-insensitively.
pub fn prefix_matches(values: &[String], prefix: &str) -> Vec<String> {
    let prefix = prefix.to_lowercase();
    values
        .iter()
        .filter(|v| v.to_lowercase().starts_with(&prefix))
        .cloned()
        .collect()
}
