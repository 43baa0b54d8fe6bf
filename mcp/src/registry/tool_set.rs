//! Sets of tools made from the `#[tool]` methods of one value (`#[tools]` on an impl block).

use std::sync::Arc;

use super::ToolDef;

/// The `#[tool]` methods of an impl block marked `#[tools]`. The macro implements it;
/// [`ServerBuilder::tools_from`](crate::ServerBuilder::tools_from) registers the tools of one value.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no #[tools] impl",
    label = "not a set of tool methods",
    note = "mark the impl block holding its #[tool] methods with #[tools]"
)]
pub trait ToolSet: Send + Sync + 'static {
    /// The tools' names.
    const NAMES: &'static [&'static str];
    /// [`Harmless`], or [`NeedsAuthorizer`] when a method is destructive or sensitive.
    type Sensitivity;
    /// The definitions, each calling its method on the shared value.
    fn tool_defs(self: Arc<Self>) -> Vec<ToolDef>;
}

/// A [`ToolSet`] without destructive or sensitive methods.
pub enum Harmless {}

/// A [`ToolSet`] with a destructive or sensitive method: a server needs an authorizer.
pub enum NeedsAuthorizer {}
