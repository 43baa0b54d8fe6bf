//! Property tests of the codecs (issue 21): the JSON-RPC envelope decoder agrees with a
//! reference decoder written over `serde_json::Value` on arbitrary frames, what the encoders
//! write decodes back to what was encoded, and a sealed `requestState` opens only what was
//! sealed, only for the call it was sealed for; the audit digest taken over canonical text
//! as sent is the digest of its value, and text that is not canonical is never taken for it.

use std::sync::Arc;

use mcp::fuzzing::{SealedStates, argument_digests, envelope_walk_agrees};
use mcp::protocol::jsonrpc::{
    DecodeError, ErrorObject, Incoming, Message, RequestId, decode, decode_owned, encode_error,
    encode_notification, encode_request, encode_result,
};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// What a frame is, as the reference decoder reads JSON-RPC 2.0.
#[derive(Debug, PartialEq)]
enum Reading {
    /// Not JSON: -32700.
    Parse,
    /// JSON, not a usable message: -32600, with the id when it could be read.
    Invalid(Option<RequestId>),
    Request(RequestId, String, Option<Value>),
    Notification(String, Option<Value>),
    Response(RequestId, Result<Value, i32>),
    Batch(Vec<Reading>),
}

/// The reference: the frame parsed into a `Value` first, then judged member by member.
/// `None` for valid JSON a `Value` cannot hold (a number beyond f64, which JSON's grammar
/// allows): the reference has no opinion there.
fn reference(frame: &[u8]) -> Option<Reading> {
    let value = match serde_json::from_slice::<Value>(frame) {
        Ok(value) => value,
        Err(_) if serde_json::from_slice::<serde::de::IgnoredAny>(frame).is_ok() => return None,
        Err(_) => return Some(Reading::Parse),
    };
    Some(match value {
        Value::Array(items) if items.is_empty() => Reading::Invalid(None),
        Value::Array(items) => Reading::Batch(items.iter().map(reference_message).collect()),
        other => reference_message(&other),
    })
}

fn reference_message(value: &Value) -> Reading {
    let Value::Object(m) = value else {
        return Reading::Invalid(None);
    };
    let id = match m.get("id") {
        None => None,
        Some(Value::Number(n)) => match n.as_i64() {
            Some(n) => Some(RequestId::Number(n)),
            None => return Reading::Invalid(None),
        },
        Some(Value::String(s)) => Some(RequestId::String(Arc::from(s.as_str()))),
        Some(_) => return Reading::Invalid(None),
    };
    if m.get("jsonrpc") != Some(&json!("2.0")) {
        return Reading::Invalid(id);
    }
    let params = match m.get("params") {
        None | Some(Value::Null) => None,
        Some(p @ (Value::Object(_) | Value::Array(_))) => Some(p.clone()),
        Some(_) => return Reading::Invalid(id),
    };
    match m.get("method") {
        Some(Value::String(method)) => {
            if m.contains_key("result") || m.contains_key("error") {
                return Reading::Invalid(id);
            }
            match id {
                Some(id) => Reading::Request(id, method.clone(), params),
                None => Reading::Notification(method.clone(), params),
            }
        }
        Some(_) => Reading::Invalid(id),
        None => match (id, m.get("result"), m.get("error")) {
            (Some(id), Some(result), None) => Reading::Response(id, Ok(result.clone())),
            (Some(id), None, Some(error)) => {
                let code =
                    serde_json::from_value::<ErrorObject>(error.clone()).map_or(-32603, |e| e.code);
                Reading::Response(id, Err(code))
            }
            (id, _, _) => Reading::Invalid(id),
        },
    }
}

/// What our decoder made of the frame, in the reference's terms.
fn ours(frame: &[u8]) -> Reading {
    reading_of_incoming(decode(frame))
}

fn reading_of_incoming(incoming: Incoming) -> Reading {
    match incoming {
        Incoming::Single(m) => reading_of(m),
        Incoming::Batch(items) => Reading::Batch(items.into_iter().map(reading_of).collect()),
    }
}

