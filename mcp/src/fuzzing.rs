//! Narrow entry points for the fuzz targets in `fuzz/` into code that is not public API.
//! Not for applications: hidden from the docs, and free to change.

use std::time::Duration;

use serde_json::Value;

use crate::elicit::state::{ApprovalState, ArgsDigest, Binding, StateSealer};
use crate::protocol::Meta;

/// The sealing of `requestState` (2026-07-28), with a fixed key.
pub struct SealedStates {
    sealer: StateSealer,
}

/// What a state that opened carried.
#[derive(Debug)]
pub struct OpenedState {
    /// Answers collected in earlier rounds.
    pub answers: Meta,
    /// The handler's own state.
    pub app_state: Option<Value>,
    /// Whether the state records a human's approval of this exact call.
    pub approved: bool,
}

impl Default for SealedStates {
    fn default() -> Self {
        SealedStates::new()
    }
}

impl SealedStates {
    /// A sealer with a fixed 32-byte key, states valid for a minute, 1024 used nonces kept.
    pub fn new() -> Self {
        SealedStates {
            sealer: StateSealer::new(
                b"fuzzing-key-fuzzing-key-fuzzing!".to_vec(),
                Duration::from_secs(60),
                1024,
            ),
        }
    }

    fn binding<'a>(
        target: &'a str,
        args_digest: &'a str,
        principal: Option<&'a str>,
    ) -> Binding<'a> {
        Binding {
            method: "tools/call",
            target,
            args_digest: ArgsDigest::Given(args_digest),
            principal,
        }
    }

    /// Seals a state for a `tools/call` of `target` with these arguments and principal.
    pub fn seal(
        &self,
        target: &str,
        args_digest: &str,
        principal: Option<&str>,
        answers: Meta,
        app_state: Option<Value>,
        approved: bool,
    ) -> String {
        let approval = if approved {
            ApprovalState::Approved
        } else {
            ApprovalState::Asked
        };
        self.sealer.seal(
            &Self::binding(target, args_digest, principal),
            answers,
            app_state,
            approval,
        )
    }

    /// Opens `state` as presented with a `tools/call` of `target`; the error names why it
    /// was refused.
    pub fn open(
        &self,
        state: &str,
        target: &str,
        args_digest: &str,
        principal: Option<&str>,
    ) -> Result<OpenedState, &'static str> {
        // The in-memory nonce record answers at once.
        futures::executor::block_on(
            self.sealer
                .open(state, &Self::binding(target, args_digest, principal)),
        )
        .map(|o| OpenedState {
            answers: o.answers,
            app_state: o.app_state,
            approved: o.approval == ApprovalState::Approved,
        })
        .map_err(|e| e.describe())
    }
}

/// Whether an elicitation result approves running a tool, as the authorizer's Ask judges
/// it (only `action: "accept"` with a literal `approve: true` does).
pub fn approves(result: &Value) -> bool {
    crate::elicit::judge(result) == crate::elicit::Approval::Approved
}

/// Decodes a session's Redis hash (field name to value, as `HGETALL` returns it) and its
/// subscriptions the way the Redis backend does; the error names what was malformed.
#[cfg(feature = "redis")]
pub fn redis_session_record(
    fields: std::collections::HashMap<String, String>,
    subscriptions: Vec<String>,
) -> Result<crate::cluster::SessionRecord, String> {
    crate::cluster::redis::record_from(fields, subscriptions).map_err(|e| e.to_string())
}

/// Decodes one JSON value the Redis backend stored (a stream record, a parked question, a
/// task, a bus message) the way it does.
#[cfg(feature = "redis")]
pub fn redis_value<T: serde::de::DeserializeOwned>(text: &str, what: &str) -> Result<T, String> {
    crate::cluster::redis::parse_json(text, what).map_err(|e| e.to_string())
}

/// Whether the envelope's one-pass walk reads `frame` as the derived reader does (and the
/// params' head as their own reader does), where it reads it at all: `Err` says how not.
pub fn envelope_walk_agrees(frame: &str) -> Result<(), String> {
    crate::protocol::jsonrpc::walk_agrees(frame)
}

/// The audit digest of a call's arguments sent as `text`, both ways the server can take
/// it: over the text itself when it is already canonical (`None` when it is not), and
/// over the value parsed from it (the text's value, or `null` if it is not JSON).
pub fn argument_digests(text: &str) -> (Option<String>, String) {
    let value = serde_json::from_str(text).unwrap_or(Value::Null);
    (
        crate::auth::audit::digest_canonical_text(text),
        crate::auth::audit::digest_json(&value),
    )
}
