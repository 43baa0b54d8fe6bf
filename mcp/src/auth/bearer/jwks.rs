//! JWTs verified with the keys an authorization server publishes: discovery, a cached key
//! set that follows the provider's cache headers, refresh on an unknown key id (rate
//! limited), and a bounded tolerance for a provider that is down.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use axum::http::{HeaderMap, StatusCode, header};
use jsonwebtoken::Algorithm;
use jsonwebtoken::jwk::Jwk;
use parking_lot::RwLock;
use serde::Deserialize;
use url::Url;

use super::discovery::{self, Discovered};
use super::fetch::{FetchOptions, Fetcher, ProviderError};
use super::jwt::{self, Checks, Key};
use super::{Principal, TokenError, TokenVerifier, VerifyFuture};

/// The shortest time a fetched key set is kept, whatever the provider's headers say.
pub const DEFAULT_MIN_CACHE_TTL: Duration = Duration::from_secs(60);
/// The longest time a fetched key set is kept before it is fetched again.
pub const DEFAULT_MAX_CACHE_TTL: Duration = Duration::from_secs(24 * 3600);
/// How long a key set is kept when the provider sends no cache headers.
pub const DEFAULT_CACHE_TTL: Duration = Duration::from_secs(600);
/// The shortest interval between two fetches of the key set (a token naming an unknown
/// key, or an expired cache while the provider fails).
pub const DEFAULT_REFRESH_INTERVAL: Duration = Duration::from_secs(30);
/// How long past its cache lifetime a key set still verifies tokens while the provider
/// cannot be reached.
pub const DEFAULT_MAX_STALE: Duration = Duration::from_secs(3600);

/// Verifies JWT access tokens with the signing keys its authorization server publishes.
///
/// Give it the issuer and this server's canonical resource URI (the audience tokens must
/// name). It finds the key set's URL (`jwks_uri`) in the issuer's metadata, at
/// `/.well-known/oauth-authorization-server` (RFC 8414, with the well-known path inserted
/// before an issuer's path) or `/.well-known/openid-configuration`, and refuses metadata
/// whose `issuer` is not exactly the configured one. Then, on the first token:
///
/// - **Caching.** The key set is fetched over HTTPS and kept as long as its
///   `Cache-Control: max-age` (less `Age`) or `Expires` says, within
///   [`cache_ttl_bounds`](JwksVerifierBuilder::cache_ttl_bounds) (default 1 minute to
///   24 hours; 10 minutes without either header).
/// - **Rotation.** A token whose `kid` is not in the set makes the verifier fetch the set
///   again, at most once per
///   [`refresh_interval`](JwksVerifierBuilder::refresh_interval) (30 s): a new key is
///   picked up on its first token, and a flood of tokens with made-up key ids costs the
///   provider one request per interval, not one per token.
/// - **Outages.** When the set has expired and the provider fails (error status, timeout,
///   bad document), the old keys keep verifying for
///   [`max_stale`](JwksVerifierBuilder::max_stale) (1 hour) past their lifetime; after
///   that every token is refused with [`TokenError::Unavailable`] (503 over HTTP) naming
///   the provider's failure, until it answers again.
/// - **Algorithms.** Each key verifies only its own family: RSA keys RS256/384/512 and
///   PS256/384/512, P-256 keys ES256, P-384 keys ES384, Ed25519 keys EdDSA, or only the
///   `alg` the key names. Symmetric (`oct`) keys are never taken from a key set, so HS*
///   tokens are refused, and `none` always is.
///
/// HTTPS is required for the issuer and `jwks_uri` (see [`FetchOptions`]); every fetch
/// has a timeout and a response cap. Fetches and failures are logged under the
/// `mcp::auth` target.
///
/// ```no_run
/// use mcp::auth::bearer::JwksVerifier;
/// use mcp::transport::http::{BearerAuth, HttpConfig};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let resource = "https://mcp.example.com/mcp";
/// let verifier = JwksVerifier::discover("https://auth.example.com", resource).build()?;
/// // Optional: fetch the metadata and the keys now, so a wrong issuer stops the boot.
/// verifier.fetch_keys().await?;
/// // The issuer becomes the metadata's authorization server.
/// let config = HttpConfig::new()
///     .allow_host("mcp.example.com")
///     .bearer_auth(BearerAuth::new(verifier, resource).required_scopes(["mcp:use"]));
/// # let _ = config;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct JwksVerifier {
    inner: Arc<Inner>,
}

