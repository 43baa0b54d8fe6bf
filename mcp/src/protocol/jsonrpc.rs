//! The JSON-RPC 2.0 envelope: ids, messages, errors, and the decoder that turns a line of
//! bytes into a [`Message`] or a precise reason why it is not one.
//!
//! Params and results stay as [`RawValue`] until a handler knows what type it wants, so a
//! request is parsed once, straight into its typed params, with no intermediate `Value` tree.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

use super::inbound::HeadSpans;
use super::params::Frame;

mod walk;

pub use super::params::Params;
pub(crate) use walk::agrees as walk_agrees;

/// A JSON-RPC request id: an integer or a string, echoed back with its type preserved.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RequestId {
    /// An integer id.
    Number(i64),
    /// A string id.
    String(Arc<str>),
}

impl RequestId {
    /// Writes the id as JSON into `out`.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        match self {
            // serde_json writes integers without the formatting machinery; writing to a
            // Vec cannot fail.
            RequestId::Number(n) => {
                let _ = serde_json::to_writer(&mut *out, n);
            }
            RequestId::String(s) => {
                // serde_json escapes exactly as JSON requires; writing to a Vec cannot fail.
                let _ = serde_json::to_writer(&mut *out, &**s);
            }
        }
    }
}

impl RequestId {
    /// Appends the id as JSON to `out`.
    pub(crate) fn push_json(&self, out: &mut String) {
        match self {
            RequestId::Number(n) => {
                let mut digits = [0u8; 20];
                let mut at = digits.len();
                let mut v = n.unsigned_abs();
                loop {
                    at -= 1;
                    digits[at] = b'0' + (v % 10) as u8;
                    v /= 10;
                    if v == 0 {
                        break;
                    }
                }
                if *n < 0 {
                    out.push('-');
                }
                out.push_str(std::str::from_utf8(&digits[at..]).unwrap_or("0"));
            }
            RequestId::String(s) => {
                out.push_str(&serde_json::to_string(&**s).unwrap_or_else(|_| "null".into()));
            }
        }
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => write!(f, "{s:?}"),
        }
    }
}

impl From<i64> for RequestId {
    fn from(n: i64) -> Self {
        RequestId::Number(n)
    }
}

impl From<&str> for RequestId {
    fn from(s: &str) -> Self {
        RequestId::String(Arc::from(s))
    }
}

impl From<String> for RequestId {
    fn from(s: String) -> Self {
        RequestId::String(Arc::from(s))
    }
}

impl Serialize for RequestId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            RequestId::Number(n) => serializer.serialize_i64(*n),
            RequestId::String(s) => serializer.serialize_str(s),
        }
    }
}

impl<'de> Deserialize<'de> for RequestId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct IdVisitor;
        impl Visitor<'_> for IdVisitor {
            type Value = RequestId;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an integer or a string")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RequestId, E> {
                Ok(RequestId::Number(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RequestId, E> {
                i64::try_from(v)
                    .map(RequestId::Number)
                    .map_err(|_| E::custom("integer id out of range"))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RequestId, E> {
                Ok(RequestId::String(Arc::from(v)))
            }
        }
        deserializer.deserialize_any(IdVisitor)
    }
}

/// Standard and MCP-specific JSON-RPC error codes.
pub mod codes {
    /// Invalid JSON was received.
    pub const PARSE_ERROR: i32 = -32700;
    /// The JSON sent is not a valid request object.
    pub const INVALID_REQUEST: i32 = -32600;
    /// The method does not exist or is not offered by this server.
    pub const METHOD_NOT_FOUND: i32 = -32601;
    /// Invalid method parameters.
    pub const INVALID_PARAMS: i32 = -32602;
    /// Internal error.
    pub const INTERNAL_ERROR: i32 = -32603;
    /// Resource not found (handshake era only).
    pub const RESOURCE_NOT_FOUND: i32 = -32002;
    /// HTTP headers disagree with the body (2026-07-28).
    pub const HEADER_MISMATCH: i32 = -32020;
    /// The request needs a client capability it did not declare (2026-07-28).
    pub const MISSING_CLIENT_CAPABILITY: i32 = -32021;
    /// The requested protocol version is not supported (2026-07-28).
    pub const UNSUPPORTED_PROTOCOL_VERSION: i32 = -32022;
    /// The request cannot proceed until the URL-mode elicitations in `data.elicitations`
    /// are completed (2025-11-25; never sent on 2026-07-28).
    pub const URL_ELICITATION_REQUIRED: i32 = -32042;
    /// A read-seam authorization deny. Chosen outside the SDK-reserved -32000..-32002 so
    /// clients do not mistake it for a retryable condition.
    pub const AUTHORIZATION_REQUIRED: i32 = -32090;
    /// The server is near its memory limit and takes no new work for now; `data.retryAfterMs`
    /// says when to try again (see [`crate::pressure`]). Beside the built-in layers'
    /// `rate_limited` (-32029): both mean "later", not "never".
    pub const MEMORY_PRESSURE: i32 = -32030;
}

