//! The third parties users connect to: where to send the browser, and how to turn the
//! code it brings back into tokens, server-side.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

use crate::auth::bearer::FetchOptions;
use crate::auth::bearer::fetch::{Fetcher, basic_authorization};

/// `url` with `query` appended (after its own query, if it has one).
pub(crate) fn with_query(url: &str, query: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}{query}")
}

/// A third party's tokens for one user, kept server-side.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenSet {
    access_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    refresh_token: Option<String>,
    /// When the access token expires (Unix seconds), if the third party said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expires_at: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    scope: Option<String>,
}

impl std::fmt::Debug for TokenSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Tokens never reach a log.
        f.debug_struct("TokenSet")
            .field("access_token", &"<redacted>")
            .field(
                "refresh_token",
                &self.refresh_token.as_ref().map(|_| "<redacted>"),
            )
            .field("expires_at", &self.expires_at)
            .field("scope", &self.scope)
            .finish()
    }
}

impl TokenSet {
    /// Tokens from their parts (`expires_in`: the access token's lifetime, as OAuth token
    /// responses give it).
    pub fn new(
        access_token: impl Into<String>,
        refresh_token: Option<String>,
        expires_in: Option<Duration>,
        scope: Option<String>,
    ) -> Self {
        TokenSet {
            access_token: access_token.into(),
            refresh_token,
            expires_at: expires_in.map(|d| unix_now() + d.as_secs()),
            scope,
        }
    }

    /// The access token, to call the third party's API with.
    pub fn access_token(&self) -> &str {
        &self.access_token
    }

    /// The refresh token, if the third party issued one.
    pub fn refresh_token(&self) -> Option<&str> {
        self.refresh_token.as_deref()
    }

    /// The scopes granted, as the third party listed them.
    pub fn scope(&self) -> Option<&str> {
        self.scope.as_deref()
    }

    /// Whether the access token has expired (with 30 s to spare).
    pub fn expired(&self) -> bool {
        self.expires_at.is_some_and(|at| at <= unix_now() + 30)
    }

    /// The set a refresh answered, completed from the set it replaces: a third party that
    /// does not rotate refresh tokens leaves the old one in force, and one that does not
    /// repeat the scopes granted them unchanged (RFC 6749, sections 5.1 and 6).
    pub(super) fn renewing(mut self, old: &TokenSet) -> TokenSet {
        if self.refresh_token.is_none() {
            self.refresh_token.clone_from(&old.refresh_token);
        }
        if self.scope.is_none() {
            self.scope.clone_from(&old.scope);
        }
        self
    }
}

/// Why a third party did not refresh a user's tokens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RefreshError {
    /// The third party no longer honours the refresh token (`invalid_grant`: revoked,
    /// expired, or the user withdrew their consent): the user has to connect again.
    Rejected,
    /// This provider cannot refresh tokens: the user connects again once the access token
    /// expires.
    Unsupported,
    /// The refresh could not be done (the token endpoint unreachable or failing, or an
    /// answer that is not a token response): nothing is known about the grant, so the
    /// user is not sent to connect again.
    Failed(String),
}

impl std::fmt::Display for RefreshError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RefreshError::Rejected => f.write_str("the third party rejected the refresh token"),
            RefreshError::Unsupported => f.write_str("the provider cannot refresh tokens"),
            RefreshError::Failed(e) => f.write_str(e),
        }
    }
}

impl std::error::Error for RefreshError {}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A third party, as the connect route drives it: an OAuth 2.1 authorization-code flow
/// with PKCE, or anything shaped like one.
pub trait Provider: Send + Sync + 'static {
    /// Where to send the browser: the third party's authorization page, carrying `state`,
    /// the PKCE `challenge` (S256) and `redirect_uri`.
    fn authorize_url(&self, state: &str, challenge: &str, redirect_uri: &str) -> String;

    /// Exchanges the `code` the browser brought back for tokens (server to server, with
    /// the PKCE `verifier`).
    fn exchange<'a>(
        &'a self,
        code: &'a str,
        verifier: &'a str,
        redirect_uri: &'a str,
    ) -> BoxFuture<'a, Result<TokenSet, String>>;

    /// Exchanges a refresh token for new tokens (server to server), when the stored access
    /// token has expired. By default the provider cannot
    /// ([`RefreshError::Unsupported`]): the user connects again.
    fn refresh<'a>(
        &'a self,
        refresh_token: &'a str,
    ) -> BoxFuture<'a, Result<TokenSet, RefreshError>> {
        let _ = refresh_token;
        Box::pin(std::future::ready(Err(RefreshError::Unsupported)))
    }
}

/// A standard OAuth 2.1 authorization server: the authorization and token endpoints, a
/// client id and (for a confidential client) its secret. The code is exchanged over HTTPS
/// only (the same bounded client as the resource server's verifiers: system roots, no
/// redirects, a timeout and a response cap; see
/// [`FetchOptions`](crate::auth::bearer::FetchOptions)).
#[derive(Clone)]
pub struct OAuthProvider {
    authorize_endpoint: String,
    token_endpoint: String,
    client_id: String,
    client_secret: Option<String>,
    scopes: Vec<String>,
    fetcher: Result<Fetcher, String>,
}

impl std::fmt::Debug for OAuthProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthProvider")
            .field("authorize_endpoint", &self.authorize_endpoint)
            .field("token_endpoint", &self.token_endpoint)
            .field("client_id", &self.client_id)
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

