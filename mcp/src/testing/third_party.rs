//! A third party's OAuth 2.1 authorization server in this process, for tests and demos of
//! `mcp::connect` (the `oauth` feature): it approves every authorization at once,
//! checks PKCE, the redirect URI and the client's secret at its token endpoint, issues
//! refresh tokens (honoured until revoked, not rotated) and access tokens of a lifetime
//! you choose, and counts what it issued.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine as _;
use parking_lot::Mutex;
use sha2::Digest as _;
use tokio_util::sync::CancellationToken;

use crate::connect::OAuthProvider;

/// The client this provider knows.
const CLIENT_ID: &str = "mcp-connect-test";
const CLIENT_SECRET: &str = "mock-client-secret";

/// A mock authorization server on a loopback port; stops when dropped.
#[derive(Debug)]
pub struct MockProvider {
    addr: SocketAddr,
    state: Arc<Shared>,
    stop: CancellationToken,
}

#[derive(Debug)]
struct Shared {
    codes: Mutex<HashMap<String, Grant>>,
    /// The refresh tokens it still honours.
    refresh_tokens: Mutex<HashSet<String>>,
    issued: AtomicUsize,
    refreshes: AtomicUsize,
    /// The `expires_in` of the access tokens it issues, in seconds.
    lifetime: AtomicU64,
    refuse: AtomicBool,
}

impl Default for Shared {
    fn default() -> Self {
        Shared {
            codes: Mutex::default(),
            refresh_tokens: Mutex::default(),
            issued: AtomicUsize::new(0),
            refreshes: AtomicUsize::new(0),
            lifetime: AtomicU64::new(3600),
            refuse: AtomicBool::new(false),
        }
    }
}

#[derive(Debug)]
struct Grant {
    challenge: String,
    redirect_uri: String,
}

impl MockProvider {
    /// Starts one on `127.0.0.1` (a free port).
    pub async fn start() -> std::io::Result<MockProvider> {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(Shared::default());
        let app = Router::new()
            .route("/authorize", get(authorize))
            .route("/token", post(token))
            .with_state(Arc::clone(&state));
        let stop = CancellationToken::new();
        let stopped = stop.clone();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(stopped.cancelled_owned())
                .await;
        });
        Ok(MockProvider { addr, state, stop })
    }

    /// Its base URL (`http://127.0.0.1:<port>`).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// An [`OAuthProvider`] for it: its endpoints, its client id and secret.
    pub fn provider(&self) -> OAuthProvider {
        OAuthProvider::new(
            format!("{}/authorize", self.url()),
            format!("{}/token", self.url()),
            CLIENT_ID,
        )
        .client_secret(CLIENT_SECRET)
        .scopes(["repo:read"])
        // It serves plain http on loopback: allowed for it alone.
        .fetch_options(&crate::auth::bearer::FetchOptions::new().allow_http_loopback())
    }

    /// How many access tokens it issued (for codes and for refresh tokens).
    pub fn tokens_issued(&self) -> usize {
        self.state.issued.load(Ordering::SeqCst)
    }

    /// How many refresh tokens it exchanged for access tokens.
    pub fn refreshes(&self) -> usize {
        self.state.refreshes.load(Ordering::SeqCst)
    }

    /// The lifetime (`expires_in`) of the access tokens it issues from now on (default an
    /// hour). `mcp::connect` counts a token within 30 s of its expiry as expired, so 32 s
    /// makes a token that is fresh when issued and due for a refresh two seconds later.
    pub fn access_token_lifetime(&self, lifetime: Duration) {
        self.state
            .lifetime
            .store(lifetime.as_secs(), Ordering::SeqCst);
    }

    /// Revokes every refresh token it issued: refreshing with one gets `invalid_grant`.
    pub fn revoke_refresh_tokens(&self) {
        self.state.refresh_tokens.lock().clear();
    }

    /// Stops serving: its endpoints refuse connections from now on (an outage).
    pub fn stop(&self) {
        self.stop.cancel();
    }

    /// From now on, the user refuses at the authorization page (`error=access_denied`).
    pub fn refuse_authorizations(&self, refuse: bool) {
        self.state.refuse.store(refuse, Ordering::SeqCst);
    }
}