fn reading_of(m: Result<Message, DecodeError>) -> Reading {
    let raw = |r: &serde_json::value::RawValue| serde_json::from_str::<Value>(r.get()).unwrap();
    let params = |p: &mcp::protocol::Params| serde_json::from_str::<Value>(p.get()).unwrap();
    match m {
        Err(DecodeError::Parse(_)) => Reading::Parse,
        Err(DecodeError::Invalid { id, .. }) => Reading::Invalid(id),
        Ok(Message::Request(r)) => Reading::Request(r.id, r.method, r.params.as_ref().map(params)),
        Ok(Message::Notification(n)) => {
            Reading::Notification(n.method, n.params.as_ref().map(params))
        }
        Ok(Message::Response(r)) => Reading::Response(
            r.id,
            match r.outcome {
                Ok(result) => Ok(raw(&result)),
                Err(e) => Err(e.code),
            },
        ),
    }
}

/// Any JSON value, a few levels deep.
fn any_json() -> impl Strategy<Value = Value> {
    nested(
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            (-1e6f64..1e6).prop_map(Value::from),
            "[ -~]{0,8}|\\PC{0,4}".prop_map(Value::from),
        ],
        "[a-z]{1,6}",
    )
}

/// A value of what the digest's fast path takes as it is: integers of at most 17 digits,
/// strings needing no escape (non-ASCII included).
fn plain_json() -> impl Strategy<Value = Value> {
    nested(
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (-99_999_999_999_999_999i64..=99_999_999_999_999_999).prop_map(Value::from),
            "[a-zA-Z0-9 _.é🦀-]{0,8}".prop_map(Value::from),
        ],
        "[a-zé]{1,6}",
    )
}

