//! Building a [`Server`]: identity, entries, policies and limits, checked before anything
//! is served.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::{Server, ServerInner};
use crate::auth::{AuditEvent, AuditSink, Authorizer, AuthorizerSource};
use crate::conn::{ConnTable, ConnectionEvent, EventHook, Transport};
use crate::protocol::{
    Empty, Implementation, ListChangedCapability, ResourcesCapability, ServerCapabilities,
};
use crate::registry::{
    PromptDef, Registry, RegistryError, ResourceDef, ResourceTemplateDef, ToolDef,
};

/// Limits and timeouts. Every one has a safe default.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Entries per page of every list (default 1,000).
    pub page_size: usize,
    /// Bytes of JSON per page of every list (default 256 KiB): a page ends before the entry
    /// that would take it past this, so tools with large schemas page sooner (a page always
    /// holds at least one entry).
    pub page_bytes: usize,
    /// How long a parked elicitation (or sampling / roots request) waits (default 60 s).
    pub elicitation_timeout: Duration,
    /// How long a tool, resource or prompt handler may run (default 120 s).
    pub call_timeout: Duration,
    /// How long an authorizer may take to decide (default 10 s).
    pub authorizer_timeout: Duration,
    /// The log level of *routine* audit events — a read-only tool allowed and served, a
    /// read allowed and served — (default INFO, as every other audit event). An operator
    /// who wants them out of an INFO log sets DEBUG: those calls then skip formatting the
    /// line and digesting the arguments, while denials, asks, approvals and every call of
    /// a tool that is not read-only stay at INFO, and an [`AuditSink`](crate::auth::AuditSink)
    /// still receives every event.
    pub audit_routine_level: tracing::Level,
    /// Handlers running at once, across all connections (default 256). Beyond it a tool call
    /// gets an `isError` result `server_busy`.
    pub max_in_flight: usize,
    /// Requests running handlers at once on one connection (default 64), so one client
    /// cannot take every `max_in_flight` slot. Beyond it a tool call gets an `isError`
    /// result `connection_busy`, and other requests a -32603 error saying the same.
    pub max_requests_per_connection: usize,
    /// Requests to the client (elicitation, sampling, roots) waiting for an answer on one
    /// connection (default 16). Beyond it a new ask is refused at once: an approval is
    /// denied, and `Ctx::elicit` and friends fail with `ClientRequestError::TooManyPending`.
    pub max_pending_per_connection: usize,
    /// Connections whose state is kept (default 10 000); beyond it the oldest without a live
    /// transport is evicted first.
    pub max_connections: usize,
    /// Frames queued per connection before messages to a slow reader are dropped (default
    /// 1024).
    pub outbound_capacity: usize,
    /// The largest message accepted, in bytes (default 4 MiB).
    pub max_message_size: usize,
    /// How long a 2026-07-28 client may cache `server/discover` (default 1 hour).
    pub discover_ttl: Duration,
    /// How long a 2026-07-28 client may cache a list (default 60 s; `subscriptions/listen`
    /// tells it sooner when a list changes).
    pub list_ttl: Duration,
    /// How long a 2026-07-28 client may cache a resource read, unless the resource says
    /// otherwise (default 0: immediately stale).
    pub read_ttl: Duration,
    /// How long a sealed `requestState` stays valid (default 10 minutes: a human may be
    /// answering).
    pub request_state_ttl: Duration,
    /// `resources/subscribe` URIs one connection may hold (default 1024).
    pub max_subscriptions: usize,
    /// Values one `completion/complete` returns (default and maximum 100, the protocol's
    /// limit); `total` and `hasMore` tell the client about the rest.
    pub max_completion_values: usize,
    /// Open `subscriptions/listen` streams, across all clients (default 1024).
    pub max_listeners: usize,
    /// Used `requestState` nonces remembered until they expire (default 100 000).
    pub max_used_nonces: usize,
    /// How long running requests may finish when the server is asked to stop (SIGTERM on
    /// stdio) before the transport returns anyway (default 5 s).
    pub shutdown_grace: Duration,
    /// How long a task's record is kept after it was created (default 1 hour): `tasks/get`
    /// answers until then. A client's smaller `ttl` (2025-11-25) is honoured.
    pub task_ttl: Duration,
    /// How long a task may run (default 30 minutes, at most its ttl); then it ends `failed`.
    /// The call timeout does not apply to tasks.
    pub task_time_limit: Duration,
    /// How often a client is asked to poll a task (default 1 s).
    pub task_poll_interval: Duration,
    /// Tasks kept at once, running or finished (default 10 000); beyond it a new task is
    /// refused (an optional one runs as an ordinary call instead).
    pub max_tasks: usize,
    /// Tasks one owner keeps at once (default 100).
    pub max_tasks_per_owner: usize,
    /// The memory limit new work is admitted against, in bytes, compared with the process's
    /// resident set (default 0: the limit of the process's cgroup, compared with the
    /// cgroup's working set; none outside a limited cgroup). See [`crate::pressure`].
    pub memory_limit: usize,
    /// The share of the memory limit, in percent, from which new requests and sessions are
    /// refused with `memory_pressure` (default 90; at most 100; 0 turns the check off).
    pub memory_high_water: usize,
}

