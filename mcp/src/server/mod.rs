//! The transport-agnostic server: it takes decoded JSON-RPC messages attributed to a
//! connection, answers them (or parks them while the client is asked something), and pushes
//! notifications to the connections they concern and to no one else.
//!
//! A transport [`connect`](Server::connect)s each client with an [`Outbound`] queue and hands
//! every incoming message to the [`Connection`]; the reply comes back from
//! [`Connection::handle`] and everything else (progress, logs, elicitation requests,
//! list_changed) arrives on the queue. Requests run concurrently: one slow tool never delays
//! another request.

pub(crate) mod batch;
mod builder;
mod compat;
pub(crate) mod completion;
mod dispatch;
mod hooks;
mod layered;
mod lifecycle;
mod prompts;
mod resources;
mod stateless;
mod tasks;
mod tools;

use std::fmt;
use std::sync::Arc;

pub(crate) use crate::conn::ConnState;
pub use crate::conn::{
    ConnId, ConnectionEvent, ConnectionStats, HttpHeaders, Outbound, OutboundReceiver, SessionEnd,
    Transport, UnknownTransport,
};
pub use crate::protocol::Reply;
pub use builder::{BuildError, ServerBuilder, ServerConfig};

use crate::auth::{AuditSink, Authorizer, AuthorizerSource, Principal};
use crate::conn::ConnTable;
use crate::context::host::HostFuture;
use crate::context::{Ctx, Host};
use crate::protocol::jsonrpc::{Incoming, decode, encode_error, encode_notification};
use crate::protocol::{
    ErrorObject, Implementation, Message, ResourceUpdatedParams, ServerCapabilities, methods,
};
use crate::registry::{ListKind, Registry};

/// A running MCP server. Cheap to clone; every clone is the same server.
#[derive(Clone)]
pub struct Server {
    inner: Arc<ServerInner>,
}

pub(crate) struct ServerInner {
    info: Implementation,
    instructions: Option<String>,
    capabilities: ServerCapabilities,
    registry: Registry,
    authorizer: Option<Arc<dyn Authorizer>>,
    authorizer_source: AuthorizerSource,
    read_authorizer: Option<Arc<dyn Authorizer>>,
    conns: ConnTable,
    in_flight: InFlight,
    /// Whether new work is taken while memory is short.
    admission: crate::pressure::Admission,
    config: ServerConfig,
    audit: Option<AuditSink>,
    /// Middleware around every request, outermost first.
    layers: Vec<Arc<dyn crate::layers::Layer>>,
    /// The server's identity as JSON, for the `_meta` of 2026-07-28 results.
    server_info_json: String,
    sealer: crate::elicit::state::StateSealer,
    listeners: parking_lot::Mutex<Vec<Arc<stateless::Listener>>>,
    shutdown: tokio_util::sync::CancellationToken,
    /// The replicas this one shares state with, if any.
    cluster: Option<crate::cluster::Cluster>,
    /// Receives the other replicas' list changes and resource updates (held here; the
    /// cluster holds it weakly).
    bus_handler: std::sync::OnceLock<crate::cluster::BusHandler>,
    /// The application's state, by type (shared with every request's `AuthContext`).
    states: Arc<crate::states::StateMap>,
    /// Start-up and shutdown hooks not yet run.
    hooks: hooks::Hooks,
    /// Tasks: the shared records and the ones running here.
    tasks: crate::tasks::TaskEngine,
}

impl fmt::Debug for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Server")
            .field("name", &self.inner.info.name)
            .field("version", &self.inner.info.version)
            .field("registry", &self.inner.registry)
            .finish_non_exhaustive()
    }
}

/// The server-wide count of running handlers, capped at `max_in_flight`. Only ever taken
/// without waiting, so a counter does what a semaphore would, without its lock on release.
pub(crate) struct InFlight {
    running: std::sync::atomic::AtomicUsize,
    max: usize,
}

impl InFlight {
    fn new(max: usize) -> Self {
        InFlight {
            running: std::sync::atomic::AtomicUsize::new(0),
            max,
        }
    }

    /// One more running handler, or `None` when `max` are running. Released on drop.
    pub(crate) fn try_enter(&self) -> Option<InFlightGuard<'_>> {
        use std::sync::atomic::Ordering;
        self.running
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.max).then_some(n + 1)
            })
            .ok()
            .map(|_| InFlightGuard(&self.running))
    }
}