struct Inner {
    checks: Checks,
    issuer_url: Url,
    /// Configured, or found by discovery.
    jwks_uri: Option<Url>,
    discovered: Discovered,
    fetcher: Fetcher,
    policy: Policy,
    keys: RwLock<Option<Arc<KeySet>>>,
    refresh: tokio::sync::Mutex<RefreshState>,
}

#[derive(Clone, Copy, Debug)]
struct Policy {
    min_ttl: Duration,
    max_ttl: Duration,
    default_ttl: Duration,
    refresh_interval: Duration,
    max_stale: Duration,
}

struct KeySet {
    keys: Vec<Key>,
    generation: u64,
    fresh_until: Instant,
}

#[derive(Default)]
struct RefreshState {
    last_attempt: Option<Instant>,
    last_error: Option<String>,
}

impl fmt::Debug for JwksVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let keys = self.inner.keys.read().as_ref().map(|k| k.keys.len());
        f.debug_struct("JwksVerifier")
            .field("issuer", &self.inner.checks.issuer)
            .field("audience", &self.inner.checks.audience)
            .field("jwks_uri", &self.inner.jwks_uri.as_ref().map(Url::as_str))
            .field("keys", &keys)
            .field("policy", &self.inner.policy)
            .finish()
    }
}

/// Builds a [`JwksVerifier`]; from [`JwksVerifier::discover`] or
/// [`JwksVerifier::from_jwks_uri`].
#[derive(Clone, Debug)]
pub struct JwksVerifierBuilder {
    issuer: String,
    audience: String,
    jwks_uri: Option<String>,
    leeway: Duration,
    fetch: FetchOptions,
    policy: Policy,
}

impl JwksVerifier {
    /// A verifier for the tokens of `issuer` (an https URL) meant for `audience` (this
    /// server's canonical resource URI), finding the key set by the issuer's metadata.
    pub fn discover(issuer: impl Into<String>, audience: impl Into<String>) -> JwksVerifierBuilder {
        JwksVerifierBuilder::new(issuer.into(), audience.into(), None)
    }

    /// Like [`discover`](Self::discover), with the key set's URL given instead of
    /// discovered.
    pub fn from_jwks_uri(
        jwks_uri: impl Into<String>,
        issuer: impl Into<String>,
        audience: impl Into<String>,
    ) -> JwksVerifierBuilder {
        JwksVerifierBuilder::new(issuer.into(), audience.into(), Some(jwks_uri.into()))
    }

    /// The issuer tokens must name.
    pub fn issuer(&self) -> &str {
        &self.inner.checks.issuer
    }

    /// The audience tokens must name.
    pub fn audience(&self) -> &str {
        &self.inner.checks.audience
    }

    /// Fetches the metadata (when discovering) and the key set now, whatever the cache
    /// holds, and returns how many usable keys it has. Call it at boot to stop on a wrong
    /// issuer or an unreachable provider; verification does not need it. Not rate limited.
    pub async fn fetch_keys(&self) -> Result<usize, ProviderError> {
        let mut state = self.inner.refresh.lock().await;
        state.last_attempt = Some(Instant::now());
        let result = self.inner.fetch().await;
        match result {
            Ok(set) => {
                state.last_error = None;
                Ok(self.inner.store(set).keys.len())
            }
            Err(e) => {
                state.last_error = Some(e.to_string());
                Err(e)
            }
        }
    }