impl ServerConfig {
    /// What one page of a list holds.
    pub(crate) fn page_limit(&self) -> crate::registry::PageLimit {
        crate::registry::PageLimit {
            items: self.page_size,
            bytes: self.page_bytes,
        }
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            page_size: 1000,
            page_bytes: 256 * 1024,
            elicitation_timeout: Duration::from_secs(60),
            call_timeout: Duration::from_secs(120),
            authorizer_timeout: Duration::from_secs(10),
            audit_routine_level: tracing::Level::INFO,
            max_in_flight: 256,
            max_requests_per_connection: 64,
            max_pending_per_connection: 16,
            max_connections: 10_000,
            outbound_capacity: 1024,
            max_message_size: 4 * 1024 * 1024,
            discover_ttl: Duration::from_secs(3600),
            list_ttl: Duration::from_secs(60),
            read_ttl: Duration::ZERO,
            request_state_ttl: Duration::from_secs(600),
            max_subscriptions: 1024,
            max_completion_values: 100,
            max_listeners: 1024,
            max_used_nonces: 100_000,
            shutdown_grace: Duration::from_secs(5),
            task_ttl: Duration::from_secs(3600),
            task_time_limit: Duration::from_secs(1800),
            task_poll_interval: Duration::from_secs(1),
            max_tasks: 10_000,
            max_tasks_per_owner: 100,
            memory_limit: 0,
            memory_high_water: 90,
        }
    }
}

/// Why a server could not be built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BuildError {
    /// Sensitive tools are registered and no authorizer guards them.
    SensitiveToolsUnguarded(Vec<String>),
    /// An entry was refused by the registry.
    Registry(RegistryError),
    /// A limit was set to a value that cannot work.
    InvalidConfig {
        /// The option.
        option: &'static str,
        /// Why.
        reason: String,
    },
    /// A handler takes a `State<T>` the server was not given.
    MissingState {
        /// The handler: `tool "name"`, `resource "uri"`, `prompt "name"`.
        handler: String,
        /// The state's type.
        type_name: &'static str,
    },
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BuildError::SensitiveToolsUnguarded(names) => write!(
                f,
                "the server refuses to boot: {} sensitive tool(s) ({}) would run without an authorizer. \
                 Set one with ServerBuilder::authorizer (e.g. mcp::auth::ask_before_sensitive()), or opt out \
                 explicitly with mcp::auth::allow_all()",
                names.len(),
                names.join(", ")
            ),
            BuildError::Registry(e) => write!(f, "{e}"),
            BuildError::InvalidConfig { option, reason } => write!(f, "invalid {option}: {reason}"),
            BuildError::MissingState { handler, type_name } => write!(
                f,
                "{handler} takes State<{type_name}>, and the server has no state of that type: give it with ServerBuilder::state (server! {{ state: [..] }}) or ServerBuilder::state_with"
            ),
        }
    }
}

