//! The checks every HTTP request passes before it reaches a transport: header size, `Host`
//! and `Origin` (the DNS-rebinding defence), and the helpers for content negotiation and
//! error responses with a JSON-RPC body.

use std::borrow::Cow;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;

use crate::protocol::jsonrpc::{Incoming, decode, decode_owned, encode_error};
use crate::protocol::{ErrorObject, codes};

/// A response whose body is an id-less JSON-RPC error, as the transports answer every
/// request they refuse before it reaches the server.
pub(crate) fn rpc_error(
    status: StatusCode,
    code: i32,
    message: impl Into<Cow<'static, str>>,
) -> Response {
    let body = encode_error(None, &ErrorObject::new(code, message));
    json_response(status, body)
}

/// A JSON body with a status.
pub(crate) fn json_response(status: StatusCode, body: String) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// 503 with `Retry-After` and the JSON-RPC error `refusal` (answering request `id`, if
/// one): the server is near its memory limit ([`crate::pressure`]).
pub(crate) fn memory_pressure(
    id: Option<&crate::protocol::RequestId>,
    refusal: &ErrorObject,
) -> Response {
    let mut r = json_response(StatusCode::SERVICE_UNAVAILABLE, encode_error(id, refusal));
    r.headers_mut().insert(
        header::RETRY_AFTER,
        HeaderValue::from(crate::pressure::RETRY_AFTER_SECS),
    );
    r
}

/// 400 with -32600 and a message.
pub(crate) fn bad_request(message: impl Into<Cow<'static, str>>) -> Response {
    rpc_error(StatusCode::BAD_REQUEST, codes::INVALID_REQUEST, message)
}

/// A `Host`: its name as written (an IPv6 literal keeps its brackets; names compare
/// without regard to case) and an optional port. Borrowed, so checking a request's `Host`
/// copies nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct HostParts<'a> {
    name: &'a str,
    port: Option<u16>,
}

/// An `Origin`, borrowed like [`HostParts`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct OriginParts<'a> {
    scheme: &'a str,
    host: HostParts<'a>,
}

/// Splits `name[:port]` or `[v6][:port]`. `None` for an unparseable port.
fn split_host(s: &str) -> Option<HostParts<'_>> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    let (name, port) = if let Some(rest) = s.strip_prefix('[') {
        let end = rest.find(']')?;
        let name = &s[..end + 2];
        match &rest[end + 1..] {
            "" => (name, None),
            p => (name, Some(p.strip_prefix(':')?)),
        }
    } else {
        match s.rsplit_once(':') {
            // A bare IPv6 literal is not a valid Host; keep it whole so it never matches.
            Some((n, _)) if n.contains(':') => (s, None),
            Some((n, p)) => (n, Some(p)),
            None => (s, None),
        }
    };
    let port = match port {
        Some(p) => Some(p.parse::<u16>().ok()?),
        None => None,
    };
    Some(HostParts { name, port })
}

fn split_origin(s: &str) -> Option<OriginParts<'_>> {
    let (scheme, rest) = s.trim().split_once("://")?;
    let authority = rest.split('/').next()?;
    if authority.contains('@') {
        return None;
    }
    Some(OriginParts {
        scheme,
        host: split_host(authority)?,
    })
}

fn default_port(scheme: &str) -> Option<u16> {
    let is = |name: &str| scheme.eq_ignore_ascii_case(name);
    if is("http") || is("ws") {
        Some(80)
    } else if is("https") || is("wss") {
        Some(443)
    } else {
        None
    }
}

/// An allowed `Host` entry, parsed once from the configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
struct HostRule {
    name: String,
    port: Option<u16>,
}

impl HostRule {
    fn of(parts: HostParts<'_>) -> Self {
        HostRule {
            name: parts.name.to_owned(),
            port: parts.port,
        }
    }

    /// Whether this entry admits a host named `name` on `port` (any port when the entry
    /// names none).
    fn admits(&self, name: &str, port: Option<u16>) -> bool {
        self.name.eq_ignore_ascii_case(name) && (self.port.is_none() || self.port == port)
    }
}

/// An allowed `Origin` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
struct OriginRule {
    scheme: String,
    host: HostRule,
}

/// What the guard layer checks, compiled once from the configuration.
#[derive(Clone, Debug)]
pub(crate) struct Guard {
    any_host: bool,
    hosts: Vec<HostRule>,
    any_origin: bool,
    origins: Vec<OriginRule>,
    max_header_bytes: usize,
}

