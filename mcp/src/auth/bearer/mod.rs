//! Bearer tokens: how a network transport turns `Authorization: Bearer <token>` into a
//! verified [`Principal`].
//!
//! A [`TokenVerifier`] checks a token and names who it belongs to. The principal it returns
//! is the only identity the server trusts: it reaches the authorizers' [`AuthContext`] and
//! [`Ctx::principal`](crate::Ctx::principal); nothing the client asserts about itself does.
//!
//! With the `oauth` feature, three verifiers are built in:
//!
//! - `JwtVerifier` verifies JSON Web Tokens signed with an HMAC secret (HS256), an RSA key
//!   (RS256), an EC P-256 key (ES256) or the keys of a static JWKS document, and checks the
//!   issuer, the audience (this server's canonical resource URI, RFC 8707), the expiry and
//!   the not-before time with a small clock-skew allowance.
//! - `JwksVerifier` checks the same claims with the authorization server's current keys:
//!   it finds its `jwks_uri` by issuer discovery (RFC 8414 or OpenID Connect), fetches the
//!   key set over HTTPS, caches it as long as the provider's cache headers say (within
//!   bounds), picks up rotated keys, and rides out a provider outage for a bounded time.
//! - `IntrospectionVerifier` asks the authorization server about each token (RFC 7662),
//!   for opaque tokens or tokens that must be revocable at once, and caches the answers
//!   briefly under the token's SHA-256.
//!
//! [`AuthContext`]: super::AuthContext

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use super::Principal;

/// The future a [`TokenVerifier`] returns.
pub type VerifyFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Principal, TokenError>> + Send + 'a>>;

/// Checks an access token and names its principal.
///
/// Implement it for any scheme of your own; use [`verifier_fn`] to wrap an async closure,
/// or (the `oauth` feature) `JwtVerifier` for JWTs with static keys, `JwksVerifier` for
/// JWTs with the keys an authorization server publishes, `IntrospectionVerifier` for token
/// introspection (RFC 7662).
pub trait TokenVerifier: Send + Sync + 'static {
    /// Verifies `token` (the text after `Bearer `). It must check the signature (or ask the
    /// issuer), the expiry, and that the token was issued for this server (its audience).
    fn verify<'a>(&'a self, token: &'a str) -> VerifyFuture<'a>;

    /// The issuer (authorization server) whose tokens this verifier accepts, when it knows
    /// one. `BearerAuth` lists it among the `authorization_servers` of its Protected
    /// Resource Metadata. `None` by default.
    fn issuer(&self) -> Option<&str> {
        None
    }
}

impl<V: TokenVerifier + ?Sized> TokenVerifier for std::sync::Arc<V> {
    fn verify<'a>(&'a self, token: &'a str) -> VerifyFuture<'a> {
        (**self).verify(token)
    }

    fn issuer(&self) -> Option<&str> {
        (**self).issuer()
    }
}

/// Why a token was not accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TokenError {
    /// Malformed, badly signed, for another audience or issuer, or otherwise unacceptable.
    /// Answered with 401 `invalid_token`.
    Invalid(String),
    /// Past its expiry. Answered with 401 `invalid_token`.
    Expired,
    /// The verifier could not decide (its key server or introspection endpoint is down).
    /// Answered with 503, so the client retries instead of discarding a good token.
    Unavailable(String),
}

impl TokenError {
    /// A short description for the `error_description` of a challenge.
    pub fn description(&self) -> String {
        match self {
            TokenError::Invalid(why) => format!("the access token is invalid: {why}"),
            TokenError::Expired => "the access token has expired".to_owned(),
            TokenError::Unavailable(why) => {
                format!("the access token could not be verified right now: {why}")
            }
        }
    }
}

impl fmt::Display for TokenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.description())
    }
}

impl std::error::Error for TokenError {}

