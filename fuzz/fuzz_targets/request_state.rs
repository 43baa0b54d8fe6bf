//! Sealed `requestState` (2026-07-28): the client carries it, so it is attacker-controlled.
//! Any string presented as a state must be refused unless it is, byte for byte, a state
//! the server issued for this very call and has not seen before; a genuine state mutated
//! in any way, or presented for another tool, arguments or principal, must be refused.

#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use mcp::fuzzing::SealedStates;
use serde_json::json;

fn sealer() -> &'static SealedStates {
    static S: OnceLock<SealedStates> = OnceLock::new();
    S.get_or_init(SealedStates::new)
}

fuzz_target!(|data: &[u8]| {
    let s = sealer();
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    match mode % 3 {
        // Whatever the fuzzer writes is not a state this server issued.
        0 => {
            assert!(
                s.open(&text, "delete", "digest", None).is_err(),
                "forged: {text:?}"
            );
            assert!(s.open(&text, "delete", "digest", Some("alice")).is_err());
        }
        // A genuine state, mutated by the input: refused unless unchanged.
        1 => {
            let mut answers = mcp::protocol::Meta::new();
            answers.insert("mcp.approve".into(), json!({"action": "accept"}));
            let genuine = s.seal("delete", "digest", Some("alice"), answers, None, true);
            let mut bytes = genuine.clone().into_bytes();
            for pair in rest.chunks(2) {
                if let [at, x] = *pair {
                    let i = at as usize % (bytes.len() + 1);
                    match x % 4 {
                        0 if i < bytes.len() => bytes[i] ^= x | 1,
                        1 => bytes.insert(i, x),
                        2 if i < bytes.len() => {
                            bytes.remove(i);
                        }
                        _ => bytes.truncate(i),
                    }
                }
            }
            let mutated = String::from_utf8_lossy(&bytes).into_owned();
            let opened = s.open(&mutated, "delete", "digest", Some("alice"));
            if mutated != genuine {
                assert!(opened.is_err(), "a modified state opened: {mutated:?}");
            } else {
                let o = opened.expect("an untouched genuine state opens once");
                assert!(o.approved);
                // ... and never twice.
                assert!(s.open(&genuine, "delete", "digest", Some("alice")).is_err());
            }
        }
        // A genuine state presented for another call.
        _ => {
            let other = text.chars().take(32).collect::<String>();
            let genuine = s.seal(
                "delete",
                "digest",
                Some("alice"),
                Default::default(),
                None,
                true,
            );
            let (tool, digest, principal) = match rest.first().map(|b| b % 3) {
                Some(0) => (other.as_str(), "digest", Some("alice")),
                Some(1) => ("delete", other.as_str(), Some("alice")),
                _ => ("delete", "digest", Some(other.as_str())),
            };
            let same = tool == "delete" && digest == "digest" && principal == Some("alice");
            let opened = s.open(&genuine, tool, digest, principal);
            assert_eq!(
                opened.is_ok(),
                same,
                "presented for {tool:?} {digest:?} {principal:?}"
            );
            if !same {
                // Refusing a swap does not burn the state for its rightful call.
                assert!(s.open(&genuine, "delete", "digest", Some("alice")).is_ok());
            }
        }
    }
});
