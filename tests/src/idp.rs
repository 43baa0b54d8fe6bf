//! A small identity provider for the resource-server tests, on loopback: authorization
//! server metadata at the RFC 8414 and OpenID Connect paths, a JWKS document that can
//! rotate, token introspection (RFC 7662) with client authentication, and signing keys for
//! RS256, PS256, ES256 and EdDSA. It counts every request it gets, can go down mid-run
//! (500s, or no answer at all), and serves plain http or HTTPS with a certificate made
//! for the run.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// The client id the resource server authenticates to the introspection endpoint with.
pub const CLIENT_ID: &str = "mcp-resource server";
/// Its secret (with characters that must be form-encoded in HTTP Basic).
pub const CLIENT_SECRET: &str = "s3cr:t/+%";

/// What the provider does instead of answering.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outage {
    /// Answers normally.
    None,
    /// Answers every request with 500.
    Status500,
    /// Accepts requests and never answers.
    Hang,
}

/// Which request kinds the provider counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `/.well-known/oauth-authorization-server...`
    OauthMetadata,
    /// `.../.well-known/openid-configuration...`
    OidcMetadata,
    /// The JWKS document.
    Jwks,
    /// The introspection endpoint.
    Introspect,
    /// Anything else.
    Other,
}

/// How to start the provider.
#[derive(Clone, Debug)]
pub struct IdpOptions {
    /// HTTPS with a self-signed certificate for 127.0.0.1 (see [`Idp::cert_pem`]).
    pub tls: bool,
    /// The issuer's path (`""`, or e.g. `"/tenant-a"`).
    pub issuer_path: String,
    /// Serve RFC 8414 metadata (at the path-inserted URL).
    pub oauth_metadata: bool,
    /// Serve OpenID Connect metadata (appended to the issuer).
    pub oidc_metadata: bool,
}

impl Default for IdpOptions {
    fn default() -> Self {
        IdpOptions {
            tls: false,
            issuer_path: String::new(),
            oauth_metadata: true,
            oidc_metadata: true,
        }
    }
}

struct SigningKey {
    kid: String,
    alg: Algorithm,
    encoding: EncodingKey,
    jwk: Value,
}

struct IdpState {
    issuer: String,
    path: String,
    options: IdpOptions,
    keys: Vec<SigningKey>,
    published: Mutex<Vec<String>>,
    outage: Mutex<Outage>,
    counts: Mutex<HashMap<Kind, usize>>,
    jwks_cache_control: Mutex<Option<String>>,
    metadata_issuer: Mutex<Option<String>>,
    tokens: Mutex<HashMap<String, Value>>,
    client_auth_seen: Mutex<Vec<&'static str>>,
    serial: AtomicU64,
}

/// A running identity provider, stopped when dropped.
pub struct Idp {
    /// The bound address.
    pub addr: SocketAddr,
    state: Arc<IdpState>,
    shutdown: CancellationToken,
    cert_pem: Option<String>,
}

