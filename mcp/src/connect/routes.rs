//! The routes a browser opens: a link (`{path}/{reference}`), and the third party's
//! redirect back (`{path}/callback`).

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::get;

use super::Connect;
use super::flow::Refusal;
use super::pages::{page, redirect};

pub(super) fn routes(connect: Connect) -> Router {
    let path = connect.path().to_owned();
    Router::new()
        .route(&format!("{path}/callback"), get(callback))
        .route(&format!("{path}/{{reference}}"), get(open))
        .with_state(connect)
}

/// A link opened: its owner goes on to the third party; anyone else is refused.
async fn open(
    State(connect): State<Connect>,
    Path(reference): Path<String>,
    headers: HeaderMap,
) -> Response {
    if reference.len() > 64 {
        return refused(&connect, Refusal::Unknown, &reference);
    }
    let who = connect.inner.identity.identify(&headers).await;
    let opened = match connect.inner.flows.begin(&reference, who.as_ref()).await {
        Ok(opened) => opened,
        Err(refusal) => return refused(&connect, refusal, &reference),
    };
    let Some(provider) = connect.inner.providers.get(&opened.provider) else {
        return page(
            StatusCode::INTERNAL_SERVER_ERROR,
            "Cannot continue",
            "This server no longer knows the service the link was for.",
            None,
        );
    };
    redirect(&provider.authorize_url(
        &opened.oauth_state,
        &opened.challenge,
        &connect.redirect_uri(),
    ))
}

#[derive(serde::Deserialize)]
struct Returned {
    #[serde(default)]
    code: Option<String>,
    #[serde(default)]
    state: Option<String>,
    #[serde(default)]
    error: Option<String>,
}

/// The third party sent the browser back: the code becomes tokens, stored for the link's
/// owner, and their call goes on.
async fn callback(
    State(connect): State<Connect>,
    Query(back): Query<Returned>,
    headers: HeaderMap,
) -> Response {
    let Some(state) = back.state.as_deref().filter(|s| s.len() <= 64) else {
        return page(
            StatusCode::BAD_REQUEST,
            "Cannot continue",
            "The sign-in came back without the state this server gave it.",
            None,
        );
    };
    let who = connect.inner.identity.identify(&headers).await;
    let returned = match connect.inner.flows.returned(state, who.as_ref()).await {
        Ok(r) => r,
        Err(refusal) => return refused(&connect, refusal, ""),
    };
    let flows = &connect.inner.flows;
    if let Some(error) = back.error {
        flows.finish(&returned.reference, false).await;
        tracing::info!(target: "mcp::connect", provider = %returned.provider, error = %error, "the third party refused the sign-in");
        return page(
            StatusCode::BAD_REQUEST,
            "The sign-in was refused",
            &format!("The service said: {error}. Nothing was connected."),
            None,
        );
    }
    let (Some(code), Some(provider)) = (
        back.code.as_deref(),
        connect.inner.providers.get(&returned.provider),
    ) else {
        flows.finish(&returned.reference, false).await;
        return page(
            StatusCode::BAD_REQUEST,
            "Cannot continue",
            "The sign-in came back without a code.",
            None,
        );
    };
    let tokens = match provider
        .exchange(code, &returned.verifier, &connect.redirect_uri())
        .await
    {
        Ok(tokens) => tokens,
        Err(e) => {
            flows.finish(&returned.reference, false).await;
            tracing::warn!(target: "mcp::connect", provider = %returned.provider, error = %e, "could not exchange a sign-in code");
            return page(
                StatusCode::BAD_GATEWAY,
                "The sign-in did not complete",
                "The service did not hand over access. Nothing was connected; try again from your AI application.",
                None,
            );
        }
    };
    let stored = connect
        .inner
        .tokens
        .put(&returned.owner.key(), &returned.provider, &tokens)
        .await;
    if let Err(e) = stored {
        flows.finish(&returned.reference, false).await;
        tracing::error!(target: "mcp::connect", error = %e, "could not store a user's tokens");
        return page(
            StatusCode::INTERNAL_SERVER_ERROR,
            "The sign-in did not complete",
            "This server could not keep the access. Try again later.",
            None,
        );
    }
    flows.finish(&returned.reference, true).await;
    tracing::info!(target: "mcp::connect", provider = %returned.provider, "an account was connected");
    page(
        StatusCode::OK,
        "Connected",
        "Your account is connected. You can close this page and go back to your AI application.",
        None,
    )
}

/// The page for a refused link or callback.
fn refused(connect: &Connect, refusal: Refusal, reference: &str) -> Response {
    match refusal {
        Refusal::Unknown => page(
            StatusCode::NOT_FOUND,
            "Unknown link",
            "This link is not one this server handed out, or it was already used.",
            None,
        ),
        Refusal::Expired => page(
            StatusCode::GONE,
            "This link has expired",
            "Ask your AI application again for a new one.",
            None,
        ),
        Refusal::Used => page(
            StatusCode::GONE,
            "This link was already used",
            "Each link opens once. Ask your AI application again for a new one.",
            None,
        ),
        Refusal::NotSignedIn => {
            let back = format!(
                "{}{}/{reference}",
                connect.inner.base_url, connect.inner.path
            );
            let sign_in = (!reference.is_empty())
                .then(|| connect.inner.identity.sign_in_url(&back))
                .flatten();
            page(
                StatusCode::UNAUTHORIZED,
                "Sign in first",
                "Sign in to this server with the account you use in your AI application, then open the link again.",
                sign_in.as_deref().map(|url| (url, "Sign in")),
            )
        }
        Refusal::Unavailable => page(
            StatusCode::SERVICE_UNAVAILABLE,
            "Cannot continue right now",
            "This server cannot check the link at the moment. Try again in a minute.",
            None,
        ),
        Refusal::WrongUser => {
            tracing::warn!(target: "mcp::connect", "a link was opened by someone other than the user it was made for; refused, and the link is spent");
            page(
                StatusCode::FORBIDDEN,
                "This link is not yours",
                "It was made for a different account than the one signed in here, so nothing was connected and the link no longer works. If you started this, sign in with the account you use in your AI application and ask it again.",
                None,
            )
        }
    }
}
