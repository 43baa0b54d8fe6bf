//! Completion providers: suggestions for prompt arguments and template variables.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use super::BoxFuture;

/// What is being completed: the argument, its partial value, and the values already chosen
/// for the other arguments.
#[derive(Clone, Debug, Default)]
pub struct CompletionRequest {
    /// The argument (or template variable) name.
    pub argument: String,
    /// What has been typed so far.
    pub value: String,
    /// Other arguments' values.
    pub context: HashMap<String, String>,
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
