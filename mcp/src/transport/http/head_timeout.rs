//! The time a connection may take to send a request's head, kept with one timer per
//! connection instead of one per request.
//!
//! hyper's own `header_read_timeout` arms a timer (a boxed `Sleep` registered in the
//! runtime's timer wheel, behind its lock) every time it starts reading a head and removes
//! it when the head is in: twice per request on a kept-alive connection. Measured with the
//! benchmark's clients (`driver http`, alternating runs) that was ~0.5 µs of server CPU per
//! request at 64 clients (~5%) and ~0.4 at 16.
//!
//! Here each connection counts the requests whose response is not finished yet and notes
//! when the last one finished. A connection with none unfinished is waiting for a head (hyper
//! reads the next head only after the previous response is written), so the limit counts
//! from the moment it became idle, or from its start. Its one timer is re-armed only when it
//! fires: at most once per limit, however many requests pass. The rule users see is the
//! same as hyper's: a client that sends a head slowly, or none, or leaves a kept-alive
//! connection idle, is disconnected once the limit passes; a request's body and its
//! response (an SSE stream, a long call) are not bounded by it.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, HttpBody};
use axum::extract::Request;
use axum::response::Response;
use tokio::time::Instant;
use tower_service::Service;

use crate::layers::BoxFuture;
use crate::transport::streamable_http::Endpoint;

/// What one connection's watchdog knows. Written and read by the connection's own task only
/// (the service and the watchdog are polled by it); atomics because hyper's service must be
/// `Send + Sync`, all uncontended.
#[derive(Debug)]
pub(super) struct Activity {
    started: Instant,
    /// Requests whose response has not been written yet.
    unfinished: AtomicU64,
    /// When the connection last became idle, in nanoseconds since `started`.
    idle_since: AtomicU64,
}

impl Activity {
    pub(super) fn new() -> Arc<Activity> {
        Arc::new(Activity {
            started: Instant::now(),
            unfinished: AtomicU64::new(0),
            idle_since: AtomicU64::new(0),
        })
    }

    fn idle_since(&self) -> Option<u64> {
        (self.unfinished.load(Ordering::Relaxed) == 0)
            .then(|| self.idle_since.load(Ordering::Relaxed))
    }
}

/// Completes when the connection has waited `limit` for a request head: idle that long since
/// its start or its last response. Never completes while a request is being answered.
pub(super) async fn expired(activity: &Activity, limit: Duration) {
    let mut deadline = activity.started + limit;
    loop {
        tokio::time::sleep_until(deadline).await;
        deadline = match activity.idle_since() {
            // Still idle since the same moment this deadline was counted from, or since a
            // later one: the limit has passed only in the first case.
            Some(since) => {
                let due = activity.started + Duration::from_nanos(since) + limit;
                if due <= deadline {
                    return;
                }
                due
            }
            // Answering: look again in one limit (or as soon as it is idle; the deadline
            // then counts from that moment).
            None => Instant::now() + limit,
        };
    }
}

/// The routes, for hyper, on one connection: counts each request as unfinished from its head
/// to the end of its response's body.
#[derive(Clone)]
pub(super) struct Watched {
    pub(super) app: Router,
    /// The router's endpoint, which takes the requests to its path without the router.
    pub(super) endpoint: Option<Arc<Endpoint>>,
    pub(super) activity: Arc<Activity>,
}

impl hyper::service::Service<Request<hyper::body::Incoming>> for Watched {
    type Response = Response<Tracked>;
    type Error = Infallible;
    type Future = Answering;

    fn call(&self, request: Request<hyper::body::Incoming>) -> Answering {
        let unfinished = Unfinished::new(&self.activity);
        let request = request.map(Body::new);
        let routed = match &self.endpoint {
            Some(endpoint) if request.uri().path() == endpoint.path() => {
                Routed::Endpoint(endpoint.call(request))
            }
            // A router is always ready (axum's `poll_ready` returns `Ready` at once), so it
            // is called without waiting for readiness; the clone is an `Arc`'s.
            _ => Routed::Router(self.app.clone().call(request)),
        };
        Answering {
            routed,
            unfinished: Some(unfinished),
        }
    }
}

/// Who answers a request: the endpoint directly, or the router. One per request being
/// answered, inside hyper's connection: boxing the router's future to make the variants
/// alike would cost an allocation per request instead.
#[allow(clippy::large_enum_variant)]
enum Routed {
    Endpoint(BoxFuture<'static, Response>),
    Router(<Router as Service<Request>>::Future),
}

/// The routes' answer, its body tracked.
pub(super) struct Answering {
    routed: Routed,
    unfinished: Option<Unfinished>,
}

impl Future for Answering {
    type Output = Result<Response<Tracked>, Infallible>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let response = match &mut self.routed {
            Routed::Endpoint(answer) => ready!(answer.as_mut().poll(cx)),
            Routed::Router(routed) => ready!(Pin::new(routed).poll(cx))?,
        };
        let unfinished = self.unfinished.take();
        Poll::Ready(Ok(response.map(|body| Tracked {
            body,
            _unfinished: unfinished,
        })))
    }
}

/// One request counted as unfinished until dropped.
struct Unfinished(Arc<Activity>);

impl Unfinished {
    fn new(activity: &Arc<Activity>) -> Unfinished {
        activity.unfinished.fetch_add(1, Ordering::Relaxed);
        Unfinished(Arc::clone(activity))
    }
}

impl Drop for Unfinished {
    fn drop(&mut self) {
        let activity = &self.0;
        if activity.unfinished.fetch_sub(1, Ordering::Relaxed) == 1 {
            let now = Instant::now().saturating_duration_since(activity.started);
            let nanos = u64::try_from(now.as_nanos()).unwrap_or(u64::MAX);
            activity.idle_since.store(nanos, Ordering::Relaxed);
        }
    }
}

/// A response body that keeps its request counted until hyper has written it (hyper drops a
/// body once its last frame is taken).
pub(super) struct Tracked {
    body: Body,
    _unfinished: Option<Unfinished>,
}

impl HttpBody for Tracked {
    type Data = <Body as HttpBody>::Data;
    type Error = <Body as HttpBody>::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}
