//! The verifiers' HTTP client: HTTPS only (plain http to loopback only by an explicit
//! opt-in), no redirects, a timeout on every exchange and a cap on every response body.

use std::fmt;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::http::{HeaderMap, HeaderValue, Method, Request, StatusCode, header};
use http_body_util::{BodyExt as _, Full, Limited};
use hyper::body::Bytes;
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use url::{Host, Url};

/// The default timeout of one exchange with the authorization server.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);
/// The default cap on a response body from the authorization server.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 256 * 1024;

/// Why a verifier could not be built or could not get what it needs from its
/// authorization server.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProviderError {
    /// The configuration is unusable: a malformed URL, plain `http` without
    /// [`FetchOptions::allow_http_loopback`], a certificate that does not parse, missing
    /// client credentials, a bound out of range.
    Config(String),
    /// The authorization server answered something this verifier must not use: metadata
    /// naming another issuer, a key set without a usable signing key, an answer that is
    /// not the JSON it should be.
    Refused(String),
    /// The authorization server could not be reached, timed out, answered with an error
    /// status, or sent more than the response cap.
    Unavailable(String),
}

impl fmt::Display for ProviderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ProviderError::Config(why) => write!(f, "invalid verifier configuration: {why}"),
            ProviderError::Refused(why) => {
                write!(f, "refused the authorization server's answer: {why}")
            }
            ProviderError::Unavailable(why) => {
                write!(f, "the authorization server is unavailable: {why}")
            }
        }
    }
}

impl std::error::Error for ProviderError {}

/// How a verifier talks to its authorization server: timeouts, response caps, trusted
/// roots, and whether plain `http` to a loopback address is allowed (for tests).
///
/// HTTPS is required for discovery, the key set and introspection: the keys and answers
/// fetched decide who may call this server, so a network attacker who could alter them
/// could mint any identity. The operating system's root certificates are trusted, plus
/// any added with [`root_certificate_pem`](FetchOptions::root_certificate_pem).
///
/// ```
/// use std::time::Duration;
/// use mcp::auth::bearer::FetchOptions;
///
/// let options = FetchOptions::new()
///     .timeout(Duration::from_secs(3))
///     .max_response_bytes(64 * 1024);
/// # let _ = options;
/// ```
#[derive(Clone)]
pub struct FetchOptions {
    timeout: Duration,
    max_response_bytes: usize,
    allow_http_loopback: bool,
    extra_roots: Vec<rustls::pki_types::CertificateDer<'static>>,
    root_errors: Vec<String>,
}

impl fmt::Debug for FetchOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FetchOptions")
            .field("timeout", &self.timeout)
            .field("max_response_bytes", &self.max_response_bytes)
            .field("allow_http_loopback", &self.allow_http_loopback)
            .field("extra_roots", &self.extra_roots.len())
            .finish()
    }
}

impl Default for FetchOptions {
    fn default() -> Self {
        FetchOptions::new()
    }
}

impl FetchOptions {
    /// HTTPS only, a 5 s timeout per exchange, responses up to 256 KiB, the operating
    /// system's roots.
    pub fn new() -> Self {
        FetchOptions {
            timeout: DEFAULT_TIMEOUT,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            allow_http_loopback: false,
            extra_roots: Vec::new(),
            root_errors: Vec::new(),
        }
    }

    /// The time one exchange (connect, send, read the whole answer) may take.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The largest response body accepted; a larger one fails the exchange.
    pub fn max_response_bytes(mut self, bytes: usize) -> Self {
        self.max_response_bytes = bytes;
        self
    }

    /// **For tests only.** Allows plain `http://` URLs whose host is a loopback address
    /// (`127.0.0.0/8`, `[::1]`, `localhost`), so a test can run an identity provider on
    /// its own machine without a certificate. Any other `http` URL is still refused:
    /// keys and introspection answers fetched in the clear could be replaced by anyone on
    /// the path, and with them every identity this server trusts.
    pub fn allow_http_loopback(mut self) -> Self {
        self.allow_http_loopback = true;
        self
    }

    /// Trusts the certificates of a PEM document as roots, besides the operating
    /// system's (an internal CA, or a test's self-signed certificate). A document that
    /// holds no certificate makes the verifier's `build` fail.
    pub fn root_certificate_pem(mut self, pem: &[u8]) -> Self {
        use rustls::pki_types::pem::PemObject as _;
        let mut found = 0;
        for cert in rustls::pki_types::CertificateDer::pem_slice_iter(pem) {
            match cert {
                Ok(cert) => {
                    found += 1;
                    self.extra_roots.push(cert);
                }
                Err(e) => self.root_errors.push(format!("root certificate PEM: {e}")),
            }
        }
        if found == 0 && self.root_errors.is_empty() {
            self.root_errors
                .push("the root certificate PEM holds no certificate".into());
        }
        self
    }