/// One running handler counted in [`InFlight`].
pub(crate) struct InFlightGuard<'a>(&'a std::sync::atomic::AtomicUsize);

impl Drop for InFlightGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}

/// What a transport knows about one request beyond the message itself.
#[derive(Clone, Debug, Default)]
pub struct RequestExtras {
    /// Where this request's own messages (progress, logs, elicitation) go, when it differs
    /// from the connection's queue (a Streamable HTTP POST answered as a stream).
    pub sink: Option<Outbound>,
    /// The principal a verified bearer token names.
    pub principal: Option<Arc<Principal>>,
    /// The protocol era, when the transport decided it (HTTP decides per request); `None`
    /// lets the connection's first decisive message fix it.
    pub era: Option<crate::protocol::Era>,
    /// The 2026-07-28 metadata, when the transport already read and admitted it (HTTP).
    pub meta: Option<Arc<crate::protocol::inbound::StatelessMeta>>,
    /// The HTTP request's headers, on the HTTP transports.
    pub headers: Option<Arc<crate::conn::HttpHeaders>>,
}

impl Server {
    /// Starts building a server with a name and a version.
    pub fn builder(name: impl Into<String>, version: impl Into<String>) -> ServerBuilder {
        ServerBuilder::new(name, version)
    }

    /// The server's name.
    pub fn name(&self) -> &str {
        &self.inner.info.name
    }

    /// The server's identity as `initialize` reports it.
    pub fn info(&self) -> &Implementation {
        &self.inner.info
    }

    /// The instructions for the model, if any.
    pub fn instructions(&self) -> Option<&str> {
        self.inner.instructions.as_deref()
    }

    /// The capabilities the server advertises.
    pub fn capabilities(&self) -> &ServerCapabilities {
        &self.inner.capabilities
    }

    /// Limits and timeouts.
    pub fn config(&self) -> &ServerConfig {
        &self.inner.config
    }

    /// Whether new work is taken while memory is short ([`crate::pressure`]).
    pub(crate) fn admission(&self) -> &crate::pressure::Admission {
        &self.inner.admission
    }

    /// The registry, for registering and removing entries at run time. Every change sends
    /// `notifications/*/list_changed` to every live connection.
    pub fn registry(&self) -> &Registry {
        &self.inner.registry
    }

    /// Whether authorization was *chosen*: a tool-seam authorizer exists and its source is
    /// [`AuthorizerSource::Configured`]. Network transports refuse to boot without it.
    pub fn authorization_configured(&self) -> bool {
        self.inner.authorizer.is_some()
            && self.inner.authorizer_source == AuthorizerSource::Configured
    }

    /// Whether a read-seam authorizer exists.
    pub fn read_authorization_configured(&self) -> bool {
        self.inner.read_authorizer.is_some()
    }

    /// Where the tool-seam authorizer came from.
    pub fn authorizer_source(&self) -> AuthorizerSource {
        self.inner.authorizer_source
    }

    /// How many connections the server keeps state for.
    pub fn connection_count(&self) -> usize {
        self.inner.conns.len()
    }

    /// What connection `id` holds right now (running requests, parked questions, ...), or
    /// `None` when the server keeps no state for it (it never existed, or it went away and
    /// everything it held was released).
    pub fn connection_stats(&self, id: &ConnId) -> Option<ConnectionStats> {
        self.inner.conns.get(id).map(|c| c.stats())
    }

    /// Attaches a transport for connection `id`: messages for it will be queued on `out`.
    /// Dropping the returned [`Connection`] detaches it and closes whatever it still has
    /// parked or running.
    pub fn connect(&self, id: ConnId, transport: Transport, out: Outbound) -> Connection {
        let (state, token) = self.inner.conns.attach(&id, transport, out);
        Connection {
            server: self.clone(),
            state,
            attachment: Attachment::Attached(token),
        }
    }

    /// Ends every open `subscriptions/listen` stream gracefully (its final result is sent).
    /// Call it when the process is about to stop.
    pub fn shutdown(&self) {
        self.inner.shutdown.cancel();
    }