/// A JSON-RPC error object.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorObject {
    /// The error code (see [`codes`]).
    pub code: i32,
    /// A short, one-sentence description.
    pub message: Cow<'static, str>,
    /// Structured detail, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl ErrorObject {
    /// An error with a code and a message.
    pub fn new(code: i32, message: impl Into<Cow<'static, str>>) -> Self {
        ErrorObject {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// Attaches structured detail.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// -32700.
    pub fn parse_error(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(codes::PARSE_ERROR, message)
    }

    /// -32600.
    pub fn invalid_request(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(codes::INVALID_REQUEST, message)
    }

    /// -32601.
    pub fn method_not_found(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(codes::METHOD_NOT_FOUND, message)
    }

    /// -32602.
    pub fn invalid_params(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(codes::INVALID_PARAMS, message)
    }

    /// -32603.
    pub fn internal(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(codes::INTERNAL_ERROR, message)
    }
}

impl fmt::Display for ErrorObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

impl std::error::Error for ErrorObject {}

/// A request: it carries an id and expects exactly one response.
#[derive(Debug)]
pub struct Request {
    /// The id to echo in the response.
    pub id: RequestId,
    /// The method name.
    pub method: String,
    /// The raw params, parsed later into the method's own type.
    pub params: Option<Params>,
}

/// A notification: no id, never answered.
#[derive(Debug)]
pub struct Notification {
    /// The method name.
    pub method: String,
    /// The raw params.
    pub params: Option<Params>,
}

/// A response to a request the server sent (elicitation, sampling, roots).
#[derive(Debug)]
pub struct Response {
    /// The id of the server's request this answers.
    pub id: RequestId,
    /// The result, or the client's error.
    pub outcome: Result<Box<RawValue>, ErrorObject>,
}

/// One decoded JSON-RPC message.
#[derive(Debug)]
pub enum Message {
    /// A request.
    Request(Request),
    /// A notification.
    Notification(Notification),
    /// A response to one of the server's own requests.
    Response(Response),
}

impl Message {
    /// Builds a request from a method and JSON params; handy in tests and clients.
    pub fn request(id: impl Into<RequestId>, method: &str, params: Value) -> Message {
        Message::Request(Request {
            id: id.into(),
            method: method.to_owned(),
            params: Some(Params::from(to_raw(&params))),
        })
    }

    /// Builds a notification from a method and JSON params.
    pub fn notification(method: &str, params: Option<Value>) -> Message {
        Message::Notification(Notification {
            method: method.to_owned(),
            params: params.map(|p| Params::from(to_raw(&p))),
        })
    }
}

/// Serializes any value into a boxed [`RawValue`].
pub fn to_raw<T: Serialize + ?Sized>(value: &T) -> Box<RawValue> {
    // Serializing our own protocol types into JSON cannot fail: they hold no maps with
    // non-string keys and no non-finite floats produced by us.
    serde_json::value::to_raw_value(value)
        .unwrap_or_else(|_| RawValue::from_string("null".to_owned()).expect("null is valid JSON"))
}

/// Why a line of input is not a usable message. Each maps to the error the server answers.
#[derive(Debug, Clone, PartialEq)]
pub enum DecodeError {
    /// Not JSON at all: -32700, no id.
    Parse(String),
    /// JSON, but not a JSON-RPC message: -32600, with the id when it could be read.
    Invalid {
        /// The id, if the message had a readable one.
        id: Option<RequestId>,
        /// What is wrong.
        reason: String,
    },
}

impl DecodeError {
    /// The error object to answer with.
    pub fn to_error(&self) -> ErrorObject {
        match self {
            DecodeError::Parse(reason) => {
                ErrorObject::parse_error(format!("Parse error: {reason}"))
            }
            DecodeError::Invalid { reason, .. } => {
                ErrorObject::invalid_request(format!("Invalid request: {reason}"))
            }
        }
    }

    /// The id to answer with, if any.
    pub fn id(&self) -> Option<&RequestId> {
        match self {
            DecodeError::Parse(_) => None,
            DecodeError::Invalid { id, .. } => id.as_ref(),
        }
    }
}

/// The result of decoding one frame: one message, or a batch (a JSON array).
#[derive(Debug)]
pub enum Incoming {
    /// A single message.
    Single(Result<Message, DecodeError>),
    /// A batch; each element decoded on its own.
    Batch(Vec<Result<Message, DecodeError>>),
}

/// The envelope as it appears on the wire, before its shape is judged. Its members borrow
/// from the frame: only what a message keeps (the method, the params) is copied out. The
/// scalar members are read by visitors that accept any JSON value and only record whether
/// it has the right shape, so a wrong type is judged below (with the id, in a fixed order)
/// rather than failing the whole parse; params, result and error stay raw.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(default)]
    jsonrpc: Option<Version>,
    #[serde(default, deserialize_with = "present_id")]
    id: Option<IdMember>,
    #[serde(default, borrow, deserialize_with = "present_method")]
    method: Option<MethodMember<'a>>,
    #[serde(default, borrow, deserialize_with = "present_text")]
    params: Option<&'a str>,
    #[serde(default, borrow, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    error: Option<&'a RawValue>,
}