/// Arrays and objects (keys matching `keys`) of `leaf` values, a few levels deep.
fn nested(
    leaf: impl Strategy<Value = Value> + 'static,
    keys: &'static str,
) -> impl Strategy<Value = Value> {
    leaf.prop_recursive(3, 24, 4, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(keys, inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// The text of a value as clients write it: compact, pretty, with the keys of every
/// object reversed, or with a character of the compact text escaped or spaced.
fn written(value: &Value) -> impl Strategy<Value = String> + use<> {
    fn reversed(v: &Value) -> String {
        match v {
            Value::Object(m) => {
                let members: Vec<String> = m
                    .iter()
                    .rev()
                    .map(|(k, v)| format!("{}:{}", Value::from(k.as_str()), reversed(v)))
                    .collect();
                format!("{{{}}}", members.join(","))
            }
            Value::Array(items) => {
                let items: Vec<String> = items.iter().map(reversed).collect();
                format!("[{}]", items.join(","))
            }
            other => other.to_string(),
        }
    }
    let compact = value.to_string();
    let pretty = serde_json::to_string_pretty(value).expect("a value serializes");
    let reordered = reversed(value);
    let len = compact.len();
    prop_oneof![
        Just(compact.clone()),
        Just(pretty),
        Just(reordered),
        (
            0..=len,
            prop::sample::select(vec![" ", "\\/", "0", "-", ".0", "\\u0041"])
        )
            .prop_map(move |(at, insert)| {
                let at = (0..=at)
                    .rev()
                    .find(|&i| compact.is_char_boundary(i))
                    .unwrap_or(0);
                format!("{}{}{}", &compact[..at], insert, &compact[at..])
            }),
    ]
}

/// A member's value: usually the right kind, sometimes anything.
fn member(right: BoxedStrategy<Value>) -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        3 => right.prop_map(Some),
        1 => any_json().prop_map(Some),
        1 => Just(None),
    ]
}

/// Objects shaped like JSON-RPC messages, right and wrong in every member.
fn envelope() -> impl Strategy<Value = Value> {
    let version = prop_oneof![9 => Just(json!("2.0")), 1 => Just(json!("1.0"))].boxed();
    let id = prop_oneof![
        any::<i64>().prop_map(Value::from),
        "[a-z0-9-]{0,6}".prop_map(Value::from)
    ]
    .boxed();
    let method = "[a-z/_]{1,16}".prop_map(Value::from).boxed();
    let structured = prop_oneof![
        prop::collection::btree_map("[a-z]{1,4}", any_json(), 0..3)
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        prop::collection::vec(any_json(), 0..3).prop_map(Value::Array),
    ]
    .boxed();
    let error = (any::<i32>(), "[ -~]{0,10}")
        .prop_map(|(code, message)| json!({"code": code, "message": message}))
        .boxed();
    (
        member(version),
        member(id),
        member(method),
        member(structured.clone()),
        prop::option::weighted(0.3, any_json()),
        prop::option::weighted(0.2, error),
        prop::option::of(("[a-z]{1,5}", any_json())),
    )
        .prop_map(|(jsonrpc, id, method, params, result, error, extra)| {
            let mut m = Map::new();
            for (key, value) in [
                ("jsonrpc", jsonrpc),
                ("id", id),
                ("method", method),
                ("params", params),
                ("result", result),
                ("error", error),
            ] {
                if let Some(value) = value {
                    m.insert(key.to_owned(), value);
                }
            }
            if let Some((key, value)) = extra {
                m.insert(key, value);
            }
            Value::Object(m)
        })
}

/// Frames: envelopes, batches of them, any JSON, and those cut short or with bytes added.
fn frame() -> impl Strategy<Value = Vec<u8>> {
    let text = prop_oneof![
        4 => envelope(),
        1 => prop::collection::vec(envelope(), 0..4).prop_map(Value::Array),
        1 => any_json(),
    ]
    .prop_map(|v| serde_json::to_vec(&v).unwrap());
    (
        text,
        prop_oneof![
            6 => Just(None),
            1 => any::<prop::sample::Index>().prop_map(|i| Some((i, Vec::new()))),
            1 => (any::<prop::sample::Index>(), prop::collection::vec(any::<u8>(), 1..4))
                .prop_map(|(i, bytes)| Some((i, bytes))),
        ],
        prop_oneof![Just(&b""[..]), Just(&b" \n"[..]), Just(&b"\t\r\n"[..])],
    )
        .prop_map(|(mut bytes, cut, pad)| {
            if let Some((at, insert)) = cut {
                let at = at.index(bytes.len() + 1);
                if insert.is_empty() {
                    bytes.truncate(at);
                } else {
                    bytes.splice(at..at, insert);
                }
            }
            bytes.extend_from_slice(pad);
            bytes
        })
}

/// An object written member by member, so keys may repeat and whitespace varies: `members`
/// as `(key, JSON text)`, a key written as it comes unless it is already quoted.
fn object_text(members: Vec<(String, String)>, space: &str) -> String {
    let members: Vec<String> = members
        .into_iter()
        .map(|(key, value)| {
            let key = if key.starts_with('"') {
                key
            } else {
                Value::from(key).to_string()
            };
            format!("{space}{key}{space}:{space}{value}{space}")
        })
        .collect();
    format!("{{{}}}", members.join(","))
}

/// One of `keys`, or a short key of no meaning.
fn key_among(keys: &'static [&'static str]) -> BoxedStrategy<String> {
    prop_oneof![
        5 => prop::sample::select(keys).prop_map(str::to_owned),
        1 => "[a-z]{1,3}",
    ]
    .boxed()
}

