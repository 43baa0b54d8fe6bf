//! Scanning text for what a JSON string must escape.

/// Where the first byte a JSON string must escape is (a quote, a backslash or a control
/// character: what serde_json escapes), eight bytes at a time: a long text (a file's
/// content, say) is mostly plain. Sixty-four bytes a round, one branch for eight words
/// (which the compiler also vectorizes): 1 MiB of plain text took ~90 µs one word a round
/// and ~55 µs this way, and a guarded call with a large argument scans it twice (the
/// audit digest's canonical check, then the result).
pub(crate) fn first_escaped(bytes: &[u8]) -> Option<usize> {
    let mut at = 0;
    for block in bytes.chunks_exact(64) {
        let found = block
            .chunks_exact(8)
            .fold(0, |found, word| found | must_escape(word));
        if found != 0 {
            break;
        }
        at += 64;
    }
    for word in bytes[at..].chunks_exact(8) {
        if must_escape(word) != 0 {
            break;
        }
        at += 8;
    }
    bytes[at..]
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
        .map(|i| at + i)
}

/// Non-zero when one of eight bytes is a quote, a backslash or a control character.
#[inline(always)]
fn must_escape(word: &[u8]) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // The high bit of a byte of `(x - ONES * n) & !x & HIGH` is set when some byte of `x`
    // is below `n` (n <= 128); XOR with a repeated byte turns "equals" into "is zero".
    let below = |x: u64, n: u64| x.wrapping_sub(ONES * n) & !x & HIGH;
    let x = u64::from_le_bytes(word.try_into().expect("eight bytes"));
    let quote = x ^ (ONES * u64::from(b'"'));
    let backslash = x ^ (ONES * u64::from(b'\\'));
    below(x, 0x20) | below(quote, 1) | below(backslash, 1)
}

/// Appends `s` to `out` as a JSON string: copied as it is when nothing in it needs
/// escaping (a cursor, a name), escaped by serde_json otherwise.
pub(crate) fn push_json_str(out: &mut String, s: &str) {
    if first_escaped(s.as_bytes()).is_none() {
        out.reserve(s.len() + 2);
        out.push('"');
        out.push_str(s);
        out.push('"');
    } else {
        // Serializing a string cannot fail.
        out.push_str(&serde_json::to_string(s).unwrap_or_default());
    }
}

/// Writes `s` as a JSON string as serde_json does, to a byte buffer ([`push_json_str`]
/// for a `String`): a string without `"`, `\` or control characters is copied as it is
/// (a tool's text result may be a whole file).
pub(crate) fn write_json_str(out: &mut Vec<u8>, s: &str) -> serde_json::Result<()> {
    if first_escaped(s.as_bytes()).is_none() {
        out.reserve(s.len() + 2);
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
        Ok(())
    } else {
        serde_json::to_writer(out, s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_strings_are_what_serde_json_writes() {
        for s in ["", "plain", "a\"b", "back\\slash", "ctl\u{1}", "é ü"] {
            let mut out = String::from("x");
            push_json_str(&mut out, s);
            assert_eq!(out, format!("x{}", serde_json::to_string(s).unwrap()));
            let mut bytes = b"x".to_vec();
            write_json_str(&mut bytes, s).unwrap();
            assert_eq!(bytes, out.as_bytes());
        }
    }

    #[test]
    fn the_first_escaped_byte_is_found_at_every_offset() {
        for special in [b'"', b'\\', 0x00, 0x1f] {
            // Past two of the 64-byte blocks, so each offset of a block and of the tail.
            for len in 0..150 {
                for at in 0..len {
                    let mut bytes = vec![b'a'; len];
                    bytes[at] = special;
                    if at + 1 < len {
                        bytes[at + 1] = b'"';
                    }
                    assert_eq!(
                        first_escaped(&bytes),
                        Some(at),
                        "{special} at {at} of {len}"
                    );
                }
                let plain: Vec<u8> = (0..len).map(|i| [b' ', b'~', 0x7f, 0xc3][i % 4]).collect();
                assert_eq!(first_escaped(&plain), None, "{plain:?}");
            }
        }
    }
}
