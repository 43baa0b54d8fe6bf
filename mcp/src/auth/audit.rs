//! Audit events: every authorization decision, observable through a callback and as a
//! `tracing` event with stable fields (target `mcp::audit`).

use std::sync::{Arc, OnceLock};

use sha2::{Digest, Sha256};
use tracing::Level;

use super::Seam;
use crate::conn::{ConnId, Transport};

/// What happened after the decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AuditOutcome {
    /// The tool ran and succeeded, or the read was served.
    Served,
    /// The tool ran and reported an error.
    ToolError,
    /// Refused.
    Denied,
    /// A human approved and the tool ran.
    Approved,
    /// The approval question went out as an input-required result (2026-07-28); the
    /// decision is recorded again when the client answers.
    AwaitingApproval,
    /// The human was sent to a URL ([`Decision::Url`](super::Decision::Url)); the call is
    /// decided again when the client retries.
    AwaitingUrl,
    /// A human was asked and said no, did not answer, or could not be asked; the detail says
    /// which.
    NotApproved(String),
    /// The call was cancelled, timed out or failed before it finished.
    Aborted(String),
}

impl AuditOutcome {
    /// A stable name for logs.
    pub fn as_str(&self) -> &str {
        match self {
            AuditOutcome::Served => "served",
            AuditOutcome::ToolError => "tool_error",
            AuditOutcome::Denied => "denied",
            AuditOutcome::Approved => "approved",
            AuditOutcome::AwaitingApproval => "awaiting_approval",
            AuditOutcome::AwaitingUrl => "awaiting_url",
            AuditOutcome::NotApproved(_) => "not_approved",
            AuditOutcome::Aborted(_) => "aborted",
        }
    }
}

/// One authorization decision and its outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditEvent {
    /// Tool seam or read seam.
    pub seam: Seam,
    /// The tool or method.
    pub name: String,
    /// The connection.
    pub conn_id: ConnId,
    /// Its transport.
    pub transport: Transport,
    /// The verified subject, if any.
    pub subject: Option<String>,
    /// SHA-256 (hex) of the canonical JSON of the arguments, so calls can be correlated
    /// without logging their contents.
    pub argument_digest: String,
    /// `allow`, `deny`, `ask` or `url`.
    pub decision: &'static str,
    /// The deny reason, the ask prompt or what a URL step is for (never its URL), if any.
    pub detail: Option<String>,
    /// What happened.
    pub outcome: AuditOutcome,
}

/// Receives audit events.
pub type AuditSink = Arc<dyn Fn(&AuditEvent) + Send + Sync>;

/// An [`AuditEvent`] borrowed from the request it records: what the audit line is written
/// from, and made into an event only for an [`AuditSink`].
pub(crate) struct AuditRecord<'a> {
    pub(crate) seam: Seam,
    pub(crate) name: &'a str,
    pub(crate) conn_id: &'a ConnId,
    pub(crate) transport: Transport,
    pub(crate) subject: Option<&'a str>,
    pub(crate) argument_digest: &'a str,
    pub(crate) decision: &'static str,
    pub(crate) detail: Option<&'a str>,
    pub(crate) outcome: &'a AuditOutcome,
}

impl AuditRecord<'_> {
    /// The event a sink receives.
    fn to_event(&self) -> AuditEvent {
        AuditEvent {
            seam: self.seam,
            name: self.name.to_owned(),
            conn_id: self.conn_id.clone(),
            transport: self.transport,
            subject: self.subject.map(str::to_owned),
            argument_digest: self.argument_digest.to_owned(),
            decision: self.decision,
            detail: self.detail.map(str::to_owned),
            outcome: self.outcome.clone(),
        }
    }
}

