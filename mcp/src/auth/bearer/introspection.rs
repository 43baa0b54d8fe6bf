//! OAuth 2.0 Token Introspection (RFC 7662) as a [`TokenVerifier`], with a bounded cache
//! keyed by the token's SHA-256.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::http::{HeaderValue, StatusCode};
use parking_lot::Mutex;
use serde::Deserialize;
use sha2::{Digest as _, Sha256};
use url::Url;

use super::discovery::{self, Discovered};
use super::fetch::{FetchOptions, Fetcher, ProviderError};
use super::jwt::DEFAULT_LEEWAY;
use super::{Principal, TokenError, TokenVerifier, VerifyFuture};

/// How long an active token's answer is kept at most (less when the token expires sooner).
pub const DEFAULT_MAX_CACHE_TTL: Duration = Duration::from_secs(60);
/// How long an inactive token's answer is kept.
pub const DEFAULT_NEGATIVE_CACHE_TTL: Duration = Duration::from_secs(10);
/// How many answers are kept at most.
pub const DEFAULT_MAX_CACHE_ENTRIES: usize = 10_000;
/// The shortest interval between two discovery attempts after a failure.
const DISCOVERY_RETRY: Duration = Duration::from_secs(5);

/// How this server authenticates to the introspection endpoint (RFC 6749 §2.3.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ClientAuth {
    /// HTTP Basic with the form-encoded client id and secret (`client_secret_basic`, the
    /// default).
    #[default]
    Basic,
    /// `client_id` and `client_secret` in the form body (`client_secret_post`).
    Post,
}

/// Verifies access tokens by asking the authorization server about them (OAuth 2.0 Token
/// Introspection, RFC 7662): for opaque tokens, or when a revoked token must stop working
/// at once.
///
/// Each token is POSTed to the introspection endpoint (configured, or the
/// `introspection_endpoint` of the issuer's metadata) with this server's client
/// credentials. It is accepted only if the answer says `active: true`, its `exp` (if any)
/// has not passed and its `nbf` (if any) has, its `iss` (if any) is the configured issuer,
/// and its `aud` (if any; else a `resource`, if any) names this server's resource. The
/// principal's subject is `sub` (or `username`, or `client_id`), its scopes `scope`.
///
/// Answers are cached under the SHA-256 of the token (the token itself is never kept or
/// logged): an active token until its `exp` or [`max_cache_ttl`] (60 s), whichever comes
/// first, an inactive one for [`negative_cache_ttl`] (10 s); at most
/// [`max_cache_entries`] (10 000) answers. So a revoked token keeps working for at most
/// `max_cache_ttl`. A failure to ask (the endpoint down, our credentials refused) is never
/// cached and is answered with [`TokenError::Unavailable`] (503 over HTTP).
///
/// [`max_cache_ttl`]: IntrospectionVerifierBuilder::max_cache_ttl
/// [`negative_cache_ttl`]: IntrospectionVerifierBuilder::negative_cache_ttl
/// [`max_cache_entries`]: IntrospectionVerifierBuilder::max_cache_entries
///
/// ```no_run
/// use mcp::auth::bearer::{ClientAuth, IntrospectionVerifier};
///
/// # fn run() -> Result<(), mcp::auth::bearer::ProviderError> {
/// let verifier = IntrospectionVerifier::discover("https://auth.example.com", "https://mcp.example.com/mcp")
///     .client_credentials("mcp-server", "its-secret", ClientAuth::Basic)
///     .build()?;
/// # let _ = verifier;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct IntrospectionVerifier {
    inner: Arc<Inner>,
}

struct Inner {
    resource: String,
    issuer: Option<String>,
    issuer_url: Option<Url>,
    endpoint: Option<Url>,
    discovered: Discovered,
    client_id: String,
    client_secret: String,
    auth: ClientAuth,
    fetcher: Fetcher,
    leeway: Duration,
    max_ttl: Duration,
    negative_ttl: Duration,
    max_entries: usize,
    cache: Mutex<HashMap<[u8; 32], Cached>>,
}

struct Cached {
    verdict: Result<Principal, TokenError>,
    until: Instant,
}

impl fmt::Debug for IntrospectionVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let i = &self.inner;
        f.debug_struct("IntrospectionVerifier")
            .field("resource", &i.resource)
            .field("issuer", &i.issuer)
            .field("endpoint", &i.endpoint.as_ref().map(Url::as_str))
            .field("client_id", &i.client_id)
            .field("auth", &i.auth)
            .field("cached", &i.cache.lock().len())
            .finish_non_exhaustive()
    }
}