impl std::error::Error for BuildError {}

impl From<RegistryError> for BuildError {
    fn from(e: RegistryError) -> Self {
        BuildError::Registry(e)
    }
}

/// Builds a [`Server`].
///
/// ```
/// use mcp::{Server, registry::ToolDef};
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Add { a: i64, b: i64 }
/// let server = Server::builder("calc", "1.0.0")
///     .tool(ToolDef::from_fn("add", "Adds two integers.", |_ctx, x: Add| async move { x.a + x.b }))
///     .build()
///     .unwrap();
/// assert_eq!(server.name(), "calc");
/// ```
pub struct ServerBuilder {
    info: Implementation,
    instructions: Option<String>,
    tools: Vec<ToolDef>,
    resources: Vec<ResourceDef>,
    templates: Vec<ResourceTemplateDef>,
    prompts: Vec<PromptDef>,
    authorizer: Option<Arc<dyn Authorizer>>,
    authorizer_source: Option<AuthorizerSource>,
    read_authorizer: Option<Arc<dyn Authorizer>>,
    transport: Transport,
    config: ServerConfig,
    enable_tools: bool,
    enable_resources: bool,
    enable_prompts: bool,
    audit: Option<AuditSink>,
    layers: Vec<Arc<dyn crate::layers::Layer>>,
    on_event: Option<EventHook>,
    on_session_end: Option<crate::conn::SessionEndHook>,
    state_key: Option<Vec<u8>>,
    cluster: Option<crate::cluster::Cluster>,
    task_store: Option<Arc<dyn crate::tasks::TaskStore>>,
    enable_tasks: bool,
    states: crate::states::StateMap,
    /// States a start-up hook will add ([`ServerBuilder::state_with`]).
    promised: Vec<std::any::TypeId>,
    hooks: super::hooks::Hooks,
}