/// SHA-256 hex of a JSON value in canonical form (object keys sorted, no whitespace).
pub(crate) fn digest_json(value: &serde_json::Value) -> String {
    // Serialized straight into the hash: no copy of the arguments is made.
    struct Hashing(Sha256);
    impl std::io::Write for Hashing {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.update(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut hashing = Hashing(Sha256::new());
    // Writing a Value into a hash cannot fail.
    let _ = serde_json::to_writer(&mut hashing, &Canonical(value));
    hex(&hashing.0.finalize())
}

/// SHA-256 hex of JSON text that is already canonical ([`is_canonical`]), taken over the
/// text itself: the digest [`digest_json`] gives the value it holds, without parsing it.
/// `None` when the text is not canonical (take the `Value` path).
///
/// [`is_canonical`]: super::canonical::is_canonical
pub(crate) fn digest_canonical_text(text: &str) -> Option<String> {
    super::canonical::is_canonical(text).then(|| hex(&Sha256::digest(text.as_bytes())))
}

/// A JSON value serialized with every object's keys in order, whatever order its map keeps:
/// serde_json's `preserve_order` feature (which any crate in a build can turn on for all of
/// it) keeps insertion order, and two clients sending the same arguments in another order
/// must get the same digest.
struct Canonical<'a>(&'a serde_json::Value);

impl serde::Serialize for Canonical<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        use serde_json::Value;
        match self.0 {
            Value::Object(map) => {
                let mut out = serializer.serialize_map(Some(map.len()))?;
                if map.keys().is_sorted() {
                    // The usual case (a sorted map): no copy of the entries.
                    for (key, value) in map {
                        out.serialize_entry(key, &Canonical(value))?;
                    }
                } else {
                    let mut entries: Vec<_> = map.iter().collect();
                    entries.sort_unstable_by_key(|(key, _)| key.as_str());
                    for (key, value) in entries {
                        out.serialize_entry(key, &Canonical(value))?;
                    }
                }
                out.end()
            }
            Value::Array(items) => {
                let mut out = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    out.serialize_element(&Canonical(item))?;
                }
                out.end()
            }
            scalar => scalar.serialize(serializer),
        }
    }
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    // Bytes first, one check at the end: pushing each digit as a `char` cost about twelve
    // instructions a digit, a fifth of an audit event's digest besides the hash. Each 32
    // bytes (a SHA-256 digest) are written on the stack and appended at once: a zeroed
    // vector (`vec![0; n]`, or a new one zeroed, which the compiler folds into the same)
    // is glibc's `calloc`, which skips the per-thread cache and takes the arena's lock,
    // contended by the other workers (3% of a guarded HTTP server's futex calls at 16
    // clients).
    let mut digits = Vec::with_capacity(bytes.len() * 2);
    for chunk in bytes.chunks(32) {
        let mut block = [0u8; 64];
        for (pair, b) in block.chunks_exact_mut(2).zip(chunk) {
            pair[0] = HEX[usize::from(b >> 4)];
            pair[1] = HEX[usize::from(b & 15)];
        }
        digits.extend_from_slice(&block[..chunk.len() * 2]);
    }
    String::from_utf8(digits).expect("hex digits are ASCII")
}

/// Whether an audit event at `level` would be logged (tracing's levels are per call site,
/// hence one check per level).
pub(crate) fn logged_at(level: Level) -> bool {
    match level {
        Level::ERROR => tracing::enabled!(target: "mcp::audit", Level::ERROR),
        Level::WARN => tracing::enabled!(target: "mcp::audit", Level::WARN),
        Level::INFO => tracing::enabled!(target: "mcp::audit", Level::INFO),
        Level::DEBUG => tracing::enabled!(target: "mcp::audit", Level::DEBUG),
        Level::TRACE => tracing::enabled!(target: "mcp::audit", Level::TRACE),
    }
}

/// The audit line, at a level chosen at run time ([`line_fields`] lists the same fields).
macro_rules! audit_line {
    ($level:expr, $event:expr) => {{
        let event = $event;
        tracing::event!(
            target: "mcp::audit",
            $level,
            seam = event.seam.as_str(),
            name = %event.name,
            conn_id = %event.conn_id,
            transport = event.transport.as_str(),
            subject = event.subject.unwrap_or(""),
            argument_digest = %event.argument_digest,
            decision = event.decision,
            detail = event.detail.unwrap_or(""),
            outcome = event.outcome.as_str(),
            "authorization"
        )
    }};
}

/// One field of the audit line, as [`audit_line!`] records it.
#[derive(Clone, Copy, Debug)]
pub(crate) enum LineValue<'a> {
    /// Recorded as a `&str`: quoted and escaped in the line.
    Text(&'a str),
    /// Recorded with `%` (its `Display`): written as it is.
    Shown(&'a str),
}

/// The audit line's message and fields in [`audit_line!`]'s order, for a [`LineWriter`]
/// that writes the line itself. Two lists of one line: `cli`'s test
/// `a_direct_audit_line_is_the_tracing_line` compares what each writes, byte for byte.
pub(crate) fn line_fields<'a>(
    event: &AuditRecord<'a>,
) -> (&'static str, [(&'static str, LineValue<'a>); 9]) {
    use LineValue::{Shown, Text};
    (
        "authorization",
        [
            ("seam", Text(event.seam.as_str())),
            ("name", Shown(event.name)),
            ("conn_id", Shown(event.conn_id.as_str())),
            ("transport", Text(event.transport.as_str())),
            ("subject", Text(event.subject.unwrap_or(""))),
            ("argument_digest", Shown(event.argument_digest)),
            ("decision", Text(event.decision)),
            ("detail", Text(event.detail.unwrap_or(""))),
            ("outcome", Text(event.outcome.as_str())),
        ],
    )
}