    /// A connection for callers without one (a network request outside any session),
    /// declared to arrive on `transport`. It has no live transport, so the server never
    /// sends it a request (elicitation, sampling, roots) whatever sink a request brings,
    /// and the policies see the transport it really came from.
    ///
    /// Its state is its own, outside the connection table, and closed when the returned
    /// [`Connection`] is dropped (answered, or dropped because the client went away: work a
    /// handler handed off sees `Ctx::cancelled` fire). Connections that share `id` share
    /// nothing, so one caller's load never counts against another's per-connection limits
    /// and a full table never evicts a call in progress.
    pub fn detached(&self, id: &ConnId, transport: Transport) -> Connection {
        Connection {
            server: self.clone(),
            state: self.inner.conns.detached(id, transport),
            attachment: Attachment::Detached,
        }
    }

    /// A connection for `id` kept in the table without a transport (an in-process caller):
    /// what an earlier message on `id` recorded is kept, and it is never asked anything.
    pub(crate) fn unattached(&self, id: &ConnId) -> Connection {
        Connection {
            server: self.clone(),
            state: self.inner.conns.get_or_create(id),
            attachment: Attachment::Kept,
        }
    }

    /// Sends a notification to every connection with a live transport. A
    /// `notifications/resources/updated` goes only to connections subscribed to its URI; one
    /// without a URI concerns no subscriber and is dropped.
    pub fn notify(&self, method: &str, params: Option<serde_json::Value>) {
        if method == methods::RESOURCES_UPDATED {
            match params
                .as_ref()
                .and_then(|p| p.get("uri"))
                .and_then(|u| u.as_str())
            {
                Some(uri) => self.resource_updated(uri),
                None => {
                    tracing::warn!(target: "mcp::server", "dropping notifications/resources/updated without params.uri");
                }
            }
            return;
        }
        let frame = encode_notification(method, params.as_ref());
        self.broadcast(&frame, |_| true);
    }

    /// The replicas this server shares state with, when it was built with
    /// [`ServerBuilder::cluster`].
    pub fn cluster(&self) -> Option<&crate::cluster::Cluster> {
        self.inner.cluster.as_ref()
    }

    /// Tells every connection subscribed to `uri` that it changed: on this replica, and on
    /// every other replica of its cluster.
    pub fn resource_updated(&self, uri: &str) {
        self.resource_updated_here(uri);
        if let Some(cluster) = &self.inner.cluster {
            cluster.publish_detached(crate::cluster::BusMessage::ResourceUpdated {
                origin: cluster.replica_id().to_owned(),
                uri: uri.to_owned(),
            });
        }
    }

    fn resource_updated_here(&self, uri: &str) {
        self.tell_layers(&crate::layers::Change::Resource(uri.to_owned()));
        self.notify_listeners_updated(uri);
        let frame = encode_notification(
            methods::RESOURCES_UPDATED,
            Some(&ResourceUpdatedParams {
                uri: uri.to_owned(),
            }),
        );
        self.broadcast(&frame, |c| c.subscriptions.lock().contains(uri));
    }

    fn list_changed(&self, kind: ListKind) {
        self.list_changed_here(kind);
        if let Some(cluster) = &self.inner.cluster {
            cluster.publish_detached(crate::cluster::BusMessage::ListChanged {
                origin: cluster.replica_id().to_owned(),
                list: kind,
            });
        }
    }

    /// Tells this replica's connections and listen streams that a list changed.
    fn list_changed_here(&self, kind: ListKind) {
        self.tell_layers(&crate::layers::Change::List(kind));
        let frame = encode_notification::<()>(kind.changed_method(), None);
        self.broadcast(&frame, |c| c.version().is_some());
        self.notify_listeners_list_changed(kind);
    }

    /// What another replica published: a list change or resource update is delivered to
    /// this replica's connections and listen streams (and not published again); a task's
    /// input, cancellation or change reaches the task or its listeners here.
    fn on_bus(&self, event: crate::cluster::BusEvent<'_>) {
        use crate::cluster::{BusEvent, BusMessage};
        let message = match event {
            BusEvent::Message(message) => message,
            BusEvent::Resubscribed => return self.bus_resubscribed(),
            // What is missed now is read again once the bus is back.
            BusEvent::Lost => return,
        };
        match message {
            BusMessage::ListChanged { list, .. } => self.list_changed_here(*list),
            BusMessage::ResourceUpdated { uri, .. } => self.resource_updated_here(uri),
            BusMessage::TaskInput {
                task_id, responses, ..
            } => self.task_input_here(task_id, responses.clone()),
            BusMessage::TaskCancel { task_id, .. } => self.task_cancel_here(task_id),
            BusMessage::TaskChanged { record, .. } => self.notify_listeners_task(record),
            _ => {}
        }
    }

