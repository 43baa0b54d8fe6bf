//! Authorization: who may call which tool, and who may read what.
//!
//! Two seams, kept apart because a tools allowlist knows nothing about method names:
//!
//! - the **tool seam** decides `tools/call` (and filters `tools/list`); a deny is an
//!   `isError` tool result with an `authorization_required` payload the model can read;
//! - the **read seam** decides `tools/list`, `resources/list`, `resources/read`,
//!   `resources/subscribe`, `resources/unsubscribe`, `prompts/list`, `prompts/get` and
//!   `completion/complete`; a deny is JSON-RPC error -32090.
//!
//! An [`Authorizer`] answers [`Decision::Allow`], [`Decision::Deny`] or [`Decision::Ask`].
//! It sees a closed, server-derived [`AuthContext`] (connection, transport, verified
//! principal) and never anything the client merely asserts. A panicking, stalling or
//! off-contract authorizer denies, in both seams, and the server keeps serving.
//!
//! On `tools/call`, a typed tool's arguments are decoded before the authorizer decides
//! ([`AuthRequest::arguments_as`] reads them), so an `Ask` becomes a question only for a call
//! that can run: arguments that do not fit get the tool's argument error instead (a deny
//! still wins). A client that cannot be asked gets a deny saying so
//! ([`reasons::APPROVAL_UNAVAILABLE`], with the question beside it).

pub(crate) mod audit;
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub mod bearer;
mod builtins;
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub mod deployment;

use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use futures::FutureExt as _;
use serde::de::DeserializeOwned;
use serde_json::Value;

pub use audit::{AuditEvent, AuditOutcome, AuditSink};
pub use builtins::{allow_all, allowlist, ask_before_sensitive, deny_all, policy, policy_async};

pub use crate::conn::{AuthContext, Principal};
use crate::protocol::{CallToolResult, ErrorObject, codes};
use crate::registry::{ArgsSchema, ArgumentError, Decoded, ToolDef, json_text};

/// What an authorizer decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Go ahead.
    Allow,
    /// Refuse, with a reason (shown to the caller as `detail`).
    Deny(String),
    /// Ask the human first, with this question. On the tool seam this becomes an
    /// elicitation (an input-required result on 2026-07-28), for a call whose arguments fit
    /// the tool; on the read seam it is a deny (reads cannot be approved interactively).
    Ask(String),
}

impl Decision {
    /// A deny with a reason.
    pub fn deny(reason: impl Into<String>) -> Self {
        Decision::Deny(reason.into())
    }

    /// An ask with a question.
    pub fn ask(prompt: impl Into<String>) -> Self {
        Decision::Ask(prompt.into())
    }

    /// `"allow"`, `"deny"` or `"ask"`.
    pub fn kind(&self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Deny(_) => "deny",
            Decision::Ask(_) => "ask",
        }
    }
}

/// Reasons the framework itself gives in denies.
pub mod reasons {
    /// A sensitive tool with no authorizer configured.
    pub const SENSITIVE_TOOL_UNGUARDED: &str = "sensitive_tool_unguarded";
    /// The authorizer panicked.
    pub const AUTHORIZER_FAILED: &str = "authorizer_failed";
    /// The authorizer answered outside its contract (an `Ask` with a blank question).
    pub const AUTHORIZER_CONTRACT_VIOLATION: &str = "authorizer_contract_violation";
    /// The authorizer did not answer in time.
    pub const AUTHORIZER_TIMEOUT: &str = "authorizer_timeout";
    /// An `Ask` on the read seam, which cannot elicit.
    pub const INTERACTIVE_APPROVAL_UNSUPPORTED: &str = "interactive_approval_unsupported";
    /// Not on an allowlist.
    pub const NOT_ALLOWLISTED: &str = "not_allowlisted";
    /// The caller lacks a scope the tool requires.
    pub const INSUFFICIENT_SCOPE: &str = "insufficient_scope";
    /// The authorizer asked, and no answer could be had: the client cannot be asked, or the
    /// replica holding the question stopped. The deny's detail goes on to say why.
    pub const APPROVAL_UNAVAILABLE: &str = "approval_unavailable";
}

/// Which seam a decision is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Seam {
    /// `tools/call` and the filtering of `tools/list`.
    Tool,
    /// Lists, reads, subscriptions, prompts and completion.
    Read,
}

