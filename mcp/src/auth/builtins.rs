//! Ready-made policies.

use std::collections::HashSet;
use std::future::Future;
use std::sync::Arc;

use super::{AuthRequest, Authorizer, Decision, OwnedAuthRequest, Seam, Verdict, reasons};

/// A policy from a synchronous closure.
///
/// ```
/// use mcp::auth::{policy, Decision};
/// let only_add = policy(|req| {
///     if req.name() == "add" { Decision::Allow } else { Decision::deny("only add") }
/// });
/// # let _ = only_add;
/// ```
pub fn policy<F>(f: F) -> Arc<dyn Authorizer>
where
    F: Fn(&AuthRequest<'_>) -> Decision + Send + Sync + 'static,
{
    Arc::new(Policy {
        decide: f,
        allows_every_insensitive_tool: false,
    })
}

/// A policy of ours that allows every insensitive tool at once, and says so
/// ([`Authorizer::allows_every_insensitive_tool`]).
fn policy_allowing_insensitive_tools<F>(f: F) -> Arc<dyn Authorizer>
where
    F: Fn(&AuthRequest<'_>) -> Decision + Send + Sync + 'static,
{
    Arc::new(Policy {
        decide: f,
        allows_every_insensitive_tool: true,
    })
}

/// A synchronous closure as an authorizer.
struct Policy<F> {
    decide: F,
    allows_every_insensitive_tool: bool,
}

impl<F> Authorizer for Policy<F>
where
    F: Fn(&AuthRequest<'_>) -> Decision + Send + Sync + 'static,
{
    fn decide<'a>(&'a self, request: &'a AuthRequest<'a>) -> Verdict<'a> {
        Verdict::Now((self.decide)(request))
    }
    fn allows_every_insensitive_tool(&self) -> bool {
        self.allows_every_insensitive_tool
    }
}

/// A policy from an async closure (a policy service, a database lookup). It receives an
/// owned copy of the request.
///
/// ```
/// use mcp::auth::{policy_async, Decision};
/// let remote = policy_async(|req| async move {
///     if req.sensitive { Decision::ask(format!("Run {}?", req.name)) } else { Decision::Allow }
/// });
/// # let _ = remote;
/// ```
pub fn policy_async<F, Fut>(f: F) -> Arc<dyn Authorizer>
where
    F: Fn(OwnedAuthRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Decision> + Send + 'static,
{
    struct AsyncPolicy<F>(F);
    impl<F, Fut> Authorizer for AsyncPolicy<F>
    where
        F: Fn(OwnedAuthRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Decision> + Send + 'static,
    {
        fn decide<'a>(&'a self, request: &'a AuthRequest<'a>) -> Verdict<'a> {
            Verdict::Later(Box::pin((self.0)(request.to_owned_request())))
        }
    }
    Arc::new(AsyncPolicy(f))
}

/// Allows everything: the explicit opt-out for servers whose every caller is trusted
/// (it still counts as a chosen authorizer).
pub fn allow_all() -> Arc<dyn Authorizer> {
    policy_allowing_insensitive_tools(|_| Decision::Allow)
}

/// Denies everything with `reason`.
pub fn deny_all(reason: impl Into<String>) -> Arc<dyn Authorizer> {
    let reason = reason.into();
    policy(move |_| Decision::Deny(reason.clone()))
}

/// Allows the named tools (or, on the read seam, methods) and denies the rest with
/// `not_allowlisted`.
pub fn allowlist<I, S>(names: I) -> Arc<dyn Authorizer>
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    let names: HashSet<String> = names.into_iter().map(Into::into).collect();
    policy(move |req| {
        if names.contains(req.name()) {
            Decision::Allow
        } else {
            Decision::deny(reasons::NOT_ALLOWLISTED)
        }
    })
}

/// Asks the human before any sensitive tool runs (destructive, or marked sensitive) and
/// allows everything else. The question names the tool and its arguments, so the human
/// knows exactly what they approve; a call whose arguments do not fit the tool is answered
/// with the argument error instead, and nobody is asked.
pub fn ask_before_sensitive() -> Arc<dyn Authorizer> {
    policy_allowing_insensitive_tools(|req| {
        if req.seam() == Seam::Tool && req.is_sensitive() {
            let mut args = req.arguments().to_string();
            if args.chars().count() > 300 {
                args = args.chars().take(300).collect::<String>() + "…";
            }
            Decision::ask(format!(
                "Allow the `{}` tool to run with these arguments: {args}",
                req.name()
            ))
        } else {
            Decision::Allow
        }
    })
}
