//! A third party's OAuth 2.1 authorization server in this process, for tests and demos of
//! [`crate::connect`] (the `oauth` feature): it approves every authorization at once,
//! checks PKCE, the redirect URI and the client's secret at its token endpoint, and counts
//! what it issued.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

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

#[derive(Debug, Default)]
struct Shared {
    codes: Mutex<HashMap<String, Grant>>,
    issued: AtomicUsize,
    refuse: std::sync::atomic::AtomicBool,
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

    /// How many access tokens it issued.
    pub fn tokens_issued(&self) -> usize {
        self.state.issued.load(Ordering::SeqCst)
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
    if get("grant_type") != "authorization_code" {
        return plain(
            StatusCode::BAD_REQUEST,
            r#"{"error":"unsupported_grant_type"}"#,
        );
    }
    let Some(grant) = state.codes.lock().remove(get("code")) else {
        return plain(StatusCode::BAD_REQUEST, r#"{"error":"invalid_grant"}"#);
    };
    let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(sha2::Sha256::digest(get("code_verifier").as_bytes()));
    if challenge != grant.challenge || get("redirect_uri") != grant.redirect_uri {
        return plain(StatusCode::BAD_REQUEST, r#"{"error":"invalid_grant"}"#);
    }
    let n = state.issued.fetch_add(1, Ordering::SeqCst) + 1;
    let mut response = plain(
        StatusCode::OK,
        &serde_json::json!({
            "access_token": format!("mock-access-{n}"),
            "token_type": "Bearer",
            "expires_in": 3600,
            "refresh_token": format!("mock-refresh-{n}"),
            "scope": "repo:read",
        })
        .to_string(),
    );
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    response
}
