//! Who opened a link: the person in the browser, as this server knows them.

use std::future::Future;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::http::HeaderMap;
use base64::Engine as _;
use futures::future::BoxFuture;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::conn::Principal;

/// A person as the connect route compares them: the subject and issuer that both the MCP
/// principal (from the bearer token) and the browser's sign-in name.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BrowserUser {
    subject: String,
    issuer: Option<String>,
}

impl BrowserUser {
    /// The user `subject` of the identity provider `issuer` (`None` when your principals
    /// carry no issuer).
    pub fn new(subject: impl Into<String>, issuer: Option<&str>) -> Self {
        BrowserUser {
            subject: subject.into(),
            issuer: issuer.map(str::to_owned),
        }
    }

    /// The person behind a verified principal.
    pub fn of(principal: &Principal) -> Self {
        BrowserUser {
            subject: principal.subject.clone(),
            issuer: principal.issuer.clone(),
        }
    }

    /// The subject.
    pub fn subject(&self) -> &str {
        &self.subject
    }

    /// The key their tokens are stored under.
    pub(super) fn key(&self) -> String {
        format!(
            "principal:{}:{}",
            self.issuer.as_deref().unwrap_or("").replace(':', "%3A"),
            self.subject
        )
    }
}

/// How the connect route learns who the browser belongs to. It must come from this
/// server's own sign-in (a session cookie, a header your proxy sets after its own login),
/// never from anything in the link.
pub trait BrowserIdentity: Send + Sync + 'static {
    /// The signed-in person, or `None` when the browser is not signed in.
    fn identify<'a>(&'a self, headers: &'a HeaderMap) -> BoxFuture<'a, Option<BrowserUser>>;

    /// Where a browser that is not signed in should go to sign in (`return_to`: the link
    /// to come back to), if the server has such a page.
    fn sign_in_url(&self, return_to: &str) -> Option<String> {
        let _ = return_to;
        None
    }
}

/// A [`BrowserIdentity`] from your own function of the request's headers.
pub fn identity_fn<F, Fut>(f: F) -> impl BrowserIdentity
where
    F: Fn(HeaderMap) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Option<BrowserUser>> + Send + 'static,
{
    struct FromFn<F>(F);
    impl<F, Fut> BrowserIdentity for FromFn<F>
    where
        F: Fn(HeaderMap) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Option<BrowserUser>> + Send + 'static,
    {
        fn identify<'a>(&'a self, headers: &'a HeaderMap) -> BoxFuture<'a, Option<BrowserUser>> {
            Box::pin((self.0)(headers.clone()))
        }
    }
    FromFn(f)
}

type HmacSha256 = Hmac<Sha256>;

/// A session cookie your sign-in pages set ([`SignedCookie::issue`]), signed with a key of
/// the server's (HMAC-SHA256): it names the subject, the issuer and an expiry, and cannot
/// be forged or extended without the key.
#[derive(Clone)]
pub struct SignedCookie {
    name: String,
    key: Vec<u8>,
    sign_in: Option<String>,
    secure: bool,
}

impl std::fmt::Debug for SignedCookie {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignedCookie")
            .field("name", &self.name)
            .field("sign_in", &self.sign_in)
            .finish_non_exhaustive()
    }
}

impl SignedCookie {
    /// Cookies named `name`, signed with `key` (at least 32 bytes of secret).
    ///
    /// # Panics
    /// With a key shorter than 32 bytes.
    pub fn new(name: impl Into<String>, key: &[u8]) -> Self {
        assert!(
            key.len() >= 32,
            "a SignedCookie key needs at least 32 bytes of secret"
        );
        SignedCookie {
            name: name.into(),
            key: key.to_vec(),
            sign_in: None,
            secure: true,
        }
    }

    /// The page that signs a browser in (it gets `?return_to=<the link>`).
    pub fn sign_in_page(mut self, url: impl Into<String>) -> Self {
        self.sign_in = Some(url.into());
        self
    }

    /// Issues the cookie without the `Secure` attribute, for a server on plain HTTP
    /// (loopback development only; browsers drop `Secure` cookies there).
    pub fn insecure_for_local_development(mut self) -> Self {
        self.secure = false;
        self
    }

