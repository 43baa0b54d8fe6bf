//! Prompts: templated messages a client can render with arguments.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use super::BoxFuture;
use super::completion::Completer;
use super::output::{IntoPromptResult, PromptError};
use crate::context::Ctx;
use crate::protocol::{GetPromptResult, Prompt, PromptArgument};

/// The string arguments of one `prompts/get`.
#[derive(Clone, Debug, Default)]
pub struct PromptArgs(pub HashMap<String, String>);

impl PromptArgs {
    /// An argument's value.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    /// An argument that must be present.
    pub fn require(&self, name: &str) -> Result<&str, PromptError> {
        self.get(name).ok_or_else(|| {
            PromptError::InvalidParams(format!("missing required argument `{name}`"))
        })
    }
}

/// Renders a prompt. Implemented for closures `Fn(Ctx, PromptArgs) -> impl Future`
/// returning anything [`IntoPromptResult`].
pub trait PromptHandler: Send + Sync + 'static {
    /// Renders the prompt.
    fn get(&self, ctx: Ctx, args: PromptArgs) -> BoxFuture<Result<GetPromptResult, PromptError>>;
}

impl<F, Fut, R> PromptHandler for F
where
    F: Fn(Ctx, PromptArgs) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = R> + Send + 'static,
    R: IntoPromptResult,
{
    fn get(&self, ctx: Ctx, args: PromptArgs) -> BoxFuture<Result<GetPromptResult, PromptError>> {
        let fut = self(ctx, args);
        Box::pin(async move { fut.await.into_prompt_result() })
    }
}

/// A prompt definition.
#[derive(Clone)]
pub struct PromptDef {
    pub(crate) prompt: Prompt,
    pub(crate) handler: Arc<dyn PromptHandler>,
    pub(crate) completers: HashMap<String, Arc<dyn Completer>>,
    /// The states the handler takes.
    pub(crate) needs: Vec<super::needs::Need>,
}

impl fmt::Debug for PromptDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PromptDef")
            .field("prompt", &self.prompt)
            .finish_non_exhaustive()
    }
}

impl PromptDef {
    /// Says the handler takes `State<T>`: [`ServerBuilder::build`] fails, naming the
    /// handler and the type, unless the server holds (or a start-up hook promises) a state of
    /// that type. The macros add it for every `State<T>` parameter.
    ///
    /// [`ServerBuilder::build`]: crate::ServerBuilder::build
    pub fn requires_state<T: Send + Sync + 'static>(mut self) -> Self {
        super::needs::add::<T>(&mut self.needs);
        self
    }

    /// A prompt with a name, a description and a handler.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        handler: impl PromptHandler,
    ) -> Self {
        PromptDef {
            needs: Vec::new(),
            prompt: Prompt {
                name: name.into(),
                title: None,
                description: Some(description.into()),
                arguments: None,
                icons: None,
                meta: None,
            },
            handler: Arc::new(handler),
            completers: HashMap::new(),
        }
    }

    /// The prompt's name.
    pub fn name(&self) -> &str {
        &self.prompt.name
    }

    /// The wire definition.
    pub fn prompt(&self) -> &Prompt {
        &self.prompt
    }

    /// Sets the display title.
    pub fn title(mut self, t: impl Into<String>) -> Self {
        self.prompt.title = Some(t.into());
        self
    }

    /// Declares an argument.
    pub fn argument(
        mut self,
        name: impl Into<String>,
        description: impl Into<String>,
        required: bool,
    ) -> Self {
        self.prompt
            .arguments
            .get_or_insert_with(Vec::new)
            .push(PromptArgument {
                name: name.into(),
                title: None,
                description: Some(description.into()).filter(|d: &String| !d.is_empty()),
                required: Some(required),
            });
        self
    }

    /// Completes values of one argument.
    pub fn complete(mut self, argument: impl Into<String>, completer: Arc<dyn Completer>) -> Self {
        self.completers.insert(argument.into(), completer);
        self
    }

    /// Sets icons.
    pub fn icons(mut self, icons: Vec<crate::protocol::Icon>) -> Self {
        self.prompt.icons = Some(icons);
        self
    }

    /// The names of the required arguments missing from `args`.
    pub(crate) fn missing_arguments(&self, args: &HashMap<String, String>) -> Vec<String> {
        self.prompt
            .arguments
            .iter()
            .flatten()
            .filter(|a| a.required == Some(true) && !args.contains_key(&a.name))
            .map(|a| a.name.clone())
            .collect()
    }
}