    /// Verifies a token: its signature with a key of the current set (fetching or
    /// refreshing the set when needed), then its issuer, audience, expiry and not-before.
    pub async fn verify_token(&self, token: &str) -> Result<Principal, TokenError> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|e| TokenError::Invalid(format!("malformed token ({e})")))?;
        if !is_public_key_algorithm(header.alg) {
            return Err(TokenError::Invalid(format!(
                "tokens signed with {:?} are not accepted: the keys of a key set are public keys (RS*, PS*, ES*, EdDSA)",
                header.alg
            )));
        }
        let mut keys = self.inner.usable_keys().await?;
        if jwt::candidates(&keys.keys, &header).is_empty() && header.kid.is_some() {
            // A key this set does not have: perhaps a rotation. Fetch again (at most once
            // per refresh interval, whoever asks).
            keys = self
                .inner
                .refresh(Reason::UnknownKid(keys.generation))
                .await?;
        }
        self.inner.checks.verify(&keys.keys, &header, token)
    }
}

fn is_public_key_algorithm(alg: Algorithm) -> bool {
    use Algorithm::*;
    matches!(
        alg,
        RS256 | RS384 | RS512 | PS256 | PS384 | PS512 | ES256 | ES384 | EdDSA
    )
}

impl TokenVerifier for JwksVerifier {
    fn verify<'a>(&'a self, token: &'a str) -> VerifyFuture<'a> {
        Box::pin(self.verify_token(token))
    }

    fn issuer(&self) -> Option<&str> {
        Some(&self.inner.checks.issuer)
    }
}

enum Reason {
    Expired,
    UnknownKid(u64),
}

impl Inner {
    fn snapshot(&self) -> Option<Arc<KeySet>> {
        self.keys.read().clone()
    }

    async fn usable_keys(&self) -> Result<Arc<KeySet>, TokenError> {
        if let Some(set) = self.snapshot()
            && Instant::now() < set.fresh_until
        {
            return Ok(set);
        }
        self.refresh(Reason::Expired).await
    }

    /// Fetches the key set again unless another caller just did, or the last attempt was
    /// less than the refresh interval ago; then the keys to verify with, stale ones
    /// included within the bound.
    async fn refresh(&self, reason: Reason) -> Result<Arc<KeySet>, TokenError> {
        let mut state = self.refresh.lock().await;
        let current = self.snapshot();
        match (&reason, &current) {
            (Reason::Expired, Some(set)) if Instant::now() < set.fresh_until => {
                return Ok(set.clone());
            }
            (Reason::UnknownKid(seen), Some(set)) if set.generation != *seen => {
                return Ok(set.clone());
            }
            _ => {}
        }
        if let Some(at) = state.last_attempt
            && at.elapsed() < self.policy.refresh_interval
        {
            return self.stale_or_fail(current, state.last_error.as_deref());
        }
        state.last_attempt = Some(Instant::now());
        match self.fetch().await {
            Ok(set) => {
                state.last_error = None;
                Ok(self.store(set))
            }
            Err(e) => {
                tracing::warn!(
                    target: "mcp::auth",
                    issuer = %self.checks.issuer,
                    error = %e,
                    "fetching the authorization server's signing keys failed"
                );
                let why = e.to_string();
                state.last_error = Some(why.clone());
                self.stale_or_fail(current, Some(&why))
            }
        }
    }

    fn stale_or_fail(
        &self,
        current: Option<Arc<KeySet>>,
        error: Option<&str>,
    ) -> Result<Arc<KeySet>, TokenError> {
        let why = error.unwrap_or("not fetched yet");
        match current {
            Some(set) if Instant::now() < set.fresh_until + self.policy.max_stale => Ok(set),
            Some(_) => Err(TokenError::Unavailable(format!(
                "the signing keys of {} expired more than {:?} ago and cannot be refreshed ({why}); \
                 tokens are refused until the authorization server answers",
                self.checks.issuer, self.policy.max_stale
            ))),
            None => Err(TokenError::Unavailable(format!(
                "the signing keys of {} could not be fetched ({why})",
                self.checks.issuer
            ))),
        }
    }

    fn store(&self, set: (Vec<Key>, Duration)) -> Arc<KeySet> {
        let (keys, ttl) = set;
        let mut slot = self.keys.write();
        let generation = slot.as_ref().map_or(0, |s| s.generation + 1);
        let set = Arc::new(KeySet {
            keys,
            generation,
            fresh_until: Instant::now() + ttl,
        });
        *slot = Some(set.clone());
        set
    }