impl Seam {
    /// `"tool"` or `"read"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Seam::Tool => "tool",
            Seam::Read => "read",
        }
    }
}

pub(crate) enum ArgsSource<'a> {
    Raw(&'a str),
    Value(Value),
}

/// One question put to an authorizer.
pub struct AuthRequest<'a> {
    seam: Seam,
    name: &'a str,
    tool: Option<&'a ToolDef>,
    args: ArgsSource<'a>,
    parsed: OnceLock<Value>,
    /// The arguments decoded into the tool's own type, when the server decoded them before
    /// asking (a typed tool, arguments that fit).
    decoded: Option<Decoded>,
    context: &'a AuthContext,
}

impl fmt::Debug for AuthRequest<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthRequest")
            .field("seam", &self.seam)
            .field("name", &self.name)
            .field("arguments", self.arguments())
            .field("context", &self.context)
            .finish()
    }
}

impl<'a> AuthRequest<'a> {
    pub(crate) fn new(
        seam: Seam,
        name: &'a str,
        tool: Option<&'a ToolDef>,
        args: ArgsSource<'a>,
        context: &'a AuthContext,
    ) -> Self {
        AuthRequest {
            seam,
            name,
            tool,
            args,
            parsed: OnceLock::new(),
            decoded: None,
            context,
        }
    }

    /// Carries the arguments the server decoded into the tool's own type.
    pub(crate) fn with_decoded(mut self, decoded: Option<Decoded>) -> Self {
        self.decoded = decoded;
        self
    }

    /// Hands the decoded arguments on (to the handler), once the decision is made.
    pub(crate) fn take_decoded(&mut self) -> Option<Decoded> {
        self.decoded.take()
    }

    /// Builds a request by hand, for testing a policy.
    pub fn for_test(
        seam: Seam,
        name: &'a str,
        tool: Option<&'a ToolDef>,
        arguments: Value,
        context: &'a AuthContext,
    ) -> Self {
        Self::new(seam, name, tool, ArgsSource::Value(arguments), context)
    }

    /// Which seam asks.
    pub fn seam(&self) -> Seam {
        self.seam
    }

    /// The tool's name (tool seam) or the method (read seam).
    pub fn name(&self) -> &str {
        self.name
    }

    /// The tool's definition, when the tool exists (tool seam only).
    pub fn tool(&self) -> Option<&ToolDef> {
        self.tool
    }

    /// Whether the tool is sensitive (destructive or marked sensitive).
    pub fn is_sensitive(&self) -> bool {
        self.tool.is_some_and(ToolDef::is_sensitive)
    }

    /// The arguments: the tool's arguments, or on the read seam `{}`, `{"uri"}`,
    /// `{"name","arguments"}` or `{"ref"}` by method. Parsed on first use.
    pub fn arguments(&self) -> &Value {
        self.parsed.get_or_init(|| match &self.args {
            ArgsSource::Raw(raw) => serde_json::from_str(raw).unwrap_or(Value::Null),
            ArgsSource::Value(v) => v.clone(),
        })
    }

    /// The arguments decoded into `T`, or the error a model would read for them.
    ///
    /// When `T` is the type the tool decodes its arguments into (the `#[args]` struct of a
    /// `#[tool]`, or the argument type of [`ToolDef::from_fn`]), this is the very value the
    /// tool will receive: the server decoded it once, before asking the authorizer, for
    /// both. Any other `T` (a view of a few fields, say) is decoded from the arguments now.
    ///
    /// On `tools/call` the server asks only about calls that can run: when the arguments
    /// do not fit the tool, the call is answered with the argument error whatever the
    /// decision, unless it is a deny. So a policy that fails to read the tool's own type
    /// can answer `Allow` or `Ask` and let the model read that error; nobody is asked.
    /// (Deciding whether `tools/list` shows the tool, the server asks with `{}`.)
    ///
    /// ```
    /// use mcp::auth::{Decision, policy};
    ///
    /// #[derive(serde::Deserialize)]
    /// struct Spend { amount: u64 }
    ///
    /// let guard = policy(|req| match (req.name(), req.arguments_as::<Spend>()) {
    ///     ("spend", Ok(s)) if s.amount > 100 => Decision::deny("more than 100 needs a form"),
    ///     ("spend", Ok(s)) => Decision::ask(format!("Spend {} credits?", s.amount)),
    ///     _ => Decision::Allow,
    /// });
    /// # let _ = guard;
    /// ```
    pub fn arguments_as<T>(&self) -> Result<Arc<T>, ArgumentError>
    where
        T: DeserializeOwned + Send + Sync + 'static,
    {
        let text = match &self.args {
            ArgsSource::Raw(raw) => std::borrow::Cow::Borrowed(json_text(Some(raw))),
            ArgsSource::Value(v) => std::borrow::Cow::Owned(v.to_string()),
        };
        typed_view(
            self.decoded.as_ref(),
            &text,
            self.tool.map(ToolDef::args_schema),
        )
    }

