//! What the third-party sign-in tests (`tests/connect.rs`, `tests/connect_cluster.rs`)
//! serve: one tool that calls a code host with the caller's connected account.

use mcp::connect::{Connect, ConnectError};
use mcp::registry::ToolDef;

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
