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
//! An [`Authorizer`] answers [`Decision::Allow`], [`Decision::Deny`], [`Decision::Ask`] or
//! [`Decision::Url`] (send the human to a URL first: a sign-in, a payment, a consent page).
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
mod canonical;
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

use crate::conn::Outbound;
pub use crate::conn::{AuthContext, Principal};
use crate::context::Caller;
use crate::context::ElicitationCompletion;
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
    /// Not until the human has completed a step in their browser (URL-mode elicitation):
    /// signing in somewhere, paying, consenting. The call is refused *for now*, with the
    /// URL, and decided again when the client retries; the authorizer answers
    /// [`Decision::Allow`] once its own records say the step is done. See [`UrlStep`] for
    /// what each revision puts on the wire.
    Url(UrlStep),
}

/// A step the human completes at a URL before a call may proceed ([`Decision::Url`]).
///
/// - On 2025-11-25, to a client that declared `elicitation.url`, the request fails with
///   -32042 (URL elicitation required) carrying `{mode: "url", message, url,
///   elicitationId}`; the client shows it and retries, ideally after
///   `notifications/elicitation/complete`, which the authorizer sends through
///   [`AuthRequest::elicitation_completion`] when its flow ends.
/// - On 2026-07-28 a tool call ends input-required with the URL among its
///   `inputRequests` (never -32042); the client's retry is decided again, and if the
///   authorizer still answers `Url` with the same `elicitation_id` after the human agreed
///   to open it, the call is refused as [`reasons::URL_STEP_UNFINISHED`] (a new call
///   starts over).
/// - A client that did not declare `elicitation.url` is never sent the URL: the call is
///   refused as [`reasons::URL_STEP_UNAVAILABLE`]. So is a read on 2026-07-28, where lists,
///   reads and subscriptions have no way to carry it.
///
/// The URL must be `https://` (or `http://`, for loopback development) and carry no
/// credential or personal data: point it at a page of your own that checks who opened it
/// (as `mcp::connect` does), with an opaque, single-use reference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UrlStep {
    /// What the step is for, shown to the human.
    pub message: String,
    /// Where to go.
    pub url: String,
    /// Names this step: the completion notification carries it on 2025-11-25, and on
    /// 2026-07-28 it tells a retry of the same step from a new one. Random and unique.
    pub elicitation_id: String,
}

impl UrlStep {
    /// Whether the step is one a client may be sent: a message, an `http(s)` URL without
    /// spaces or control characters, an id.
    fn is_valid(&self) -> bool {
        let url = self.url.as_str();
        let scheme_ok = ["https://", "http://"]
            .iter()
            .any(|s| url.len() > s.len() && url[..s.len()].eq_ignore_ascii_case(s));
        !self.message.trim().is_empty()
            && !self.elicitation_id.trim().is_empty()
            && scheme_ok
            && !url.chars().any(|c| c.is_whitespace() || c.is_control())
    }

    /// The elicitation as the wire carries it (`elicitationId` only on 2025-11-25).
    pub(crate) fn params(&self, with_id: bool) -> crate::protocol::ElicitUrlParams {
        crate::protocol::ElicitUrlParams::new(
            &self.message,
            &self.url,
            with_id.then(|| self.elicitation_id.clone()),
        )
    }

    /// The -32042 error naming this step (2025-11-25).
    pub(crate) fn required_error(&self) -> ErrorObject {
        crate::registry::ProtocolError::url_elicitation_required(
            self.message.clone(),
            vec![self.params(true)],
        )
        .0
    }

    /// The input key of this step in an input-required result (2026-07-28).
    pub(crate) fn input_key(&self) -> String {
        format!("url-{}", self.elicitation_id)
    }
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

