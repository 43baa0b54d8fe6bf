//! The authorizer's Ask on a handshake-era connection: one `approve` question, and a call
//! that runs only on an explicit yes. Every other path (decline, cancel, an accept without
//! `approve: true`, an error, silence) is the same deny: silence is not consent.

use std::time::Duration;

use serde_json::{Value, json};

use super::{ClientRequestError, request_client_as};
use crate::conn::{ConnState, Outbound};
use crate::protocol::methods;

/// How an approval question ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Approval {
    /// The human answered accept with `approve: true`.
    Approved,
    /// Anything else, with the detail reported in the deny.
    NotApproved(String),
}

/// The input key of the approval question in an input-required result (2026-07-28).
pub(crate) const APPROVAL_KEY: &str = "mcp.approve";

/// The `elicitation/create` params asking a human to approve running `tool`.
pub(crate) fn approval_request(tool: &str, prompt: &str) -> Value {
    json!({
        "message": prompt,
        "requestedSchema": approval_schema(tool),
    })
}

/// The form asking for approval of `tool`.
pub(crate) fn approval_schema(tool: &str) -> Value {
    json!({
        "type": "object",
        "properties": {
            "approve": {
                "type": "boolean",
                "description": format!("Approve running the {tool} tool"),
            }
        },
        "required": ["approve"],
    })
}

/// Sends the question to the owner of the call and waits for the answer.
pub(crate) async fn ask_approval(
    conn: &ConnState,
    sink: &Outbound,
    tool: &str,
    prompt: &str,
    timeout: Duration,
) -> Approval {
    let params = approval_request(tool, prompt);
    let answer = request_client_as(
        conn,
        sink,
        "elicit",
        methods::ELICITATION_CREATE,
        &params,
        timeout,
        true,
    )
    .await;
    match answer {
        Ok(raw) => judge(&serde_json::from_str(raw.get()).unwrap_or(Value::Null)),
        Err(ClientRequestError::Timeout) => Approval::NotApproved("elicitation timed out".into()),
        Err(ClientRequestError::TooManyPending) => Approval::NotApproved(
            "elicitation refused: too many questions are already waiting on this connection".into(),
        ),
        Err(_) => Approval::NotApproved("elicitation failed".into()),
    }
}

/// Reads an elicitation result leniently: only `action: "accept"` with a literal boolean
/// `approve: true` approves.
pub(crate) fn judge(result: &Value) -> Approval {
    match result.get("action").and_then(Value::as_str) {
        Some("accept") => {
            if result.pointer("/content/approve") == Some(&Value::Bool(true)) {
                Approval::Approved
            } else {
                Approval::NotApproved("user accept".into())
            }
        }
        Some("decline") => Approval::NotApproved("user decline".into()),
        Some("cancel") => Approval::NotApproved("user cancel".into()),
        _ => Approval::NotApproved("user declined".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_explicit_yes_approves() {
        assert_eq!(
            judge(&json!({"action": "accept", "content": {"approve": true}})),
            Approval::Approved
        );
        for (answer, detail) in [
            (
                json!({"action": "accept", "content": {"approve": false}}),
                "user accept",
            ),
            (
                json!({"action": "accept", "content": {"approve": "true"}}),
                "user accept",
            ),
            (json!({"action": "accept"}), "user accept"),
            (json!({"action": "decline"}), "user decline"),
            (json!({"action": "cancel"}), "user cancel"),
            (json!({}), "user declined"),
            (json!(null), "user declined"),
        ] {
            assert_eq!(
                judge(&answer),
                Approval::NotApproved(detail.into()),
                "{answer}"
            );
        }
    }
}