    /// Who asks.
    pub fn context(&self) -> &AuthContext {
        self.context
    }

    /// An owned copy, for async policies.
    pub fn to_owned_request(&self) -> OwnedAuthRequest {
        OwnedAuthRequest {
            seam: self.seam,
            name: self.name.to_owned(),
            sensitive: self.is_sensitive(),
            arguments: self.arguments().clone(),
            context: self.context.clone(),
            decoded: self.decoded.clone(),
            schema: self.tool.map(|t| t.args_schema().clone()),
        }
    }
}

/// The arguments as `T`: the value already decoded when it is one, else decoded from the
/// JSON text now (as the tool would, when there is one).
fn typed_view<T>(
    decoded: Option<&Decoded>,
    text: &str,
    schema: Option<&ArgsSchema>,
) -> Result<Arc<T>, ArgumentError>
where
    T: DeserializeOwned + Send + Sync + 'static,
{
    if let Some(value) = decoded.and_then(Decoded::get::<T>) {
        return Ok(value);
    }
    match schema {
        Some(schema) => schema.parse::<T>(text),
        None => ArgsSchema::new(Arc::new(Value::Null)).parse::<T>(text),
    }
    .map(Arc::new)
}

/// An owned [`AuthRequest`], handed to async policies.
#[derive(Clone, Debug)]
pub struct OwnedAuthRequest {
    /// Which seam asks.
    pub seam: Seam,
    /// The tool's name or the method.
    pub name: String,
    /// Whether the tool is sensitive.
    pub sensitive: bool,
    /// The arguments.
    pub arguments: Value,
    /// Who asks.
    pub context: AuthContext,
    decoded: Option<Decoded>,
    schema: Option<ArgsSchema>,
}

impl OwnedAuthRequest {
    /// The arguments decoded into `T`, as [`AuthRequest::arguments_as`] gives them.
    ///
    /// ```
    /// use mcp::auth::{Decision, policy_async};
    ///
    /// #[derive(serde::Deserialize)]
    /// struct Spend { amount: u64 }
    ///
    /// let guard = policy_async(|req| async move {
    ///     match req.arguments_as::<Spend>() {
    ///         Ok(s) => Decision::ask(format!("Spend {} credits?", s.amount)),
    ///         Err(_) => Decision::Allow, // the call cannot run; the model gets the error
    ///     }
    /// });
    /// # let _ = guard;
    /// ```
    pub fn arguments_as<T>(&self) -> Result<Arc<T>, ArgumentError>
    where
        T: DeserializeOwned + Send + Sync + 'static,
    {
        typed_view(
            self.decoded.as_ref(),
            &self.arguments.to_string(),
            self.schema.as_ref(),
        )
    }
}

/// A decision now, or one that needs to wait (a policy service, a database).
pub enum Verdict<'a> {
    /// Decided.
    Now(Decision),
    /// Decided when the future completes.
    Later(Pin<Box<dyn Future<Output = Decision> + Send + 'a>>),
}

impl From<Decision> for Verdict<'_> {
    fn from(d: Decision) -> Self {
        Verdict::Now(d)
    }
}

/// A policy. Use the built-ins ([`allow_all`], [`deny_all`], [`allowlist`],
/// [`ask_before_sensitive`]) or wrap a closure with [`policy`] / [`policy_async`].
pub trait Authorizer: Send + Sync + 'static {
    /// Decides one request.
    fn decide<'a>(&'a self, request: &'a AuthRequest<'a>) -> Verdict<'a>;
}