/// Frames whose params carry what the envelope's one-pass walk reads as their head (the
/// members the server reads, `_meta`'s reserved ones among them), any of them twice, and
/// keys written with escapes.
fn walked_frame() -> impl Strategy<Value = String> {
    let value = any_json().prop_map(|v| v.to_string()).boxed();
    let meta_key = key_among(&[
        "io.modelcontextprotocol/protocolVersion",
        "io.modelcontextprotocol/clientCapabilities",
        "io.modelcontextprotocol/logLevel",
        "progressToken",
        "traceparent",
    ]);
    let space = prop_oneof![Just(""), Just(" "), Just("\n\t")].boxed();
    let meta = (
        prop::collection::vec((meta_key, value.clone()), 0..4),
        space.clone(),
    )
        .prop_map(|(members, space)| object_text(members, space));
    let params_key = key_among(&["name", "uri", "arguments", "taskId", "requestState"]);
    let member = prop_oneof![
        4 => (params_key, value.clone()),
        1 => meta.prop_map(|m| ("_meta".to_owned(), m)),
    ];
    let params = prop_oneof![
        4 => (prop::collection::vec(member, 0..5), space.clone())
            .prop_map(|(members, space)| object_text(members, space)),
        1 => value.clone(),
    ];
    // `"jsonr\u0070c"`, already quoted, is an escaped key: the walk leaves the frame to the
    // derived reader.
    let envelope_key = key_among(&[
        "jsonrpc",
        "id",
        "method",
        "result",
        "error",
        r#""jsonr\u0070c""#,
    ]);
    (
        prop::collection::vec((envelope_key, value), 0..4),
        params,
        any::<prop::sample::Index>(),
        space,
    )
        .prop_map(|(mut members, params, at, space)| {
            members.insert(at.index(members.len() + 1), ("params".to_owned(), params));
            object_text(members, space)
        })
}