/// The envelope with every member raw: the slow reading of a frame the fast one failed on.
#[derive(Deserialize)]
struct RawEnvelope<'a> {
    #[serde(default, borrow)]
    jsonrpc: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    method: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    params: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    error: Option<&'a RawValue>,
}

impl<'a> RawEnvelope<'a> {
    /// Judges each scalar member as the fast visitors do.
    fn judged(self) -> Envelope<'a> {
        Envelope {
            jsonrpc: self.jsonrpc.map(|raw| match raw.get() {
                "\"2.0\"" => Version::V2,
                _ => Version::Other,
            }),
            id: self.id.map(|raw| {
                serde_json::from_str::<RequestId>(raw.get())
                    .map_or(IdMember::Invalid, IdMember::Valid)
            }),
            method: self.method.map(|raw| {
                serde_json::from_str::<String>(raw.get()).map_or(MethodMember::Invalid, |m| {
                    MethodMember::Valid(Cow::Owned(m))
                })
            }),
            params: self.params.map(RawValue::get),
            result: self.result,
            error: self.error,
        }
    }
}

/// Keeps an explicit `null` as `Some("null")` so "absent" and "null" stay distinct.
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// [`present`], as the member's text.
fn present_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de str>, D::Error> {
    <&RawValue>::deserialize(d).map(|raw| Some(raw.get()))
}

/// Keeps an explicit `null` id as present (and invalid), like any other non-id value.
fn present_id<'de, D: Deserializer<'de>>(d: D) -> Result<Option<IdMember>, D::Error> {
    IdMember::deserialize(d).map(Some)
}

/// Keeps an explicit `null` method as present (and invalid): `"method": null` is neither a
/// request nor a response (found by tests/tests/codec_properties.rs).
fn present_method<'de: 'a, 'a, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<MethodMember<'a>>, D::Error> {
    MethodMember::deserialize(d).map(Some)
}

/// Generates the `visit_*` methods of a visitor that accepts every JSON value: the kinds
/// listed in the macro call are handled by the visitor itself, the rest become `$other`
/// (arrays and objects are read through and ignored).
macro_rules! accept_any_other {
    ($other:expr) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok($other)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok($other)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($other)
        }
        fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<de::IgnoredAny>()?.is_some() {}
            Ok($other)
        }
        fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            while map
                .next_entry::<de::IgnoredAny, de::IgnoredAny>()?
                .is_some()
            {}
            Ok($other)
        }
    };
}