/// A [`TokenVerifier`] from an async closure.
///
/// ```
/// use mcp::auth::{Principal, bearer::{TokenError, verifier_fn}};
/// let verifier = verifier_fn(|token: String| async move {
///     if token == "let-me-in" {
///         Ok(Principal::new("alice", vec!["files:read".into()]))
///     } else {
///         Err(TokenError::Invalid("unknown token".into()))
///     }
/// });
/// # let _ = verifier;
/// ```
pub fn verifier_fn<F, Fut>(f: F) -> impl TokenVerifier
where
    F: Fn(String) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Principal, TokenError>> + Send + 'static,
{
    struct FnVerifier<F>(F);
    impl<F, Fut> TokenVerifier for FnVerifier<F>
    where
        F: Fn(String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Principal, TokenError>> + Send + 'static,
    {
        fn verify<'a>(&'a self, token: &'a str) -> VerifyFuture<'a> {
            Box::pin((self.0)(token.to_owned()))
        }
    }
    FnVerifier(f)
}

#[cfg(feature = "oauth")]
#[cfg_attr(docsrs, doc(cfg(feature = "oauth")))]
pub use fetch::{FetchOptions, ProviderError};
#[cfg(feature = "oauth")]
#[cfg_attr(docsrs, doc(cfg(feature = "oauth")))]
pub use introspection::{ClientAuth, IntrospectionVerifier, IntrospectionVerifierBuilder};
#[cfg(feature = "oauth")]
#[cfg_attr(docsrs, doc(cfg(feature = "oauth")))]
pub use jwks::{JwksVerifier, JwksVerifierBuilder};
#[cfg(feature = "oauth")]
#[cfg_attr(docsrs, doc(cfg(feature = "oauth")))]
pub use jwt::{JwtConfigError, JwtVerifier};

#[cfg(feature = "oauth")]
mod discovery;
#[cfg(feature = "oauth")]
pub(crate) mod fetch;
#[cfg(feature = "oauth")]
mod introspection;
#[cfg(feature = "oauth")]
mod jwks;
#[cfg(feature = "oauth")]
mod jwt;

#[cfg(all(test, feature = "oauth"))]
mod tests {
    use std::time::{SystemTime, UNIX_EPOCH};

    use jsonwebtoken::{EncodingKey, Header, encode};
    use serde_json::json;

    use super::*;

    const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef";
    const ISS: &str = "https://auth.example.com";
    const AUD: &str = "https://mcp.example.com/mcp";

    fn now() -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64
    }

    fn token(claims: serde_json::Value) -> String {
        encode(
            &Header::default(),
            &claims,
            &EncodingKey::from_secret(SECRET).unwrap(),
        )
        .unwrap()
    }

    fn verifier() -> JwtVerifier {
        JwtVerifier::hs256(SECRET, ISS, AUD).unwrap()
    }

    #[test]
    fn a_good_token_names_its_subject_issuer_and_scopes() {
        let t = token(
            json!({"sub": "alice", "iss": ISS, "aud": AUD, "exp": now() + 60,
            "scope": "files:read files:write", "scp": ["admin"]}),
        );
        let p = verifier().verify_now(&t).unwrap();
        assert_eq!(p.subject, "alice");
        assert_eq!(p.issuer.as_deref(), Some(ISS));
        assert_eq!(p.scopes, vec!["admin", "files:read", "files:write"]);
    }

    #[test]
    fn audience_issuer_expiry_and_subject_are_checked() {
        let v = verifier();
        let other_aud =
            token(json!({"sub": "a", "iss": ISS, "aud": "https://other/mcp", "exp": now() + 60}));
        assert!(
            matches!(v.verify_now(&other_aud), Err(TokenError::Invalid(m)) if m.contains("another resource"))
        );
        let other_iss =
            token(json!({"sub": "a", "iss": "https://evil", "aud": AUD, "exp": now() + 60}));
        assert!(
            matches!(v.verify_now(&other_iss), Err(TokenError::Invalid(m)) if m.contains("issuer"))
        );
        let expired = token(json!({"sub": "a", "iss": ISS, "aud": AUD, "exp": now() - 120}));
        assert_eq!(v.verify_now(&expired), Err(TokenError::Expired));
        // Within the leeway an just-expired token still passes; without leeway it does not.
        let just = token(json!({"sub": "a", "iss": ISS, "aud": AUD, "exp": now() - 5}));
        assert!(v.verify_now(&just).is_ok());
        let strict = verifier().leeway(std::time::Duration::ZERO);
        assert_eq!(strict.verify_now(&just), Err(TokenError::Expired));
        let no_sub = token(json!({"iss": ISS, "aud": AUD, "exp": now() + 60}));
        assert!(v.verify_now(&no_sub).is_err());
        let no_exp = token(json!({"sub": "a", "iss": ISS, "aud": AUD}));
        assert!(v.verify_now(&no_exp).is_err());
        let not_yet = token(
            json!({"sub": "a", "iss": ISS, "aud": AUD, "exp": now() + 600, "nbf": now() + 300}),
        );
        assert!(v.verify_now(&not_yet).is_err());
    }

    #[test]
    fn a_token_signed_with_another_key_or_mangled_is_invalid() {
        let claims = json!({"sub": "a", "iss": ISS, "aud": AUD, "exp": now() + 60});
        let forged = encode(
            &Header::default(),
            &claims,
            &EncodingKey::from_secret(b"another-secret-another-secret-xx").unwrap(),
        )
        .unwrap();
        assert!(matches!(
            verifier().verify_now(&forged),
            Err(TokenError::Invalid(_))
        ));
        assert!(matches!(
            verifier().verify_now("not.a.jwt"),
            Err(TokenError::Invalid(_))
        ));
        // An unsigned token (alg none) is never accepted.
        let none = format!(
            "{}.{}.",
            base64::Engine::encode(
                &base64::engine::general_purpose::URL_SAFE_NO_PAD,
                br#"{"alg":"none","typ":"JWT"}"#
            ),
            base64::Engine::encode(
                &base64::engine::general_purpose::URL_SAFE_NO_PAD,
                claims.to_string()
            )
        );
        assert!(verifier().verify_now(&none).is_err());
    }

    #[test]
    fn configuration_mistakes_are_refused() {
        assert!(JwtVerifier::hs256(b"short", ISS, AUD).is_err());
        assert!(JwtVerifier::hs256(SECRET, "", AUD).is_err());
        assert!(JwtVerifier::hs256(SECRET, ISS, " ").is_err());
        assert!(JwtVerifier::rs256_pem(b"not a pem", ISS, AUD).is_err());
        assert!(JwtVerifier::jwks(r#"{"keys": []}"#, ISS, AUD).is_err());
        assert!(JwtVerifier::jwks("nope", ISS, AUD).is_err());
    }
}
