//! Third-party sign-in through URL-mode elicitation, with the check the specification
//! requires and no other SDK ships: the person who opens the URL is the person who caused
//! it (the `oauth` feature).
//!
//! A tool that calls a third party's API on the user's behalf asks [`Connect::token`] for
//! that user's token. When the server holds none, the user is sent a URL (an
//! `elicitation/create` with `mode: "url"` on 2025-11-25, a URL request among the
//! `inputRequests` on 2026-07-28) pointing at this server's own connect route, under an
//! opaque, single-use, expiring reference. When the browser opens it, the route finds out
//! who opened it ([`BrowserIdentity`]: a cookie of the server's own sign-in, or your
//! callback) and goes on to the third party only if that is the principal whose call made
//! the link; anyone else gets a page saying why, and the link is spent. The third party's
//! tokens are exchanged and kept server-side ([`TokenStore`]), never sent to the client or
//! the model, and no credential or personal data is ever in a URL.
//!
//! On 2025-11-25 the call waits for the flow and the client gets
//! `notifications/elicitation/complete`; a client that declared `elicitation.url` but
//! whose request cannot carry a question gets -32042 with the URL (it retries once the
//! user is done). On 2026-07-28 the call ends input-required, and the client's retry finds
//! the token. A client that did not declare `elicitation.url` is never sent a URL.
//!
//! ```no_run
//! use mcp::connect::{Connect, MemoryTokenStore, OAuthProvider, SignedCookie};
//! use mcp::prelude::*;
//! use mcp::extract::State;
//!
//! /// Lists the user's repositories on the code host.
//! #[tool(read_only)]
//! async fn repositories(ctx: Ctx, connect: State<Connect>) -> Result<String, mcp::connect::ConnectError> {
//!     let token = connect.token(&ctx, "codehost").await?;
//!     Ok(format!("would call the API with a token of {} bytes", token.access_token().len()))
//! }
//!
//! # fn setup() -> Connect {
//! let connect = Connect::builder("https://mcp.example.com")
//!     .provider(
//!         "codehost",
//!         OAuthProvider::new(
//!             "https://codehost.example/oauth/authorize",
//!             "https://codehost.example/oauth/token",
//!             "client-id",
//!         )
//!         .client_secret("client-secret")
//!         .scopes(["repo:read"]),
//!     )
//!     .identity(SignedCookie::new("session", b"the key your sign-in pages sign cookies with"))
//!     .tokens(MemoryTokenStore::new())
//!     .build();
//! # connect }
//! ```
//! Give the same `Connect` to the server (`ServerBuilder::state`) and to the HTTP
//! transport (`HttpConfig::connect`), which serves its routes under `/connect`.
//!
//! # Expired tokens
//!
//! A stored access token that has expired (or expires within 30 s) is renewed with its
//! refresh token at the provider's token endpoint ([`Provider::refresh`]) before
//! [`Connect::token`] returns it, and the new set is stored (the old refresh token kept if
//! the provider does not rotate it); concurrent calls of one user wait for one refresh.
//! The user is sent through the browser again only when there is no refresh token or the
//! provider rejects it (`invalid_grant`: the stored set is forgotten). Any other failure
//! (the provider unreachable or failing) is [`ConnectError::Refresh`]: an outage does not
//! make users connect again.
//!
//! # Replicas
//!
//! Behind a load balancer without sticky sessions, the browser's requests (the link, the
//! third party's callback) may land on any replica. With
//! [`ConnectBuilder::cluster`], the pending links live in the cluster's shared
//! [`FlowStore`] and the tokens in its shared [`TokenStore`] (Redis for
//! `mcp::cluster::redis`): a link opens once and a callback is accepted once across all
//! replicas, and a flow that ends on another replica than the one whose call made the
//! link is announced to that replica over the cluster's bus, where the waiting call goes
//! on and its client gets `notifications/elicitation/complete`. If that replica is gone,
//! the tokens are stored all the same and the client's retry finds them.
//!
//! ```no_run
//! # use mcp::connect::{Connect, SignedCookie};
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let cluster = mcp::cluster::redis::connect("redis://10.0.0.5:6379", "mcp").await?;
//! let connect = Connect::builder("https://mcp.example.com")
//!     .identity(SignedCookie::new("session", b"the key your sign-in pages sign cookies with"))
//!     .cluster(&cluster)
//!     .build();
//! let server = mcp::Server::builder("files", "1.0.0")
//!     .state(connect.clone())
//!     .state_key(std::fs::read("/run/secrets/mcp-state-key")?)
//!     .cluster(cluster)
//!     .build()?;
//! # let _ = server; Ok(()) }
//! ```

