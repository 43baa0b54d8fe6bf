//! Authorization server discovery: OAuth 2.0 Authorization Server Metadata (RFC 8414) and
//! OpenID Connect Discovery, with the issuer check both require.

use std::time::{Duration, Instant};

use axum::http::StatusCode;
use serde::Deserialize;
use url::Url;

use super::fetch::{Fetcher, ProviderError};

/// What the verifiers use of an authorization server's metadata.
#[derive(Clone, Debug)]
pub(super) struct Metadata {
    /// Where the metadata was found.
    pub(super) url: Url,
    pub(super) jwks_uri: Option<String>,
    pub(super) introspection_endpoint: Option<String>,
}

#[derive(Deserialize)]
struct Document {
    issuer: Option<String>,
    #[serde(default)]
    jwks_uri: Option<String>,
    #[serde(default)]
    introspection_endpoint: Option<String>,
}

/// The URLs the metadata of `issuer` may be at, in the order they are tried: RFC 8414's
/// (the well-known path inserted between the host and the issuer's path), then OpenID
/// Connect's with the same insertion, then OpenID Connect's appended to the issuer.
pub(super) fn metadata_urls(issuer: &Url) -> Vec<Url> {
    let mut origin = issuer.clone();
    origin.set_path("");
    origin.set_query(None);
    let origin = origin.as_str().trim_end_matches('/').to_owned();
    let path = issuer.path().trim_end_matches('/');
    let mut urls = vec![
        format!("{origin}/.well-known/oauth-authorization-server{path}"),
        format!("{origin}/.well-known/openid-configuration{path}"),
    ];
    if !path.is_empty() {
        urls.push(format!("{origin}{path}/.well-known/openid-configuration"));
    }
    urls.into_iter()
        .filter_map(|u| Url::parse(&u).ok())
        .collect()
}

/// Checks an issuer identifier: an https URL (or loopback http with the opt-in) without a
/// query or a fragment (RFC 8414 §2).
pub(super) fn check_issuer(fetcher: &Fetcher, issuer: &str) -> Result<Url, ProviderError> {
    let url = fetcher.check_url(issuer, "issuer")?;
    if url.query().is_some() {
        return Err(ProviderError::Config(format!(
            "the issuer {issuer:?} must not have a query"
        )));
    }
    Ok(url)
}

/// Fetches the metadata of `issuer` (as configured, compared character for character
/// with the document's `issuer`).
pub(super) async fn discover(
    fetcher: &Fetcher,
    issuer: &str,
    issuer_url: &Url,
) -> Result<Metadata, ProviderError> {
    let mut tried = Vec::new();
    let mut unavailable = None;
    for url in metadata_urls(issuer_url) {
        let fetched = match fetcher.get(&url).await {
            Ok(f) => f,
            Err(e) => {
                tracing::debug!(target: "mcp::auth", %url, error = %e, "metadata not fetched");
                unavailable = Some(e);
                tried.push(url.to_string());
                continue;
            }
        };
        if fetched.status == StatusCode::OK {
            let doc: Document = serde_json::from_slice(&fetched.body).map_err(|e| {
                ProviderError::Refused(format!("the metadata at {url} is not a JSON object: {e}"))
            })?;
            // RFC 8414 §3.3 and OpenID Connect Discovery §4.3: the issuer in the document
            // must be identical to the one configured, or the document must not be used.
            match doc.issuer.as_deref() {
                Some(found) if found == issuer => {}
                Some(found) => {
                    return Err(ProviderError::Refused(format!(
                        "the metadata at {url} names the issuer {found:?}, not the configured {issuer:?}"
                    )));
                }
                None => {
                    return Err(ProviderError::Refused(format!(
                        "the metadata at {url} names no issuer"
                    )));
                }
            }
            tracing::debug!(target: "mcp::auth", %url, "authorization server metadata found");
            return Ok(Metadata {
                url,
                jwks_uri: doc.jwks_uri,
                introspection_endpoint: doc.introspection_endpoint,
            });
        }
        if fetched.status.is_server_error() || fetched.status == StatusCode::TOO_MANY_REQUESTS {
            unavailable = Some(ProviderError::Unavailable(format!(
                "{url} answered {}",
                fetched.status
            )));
        }
        tried.push(format!("{url} ({})", fetched.status.as_u16()));
    }
    Err(unavailable.unwrap_or_else(|| {
        ProviderError::Refused(format!(
            "no authorization server metadata for the issuer {issuer:?} (tried {})",
            tried.join(", ")
        ))
    }))
}

/// Discovery done once and remembered, retried after a failure no more often than
/// `retry_interval`.
pub(super) struct Discovered {
    state: tokio::sync::Mutex<DiscoveredState>,
}

#[derive(Default)]
struct DiscoveredState {
    metadata: Option<Metadata>,
    last_attempt: Option<Instant>,
    last_error: Option<ProviderError>,
}

impl Discovered {
    pub(super) fn new() -> Self {
        Discovered {
            state: tokio::sync::Mutex::new(DiscoveredState::default()),
        }
    }

    pub(super) async fn get(
        &self,
        fetcher: &Fetcher,
        issuer: &str,
        issuer_url: &Url,
        retry_interval: Duration,
    ) -> Result<Metadata, ProviderError> {
        let mut state = self.state.lock().await;
        if let Some(m) = &state.metadata {
            return Ok(m.clone());
        }
        if let (Some(at), Some(e)) = (state.last_attempt, &state.last_error)
            && at.elapsed() < retry_interval
        {
            return Err(e.clone());
        }
        state.last_attempt = Some(Instant::now());
        match discover(fetcher, issuer, issuer_url).await {
            Ok(m) => {
                state.metadata = Some(m.clone());
                state.last_error = None;
                Ok(m)
            }
            Err(e) => {
                tracing::warn!(target: "mcp::auth", issuer, error = %e, "authorization server discovery failed");
                state.last_error = Some(e.clone());
                Err(e)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn urls(issuer: &str) -> Vec<String> {
        metadata_urls(&Url::parse(issuer).unwrap())
            .into_iter()
            .map(String::from)
            .collect()
    }

    #[test]
    fn metadata_urls_follow_rfc_8414_and_openid_connect() {
        assert_eq!(
            urls("https://as.example.com"),
            vec![
                "https://as.example.com/.well-known/oauth-authorization-server",
                "https://as.example.com/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            urls("https://as.example.com/"),
            urls("https://as.example.com")
        );
        assert_eq!(
            urls("https://as.example.com:8443/tenant/one"),
            vec![
                "https://as.example.com:8443/.well-known/oauth-authorization-server/tenant/one",
                "https://as.example.com:8443/.well-known/openid-configuration/tenant/one",
                "https://as.example.com:8443/tenant/one/.well-known/openid-configuration",
            ]
        );
    }
}