/// The `jsonrpc` member: right only when it is exactly the string `"2.0"`, written without
/// escapes.
enum Version {
    V2,
    Other,
}

impl<'de> Deserialize<'de> for Version {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Version;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Version, E> {
                Ok(if v == "2.0" {
                    Version::V2
                } else {
                    Version::Other
                })
            }
            // A string with escapes arrives here: not the literal "2.0".
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Version, E> {
                Ok(Version::Other)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Version, E> {
                Ok(Version::Other)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Version, E> {
                Ok(Version::Other)
            }
            accept_any_other!(Version::Other);
        }
        d.deserialize_any(V)
    }
}

/// The `id` member: an integer or a string, or something that is not an id.
enum IdMember {
    Valid(RequestId),
    Invalid,
}

impl<'de> Deserialize<'de> for IdMember {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = IdMember;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<IdMember, E> {
                Ok(IdMember::Valid(RequestId::Number(v)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<IdMember, E> {
                Ok(i64::try_from(v)
                    .map_or(IdMember::Invalid, |n| IdMember::Valid(RequestId::Number(n))))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<IdMember, E> {
                Ok(IdMember::Valid(RequestId::String(Arc::from(v))))
            }
            accept_any_other!(IdMember::Invalid);
        }
        d.deserialize_any(V)
    }
}

/// The `method` member: a string (borrowed from the frame unless it has escapes), or
/// something that is not a method name.
enum MethodMember<'a> {
    Valid(Cow<'a, str>),
    Invalid,
}

impl<'de: 'a, 'a> Deserialize<'de> for MethodMember<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = MethodMember<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(MethodMember::Valid(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(MethodMember::Valid(Cow::Owned(v.to_owned())))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(MethodMember::Invalid)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(MethodMember::Invalid)
            }
            accept_any_other!(MethodMember::Invalid);
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// Decodes one frame (a line on stdio, a body on HTTP). The params are copied out of it.
pub fn decode(bytes: &[u8]) -> Incoming {
    match frame_text(bytes) {
        Ok(text) => decode_in(&Source { text, kept: None }),
        Err(e) => Incoming::Single(Err(e)),
    }
}

/// Decodes one frame the caller hands over (a large HTTP body): params are shared with
/// the frame itself, which is not copied.
pub fn decode_owned(frame: Vec<u8>) -> Incoming {
    // Checked once here, the frame is then read as text: serde_json checks no string again.
    let text = match String::from_utf8(frame) {
        Ok(text) => Arc::new(text),
        Err(e) => return Incoming::Single(Err(not_utf8(e.utf8_error()))),
    };
    let trimmed = text.trim_matches(|c: char| c.is_ascii() && is_json_whitespace(&(c as u8)));
    let base = trimmed.as_ptr() as usize - text.as_ptr() as usize;
    decode_in(&Source {
        text: trimmed,
        kept: Some((Frame::Kept(Arc::clone(&text)), base)),
    })
}

/// The frame as text, without the whitespace around it.
fn frame_text(bytes: &[u8]) -> Result<&str, DecodeError> {
    // JSON is UTF-8. serde_json checks the strings it reads, but skips unknown members
    // without looking inside them, so check the whole frame once.
    std::str::from_utf8(trim_json_whitespace(bytes)).map_err(not_utf8)
}

fn not_utf8(e: std::str::Utf8Error) -> DecodeError {
    DecodeError::Parse(format!(
        "the message is not UTF-8 (invalid byte at offset {})",
        e.valid_up_to()
    ))
}

/// A frame being decoded: its text, and the frame the params read out of it share when
/// the decoder was handed it.
struct Source<'t> {
    /// The frame's text, trimmed.
    text: &'t str,
    /// The frame handed over, and where `text` starts in it.
    kept: Option<(Frame, usize)>,
}

impl Source<'_> {
    /// `raw`, read out of this frame, as params: sharing the frame kept, or a copy.
    fn params(&self, raw: &str) -> Params {
        match &self.kept {
            Some((frame, base)) => Params::within(frame, self.text, *base, raw),
            None => Params::copied(raw),
        }
    }
}

fn decode_in(source: &Source<'_>) -> Incoming {
    let text = source.text;
    if text.starts_with('[') {
        let items: Vec<&RawValue> = match serde_json::from_str(text) {
            Ok(items) => items,
            Err(e) => return Incoming::Single(Err(DecodeError::Parse(strip_position(&e)))),
        };
        if items.is_empty() {
            return Incoming::Single(Err(DecodeError::Invalid {
                id: None,
                reason: "empty batch".into(),
            }));
        }
        return Incoming::Batch(
            items
                .iter()
                .map(|raw| decode_object(raw.get(), source))
                .collect(),
        );
    }
    Incoming::Single(decode_object(text, source))
}

/// Whitespace as JSON defines it (RFC 8259: space, tab, line feed, carriage return).
/// `trim_ascii` would also drop form feeds, accepting a frame no JSON parser accepts.
pub(crate) fn is_json_whitespace(b: &u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// `bytes` without the JSON whitespace around it.
fn trim_json_whitespace(bytes: &[u8]) -> &[u8] {
    let start = bytes
        .iter()
        .position(|b| !is_json_whitespace(b))
        .unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|b| !is_json_whitespace(b))
        .map_or(start, |i| i + 1);
    &bytes[start..end]
}

/// serde_json appends " at line L column C" to its messages; a client (or a model) gains
/// nothing from a position inside a one-line frame, so it is dropped.
pub(crate) fn strip_position(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    match text.strip_suffix(&suffix) {
        Some(stripped) => stripped.to_owned(),
        None => text,
    }
}

/// The envelope as serde reads it: what [`walk::walk`] leaves to it.
fn read_envelope(text: &str) -> Result<Envelope<'_>, DecodeError> {
    match serde_json::from_str(text) {
        Ok(env) => Ok(env),
        // Rare: read again with every member raw. A frame can be valid JSON and still fail
        // above (a number beyond f64 as the id, say, which is an invalid id, not a parse
        // error), and this way every malformed frame is judged exactly as the raw reading
        // judges it.
        Err(_) => match serde_json::from_str::<RawEnvelope<'_>>(text) {
            Ok(raw) => Ok(raw.judged()),
            Err(e) if e.is_syntax() || e.is_eof() => Err(DecodeError::Parse(strip_position(&e))),
            Err(_) => Err(DecodeError::Invalid {
                id: None,
                reason: "a JSON-RPC message must be a JSON object".into(),
            }),
        },
    }
}

