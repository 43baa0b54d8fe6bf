//! Bearer tokens: how a network transport turns `Authorization: Bearer <token>` into a
//! verified [`Principal`].
//!
//! A [`TokenVerifier`] checks a token and names who it belongs to. The principal it returns
//! is the only identity the server trusts: it reaches the authorizers' [`AuthContext`] and
//! [`Ctx::principal`](crate::Ctx::principal); nothing the client asserts about itself does.
//!
//! `JwtVerifier` (the `oauth` feature) verifies JSON Web Tokens signed with an
//! HMAC secret (HS256), an RSA key (RS256), an EC P-256 key (ES256) or the keys of a JWKS
//! document, and checks the issuer, the audience (this server's canonical resource URI,
//! RFC 8707), the expiry and the not-before time with a small clock-skew allowance.
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
/// Implement it to use token introspection (RFC 7662) or any other scheme; use
/// [`verifier_fn`] to wrap an async closure, or `JwtVerifier` (the `oauth` feature) for JWTs.
pub trait TokenVerifier: Send + Sync + 'static {
    /// Verifies `token` (the text after `Bearer `). It must check the signature (or ask the
    /// issuer), the expiry, and that the token was issued for this server (its audience).
    fn verify<'a>(&'a self, token: &'a str) -> VerifyFuture<'a>;
}

impl<V: TokenVerifier + ?Sized> TokenVerifier for std::sync::Arc<V> {
    fn verify<'a>(&'a self, token: &'a str) -> VerifyFuture<'a> {
        (**self).verify(token)
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
pub use jwt::{JwtConfigError, JwtVerifier};

#[cfg(feature = "oauth")]
mod jwt {
    use std::collections::HashSet;
    use std::fmt;
    use std::time::Duration;

    use jsonwebtoken::errors::ErrorKind;
    use jsonwebtoken::jwk::{
        AlgorithmParameters, EllipticCurve, JwkSet, KeyAlgorithm, PublicKeyUse,
    };
    use jsonwebtoken::{Algorithm, DecodingKey, Validation};
    use serde::Deserialize;

    use super::{Principal, TokenError, TokenVerifier, VerifyFuture};

    /// The clock skew a [`JwtVerifier`] tolerates by default on `exp` and `nbf`.
    pub const DEFAULT_LEEWAY: Duration = Duration::from_secs(30);

    /// Why a [`JwtVerifier`] could not be built.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct JwtConfigError(String);

    impl fmt::Display for JwtConfigError {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "invalid JWT verifier configuration: {}", self.0)
        }
    }

    impl std::error::Error for JwtConfigError {}

    struct Key {
        kid: Option<String>,
        algorithm: Algorithm,
        key: DecodingKey,
    }

    /// Verifies JWT access tokens: signature, issuer, audience, expiry and not-before.
    ///
    /// The audience must be this server's canonical resource URI (the `resource` of its
    /// Protected Resource Metadata), so a token minted for another service is refused. The
    /// principal's scopes come from the `scope` claim (space-separated) or `scp` (a list or
    /// a string); its subject from `sub`, which is required.
    ///
    /// ```
    /// use mcp::auth::bearer::JwtVerifier;
    /// let verifier = JwtVerifier::hs256(
    ///     b"a-secret-of-at-least-thirty-two-bytes!",
    ///     "https://auth.example.com",
    ///     "https://mcp.example.com/mcp",
    /// ).unwrap();
    /// # let _ = verifier;
    /// ```
    pub struct JwtVerifier {
        keys: Vec<Key>,
        issuer: String,
        audience: String,
        leeway: Duration,
    }

