//! Middleware: layers around every request, on every transport.
//!
//! A [`Layer`] sees each request the server is about to serve (its method, params, `_meta`
//! and caller) and decides: pass it on ([`Next::run`]), answer it itself, refuse it, or
//! change the answer on the way back. Typed hooks cover the common cases
//! ([`Layer::on_call_tool`], [`Layer::on_read_resource`], [`Layer::on_get_prompt`],
//! [`Layer::on_list`]); [`Layer::on_request`] is the raw one every request goes through.
//!
//! # Where layers sit: after the authorizer, never around it
//!
//! ```text
//! transport → decode → era and _meta (once) → method table → seams (tool authorizer,
//!   approval, read authorizer) → server layers → tool layers → handler
//!   → (tools/list: hidden tools removed again) → shaped for the era → transport
//! ```
//!
//! The seams decide first. A request the authorizer denies never reaches a layer, so no
//! layer can widen what it allowed; a call the authorizer asked about reaches the layers
//! only once the human approved it. On the way out, a `tools/list` answer that a layer
//! changed is filtered again, so a tool hidden from this caller stays hidden whatever a
//! layer adds. Notifications never reach the seams; layers see them through
//! [`Layer::on_notification`].
//!
//! # Why a trait of our own, not tower's `Service`
//!
//! A tower `Layer`/`Service` stack would give us `ServiceBuilder` and its generic
//! middleware, but every hook here needs what tower cannot type: the caller as the server
//! derived it (principal, transport, connection), the request's era and `_meta`, the
//! answer shaped for that era, and the guarantee that the seams ran first. tower's
//! `poll_ready` back-pressure also has no meaning for one JSON-RPC request on a connection
//! that already caps its running requests. A small trait with typed hooks and a `Next`
//! keeps layers a few lines long, and a layer that passes requests on, refuses them or
//! only looks at answers ([`Layer::on_answer`]) allocates nothing per request; only work
//! around `next.run(req).await` boxes a future.
//!
//! # Built-in layers
//!
//! - [`RateLimit`]: a token bucket per principal.
//! - [`ResponseCache`]: answers to reads and lists, keyed by the caller and the era.
//! - [`SizeLimit`]: refuses answers larger than a limit.
//! - [`Timing`]: how long each request took, into `tracing`.
//!
//! ```
//! use mcp::layers::{Layer, Next, Pending, Request};
//!
//! /// Logs every tool call and whether it failed.
//! struct Audit;
//!
//! impl Layer for Audit {
//!     fn on_call_tool<'a>(&'a self, req: &'a Request<'a>, next: Next<'a>) -> Pending<'a> {
//!         Pending::new(async move {
//!             let answer = next.run(req).await;
//!             tracing::info!(tool = req.target().unwrap_or(""), error = answer.is_error(), "called");
//!             answer
//!         })
//!     }
//! }
//!
//! let server = mcp::Server::builder("s", "1.0.0").layer(Audit).build();
//! # let _ = server;
//! ```

mod answer;
mod cache;
mod rate_limit;
pub(crate) mod request;
mod size_limit;
mod timing;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

pub use answer::Answer;
pub use cache::ResponseCache;
pub use rate_limit::RateLimit;
pub use request::{NotificationInfo, Request};
pub use size_limit::SizeLimit;
pub use timing::Timing;

pub use crate::protocol::methods::{ListKind, Method};

/// A boxed future borrowing the request.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a layer hook returns: the answer, now ([`Pending::ready`]: a refusal, a cached
/// answer) or later ([`Pending::new`]: work around [`Next::run`]), or the rest of the
/// chain as [`Next::run`] gave it. Passing a request on costs no allocation; only a layer
/// that does something after the rest of the chain boxes its future.
#[must_use = "a layer's answer does nothing unless returned"]
pub struct Pending<'a> {
    kind: PendingKind<'a>,
    /// Layers whose [`Layer::on_answer`] the answer passes on its way out, outermost first
    /// (applied from the last): a run of neighbours in one chain, so no list is allocated.
    after: &'a [Arc<dyn Layer>],
    req: Option<&'a Request<'a>>,
}

enum PendingKind<'a> {
    Boxed(BoxFuture<'a, Answer>),
    Borrowed(Pin<&'a mut (dyn Future<Output = Answer> + Send + 'a)>),
    Ready(Option<Answer>),
}

impl<'a> Pending<'a> {
    /// An answer that needs work first (say, around `next.run(req).await`).
    pub fn new(work: impl Future<Output = Answer> + Send + 'a) -> Self {
        Pending::of(PendingKind::Boxed(Box::pin(work)))
    }

    /// An answer known now.
    pub fn ready(answer: Answer) -> Self {
        Pending::of(PendingKind::Ready(Some(answer)))
    }

    fn of(kind: PendingKind<'a>) -> Self {
        Pending {
            kind,
            after: &[],
            req: None,
        }
    }