mod flow;
mod identity;
mod pages;
mod provider;
mod refresh;
mod routes;
mod store;

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

pub use flow::{FlowLimits, FlowStore, MemoryFlowStore, PendingFlow};
pub use identity::{BrowserIdentity, BrowserUser, SignedCookie, identity_fn};
pub(crate) use provider::with_query;
pub use provider::{OAuthProvider, Provider, RefreshError, TokenSet};
pub use store::{MemoryTokenStore, TokenStore};

use crate::cluster::Cluster;
use crate::context::{Ctx, UrlConsent};
use crate::elicit::ClientRequestError;
use crate::protocol::{CallToolResult, ElicitUrlParams};
use crate::registry::{IntoToolFailure, ProtocolError};

/// How long a link waits to be opened, unless [`ConnectBuilder::link_ttl`] says otherwise.
const LINK_TTL: Duration = Duration::from_secs(10 * 60);

/// Third-party sign-in for tools: see the [module](self). Cheap to clone.
#[derive(Clone)]
pub struct Connect {
    inner: Arc<Inner>,
}

struct Inner {
    base_url: String,
    path: String,
    identity: Arc<dyn BrowserIdentity>,
    providers: HashMap<String, Arc<dyn Provider>>,
    tokens: Arc<dyn TokenStore>,
    flows: flow::Flows,
    refreshes: refresh::Refreshes,
    link_ttl: Duration,
    wait: Option<Duration>,
    answer_url_required: bool,
}