/// Writes audit lines into a log it owns without `tracing`'s event path (the dispatch,
/// the visit of every field, the formatter's writes through `dyn` writers). The generated
/// `main` installs one for its own log ([`write_lines_with`]; `cli::audit_line`).
pub(crate) trait LineWriter: Send + Sync {
    /// Writes `event`'s line at `level`, byte for byte as the log's subscriber writes the
    /// `tracing` event; `false` when it cannot vouch for that here (a span in scope,
    /// another subscriber, another layer that wants the event): the event is then emitted.
    fn write(&self, level: Level, event: &AuditRecord<'_>) -> bool;
}

static LINE_WRITER: OnceLock<Box<dyn LineWriter>> = OnceLock::new();

/// Sends audit lines to `writer` from now on (the first writer installed stays).
pub(crate) fn write_lines_with(writer: Box<dyn LineWriter>) {
    let _ = LINE_WRITER.set(writer);
}

/// `event` as a `tracing` event at `level`.
pub(crate) fn trace_line(level: Level, event: &AuditRecord<'_>) {
    match level {
        Level::ERROR => audit_line!(Level::ERROR, event),
        Level::WARN => audit_line!(Level::WARN, event),
        Level::INFO => audit_line!(Level::INFO, event),
        Level::DEBUG => audit_line!(Level::DEBUG, event),
        Level::TRACE => audit_line!(Level::TRACE, event),
    }
}

/// Records `event`: its line at `level` (when the log takes that level), and the event
/// for `sink`.
pub(crate) fn emit(sink: Option<&AuditSink>, level: Level, event: &AuditRecord<'_>) {
    let written = LINE_WRITER
        .get()
        .is_some_and(|writer| writer.write(level, event));
    if !written {
        trace_line(level, event);
    }
    if let Some(sink) = sink {
        sink(&event.to_event());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_is_of_the_canonical_json_whatever_the_key_order() {
        let expected = hex(&Sha256::digest(br#"{"a":"x","b":[1,{"c":null,"d":2.5}]}"#));
        for text in [
            r#"{"b":[1,{"d":2.5,"c":null}],"a":"x"}"#,
            r#"{ "a" : "x", "b" : [ 1, { "c": null, "d": 2.5 } ] }"#,
        ] {
            let value: serde_json::Value = serde_json::from_str(text).unwrap();
            assert_eq!(digest_json(&value), expected, "{text}");
        }
    }

    #[test]
    fn hex_is_two_lowercase_digits_a_byte() {
        assert_eq!(hex(&[0x00, 0x0f, 0xa5, 0xff, 0x10]), "000fa5ff10");
        assert_eq!(hex(&[]), "");
        // Past one 32-byte block, and ending inside the next.
        let bytes: Vec<u8> = (0..70u8).map(|b| b.wrapping_mul(37)).collect();
        let expected: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex(&bytes), expected);
    }

    /// Canonical text is digested as it is, and to what its value digests to.
    #[test]
    fn canonical_text_digests_as_its_value() {
        for text in [
            r#"{"a":"x","b":[1,{"c":null,"d":-2}]}"#,
            r#"{"text":"hello"}"#,
            "{}",
        ] {
            let value: serde_json::Value = serde_json::from_str(text).unwrap();
            assert_eq!(
                digest_canonical_text(text),
                Some(digest_json(&value)),
                "{text}"
            );
        }
        assert_eq!(digest_canonical_text(r#"{"b":1,"a":2}"#), None);
    }

    /// A map that keeps insertion order (serde_json's `preserve_order`, which any crate in
    /// the build can turn on) is still digested with its keys sorted, at every depth.
    #[test]
    fn the_digest_sorts_keys_a_map_keeps_in_insertion_order() {
        let expected = hex(&Sha256::digest(br#"{"a":"x","b":[1,{"c":null,"d":2.5}]}"#));
        let inner = serde_json::Map::from_iter([
            ("d".to_owned(), serde_json::json!(2.5)),
            ("c".to_owned(), serde_json::Value::Null),
        ]);
        let outer = serde_json::Map::from_iter([
            ("b".to_owned(), serde_json::json!([1, inner])),
            ("a".to_owned(), serde_json::json!("x")),
        ]);
        assert_eq!(digest_json(&serde_json::Value::Object(outer)), expected);
    }
}