/// Builds an [`IntrospectionVerifier`]; from [`IntrospectionVerifier::discover`] or
/// [`IntrospectionVerifier::with_endpoint`].
#[derive(Clone)]
pub struct IntrospectionVerifierBuilder {
    resource: String,
    issuer: Option<String>,
    endpoint: Option<String>,
    credentials: Option<(String, String, ClientAuth)>,
    fetch: FetchOptions,
    leeway: Duration,
    max_ttl: Duration,
    negative_ttl: Duration,
    max_entries: usize,
}

impl fmt::Debug for IntrospectionVerifierBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IntrospectionVerifierBuilder")
            .field("resource", &self.resource)
            .field("issuer", &self.issuer)
            .field("endpoint", &self.endpoint)
            .field("client_id", &self.credentials.as_ref().map(|c| &c.0))
            .finish_non_exhaustive()
    }
}

impl IntrospectionVerifier {
    /// A verifier for tokens meant for `resource` (this server's canonical URI), asking
    /// the introspection endpoint named by the metadata of `issuer`.
    pub fn discover(
        issuer: impl Into<String>,
        resource: impl Into<String>,
    ) -> IntrospectionVerifierBuilder {
        let mut b = IntrospectionVerifierBuilder::new(resource.into());
        b.issuer = Some(issuer.into());
        b
    }

    /// A verifier for tokens meant for `resource`, asking `endpoint`. Name the issuer with
    /// [`IntrospectionVerifierBuilder::issuer`] to check the answers' `iss` and list it in
    /// the Protected Resource Metadata.
    pub fn with_endpoint(
        endpoint: impl Into<String>,
        resource: impl Into<String>,
    ) -> IntrospectionVerifierBuilder {
        let mut b = IntrospectionVerifierBuilder::new(resource.into());
        b.endpoint = Some(endpoint.into());
        b
    }

    /// How many answers the cache holds now.
    pub fn cached(&self) -> usize {
        self.inner.cache.lock().len()
    }

    /// Verifies a token: from the cache, or by asking the introspection endpoint.
    pub async fn verify_token(&self, token: &str) -> Result<Principal, TokenError> {
        let i = &self.inner;
        if token.is_empty() {
            return Err(TokenError::Invalid("empty token".into()));
        }
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if let Some(hit) = i.cached(&key) {
            return hit;
        }
        let answer = match i.introspect(token).await {
            Ok(a) => a,
            Err(e) => {
                tracing::warn!(target: "mcp::auth", error = %e, "token introspection failed");
                return Err(TokenError::Unavailable(e.to_string()));
            }
        };
        let (verdict, ttl) = i.judge(answer);
        i.remember(key, verdict.clone(), ttl);
        verdict
    }
}

impl TokenVerifier for IntrospectionVerifier {
    fn verify<'a>(&'a self, token: &'a str) -> VerifyFuture<'a> {
        Box::pin(self.verify_token(token))
    }

    fn issuer(&self) -> Option<&str> {
        self.inner.issuer.as_deref()
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    fn contains(&self, s: &str) -> bool {
        match self {
            OneOrMany::One(v) => v == s,
            OneOrMany::Many(vs) => vs.iter().any(|v| v == s),
        }
    }
}

#[derive(Deserialize)]
struct Answer {
    active: bool,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    client_id: Option<String>,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    sub: Option<String>,
    #[serde(default)]
    exp: Option<i64>,
    #[serde(default)]
    nbf: Option<i64>,
    #[serde(default)]
    iss: Option<String>,
    #[serde(default)]
    aud: Option<OneOrMany>,
    #[serde(default)]
    resource: Option<OneOrMany>,
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

impl Inner {
    fn cached(&self, key: &[u8; 32]) -> Option<Result<Principal, TokenError>> {
        let mut cache = self.cache.lock();
        let entry = cache.get(key)?;
        if Instant::now() < entry.until {
            return Some(entry.verdict.clone());
        }
        cache.remove(key);
        None
    }

    fn remember(&self, key: [u8; 32], verdict: Result<Principal, TokenError>, ttl: Duration) {
        if ttl.is_zero() || self.max_entries == 0 {
            return;
        }
        let now = Instant::now();
        let mut cache = self.cache.lock();
        if cache.len() >= self.max_entries && !cache.contains_key(&key) {
            cache.retain(|_, e| now < e.until);
            if cache.len() >= self.max_entries {
                // Full of live answers: drop the one that would expire first.
                if let Some(oldest) = cache.iter().min_by_key(|(_, e)| e.until).map(|(k, _)| *k) {
                    cache.remove(&oldest);
                }
            }
        }
        cache.insert(
            key,
            Cached {
                verdict,
                until: now + ttl,
            },
        );
    }