    /// A URL step: the human goes to `url` first (see [`UrlStep`]).
    ///
    /// ```
    /// use std::collections::{HashMap, HashSet};
    /// use std::sync::{Arc, Mutex};
    /// use mcp::auth::{Decision, policy};
    /// use mcp::context::ElicitationCompletion;
    ///
    /// /// Who confirmed payments at the bank (your confirmation page fills it and sends
    /// /// the completion it finds in `waiting`).
    /// #[derive(Default)]
    /// struct Confirmations {
    ///     confirmed: HashSet<String>,
    ///     waiting: HashMap<String, ElicitationCompletion>,
    /// }
    ///
    /// let bank = Arc::new(Mutex::new(Confirmations::default()));
    /// let guard = policy(move |req| {
    ///     let Some(user) = req.context().principal().map(|p| p.subject.clone()) else {
    ///         return Decision::deny("sign in first");
    ///     };
    ///     let mut bank = bank.lock().unwrap();
    ///     if req.name() != "pay" || bank.confirmed.contains(&user) {
    ///         return Decision::Allow;
    ///     }
    ///     // Opaque and single-use: the page checks who opens it.
    ///     let id = format!("{:x}", rand_id());
    ///     if let Some(done) = req.elicitation_completion(&id) {
    ///         bank.waiting.insert(id.clone(), done);
    ///     }
    ///     Decision::url(
    ///         "Confirm the payment at your bank",
    ///         format!("https://mcp.example.com/confirm/{id}"),
    ///         id,
    ///     )
    /// });
    /// # fn rand_id() -> u128 { 7 }
    /// # let _ = guard;
    /// ```
    pub fn url(
        message: impl Into<String>,
        url: impl Into<String>,
        elicitation_id: impl Into<String>,
    ) -> Self {
        Decision::Url(UrlStep {
            message: message.into(),
            url: url.into(),
            elicitation_id: elicitation_id.into(),
        })
    }

    /// `"allow"`, `"deny"`, `"ask"` or `"url"`.
    pub fn kind(&self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Deny(_) => "deny",
            Decision::Ask(_) => "ask",
            Decision::Url(_) => "url",
        }
    }

    /// What an audit record says beside the decision: the reason, the question, or what
    /// the URL step is for (never the URL).
    pub(crate) fn detail(&self) -> Option<&str> {
        match self {
            Decision::Allow => None,
            Decision::Deny(d) | Decision::Ask(d) => Some(d),
            Decision::Url(step) => Some(&step.message),
        }
    }
}