impl Drop for MockProvider {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

fn plain(status: StatusCode, text: &str) -> Response {
    (status, text.to_owned()).into_response()
}

fn invalid_grant() -> Response {
    plain(StatusCode::BAD_REQUEST, r#"{"error":"invalid_grant"}"#)
}

/// The authorization page: approves at once, sending the browser back with a code.
async fn authorize(
    State(state): State<Arc<Shared>>,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let get = |k: &str| q.get(k).map(String::as_str).unwrap_or_default();
    if get("response_type") != "code"
        || get("client_id") != CLIENT_ID
        || get("code_challenge_method") != "S256"
        || get("code_challenge").is_empty()
        || get("state").is_empty()
        || !get("redirect_uri").starts_with("http")
    {
        return plain(StatusCode::BAD_REQUEST, "invalid authorization request");
    }
    let back = |params: String| {
        let to = crate::connect::with_query(get("redirect_uri"), &params);
        let mut r = StatusCode::FOUND.into_response();
        if let Ok(v) = to.parse() {
            r.headers_mut().insert(header::LOCATION, v);
        }
        r
    };
    let query = |pairs: &[(&str, &str)]| {
        form_urlencoded::Serializer::new(String::new())
            .extend_pairs(pairs)
            .finish()
    };
    if state.refuse.load(Ordering::SeqCst) {
        return back(query(&[
            ("error", "access_denied"),
            ("state", get("state")),
        ]));
    }
    let code = crate::util::random_token(16);
    state.codes.lock().insert(
        code.clone(),
        Grant {
            challenge: get("code_challenge").to_owned(),
            redirect_uri: get("redirect_uri").to_owned(),
        },
    );
    back(query(&[("code", &code), ("state", get("state"))]))
}

/// The token endpoint: a code once, for the client that proves its secret and the
/// verifier of the code's challenge.
async fn token(State(state): State<Arc<Shared>>, headers: HeaderMap, body: String) -> Response {
    let form: HashMap<String, String> = form_urlencoded::parse(body.as_bytes())
        .into_owned()
        .collect();
    let get = |k: &str| form.get(k).map(String::as_str).unwrap_or_default();
    let expected = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{CLIENT_ID}:{CLIENT_SECRET}"))
    );
    if headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        != Some(expected.as_str())
    {
        return plain(StatusCode::UNAUTHORIZED, r#"{"error":"invalid_client"}"#);
    }
    match get("grant_type") {
        "authorization_code" => {
            let Some(grant) = state.codes.lock().remove(get("code")) else {
                return invalid_grant();
            };
            let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode(sha2::Sha256::digest(get("code_verifier").as_bytes()));
            if challenge != grant.challenge || get("redirect_uri") != grant.redirect_uri {
                return invalid_grant();
            }
            let n = state.issued.fetch_add(1, Ordering::SeqCst) + 1;
            let refresh = format!("mock-refresh-{n}");
            state.refresh_tokens.lock().insert(refresh.clone());
            tokens(&state, n, Some(refresh))
        }
        "refresh_token" => {
            if !state.refresh_tokens.lock().contains(get("refresh_token")) {
                return invalid_grant();
            }
            state.refreshes.fetch_add(1, Ordering::SeqCst);
            let n = state.issued.fetch_add(1, Ordering::SeqCst) + 1;
            // Not rotated: the client keeps using the refresh token it has.
            tokens(&state, n, None)
        }
        _ => plain(
            StatusCode::BAD_REQUEST,
            r#"{"error":"unsupported_grant_type"}"#,
        ),
    }
}

/// A token response with the `n`th access token.
fn tokens(state: &Shared, n: usize, refresh_token: Option<String>) -> Response {
    let mut body = serde_json::json!({
        "access_token": format!("mock-access-{n}"),
        "token_type": "Bearer",
        "expires_in": state.lifetime.load(Ordering::SeqCst),
        "scope": "repo:read",
    });
    if let Some(refresh) = refresh_token {
        body["refresh_token"] = refresh.into();
    }
    let mut response = plain(StatusCode::OK, &body.to_string());
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    response
}