    impl fmt::Debug for JwtVerifier {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("JwtVerifier")
                .field("issuer", &self.issuer)
                .field("audience", &self.audience)
                .field("keys", &self.keys.len())
                .field("leeway", &self.leeway)
                .finish()
        }
    }

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Scopes {
        Text(String),
        List(Vec<String>),
    }

    #[derive(Deserialize)]
    struct Claims {
        sub: String,
        iss: String,
        #[serde(default)]
        scope: Option<String>,
        #[serde(default)]
        scp: Option<Scopes>,
    }

    impl JwtVerifier {
        fn with_keys(
            keys: Vec<Key>,
            issuer: impl Into<String>,
            audience: impl Into<String>,
        ) -> Result<Self, JwtConfigError> {
            let issuer = issuer.into();
            let audience = audience.into();
            if issuer.trim().is_empty() {
                return Err(JwtConfigError("the issuer must not be empty".into()));
            }
            if audience.trim().is_empty() {
                return Err(JwtConfigError(
                    "the audience (this server's canonical resource URI) must not be empty".into(),
                ));
            }
            if keys.is_empty() {
                return Err(JwtConfigError("no usable signing key".into()));
            }
            Ok(JwtVerifier {
                keys,
                issuer,
                audience,
                leeway: DEFAULT_LEEWAY,
            })
        }

        /// Tokens signed with HMAC-SHA256 and a shared secret of at least 32 bytes.
        pub fn hs256(
            secret: impl AsRef<[u8]>,
            issuer: impl Into<String>,
            audience: impl Into<String>,
        ) -> Result<Self, JwtConfigError> {
            let secret = secret.as_ref();
            if secret.len() < 32 {
                return Err(JwtConfigError(format!(
                    "an HS256 secret must be at least 32 bytes; this one is {}",
                    secret.len()
                )));
            }
            let key = DecodingKey::from_secret(secret)
                .map_err(|e| JwtConfigError(format!("HS256 secret: {e}")))?;
            Self::with_keys(
                vec![Key {
                    kid: None,
                    algorithm: Algorithm::HS256,
                    key,
                }],
                issuer,
                audience,
            )
        }

        /// Tokens signed with RS256; `pem` is the issuer's RSA public key.
        pub fn rs256_pem(
            pem: &[u8],
            issuer: impl Into<String>,
            audience: impl Into<String>,
        ) -> Result<Self, JwtConfigError> {
            let key = DecodingKey::from_rsa_pem(pem)
                .map_err(|e| JwtConfigError(format!("RSA public key: {e}")))?;
            Self::with_keys(
                vec![Key {
                    kid: None,
                    algorithm: Algorithm::RS256,
                    key,
                }],
                issuer,
                audience,
            )
        }

        /// Tokens signed with ES256; `pem` is the issuer's P-256 public key.
        pub fn es256_pem(
            pem: &[u8],
            issuer: impl Into<String>,
            audience: impl Into<String>,
        ) -> Result<Self, JwtConfigError> {
            let key = DecodingKey::from_ec_pem(pem)
                .map_err(|e| JwtConfigError(format!("EC public key: {e}")))?;
            Self::with_keys(
                vec![Key {
                    kid: None,
                    algorithm: Algorithm::ES256,
                    key,
                }],
                issuer,
                audience,
            )
        }

        /// Tokens signed with any signing key of a JWKS document (RFC 7517). A token's `kid`
        /// picks its key; RSA keys verify RS256 (or the algorithm the key names), P-256 keys
        /// ES256, P-384 keys ES384, Ed25519 keys EdDSA. Encryption keys are ignored.
        pub fn jwks(
            json: &str,
            issuer: impl Into<String>,
            audience: impl Into<String>,
        ) -> Result<Self, JwtConfigError> {
            let set: JwkSet = serde_json::from_str(json)
                .map_err(|e| JwtConfigError(format!("JWKS document: {e}")))?;
            let mut keys = Vec::new();
            for jwk in &set.keys {
                if matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption)) {
                    continue;
                }
                let algorithm = match (&jwk.common.key_algorithm, &jwk.algorithm) {
                    (Some(alg), _) => match signing_algorithm(*alg) {
                        Some(a) => a,
                        None => continue,
                    },
                    (None, AlgorithmParameters::RSA(_)) => Algorithm::RS256,
                    (None, AlgorithmParameters::EllipticCurve(ec)) => match ec.curve {
                        EllipticCurve::P256 => Algorithm::ES256,
                        EllipticCurve::P384 => Algorithm::ES384,
                        _ => continue,
                    },
                    (None, AlgorithmParameters::OctetKeyPair(_)) => Algorithm::EdDSA,
                    (None, _) => continue,
                };
                let key = DecodingKey::from_jwk(jwk).map_err(|e| {
                    JwtConfigError(format!(
                        "JWKS key {}: {e}",
                        jwk.common.key_id.as_deref().unwrap_or("(no kid)")
                    ))
                })?;
                keys.push(Key {
                    kid: jwk.common.key_id.clone(),
                    algorithm,
                    key,
                });
            }
            Self::with_keys(keys, issuer, audience)
        }

        /// Like [`JwtVerifier::jwks`], reading the document from a file.
        pub fn jwks_file(
            path: impl AsRef<std::path::Path>,
            issuer: impl Into<String>,
            audience: impl Into<String>,
        ) -> Result<Self, JwtConfigError> {
            let path = path.as_ref();
            let json = std::fs::read_to_string(path)
                .map_err(|e| JwtConfigError(format!("reading {}: {e}", path.display())))?;
            Self::jwks(&json, issuer, audience)
        }

        /// The clock skew tolerated on `exp` and `nbf` (default 30 s).
        pub fn leeway(mut self, leeway: Duration) -> Self {
            self.leeway = leeway;
            self
        }

        /// The issuer tokens must name.
        pub fn issuer(&self) -> &str {
            &self.issuer
        }

        /// The audience tokens must name.
        pub fn audience(&self) -> &str {
            &self.audience
        }

        /// Verifies a token synchronously (JWT verification needs no I/O).
        pub fn verify_now(&self, token: &str) -> Result<Principal, TokenError> {
            let header = jsonwebtoken::decode_header(token)
                .map_err(|e| TokenError::Invalid(format!("malformed token ({e})")))?;
            let candidates: Vec<&Key> = match &header.kid {
                Some(kid) => self
                    .keys
                    .iter()
                    .filter(|k| k.kid.as_deref() == Some(kid.as_str()))
                    .collect(),
                None => self.keys.iter().collect(),
            };
            let candidates: Vec<&Key> = candidates
                .into_iter()
                .filter(|k| k.algorithm == header.alg)
                .collect();
            if candidates.is_empty() {
                return Err(TokenError::Invalid(
                    "no key of this server verifies tokens with this algorithm and key id".into(),
                ));
            }
            let mut last = TokenError::Invalid("signature mismatch".into());
            for key in candidates {
                match self.decode_with(key, token) {
                    Ok(principal) => return Ok(principal),
                    Err(e @ TokenError::Invalid(_)) => last = e,
                    Err(e) => return Err(e),
                }
            }
            Err(last)
        }

        fn decode_with(&self, key: &Key, token: &str) -> Result<Principal, TokenError> {
            let mut validation = Validation::new(key.algorithm);
            validation.leeway = self.leeway.as_secs();
            validation.validate_exp = true;
            validation.validate_nbf = true;
            validation.set_issuer(&[&self.issuer]);
            validation.set_audience(&[&self.audience]);
            validation.required_spec_claims = ["exp", "iss", "aud", "sub"]
                .into_iter()
                .map(String::from)
                .collect::<HashSet<_>>();
            let data = jsonwebtoken::decode::<Claims>(token, &key.key, &validation).map_err(
                |e| match e.kind() {
                    ErrorKind::ExpiredSignature => TokenError::Expired,
                    ErrorKind::InvalidAudience => {
                        TokenError::Invalid("the token was issued for another resource".into())
                    }
                    ErrorKind::InvalidIssuer => {
                        TokenError::Invalid("the token comes from an untrusted issuer".into())
                    }
                    ErrorKind::ImmatureSignature => {
                        TokenError::Invalid("the token is not valid yet".into())
                    }
                    ErrorKind::InvalidSignature => TokenError::Invalid("signature mismatch".into()),
                    ErrorKind::MissingRequiredClaim(c) => {
                        TokenError::Invalid(format!("the token has no {c} claim"))
                    }
                    _ => TokenError::Invalid("malformed token".into()),
                },
            )?;
            let claims = data.claims;
            let mut scopes: Vec<String> = Vec::new();
            if let Some(s) = &claims.scope {
                scopes.extend(s.split_ascii_whitespace().map(str::to_owned));
            }
            match claims.scp {
                Some(Scopes::Text(s)) => {
                    scopes.extend(s.split_ascii_whitespace().map(str::to_owned))
                }
                Some(Scopes::List(list)) => scopes.extend(list),
                None => {}
            }
            scopes.sort();
            scopes.dedup();
            if claims.sub.is_empty() {
                return Err(TokenError::Invalid(
                    "the token has an empty sub claim".into(),
                ));
            }
            Ok(Principal {
                subject: claims.sub,
                scopes,
                issuer: Some(claims.iss),
            })
        }
    }

    fn signing_algorithm(alg: KeyAlgorithm) -> Option<Algorithm> {
        Some(match alg {
            KeyAlgorithm::HS256 => Algorithm::HS256,
            KeyAlgorithm::HS384 => Algorithm::HS384,
            KeyAlgorithm::HS512 => Algorithm::HS512,
            KeyAlgorithm::ES256 => Algorithm::ES256,
            KeyAlgorithm::ES384 => Algorithm::ES384,
            KeyAlgorithm::RS256 => Algorithm::RS256,
            KeyAlgorithm::RS384 => Algorithm::RS384,
            KeyAlgorithm::RS512 => Algorithm::RS512,
            KeyAlgorithm::PS256 => Algorithm::PS256,
            KeyAlgorithm::PS384 => Algorithm::PS384,
            KeyAlgorithm::PS512 => Algorithm::PS512,
            KeyAlgorithm::EdDSA => Algorithm::EdDSA,
            _ => return None,
        })
    }

    impl TokenVerifier for JwtVerifier {
        fn verify<'a>(&'a self, token: &'a str) -> VerifyFuture<'a> {
            let result = self.verify_now(token);
            Box::pin(async move { result })
        }
    }
}

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