    async fn endpoint(&self) -> Result<Url, ProviderError> {
        if let Some(url) = &self.endpoint {
            return Ok(url.clone());
        }
        let (Some(issuer), Some(issuer_url)) = (&self.issuer, &self.issuer_url) else {
            return Err(ProviderError::Config("no introspection endpoint".into()));
        };
        let metadata = self
            .discovered
            .get(&self.fetcher, issuer, issuer_url, DISCOVERY_RETRY)
            .await?;
        let Some(raw) = metadata.introspection_endpoint else {
            return Err(ProviderError::Refused(format!(
                "the metadata at {} has no introspection_endpoint",
                metadata.url
            )));
        };
        self.fetcher.check_url(&raw, "introspection_endpoint")
    }

    /// The form of an introspection request, and its `Authorization` header.
    fn request_form(&self, token: &str) -> Result<(String, Option<HeaderValue>), ProviderError> {
        let mut form = form_urlencoded::Serializer::new(String::new());
        form.append_pair("token", token);
        form.append_pair("token_type_hint", "access_token");
        let authorization = match self.auth {
            ClientAuth::Basic => Some(super::fetch::basic_authorization(
                &self.client_id,
                &self.client_secret,
            )?),
            ClientAuth::Post => {
                form.append_pair("client_id", &self.client_id);
                form.append_pair("client_secret", &self.client_secret);
                None
            }
        };
        Ok((form.finish(), authorization))
    }

    async fn introspect(&self, token: &str) -> Result<Answer, ProviderError> {
        let url = self.endpoint().await?;
        let (form, authorization) = self.request_form(token)?;
        let fetched = self.fetcher.post_form(&url, form, authorization).await?;
        match fetched.status {
            StatusCode::OK => {}
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
                return Err(ProviderError::Refused(format!(
                    "{url} refused this server's client credentials ({})",
                    fetched.status
                )));
            }
            status => {
                return Err(ProviderError::Unavailable(format!(
                    "{url} answered {status}"
                )));
            }
        }
        serde_json::from_slice(&fetched.body).map_err(|e| {
            ProviderError::Refused(format!(
                "{url} answered with something other than an introspection response: {e}"
            ))
        })
    }

    /// The verdict on an answer, and how long to cache it.
    fn judge(&self, answer: Answer) -> (Result<Principal, TokenError>, Duration) {
        let negative = |why: &str| (Err(TokenError::Invalid(why.to_owned())), self.negative_ttl);
        if !answer.active {
            return negative(
                "the authorization server says it is not active (revoked, expired or unknown)",
            );
        }
        let now = unix_now();
        let leeway = self.leeway.as_secs() as i64;
        if let Some(exp) = answer.exp
            && exp.saturating_add(leeway) <= now
        {
            return (Err(TokenError::Expired), self.negative_ttl);
        }
        if let Some(nbf) = answer.nbf
            && nbf > now.saturating_add(leeway)
        {
            return negative("the token is not valid yet");
        }
        if let (Some(expected), Some(iss)) = (&self.issuer, &answer.iss)
            && iss != expected
        {
            return negative("the token comes from an untrusted issuer");
        }
        let audience = answer.aud.as_ref().or(answer.resource.as_ref());
        if let Some(aud) = audience
            && !aud.contains(&self.resource)
        {
            return negative("the token was issued for another resource");
        }
        let Some(subject) = answer
            .sub
            .or(answer.username)
            .or(answer.client_id)
            .filter(|s| !s.is_empty())
        else {
            return negative("the introspection response names no subject");
        };
        let mut scopes: Vec<String> = answer
            .scope
            .as_deref()
            .unwrap_or("")
            .split_ascii_whitespace()
            .map(str::to_owned)
            .collect();
        scopes.sort();
        scopes.dedup();
        let mut ttl = self.max_ttl;
        if let Some(exp) = answer.exp {
            let left = exp.saturating_add(leeway).saturating_sub(now).max(0) as u64;
            ttl = ttl.min(Duration::from_secs(left));
        }
        let principal = Principal {
            subject,
            scopes,
            issuer: answer.iss.or_else(|| self.issuer.clone()),
        };
        (Ok(principal), ttl)
    }
}

impl IntrospectionVerifierBuilder {
    fn new(resource: String) -> Self {
        IntrospectionVerifierBuilder {
            resource,
            issuer: None,
            endpoint: None,
            credentials: None,
            fetch: FetchOptions::new(),
            leeway: DEFAULT_LEEWAY,
            max_ttl: DEFAULT_MAX_CACHE_TTL,
            negative_ttl: DEFAULT_NEGATIVE_CACHE_TTL,
            max_entries: DEFAULT_MAX_CACHE_ENTRIES,
        }
    }

