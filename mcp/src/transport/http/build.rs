//! Building a router: the configuration and boot guard checked, the [`App`] made, the
//! transports' routes mounted behind the Host/Origin guard and bearer authentication.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use axum::Router;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tokio_util::sync::CancellationToken;

use super::app::App;
use super::config::HttpConfig;
use super::error::HttpError;
use super::guard::{self, json_response};
use super::oauth;
use crate::server::Server;
use crate::transport::sse::table::SseTable;
use crate::transport::streamable_http::{Endpoint, EndpointService};

/// Which transports a router serves.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Transports {
    pub(crate) streamable: bool,
    pub(crate) legacy_sse: bool,
}

impl Transports {
    pub(crate) fn context(self) -> &'static str {
        match (self.streamable, self.legacy_sse) {
            (true, true) => "MCP HTTP transports (Streamable HTTP and HTTP+SSE)",
            (true, false) => "MCP Streamable HTTP transport",
            _ => "MCP HTTP+SSE transport",
        }
    }
}

/// A router, and the Streamable HTTP endpoint it mounts (when it serves that transport).
pub(crate) struct Built {
    pub(crate) router: Router,
    /// Answers what the router answers at the endpoint's path, without the router's
    /// per-request work: [`HttpServer`](super::HttpServer) hands it those requests directly.
    pub(crate) endpoint: Option<Arc<Endpoint>>,
}

/// Builds a router for `transports`.
pub(crate) fn build(
    server: Server,
    config: HttpConfig,
    transports: Transports,
) -> Result<Built, HttpError> {
    config.validate().map_err(HttpError::Config)?;
    if let Some(b) = &config.bearer {
        b.validate().map_err(HttpError::Config)?;
    }
    let guard = guard::Guard::new(
        &config.allowed_hosts,
        &config.allowed_origins,
        config.max_header_bytes,
    )
    .map_err(HttpError::Config)?;
    config
        .guard
        .check(
            server.authorization_configured(),
            server.read_authorization_configured(),
            transports.context(),
        )
        .map_err(HttpError::Refused)?;
    if config.max_sessions >= server.config().max_connections {
        tracing::warn!(target: "mcp::http", max_sessions = config.max_sessions, max_connections = server.config().max_connections,
            "max_sessions is not below the server's max_connections: the server may evict live sessions' state");
    }

    let max_body = config
        .max_body_bytes
        .unwrap_or(server.config().max_message_size);
    let bearer = config.bearer.clone().map(Arc::new);
    #[cfg(feature = "oauth")]
    let connect = config.connect.as_ref().map(crate::connect::Connect::routes);
    if let Some(cluster) = server.cluster()
        && tokio::runtime::Handle::try_current().is_ok()
    {
        cluster.start_in_background();
    }
    let app = Arc::new(App {
        sessions: crate::transport::streamable_http::session_table(&config, server.cluster()),
        sse_sessions: SseTable::new(&config),
        server,
        max_body,
        bearer: bearer.clone(),
        config,
        shutdown_watched: AtomicBool::new(false),
        dropped: CancellationToken::new(),
    });

    let guard = Arc::new(guard);
    // The endpoint checks the guard and the bearer token itself (see `Endpoint::answer`);
    // the other routes get them as layers.
    let endpoint = transports
        .streamable
        .then(|| Endpoint::new(Arc::clone(&app), Arc::clone(&guard)));
    let mut mcp = Router::new();
    if transports.legacy_sse {
        mcp = crate::transport::sse::routes::routes(&app);
        if let Some(auth) = &bearer {
            mcp = mcp.route_layer(axum::middleware::from_fn_with_state(
                Arc::clone(auth),
                oauth::bearer_layer,
            ));
        }
    }
    if let Some(auth) = &bearer {
        let mut metadata = Router::new();
        for path in auth.metadata_paths() {
            metadata = metadata.route(&path, get(oauth::metadata_handler));
        }
        mcp = mcp.merge(metadata.with_state(Arc::clone(auth)));
    }
    // After the bearer layer: a browser opening a link carries no token.
    #[cfg(feature = "oauth")]
    if let Some(routes) = connect {
        mcp = mcp.merge(routes);
    }
    if tokio::runtime::Handle::try_current().is_ok() {
        // Built inside a runtime (the usual case): watch for shutdown from the start.
        // Otherwise the first request starts the watch.
        app.watch_shutdown();
    }
    let guarded = mcp.layer(guard::GuardLayer(guard));
    let mut router = Router::new().route("/health", get(health));
    if let Some(endpoint) = &endpoint {
        router = router.route_service(endpoint.path(), EndpointService(Arc::clone(endpoint)));
    }
    Ok(Built {
        router: router.merge(guarded).fallback(not_found),
        endpoint,
    })
}

async fn health() -> Response {
    json_response(StatusCode::OK, r#"{"status":"ok"}"#.to_owned())
}

async fn not_found() -> Response {
    (StatusCode::NOT_FOUND, "Not found").into_response()
}