impl Guard {
    pub(crate) fn new(
        hosts: &[String],
        origins: &[String],
        max_header_bytes: usize,
    ) -> Result<Self, String> {
        let mut guard = Guard {
            any_host: false,
            hosts: Vec::new(),
            any_origin: false,
            origins: Vec::new(),
            max_header_bytes,
        };
        for h in hosts {
            if h.trim() == "*" {
                guard.any_host = true;
            } else {
                guard
                    .hosts
                    .push(HostRule::of(split_host(h).ok_or_else(|| {
                        format!("allowed host {h:?} is not name[:port]")
                    })?));
            }
        }
        for o in origins {
            if o.trim() == "*" {
                guard.any_origin = true;
            } else {
                let parts = split_origin(o)
                    .ok_or_else(|| format!("allowed origin {o:?} is not scheme://host[:port]"))?;
                guard.origins.push(OriginRule {
                    scheme: parts.scheme.to_owned(),
                    host: HostRule::of(parts.host),
                });
            }
        }
        Ok(guard)
    }

    pub(crate) fn host_allowed(&self, host: &str) -> bool {
        if self.any_host {
            return true;
        }
        let Some(h) = split_host(host) else {
            return false;
        };
        self.hosts.iter().any(|r| r.admits(h.name, h.port))
    }

    pub(crate) fn origin_allowed(&self, origin: &str) -> bool {
        if self.any_origin {
            return true;
        }
        let Some(o) = split_origin(origin) else {
            return false;
        };
        let port = o.host.port.or_else(|| default_port(o.scheme));
        self.origins
            .iter()
            .any(|r| r.scheme.eq_ignore_ascii_case(o.scheme) && r.host.admits(o.host.name, port))
    }

    /// Checks one request; `Err` is the response that refuses it.
    #[allow(clippy::result_large_err)]
    pub(crate) fn check(&self, req: &Request) -> Result<(), Response> {
        let header_bytes: usize = req
            .headers()
            .iter()
            .map(|(name, value)| name.as_str().len() + value.len() + 4)
            .sum();
        if header_bytes > self.max_header_bytes {
            return Err(rpc_error(
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                codes::INVALID_REQUEST,
                format!(
                    "Request headers too large: {header_bytes} bytes; the limit is {} bytes",
                    self.max_header_bytes
                ),
            ));
        }
        let host = req
            .headers()
            .get(header::HOST)
            .and_then(|v| v.to_str().ok())
            .or_else(|| req.uri().authority().map(|a| a.as_str()));
        match host {
            Some(h) if self.host_allowed(h) => {}
            Some(h) => {
                return Err(forbidden(format!(
                    "Forbidden: the Host {h:?} is not allowed (DNS rebinding protection); \
                     the server operator can allow it in HttpConfig::allow_host"
                )));
            }
            None => return Err(forbidden("Forbidden: the request has no Host header")),
        }
        if let Some(origin) = req.headers().get(header::ORIGIN) {
            let origin = origin.to_str().unwrap_or("");
            if !self.origin_allowed(origin) {
                return Err(forbidden(format!(
                    "Forbidden: the Origin {origin:?} is not allowed (DNS rebinding protection); \
                     the server operator can allow it in HttpConfig::allow_origin"
                )));
            }
        }
        Ok(())
    }
}

fn forbidden(message: impl Into<Cow<'static, str>>) -> Response {
    rpc_error(StatusCode::FORBIDDEN, codes::INVALID_REQUEST, message)
}

/// The guard as a tower layer around the routes it protects. Written out rather than as
/// axum's `from_fn` middleware, which clones the inner service and boxes two futures for
/// every request: this one passes a request on, or answers it, in place.
#[derive(Clone)]
pub(crate) struct GuardLayer(pub(crate) Arc<Guard>);

impl<S> tower_layer::Layer<S> for GuardLayer {
    type Service = Guarded<S>;

    fn layer(&self, inner: S) -> Guarded<S> {
        Guarded {
            guard: Arc::clone(&self.0),
            inner,
        }
    }
}

/// A service behind the guard ([`GuardLayer`]).
#[derive(Clone)]
pub(crate) struct Guarded<S> {
    guard: Arc<Guard>,
    inner: S,
}

