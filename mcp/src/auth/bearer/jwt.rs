use std::collections::HashSet;
use std::fmt;
use std::time::Duration;

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::jwk::{
    AlgorithmParameters, EllipticCurve, Jwk, JwkSet, KeyAlgorithm, PublicKeyUse,
};
use jsonwebtoken::{Algorithm, DecodingKey, Header, Validation};
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

/// A verification key and the algorithms it may verify: one family only (RSA keys RS* and
/// PS*, P-256 keys ES256, P-384 keys ES384, Ed25519 keys EdDSA, shared secrets HS*), so a
/// token can never pick an algorithm of another family for a key (an RSA public key used
/// as an HMAC secret, say).
pub(super) struct Key {
    pub(super) kid: Option<String>,
    pub(super) algorithms: Vec<Algorithm>,
    pub(super) key: DecodingKey,
}

impl Key {
    fn single(algorithm: Algorithm, key: DecodingKey) -> Self {
        Key {
            kid: None,
            algorithms: vec![algorithm],
            key,
        }
    }
}

/// The algorithms a JWK may verify, pinned to its key type; `None` for a key this server
/// does not verify with (an encryption key, an unsupported curve, an `alg` of another
/// family than the key's, or a shared secret where only public keys are acceptable).
fn pinned_algorithms(jwk: &Jwk, allow_symmetric: bool) -> Option<Vec<Algorithm>> {
    use Algorithm::*;
    if matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption)) {
        return None;
    }
    let family = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => vec![RS256, RS384, RS512, PS256, PS384, PS512],
        AlgorithmParameters::EllipticCurve(ec) => match ec.curve {
            EllipticCurve::P256 => vec![ES256],
            EllipticCurve::P384 => vec![ES384],
            _ => return None,
        },
        AlgorithmParameters::OctetKeyPair(okp) => match okp.curve {
            EllipticCurve::Ed25519 => vec![EdDSA],
            _ => return None,
        },
        // A shared secret is usable only with an `alg` naming HMAC, and never from a
        // document fetched over the network (a JWKS is public).
        AlgorithmParameters::OctetKey(_)
            if allow_symmetric && jwk.common.key_algorithm.is_some() =>
        {
            vec![HS256, HS384, HS512]
        }
        _ => return None,
    };
    match jwk.common.key_algorithm {
        Some(alg) => {
            let alg = signing_algorithm(alg)?;
            family.contains(&alg).then(|| vec![alg])
        }
        None => Some(family),
    }
}

/// The key of one JWK: `Ok(None)` for a key skipped by [`pinned_algorithms`], `Err` for a
/// key whose material does not parse.
pub(super) fn key_from_jwk(jwk: &Jwk, allow_symmetric: bool) -> Result<Option<Key>, String> {
    let Some(algorithms) = pinned_algorithms(jwk, allow_symmetric) else {
        return Ok(None);
    };
    let key = DecodingKey::from_jwk(jwk).map_err(|e| {
        format!(
            "JWKS key {}: {e}",
            jwk.common.key_id.as_deref().unwrap_or("(no kid)")
        )
    })?;
    Ok(Some(Key {
        kid: jwk.common.key_id.clone(),
        algorithms,
        key,
    }))
}

/// The keys of `keys` that may verify a token with this header: its `kid` (when it names
/// one) and its algorithm.
pub(super) fn candidates<'k>(keys: &'k [Key], header: &Header) -> Vec<&'k Key> {
    keys.iter()
        .filter(|k| match &header.kid {
            Some(kid) => k.kid.as_deref() == Some(kid.as_str()),
            None => true,
        })
        .filter(|k| k.algorithms.contains(&header.alg))
        .collect()
}

/// What every JWT verifier checks besides the signature.
#[derive(Clone, Debug)]
pub(super) struct Checks {
    pub(super) issuer: String,
    pub(super) audience: String,
    pub(super) leeway: Duration,
}

impl Checks {
    pub(super) fn new(issuer: String, audience: String) -> Result<Self, String> {
        if issuer.trim().is_empty() {
            return Err("the issuer must not be empty".into());
        }
        if audience.trim().is_empty() {
            return Err(
                "the audience (this server's canonical resource URI) must not be empty".into(),
            );
        }
        Ok(Checks {
            issuer,
            audience,
            leeway: DEFAULT_LEEWAY,
        })
    }