impl fmt::Debug for Connect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connect")
            .field("base_url", &self.inner.base_url)
            .field("path", &self.inner.path)
            .field(
                "providers",
                &self.inner.providers.keys().collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

/// Builds a [`Connect`].
pub struct ConnectBuilder {
    base_url: String,
    path: String,
    identity: Option<Arc<dyn BrowserIdentity>>,
    providers: HashMap<String, Arc<dyn Provider>>,
    tokens: Option<Arc<dyn TokenStore>>,
    flows: Option<Arc<dyn FlowStore>>,
    cluster: Option<Cluster>,
    link_ttl: Duration,
    wait: Option<Duration>,
    max_flows: usize,
    answer_url_required: bool,
}

impl Connect {
    /// A builder; `base_url` is this server's public origin as browsers reach it (e.g.
    /// `https://mcp.example.com`), which the links and the OAuth redirect URI start with.
    pub fn builder(base_url: impl Into<String>) -> ConnectBuilder {
        ConnectBuilder {
            base_url: base_url.into().trim_end_matches('/').to_owned(),
            path: "/connect".to_owned(),
            identity: None,
            providers: HashMap::new(),
            tokens: None,
            flows: None,
            cluster: None,
            link_ttl: LINK_TTL,
            wait: None,
            max_flows: 10_000,
            answer_url_required: false,
        }
    }

    /// The token `provider` issued to the principal of this call, asking the user to
    /// connect their account first when the server holds none (see the [module](self)).
    pub async fn token(&self, ctx: &Ctx, provider: &str) -> Result<TokenSet, ConnectError> {
        let Some(principal) = ctx.principal() else {
            return Err(ConnectError::NoPrincipal);
        };
        if !self.inner.providers.contains_key(provider) {
            return Err(ConnectError::UnknownProvider(provider.to_owned()));
        }
        let owner = BrowserUser::of(principal);
        if let Some(tokens) = self.usable(&owner, provider).await? {
            return Ok(tokens);
        }
        let id = crate::util::random_token(24);
        let url = format!("{}{}/{id}", self.inner.base_url, self.inner.path);
        let message = format!(
            "Connect your {provider} account: open the page to sign in there. Nothing you enter passes through this chat."
        );
        let stateless = ctx.caller().stateless.is_some();
        if !stateless && (self.inner.answer_url_required || !ctx.can_elicit_url()) {
            if ctx
                .client_capabilities()
                .is_some_and(|c| c.can_elicit_url())
            {
                // The client takes URLs but this request cannot carry a question: it gets
                // the URL in a -32042 error, and retries once the user is done.
                self.inner
                    .flows
                    .open(&id, owner, provider, None, self.inner.link_ttl)
                    .await?;
                return Err(ConnectError::UrlRequired(
                    ProtocolError::url_elicitation_required(
                        format!("connect your {provider} account first"),
                        vec![ElicitUrlParams::new(message, url, Some(id))],
                    ),
                ));
            }
            return Err(ConnectError::NotSupported);
        }
        let completion = ctx.elicitation_completion(&id);
        let done = self
            .inner
            .flows
            .open(
                &id,
                owner.clone(),
                provider,
                completion,
                self.inner.link_ttl,
            )
            .await?;
        // The same key every round: a 2026-07-28 retry finds the earlier answer.
        let consent = ctx
            .elicit_url(&message, &url, &id)
            .key(format!("connect-{provider}"))
            .await;
        let consent = match consent {
            Ok(c) => c,
            Err(e) => {
                self.inner.flows.forget(&id).await;
                return Err(match e {
                    ClientRequestError::NotSupported => ConnectError::NotSupported,
                    other => ConnectError::Client(other),
                });
            }
        };
        if consent != UrlConsent::Accepted {
            self.inner.flows.forget(&id).await;
            return Err(ConnectError::Declined);
        }
        if stateless {
            // A retry: the user went through the flow the earlier round's link started
            // (this round's link was never shown).
            self.inner.flows.forget(&id).await;
            return match self.usable(&owner, provider).await? {
                Some(tokens) => Ok(tokens),
                None => Err(ConnectError::NotFinished),
            };
        }
        // Within the call's own time limit, so the model hears why rather than a timeout.
        let wait = self
            .inner
            .wait
            .unwrap_or(self.inner.link_ttl)
            .min(ctx.call_timeout().saturating_sub(Duration::from_secs(2)));
        // `Some`: the flow ended (with tokens or not); `None`: it is still going.
        let ended = tokio::select! {
            ended = done => Some(ended.unwrap_or(false)),
            _ = tokio::time::sleep(wait) => None,
            _ = ctx.cancelled() => None,
        };
        self.inner.flows.forget(&id).await;
        match (ended, self.usable(&owner, provider).await?) {
            (_, Some(tokens)) => Ok(tokens),
            (Some(_), None) => Err(ConnectError::Refused),
            (None, None) => Err(ConnectError::NotFinished),
        }
    }

    /// Forgets the principal's tokens for `provider` (they disconnect): the next
    /// [`token`](Self::token) asks again. Returns whether there were any.
    pub async fn disconnect(&self, ctx: &Ctx, provider: &str) -> Result<bool, ConnectError> {
        let Some(principal) = ctx.principal() else {
            return Err(ConnectError::NoPrincipal);
        };
        self.inner
            .tokens
            .remove(&BrowserUser::of(principal).key(), provider)
            .await
            .map_err(|e| ConnectError::Store(e.to_string()))
    }

    /// The owner's tokens for `provider` if they can be used: unexpired, or refreshed.
    async fn usable(
        &self,
        owner: &BrowserUser,
        provider: &str,
    ) -> Result<Option<TokenSet>, ConnectError> {
        let Some(third_party) = self.inner.providers.get(provider) else {
            return Err(ConnectError::UnknownProvider(provider.to_owned()));
        };
        self.inner
            .refreshes
            .usable(
                self.inner.tokens.as_ref(),
                &owner.key(),
                provider,
                third_party.as_ref(),
            )
            .await
    }

    /// The routes browsers open (`{path}/{reference}` and `{path}/callback`), for the HTTP
    /// transport (`HttpConfig::connect` mounts them) or a router of your own.
    pub fn routes(&self) -> axum::Router {
        routes::routes(self.clone())
    }

    /// The path the routes are served under (default `/connect`).
    pub fn path(&self) -> &str {
        &self.inner.path
    }

    fn redirect_uri(&self) -> String {
        format!("{}{}/callback", self.inner.base_url, self.inner.path)
    }
}

impl ConnectBuilder {
    /// A third party users connect to, under `name` (what tools ask [`Connect::token`]
    /// for).
    pub fn provider(mut self, name: impl Into<String>, provider: impl Provider) -> Self {
        self.providers.insert(name.into(), Arc::new(provider));
        self
    }

    /// How the connect route learns who opened a link (required).
    pub fn identity(mut self, identity: impl BrowserIdentity) -> Self {
        self.identity = Some(Arc::new(identity));
        self
    }

    /// Where the third parties' tokens are kept (default: the [`cluster`](Self::cluster)'s
    /// shared store, else in memory, lost on restart).
    pub fn tokens(mut self, store: impl TokenStore) -> Self {
        self.tokens = Some(Arc::new(store));
        self
    }

    /// The store, shared.
    pub fn token_store(mut self, store: Arc<dyn TokenStore>) -> Self {
        self.tokens = Some(store);
        self
    }

    /// Where pending links are recorded (default: the [`cluster`](Self::cluster)'s shared
    /// store, else in memory).
    pub fn flows(mut self, store: impl FlowStore) -> Self {
        self.flows = Some(Arc::new(store));
        self
    }

    /// The store of pending links, shared.
    pub fn flow_store(mut self, store: Arc<dyn FlowStore>) -> Self {
        self.flows = Some(store);
        self
    }

    /// Runs as one replica of several behind a load balancer: pending links and tokens go
    /// to the cluster's shared stores (unless [`flows`](Self::flows) or
    /// [`tokens`](Self::tokens) say otherwise), so the browser may open a link and come
    /// back from the third party on any replica; a flow that ends on another replica
    /// reaches the waiting call (and its client's `notifications/elicitation/complete`)
    /// over the cluster's bus. Give the server the same `Cluster`
    /// (`ServerBuilder::cluster`), which starts its bus.
    pub fn cluster(mut self, cluster: &Cluster) -> Self {
        self.cluster = Some(cluster.clone());
        self
    }

    /// The path the routes are served under (default `/connect`).
    pub fn path(mut self, path: impl Into<String>) -> Self {
        let path = path.into();
        self.path = format!("/{}", path.trim_matches('/'));
        self
    }

    /// How long a link may wait to be opened and its flow to finish (default 10 minutes).
    pub fn link_ttl(mut self, ttl: Duration) -> Self {
        self.link_ttl = ttl;
        self
    }

    /// How long a 2025-11-25 call waits for the user to finish (default: the link's ttl),
    /// within the call timeout either way (a sign-in slower than that is better served by
    /// [`answer_url_required`](Self::answer_url_required): nothing waits).
    pub fn wait(mut self, wait: Duration) -> Self {
        self.wait = Some(wait);
        self
    }

    /// On 2025-11-25, answer a call that needs a connection with -32042 and the URL at once
    /// (the client shows it and retries; nothing is held open meanwhile) instead of asking
    /// with `elicitation/create` and waiting. Calls whose request cannot carry a question
    /// get -32042 either way.
    pub fn answer_url_required(mut self, on: bool) -> Self {
        self.answer_url_required = on;
        self
    }

    /// How many links may be pending at once, across users (default 10 000; in a shared
    /// store, across replicas); each user has at most 8. Beyond it a call is refused
    /// rather than memory growing.
    pub fn max_pending(mut self, n: usize) -> Self {
        self.max_flows = n.max(1);
        self
    }

    /// The `Connect`.
    ///
    /// # Panics
    /// Without [`identity`](Self::identity): a connect route that cannot tell who opened
    /// a link would hand one user's account to another.
    pub fn build(self) -> Connect {
        let identity = self.identity.expect(
            "Connect needs a BrowserIdentity: how the connect route learns who opened a link",
        );
        let cluster = self.cluster;
        let shared = cluster.as_ref().and_then(shared_stores);
        let flows = self.flows.or_else(|| shared.as_ref().map(|s| s.0.clone()));
        let tokens = self.tokens.or_else(|| shared.map(|s| s.1));
        if cluster.is_some() && (flows.is_none() || tokens.is_none()) {
            tracing::warn!(target: "mcp::connect", "this cluster's backend keeps no connect records (a custom backend: give the builder `flows` and `tokens`): links and tokens stay on the replica that made them");
        }
        Connect {
            inner: Arc::new(Inner {
                base_url: self.base_url,
                path: self.path,
                identity,
                providers: self.providers,
                tokens: tokens.unwrap_or_else(|| Arc::new(MemoryTokenStore::new())),
                flows: flow::Flows::new(
                    flows.unwrap_or_else(|| Arc::new(MemoryFlowStore::new())),
                    self.max_flows,
                    cluster,
                ),
                refreshes: refresh::Refreshes::default(),
                link_ttl: self.link_ttl,
                wait: self.wait,
                answer_url_required: self.answer_url_required,
            }),
        }
    }
}

/// Why a tool could not have a third party's token. Returned from a tool, it becomes the
/// call's failure: -32042 for [`UrlRequired`](Self::UrlRequired), an `isError` result
/// saying why otherwise. (It is not `Display`, so that the -32042 survives `?`; see
/// [`message`](Self::message).)
#[derive(Debug)]
pub enum ConnectError {
    /// The call has no verified principal: a link cannot be bound to anyone.
    NoPrincipal,
    /// No provider has that name.
    UnknownProvider(String),
    /// The client cannot be sent a URL (it did not declare `elicitation.url`).
    NotSupported,
    /// The client must show the URL and retry (-32042, 2025-11-25).
    UrlRequired(ProtocolError),
    /// The user declined (or dismissed) connecting.
    Declined,
    /// The flow did not finish in time (or, on 2026-07-28, before the retry).
    NotFinished,
    /// The flow ended without tokens (the third party refused, or the link was opened by
    /// someone else).
    Refused,
    /// Too many links are pending.
    Busy,
    /// Asking the client failed.
    Client(ClientRequestError),
    /// The token store or the store of pending links failed.
    Store(String),
    /// The stored access token expired and could not be refreshed for a reason other than
    /// the third party rejecting the refresh token (it was unreachable, or answered with
    /// an error): the user is not sent to connect again for an outage.
    Refresh(String),
}

impl ConnectError {
    /// What went wrong, in words for the model and the log.
    pub fn message(&self) -> String {
        match self {
            ConnectError::NoPrincipal => "connecting an account needs a signed-in user (the request carried no verified principal)".to_owned(),
            ConnectError::UnknownProvider(p) => format!("no provider named {p:?}"),
            ConnectError::NotSupported => "the client cannot open a sign-in page (it did not declare URL-mode elicitation)".to_owned(),
            ConnectError::UrlRequired(e) => e.0.message.to_string(),
            ConnectError::Declined => "the user declined to connect the account".to_owned(),
            ConnectError::NotFinished => "the sign-in was not finished; try again once it is".to_owned(),
            ConnectError::Refused => "the sign-in did not complete".to_owned(),
            ConnectError::Busy => "too many sign-ins are pending; try again in a few minutes".to_owned(),
            ConnectError::Client(e) => format!("could not ask the user: {e}"),
            ConnectError::Store(e) => format!("the server's store failed: {e}"),
            ConnectError::Refresh(e) => format!("could not renew the access to the service: {e}"),
        }
    }
}

impl IntoToolFailure for ConnectError {
    fn into_failure(self) -> CallToolResult {
        match self {
            ConnectError::UrlRequired(e) => e.into_failure(),
            other => CallToolResult::error(other.message()),
        }
    }
}

/// The stores of pending links and of users' third-party tokens that the replicas of
/// `cluster` share, on its backend (the in-memory one or Redis); `None` for a backend
/// that keeps none (a custom one: give [`ConnectBuilder::flows`] and
/// [`ConnectBuilder::tokens`] yours).
pub fn shared_stores(cluster: &Cluster) -> Option<(Arc<dyn FlowStore>, Arc<dyn TokenStore>)> {
    #[cfg(feature = "redis")]
    if let Some(redis) = cluster.backend::<crate::cluster::redis::RedisBackend>() {
        return Some((redis.clone(), redis));
    }
    let memory = cluster.backend::<crate::cluster::memory::MemoryBackend>()?;
    Some((
        memory.shared::<MemoryFlowStore>(),
        memory.shared::<MemoryTokenStore>(),
    ))
}