fn key_file(name: &str) -> Vec<u8> {
    std::fs::read(format!(
        "{}/fixtures/keys/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .expect("a test key")
}

fn signing_key(kid: &str, alg: Algorithm, file: &str, publish_alg: bool) -> SigningKey {
    let pem = key_file(file);
    let encoding = match alg {
        Algorithm::RS256 | Algorithm::PS256 => EncodingKey::from_rsa_pem(&pem),
        Algorithm::ES256 => EncodingKey::from_ec_pem(&pem),
        Algorithm::EdDSA => EncodingKey::from_ed_pem(&pem),
        other => panic!("no test key for {other:?}"),
    }
    .expect("a PEM private key");
    let jwk = Jwk::from_encoding_key(&encoding, alg).expect("a JWK");
    let mut jwk = serde_json::to_value(jwk).expect("JWK as JSON");
    jwk["kid"] = json!(kid);
    jwk["use"] = json!("sig");
    if !publish_alg {
        jwk.as_object_mut().expect("an object").remove("alg");
    }
    SigningKey {
        kid: kid.to_owned(),
        alg,
        encoding,
        jwk,
    }
}

/// Seconds since the epoch.
pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("time")
        .as_secs()
}

impl Idp {
    /// Starts a provider on plain http with both metadata paths and no issuer path.
    pub async fn start() -> Idp {
        Idp::start_with(IdpOptions::default()).await
    }

    /// Starts a provider as `options` say.
    ///
    /// Its keys: `rsa-1` (RS256, published with its `alg`), `rsa-ps` (the same RSA key for
    /// PS256, published without `alg`), `ec-1` (ES256), `ed-1` (EdDSA), all published, and
    /// `rsa-2` (RS256), published only after [`Idp::rotate`].
    pub async fn start_with(options: IdpOptions) -> Idp {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let scheme = if options.tls { "https" } else { "http" };
        let issuer = format!("{scheme}://{addr}{}", options.issuer_path);
        let keys = vec![
            signing_key("rsa-1", Algorithm::RS256, "rsa-private.pem", true),
            signing_key("rsa-ps", Algorithm::PS256, "rsa-private.pem", false),
            signing_key("ec-1", Algorithm::ES256, "ec-private.pem", true),
            signing_key("ed-1", Algorithm::EdDSA, "ed25519-private.pem", true),
            signing_key("rsa-2", Algorithm::RS256, "rsa2-private.pem", true),
        ];
        let state = Arc::new(IdpState {
            issuer,
            path: options.issuer_path.clone(),
            options: options.clone(),
            keys,
            published: Mutex::new(
                ["rsa-1", "rsa-ps", "ec-1", "ed-1"]
                    .map(String::from)
                    .to_vec(),
            ),
            outage: Mutex::new(Outage::None),
            counts: Mutex::new(HashMap::new()),
            jwks_cache_control: Mutex::new(Some("public, max-age=300".into())),
            metadata_issuer: Mutex::new(None),
            tokens: Mutex::new(HashMap::new()),
            client_auth_seen: Mutex::new(Vec::new()),
            serial: AtomicU64::new(0),
        });
        let app = axum::Router::new()
            .fallback(handle)
            .with_state(Arc::clone(&state));
        let shutdown = CancellationToken::new();
        let (acceptor, cert_pem) = if options.tls {
            let (acceptor, pem) = tls_acceptor();
            (Some(acceptor), Some(pem))
        } else {
            (None, None)
        };
        tokio::spawn(serve(listener, app, acceptor, shutdown.clone()));
        Idp {
            addr,
            state,
            shutdown,
            cert_pem,
        }
    }

    /// The issuer identifier.
    pub fn issuer(&self) -> String {
        self.state.issuer.clone()
    }

    /// The JWKS URL.
    pub fn jwks_uri(&self) -> String {
        format!("{}/jwks", self.state.issuer)
    }

    /// The introspection endpoint.
    pub fn introspection_endpoint(&self) -> String {
        format!("{}/introspect", self.state.issuer)
    }

    /// The PEM of the HTTPS certificate (a provider started with `tls`).
    pub fn cert_pem(&self) -> &str {
        self.cert_pem.as_deref().expect("a TLS provider")
    }

    /// Signs `claims` with the key `kid` and its algorithm (even an unpublished key).
    pub fn sign(&self, kid: &str, claims: &Value) -> String {
        let key = self
            .state
            .keys
            .iter()
            .find(|k| k.kid == kid)
            .unwrap_or_else(|| panic!("no key {kid}"));
        let mut header = Header::new(key.alg);
        header.kid = Some(kid.to_owned());
        jsonwebtoken::encode(&header, claims, &key.encoding).expect("signs")
    }

    /// Signs `claims` with key `signer` but names `kid` in the header.
    pub fn sign_as(&self, signer: &str, kid: &str, claims: &Value) -> String {
        let key = self
            .state
            .keys
            .iter()
            .find(|k| k.kid == signer)
            .unwrap_or_else(|| panic!("no key {signer}"));
        let mut header = Header::new(key.alg);
        header.kid = Some(kid.to_owned());
        jsonwebtoken::encode(&header, claims, &key.encoding).expect("signs")
    }

    /// Claims for `audience` from this issuer, valid for five minutes.
    pub fn claims(&self, sub: &str, audience: &str, scope: &str) -> Value {
        json!({"sub": sub, "iss": self.state.issuer, "aud": audience, "exp": now() + 300, "scope": scope})
    }

    /// Rotates the RS256 key: publishes `rsa-2` and withdraws `rsa-1`.
    pub fn rotate(&self) {
        let mut published = self.state.published.lock();
        published.retain(|k| k != "rsa-1");
        published.push("rsa-2".into());
    }

    /// Makes the provider fail (or recover).
    pub fn set_outage(&self, outage: Outage) {
        *self.state.outage.lock() = outage;
    }

    /// The `Cache-Control` of the JWKS document (`None`: no cache header).
    pub fn set_jwks_cache_control(&self, value: Option<&str>) {
        *self.state.jwks_cache_control.lock() = value.map(str::to_owned);
    }

    /// The `issuer` the metadata names (`None`: the real one).
    pub fn set_metadata_issuer(&self, issuer: Option<&str>) {
        *self.state.metadata_issuer.lock() = issuer.map(str::to_owned);
    }

    /// How many requests of `kind` arrived (whatever was answered).
    pub fn count(&self, kind: Kind) -> usize {
        self.state.counts.lock().get(&kind).copied().unwrap_or(0)
    }

    /// Every request counted, of any kind.
    pub fn total(&self) -> usize {
        self.state.counts.lock().values().sum()
    }

    /// How the resource server authenticated to the introspection endpoint, in order
    /// (`"basic"` or `"post"`).
    pub fn client_auth_seen(&self) -> Vec<&'static str> {
        self.state.client_auth_seen.lock().clone()
    }

    /// Issues an opaque token whose introspection answer is `answer` plus `active: true`.
    pub fn issue_opaque(&self, answer: Value) -> String {
        let n = self.state.serial.fetch_add(1, Ordering::Relaxed);
        let token = format!("opaque-{n}-{}", now());
        let mut answer = answer;
        answer["active"] = json!(true);
        self.state.tokens.lock().insert(token.clone(), answer);
        token
    }

    /// Revokes an opaque token: introspection answers `active: false` from now on.
    pub fn revoke(&self, token: &str) {
        if let Some(answer) = self.state.tokens.lock().get_mut(token) {
            *answer = json!({"active": false});
        }
    }

    /// Stops listening: new connections are refused.
    pub fn stop(&self) {
        self.shutdown.cancel();
    }
}

