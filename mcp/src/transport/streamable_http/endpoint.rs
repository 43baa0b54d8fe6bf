//! The endpoint as one service: the Host/Origin guard, bearer authentication, then the
//! request's method (POST, GET, DELETE; HEAD answered with what a GET's answer would
//! start with, opening no stream; anything else 405).
//!
//! Every request to the endpoint is answered by [`Endpoint::answer`], whichever way it
//! arrives: through the [`axum::Router`] that [`crate::transport::http::router`] returns
//! (where it is mounted as one route service, so an application's own layers still wrap
//! it), or straight from the connection when this crate's [`HttpServer`] serves the router
//! it built itself. The second way skips the router's per-request work for the one path
//! every MCP request takes (matching the path, an `OriginalUri` extension, a clone of each
//! boxed route and a boxed future per layer: ~4,000 instructions of a ~50,000-instruction
//! request, callgrind); every other path still goes through the router.
//!
//! [`HttpServer`]: crate::transport::http::HttpServer

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::extract::Request;
use axum::http::Method;
use axum::response::Response;

use super::errors::method_not_allowed;
use super::post::post_handler;
use super::session_methods::{Get, delete_handler, get_handler};
use crate::layers::BoxFuture;
use crate::transport::http::app::App;
use crate::transport::http::guard::Guard;

/// The methods the endpoint answers, as its 405 names them.
const ALLOWED: &str = "GET, HEAD, POST, DELETE";

/// The Streamable HTTP endpoint of one router.
pub(crate) struct Endpoint {
    app: Arc<App>,
    guard: Arc<Guard>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("path", &self.path())
            .finish_non_exhaustive()
    }
}

impl Endpoint {
    /// The endpoint of `app`, behind `guard` (and `app`'s bearer authentication, if any).
    pub(crate) fn new(app: Arc<App>, guard: Arc<Guard>) -> Arc<Endpoint> {
        Arc::new(Endpoint { app, guard })
    }

    /// The path it is served at.
    pub(crate) fn path(&self) -> &str {
        &self.app.config.endpoint
    }

    /// Answers one request to the endpoint: both ways a request arrives poll this one
    /// boxed future (a future of their own around it would compile all of it twice).
    pub(crate) fn call(self: &Arc<Self>, request: Request) -> BoxFuture<'static, Response> {
        Box::pin(Arc::clone(self).answer(request))
    }

    async fn answer(self: Arc<Self>, request: Request) -> Response {
        if let Err(refusal) = self.guard.check(&request) {
            return refusal;
        }
        let app = Arc::clone(&self.app);
        let principal = match &app.bearer {
            Some(auth) => {
                match auth
                    .authenticate(request.headers(), request.uri().query())
                    .await
                {
                    Ok(principal) => Some(Arc::new(principal)),
                    Err(refusal) => return refusal,
                }
            }
            None => None,
        };
        match *request.method() {
            Method::POST => post_handler(app, principal, request).await,
            Method::GET => {
                let headers = request.into_parts().0.headers;
                get_handler(app, principal, headers, Get::Stream).await
            }
            Method::HEAD => {
                let headers = request.into_parts().0.headers;
                let (parts, _) = get_handler(app, principal, headers, Get::HeadOnly)
                    .await
                    .into_parts();
                Response::from_parts(parts, Body::empty())
            }
            Method::DELETE => delete_handler(app, principal, request.into_parts().0.headers).await,
            _ => method_not_allowed(
                "Method Not Allowed: the MCP endpoint answers POST, GET and DELETE",
                ALLOWED,
            ),
        }
    }
}

/// [`Endpoint`] as the route service the router mounts at its path.
#[derive(Clone)]
pub(crate) struct EndpointService(pub(crate) Arc<Endpoint>);

impl tower_service::Service<Request> for EndpointService {
    type Response = Response;
    type Error = Infallible;
    type Future = Infallibly;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request) -> Infallibly {
        Infallibly(self.0.call(request))
    }
}

/// The endpoint's answer as a service's, which cannot fail.
pub(crate) struct Infallibly(BoxFuture<'static, Response>);

impl Future for Infallibly {
    type Output = Result<Response, Infallible>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.0.as_mut().poll(cx).map(Ok)
    }
}