    /// The issuer whose tokens these are: answers naming another `iss` are refused, and
    /// `BearerAuth` lists it as the authorization server.
    pub fn issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuer = Some(issuer.into());
        self
    }

    /// The introspection endpoint, instead of the one in the issuer's metadata.
    pub fn endpoint(mut self, endpoint: impl Into<String>) -> Self {
        self.endpoint = Some(endpoint.into());
        self
    }

    /// This server's client credentials at the authorization server, and how to present
    /// them. Required: RFC 7662 endpoints answer only authenticated callers.
    pub fn client_credentials(
        mut self,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
        auth: ClientAuth,
    ) -> Self {
        self.credentials = Some((client_id.into(), client_secret.into(), auth));
        self
    }

    /// The clock skew tolerated on `exp` and `nbf` (default 30 s).
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway;
        self
    }

    /// The longest an active token's answer is cached (default 60 s): the longest a
    /// revoked token keeps working. `Duration::ZERO` asks about every request.
    pub fn max_cache_ttl(mut self, ttl: Duration) -> Self {
        self.max_ttl = ttl;
        self
    }

    /// How long an inactive or refused token's answer is cached (default 10 s).
    pub fn negative_cache_ttl(mut self, ttl: Duration) -> Self {
        self.negative_ttl = ttl;
        self
    }

    /// How many answers are cached at most (default 10 000). When full, expired answers
    /// go first, then the one closest to expiry.
    pub fn max_cache_entries(mut self, entries: usize) -> Self {
        self.max_entries = entries;
        self
    }

    /// How the verifier reaches the authorization server (timeout, response cap, roots).
    pub fn fetch_options(mut self, options: FetchOptions) -> Self {
        self.fetch = options;
        self
    }

    /// **For tests only**: allows plain `http` to a loopback issuer and endpoint
    /// ([`FetchOptions::allow_http_loopback`]).
    pub fn allow_http_loopback(mut self) -> Self {
        self.fetch = self.fetch.allow_http_loopback();
        self
    }

    /// Checks the configuration and builds the verifier. Nothing is fetched until the
    /// first token.
    pub fn build(self) -> Result<IntrospectionVerifier, ProviderError> {
        if self.resource.trim().is_empty() {
            return Err(ProviderError::Config(
                "the resource (this server's canonical URI) must not be empty".into(),
            ));
        }
        let Some((client_id, client_secret, auth)) = self.credentials else {
            return Err(ProviderError::Config(
                "introspection needs this server's client credentials (client_credentials)".into(),
            ));
        };
        if client_id.is_empty() {
            return Err(ProviderError::Config(
                "the client id must not be empty".into(),
            ));
        }
        let fetcher = Fetcher::new(&self.fetch)?;
        let issuer_url = match &self.issuer {
            Some(issuer) => Some(discovery::check_issuer(&fetcher, issuer)?),
            None => None,
        };
        let endpoint = match &self.endpoint {
            Some(raw) => Some(fetcher.check_url(raw, "introspection endpoint")?),
            None if issuer_url.is_none() => {
                return Err(ProviderError::Config(
                    "name the introspection endpoint or an issuer to discover it from".into(),
                ));
            }
            None => None,
        };
        if self.fetch.http_loopback_allowed() {
            tracing::warn!(
                target: "mcp::auth",
                "allow_http_loopback: tokens may be sent for introspection over plain http on this machine; never use this outside tests"
            );
        }
        Ok(IntrospectionVerifier {
            inner: Arc::new(Inner {
                resource: self.resource,
                issuer: self.issuer,
                issuer_url,
                endpoint,
                discovered: Discovered::new(),
                client_id,
                client_secret,
                auth,
                fetcher,
                leeway: self.leeway,
                max_ttl: self.max_ttl,
                negative_ttl: self.negative_ttl,
                max_entries: self.max_entries,
                cache: Mutex::new(HashMap::new()),
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const RES: &str = "https://mcp.example.com/mcp";
    const ISS: &str = "https://as.example.com";

    fn verifier() -> IntrospectionVerifier {
        IntrospectionVerifier::with_endpoint("https://as.example.com/introspect", RES)
            .issuer(ISS)
            .client_credentials("c", "s", ClientAuth::Basic)
            .max_cache_ttl(Duration::from_secs(60))
            .negative_cache_ttl(Duration::from_secs(5))
            .build()
            .unwrap()
    }

    fn judge(
        v: &IntrospectionVerifier,
        answer: serde_json::Value,
    ) -> (Result<Principal, TokenError>, Duration) {
        v.inner.judge(serde_json::from_value(answer).unwrap())
    }

    #[test]
    fn answers_are_judged_on_active_expiry_issuer_and_audience() {
        let v = verifier();
        let now = unix_now();
        let (ok, ttl) = judge(
            &v,
            json!({"active": true, "sub": "alice", "scope": "b a a", "aud": RES, "iss": ISS, "exp": now + 600}),
        );
        let p = ok.unwrap();
        assert_eq!(
            (p.subject.as_str(), p.scopes.clone()),
            ("alice", vec!["a".to_owned(), "b".to_owned()])
        );
        assert_eq!(ttl, Duration::from_secs(60), "capped by the max ttl");
        let (_, ttl) = judge(&v, json!({"active": true, "sub": "a", "exp": now + 10}));
        assert!(
            ttl <= Duration::from_secs(40) && ttl >= Duration::from_secs(38),
            "{ttl:?}: exp + leeway"
        );
        let (r, ttl) = judge(&v, json!({"active": false}));
        assert!(matches!(r, Err(TokenError::Invalid(m)) if m.contains("not active")));
        assert_eq!(ttl, Duration::from_secs(5));
        let (r, _) = judge(&v, json!({"active": true, "sub": "a", "exp": now - 120}));
        assert_eq!(r, Err(TokenError::Expired));
        let (r, _) = judge(
            &v,
            json!({"active": true, "sub": "a", "iss": "https://evil"}),
        );
        assert!(matches!(r, Err(TokenError::Invalid(m)) if m.contains("issuer")));
        let (r, _) = judge(
            &v,
            json!({"active": true, "sub": "a", "aud": ["https://other/mcp"]}),
        );
        assert!(matches!(r, Err(TokenError::Invalid(m)) if m.contains("another resource")));
        let (r, _) = judge(
            &v,
            json!({"active": true, "sub": "a", "resource": "https://other/mcp"}),
        );
        assert!(r.is_err());
        let (r, _) = judge(&v, json!({"active": true, "sub": "a", "aud": ["x", RES]}));
        assert!(r.is_ok());
        let (r, _) = judge(&v, json!({"active": true}));
        assert!(matches!(r, Err(TokenError::Invalid(m)) if m.contains("subject")));
        let (r, _) = judge(&v, json!({"active": true, "client_id": "svc"}));
        assert_eq!(r.unwrap().subject, "svc");
        let (r, _) = judge(&v, json!({"active": true, "sub": "a", "nbf": now + 600}));
        assert!(r.is_err());
    }

    #[test]
    fn the_cache_is_bounded_and_keyed_by_digest() {
        let v = IntrospectionVerifier::with_endpoint("https://as.example.com/introspect", RES)
            .client_credentials("c", "s", ClientAuth::Post)
            .max_cache_entries(2)
            .build()
            .unwrap();
        let p = || Ok(Principal::new("a", vec![]));
        v.inner.remember([1; 32], p(), Duration::from_secs(30));
        v.inner.remember([2; 32], p(), Duration::from_secs(10));
        v.inner.remember([3; 32], p(), Duration::from_secs(20));
        assert_eq!(v.cached(), 2);
        assert!(
            v.inner.cached(&[2; 32]).is_none(),
            "the entry closest to expiry went"
        );
        assert!(v.inner.cached(&[1; 32]).is_some());
        assert!(v.inner.cached(&[3; 32]).is_some());
        // Zero ttl: not cached.
        v.inner.remember([4; 32], p(), Duration::ZERO);
        assert!(v.inner.cached(&[4; 32]).is_none());
    }

    #[test]
    fn bad_configurations_are_refused() {
        let b = || IntrospectionVerifier::with_endpoint("https://as.example.com/i", RES);
        assert!(
            matches!(b().build(), Err(ProviderError::Config(m)) if m.contains("client credentials"))
        );
        assert!(
            b().client_credentials("", "s", ClientAuth::Basic)
                .build()
                .is_err()
        );
        assert!(
            IntrospectionVerifier::with_endpoint("http://as.example.com/i", RES)
                .client_credentials("c", "s", ClientAuth::Basic)
                .build()
                .is_err()
        );
        assert!(
            IntrospectionVerifier::with_endpoint("https://as.example.com/i", "")
                .client_credentials("c", "s", ClientAuth::Basic)
                .build()
                .is_err()
        );
    }
}