impl OAuthProvider {
    /// A provider with these endpoints and this client id (a public client until
    /// [`client_secret`](Self::client_secret)).
    pub fn new(
        authorize_endpoint: impl Into<String>,
        token_endpoint: impl Into<String>,
        client_id: impl Into<String>,
    ) -> Self {
        OAuthProvider {
            authorize_endpoint: authorize_endpoint.into(),
            token_endpoint: token_endpoint.into(),
            client_id: client_id.into(),
            client_secret: None,
            scopes: Vec::new(),
            fetcher: Fetcher::new(&FetchOptions::new()).map_err(|e| e.to_string()),
        }
    }

    /// The client secret (sent with HTTP Basic authentication to the token endpoint).
    pub fn client_secret(mut self, secret: impl Into<String>) -> Self {
        self.client_secret = Some(secret.into());
        self
    }

    /// The scopes to ask for.
    pub fn scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// How the token endpoint is reached (timeout, response cap, extra roots, plain http
    /// to a loopback test server).
    pub fn fetch_options(mut self, options: &FetchOptions) -> Self {
        self.fetcher = Fetcher::new(options).map_err(|e| e.to_string());
        self
    }
}

#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
    #[serde(default)]
    refresh_token: Option<String>,
    #[serde(default)]
    expires_in: Option<u64>,
    #[serde(default)]
    scope: Option<String>,
}

impl Provider for OAuthProvider {
    fn authorize_url(&self, state: &str, challenge: &str, redirect_uri: &str) -> String {
        let mut query = form_urlencoded::Serializer::new(String::new());
        query
            .append_pair("response_type", "code")
            .append_pair("client_id", &self.client_id)
            .append_pair("redirect_uri", redirect_uri)
            .append_pair("state", state)
            .append_pair("code_challenge", challenge)
            .append_pair("code_challenge_method", "S256");
        if !self.scopes.is_empty() {
            query.append_pair("scope", &self.scopes.join(" "));
        }
        with_query(&self.authorize_endpoint, &query.finish())
    }

    fn exchange<'a>(
        &'a self,
        code: &'a str,
        verifier: &'a str,
        redirect_uri: &'a str,
    ) -> BoxFuture<'a, Result<TokenSet, String>> {
        Box::pin(async move {
            let grant = [
                ("grant_type", "authorization_code"),
                ("code", code),
                ("redirect_uri", redirect_uri),
                ("code_verifier", verifier),
            ];
            match self.token_request(&grant).await? {
                Answer::Tokens(tokens) => Ok(tokens),
                Answer::Refused { status, .. } => {
                    Err(format!("the token endpoint refused the code ({status})"))
                }
            }
        })
    }

    fn refresh<'a>(
        &'a self,
        refresh_token: &'a str,
    ) -> BoxFuture<'a, Result<TokenSet, RefreshError>> {
        Box::pin(async move {
            let grant = [
                ("grant_type", "refresh_token"),
                ("refresh_token", refresh_token),
            ];
            match self.token_request(&grant).await {
                Ok(Answer::Tokens(tokens)) => Ok(tokens),
                Ok(Answer::Refused { error, .. }) if error.as_deref() == Some("invalid_grant") => {
                    Err(RefreshError::Rejected)
                }
                Ok(Answer::Refused { status, error }) => Err(RefreshError::Failed(format!(
                    "the token endpoint refused the refresh ({status}{})",
                    error.map(|e| format!(", {e}")).unwrap_or_default()
                ))),
                Err(e) => Err(RefreshError::Failed(e)),
            }
        })
    }
}

/// What the token endpoint answered.
enum Answer {
    Tokens(TokenSet),
    /// An error status, with the OAuth `error` code when the body carried one.
    Refused {
        status: axum::http::StatusCode,
        error: Option<String>,
    },
}

#[derive(Deserialize)]
struct ErrorResponse {
    error: String,
}

impl OAuthProvider {
    /// Posts a grant to the token endpoint, authenticated as the client (HTTP Basic with
    /// a secret, else `client_id` in the form); `Err` when it cannot be reached or answers
    /// nonsense.
    async fn token_request(&self, grant: &[(&str, &str)]) -> Result<Answer, String> {
        let fetcher = self.fetcher.as_ref().map_err(Clone::clone)?;
        let url = fetcher
            .check_url(&self.token_endpoint, "token endpoint")
            .map_err(|e| e.to_string())?;
        // Built apart: the serializer is not `Send`, and must not live across the await.
        let (body, authorization) = {
            let mut form = form_urlencoded::Serializer::new(String::new());
            form.extend_pairs(grant);
            let authorization = match &self.client_secret {
                Some(secret) => {
                    Some(basic_authorization(&self.client_id, secret).map_err(|e| e.to_string())?)
                }
                None => {
                    form.append_pair("client_id", &self.client_id);
                    None
                }
            };
            (form.finish(), authorization)
        };
        let fetched = fetcher
            .post_form(&url, body, authorization)
            .await
            .map_err(|e| e.to_string())?;
        if !fetched.status.is_success() {
            let error = serde_json::from_slice::<ErrorResponse>(&fetched.body)
                .ok()
                .map(|e| e.error);
            return Ok(Answer::Refused {
                status: fetched.status,
                error,
            });
        }
        let parsed: TokenResponse = serde_json::from_slice(&fetched.body)
            .map_err(|e| format!("the token endpoint's answer is not a token response: {e}"))?;
        Ok(Answer::Tokens(TokenSet::new(
            parsed.access_token,
            parsed.refresh_token,
            parsed.expires_in.map(Duration::from_secs),
            parsed.scope,
        )))
    }
}
