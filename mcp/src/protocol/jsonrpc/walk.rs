//! The envelope read in one pass, the params' head with it.
//!
//! serde's reader of the [`Envelope`] keeps the params as raw text, which it finds by
//! reading them through (validating every string and number); whoever needs the params'
//! members then reads them again, and a 2026-07-28 request's `_meta` a third time. Here the
//! envelope's members are walked by hand, each value read by serde_json where it starts
//! (a [`serde_json::StreamDeserializer`] says where it ends), and an object's params are
//! read as their [`ParamsHead`] in the same pass: the members everyone asks for, placed.
//!
//! The walk takes only what it can read exactly as the derived reader would: an object
//! whose keys have no escapes, each known key at most once. Anything else (a malformed
//! frame among them) is `None`, and the frame is read the usual way, so every error stays
//! judged as that reader judges it. Nesting is no difference: serde_json's depth limit
//! counts the levels read into structures, and both readers read at most the envelope,
//! the params and `_meta` that way (whatever lies deeper is read through, unlimited).

use serde::Deserialize;
use serde_json::value::RawValue;

use super::{Envelope, IdMember, MethodMember, Version};
use crate::protocol::inbound::ParamsHead;

/// The envelope of `text` and, when the params are an object, their head; `None` when the
/// frame must be read the usual way.
pub(super) fn walk(text: &str) -> Option<(Envelope<'_>, Option<ParamsHead<'_>>)> {
    let bytes = text.as_bytes();
    let mut at = skip_whitespace(bytes, 0);
    if bytes.get(at) != Some(&b'{') {
        return None;
    }
    at = skip_whitespace(bytes, at + 1);
    let mut envelope = Envelope {
        jsonrpc: None,
        id: None,
        method: None,
        params: None,
        result: None,
        error: None,
    };
    let mut head = None;
    // The known keys seen, so a second one sends the frame to the derived reader (which
    // refuses it).
    let mut seen = 0u8;
    if bytes.get(at) == Some(&b'}') {
        at += 1;
    } else {
        loop {
            let (key, after) = key(text, at)?;
            at = skip_whitespace(bytes, after);
            if bytes.get(at) != Some(&b':') {
                return None;
            }
            at = skip_whitespace(bytes, at + 1);
            let bit = match key {
                "jsonrpc" => 1,
                "id" => 2,
                "method" => 4,
                "params" => 8,
                "result" => 16,
                "error" => 32,
                _ => 0,
            };
            if seen & bit != 0 {
                return None;
            }
            seen |= bit;
            at = match key {
                "jsonrpc" => read_into(text, at, &mut envelope.jsonrpc)?,
                "id" => read_into(text, at, &mut envelope.id)?,
                "method" => read_into(text, at, &mut envelope.method)?,
                "params" => {
                    let end = params(text, at, &mut head)?;
                    envelope.params = Some(&text[at..end]);
                    end
                }
                "result" => read_into(text, at, &mut envelope.result)?,
                "error" => read_into(text, at, &mut envelope.error)?,
                _ => value::<serde::de::IgnoredAny>(text, at)?.1,
            };
            at = skip_whitespace(bytes, at);
            match bytes.get(at) {
                Some(b',') => at = skip_whitespace(bytes, at + 1),
                Some(b'}') => {
                    at += 1;
                    break;
                }
                _ => return None,
            }
        }
    }
    (skip_whitespace(bytes, at) == bytes.len()).then_some((envelope, head))
}

/// The params starting at `at`: an object read as its head (into `head`), anything else
/// read through. Where they end.
fn params<'a>(text: &'a str, at: usize, head: &mut Option<ParamsHead<'a>>) -> Option<usize> {
    if text.as_bytes().get(at) != Some(&b'{') {
        return Some(value::<&RawValue>(text, at)?.1);
    }
    let (read, end) = value::<ParamsHead<'a>>(text, at)?;
    *head = Some(read);
    Some(end)
}

/// The key at `at` (a string without escapes or control characters) and where it ends.
fn key(text: &str, at: usize) -> Option<(&str, usize)> {
    let bytes = text.as_bytes();
    if bytes.get(at) != Some(&b'"') {
        return None;
    }
    let start = at + 1;
    let length = bytes[start..]
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)?;
    let end = start + length;
    (bytes[end] == b'"').then(|| (&text[start..end], end + 1))
}