impl Drop for Idp {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

fn tls_acceptor() -> (tokio_rustls::TlsAcceptor, String) {
    let certified =
        rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
            .expect("a certificate");
    let cert = certified.cert.der().clone();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(rustls::pki_types::PrivatePkcs8KeyDer::from(
        certified.signing_key.serialize_der(),
    ));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .expect("a server certificate");
    (
        tokio_rustls::TlsAcceptor::from(Arc::new(config)),
        certified.cert.pem(),
    )
}

async fn serve(
    listener: TcpListener,
    app: axum::Router,
    tls: Option<tokio_rustls::TlsAcceptor>,
    shutdown: CancellationToken,
) {
    loop {
        let (stream, _) = tokio::select! {
            _ = shutdown.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(_) => continue,
            },
        };
        let app = app.clone();
        let tls = tls.clone();
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            let service = TowerToHyperService::new(app);
            let http = hyper::server::conn::http1::Builder::new();
            let served = async {
                match tls {
                    Some(acceptor) => {
                        let Ok(stream) = acceptor.accept(stream).await else {
                            return;
                        };
                        let _ = http.serve_connection(TokioIo::new(stream), service).await;
                    }
                    None => {
                        let _ = http.serve_connection(TokioIo::new(stream), service).await;
                    }
                }
            };
            tokio::select! {
                _ = shutdown.cancelled() => {}
                _ = served => {}
            }
        });
    }
}

