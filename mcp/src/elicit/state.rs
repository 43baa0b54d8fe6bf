//! Sealed `requestState` for input-required results (2026-07-28).
//!
//! The state travels through the client, so it is attacker-controlled input. It is sealed
//! with HMAC-SHA256 under a server key and binds everything that must not change between
//! rounds: the method, the target (tool, prompt or URI), a digest of the arguments, the
//! verified principal, an expiry and a single-use nonce. The answers collected in earlier
//! rounds ride inside, so a later round can neither drop nor rewrite them.
//!
//! The key is random per process by default. Several replicas behind a load balancer must
//! share one key (see `ServerBuilder::state_key`), or a retry landing on another replica is
//! rejected, and one record of used nonces (a [`NonceStore`] shared through the
//! [`Cluster`](crate::cluster::Cluster)), or a state could open once per replica.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use hmac::{Hmac, Mac};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::Sha256;

use crate::cluster::{NonceStore, NonceUse};
use crate::protocol::Meta;

type HmacSha256 = Hmac<Sha256>;

/// What a sealed state must match to be accepted: the request it was issued for, borrowed
/// from it.
#[derive(Clone, Copy)]
pub(crate) struct Binding<'a> {
    pub(crate) method: &'static str,
    pub(crate) target: &'a str,
    pub(crate) args_digest: ArgsDigest<'a>,
    pub(crate) principal: Option<&'a str>,
}

/// The digest of a request's arguments, as a [`Binding`] holds it.
#[derive(Clone, Copy)]
pub(crate) enum ArgsDigest<'a> {
    /// Known already.
    Given(&'a str),
    /// Computed when first read: only a request that seals or opens a state needs it, and
    /// most do neither (a `tools/call` without an authorizer would hash its arguments for
    /// nothing).
    Lazy(&'a (dyn Fn() -> &'a str + Sync)),
}

impl ArgsDigest<'_> {
    /// The digest.
    pub(crate) fn get(&self) -> &str {
        match self {
            ArgsDigest::Given(digest) => digest,
            ArgsDigest::Lazy(digest) => digest(),
        }
    }
}

/// The sealed contents.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Payload {
    v: u8,
    m: String,
    t: String,
    d: String,
    #[serde(default)]
    p: Option<String>,
    exp: u64,
    n: String,
    #[serde(default)]
    a: Meta,
    /// Absent for no state; present (even `null`) for the state the handler kept.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "kept_value"
    )]
    s: Option<Value>,
    #[serde(default)]
    ok: u8,
}

/// A member that is present is `Some`, `null` included: a handler that kept `null` as its
/// state gets `null` back, not "no state" (found by tests/tests/codec_properties.rs).
fn kept_value<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// Where the authorizer's Ask stands for the call a state belongs to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum ApprovalState {
    /// No approval question was asked.
    #[default]
    None,
    /// The approval question was asked in the previous round.
    Asked,
    /// A human approved this exact call.
    Approved,
}

impl ApprovalState {
    fn to_wire(self) -> u8 {
        match self {
            ApprovalState::None => 0,
            ApprovalState::Asked => 1,
            ApprovalState::Approved => 2,
        }
    }

    fn from_wire(v: u8) -> Self {
        match v {
            1 => ApprovalState::Asked,
            2 => ApprovalState::Approved,
            _ => ApprovalState::None,
        }
    }
}

/// A verified state: what earlier rounds recorded.
#[derive(Clone, Debug, Default)]
pub(crate) struct Opened {
    /// Answers collected in earlier rounds, by input key.
    pub(crate) answers: Meta,
    /// The handler's own state, as it set it in the previous round.
    pub(crate) app_state: Option<Value>,
    /// Where the authorizer's Ask stands for this call.
    pub(crate) approval: ApprovalState,
}