impl ServerBuilder {
    pub(crate) fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        ServerBuilder {
            info: Implementation::new(name, version),
            instructions: None,
            tools: Vec::new(),
            resources: Vec::new(),
            templates: Vec::new(),
            prompts: Vec::new(),
            authorizer: None,
            authorizer_source: None,
            read_authorizer: None,
            transport: Transport::Unknown,
            config: ServerConfig::default(),
            enable_tools: false,
            enable_resources: false,
            enable_prompts: false,
            audit: None,
            layers: Vec::new(),
            on_event: None,
            on_session_end: None,
            state_key: None,
            cluster: None,
            task_store: None,
            enable_tasks: false,
            states: crate::states::StateMap::default(),
            promised: Vec::new(),
            hooks: super::hooks::Hooks::default(),
        }
    }

    /// Registers the `#[tool]` methods of a value whose impl block is marked
    /// [`#[tools]`](crate::tools): each calls its method on the one shared value. A
    /// destructive or sensitive method needs an authorizer like any such tool.
    pub fn tools_from<T: crate::registry::ToolSet>(mut self, set: T) -> Self {
        self.tools.extend(Arc::new(set).tool_defs());
        self
    }

    /// Gives the server a piece of the application's state: a handler receives it as a
    /// `State<T>` parameter ([`State`](crate::extract::State)), a layer or an authorizer
    /// through [`Ctx::state`]. One value per type; give several types for several pieces
    /// (a pool, a client, the configuration). A second value of the same type replaces the
    /// first.
    ///
    /// [`Ctx::state`]: crate::Ctx::state
    pub fn state<T: Send + Sync + 'static>(self, value: T) -> Self {
        self.states.insert(Arc::new(value));
        self
    }

    /// State made at start-up by an async function that may fail: a database pool that
    /// connects and migrates, a client that fetches its configuration. It runs in
    /// [`Server::start`] (the generated `main` calls it before serving), in the order the
    /// hooks were added; its error stops the boot with a message naming the state's type.
    /// Handlers asking for `State<T>` pass `build()`'s check: the state is promised.
    pub fn state_with<T, F, Fut, E>(mut self, init: F) -> Self
    where
        T: Send + Sync + 'static,
        F: FnOnce() -> Fut + Send + 'static,
        Fut: std::future::Future<Output = Result<T, E>> + Send + 'static,
        E: std::fmt::Display,
    {
        self.promised.push(std::any::TypeId::of::<T>());
        self.hooks
            .start
            .get_mut()
            .push(Box::new(move |server: Server| {
                Box::pin(async move {
                    let value = init().await.map_err(|e| {
                        format!(
                            "the state {} could not be made: {e}",
                            std::any::type_name::<T>()
                        )
                    })?;
                    server.inner.states.insert(Arc::new(value));
                    Ok(())
                })
            }));
        self
    }

    /// A start-up hook: runs once in [`Server::start`], before the transport accepts
    /// anything (the generated `main` calls it). Its error stops the boot: the binary prints
    /// it and exits with status 1.
    pub fn on_start<F, Fut, E>(mut self, hook: F) -> Self
    where
        F: FnOnce(Server) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = Result<(), E>> + Send + 'static,
        E: std::fmt::Display,
    {
        self.hooks
            .start
            .get_mut()
            .push(Box::new(move |server: Server| {
                Box::pin(async move {
                    hook(server)
                        .await
                        .map_err(|e| format!("start-up failed: {e}"))
                })
            }));
        self
    }

    /// A shutdown hook: runs once in [`Server::finish`], after the transport stopped
    /// (stdin closed, SIGTERM or Ctrl-C) and the calls in flight ended; the last added runs
    /// first. Close pools, flush what is buffered.
    pub fn on_shutdown<F, Fut>(mut self, hook: F) -> Self
    where
        F: FnOnce(Server) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        self.hooks
            .stop
            .get_mut()
            .push(Box::new(move |server: Server| Box::pin(hook(server))));
        self
    }

    /// Sets a display title.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.info.title = Some(title.into());
        self
    }

    /// Sets a description of the server.
    pub fn description(mut self, d: impl Into<String>) -> Self {
        self.info.description = Some(d.into());
        self
    }

    /// Sets the website URL.
    pub fn website_url(mut self, url: impl Into<String>) -> Self {
        self.info.website_url = Some(url.into());
        self
    }

    /// Sets icons.
    pub fn icons(mut self, icons: Vec<crate::protocol::Icon>) -> Self {
        self.info.icons = Some(icons);
        self
    }

    /// Sets instructions for the model.
    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.instructions = Some(text.into());
        self
    }

    /// Adds a tool.
    pub fn tool(mut self, tool: ToolDef) -> Self {
        self.tools.push(tool);
        self
    }

    /// Adds tools.
    pub fn tools(mut self, tools: impl IntoIterator<Item = ToolDef>) -> Self {
        self.tools.extend(tools);
        self
    }

    /// Adds a fixed resource.
    pub fn resource(mut self, resource: ResourceDef) -> Self {
        self.resources.push(resource);
        self
    }

    /// Adds a resource template.
    pub fn template(mut self, template: ResourceTemplateDef) -> Self {
        self.templates.push(template);
        self
    }

    /// Adds a prompt.
    pub fn prompt(mut self, prompt: PromptDef) -> Self {
        self.prompts.push(prompt);
        self
    }

    /// Sets the tool-seam authorizer, chosen by a person ([`AuthorizerSource::Configured`]).
    pub fn authorizer(mut self, authorizer: Arc<dyn Authorizer>) -> Self {
        self.authorizer = Some(authorizer);
        self.authorizer_source
            .get_or_insert(AuthorizerSource::Configured);
        self
    }

    /// Sets a framework fallback authorizer ([`AuthorizerSource::Default`]): it guards tools,
    /// but does not satisfy the network boot guard.
    pub fn fallback_authorizer(mut self, authorizer: Arc<dyn Authorizer>) -> Self {
        self.authorizer = Some(authorizer);
        self.authorizer_source = Some(AuthorizerSource::Default);
        self
    }

    /// Overrides where the authorizer came from.
    pub fn authorizer_source(mut self, source: AuthorizerSource) -> Self {
        self.authorizer_source = Some(source);
        self
    }

    /// Adds a layer around every request (see [`crate::layers`]). Layers run in the order
    /// added, the first outermost, all after the authorizers.
    pub fn layer(mut self, layer: impl crate::layers::Layer) -> Self {
        self.layers.push(Arc::new(layer));
        self
    }

    /// Adds a layer already shared (say, a cache the caller keeps a handle on).
    pub fn layer_arc(mut self, layer: Arc<dyn crate::layers::Layer>) -> Self {
        self.layers.push(layer);
        self
    }

    /// Sets the read-seam authorizer.
    pub fn read_authorizer(mut self, authorizer: Arc<dyn Authorizer>) -> Self {
        self.read_authorizer = Some(authorizer);
        self
    }

    /// Declares the transport of connections that do not declare their own (in-process
    /// callers); transports declare their own when they attach.
    pub fn transport(mut self, transport: Transport) -> Self {
        self.transport = transport;
        self
    }

    /// Replaces all limits at once.
    pub fn config(mut self, config: ServerConfig) -> Self {
        self.config = config;
        self
    }

    /// The limits and timeouts set so far: what [`ServerBuilder::config`] replaces (the
    /// command line reads its defaults here).
    pub fn limits(&self) -> &ServerConfig {
        &self.config
    }

    /// Entries per list page.
    pub fn page_size(mut self, n: usize) -> Self {
        self.config.page_size = n;
        self
    }

    /// Bytes of JSON per list page (see [`ServerConfig::page_bytes`]).
    pub fn page_bytes(mut self, n: usize) -> Self {
        self.config.page_bytes = n;
        self
    }

    /// How long elicitations and other client requests wait.
    pub fn elicitation_timeout(mut self, d: Duration) -> Self {
        self.config.elicitation_timeout = d;
        self
    }

    /// How long a handler may run.
    pub fn call_timeout(mut self, d: Duration) -> Self {
        self.config.call_timeout = d;
        self
    }

    /// How long an authorizer may take to decide before the request is denied with
    /// `authorizer_timeout`.
    pub fn authorizer_timeout(mut self, d: Duration) -> Self {
        self.config.authorizer_timeout = d;
        self
    }

    /// The log level of routine audit events (see [`ServerConfig::audit_routine_level`]).
    pub fn audit_routine_level(mut self, level: tracing::Level) -> Self {
        self.config.audit_routine_level = level;
        self
    }

    /// How many handlers may run at once.
    pub fn max_in_flight(mut self, n: usize) -> Self {
        self.config.max_in_flight = n;
        self
    }

    /// The memory limit new work is admitted against, in bytes (0: the cgroup's).
    pub fn memory_limit(mut self, bytes: usize) -> Self {
        self.config.memory_limit = bytes;
        self
    }

    /// The share of the memory limit, in percent, from which new work is refused (0: off).
    pub fn memory_high_water(mut self, percent: usize) -> Self {
        self.config.memory_high_water = percent;
        self
    }

    /// How many requests may run handlers at once on one connection.
    pub fn max_requests_per_connection(mut self, n: usize) -> Self {
        self.config.max_requests_per_connection = n;
        self
    }

    /// How many requests to the client may wait for an answer on one connection.
    pub fn max_pending_per_connection(mut self, n: usize) -> Self {
        self.config.max_pending_per_connection = n;
        self
    }

    /// How many connections' state is kept.
    pub fn max_connections(mut self, n: usize) -> Self {
        self.config.max_connections = n;
        self
    }

    /// The largest message accepted, in bytes.
    pub fn max_message_size(mut self, n: usize) -> Self {
        self.config.max_message_size = n;
        self
    }

    /// The key that seals `requestState` on the 2026-07-28 era (at least 32 bytes). By
    /// default a random key is drawn per process, which is right for one process; replicas
    /// behind a load balancer must share one key, or a retry that lands on another replica
    /// is refused.
    pub fn state_key(mut self, key: impl Into<Vec<u8>>) -> Self {
        self.state_key = Some(key.into());
        self
    }

    /// Where task records live (default: the cluster's task store when a cluster is set,
    /// otherwise in memory). See [`crate::tasks`].
    pub fn task_store(mut self, store: Arc<dyn crate::tasks::TaskStore>) -> Self {
        self.task_store = Some(store);
        self
    }

    /// Offers tasks even though no tool registered now supports them (tools that do may be
    /// registered at run time). A tool with task support offers them by itself.
    pub fn enable_tasks(mut self) -> Self {
        self.enable_tasks = true;
        self
    }

    /// Makes this server one replica of several behind a load balancer: sessions,
    /// resumable events, used `requestState` nonces and tasks live in the cluster's shared
    /// stores (see [`crate::cluster`]). Give every replica the same
    /// [`state_key`](Self::state_key) too.
    pub fn cluster(mut self, cluster: crate::cluster::Cluster) -> Self {
        self.cluster = Some(cluster);
        self
    }

    /// How many values one completion returns (at most 100, the protocol's limit).
    pub fn max_completion_values(mut self, n: usize) -> Self {
        self.config.max_completion_values = n;
        self
    }

    /// How long a sealed `requestState` stays valid.
    pub fn request_state_ttl(mut self, d: Duration) -> Self {
        self.config.request_state_ttl = d;
        self
    }

    /// How long a task's record is kept after it was created.
    pub fn task_ttl(mut self, d: Duration) -> Self {
        self.config.task_ttl = d;
        self
    }

    /// How long a task may run before it ends `failed`.
    pub fn task_time_limit(mut self, d: Duration) -> Self {
        self.config.task_time_limit = d;
        self
    }

    /// How often clients are asked to poll a task.
    pub fn task_poll_interval(mut self, d: Duration) -> Self {
        self.config.task_poll_interval = d;
        self
    }

    /// How many tasks are kept at once, and how many per owner.
    pub fn max_tasks(mut self, total: usize, per_owner: usize) -> Self {
        self.config.max_tasks = total;
        self.config.max_tasks_per_owner = per_owner;
        self
    }

    /// How long running requests may finish when the server is asked to stop.
    pub fn shutdown_grace(mut self, d: Duration) -> Self {
        self.config.shutdown_grace = d;
        self
    }

    /// Advertises tools even if none are registered yet (for servers that register later).
    pub fn enable_tools(mut self) -> Self {
        self.enable_tools = true;
        self
    }

    /// Advertises resources even if none are registered yet.
    pub fn enable_resources(mut self) -> Self {
        self.enable_resources = true;
        self
    }

    /// Advertises prompts even if none are registered yet.
    pub fn enable_prompts(mut self) -> Self {
        self.enable_prompts = true;
        self
    }

    /// Receives every authorization decision.
    pub fn audit(mut self, sink: impl Fn(&AuditEvent) + Send + Sync + 'static) -> Self {
        self.audit = Some(Arc::new(sink));
        self
    }

    /// Receives connection-table events (evictions).
    pub fn on_connection_event(
        mut self,
        hook: impl Fn(&ConnectionEvent) + Send + Sync + 'static,
    ) -> Self {
        self.on_event = Some(Arc::new(hook));
        self
    }

    /// Called once when a handshake-era session ends (the client closed stdin or the HTTP
    /// session, it was replaced, or evicted), with what its handlers kept
    /// ([`Ctx::session_state`](crate::Ctx::session_state)): release per-session resources,
    /// record the session. It runs where the session's last reference is dropped, so it
    /// must not block; spawn async work onto the runtime.
    pub fn on_session_end(
        mut self,
        hook: impl Fn(&super::SessionEnd<'_>) + Send + Sync + 'static,
    ) -> Self {
        self.on_session_end = Some(Arc::new(hook));
        self
    }

    /// Checks everything and builds the server. Refuses when a sensitive tool has no
    /// authorizer, when an entry is invalid or duplicated, or when a limit is zero.
    pub fn build(self) -> Result<Server, BuildError> {
        for (option, value) in [
            ("max_connections", self.config.max_connections),
            ("max_in_flight", self.config.max_in_flight),
            (
                "max_requests_per_connection",
                self.config.max_requests_per_connection,
            ),
            (
                "max_pending_per_connection",
                self.config.max_pending_per_connection,
            ),
            ("page_size", self.config.page_size),
            ("page_bytes", self.config.page_bytes),
            ("outbound_capacity", self.config.outbound_capacity),
            ("max_message_size", self.config.max_message_size),
            ("max_listeners", self.config.max_listeners),
            ("max_completion_values", self.config.max_completion_values),
            ("max_subscriptions", self.config.max_subscriptions),
            ("max_used_nonces", self.config.max_used_nonces),
        ] {
            if value == 0 {
                return Err(BuildError::InvalidConfig {
                    option,
                    reason: "must be at least 1".into(),
                });
            }
        }
        if self.config.max_completion_values > super::completion::MAX_VALUES {
            return Err(BuildError::InvalidConfig {
                option: "max_completion_values",
                reason: format!(
                    "the protocol allows at most {} values per completion",
                    super::completion::MAX_VALUES
                ),
            });
        }
        if self.config.memory_high_water > 100 {
            return Err(BuildError::InvalidConfig {
                option: "memory_high_water",
                reason: "a share of the memory limit, in percent: at most 100".into(),
            });
        }
        if self.authorizer.is_none() {
            let unguarded: Vec<String> = self
                .tools
                .iter()
                .filter(|t| t.is_sensitive())
                .map(|t| t.name().to_owned())
                .collect();
            if !unguarded.is_empty() {
                return Err(BuildError::SensitiveToolsUnguarded(unguarded));
            }
        }
        let capabilities = ServerCapabilities {
            experimental: None,
            logging: Some(Empty {}),
            completions: (!self.prompts.is_empty()
                || !self.templates.is_empty()
                || !self.tools.is_empty()
                || self.enable_prompts
                || self.enable_resources)
                .then_some(Empty {}),
            prompts: (self.enable_prompts || !self.prompts.is_empty()).then_some(
                ListChangedCapability {
                    list_changed: Some(true),
                },
            ),
            resources: (self.enable_resources
                || !self.resources.is_empty()
                || !self.templates.is_empty())
            .then_some(ResourcesCapability {
                subscribe: Some(true),
                list_changed: Some(true),
            }),
            tools: (self.enable_tools || !self.tools.is_empty()).then_some(ListChangedCapability {
                list_changed: Some(true),
            }),
            tasks: (self.enable_tasks
                || self
                    .tools
                    .iter()
                    .any(|t| t.task_support_mode() != crate::tasks::TaskSupport::Forbidden))
            .then(|| {
                serde_json::json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}})
            }),
            extensions: None,
        };
        let state_key = match self.state_key {
            Some(key) if key.len() < 32 => {
                return Err(BuildError::InvalidConfig {
                    option: "state_key",
                    reason: format!(
                        "{} bytes is too short; use at least 32 random bytes",
                        key.len()
                    ),
                });
            }
            Some(key) => key,
            None => {
                let mut key = vec![0u8; 32];
                getrandom::fill(&mut key).map_err(|e| BuildError::InvalidConfig {
                    option: "state_key",
                    reason: format!("no OS random source to draw a key from: {e}"),
                })?;
                key
            }
        };
        let needs = self
            .tools
            .iter()
            .flat_map(|t| {
                t.needs
                    .iter()
                    .map(move |n| (format!("tool {:?}", t.name()), n))
            })
            .chain(self.resources.iter().flat_map(|r| {
                r.needs
                    .iter()
                    .map(move |n| (format!("resource {:?}", r.resource().uri), n))
            }))
            .chain(self.templates.iter().flat_map(|r| {
                r.needs.iter().map(move |n| {
                    (
                        format!("resource template {:?}", r.template().uri_template),
                        n,
                    )
                })
            }))
            .chain(self.prompts.iter().flat_map(|p| {
                p.needs
                    .iter()
                    .map(move |n| (format!("prompt {:?}", p.prompt().name), n))
            }));
        for (handler, need) in needs {
            if !self.states.contains(need.id) && !self.promised.contains(&need.id) {
                return Err(BuildError::MissingState {
                    handler,
                    type_name: need.type_name,
                });
            }
        }
        let registry = Registry::new();
        registry.register_all(self.tools, self.resources, self.templates, self.prompts)?;
        let inner = Arc::new(ServerInner {
            instructions: self.instructions,
            capabilities,
            registry,
            authorizer: self.authorizer,
            authorizer_source: self.authorizer_source.unwrap_or_default(),
            read_authorizer: self.read_authorizer,
            conns: ConnTable::new(
                self.config.max_connections,
                self.config.max_pending_per_connection,
                self.transport,
                self.on_event,
                self.on_session_end,
            ),
            in_flight: super::InFlight::new(self.config.max_in_flight),
            admission: crate::pressure::Admission::new(
                self.config.memory_limit,
                self.config.memory_high_water,
            ),
            sealer: match &self.cluster {
                Some(cluster) => crate::elicit::state::StateSealer::with_store(
                    state_key,
                    self.config.request_state_ttl,
                    std::sync::Arc::clone(cluster.nonces()),
                ),
                None => crate::elicit::state::StateSealer::new(
                    state_key,
                    self.config.request_state_ttl,
                    self.config.max_used_nonces,
                ),
            },
            tasks: crate::tasks::TaskEngine::new(
                self.task_store
                    .or_else(|| self.cluster.as_ref().and_then(|c| c.tasks().cloned()))
                    .unwrap_or_else(|| Arc::new(crate::tasks::MemoryTaskStore::new())),
                self.cluster.as_ref().map_or_else(
                    || format!("process-{}", crate::util::random_token(12)),
                    |c| c.replica_id().to_owned(),
                ),
            ),
            cluster: self.cluster,
            bus_handler: std::sync::OnceLock::new(),
            server_info_json: serde_json::to_string(&self.info).unwrap_or_else(|_| "{}".into()),
            info: self.info,
            listeners: parking_lot::Mutex::new(Vec::new()),
            shutdown: tokio_util::sync::CancellationToken::new(),
            config: self.config,
            audit: self.audit,
            layers: self.layers,
            states: Arc::new(self.states),
            hooks: self.hooks,
        });
        let weak = Arc::downgrade(&inner);
        inner.registry.set_notifier(Arc::new(move |kind| {
            if let Some(inner) = weak.upgrade() {
                Server { inner }.list_changed(kind);
            }
        }));
        if let Some(cluster) = &inner.cluster {
            let weak = Arc::downgrade(&inner);
            let handler: crate::cluster::BusHandler = Arc::new(move |event| {
                if let Some(inner) = weak.upgrade() {
                    Server { inner }.on_bus(event);
                }
            });
            cluster.on_message(&handler);
            let _ = inner.bus_handler.set(handler);
        }
        Ok(Server { inner })
    }
}