fn json_response(status: StatusCode, body: Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

async fn handle(
    State(state): State<Arc<IdpState>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path();
    let p = state.path.as_str();
    let kind = if path.starts_with("/.well-known/oauth-authorization-server") {
        Kind::OauthMetadata
    } else if path.contains("/.well-known/openid-configuration") {
        Kind::OidcMetadata
    } else if path == format!("{p}/jwks") {
        Kind::Jwks
    } else if path == format!("{p}/introspect") {
        Kind::Introspect
    } else {
        Kind::Other
    };
    *state.counts.lock().entry(kind).or_default() += 1;
    let outage = *state.outage.lock();
    match outage {
        Outage::None => {}
        Outage::Status500 => {
            return json_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                json!({"error": "server_error"}),
            );
        }
        Outage::Hang => {
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }
    }
    let not_found = || json_response(StatusCode::NOT_FOUND, json!({"error": "not_found"}));
    match kind {
        Kind::OauthMetadata => {
            if state.options.oauth_metadata
                && path == format!("/.well-known/oauth-authorization-server{p}")
            {
                metadata(&state)
            } else {
                not_found()
            }
        }
        Kind::OidcMetadata => {
            if state.options.oidc_metadata
                && path == format!("{p}/.well-known/openid-configuration")
            {
                metadata(&state)
            } else {
                not_found()
            }
        }
        Kind::Jwks => {
            let published = state.published.lock().clone();
            let keys: Vec<Value> = state
                .keys
                .iter()
                .filter(|k| published.contains(&k.kid))
                .map(|k| k.jwk.clone())
                .collect();
            let mut r = json_response(StatusCode::OK, json!({"keys": keys}));
            if let Some(cc) = state.jwks_cache_control.lock().clone() {
                r.headers_mut()
                    .insert(header::CACHE_CONTROL, cc.parse().expect("a header value"));
            }
            r
        }
        Kind::Introspect if method == Method::POST => introspect(&state, &headers, &body),
        _ => not_found(),
    }
}

fn metadata(state: &IdpState) -> Response {
    let issuer = state
        .metadata_issuer
        .lock()
        .clone()
        .unwrap_or_else(|| state.issuer.clone());
    json_response(
        StatusCode::OK,
        json!({
            "issuer": issuer,
            "authorization_endpoint": format!("{}/authorize", state.issuer),
            "token_endpoint": format!("{}/token", state.issuer),
            "jwks_uri": format!("{}/jwks", state.issuer),
            "introspection_endpoint": format!("{}/introspect", state.issuer),
            "response_types_supported": ["code"],
            "introspection_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
        }),
    )
}

fn form_decode(s: &str) -> String {
    form_urlencoded::parse(format!("x={s}").as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

fn introspect(state: &IdpState, headers: &HeaderMap, body: &Bytes) -> Response {
    let form: HashMap<String, String> = form_urlencoded::parse(body)
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let basic = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Basic "))
        .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
        .and_then(|raw| String::from_utf8(raw).ok())
        .and_then(|text| {
            let (id, secret) = text.split_once(':')?;
            Some((form_decode(id), form_decode(secret)))
        });
    let (method, credentials) = match basic {
        Some(c) => ("basic", Some(c)),
        None => (
            "post",
            form.get("client_id")
                .zip(form.get("client_secret"))
                .map(|(i, s)| (i.clone(), s.clone())),
        ),
    };
    let authenticated = credentials
        .as_ref()
        .is_some_and(|(id, secret)| id == CLIENT_ID && secret == CLIENT_SECRET);
    if !authenticated {
        return json_response(StatusCode::UNAUTHORIZED, json!({"error": "invalid_client"}));
    }
    state.client_auth_seen.lock().push(method);
    if form.get("token_type_hint").map(String::as_str) != Some("access_token") {
        return json_response(StatusCode::BAD_REQUEST, json!({"error": "invalid_request"}));
    }
    let answer = form
        .get("token")
        .and_then(|t| state.tokens.lock().get(t).cloned())
        .unwrap_or_else(|| json!({"active": false}));
    json_response(StatusCode::OK, answer)
}