/// Reasons the framework itself gives in denies.
pub mod reasons {
    /// A sensitive tool with no authorizer configured.
    pub const SENSITIVE_TOOL_UNGUARDED: &str = "sensitive_tool_unguarded";
    /// The authorizer panicked.
    pub const AUTHORIZER_FAILED: &str = "authorizer_failed";
    /// The authorizer answered outside its contract (an `Ask` with a blank question, a
    /// `Url` step without a message, id or `http(s)` URL).
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
    /// The authorizer wants the human to complete a step at a URL, and this request cannot
    /// carry one (the client did not declare `elicitation.url`, or a read on 2026-07-28).
    pub const URL_STEP_UNAVAILABLE: &str = "url_step_unavailable";
    /// The human agreed to open the URL, but the authorizer still finds the step
    /// unfinished.
    pub const URL_STEP_UNFINISHED: &str = "url_step_unfinished";
    /// The human declined (or cancelled) opening the URL.
    pub const URL_STEP_DECLINED: &str = "url_step_declined";
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
    /// The arguments' canonical digest, once worked out (a 2026-07-28 call binds its state
    /// to it and the audit records it: hashed once for both).
    digest: OnceLock<String>,
    /// The arguments decoded into the tool's own type, when the server decoded them before
    /// asking (a typed tool, arguments that fit).
    decoded: Option<Decoded>,
    context: &'a AuthContext,
    /// The handshake-era caller, whose channel to the client carries a URL step's
    /// completion notice.
    channel: Option<&'a Caller>,
    /// Whether the tool is sensitive, when the caller knew it already (a listing reads it
    /// from the registry's dense facts rather than from each tool's definition).
    sensitive: Option<bool>,
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
            digest: OnceLock::new(),
            decoded: None,
            context,
            channel: None,
            sensitive: None,
        }
    }

    /// Carries whether the tool is sensitive, known beforehand.
    pub(crate) fn with_sensitivity(mut self, sensitive: bool) -> Self {
        self.sensitive = Some(sensitive);
        self
    }

    /// Carries the handshake-era channel to the client (for
    /// [`elicitation_completion`](Self::elicitation_completion)).
    pub(crate) fn with_channel(mut self, channel: Option<&'a Caller>) -> Self {
        self.channel = channel;
        self
    }

    /// A handle that sends `notifications/elicitation/complete` for the URL step
    /// `elicitation_id` to this client once its flow ends (2025-11-25; `None` on
    /// 2026-07-28, where the client learns it by retrying, on the read seam, and when the
    /// request has no channel to the client). Keep it with the flow; call
    /// [`send`](ElicitationCompletion::send) when it finishes.
    pub fn elicitation_completion(&self, elicitation_id: &str) -> Option<ElicitationCompletion> {
        self.channel
            .and_then(Caller::sink)
            .map(|sink| ElicitationCompletion::new(sink, elicitation_id))
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
        self.sensitive
            .unwrap_or_else(|| self.tool.is_some_and(ToolDef::is_sensitive))
    }

    /// The arguments: the tool's arguments, or on the read seam `{}`, `{"uri"}`,
    /// `{"name","arguments"}` or `{"ref"}` by method. Parsed on first use.
    pub fn arguments(&self) -> &Value {
        self.parsed.get_or_init(|| match &self.args {
            ArgsSource::Raw(raw) => serde_json::from_str(raw).unwrap_or(Value::Null),
            ArgsSource::Value(v) => v.clone(),
        })
    }

    /// The canonical digest of the arguments (what the audit records and sealed state is
    /// bound to): over the text the client sent when that is already canonical, which
    /// spares parsing it; otherwise over the parsed arguments.
    pub(crate) fn argument_digest(&self) -> &str {
        self.digest.get_or_init(|| match &self.args {
            ArgsSource::Raw(raw) => audit::digest_canonical_text(raw)
                .unwrap_or_else(|| audit::digest_json(self.arguments())),
            ArgsSource::Value(_) => audit::digest_json(self.arguments()),
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
            channel: self.channel.and_then(Caller::sink),
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
        None => ArgsSchema::from_value(&Value::Null).parse::<T>(text),
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
    channel: Option<Outbound>,
    decoded: Option<Decoded>,
    schema: Option<ArgsSchema>,
}

impl OwnedAuthRequest {
    /// As [`AuthRequest::elicitation_completion`].
    pub fn elicitation_completion(&self, elicitation_id: &str) -> Option<ElicitationCompletion> {
        self.channel
            .as_ref()
            .map(|sink| ElicitationCompletion::new(sink.clone(), elicitation_id))
    }

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

    /// Whether [`decide`](Authorizer::decide) allows, at once, every request on the tool
    /// seam whose tool is not sensitive, whoever asks and with any arguments. A
    /// `tools/list` then asks only about the sensitive tools (what it shows is the same;
    /// a listing decides per tool only to hide what the caller could not call). Calls are
    /// still decided and audited one by one. The default, `false`, is always correct;
    /// [`allow_all`] and [`ask_before_sensitive`] say `true`.
    fn allows_every_insensitive_tool(&self) -> bool {
        false
    }
}

impl<A: Authorizer + ?Sized> Authorizer for Arc<A> {
    fn decide<'a>(&'a self, request: &'a AuthRequest<'a>) -> Verdict<'a> {
        (**self).decide(request)
    }
    fn allows_every_insensitive_tool(&self) -> bool {
        (**self).allows_every_insensitive_tool()
    }
}

impl<A: Authorizer + ?Sized> Authorizer for Box<A> {
    fn decide<'a>(&'a self, request: &'a AuthRequest<'a>) -> Verdict<'a> {
        (**self).decide(request)
    }
    fn allows_every_insensitive_tool(&self) -> bool {
        (**self).allows_every_insensitive_tool()
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
    match decide_now(authorizer, request) {
        Ok(decision) => decision,
        Err(later) => decide_later(later, request, timeout).await,
    }
}

/// A decision the authorizer gives later: [`decide_later`] waits for it.
pub(crate) type Later<'a> = Pin<Box<dyn Future<Output = Decision> + Send + 'a>>;