fn decode_object(text: &str, source: &Source<'_>) -> Result<Message, DecodeError> {
    // serde reads a struct from an array too, its members by position: `[null, 0]` would
    // be an envelope with id 0. Only an object is a message; anything else is invalid, or
    // a parse error when it is not JSON at all (`123 garbage`).
    if !text.starts_with('{') {
        return Err(match serde_json::from_str::<de::IgnoredAny>(text) {
            Err(e) if e.is_syntax() || e.is_eof() => DecodeError::Parse(strip_position(&e)),
            _ => DecodeError::Invalid {
                id: None,
                reason: "a JSON-RPC message must be a JSON object".into(),
            },
        });
    }
    let (env, head) = match walk::walk(text) {
        Some(walked) => walked,
        None => (read_envelope(text)?, None),
    };
    let id = match env.id {
        None => None,
        Some(IdMember::Valid(id)) => Some(id),
        Some(IdMember::Invalid) => {
            return Err(DecodeError::Invalid {
                id: None,
                reason: "id must be an integer or a string".into(),
            });
        }
    };
    let invalid = |reason: &str| DecodeError::Invalid {
        id: id.clone(),
        reason: reason.to_owned(),
    };
    match env.jsonrpc {
        Some(Version::V2) => {}
        Some(Version::Other) => return Err(invalid("jsonrpc must be \"2.0\"")),
        None => return Err(invalid("missing jsonrpc version")),
    }
    let params = match env.params {
        Some("null") => None,
        Some(raw) => {
            let first = raw.as_bytes().first().copied();
            if first != Some(b'{') && first != Some(b'[') {
                return Err(invalid("params must be an object or an array"));
            }
            let params = source.params(raw);
            // Placed in the params' own text: the same offsets in a copy of them.
            Some(match head.and_then(|head| HeadSpans::of(&head, raw)) {
                Some(spans) => params.with_head(spans),
                None => params,
            })
        }
        None => None,
    };
    if let Some(method) = env.method {
        let method = match method {
            MethodMember::Valid(m) => m.into_owned(),
            MethodMember::Invalid => return Err(invalid("method must be a string")),
        };
        if env.result.is_some() || env.error.is_some() {
            return Err(invalid("a request cannot carry a result or an error"));
        }
        return Ok(match id {
            Some(id) => Message::Request(Request { id, method, params }),
            None => Message::Notification(Notification { method, params }),
        });
    }
    match (id, env.result, env.error) {
        (Some(id), Some(result), None) => Ok(Message::Response(Response {
            id,
            outcome: Ok(result.to_owned()),
        })),
        (Some(id), None, Some(error)) => {
            let error = serde_json::from_str::<ErrorObject>(error.get()).unwrap_or_else(|_| {
                ErrorObject::new(codes::INTERNAL_ERROR, "malformed error object")
            });
            Ok(Message::Response(Response {
                id,
                outcome: Err(error),
            }))
        }
        (Some(id), None, None) => Err(DecodeError::Invalid {
            id: Some(id),
            reason: "Missing method".into(),
        }),
        (id, _, _) => Err(DecodeError::Invalid {
            id,
            reason: "not a request, notification or response".into(),
        }),
    }
}