    /// Adds `layers[0]` to the layers this answer passes on its way out. `layers[1..]` is
    /// the chain this answer came from, so the run grows without allocating; an answer
    /// from elsewhere (a boxed future, another chain) starts a run of its own, after its
    /// earlier run is applied inside a box.
    fn passing(self, layers: &'a [Arc<dyn Layer>], req: &'a Request<'a>) -> Self {
        let adjacent =
            self.after.is_empty() || std::ptr::eq(self.after.as_ptr(), layers[1..].as_ptr());
        if adjacent {
            return Pending {
                kind: self.kind,
                after: &layers[..=self.after.len()],
                req: Some(req),
            };
        }
        Pending {
            kind: PendingKind::Boxed(Box::pin(self)),
            after: &layers[..1],
            req: Some(req),
        }
    }
}

impl Future for Pending<'_> {
    type Output = Answer;

    fn poll(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<Answer> {
        use std::task::Poll;
        let answer = match &mut self.kind {
            PendingKind::Boxed(work) => std::task::ready!(work.as_mut().poll(cx)),
            PendingKind::Borrowed(work) => std::task::ready!(work.as_mut().poll(cx)),
            PendingKind::Ready(answer) => match answer.take() {
                Some(a) => a,
                // Polled again after it completed: it never completes again.
                None => return Poll::Pending,
            },
        };
        let Some(req) = self.req else {
            return Poll::Ready(answer);
        };
        // On its way out, innermost first.
        let answer = self
            .after
            .iter()
            .rev()
            .fold(answer, |answer, layer| layer.on_answer(req, answer));
        Poll::Ready(answer)
    }
}

/// JSON-RPC error codes the built-in layers answer with.
pub mod codes {
    /// The caller exceeded its rate limit; `data.retryAfterMs` says when to retry.
    pub const RATE_LIMITED: i32 = -32029;
    /// The answer is larger than the server's size limit.
    pub const RESULT_TOO_LARGE: i32 = -32028;
}

/// Something that changed on the server, for layers that keep state about answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// A list changed (an entry was added or removed).
    List(ListKind),
    /// A resource changed.
    Resource(String),
}

/// Middleware around requests. Every hook has a default that passes the request on, so a
/// layer implements only the hooks it needs.
pub trait Layer: Send + Sync + 'static {
    /// Every request, before the typed hooks. The default sends each method to its typed
    /// hook (tool calls to [`Layer::on_call_tool`], and so on) and passes the rest on.
    fn on_request<'a>(&'a self, req: &'a Request<'a>, next: Next<'a>) -> Pending<'a> {
        match req.method() {
            Method::ToolsCall => self.on_call_tool(req, next),
            Method::ResourcesRead => self.on_read_resource(req, next),
            Method::PromptsGet => self.on_get_prompt(req, next),
            m => match m.spec().list {
                Some(kind) => self.on_list(kind, req, next),
                None => next.run(req),
            },
        }
    }

    /// A `tools/call` the tool seam allowed (or the human approved).
    fn on_call_tool<'a>(&'a self, req: &'a Request<'a>, next: Next<'a>) -> Pending<'a> {
        next.run(req)
    }

    /// A `resources/read` the read seam allowed.
    fn on_read_resource<'a>(&'a self, req: &'a Request<'a>, next: Next<'a>) -> Pending<'a> {
        next.run(req)
    }

    /// A `prompts/get` the read seam allowed.
    fn on_get_prompt<'a>(&'a self, req: &'a Request<'a>, next: Next<'a>) -> Pending<'a> {
        next.run(req)
    }

    /// A `tools/list`, `resources/list`, `resources/templates/list` or `prompts/list`.
    fn on_list<'a>(&'a self, kind: ListKind, req: &'a Request<'a>, next: Next<'a>) -> Pending<'a> {
        let _ = kind;
        next.run(req)
    }

    /// Every answer leaving this layer (from the layers and the handler inside it, or from
    /// this layer's own [`Layer::on_request`]), without a future: the cheap way to look at,
    /// log or replace answers. Runs innermost layer first, as the answer travels out.
    fn on_answer(&self, req: &Request<'_>, answer: Answer) -> Answer {
        let _ = req;
        answer
    }

    /// A notification from the client (after the server acted on it).
    fn on_notification(&self, notification: &NotificationInfo<'_>) {
        let _ = notification;
    }

    /// Something changed on the server (on this replica or, with a cluster, another).
    fn on_change(&self, change: &Change) {
        let _ = change;
    }
}

/// What runs after the last layer (not started until a layer awaits it).
pub(crate) type Inner<'a> = Pending<'a>;

impl<'a> Pending<'a> {
    /// The handler, pinned where the pipeline keeps it: no allocation.
    pub(crate) fn borrowed(work: Pin<&'a mut (dyn Future<Output = Answer> + Send + 'a)>) -> Self {
        Pending::of(PendingKind::Borrowed(work))
    }
}

/// The rest of the chain: the layers after this one, then the handler.
pub struct Next<'a> {
    layers: &'a [Arc<dyn Layer>],
    inner: Inner<'a>,
}

impl<'a> Next<'a> {
    pub(crate) fn new(layers: &'a [Arc<dyn Layer>], inner: Inner<'a>) -> Self {
        Next { layers, inner }
    }

    /// Passes the request on to the next layer, or to the handler after the last one.
    pub fn run(self, req: &'a Request<'a>) -> Pending<'a> {
        match self.layers.split_first() {
            Some((first, rest)) => first
                .on_request(
                    req,
                    Next {
                        layers: rest,
                        inner: self.inner,
                    },
                )
                .passing(self.layers, req),
            None => self.inner,
        }
    }
}