    /// Verifies `token` with the keys its header selects.
    pub(super) fn verify(
        &self,
        keys: &[Key],
        header: &Header,
        token: &str,
    ) -> Result<Principal, TokenError> {
        let candidates = candidates(keys, header);
        if candidates.is_empty() {
            return Err(TokenError::Invalid(
                "no key of this server verifies tokens with this algorithm and key id".into(),
            ));
        }
        let mut last = TokenError::Invalid("signature mismatch".into());
        for key in candidates {
            match self.decode_with(key, header.alg, token) {
                Ok(principal) => return Ok(principal),
                Err(e @ TokenError::Invalid(_)) => last = e,
                Err(e) => return Err(e),
            }
        }
        Err(last)
    }
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
    checks: Checks,
}

impl fmt::Debug for JwtVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JwtVerifier")
            .field("issuer", &self.checks.issuer)
            .field("audience", &self.checks.audience)
            .field("keys", &self.keys.len())
            .field("leeway", &self.checks.leeway)
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
        let checks = Checks::new(issuer.into(), audience.into()).map_err(JwtConfigError)?;
        if keys.is_empty() {
            return Err(JwtConfigError("no usable signing key".into()));
        }
        Ok(JwtVerifier { keys, checks })
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
        Self::with_keys(vec![Key::single(Algorithm::HS256, key)], issuer, audience)
    }

    /// Tokens signed with RS256; `pem` is the issuer's RSA public key.
    pub fn rs256_pem(
        pem: &[u8],
        issuer: impl Into<String>,
        audience: impl Into<String>,
    ) -> Result<Self, JwtConfigError> {
        let key = DecodingKey::from_rsa_pem(pem)
            .map_err(|e| JwtConfigError(format!("RSA public key: {e}")))?;
        Self::with_keys(vec![Key::single(Algorithm::RS256, key)], issuer, audience)
    }

    /// Tokens signed with ES256; `pem` is the issuer's P-256 public key.
    pub fn es256_pem(
        pem: &[u8],
        issuer: impl Into<String>,
        audience: impl Into<String>,
    ) -> Result<Self, JwtConfigError> {
        let key = DecodingKey::from_ec_pem(pem)
            .map_err(|e| JwtConfigError(format!("EC public key: {e}")))?;
        Self::with_keys(vec![Key::single(Algorithm::ES256, key)], issuer, audience)
    }

    /// Tokens signed with any signing key of a JWKS document (RFC 7517). A token's `kid`
    /// picks its key. Each key verifies only its own family: RSA keys RS256/384/512 and
    /// PS256/384/512 (or only the `alg` the key names), P-256 keys ES256, P-384 keys ES384,
    /// Ed25519 keys EdDSA, `oct` keys the HS* algorithm they name. Encryption keys, and keys
    /// whose `alg` belongs to another family than their type, are ignored.
    pub fn jwks(
        json: &str,
        issuer: impl Into<String>,
        audience: impl Into<String>,
    ) -> Result<Self, JwtConfigError> {
        let set: JwkSet = serde_json::from_str(json)
            .map_err(|e| JwtConfigError(format!("JWKS document: {e}")))?;
        let mut keys = Vec::new();
        for jwk in &set.keys {
            if let Some(key) = key_from_jwk(jwk, true).map_err(JwtConfigError)? {
                keys.push(key);
            }
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
        self.checks.leeway = leeway;
        self
    }

    /// The issuer tokens must name.
    pub fn issuer(&self) -> &str {
        &self.checks.issuer
    }

    /// The audience tokens must name.
    pub fn audience(&self) -> &str {
        &self.checks.audience
    }

    /// Verifies a token synchronously (JWT verification needs no I/O).
    pub fn verify_now(&self, token: &str) -> Result<Principal, TokenError> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|e| TokenError::Invalid(format!("malformed token ({e})")))?;
        self.checks.verify(&self.keys, &header, token)
    }
}

impl Checks {
    fn decode_with(
        &self,
        key: &Key,
        algorithm: Algorithm,
        token: &str,
    ) -> Result<Principal, TokenError> {
        let mut validation = Validation::new(algorithm);
        validation.leeway = self.leeway.as_secs();
        validation.validate_exp = true;
        validation.validate_nbf = true;
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.audience]);
        validation.required_spec_claims = ["exp", "iss", "aud", "sub"]
            .into_iter()
            .map(String::from)
            .collect::<HashSet<_>>();
        let data =
            jsonwebtoken::decode::<Claims>(token, &key.key, &validation).map_err(|e| {
                match e.kind() {
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
                }
            })?;
        let claims = data.claims;
        let mut scopes: Vec<String> = Vec::new();
        if let Some(s) = &claims.scope {
            scopes.extend(s.split_ascii_whitespace().map(str::to_owned));
        }
        match claims.scp {
            Some(Scopes::Text(s)) => scopes.extend(s.split_ascii_whitespace().map(str::to_owned)),
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

    fn issuer(&self) -> Option<&str> {
        Some(&self.checks.issuer)
    }
}