    /// The bus is back after a break, and what other replicas published meanwhile is lost.
    /// Lists and resources may have changed: every list is announced changed and every
    /// subscribed resource updated (a spurious notice costs a client one read; a missed one
    /// leaves it stale for good). A task running here that was cancelled elsewhere
    /// meanwhile stops once its record says so.
    fn bus_resubscribed(&self) {
        for kind in [ListKind::Tools, ListKind::Resources, ListKind::Prompts] {
            self.list_changed_here(kind);
        }
        for uri in self.subscribed_uris() {
            self.resource_updated_here(&uri);
        }
        let server = self.clone();
        tokio::spawn(async move { server.stop_tasks_cancelled_elsewhere().await });
    }

    /// Every resource a connection or a listen stream here is subscribed to.
    fn subscribed_uris(&self) -> std::collections::BTreeSet<String> {
        let mut uris = std::collections::BTreeSet::new();
        for conn in self.inner.conns.all() {
            uris.extend(conn.subscriptions.lock().iter().cloned());
        }
        for listener in self.inner.listeners.lock().iter() {
            uris.extend(listener.resource_subscriptions().iter().cloned());
        }
        uris
    }

    fn tell_layers(&self, change: &crate::layers::Change) {
        for layer in &self.inner.layers {
            layer.on_change(change);
        }
    }

    fn broadcast(&self, frame: &str, mut include: impl FnMut(&ConnState) -> bool) {
        for conn in self.inner.conns.all() {
            if include(&conn)
                && let Some(out) = conn.outbound()
            {
                out.try_send(frame.to_owned());
            }
        }
    }
}

impl Server {
    /// The server as a request's [`Ctx`] sees it (the same allocation, no copy).
    pub(crate) fn host(&self) -> Arc<dyn Host> {
        Arc::clone(&self.inner) as Arc<dyn Host>
    }
}

impl Host for ServerInner {
    fn name(&self) -> &str {
        &self.info.name
    }

    fn elicitation_timeout(&self) -> std::time::Duration {
        self.config.elicitation_timeout
    }

    fn call_timeout(&self) -> std::time::Duration {
        self.config.call_timeout
    }

    fn read_resource<'a>(
        &'a self,
        ctx: &'a Ctx,
        uri: &'a str,
    ) -> HostFuture<'a, Result<Vec<crate::protocol::ResourceContents>, ErrorObject>> {
        let server = ctx.server();
        Box::pin(async move { server.read_resource_as(ctx, uri).await })
    }

    fn into_any(self: Arc<Self>) -> Arc<dyn std::any::Any + Send + Sync> {
        self
    }

    fn state(&self, id: std::any::TypeId) -> Option<Arc<dyn std::any::Any + Send + Sync>> {
        self.states.get_any(id)
    }
}

impl Ctx {
    /// The server serving this request (a cheap handle: every clone is the same server).
    pub fn server(&self) -> Server {
        let inner = Arc::clone(self.host())
            .into_any()
            .downcast::<ServerInner>()
            // Only a `Server` makes a `Ctx`, and it always passes itself as the host.
            .expect("a Ctx's host is the Server that made it");
        Server { inner }
    }
}

/// One client's attachment to the server, held by its transport: the dispatcher's one
/// entry point. Every transport (stdio, Streamable HTTP sessions and stateless requests,
/// legacy SSE, `TestClient`) hands its messages to a `Connection`, which dispatches them
/// through the same pipeline.
pub struct Connection {
    server: Server,
    state: Arc<ConnState>,
    attachment: Attachment,
}

/// What dropping a [`Connection`] does to its state.
enum Attachment {
    /// A transport attached with this token: dropping detaches it.
    Attached(u64),
    /// State of its own, outside the table: dropping closes it.
    Detached,
    /// State kept in the table for an in-process caller: dropping leaves it.
    Kept,
}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connection")
            .field("id", &self.state.id)
            .finish()
    }
}