/// One `T` read starting at `at`, and where it ends.
fn value<'a, T: Deserialize<'a>>(text: &'a str, at: usize) -> Option<(T, usize)> {
    let mut values = serde_json::Deserializer::from_str(&text[at..]).into_iter::<T>();
    let read = values.next()?.ok()?;
    Some((read, at + values.byte_offset()))
}

/// Reads the member starting at `at` as the envelope's reader does (`Option<T>`, an
/// explicit `null` kept as a value where `T` takes one) into `slot`; where it ends.
fn read_into<'a, T: EnvelopeMember<'a>>(
    text: &'a str,
    at: usize,
    slot: &mut Option<T>,
) -> Option<usize> {
    let (read, end) = value::<T::Read>(text, at)?;
    *slot = T::kept(read);
    Some(end)
}

/// How the envelope's reader keeps a member (see `present`, `present_id`,
/// `present_method` and `jsonrpc`'s plain `Option`).
trait EnvelopeMember<'a>: Sized {
    /// What is read.
    type Read: Deserialize<'a>;
    /// What the envelope holds of it.
    fn kept(read: Self::Read) -> Option<Self>;
}

impl<'a> EnvelopeMember<'a> for Version {
    // `null` is no version, as for the derived `Option<Version>`.
    type Read = Option<Version>;
    fn kept(read: Option<Version>) -> Option<Version> {
        read
    }
}

impl<'a> EnvelopeMember<'a> for IdMember {
    type Read = IdMember;
    fn kept(read: IdMember) -> Option<IdMember> {
        Some(read)
    }
}

impl<'a> EnvelopeMember<'a> for MethodMember<'a> {
    type Read = MethodMember<'a>;
    fn kept(read: MethodMember<'a>) -> Option<MethodMember<'a>> {
        Some(read)
    }
}

impl<'a> EnvelopeMember<'a> for &'a RawValue {
    type Read = &'a RawValue;
    fn kept(read: &'a RawValue) -> Option<&'a RawValue> {
        Some(read)
    }
}

/// Where the JSON whitespace starting at `at` ends.
fn skip_whitespace(bytes: &[u8], mut at: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = bytes.get(at) {
        at += 1;
    }
    at
}

/// Checks the walk against the envelope's derived reader on `text`: where the walk reads a
/// frame, the reader must read the same envelope, and the params' head must be the one
/// [`ParamsHead::parse`] reads from them. For the fuzz targets and the property tests.
pub(crate) fn agrees(text: &str) -> Result<(), String> {
    let Some((walked, head)) = walk(text) else {
        return Ok(());
    };
    let read = super::read_envelope(text)
        .map_err(|e| format!("the walk read a frame the reader refuses ({e:?}): {text}"))?;
    let (walked_text, read_text) = (describe(&walked), describe(&read));
    if walked_text != read_text {
        return Err(format!("walked {walked_text}, read {read_text}: {text}"));
    }
    let Some(params) = walked.params.filter(|p| p.starts_with('{')) else {
        return match head {
            None => Ok(()),
            Some(_) => Err(format!("a head for params that are no object: {text}")),
        };
    };
    let place = |head: &ParamsHead<'_>| crate::protocol::inbound::HeadSpans::of(head, params);
    let parsed = ParamsHead::parse(Some(params))
        .map_err(|e| format!("the walk read params their reader refuses ({e:?}): {text}"))?;
    match head.as_ref().map(place) {
        Some(spans) if spans == place(&parsed) => Ok(()),
        Some(_) => Err(format!(
            "the walk's head differs from the params' own: {text}"
        )),
        None => Err(format!(
            "the walk read object params without a head: {text}"
        )),
    }
}

