//! What the third-party sign-in tests (`tests/connect.rs`, `tests/connect_cluster.rs`)
//! serve: one tool that calls a code host with the caller's connected account.

use mcp::auth::bearer::JwtVerifier;
use mcp::connect::{Connect, ConnectError};
use mcp::registry::ToolDef;
use mcp::transport::http::BearerAuth;

/// The key the tests' access tokens are signed with (HS256).
pub const SECRET: &[u8] = b"connect-test-secret-connect-test-secret";

/// The issuer of the tests' access tokens, and the authorization server the resource names.
pub const ISSUER: &str = "https://auth.example.test";

/// Bearer auth for the resource at `resource`: tokens signed with [`SECRET`] by [`ISSUER`]
/// for that audience.
pub fn bearer_auth(resource: &str) -> BearerAuth {
    BearerAuth::new(
        JwtVerifier::hs256(SECRET, ISSUER, resource).expect("an HS256 verifier"),
        resource,
    )
    .authorization_server(ISSUER)
}

/// The tool takes no arguments.
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct NoArgs {}

/// `repositories`: asks the server's [`Connect`] (its state) for the caller's `codehost`
/// token, so a caller without a connected account is sent to sign in.
pub fn repositories_tool() -> ToolDef {
    ToolDef::from_fn(
        "repositories",
        "Lists the user's repositories on the code host.",
        |ctx: mcp::Ctx, _: NoArgs| async move {
            let connect = ctx.state::<Connect>().expect("the Connect state");
            let token = connect.token(&ctx, "codehost").await?;
            Ok::<_, ConnectError>(format!(
                "called the code host with {}",
                token.access_token()
            ))
        },
    )
}