proptest! {
    #![proptest_config(ProptestConfig {
        // PROPTEST_CASES=100000 for a longer campaign outside CI.
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(2000),
        // Failures found are replayed first on every run (the file is committed).
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::Direct("tests/codec_properties.proptest-regressions"),
        )),
        ..ProptestConfig::default()
    })]

    #[test]
    fn the_decoder_agrees_with_the_reference(frame in frame()) {
        let expected = reference(&frame);
        prop_assume!(expected.is_some());
        prop_assert_eq!(Some(ours(&frame)), expected, "frame: {}", String::from_utf8_lossy(&frame));
    }

    /// The envelope's one-pass walk reads a frame as the derived reader does, and the
    /// params' head as their own reader does, or leaves the frame to them.
    #[test]
    fn the_one_pass_walk_reads_as_the_readers(frame in walked_frame(), other in frame()) {
        prop_assert_eq!(envelope_walk_agrees(&frame), Ok(()));
        if let Ok(text) = std::str::from_utf8(&other) {
            prop_assert_eq!(envelope_walk_agrees(text), Ok(()));
        }
    }

    /// A body the transport hands over (its params then share it) reads exactly as the
    /// same bytes lent to the decoder (its params then share a copy).
    #[test]
    fn a_frame_handed_over_decodes_as_one_lent(frame in frame()) {
        prop_assert_eq!(
            reading_of_incoming(decode_owned(frame.clone())),
            ours(&frame),
            "frame: {}",
            String::from_utf8_lossy(&frame)
        );
    }

    #[test]
    fn what_the_encoders_write_decodes_to_what_was_encoded(
        numeric in any::<i64>(),
        text_id in "\\PC{0,8}",
        use_text in any::<bool>(),
        method in "\\PC{1,12}",
        params in prop::collection::btree_map("\\PC{1,4}", any_json(), 0..3),
        result in any_json(),
        code in any::<i32>(),
        message in "\\PC{0,16}",
    ) {
        let id = if use_text { RequestId::String(Arc::from(text_id.as_str())) } else { RequestId::Number(numeric) };
        let params = Value::Object(params.into_iter().collect());

        let frame = encode_request(&id, &method, &params);
        prop_assert_eq!(ours(frame.as_bytes()), Reading::Request(id.clone(), method.clone(), Some(params.clone())));

        let frame = encode_notification(&method, Some(&params));
        prop_assert_eq!(ours(frame.as_bytes()), Reading::Notification(method.clone(), Some(params.clone())));
        let frame = encode_notification::<Value>(&method, None);
        prop_assert_eq!(ours(frame.as_bytes()), Reading::Notification(method.clone(), None));

        let raw = serde_json::value::to_raw_value(&result).unwrap();
        let frame = encode_result(&id, &raw);
        prop_assert_eq!(ours(frame.as_bytes()), Reading::Response(id.clone(), Ok(result.clone())));

        let error = ErrorObject::new(code, message.clone());
        let frame = encode_error(Some(&id), &error);
        let decoded: Value = serde_json::from_str(&frame).unwrap();
        prop_assert_eq!(&decoded["error"]["message"], &json!(message));
        prop_assert_eq!(ours(frame.as_bytes()), Reading::Response(id.clone(), Err(code)));
        // Without an id (it could not be read) the member is left out, and the frame is
        // still one the reference reads as a reply to no one.
        let frame = encode_error(None, &error);
        prop_assert!(!serde_json::from_str::<Value>(&frame).unwrap().as_object().unwrap().contains_key("id"));
        prop_assert_eq!(ours(frame.as_bytes()), Reading::Invalid(None));
    }

    #[test]
    fn a_sealed_state_opens_only_what_it_sealed_for_the_call_it_was_sealed_for(
        target in "[a-z_]{1,12}",
        digest in "[0-9a-f]{8}",
        principal in prop::option::of("[a-z]{1,8}"),
        answers in prop::collection::btree_map("[a-z]{1,6}", any_json(), 0..3),
        app_state in prop::option::of(any_json()),
        approved in any::<bool>(),
        flip in any::<prop::sample::Index>(),
        to in any::<u8>(),
        other in "[a-z_]{1,12}",
    ) {
        let sealer = SealedStates::new();
        let answers: mcp::protocol::Meta = answers.into_iter().collect();
        let state = sealer.seal(&target, &digest, principal.as_deref(), answers.clone(), app_state.clone(), approved);
        // A state opens once, for its own call: its tool, its arguments, its principal.
        if other != target {
            prop_assert!(sealer.open(&state, &other, &digest, principal.as_deref()).is_err());
        }
        prop_assert!(sealer.open(&state, &target, "0000", principal.as_deref()).is_err());
        let stranger = match &principal { Some(_) => None, None => Some("mallory") };
        prop_assert!(sealer.open(&state, &target, &digest, stranger).is_err());
        // Any one byte changed: refused, or (a base64 character that decodes to the same
        // bytes) exactly what was sealed; never anything else.
        // (Opened by a sealer with the same key and a nonce record of its own, so the
        // original's single use is left for below.)
        let mut changed = state.clone().into_bytes();
        let at = flip.index(changed.len());
        changed[at] = to;
        if let Ok(changed) = String::from_utf8(changed)
            && changed != state
            && let Ok(opened) = SealedStates::new().open(&changed, &target, &digest, principal.as_deref())
        {
            prop_assert_eq!(&opened.answers, &answers);
            prop_assert_eq!(&opened.app_state, &app_state);
            prop_assert_eq!(opened.approved, approved);
        }
        let opened = sealer.open(&state, &target, &digest, principal.as_deref());
        prop_assert!(opened.is_ok(), "{:?}", opened.err());
        let opened = opened.unwrap();
        prop_assert_eq!(&opened.answers, &answers);
        prop_assert_eq!(&opened.app_state, &app_state);
        prop_assert_eq!(opened.approved, approved);
        // And only once.
        prop_assert!(sealer.open(&state, &target, &digest, principal.as_deref()).is_err());
    }

    #[test]
    fn the_digest_over_canonical_text_is_the_digest_of_its_value(
        text in any_json().prop_flat_map(|v| written(&v)),
    ) {
        let (fast, parsed) = argument_digests(&text);
        if let Some(fast) = fast {
            prop_assert_eq!(fast, parsed, "text: {}", text);
        }
    }

    /// The compact text of a value made of what the fast path takes (integers that fit,
    /// strings without escapes) is taken as it is.
    #[test]
    fn compact_text_of_plain_values_takes_the_fast_path(value in plain_json()) {
        let text = value.to_string();
        let (fast, parsed) = argument_digests(&text);
        prop_assert_eq!(fast, Some(parsed), "text: {}", text);
    }
}