/// The first half of [`safe_decide`], which never waits: the contained decision when the
/// authorizer gives it at once (`Verdict::Now`, or a panic), or the future it decides
/// with, for [`decide_later`].
pub(crate) fn decide_now<'a>(
    authorizer: &'a dyn Authorizer,
    request: &'a AuthRequest<'a>,
) -> Result<Decision, Later<'a>> {
    let mut outcome = None;
    decide_all_now(authorizer, std::iter::once((0, request)), |_, _, o| {
        outcome = Some(o);
    });
    outcome.expect("every request is decided")
}

/// [`decide_now`] for many requests (a listing's visibility), in order: `decided` gets each
/// one's index, the request and its outcome. The decisions given at once take no future,
/// and a panic is contained once for the whole run rather than once per request: the
/// request that panicked is denied and the run goes on after it.
pub(crate) fn decide_all_now<'a>(
    authorizer: &'a dyn Authorizer,
    requests: impl Iterator<Item = (usize, &'a AuthRequest<'a>)>,
    mut decided: impl FnMut(usize, &'a AuthRequest<'a>, Result<Decision, Later<'a>>),
) {
    let mut requests = requests;
    let mut current = None;
    loop {
        let run = std::panic::catch_unwind(AssertUnwindSafe(|| {
            for (at, request) in requests.by_ref() {
                current = Some((at, request));
                let outcome = match authorizer.decide(request) {
                    Verdict::Now(mut d) => {
                        enforce_contract(&mut d, request);
                        Ok(d)
                    }
                    Verdict::Later(later) => Err(later),
                };
                decided(at, request, outcome);
            }
        }));
        if run.is_ok() {
            return;
        }
        let (at, request) = current
            .take()
            .expect("a panic comes from deciding a request");
        tracing::error!(target: "mcp::auth", seam = request.seam.as_str(), name = request.name, "authorizer panicked; denying");
        decided(at, request, Ok(Decision::deny(reasons::AUTHORIZER_FAILED)));
    }
}

/// The second half of [`safe_decide`]: waits for a decision given later, containing a
/// panic and a stall past `timeout`.
pub(crate) async fn decide_later(
    later: Later<'_>,
    request: &AuthRequest<'_>,
    timeout: Duration,
) -> Decision {
    match tokio::time::timeout(timeout, AssertUnwindSafe(later).catch_unwind()).await {
        Ok(Ok(mut d)) => {
            enforce_contract(&mut d, request);
            d
        }
        Ok(Err(_)) => {
            tracing::error!(target: "mcp::auth", seam = request.seam.as_str(), name = request.name, "authorizer panicked; denying");
            Decision::deny(reasons::AUTHORIZER_FAILED)
        }
        Err(_) => {
            tracing::error!(target: "mcp::auth", seam = request.seam.as_str(), name = request.name, "authorizer timed out; denying");
            Decision::deny(reasons::AUTHORIZER_TIMEOUT)
        }
    }
}

/// A decision that breaks the authorizer contract (a blank question, an invalid URL step)
/// becomes a deny.
#[inline]
fn enforce_contract(decision: &mut Decision, request: &AuthRequest<'_>) {
    // In place: a decision is moved about once per tool of a listing, and most are valid.
    let violation = match decision {
        Decision::Allow | Decision::Deny(_) => return,
        Decision::Ask(prompt) if prompt.trim().is_empty() => {
            tracing::error!(target: "mcp::auth", name = request.name, "authorizer asked a blank question; denying");
            true
        }
        Decision::Url(step) if !step.is_valid() => {
            tracing::error!(target: "mcp::auth", name = request.name, "authorizer gave a URL step without a message, an id or an http(s) URL; denying");
            true
        }
        _ => false,
    };
    if violation {
        *decision = Decision::deny(reasons::AUTHORIZER_CONTRACT_VIOLATION);
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

/// The tool-seam deny for a URL step that could not be, or was not, completed: `reason`
/// (one of [`reasons`]) and `why`; what the step is for is kept beside it (`question`), the
/// URL is not.
pub(crate) fn url_step_refused(
    tool: &str,
    step: &UrlStep,
    reason: &str,
    why: &str,
) -> CallToolResult {
    let detail = format!("{reason}: this call needs a step in the user's browser: {why}");
    denied(tool, "url", &detail, Some(&step.message))
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