/// Why a state was refused. Every variant is answered with -32602; the detail is logged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum StateError {
    /// Not a state this server issued, or modified since.
    Tampered,
    /// Past its expiry.
    Expired,
    /// Already used once.
    Replayed,
    /// Issued for another method, target, arguments or principal.
    Mismatched,
    /// Its single use could not be recorded (the shared nonce store is unreachable): it
    /// is refused rather than risk a replay, and can be presented again.
    Unavailable,
    /// Issued before the shared nonce store lost its records (Redis restarted without
    /// persistence): whether it was used is unknown, so it counts as used.
    Forgotten,
}

impl StateError {
    pub(crate) fn describe(&self) -> &'static str {
        match self {
            StateError::Tampered => {
                "requestState failed verification (not issued by this server, or modified)"
            }
            StateError::Expired => "requestState has expired; call again without it",
            StateError::Replayed => "requestState was already used; call again without it",
            StateError::Mismatched => "requestState was issued for a different request",
            StateError::Unavailable => {
                "requestState could not be checked for single use right now; try again"
            }
            StateError::Forgotten => {
                "requestState was issued before the server's shared store lost its records (a restart), so its single use cannot be vouched for; call again without it"
            }
        }
    }
}

/// Seals and opens states; remembers used nonces until they expire.
pub(crate) struct StateSealer {
    key: Vec<u8>,
    ttl: Duration,
    used: Arc<dyn NonceStore>,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::URL_SAFE_NO_PAD;

impl StateSealer {
    /// A sealer whose used nonces are kept in memory (at most `max_used`): one process.
    pub(crate) fn new(key: Vec<u8>, ttl: Duration, max_used: usize) -> Self {
        Self::with_store(
            key,
            ttl,
            Arc::new(crate::cluster::memory::MemoryNonces::new(max_used)),
        )
    }

    /// A sealer recording used nonces in `used` (shared by replicas).
    pub(crate) fn with_store(key: Vec<u8>, ttl: Duration, used: Arc<dyn NonceStore>) -> Self {
        StateSealer { key, ttl, used }
    }

    fn mac(&self) -> HmacSha256 {
        // HMAC accepts keys of any length.
        HmacSha256::new_from_slice(&self.key).expect("HMAC takes any key length")
    }

    /// Seals a state for `binding` carrying the answers so far.
    pub(crate) fn seal(
        &self,
        binding: &Binding<'_>,
        answers: Meta,
        app_state: Option<Value>,
        approval: ApprovalState,
    ) -> String {
        let payload = Payload {
            v: 1,
            m: binding.method.to_owned(),
            t: binding.target.to_owned(),
            d: binding.args_digest.get().to_owned(),
            p: binding.principal.map(str::to_owned),
            exp: now_ms() + self.ttl.as_millis() as u64,
            n: crate::util::random_token(16),
            a: answers,
            s: app_state,
            ok: approval.to_wire(),
        };
        let body = B64.encode(serde_json::to_vec(&payload).unwrap_or_default());
        let mut mac = self.mac();
        mac.update(body.as_bytes());
        let tag = B64.encode(mac.finalize().into_bytes());
        format!("{body}.{tag}")
    }