impl<S> tower_service::Service<Request> for Guarded<S>
where
    S: tower_service::Service<Request, Response = Response>,
{
    type Response = Response;
    type Error = S::Error;
    type Future =
        futures::future::Either<std::future::Ready<Result<Response, S::Error>>, S::Future>;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request) -> Self::Future {
        match self.guard.check(&req) {
            Ok(()) => futures::future::Either::Right(self.inner.call(req)),
            Err(refusal) => futures::future::Either::Left(std::future::ready(Ok(refusal))),
        }
    }
}

/// Whether the `Accept` headers accept `mime` (`type/subtype`), directly or by a wildcard,
/// with a non-zero quality.
pub(crate) fn accepts(headers: &HeaderMap, mime: &str) -> bool {
    accepts_all(headers, [mime])
}

/// Whether the `Accept` headers accept every one of `mimes`, each as [`accepts`] says, in one
/// pass over the headers (a POST asks for two types; a pass for each cost ~250 more
/// instructions of a request's ~47,000, callgrind).
pub(crate) fn accepts_all<const N: usize>(headers: &HeaderMap, mimes: [&str; N]) -> bool {
    let mut missing = [true; N];
    for value in headers.get_all(header::ACCEPT) {
        let Ok(value) = value.to_str() else {
            continue;
        };
        for range in value.as_bytes().split(|&b| b == b',') {
            let Some(media) = acceptable_media(range) else {
                continue;
            };
            for (mime, missing) in mimes.iter().zip(missing.iter_mut()) {
                if *missing && media_matches(media, mime.as_bytes()) {
                    *missing = false;
                }
            }
        }
        if !missing.contains(&true) {
            return true;
        }
    }
    !missing.contains(&true)
}

/// The media range of one `Accept` element (`type/subtype;params`), or `None` when its
/// quality is zero.
fn acceptable_media(range: &[u8]) -> Option<&[u8]> {
    let mut parts = range.split(|&b| b == b';');
    let media = parts.next().unwrap_or_default().trim_ascii();
    let zero_quality = parts.any(|p| {
        p.trim_ascii()
            .strip_prefix(b"q=")
            .and_then(|q| std::str::from_utf8(q).ok()?.trim().parse::<f32>().ok())
            .is_some_and(|q| q <= 0.0)
    });
    (!zero_quality).then_some(media)
}

/// Whether the media range `media` covers `mime`: the same type, `*/*`, or `type/*`.
fn media_matches(media: &[u8], mime: &[u8]) -> bool {
    let (kind, _) = split_once(mime, b'/');
    let (range_kind, range_sub) = split_once(media, b'/');
    media.eq_ignore_ascii_case(mime)
        || media == b"*/*"
        || (range_kind.eq_ignore_ascii_case(kind) && range_sub == b"*")
}

/// `bytes` before and after the first `separator` (all of it and nothing without one).
fn split_once(bytes: &[u8], separator: u8) -> (&[u8], &[u8]) {
    match bytes.iter().position(|&b| b == separator) {
        Some(at) => (&bytes[..at], &bytes[at + 1..]),
        None => (bytes, &[]),
    }
}

/// The request's headers as handlers and layers see them ([`Ctx::http_headers`]): moved,
/// not copied; every header but the credentials (`Authorization`, `Cookie`), which the
/// server consumed and which must not travel further into user code or its logs. Values
/// that are not text are left out.
///
/// [`Ctx::http_headers`]: crate::Ctx::http_headers
pub(crate) fn http_headers(headers: HeaderMap) -> Arc<crate::conn::HttpHeaders> {
    Arc::new(crate::conn::HttpHeaders::of_request(headers))
}

/// Whether the request body is declared as JSON (`application/json`, any parameters).
pub(crate) fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            split_once(v.as_bytes(), b';')
                .0
                .trim_ascii()
                .eq_ignore_ascii_case(b"application/json")
        })
}

/// 415 for a body that is not declared as JSON.
pub(crate) fn unsupported_media_type(headers: &HeaderMap) -> Response {
    let got = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("(none)");
    rpc_error(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        codes::INVALID_REQUEST,
        format!(
            "Unsupported Media Type: the body must be Content-Type: application/json, not {got}"
        ),
    )
}