/// Encodes a success response.
pub fn encode_result(id: &RequestId, result: &RawValue) -> String {
    let mut out = Vec::with_capacity(result.get().len() + 40);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    id.write_json(&mut out);
    out.extend_from_slice(br#","result":"#);
    out.extend_from_slice(result.get().as_bytes());
    out.push(b'}');
    // Built only from valid JSON pieces.
    String::from_utf8(out).unwrap_or_default()
}

/// Encodes an error response. Without an id (the request's id could not be read) the `id`
/// member is omitted, as the 2025-11-25 schema prescribes.
pub fn encode_error(id: Option<&RequestId>, error: &ErrorObject) -> String {
    let mut out = Vec::with_capacity(96);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","#);
    if let Some(id) = id {
        out.extend_from_slice(br#""id":"#);
        id.write_json(&mut out);
        out.push(b',');
    }
    out.extend_from_slice(br#""error":"#);
    let _ = serde_json::to_writer(&mut out, error);
    out.push(b'}');
    String::from_utf8(out).unwrap_or_default()
}

/// Encodes a notification.
pub fn encode_notification<P: Serialize + ?Sized>(method: &str, params: Option<&P>) -> String {
    #[derive(Serialize)]
    struct Out<'a, P: ?Sized> {
        jsonrpc: &'static str,
        method: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        params: Option<&'a P>,
    }
    serde_json::to_string(&Out {
        jsonrpc: "2.0",
        method,
        params,
    })
    .unwrap_or_default()
}

/// Encodes a request sent by the server (elicitation, sampling, roots).
pub fn encode_request<P: Serialize + ?Sized>(id: &RequestId, method: &str, params: &P) -> String {
    #[derive(Serialize)]
    struct Out<'a, P: ?Sized> {
        jsonrpc: &'static str,
        id: &'a RequestId,
        method: &'a str,
        params: &'a P,
    }
    serde_json::to_string(&Out {
        jsonrpc: "2.0",
        id,
        method,
        params,
    })
    .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn single(line: &str) -> Result<Message, DecodeError> {
        match decode(line.as_bytes()) {
            Incoming::Single(m) => m,
            Incoming::Batch(_) => panic!("unexpected batch"),
        }
    }

    #[test]
    fn a_frame_that_is_not_utf8_is_a_parse_error_even_inside_an_unknown_member() {
        let mut frame = br#"{"jsonrpc":"2.0","id":1,"method":"ping","x":"?"}"#.to_vec();
        let at = frame.iter().position(|b| *b == b'?').unwrap();
        frame[at] = 0xDD;
        match decode(&frame) {
            Incoming::Single(Err(DecodeError::Parse(reason))) => {
                assert!(reason.contains("not UTF-8"), "{reason}")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_frame_handed_over_reads_as_the_same_frame_lent() {
        let frame = b" \r\n[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"\xc3\xa9\"}},{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":[1]}]\n";
        for incoming in [decode(frame), decode_owned(frame.to_vec())] {
            let Incoming::Batch(items) = incoming else {
                panic!("not a batch");
            };
            let params: Vec<String> = items
                .into_iter()
                .map(|item| match item {
                    Ok(Message::Request(r)) => r.params.unwrap().get().to_owned(),
                    Ok(Message::Notification(n)) => n.params.unwrap().get().to_owned(),
                    other => panic!("{other:?}"),
                })
                .collect();
            assert_eq!(params, [r#"{"name":"é"}"#, "[1]"]);
        }
        let mut bad = br#"{"jsonrpc":"2.0","id":1,"method":"ping","x":"?"}"#.to_vec();
        bad[44] = 0xDD;
        let lent = format!("{:?}", decode(&bad));
        assert!(lent.contains("not UTF-8"), "{lent}");
        assert_eq!(format!("{:?}", decode_owned(bad)), lent);
    }

    #[test]
    fn only_an_object_is_a_message() {
        // An array inside a batch was read as an envelope, its members by position.
        let Incoming::Batch(items) = decode(br#"[["2.0", 5, "ping"], [null, 0]]"#) else {
            panic!("not a batch");
        };
        for item in items {
            assert_eq!(
                item.unwrap_err(),
                DecodeError::Invalid {
                    id: None,
                    reason: "a JSON-RPC message must be a JSON object".into()
                }
            );
        }
        // Not JSON at all is a parse error, whatever it starts with.
        for frame in ["123 garbage", "\"text\" 1", "true false", "nul"] {
            assert!(
                matches!(single(frame), Err(DecodeError::Parse(_))),
                "{frame}: {:?}",
                single(frame)
            );
        }
        // A null method is a wrong method, not an absent one.
        assert_eq!(
            single(r#"{"jsonrpc":"2.0","id":3,"method":null,"error":{"code":1,"message":"x"}}"#)
                .unwrap_err(),
            DecodeError::Invalid {
                id: Some(RequestId::Number(3)),
                reason: "method must be a string".into()
            }
        );
        for frame in ["123", "\"text\"", "true", "null"] {
            assert!(
                matches!(single(frame), Err(DecodeError::Invalid { id: None, .. })),
                "{frame}"
            );
        }
    }

    #[test]
    fn decodes_a_request_and_keeps_the_id_type() {
        let Ok(Message::Request(r)) = single(r#"{"jsonrpc":"2.0","id":"7","method":"ping"}"#)
        else {
            panic!("not a request");
        };
        assert_eq!(r.id, RequestId::from("7"));
        let Ok(Message::Request(r)) = single(r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#) else {
            panic!("not a request");
        };
        assert_eq!(r.id, RequestId::Number(7));
    }

    #[test]
    fn only_json_whitespace_surrounds_a_frame() {
        // Found by fuzzing: a form feed is ASCII whitespace but not JSON whitespace, so a
        // frame ending in one is not JSON, and the server must not answer it as a request.
        let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        assert!(single(&format!(" \t\r\n{ping} \t\r\n")).is_ok());
        for junk in ["\x0c", "\x0b"] {
            let err = single(&format!("{ping}{junk}")).unwrap_err();
            assert_eq!(err.to_error().code, codes::PARSE_ERROR, "{junk:?}");
            assert!(single(&format!("{junk}{ping}")).is_err(), "{junk:?}");
        }
    }

    #[test]
    fn invalid_json_is_a_parse_error_without_position() {
        let err = single("{not json").unwrap_err();
        let DecodeError::Parse(reason) = &err else {
            panic!("{err:?}")
        };
        assert!(!reason.contains("line"), "{reason}");
        assert_eq!(err.to_error().code, codes::PARSE_ERROR);
    }

    #[test]
    fn shapes_that_are_not_messages_are_invalid_requests() {
        for line in [
            "{}",
            "42",
            r#"{"jsonrpc":"1.0","id":1,"method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":7}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"x","params":3}"#,
        ] {
            let err = single(line).unwrap_err();
            assert_eq!(err.to_error().code, codes::INVALID_REQUEST, "{line}");
        }
    }

    #[test]
    fn members_of_the_wrong_kind_are_judged_in_order() {
        let cases = [
            // An id beyond f64 fails the fast reading; it is an invalid id, not a parse error.
            (
                r#"{"jsonrpc":"2.0","id":1e400,"method":"x"}"#,
                None,
                "id must be",
            ),
            (
                r#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"x"}"#,
                None,
                "id must be",
            ),
            (
                r#"{"jsonrpc":"2.0","id":{"a":[1]},"method":"x"}"#,
                None,
                "id must be",
            ),
            (
                r#"{"jsonrpc":"2.0","id":true,"method":"x"}"#,
                None,
                "id must be",
            ),
            (
                r#"{"jsonrpc":"2\u002e0","id":4,"method":"x"}"#,
                Some(4),
                "jsonrpc must be",
            ),
            (
                r#"{"jsonrpc":2,"id":4,"method":"x"}"#,
                Some(4),
                "jsonrpc must be",
            ),
            (
                r#"{"jsonrpc":1e400,"id":4,"method":"x"}"#,
                Some(4),
                "jsonrpc must be",
            ),
            (
                r#"{"jsonrpc":null,"id":4,"method":"x"}"#,
                Some(4),
                "missing jsonrpc",
            ),
            (
                r#"{"jsonrpc":"2.0","id":4,"method":["x"]}"#,
                Some(4),
                "method must be",
            ),
            (
                r#"{"jsonrpc":"2.0","id":4,"method":1e400}"#,
                Some(4),
                "method must be",
            ),
            (
                r#"{"jsonrpc":"2.0","id":4,"method":"x","result":{}}"#,
                Some(4),
                "cannot carry",
            ),
            (
                r#"{"jsonrpc":"2.0","id":4,"id":5,"method":"x"}"#,
                None,
                "must be a JSON object",
            ),
        ];
        for (line, id, reason) in cases {
            match single(line) {
                Err(DecodeError::Invalid { id: got, reason: r }) => {
                    assert_eq!(got, id.map(RequestId::Number), "{line}");
                    assert!(r.contains(reason), "{line}: {r}");
                }
                other => panic!("{line}: {other:?}"),
            }
        }
        let Ok(Message::Request(r)) =
            single(r#"{"jsonrpc":"2.0","id":"a\"b","method":"to\u006fls/list","x":[1e400]}"#)
        else {
            panic!("not a request");
        };
        assert_eq!(r.method, "tools/list");
        assert_eq!(r.id, RequestId::from("a\"b"));
        assert!(matches!(
            single(r#"{"jsonrpc":"2.0","method":null}"#),
            Err(DecodeError::Invalid { .. })
        ));
        assert!(matches!(
            single(r#"{"jsonrpc":"2.0","id":1,"method":"x""#),
            Err(DecodeError::Parse(_))
        ));
    }

    #[test]
    fn an_id_without_a_method_is_missing_method() {
        let err = single(r#"{"jsonrpc":"2.0","id":3}"#).unwrap_err();
        assert_eq!(err.id(), Some(&RequestId::Number(3)));
        assert!(err.to_error().message.contains("Missing method"));
    }

    #[test]
    fn responses_and_errors_decode() {
        let Ok(Message::Response(r)) = single(r#"{"jsonrpc":"2.0","id":"e1","result":{"a":1}}"#)
        else {
            panic!()
        };
        assert!(r.outcome.is_ok());
        let Ok(Message::Response(r)) =
            single(r#"{"jsonrpc":"2.0","id":"e1","error":{"code":-1,"message":"no"}}"#)
        else {
            panic!()
        };
        assert_eq!(r.outcome.unwrap_err().code, -1);
    }

    #[test]
    fn batches_decode_element_by_element() {
        let Incoming::Batch(items) = decode(br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}, 5]"#)
        else {
            panic!()
        };
        assert!(items[0].is_ok());
        assert!(items[1].is_err());
    }

    #[test]
    fn encoders_produce_compact_json() {
        let raw = to_raw(&serde_json::json!({"x": "a\nb"}));
        let line = encode_result(&RequestId::from("q\""), &raw);
        assert!(!line.contains('\n'));
        let v: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["id"], "q\"");
        let line = encode_error(None, &ErrorObject::parse_error("bad"));
        let v: Value = serde_json::from_str(&line).unwrap();
        assert!(v.get("id").is_none());
    }
}
