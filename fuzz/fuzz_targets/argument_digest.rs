//! The audit digest of a call's arguments (and the digest sealed state is bound to) is
//! taken over the text the client sent when that text is already canonical, and over the
//! parsed value otherwise. For any text both must give the same digest: a text the fast
//! path vouches for that a parser reads differently would let two clients' identical
//! arguments digest apart, or different arguments digest alike.

#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp::fuzzing::argument_digests;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (fast, parsed) = argument_digests(text);
    if let Some(fast) = fast {
        assert_eq!(fast, parsed, "taken as canonical, digested apart: {text:?}");
    }
});