impl Connection {
    /// The connection's id.
    pub fn id(&self) -> &ConnId {
        &self.state.id
    }

    /// The server.
    pub fn server(&self) -> &Server {
        &self.server
    }

    /// What the server keeps about this connection.
    #[cfg(feature = "http")]
    pub(crate) fn state(&self) -> &Arc<ConnState> {
        &self.state
    }

    /// What this connection holds right now.
    pub fn stats(&self) -> ConnectionStats {
        self.state.stats()
    }

    /// Whether the server closed this connection (its state was evicted at the cap, or
    /// another transport took over its id). A transport should then drop the client.
    pub fn is_closed(&self) -> bool {
        self.state.closed.is_cancelled()
    }

    /// Handles one decoded message; returns the reply to write, if any. Requests run to
    /// completion here (a parked elicitation keeps this future pending), so a transport
    /// runs each request on its own task.
    pub async fn handle(&self, message: Message) -> Option<Reply> {
        self.server
            .dispatch(&self.state, message, RequestExtras::default())
            .await
    }

    /// Like [`Connection::handle`], with a request-specific sink and principal.
    pub async fn handle_with(&self, message: Message, extras: RequestExtras) -> Option<Reply> {
        self.server.dispatch(&self.state, message, extras).await
    }

    /// Decodes a frame (one line on stdio, one body on HTTP) and handles it, batches
    /// included (only on 2025-03-26; elsewhere a batch is -32600).
    pub async fn handle_frame(&self, frame: &[u8]) -> Option<Reply> {
        if frame.len() > self.server.inner.config.max_message_size {
            return Some(Reply::error(
                None,
                &ErrorObject::invalid_request(format!(
                    "Invalid request: the message is {} bytes; the limit is {} bytes",
                    frame.len(),
                    self.server.inner.config.max_message_size
                )),
            ));
        }
        self.handle_incoming(decode(frame)).await
    }

    /// Handles an already decoded frame.
    pub async fn handle_incoming(&self, incoming: Incoming) -> Option<Reply> {
        match incoming {
            Incoming::Single(Ok(message)) => self.handle(message).await,
            Incoming::Single(Err(e)) => Some(Reply::error(e.id(), &e.to_error())),
            Incoming::Batch(items) => self.handle_batch(items).await,
        }
    }

    /// Detaches the transport now, as dropping the last handle does: running requests are
    /// cancelled (no response is sent), parked questions close, and the server forgets the
    /// connection. For a transport whose client is gone while tasks still hold a handle.
    pub fn close(&self) {
        match self.attachment {
            Attachment::Attached(token) => self.server.inner.conns.detach(&self.state.id, token),
            Attachment::Detached => self.state.close(),
            Attachment::Kept => {}
        }
    }

    /// Closes every question this connection has parked and refuses new ones: the client
    /// can no longer answer (its input closed). Running requests continue.
    pub fn close_pending(&self) {
        self.state.pending.lock().close();
        self.state.input_closed.cancel();
    }

    /// Cancels every running request on this connection that a client could cancel (as if
    /// it had sent `notifications/cancelled` for each): their handlers are dropped and no
    /// response is sent. Transports call it when they give up waiting at shutdown.
    pub(crate) fn cancel_running(&self) {
        self.state.cancel_running();
    }

    async fn handle_batch(
        &self,
        items: Vec<Result<Message, crate::protocol::jsonrpc::DecodeError>>,
    ) -> Option<Reply> {
        if let Err(e) = batch::admit(self.state.version()) {
            return Some(Reply::error(None, &e));
        }
        let sorted = batch::sort(items);
        for message in sorted.others {
            self.handle(message).await;
        }
        let replies =
            futures::future::join_all(sorted.requests.into_iter().map(|m| self.handle(m))).await;
        let mut all = sorted.refused;
        all.extend(replies.into_iter().flatten());
        Reply::batch(all)
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.close();
    }
}

/// Encodes an error reply for a frame that could not be decoded; transports use it for
/// input they reject before it reaches a connection.
pub fn error_frame(error: &ErrorObject) -> String {
    encode_error(None, error)
}