/// Reads a body up to `limit` bytes; 413 beyond it (the rest is never read). A body in one
/// chunk is kept as it arrived, one in several copied once (http-body-util's `Collected`).
pub(crate) async fn read_body(body: Body, limit: usize) -> Result<Bytes, Response> {
    use http_body_util::BodyExt as _;
    match http_body_util::Limited::new(body, limit).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => Err(payload_too_large(limit)),
        Err(e) => Err(bad_request(format!(
            "Bad Request: the body could not be read ({e})"
        ))),
    }
}

/// Decodes a body. One the transport holds alone (a large body, collected from several
/// reads into a buffer of its own) is taken over as the messages' frame rather than
/// copied: a 1 MiB argument is then never copied before the handler decodes it.
pub(crate) fn decode_body(bytes: Bytes) -> Incoming {
    if bytes.is_unique() {
        decode_owned(Vec::from(bytes))
    } else {
        decode(&bytes)
    }
}

/// Whether the request's `Content-Length` already exceeds `limit`.
pub(crate) fn declared_too_large(headers: &HeaderMap, limit: usize) -> bool {
    headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .is_some_and(|n| n > limit as u64)
}

/// 413 for a declared length beyond the limit.
pub(crate) fn payload_too_large(limit: usize) -> Response {
    rpc_error(
        StatusCode::PAYLOAD_TOO_LARGE,
        codes::INVALID_REQUEST,
        format!("Payload Too Large: the request body exceeds the {limit}-byte limit"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Handlers see every header as it came but the credentials the server consumed, and
    /// no value that is not text.
    #[test]
    fn handlers_see_the_headers_but_the_credentials() {
        let mut map = HeaderMap::new();
        map.insert(header::HOST, "localhost:8080".parse().unwrap());
        map.insert(header::AUTHORIZATION, "Bearer secret".parse().unwrap());
        map.append("x-trace", "one".parse().unwrap());
        map.append("x-trace", "two".parse().unwrap());
        map.insert(header::COOKIE, "session=secret".parse().unwrap());
        map.insert(
            "x-binary",
            header::HeaderValue::from_bytes(b"caf\xe9").unwrap(),
        );
        map.insert("mcp-method", "tools/call".parse().unwrap());
        let seen = http_headers(map);
        assert_eq!(
            seen.iter().collect::<Vec<_>>(),
            [
                ("host", "localhost:8080"),
                ("x-trace", "one"),
                ("x-trace", "two"),
                ("mcp-method", "tools/call"),
            ]
        );
        assert_eq!(seen.get("Mcp-Method"), Some("tools/call"));
        assert_eq!(seen.get("authorization"), None);
        assert_eq!(seen.get("Cookie"), None);
        assert_eq!(seen.get("not a header name"), None);
        assert_eq!(seen.get(""), None);
        // The credentials are kept in the map but never shown, printed or compared.
        assert!(!format!("{seen:?}").contains("secret"));
        let mut without = HeaderMap::new();
        for (name, value) in seen.iter() {
            without.append(
                header::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                value.parse().unwrap(),
            );
        }
        assert_eq!(*seen, *http_headers(without));
    }

    /// A body held alone (as a large body collected from several reads is) is not copied:
    /// the params, and so a tool call's arguments, are read where the body lies.
    #[test]
    fn a_body_held_alone_is_decoded_where_it_lies() {
        let text = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{}"}}}}}}"#,
            "x".repeat(100_000)
        );
        let body = Bytes::from(text.into_bytes());
        let lies = body.as_ptr_range();
        let Incoming::Single(Ok(crate::protocol::Message::Request(request))) = decode_body(body)
        else {
            panic!("not a request");
        };
        let params = request.params.expect("params");
        assert!(
            lies.contains(&params.get().as_ptr()),
            "the params were copied"
        );

        // A body still shared with the connection's buffer is read from a copy.
        let body = Bytes::from(br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{}}"#.to_vec());
        let held = body.clone();
        let Incoming::Single(Ok(crate::protocol::Message::Request(request))) = decode_body(body)
        else {
            panic!("not a request");
        };
        let params = request.params.expect("params");
        assert!(!held.as_ptr_range().contains(&params.get().as_ptr()));
        assert_eq!(params.get(), "{}");
    }

    fn chunked(chunks: &[&'static [u8]]) -> Body {
        let chunks: Vec<Result<Bytes, std::io::Error>> =
            chunks.iter().map(|c| Ok(Bytes::from_static(c))).collect();
        Body::from_stream(futures::stream::iter(chunks))
    }

    #[tokio::test]
    async fn a_body_is_read_whole_in_order_and_refused_past_the_limit() {
        let read = read_body(chunked(&[b"", b"{\"a\"", b"", b":1", b"}"]), 64).await;
        assert_eq!(read.ok().as_deref(), Some(&b"{\"a\":1}"[..]));
        // One chunk is handed on as it arrived, not copied.
        let one = Bytes::from_static(b"{\"b\":2}");
        let read = read_body(Body::from(one.clone()), 64).await.ok().unwrap();
        assert_eq!(read.as_ptr(), one.as_ptr());
        assert_eq!(
            read_body(Body::empty(), 64).await.ok().as_deref(),
            Some(&b""[..])
        );
        let over = read_body(chunked(&[b"0123456789", b"0123456789"]), 15).await;
        assert_eq!(
            over.err().map(|r| r.status()),
            Some(StatusCode::PAYLOAD_TOO_LARGE)
        );
        let exactly = read_body(chunked(&[b"01234", b"56789"]), 10).await;
        assert_eq!(exactly.ok().as_deref(), Some(&b"0123456789"[..]));
    }

    fn guard() -> Guard {
        let c = super::super::HttpConfig::default();
        Guard::new(&c.allowed_hosts, &c.allowed_origins, 1024).unwrap()
    }

    #[test]
    fn loopback_hosts_pass_on_any_port_and_others_do_not() {
        let g = guard();
        for h in [
            "localhost",
            "localhost:3000",
            "127.0.0.1:8080",
            "[::1]:9",
            "[::1]",
            "LOCALHOST:1",
        ] {
            assert!(g.host_allowed(h), "{h}");
        }
        for h in [
            "evil.example.com",
            "evil.example.com:3000",
            "localhost.evil.com",
            "127.0.0.2",
            "::1",
            "localhost:99999",
            "",
        ] {
            assert!(!g.host_allowed(h), "{h}");
        }
    }

    #[test]
    fn origins_match_scheme_host_and_port() {
        let g = guard();
        for o in [
            "http://localhost:3000",
            "https://127.0.0.1",
            "http://[::1]:8080",
        ] {
            assert!(g.origin_allowed(o), "{o}");
        }
        for o in [
            "http://evil.example.com",
            "null",
            "file://localhost",
            "http://user@localhost",
            "",
        ] {
            assert!(!g.origin_allowed(o), "{o}");
        }
        let g = Guard::new(
            &["x".into()],
            &["https://app.example.com:8443".into()],
            1024,
        )
        .unwrap();
        assert!(g.origin_allowed("https://app.example.com:8443"));
        assert!(!g.origin_allowed("https://app.example.com"));
        let g = Guard::new(&["x".into()], &["https://app.example.com:443".into()], 1024).unwrap();
        assert!(g.origin_allowed("https://app.example.com"));
    }

    #[test]
    fn accept_negotiation_understands_wildcards_and_quality() {
        let mut h = HeaderMap::new();
        h.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        assert!(accepts(&h, "application/json") && accepts(&h, "text/event-stream"));
        h.insert(header::ACCEPT, HeaderValue::from_static("*/*"));
        assert!(accepts(&h, "text/event-stream"));
        h.insert(
            header::ACCEPT,
            HeaderValue::from_static("text/*;q=0, application/json"),
        );
        assert!(!accepts(&h, "text/event-stream"));
        assert!(!accepts_all(&h, ["application/json", "text/event-stream"]));
        assert!(accepts_all(&h, ["application/json"]));
        // Each type may be accepted by a header of its own.
        h.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
        h.append(
            header::ACCEPT,
            HeaderValue::from_static("text/event-stream;q=0.5"),
        );
        assert!(accepts_all(&h, ["application/json", "text/event-stream"]));
        h.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/*, text/plain"),
        );
        assert!(!accepts_all(&h, ["application/json", "text/event-stream"]));
        h.remove(header::ACCEPT);
        assert!(!accepts(&h, "application/json"));
        assert!(!accepts_all(&h, ["application/json", "text/event-stream"]));
    }

    #[test]
    fn bad_rules_are_configuration_errors() {
        assert!(Guard::new(&["host:notaport".into()], &[], 1).is_err());
        assert!(Guard::new(&["ok".into()], &["no-scheme".into()], 1).is_err());
    }
}