    async fn jwks_uri(&self) -> Result<Url, ProviderError> {
        if let Some(url) = &self.jwks_uri {
            return Ok(url.clone());
        }
        let metadata = self
            .discovered
            .get(
                &self.fetcher,
                &self.checks.issuer,
                &self.issuer_url,
                Duration::ZERO,
            )
            .await?;
        let Some(raw) = metadata.jwks_uri else {
            return Err(ProviderError::Refused(format!(
                "the metadata at {} has no jwks_uri",
                metadata.url
            )));
        };
        self.fetcher.check_url(&raw, "jwks_uri")
    }

    /// Fetches and parses the key set: its usable keys and how long to keep them.
    async fn fetch(&self) -> Result<(Vec<Key>, Duration), ProviderError> {
        let url = self.jwks_uri().await?;
        let fetched = self.fetcher.get(&url).await?;
        if fetched.status != StatusCode::OK {
            return Err(ProviderError::Unavailable(format!(
                "{url} answered {}",
                fetched.status
            )));
        }
        let keys = parse_key_set(&fetched.body)
            .map_err(|why| ProviderError::Refused(format!("the key set at {url}: {why}")))?;
        let ttl = cache_ttl(&fetched.headers, SystemTime::now(), &self.policy);
        tracing::debug!(target: "mcp::auth", %url, keys = keys.len(), ?ttl, "signing keys fetched");
        Ok((keys, ttl))
    }
}

#[derive(Deserialize)]
struct RawKeySet {
    keys: Vec<serde_json::Value>,
}

/// The usable signing keys of a key set document. A key that does not parse, or is not
/// one this verifier uses, is skipped (a provider may publish keys of kinds this server
/// does not know); a document without any usable key is refused.
fn parse_key_set(body: &[u8]) -> Result<Vec<Key>, String> {
    let raw: RawKeySet =
        serde_json::from_slice(body).map_err(|e| format!("not a JWKS document ({e})"))?;
    let mut keys = Vec::new();
    for value in raw.keys {
        let jwk: Jwk = match serde_json::from_value(value) {
            Ok(jwk) => jwk,
            Err(e) => {
                tracing::debug!(target: "mcp::auth", error = %e, "key set entry skipped");
                continue;
            }
        };
        match jwt::key_from_jwk(&jwk, false) {
            Ok(Some(key)) => keys.push(key),
            Ok(None) => {}
            Err(e) => tracing::debug!(target: "mcp::auth", error = %e, "key set entry skipped"),
        }
    }
    if keys.is_empty() {
        return Err("no usable signing key".into());
    }
    Ok(keys)
}

/// How long to keep a response, from its `Cache-Control` (`no-store`, `no-cache`,
/// `max-age` less `Age`) or its `Expires` (against its `Date`), within the policy's
/// bounds.
fn cache_ttl(headers: &HeaderMap, now: SystemTime, policy: &Policy) -> Duration {
    let clamp = |d: Duration| d.clamp(policy.min_ttl, policy.max_ttl);
    let text = |name| {
        headers
            .get(name)
            .and_then(|v: &axum::http::HeaderValue| v.to_str().ok())
    };
    if let Some(cc) = text(header::CACHE_CONTROL) {
        let mut max_age = None;
        for directive in cc.split(',') {
            let directive = directive.trim();
            let (name, value) = directive.split_once('=').unwrap_or((directive, ""));
            let name = name.trim().to_ascii_lowercase();
            match name.as_str() {
                "no-store" | "no-cache" => return policy.min_ttl,
                "max-age" => max_age = value.trim().trim_matches('"').parse::<u64>().ok(),
                _ => {}
            }
        }
        if let Some(secs) = max_age {
            let age = text(header::AGE)
                .and_then(|v| v.trim().parse::<u64>().ok())
                .unwrap_or(0);
            return clamp(Duration::from_secs(secs.saturating_sub(age)));
        }
    }
    if let Some(expires) = text(header::EXPIRES) {
        // An invalid Expires means already expired (RFC 9111 §5.3).
        let Ok(expires) = httpdate::parse_http_date(expires) else {
            return policy.min_ttl;
        };
        let date = text(header::DATE)
            .and_then(|d| httpdate::parse_http_date(d).ok())
            .unwrap_or(now);
        return clamp(expires.duration_since(date).unwrap_or(Duration::ZERO));
    }
    clamp(policy.default_ttl)
}

