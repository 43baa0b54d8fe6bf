//! Recognizing JSON text that is already in the canonical form the audit digest is taken
//! over (object keys sorted, no whitespace, strings and numbers as serde_json writes them),
//! so the digest of a call's arguments can be taken over the bytes the client sent instead
//! of parsing them into a `Value` and writing them out again. Most clients send arguments
//! this way (a serializer's compact output of a small object); a 1 MiB argument is then
//! hashed where it lies.
//!
//! The check is conservative: it accepts only text whose canonical form is itself, and
//! anything else (whitespace, an escape, a fraction or exponent, an integer that might not
//! fit, keys out of order or repeated, a key serde_json reserves, invalid JSON, deep
//! nesting) takes the `Value` path.
//! `tests/tests/codec_properties.rs` checks both paths agree on arbitrary JSON.

use crate::protocol::json_str::first_escaped;

/// The deepest nesting the check follows (deeper text takes the `Value` path).
const MAX_DEPTH: usize = 64;

/// The longest integer accepted, in digits: every 18-digit integer fits both `i64` and
/// `u64`, so serde_json reads it exactly and writes it back unchanged.
const MAX_DIGITS: usize = 18;

/// The prefix of the object keys serde_json reserves for itself: a `Value` read from
/// `{"$serde_json::private::RawValue":"{\"a\":1}"}` is `{"a":1}`, so such text is not
/// the JSON of the value a parser makes of it (found by the `argument_digest` fuzz target).
const RESERVED_KEY_PREFIX: &[u8] = b"$serde_json::private::";

/// Whether `text` is exactly the canonical JSON of the value it holds.
pub(crate) fn is_canonical(text: &str) -> bool {
    let mut scan = Scan {
        bytes: text.as_bytes(),
        at: 0,
    };
    scan.value(0) && scan.at == scan.bytes.len()
}

struct Scan<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Scan<'a> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn eat(&mut self, byte: u8) -> bool {
        let ok = self.peek() == Some(byte);
        self.at += usize::from(ok);
        ok
    }

    fn literal(&mut self, word: &[u8]) -> bool {
        let ok = self.bytes[self.at..].starts_with(word);
        if ok {
            self.at += word.len();
        }
        ok
    }

    fn value(&mut self, depth: usize) -> bool {
        match self.peek() {
            Some(b'{') if depth < MAX_DEPTH => self.object(depth),
            Some(b'[') if depth < MAX_DEPTH => self.array(depth),
            Some(b'"') => self.string().is_some(),
            Some(b't') => self.literal(b"true"),
            Some(b'f') => self.literal(b"false"),
            Some(b'n') => self.literal(b"null"),
            Some(b'-' | b'0'..=b'9') => self.integer(),
            _ => false,
        }
    }

    fn object(&mut self, depth: usize) -> bool {
        self.at += 1;
        if self.eat(b'}') {
            return true;
        }
        let mut previous: Option<&[u8]> = None;
        loop {
            let Some(key) = self.string() else {
                return false;
            };
            // Strictly increasing: in order, and no key twice (a parser keeps the last).
            if previous.is_some_and(|p| p >= key) || key.starts_with(RESERVED_KEY_PREFIX) {
                return false;
            }
            previous = Some(key);
            if !self.eat(b':') || !self.value(depth + 1) {
                return false;
            }
            if self.eat(b'}') {
                return true;
            }
            if !self.eat(b',') {
                return false;
            }
        }
    }

    fn array(&mut self, depth: usize) -> bool {
        self.at += 1;
        if self.eat(b']') {
            return true;
        }
        loop {
            if !self.value(depth + 1) {
                return false;
            }
            if self.eat(b']') {
                return true;
            }
            if !self.eat(b',') {
                return false;
            }
        }
    }

    /// A string written as serde_json writes it: no escape at all, so no quote, backslash
    /// or control character inside (anything else, non-ASCII included, is written as is).
    /// Its content, for comparing keys.
    fn string(&mut self) -> Option<&'a [u8]> {
        if !self.eat(b'"') {
            return None;
        }
        let start = self.at;
        let len = first_escaped(&self.bytes[start..])?;
        self.at = start + len;
        self.eat(b'"').then(|| &self.bytes[start..start + len])
    }

    /// An integer as serde_json writes one: an optional minus, no leading zero, no `-0`
    /// (read as a float), at most [`MAX_DIGITS`] digits.
    fn integer(&mut self) -> bool {
        let negative = self.eat(b'-');
        let start = self.at;
        let digits = self.bytes[start..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        self.at = start + digits;
        let first = self.bytes.get(start).copied();
        let canonical = match (digits, first) {
            (0, _) => false,
            (1, Some(b'0')) => !negative,
            (_, Some(b'0')) => false,
            (n, _) => n <= MAX_DIGITS,
        };
        // A fraction or an exponent follows: not an integer, so not ours to vouch for.
        canonical && !matches!(self.peek(), Some(b'.' | b'e' | b'E'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_sorted_text_is_canonical() {
        for text in [
            "{}",
            "[]",
            "null",
            "true",
            "0",
            "-7",
            "123456789012345678",
            r#""""#,
            r#""été 🦀""#,
            r#"{"a":1,"b":[true,false,null,{"c":"x"}],"bb":{}}"#,
            r#"{"text":"hello"}"#,
        ] {
            assert!(is_canonical(text), "{text}");
        }
    }

    #[test]
    fn anything_serde_json_would_write_otherwise_is_not() {
        for text in [
            "",
            " {}",
            "{} ",
            r#"{"a": 1}"#,
            r#"{"b":1,"a":2}"#,
            r#"{"a":1,"a":2}"#,
            r#"{"a":1,}"#,
            "[1,]",
            "[1 ,2]",
            r#""a\"b""#,
            r#""a\/b""#,
            r#""\u0041""#,
            "\"tab\there\"",
            "-0",
            "01",
            "1.0",
            "1e3",
            "1E3",
            "1234567890123456789",
            "-",
            "tru",
            "nul",
            r#"{"a"}"#,
            r#"{"a":}"#,
            r#"{1:2}"#,
            "[",
            "{",
            r#""open"#,
            // Keys serde_json reads as an instruction, not as a key.
            r#"{"$serde_json::private::RawValue":{"a":[true,{}],"bb":{}}}"#,
            r#"{"$serde_json::private::Number":"1"}"#,
            r#"{"a":[{"$serde_json::private::RawValue":"x"}]}"#,
        ] {
            assert!(!is_canonical(text), "{text:?}");
        }
    }

    #[test]
    fn deep_nesting_takes_the_value_path() {
        let deep = "[".repeat(MAX_DEPTH + 1) + &"]".repeat(MAX_DEPTH + 1);
        assert!(!is_canonical(&deep));
        let shallow = "[".repeat(MAX_DEPTH) + &"]".repeat(MAX_DEPTH);
        assert!(is_canonical(&shallow));
    }
}