    pub(super) fn http_loopback_allowed(&self) -> bool {
        self.allow_http_loopback
    }
}

/// The client one verifier uses for every exchange.
#[derive(Clone)]
pub(crate) struct Fetcher {
    client: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
    timeout: Duration,
    max_response_bytes: usize,
    allow_http_loopback: bool,
}

/// A response read whole.
pub(crate) struct Fetched {
    pub(crate) status: StatusCode,
    pub(super) headers: HeaderMap,
    pub(crate) body: Bytes,
}

impl Fetcher {
    pub(crate) fn new(options: &FetchOptions) -> Result<Self, ProviderError> {
        if let Some(e) = options.root_errors.first() {
            return Err(ProviderError::Config(e.clone()));
        }
        if options.timeout.is_zero() {
            return Err(ProviderError::Config("the timeout must not be zero".into()));
        }
        if options.max_response_bytes == 0 {
            return Err(ProviderError::Config(
                "the response cap must not be zero".into(),
            ));
        }
        let mut roots = rustls::RootCertStore::empty();
        let native = rustls_native_certs::load_native_certs();
        for e in &native.errors {
            tracing::debug!(target: "mcp::auth", error = %e, "reading the system's root certificates");
        }
        let (_, ignored) = roots.add_parsable_certificates(native.certs);
        if ignored > 0 {
            tracing::debug!(target: "mcp::auth", ignored, "unparsable system root certificates");
        }
        for cert in &options.extra_roots {
            roots.add(cert.clone()).map_err(|e| {
                ProviderError::Config(format!(
                    "root certificate not usable as a trust anchor: {e}"
                ))
            })?;
        }
        if roots.is_empty() {
            tracing::warn!(
                target: "mcp::auth",
                "no trusted root certificates (the system has none, and none were added): HTTPS to the authorization server will fail"
            );
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| ProviderError::Config(format!("TLS: {e}")))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_connect_timeout(Some(options.timeout));
        http.set_nodelay(true);
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .wrap_connector(http);
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .pool_max_idle_per_host(2)
            .build(connector);
        Ok(Fetcher {
            client,
            timeout: options.timeout,
            max_response_bytes: options.max_response_bytes,
            allow_http_loopback: options.allow_http_loopback,
        })
    }

    /// Parses and checks a URL this verifier will fetch: `https`, or `http` to a loopback
    /// host with the opt-in; no credentials, no fragment.
    pub(crate) fn check_url(&self, raw: &str, what: &str) -> Result<Url, ProviderError> {
        check_url(raw, what, self.allow_http_loopback)
    }

    /// GETs `url`.
    pub(super) async fn get(&self, url: &Url) -> Result<Fetched, ProviderError> {
        let request = Request::builder()
            .method(Method::GET)
            .uri(url.as_str())
            .header(header::ACCEPT, HeaderValue::from_static("application/json"))
            .header(header::USER_AGENT, user_agent())
            .body(Full::new(Bytes::new()))
            .map_err(|e| ProviderError::Config(format!("{url}: {e}")))?;
        self.exchange(url, request).await
    }

    /// POSTs a form to `url`, with an `Authorization` header if given.
    pub(crate) async fn post_form(
        &self,
        url: &Url,
        form: String,
        authorization: Option<HeaderValue>,
    ) -> Result<Fetched, ProviderError> {
        let mut builder = Request::builder()
            .method(Method::POST)
            .uri(url.as_str())
            .header(header::ACCEPT, HeaderValue::from_static("application/json"))
            .header(header::USER_AGENT, user_agent())
            .header(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/x-www-form-urlencoded"),
            );
        if let Some(value) = authorization {
            builder = builder.header(header::AUTHORIZATION, value);
        }
        let request = builder
            .body(Full::new(Bytes::from(form)))
            .map_err(|e| ProviderError::Config(format!("{url}: {e}")))?;
        self.exchange(url, request).await
    }

    async fn exchange(
        &self,
        url: &Url,
        request: Request<Full<Bytes>>,
    ) -> Result<Fetched, ProviderError> {
        // Checked again here, so no path reaches the network with a URL the opt-in does
        // not allow.
        self.check_url(url.as_str(), "URL")?;
        let max = self.max_response_bytes;
        let work = async {
            let response =
                self.client.request(request).await.map_err(|e| {
                    ProviderError::Unavailable(format!("{url}: {}", error_chain(&e)))
                })?;
            let (parts, body) = response.into_parts();
            if let Some(length) = parts
                .headers
                .get(header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<u64>().ok())
                && length > max as u64
            {
                return Err(ProviderError::Unavailable(format!(
                    "{url}: the response is {length} bytes, more than the cap of {max}"
                )));
            }
            let body = Limited::new(body, max)
                .collect()
                .await
                .map_err(|e| {
                    if e.is::<http_body_util::LengthLimitError>() {
                        ProviderError::Unavailable(format!(
                            "{url}: the response is larger than the cap of {max} bytes"
                        ))
                    } else {
                        ProviderError::Unavailable(format!("{url}: reading the response: {e}"))
                    }
                })?
                .to_bytes();
            Ok(Fetched {
                status: parts.status,
                headers: parts.headers,
                body,
            })
        };
        match tokio::time::timeout(self.timeout, work).await {
            Ok(result) => result,
            Err(_) => Err(ProviderError::Unavailable(format!(
                "{url}: no complete answer within {:?}",
                self.timeout
            ))),
        }
    }
}