    /// The `Set-Cookie` header value that signs `user` in for `ttl`: `HttpOnly`,
    /// `SameSite=Lax` (the link is opened from another application), `Secure` unless
    /// told otherwise.
    pub fn issue(&self, user: &BrowserUser, ttl: Duration) -> String {
        let expires = unix_now() + ttl.as_secs();
        let value = self.seal(user, expires);
        format!(
            "{}={value}; Path=/; Max-Age={}; HttpOnly; SameSite=Lax{}",
            self.name,
            ttl.as_secs(),
            if self.secure { "; Secure" } else { "" }
        )
    }

    fn seal(&self, user: &BrowserUser, expires: u64) -> String {
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let body = format!(
            "{}.{}.{expires}",
            b64.encode(&user.subject),
            b64.encode(user.issuer.as_deref().unwrap_or(""))
        );
        let mut mac = HmacSha256::new_from_slice(&self.key).expect("HMAC takes any key length");
        mac.update(body.as_bytes());
        format!("{body}.{}", b64.encode(mac.finalize().into_bytes()))
    }

    /// The user a cookie value names, if it is genuine and unexpired.
    fn open(&self, value: &str) -> Option<BrowserUser> {
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let (body, tag) = value.rsplit_once('.')?;
        let mut mac = HmacSha256::new_from_slice(&self.key).ok()?;
        mac.update(body.as_bytes());
        mac.verify_slice(&b64.decode(tag).ok()?).ok()?;
        let mut parts = body.splitn(3, '.');
        let subject = String::from_utf8(b64.decode(parts.next()?).ok()?).ok()?;
        let issuer = String::from_utf8(b64.decode(parts.next()?).ok()?).ok()?;
        let expires: u64 = parts.next()?.parse().ok()?;
        (expires > unix_now() && !subject.is_empty()).then(|| BrowserUser {
            subject,
            issuer: (!issuer.is_empty()).then_some(issuer),
        })
    }
}

impl BrowserIdentity for SignedCookie {
    fn identify<'a>(&'a self, headers: &'a HeaderMap) -> BoxFuture<'a, Option<BrowserUser>> {
        let found = headers
            .get_all(axum::http::header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .find(|(name, _)| *name == self.name)
            .and_then(|(_, value)| self.open(value));
        Box::pin(std::future::ready(found))
    }

    fn sign_in_url(&self, return_to: &str) -> Option<String> {
        let page = self.sign_in.as_ref()?;
        let query = form_urlencoded::Serializer::new(String::new())
            .append_pair("return_to", return_to)
            .finish();
        Some(super::provider::with_query(page, &query))
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cookie_header(set_cookie: &str) -> HeaderMap {
        let pair = set_cookie.split(';').next().unwrap();
        let mut h = HeaderMap::new();
        h.insert(
            axum::http::header::COOKIE,
            format!("other=1; {pair}").parse().unwrap(),
        );
        h
    }

    #[tokio::test]
    async fn signed_cookies_name_their_user_and_cannot_be_forged() {
        let jar = SignedCookie::new("session", &[7u8; 32]);
        let alice = BrowserUser::new("alice", Some("https://idp.example"));
        let set = jar.issue(&alice, Duration::from_secs(60));
        assert!(set.contains("HttpOnly") && set.contains("Secure") && set.contains("SameSite=Lax"));
        assert_eq!(
            jar.identify(&cookie_header(&set)).await,
            Some(alice.clone())
        );
        // Another key, an edited subject, an expired cookie: nobody.
        let other = SignedCookie::new("session", &[8u8; 32]);
        assert_eq!(other.identify(&cookie_header(&set)).await, None);
        let forged = set.replacen(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD.encode("alice"),
            &base64::engine::general_purpose::URL_SAFE_NO_PAD.encode("bob"),
            1,
        );
        assert_eq!(jar.identify(&cookie_header(&forged)).await, None);
        let stale = format!("session={}", jar.seal(&alice, 1));
        assert_eq!(jar.identify(&cookie_header(&stale)).await, None);
        assert_eq!(jar.identify(&HeaderMap::new()).await, None);
    }
}
