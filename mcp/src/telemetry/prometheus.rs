//! The Prometheus scrape endpoint: `GET /metrics` on an address of its own, never on the
//! MCP endpoint's (whose callers are clients, not the operator's scraper).

use std::net::SocketAddr;

use axum::http::{StatusCode, header};
use axum::response::IntoResponse as _;
use tokio_util::sync::CancellationToken;

use super::{Telemetry, TelemetryError};

impl Telemetry {
    /// The metrics in the Prometheus text format, when this telemetry keeps them for a
    /// scrape ([`Telemetry::configure`] with `scrape`).
    pub fn scrape(&self) -> Option<String> {
        use ::prometheus::Encoder as _;
        let registry = self.scrape.as_ref()?;
        let mut out = Vec::new();
        ::prometheus::TextEncoder::new()
            .encode(&registry.gather(), &mut out)
            .ok()?;
        String::from_utf8(out).ok()
    }
}

/// Serves `GET /metrics` on `addr` until `stop` is cancelled; returns the bound address
/// once listening (port 0 picks one). Anything else gets 404. The endpoint has no
/// authentication of its own: bind it where only the scraper reaches it.
pub async fn serve_metrics(
    telemetry: Telemetry,
    addr: SocketAddr,
    stop: CancellationToken,
) -> Result<SocketAddr, TelemetryError> {
    if telemetry.scrape.is_none() {
        return Err(TelemetryError(
            "this telemetry keeps no metrics for a scrape (Telemetry::configure with scrape)"
                .into(),
        ));
    }
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| TelemetryError(format!("cannot listen on {addr} for /metrics: {e}")))?;
    let bound = listener
        .local_addr()
        .map_err(|e| TelemetryError(e.to_string()))?;
    let app = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let telemetry = telemetry.clone();
            async move {
                match telemetry.scrape() {
                    Some(text) => ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text)
                        .into_response(),
                    None => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
                }
            }
        }),
    );
    tokio::spawn(async move {
        let served = axum::serve(listener, app)
            .with_graceful_shutdown(stop.cancelled_owned())
            .await;
        if let Err(e) = served {
            tracing::warn!(target: "mcp::telemetry", error = %e, "the /metrics endpoint stopped");
        }
    });
    Ok(bound)
}