/// `client_secret_basic` (RFC 6749 §2.3.1): each part form-encoded, then Basic-encoded.
pub(crate) fn basic_authorization(
    client_id: &str,
    secret: &str,
) -> Result<HeaderValue, ProviderError> {
    use base64::Engine as _;
    let id: String = form_urlencoded::byte_serialize(client_id.as_bytes()).collect();
    let secret: String = form_urlencoded::byte_serialize(secret.as_bytes()).collect();
    let encoded = base64::engine::general_purpose::STANDARD.encode(format!("{id}:{secret}"));
    HeaderValue::from_str(&format!("Basic {encoded}"))
        .map_err(|_| ProviderError::Config("the client credentials make no valid header".into()))
}

fn user_agent() -> HeaderValue {
    HeaderValue::from_static(concat!("mcp-guarded/", env!("CARGO_PKG_VERSION")))
}

/// The error and its sources on one line (hyper's top-level errors say little alone).
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

pub(super) fn check_url(
    raw: &str,
    what: &str,
    allow_http_loopback: bool,
) -> Result<Url, ProviderError> {
    let url = Url::parse(raw)
        .map_err(|e| ProviderError::Config(format!("the {what} {raw:?} is not a URL: {e}")))?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err(ProviderError::Config(format!(
            "the {what} {raw:?} must not carry credentials"
        )));
    }
    if url.fragment().is_some() {
        return Err(ProviderError::Config(format!(
            "the {what} {raw:?} must not have a fragment"
        )));
    }
    match url.scheme() {
        "https" => Ok(url),
        "http" if allow_http_loopback && is_loopback(&url) => Ok(url),
        "http" if allow_http_loopback => Err(ProviderError::Config(format!(
            "the {what} {raw:?} is plain http to a host that is not loopback; \
             allow_http_loopback() permits http only to 127.0.0.0/8, [::1] and localhost"
        ))),
        "http" => Err(ProviderError::Config(format!(
            "the {what} {raw:?} is plain http; the authorization server must be reached over \
             HTTPS (for a test identity provider on this machine, opt in with allow_http_loopback())"
        ))),
        other => Err(ProviderError::Config(format!(
            "the {what} {raw:?} has the scheme {other:?}; only https is accepted"
        ))),
    }
}

fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(Host::Ipv4(ip)) => IpAddr::V4(ip).is_loopback(),
        Some(Host::Ipv6(ip)) => IpAddr::V6(ip).is_loopback(),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_https_or_opted_in_loopback_http_is_accepted() {
        assert!(check_url("https://as.example.com", "issuer", false).is_ok());
        let e = check_url("http://127.0.0.1:8080", "issuer", false).unwrap_err();
        assert!(e.to_string().contains("allow_http_loopback"), "{e}");
        assert!(check_url("http://127.0.0.1:8080", "issuer", true).is_ok());
        assert!(check_url("http://127.1.2.3", "issuer", true).is_ok());
        assert!(check_url("http://[::1]:9/x", "issuer", true).is_ok());
        assert!(check_url("http://localhost:9", "issuer", true).is_ok());
        assert!(check_url("http://as.example.com", "issuer", true).is_err());
        assert!(check_url("http://10.0.0.1", "issuer", true).is_err());
        assert!(check_url("ftp://as.example.com", "issuer", true).is_err());
        assert!(check_url("https://u:p@as.example.com", "issuer", false).is_err());
        assert!(check_url("https://as.example.com/#x", "issuer", false).is_err());
        assert!(check_url("not a url", "issuer", false).is_err());
    }

    #[test]
    fn bad_options_are_refused() {
        let opts = FetchOptions::new().root_certificate_pem(b"nothing here");
        assert!(matches!(Fetcher::new(&opts), Err(ProviderError::Config(_))));
        let opts = FetchOptions::new().timeout(Duration::ZERO);
        assert!(matches!(Fetcher::new(&opts), Err(ProviderError::Config(_))));
        let opts = FetchOptions::new().max_response_bytes(0);
        assert!(matches!(Fetcher::new(&opts), Err(ProviderError::Config(_))));
    }
}
