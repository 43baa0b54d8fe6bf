//! Server-Sent Events on the wire: encoding events, and a response body that writes what
//! arrives on a channel, adds keep-alive comments while idle, and ends when its producer
//! finishes, its session closes or the server shuts down.

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::Response;
use tokio::sync::mpsc;
use tokio::time::{Instant, MissedTickBehavior};
use tokio_util::sync::CancellationToken;

/// One SSE event.
pub(crate) struct SseEvent<'a> {
    /// The `id:` field (resumption cursor).
    pub(crate) id: Option<&'a str>,
    /// The `event:` field.
    pub(crate) event: Option<&'a str>,
    /// The payload; each line becomes a `data:` line. An empty payload is one empty
    /// `data:` line (the priming event).
    pub(crate) data: &'a str,
    /// The `retry:` field.
    pub(crate) retry: Option<Duration>,
}

impl SseEvent<'_> {
    /// The event as bytes, ending with the blank line that dispatches it.
    pub(crate) fn encode(&self) -> Bytes {
        let mut out = String::with_capacity(self.data.len() + 48);
        if let Some(id) = self.id {
            out.push_str("id: ");
            out.push_str(id);
            out.push('\n');
        }
        if let Some(event) = self.event {
            out.push_str("event: ");
            out.push_str(event);
            out.push('\n');
        }
        if let Some(retry) = self.retry {
            out.push_str("retry: ");
            out.push_str(&retry.as_millis().to_string());
            out.push('\n');
        }
        // A JSON frame from the server is one line; split anyway so a stray newline can
        // never end the event early.
        for line in self.data.split('\n') {
            out.push_str("data: ");
            out.push_str(line.strip_suffix('\r').unwrap_or(line));
            out.push('\n');
        }
        out.push('\n');
        Bytes::from(out)
    }
}

/// A JSON-RPC message as an `event: message`.
pub(crate) fn message_event(id: Option<&str>, frame: &str) -> Bytes {
    SseEvent {
        id,
        event: Some("message"),
        data: frame,
        retry: None,
    }
    .encode()
}

const KEEP_ALIVE: &[u8] = b": keepalive\n\n";

/// What ends an SSE body besides its producer hanging up.
#[derive(Clone, Default)]
pub(crate) struct Stops {
    /// The session (or stream owner) went away.
    pub(crate) closed: Option<CancellationToken>,
    /// The server is shutting down.
    pub(crate) shutdown: Option<CancellationToken>,
}

async fn cancelled(token: &Option<CancellationToken>) {
    match token {
        Some(t) => t.cancelled().await,
        None => std::future::pending().await,
    }
}

/// A `200 text/event-stream` response writing what arrives on `rx`. `guard` lives as long
/// as the body (a session uses it to know a stream is open).
pub(crate) fn sse_response<G: Send + 'static>(
    rx: mpsc::Receiver<Bytes>,
    keep_alive: Duration,
    stops: Stops,
    guard: G,
) -> Response {
    struct State<G> {
        rx: mpsc::Receiver<Bytes>,
        tick: tokio::time::Interval,
        stops: Stops,
        _guard: G,
    }
    let mut tick = tokio::time::interval_at(Instant::now() + keep_alive, keep_alive);
    tick.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let state = State {
        rx,
        tick,
        stops,
        _guard: guard,
    };
    let stream = futures::stream::unfold(state, |mut st| async move {
        let item = tokio::select! {
            biased;
            item = st.rx.recv() => item,
            _ = cancelled(&st.stops.closed) => None,
            _ = cancelled(&st.stops.shutdown) => None,
            _ = st.tick.tick() => Some(Bytes::from_static(KEEP_ALIVE)),
        };
        item.map(|bytes| (Ok::<_, std::convert::Infallible>(bytes), st))
    });
    let mut response = sse_head();
    *response.body_mut() = Body::from_stream(stream);
    response
}

/// The head of [`sse_response`]'s answer: `200 text/event-stream` with the headers every
/// stream carries, and an empty body (what a HEAD is answered with).
pub(crate) fn sse_head() -> Response {
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::OK;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, no-transform"),
    );
    headers.insert(
        HeaderName::from_static("x-accel-buffering"),
        HeaderValue::from_static("no"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_encode_every_field_and_split_lines() {
        let bytes = SseEvent {
            id: Some("3-1"),
            event: Some("message"),
            data: "a\nb",
            retry: Some(Duration::from_millis(1500)),
        }
        .encode();
        assert_eq!(
            &bytes[..],
            b"id: 3-1\nevent: message\nretry: 1500\ndata: a\ndata: b\n\n"
        );
        let priming = SseEvent {
            id: Some("1-0"),
            event: None,
            data: "",
            retry: None,
        }
        .encode();
        assert_eq!(&priming[..], b"id: 1-0\ndata: \n\n");
    }
}