    /// Verifies a state against the request presenting it, consuming its nonce.
    pub(crate) async fn open(
        &self,
        state: &str,
        binding: &Binding<'_>,
    ) -> Result<Opened, StateError> {
        let (body, tag) = state.split_once('.').ok_or(StateError::Tampered)?;
        let tag = B64.decode(tag).map_err(|_| StateError::Tampered)?;
        let mut mac = self.mac();
        mac.update(body.as_bytes());
        mac.verify_slice(&tag).map_err(|_| StateError::Tampered)?;
        let bytes = B64.decode(body).map_err(|_| StateError::Tampered)?;
        let payload: Payload = serde_json::from_slice(&bytes).map_err(|_| StateError::Tampered)?;
        let now = now_ms();
        if payload.v != 1 {
            return Err(StateError::Tampered);
        }
        if payload.exp <= now {
            return Err(StateError::Expired);
        }
        if payload.m != binding.method
            || payload.t != binding.target
            || payload.d != binding.args_digest.get()
            || payload.p.as_deref() != binding.principal
        {
            return Err(StateError::Mismatched);
        }
        let issued = payload.exp.saturating_sub(self.ttl.as_millis() as u64);
        match self
            .used
            .consume_issued(&payload.n, issued, payload.exp)
            .await
        {
            Ok(NonceUse::Fresh) => {}
            Ok(NonceUse::Used) => return Err(StateError::Replayed),
            Ok(NonceUse::Forgotten) => return Err(StateError::Forgotten),
            Err(e) => {
                tracing::warn!(target: "mcp::elicit", error = %e, "cannot record a requestState nonce; refusing the state");
                return Err(StateError::Unavailable);
            }
        }
        Ok(Opened {
            answers: payload.a,
            app_state: payload.s,
            approval: ApprovalState::from_wire(payload.ok),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binding() -> Binding<'static> {
        Binding {
            method: "tools/call",
            target: "delete",
            args_digest: ArgsDigest::Given("abc"),
            principal: None,
        }
    }

    fn open(s: &StateSealer, state: &str, b: &Binding<'_>) -> Result<Opened, StateError> {
        futures::executor::block_on(s.open(state, b))
    }

    fn sealer() -> StateSealer {
        StateSealer::new(b"k".repeat(32), Duration::from_secs(60), 1000)
    }

    #[test]
    fn round_trips_once() {
        let s = sealer();
        let mut answers = Meta::new();
        answers.insert("x".into(), Value::from(1));
        let state = s.seal(
            &binding(),
            answers,
            Some(Value::from("app")),
            ApprovalState::Approved,
        );
        let opened = open(&s, &state, &binding()).unwrap();
        assert_eq!(opened.answers["x"], 1);
        assert_eq!(opened.app_state, Some(Value::from("app")));
        assert_eq!(opened.approval, ApprovalState::Approved);
        assert_eq!(
            open(&s, &state, &binding()).unwrap_err(),
            StateError::Replayed
        );
    }

    #[test]
    fn refuses_tampering_other_keys_and_mismatches() {
        let s = sealer();
        let state = s.seal(&binding(), Meta::new(), None, ApprovalState::None);
        let mut bytes = state.clone().into_bytes();
        bytes[3] ^= 1;
        assert_eq!(
            open(&s, &String::from_utf8(bytes).unwrap(), &binding()).unwrap_err(),
            StateError::Tampered
        );
        let other = StateSealer::new(b"z".repeat(32), Duration::from_secs(60), 10);
        assert_eq!(
            futures::executor::block_on(other.open(&state, &binding())).unwrap_err(),
            StateError::Tampered
        );
        for changed in [
            Binding {
                target: "other",
                ..binding()
            },
            Binding {
                args_digest: ArgsDigest::Given("def"),
                ..binding()
            },
            Binding {
                args_digest: ArgsDigest::Lazy(&|| "def"),
                ..binding()
            },
            Binding {
                principal: Some("mallory"),
                ..binding()
            },
            Binding {
                method: "prompts/get",
                ..binding()
            },
        ] {
            let state = s.seal(&binding(), Meta::new(), None, ApprovalState::None);
            assert_eq!(
                open(&s, &state, &changed).unwrap_err(),
                StateError::Mismatched
            );
        }
        assert_eq!(
            open(&s, "no-dot", &binding()).unwrap_err(),
            StateError::Tampered
        );
        assert_eq!(open(&s, "", &binding()).unwrap_err(), StateError::Tampered);
    }

    #[test]
    fn expires() {
        let s = StateSealer::new(b"k".repeat(32), Duration::from_millis(0), 10);
        let state = s.seal(&binding(), Meta::new(), None, ApprovalState::None);
        assert_eq!(
            open(&s, &state, &binding()).unwrap_err(),
            StateError::Expired
        );
    }
}