/// An envelope as text, member by member, for [`agrees`].
fn describe(envelope: &Envelope<'_>) -> String {
    let jsonrpc = match envelope.jsonrpc {
        None => "none",
        Some(Version::V2) => "2.0",
        Some(Version::Other) => "other",
    };
    let id = match &envelope.id {
        None => "none".to_owned(),
        Some(IdMember::Valid(id)) => format!("{id:?}"),
        Some(IdMember::Invalid) => "invalid".to_owned(),
    };
    let method = match &envelope.method {
        None => "none".to_owned(),
        Some(MethodMember::Valid(m)) => format!("{m:?}"),
        Some(MethodMember::Invalid) => "invalid".to_owned(),
    };
    format!(
        "jsonrpc {jsonrpc}, id {id}, method {method}, params {:?}, result {:?}, error {:?}",
        envelope.params,
        envelope.result.map(RawValue::get),
        envelope.error.map(RawValue::get),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Frames the walk must read as the derived reader does, or leave to it.
    const FRAMES: &[&str] = &[
        r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}"#,
        r#" { "jsonrpc" : "2.0" , "id" : "a" , "method" : "x" , "params" : { } } "#,
        "{\n\t\"method\":\"ping\",\r\n\"jsonrpc\":\"2.0\",\"id\":-1.5e3}\n",
        r#"{"params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":3}},"method":"tools/call","id":1,"jsonrpc":"2.0"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"m","params":[1,2,{"a":[]}]}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"m","params":null}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"m","params":"text"}"#,
        r#"{"jsonrpc":"2.0","id":null,"method":null,"params":{"name":null,"uri":"u"}}"#,
        r#"{"jsonrpc":null,"id":true,"method":7}"#,
        r#"{"jsonrpc":"2.0","id":1,"result":{"x":1},"error":null,"extra":[1,{"y":"\u00e9"}]}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"name":"a\"b\\c","arguments":"\ud83d\ude00"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":{"progressToken":1,"progressToken":2}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"_meta":"no object"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"name":"a","name":"b"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"m"}"#,
        r#"{"jsonrpc":"2.0","id":1,"unknown":1,"unknown":2,"method":"m"}"#,
        r#"{"jsonr\u0070c":"2.0","id":1,"method":"m"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"m"} trailing"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"m",}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"m""#,
        r#"{"jsonrpc":"2.0","params":"#,
        r#"{"jsonrpc":"2.0","params" "#,
        r#"{"jsonrpc""#,
        r#"{"#,
        r#"{"jsonrpc":"2.0","id":12345678901234567890123,"method":"m"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"arguments":{"n":1e999}}}"#,
        r#"{}"#,
        r#"[]"#,
        r#""#,
        "\u{feff}{}",
        r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"arguments":01}}"#,
    ];

    #[test]
    fn the_walk_reads_what_the_reader_reads() {
        for frame in FRAMES {
            agrees(frame).unwrap();
        }
    }

    #[test]
    fn the_walk_reads_the_common_frames_itself() {
        for frame in &FRAMES[..4] {
            assert!(walk(frame).is_some(), "{frame}");
        }
        let (_, head) = walk(FRAMES[3]).unwrap();
        let head = head.expect("object params have a head");
        let (envelope, _) = walk(FRAMES[3]).unwrap();
        let params = envelope.params.unwrap();
        let spans = crate::protocol::inbound::HeadSpans::of(&head, params).unwrap();
        assert_eq!(
            spans.call_members(params).unwrap().progress_token,
            Some("3")
        );
    }

    #[test]
    fn what_the_walk_cannot_read_exactly_is_left_to_the_reader() {
        for frame in [
            // A known key twice, an escaped key, a key with a control character.
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"m"}"#,
            r#"{"jsonr\u0070c":"2.0","id":1,"method":"m"}"#,
            "{\"jsonrpc\u{1}\":\"2.0\"}",
            // Params whose head the reader refuses.
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"name":"a","name":"b"}}"#,
            // Not an object, or not JSON.
            r#"[{"jsonrpc":"2.0"}]"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"m"} trailing"#,
        ] {
            assert!(walk(frame).is_none(), "{frame}");
        }
    }

    #[test]
    fn deep_params_are_read_alike() {
        let nested = |levels: usize| {
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"m","params":{{"a":{}1{}}}}}"#,
                "[".repeat(levels),
                "]".repeat(levels)
            )
        };
        for levels in [1, 126, 127, 128, 1000] {
            let frame = nested(levels);
            agrees(&frame).unwrap();
            assert!(walk(&frame).is_some(), "{levels} levels");
        }
    }
}