impl JwksVerifierBuilder {
    fn new(issuer: String, audience: String, jwks_uri: Option<String>) -> Self {
        JwksVerifierBuilder {
            issuer,
            audience,
            jwks_uri,
            leeway: jwt::DEFAULT_LEEWAY,
            fetch: FetchOptions::new(),
            policy: Policy {
                min_ttl: DEFAULT_MIN_CACHE_TTL,
                max_ttl: DEFAULT_MAX_CACHE_TTL,
                default_ttl: DEFAULT_CACHE_TTL,
                refresh_interval: DEFAULT_REFRESH_INTERVAL,
                max_stale: DEFAULT_MAX_STALE,
            },
        }
    }

    /// The clock skew tolerated on `exp` and `nbf` (default 30 s).
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway;
        self
    }

    /// The bounds on how long a fetched key set is kept, whatever its cache headers say
    /// (default 1 minute and 24 hours). The lower bound protects the provider from a
    /// `max-age=0`; the upper one makes a removed key go away eventually.
    pub fn cache_ttl_bounds(mut self, min: Duration, max: Duration) -> Self {
        self.policy.min_ttl = min;
        self.policy.max_ttl = max;
        self
    }

    /// How long a key set without cache headers is kept (default 10 minutes; held
    /// within the bounds).
    pub fn default_cache_ttl(mut self, ttl: Duration) -> Self {
        self.policy.default_ttl = ttl;
        self
    }

    /// The shortest interval between two fetches of the key set, for an unknown `kid` or
    /// a retry while the provider fails (default 30 s).
    pub fn refresh_interval(mut self, interval: Duration) -> Self {
        self.policy.refresh_interval = interval;
        self
    }

    /// How long past its cache lifetime a key set still verifies tokens while it cannot
    /// be refreshed (default 1 hour). After that, tokens are refused until the provider
    /// answers. `Duration::ZERO` fails closed as soon as the set expires.
    pub fn max_stale(mut self, max_stale: Duration) -> Self {
        self.policy.max_stale = max_stale;
        self
    }

    /// How the verifier reaches the provider (timeout, response cap, roots).
    pub fn fetch_options(mut self, options: FetchOptions) -> Self {
        self.fetch = options;
        self
    }

    /// **For tests only**: allows plain `http` to a loopback issuer and key set
    /// ([`FetchOptions::allow_http_loopback`]).
    pub fn allow_http_loopback(mut self) -> Self {
        self.fetch = self.fetch.allow_http_loopback();
        self
    }

    /// Checks the configuration and builds the verifier. Nothing is fetched until the
    /// first token or [`JwksVerifier::fetch_keys`].
    pub fn build(self) -> Result<JwksVerifier, ProviderError> {
        let mut checks = Checks::new(self.issuer, self.audience).map_err(ProviderError::Config)?;
        checks.leeway = self.leeway;
        let p = self.policy;
        if p.min_ttl.is_zero() || p.min_ttl > p.max_ttl {
            return Err(ProviderError::Config(format!(
                "the cache lifetime bounds must satisfy 0 < min <= max (min {:?}, max {:?})",
                p.min_ttl, p.max_ttl
            )));
        }
        if p.refresh_interval.is_zero() {
            return Err(ProviderError::Config(
                "the refresh interval must not be zero: it is what keeps a flood of unknown key ids from reaching the provider"
                    .into(),
            ));
        }
        let fetcher = Fetcher::new(&self.fetch)?;
        let issuer_url = discovery::check_issuer(&fetcher, &checks.issuer)?;
        let jwks_uri = match &self.jwks_uri {
            Some(raw) => Some(fetcher.check_url(raw, "jwks_uri")?),
            None => None,
        };
        if self.fetch.http_loopback_allowed() {
            tracing::warn!(
                target: "mcp::auth",
                issuer = %checks.issuer,
                "allow_http_loopback: signing keys may be fetched over plain http from this machine; never use this outside tests"
            );
        }
        Ok(JwksVerifier {
            inner: Arc::new(Inner {
                checks,
                issuer_url,
                jwks_uri,
                discovered: Discovered::new(),
                fetcher,
                policy: p,
                keys: RwLock::new(None),
                refresh: tokio::sync::Mutex::new(RefreshState::default()),
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn policy() -> Policy {
        Policy {
            min_ttl: Duration::from_secs(60),
            max_ttl: Duration::from_secs(3600),
            default_ttl: Duration::from_secs(600),
            refresh_interval: Duration::from_secs(30),
            max_stale: Duration::from_secs(300),
        }
    }

    fn ttl(pairs: &[(&'static str, &str)]) -> Duration {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        let now = httpdate::parse_http_date("Tue, 01 Dec 2026 10:00:00 GMT").unwrap();
        cache_ttl(&h, now, &policy())
    }

    #[test]
    fn cache_headers_are_honoured_within_bounds() {
        assert_eq!(ttl(&[]), Duration::from_secs(600));
        assert_eq!(
            ttl(&[("cache-control", "public, max-age=900")]),
            Duration::from_secs(900)
        );
        assert_eq!(
            ttl(&[("cache-control", "max-age=900"), ("age", "100")]),
            Duration::from_secs(800)
        );
        // Floor and ceiling.
        assert_eq!(
            ttl(&[("cache-control", "max-age=0")]),
            Duration::from_secs(60)
        );
        assert_eq!(
            ttl(&[("cache-control", "no-store")]),
            Duration::from_secs(60)
        );
        assert_eq!(
            ttl(&[("cache-control", "max-age=99999999")]),
            Duration::from_secs(3600)
        );
        // Expires against Date, or against now.
        assert_eq!(
            ttl(&[
                ("date", "Tue, 01 Dec 2026 10:00:00 GMT"),
                ("expires", "Tue, 01 Dec 2026 10:20:00 GMT")
            ]),
            Duration::from_secs(1200)
        );
        assert_eq!(
            ttl(&[("expires", "Tue, 01 Dec 2026 10:05:00 GMT")]),
            Duration::from_secs(300)
        );
        assert_eq!(ttl(&[("expires", "0")]), Duration::from_secs(60));
        // max-age wins over Expires.
        assert_eq!(
            ttl(&[
                ("cache-control", "max-age=120"),
                ("expires", "Tue, 01 Dec 2026 10:20:00 GMT")
            ]),
            Duration::from_secs(120)
        );
    }

    #[test]
    fn key_sets_keep_only_public_signing_keys() {
        // An oct key (a shared secret) is never taken from a key set; an unknown kty is
        // skipped; an RSA key claiming an HMAC alg is skipped.
        let doc = serde_json::json!({"keys": [
            {"kty": "oct", "k": "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0", "alg": "HS256", "kid": "h"},
            {"kty": "weird", "kid": "w"},
        ]});
        assert!(parse_key_set(doc.to_string().as_bytes()).is_err());
        assert!(parse_key_set(b"{}").is_err());
        assert!(parse_key_set(b"nope").is_err());
    }

    #[test]
    fn bad_configurations_are_refused() {
        let b = || JwksVerifier::discover("https://as.example.com", "https://mcp.example.com/mcp");
        assert!(b().build().is_ok());
        assert!(matches!(
            JwksVerifier::discover("http://as.example.com", "https://r/mcp").build(),
            Err(ProviderError::Config(m)) if m.contains("allow_http_loopback")
        ));
        assert!(
            JwksVerifier::discover("https://as.example.com?x=1", "https://r/mcp")
                .build()
                .is_err()
        );
        assert!(
            JwksVerifier::discover("https://as.example.com", " ")
                .build()
                .is_err()
        );
        assert!(b().refresh_interval(Duration::ZERO).build().is_err());
        assert!(
            b().cache_ttl_bounds(Duration::from_secs(10), Duration::from_secs(5))
                .build()
                .is_err()
        );
        assert!(
            b().cache_ttl_bounds(Duration::ZERO, Duration::from_secs(5))
                .build()
                .is_err()
        );
        assert!(
            JwksVerifier::from_jwks_uri(
                "http://keys.example.com/jwks",
                "https://as.example.com",
                "https://r/mcp"
            )
            .build()
            .is_err()
        );
    }
}