impl<A: Authorizer + ?Sized> Authorizer for Arc<A> {
    fn decide<'a>(&'a self, request: &'a AuthRequest<'a>) -> Verdict<'a> {
        (**self).decide(request)
    }
}

impl<A: Authorizer + ?Sized> Authorizer for Box<A> {
    fn decide<'a>(&'a self, request: &'a AuthRequest<'a>) -> Verdict<'a> {
        (**self).decide(request)
    }
}

/// Whether an authorizer was chosen by a person or stood in as a framework fallback.
/// Network transports only boot when it was chosen: a restrictive fallback must not count
/// as a decision nobody made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum AuthorizerSource {
    /// A caller chose the authorizer.
    Configured,
    /// A framework fallback; the default, so a forgetful embedder fails closed.
    #[default]
    Default,
}

/// Runs an authorizer with containment: a panic becomes `authorizer_failed`, a blank `Ask`
/// becomes `authorizer_contract_violation`, a stall past `timeout` becomes
/// `authorizer_timeout`. Never panics, never hangs.
pub(crate) async fn safe_decide(
    authorizer: &dyn Authorizer,
    request: &AuthRequest<'_>,
    timeout: Duration,
) -> Decision {
    let verdict = std::panic::catch_unwind(AssertUnwindSafe(|| authorizer.decide(request)));
    let decision = match verdict {
        Err(_) => {
            tracing::error!(target: "mcp::auth", seam = request.seam.as_str(), name = request.name, "authorizer panicked; denying");
            return Decision::deny(reasons::AUTHORIZER_FAILED);
        }
        Ok(Verdict::Now(d)) => d,
        Ok(Verdict::Later(fut)) => {
            match tokio::time::timeout(timeout, AssertUnwindSafe(fut).catch_unwind()).await {
                Ok(Ok(d)) => d,
                Ok(Err(_)) => {
                    tracing::error!(target: "mcp::auth", seam = request.seam.as_str(), name = request.name, "authorizer panicked; denying");
                    return Decision::deny(reasons::AUTHORIZER_FAILED);
                }
                Err(_) => {
                    tracing::error!(target: "mcp::auth", seam = request.seam.as_str(), name = request.name, "authorizer timed out; denying");
                    return Decision::deny(reasons::AUTHORIZER_TIMEOUT);
                }
            }
        }
    };
    match decision {
        Decision::Ask(prompt) if prompt.trim().is_empty() => {
            tracing::error!(target: "mcp::auth", name = request.name, "authorizer asked a blank question; denying");
            Decision::deny(reasons::AUTHORIZER_CONTRACT_VIOLATION)
        }
        d => d,
    }
}

/// The tool-seam deny: an `isError` result whose text is a JSON object
/// `{error: "authorization_required", tool, decision, detail}` that a model (or a host) can
/// parse.
pub fn tool_denied(tool: &str, decision: &str, detail: &str) -> CallToolResult {
    denied(tool, decision, detail, None)
}

/// The tool-seam deny for an Ask that could not be put to anyone: the detail says that the
/// call needs a person's approval, that it could not be requested, and `why`; the question
/// itself is kept beside it (`question`), so a host can show it.
pub fn approval_unavailable(tool: &str, question: &str, why: &str) -> CallToolResult {
    let detail = format!(
        "{}: this call needs a person's approval, which could not be requested: {why}",
        reasons::APPROVAL_UNAVAILABLE
    );
    denied(tool, "ask", &detail, Some(question))
}

fn denied(tool: &str, decision: &str, detail: &str, question: Option<&str>) -> CallToolResult {
    let mut payload = serde_json::json!({
        "error": "authorization_required",
        "tool": tool,
        "decision": decision,
        "detail": detail,
    });
    if let Some(q) = question {
        payload["question"] = Value::String(q.to_owned());
    }
    CallToolResult::error(payload.to_string())
}

/// The read-seam deny: JSON-RPC error -32090 with `data {error, method, detail}`.
pub fn read_denied(method: &str, detail: &str) -> ErrorObject {
    ErrorObject::new(
        codes::AUTHORIZATION_REQUIRED,
        format!("authorization_required: {method}"),
    )
    .with_data(serde_json::json!({
        "error": "authorization_required",
        "method": method,
        "detail": detail,
    }))
}
