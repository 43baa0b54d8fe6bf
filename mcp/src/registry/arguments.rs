//! Tool arguments: kept raw until the tool decodes them into its own type, and decode errors
//! rewritten for a model to act on: which argument, what type was expected, what arrived.
//! Never serde's "at line 1 column 2".
//!
//! When the input schema says `additionalProperties: false` (the default for typed tools),
//! arguments it does not list are refused with an error naming them and the accepted ones;
//! the check runs inside the one decoding pass ([`super::unknown`]).

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::unknown::deserialize_checked;
use crate::protocol::tool_schema::{HeaderParam, header_params};
use crate::protocol::{Params, ToolSchema};

/// The raw arguments of one tool call, with the tool's input schema for error messages.
#[derive(Clone, Debug)]
pub struct ToolArgs {
    /// The JSON text of the arguments, as the client sent it.
    raw: Option<Params>,
    schema: ArgsSchema,
    /// The arguments already decoded into the handler's type, when the server decoded them
    /// before asking the authorizer (so the handler does not decode them again).
    decoded: Option<Decoded>,
}

impl ToolArgs {
    /// Wraps raw arguments (absent arguments decode as `{}`), with the input schema that
    /// explains a failure to decode them.
    pub fn new(raw: Option<Box<RawValue>>, schema: impl Into<ToolSchema>) -> Self {
        Self::from_json_text(raw.map(|r| Params::from(&*r)), schema.into())
    }

    /// Wraps raw arguments already shared with the authorization seam.
    pub fn shared(raw: Option<Arc<RawValue>>, schema: impl Into<ToolSchema>) -> Self {
        Self::from_json_text(raw.map(|r| Params::from(&*r)), schema.into())
    }

    /// Wraps the JSON text of arguments taken from a valid JSON document.
    fn from_json_text(raw: Option<Params>, schema: ToolSchema) -> Self {
        Self::with_schema(raw, ArgsSchema::new(schema))
    }

    /// Wraps the JSON text of a call's arguments (shared with the request's params, not
    /// copied), with the tool's schema as worked out at registration.
    pub(crate) fn with_schema(raw: Option<Params>, schema: ArgsSchema) -> Self {
        ToolArgs {
            raw,
            schema,
            decoded: None,
        }
    }

    /// Carries the value the server already decoded for this call.
    pub(crate) fn with_decoded(mut self, decoded: Option<Decoded>) -> Self {
        self.decoded = decoded;
        self
    }

    /// The raw JSON text of the arguments (`{}` when the client sent none).
    pub fn raw_json(&self) -> &str {
        json_text(self.raw.as_ref().map(Params::get))
    }

    /// The arguments as a JSON value.
    pub fn to_value(&self) -> Value {
        serde_json::from_str(self.raw_json()).unwrap_or(Value::Null)
    }

    /// Decodes the arguments into `T`. On failure the error names the argument, the
    /// expected type (from the tool's input schema) and what the client sent. When the
    /// schema says `additionalProperties: false`, arguments it does not list are refused.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, ArgumentError> {
        self.schema.parse(self.raw_json())
    }

    /// Like [`ToolArgs::parse`], taking the arguments: when the server already decoded them
    /// into `T` for this call (a typed tool behind an authorizer), that value is returned
    /// without decoding again.
    pub fn decode<T: DeserializeOwned + Send + Sync + 'static>(
        mut self,
    ) -> Result<T, ArgumentError> {
        if let Some(value) = self.decoded.take().and_then(Decoded::take) {
            return Ok(value);
        }
        self.parse()
    }
}

/// Arguments decoded into a tool's own type, shared between the authorizer (which may read
/// them) and the handler (which takes them when nobody else holds them any more).
#[derive(Clone)]
pub(crate) struct Decoded(Arc<dyn Any + Send + Sync>);

impl Decoded {
    pub(crate) fn new<T: Send + Sync + 'static>(value: T) -> Self {
        Decoded(Arc::new(value))
    }

    /// The value, if it is a `T`.
    pub(crate) fn get<T: Send + Sync + 'static>(&self) -> Option<Arc<T>> {
        Arc::clone(&self.0).downcast().ok()
    }

    /// The value itself, if it is a `T` and no policy kept a share of it.
    fn take<T: Send + Sync + 'static>(self) -> Option<T> {
        Arc::try_unwrap(self.0.downcast().ok()?).ok()
    }
}

impl fmt::Debug for Decoded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Decoded(..)")
    }
}

/// The text to decode: absent arguments and `null` mean none (`{}`).
pub(crate) fn json_text(raw: Option<&str>) -> &str {
    match raw {
        Some(raw) if raw != "null" => raw,
        _ => "{}",
    }
}

/// A tool's input schema with what decoding needs from it, worked out once: the schema
/// itself (to explain a failure) and, when it says `additionalProperties: false`, the names
/// of the arguments it accepts (checked on every call). Behind one `Arc`: every call's
/// arguments carry it, and a clone is then one reference count, not three.
#[derive(Clone, Debug)]
pub(crate) struct ArgsSchema(Arc<SchemaParts>);

#[derive(Debug)]
struct SchemaParts {
    schema: ToolSchema,
    accepted: Option<Arc<[Box<str>]>>,
    /// The arguments mirrored into `Mcp-Param-*` headers (`None`: none, the common case).
    mirrored: Option<Arc<[HeaderParam]>>,
}

impl ArgsSchema {
    /// From a schema kept as text (read once, for what decoding and the headers need).
    pub(crate) fn new(schema: ToolSchema) -> Self {
        let value = schema.to_value();
        Self::with_value(schema, &value)
    }

    /// From a schema as a value, which is then kept as text.
    pub(crate) fn from_value(schema: &Value) -> Self {
        Self::with_value(ToolSchema::new(schema), schema)
    }

    fn with_value(schema: ToolSchema, value: &Value) -> Self {
        let mirrored = header_params(value);
        ArgsSchema(Arc::new(SchemaParts {
            schema,
            accepted: Self::accepted(value),
            mirrored: (!mirrored.is_empty()).then(|| mirrored.into()),
        }))
    }

    /// The arguments the schema mirrors into headers.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn mirrored(&self) -> &[HeaderParam] {
        self.0.mirrored.as_deref().unwrap_or_default()
    }

    fn accepted(schema: &Value) -> Option<Arc<[Box<str>]>> {
        (schema.get("additionalProperties") == Some(&Value::Bool(false))).then(|| {
            schema
                .get("properties")
                .and_then(Value::as_object)
                .map(|p| p.keys().map(|k| Box::from(k.as_str())).collect())
                .unwrap_or_default()
        })
    }

    /// The schema generated for `A` ([`input_schema_for`](crate::schema::input_schema_for)),
    /// worked out once per type: every tool taking `A` shares it (a server registering
    /// thousands of tools of a few argument types keeps a few schemas).
    pub(crate) fn of_type<A: schemars::JsonSchema + 'static>() -> Self {
        static BY_TYPE: OnceLock<Mutex<HashMap<TypeId, ArgsSchema>>> = OnceLock::new();
        let by_type = BY_TYPE.get_or_init(Mutex::default);
        if let Some(schema) = by_type.lock().get(&TypeId::of::<A>()) {
            return schema.clone();
        }
        // Generated outside the lock; two threads racing for a new type both generate it
        // and the first stored is kept.
        let schema = ArgsSchema::from_value(&crate::schema::input_schema_for::<A>());
        by_type
            .lock()
            .entry(TypeId::of::<A>())
            .or_insert(schema)
            .clone()
    }

    /// The schema as given, as text.
    pub(crate) fn schema(&self) -> &ToolSchema {
        &self.0.schema
    }

    /// Decodes the JSON text of a call's arguments into `T`, explaining any failure from
    /// the schema, and refusing arguments it does not accept.
    pub(crate) fn parse<T: DeserializeOwned>(&self, text: &str) -> Result<T, ArgumentError> {
        parse_text(text, &self.0.schema, self.0.accepted.as_deref())
    }
}

/// Decodes the JSON text of a call's arguments into `T`, explaining any failure from the
/// input schema; with `accepted`, refusing every argument not named there.
pub(crate) fn parse_text<T: DeserializeOwned>(
    text: &str,
    schema: &ToolSchema,
    accepted: Option<&[Box<str>]>,
) -> Result<T, ArgumentError> {
    if !text.starts_with('{') {
        return Err(ArgumentError {
            message: format!(
                "The arguments must be a JSON object of named arguments, but got {}.",
                describe_value(&serde_json::from_str(text).unwrap_or(Value::Null))
            ),
        });
    }
    // The common case pays for no path tracking: only arguments that fail are decoded
    // again, tracking where, to explain the failure.
    if let Some(accepted) = accepted {
        let mut unknown = Vec::new();
        let mut de = serde_json::Deserializer::from_str(text);
        match deserialize_checked::<_, T>(&mut de, accepted, &mut unknown)
            .and_then(|v| de.end().map(|()| v))
        {
            Ok(v) if unknown.is_empty() => return Ok(v),
            Ok(_) => {
                let accepted = accepted.iter().map(|n| &**n).collect();
                return Err(ArgumentError {
                    message: unknown_message("", &unknown, accepted),
                });
            }
            Err(_) => {}
        }
    } else if let Ok(v) = serde_json::from_str::<T>(text) {
        return Ok(v);
    }
    let mut de = serde_json::Deserializer::from_str(text);
    match serde_path_to_error::deserialize::<_, T>(&mut de) {
        Ok(v) => Ok(v),
        Err(e) => {
            let path = e.path().to_string();
            let inner = e.into_inner();
            let args = serde_json::from_str(text).unwrap_or(Value::Null);
            Err(ArgumentError {
                message: explain(&path, &inner, &args, &schema.to_value()),
            })
        }
    }
}

fn accepted_names(properties: Option<&Map<String, Value>>) -> Vec<&str> {
    properties
        .map(|p| p.keys().map(String::as_str).collect())
        .unwrap_or_default()
}

/// "Unknown argument `x`; remove it. Accepted: `a`, `b`." for names under `parent` (empty at
/// the top level). At most a few names are repeated back, each shortened.
fn unknown_message(parent: &str, unknown: &[String], accepted: Vec<&str>) -> String {
    const SHOWN: usize = 8;
    let quote = |names: Vec<String>| {
        names
            .iter()
            .map(|n| format!("`{}`", truncate(n)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let shown = unknown.iter().take(SHOWN).map(|n| join_path(parent, n));
    let mut text = if unknown.len() == 1 {
        format!("Unknown argument {}; remove it.", quote(shown.collect()))
    } else {
        let mut names = quote(shown.collect());
        if unknown.len() > SHOWN {
            names.push_str(&format!(" and {} more", unknown.len() - SHOWN));
        }
        format!("Unknown arguments {names}; remove them.")
    };
    if accepted.is_empty() {
        text.push_str(if parent.is_empty() {
            " This tool takes no arguments."
        } else {
            " Nothing else is accepted there."
        });
    } else {
        let accepted = accepted.into_iter().map(str::to_owned).collect();
        text.push_str(&format!(" Accepted: {}.", quote(accepted)));
    }
    text
}

/// Arguments that do not fit the tool's parameters, explained in words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgumentError {
    message: String,
}

impl ArgumentError {
    /// An error with a custom explanation.
    pub fn new(message: impl Into<String>) -> Self {
        ArgumentError {
            message: message.into(),
        }
    }

    /// The explanation.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ArgumentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ArgumentError {}

fn explain(path: &str, err: &serde_json::Error, args: &Value, schema: &Value) -> String {
    let serde_msg = crate::protocol::jsonrpc::strip_position(err);
    if let Some(field) = between(&serde_msg, "missing field `", "`") {
        let full = join_path(path, field);
        let expected = expected_at(schema, &full)
            .map(|e| format!(" ({e})"))
            .unwrap_or_default();
        return format!(
            "Missing required argument `{full}`{expected}. Call the tool again with `{full}` set."
        );
    }
    if let Some(field) = between(&serde_msg, "unknown field `", "`") {
        // A type that denies unknown fields itself: the same message as the schema's check.
        // The path ends at the unknown member itself.
        let parent = match path.strip_suffix(field) {
            Some("" | ".") => "",
            Some(p) if p.ends_with('.') => &p[..p.len() - 1],
            _ if path == "." => "",
            _ => path,
        };
        let listed = node_at(schema, parent)
            .and_then(|n| n.get("properties"))
            .and_then(Value::as_object);
        let accepted = match listed {
            Some(_) => accepted_names(listed),
            None => serde_msg
                .split_once(", expected ")
                .map(|(_, rest)| rest.split('`').skip(1).step_by(2).collect())
                .unwrap_or_default(),
        };
        return unknown_message(parent, &[field.to_owned()], accepted);
    }
    let shown_path = if path.is_empty() || path == "." {
        ""
    } else {
        path
    };
    let got = lookup(args, shown_path)
        .map(describe_value)
        .unwrap_or_else(|| "nothing".to_owned());
    let expected = expected_at(schema, shown_path).or_else(|| {
        serde_msg
            .rsplit_once(", expected ")
            .map(|(_, exp)| plain_expected(exp))
    });
    let subject = if shown_path.is_empty() {
        "The arguments".to_owned()
    } else {
        format!("Argument `{shown_path}`")
    };
    match expected {
        Some(exp) => format!("{subject} must be {exp}, but got {got}."),
        None => format!("{subject} is invalid: {serde_msg}."),
    }
}

fn between<'a>(s: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let from = s.find(start)? + start.len();
    let len = s[from..].find(end)?;
    Some(&s[from..from + len])
}

fn join_path(path: &str, field: &str) -> String {
    if path.is_empty() || path == "." {
        field.to_owned()
    } else {
        format!("{path}.{field}")
    }
}

/// Finds the value at a serde_path_to_error path such as `a.b[2].c`.
fn lookup<'v>(value: &'v Value, path: &str) -> Option<&'v Value> {
    let mut current = value;
    for segment in segments(path) {
        current = match segment {
            Segment::Key(k) => current.get(k)?,
            Segment::Index(i) => current.get(i)?,
        };
    }
    Some(current)
}

enum Segment<'a> {
    Key(&'a str),
    Index(usize),
}

fn segments(path: &str) -> Vec<Segment<'_>> {
    let mut out = Vec::new();
    for dotted in path.split('.').filter(|s| !s.is_empty()) {
        let mut rest = dotted;
        if let Some(b) = rest.find('[') {
            if b > 0 {
                out.push(Segment::Key(&rest[..b]));
            }
            rest = &rest[b..];
            while let Some(stripped) = rest.strip_prefix('[') {
                let Some(close) = stripped.find(']') else {
                    break;
                };
                if let Ok(i) = stripped[..close].parse() {
                    out.push(Segment::Index(i));
                }
                rest = &stripped[close + 1..];
            }
        } else {
            out.push(Segment::Key(rest));
        }
    }
    out
}

/// Describes, from the input schema, what the argument at `path` must be.
fn expected_at(schema: &Value, path: &str) -> Option<String> {
    describe_schema(schema, node_at(schema, path)?)
}

/// The input schema's node for the argument at `path`, references followed.
fn node_at<'v>(schema: &'v Value, path: &str) -> Option<&'v Value> {
    let mut node = schema;
    for segment in segments(path) {
        node = resolve(schema, node);
        node = match segment {
            Segment::Key(k) => node.get("properties")?.get(k)?,
            Segment::Index(_) => node.get("items")?,
        };
    }
    Some(resolve(schema, node))
}

/// Follows a local `$ref` (`#/$defs/X` or `#/definitions/X`).
fn resolve<'v>(root: &'v Value, node: &'v Value) -> &'v Value {
    let Some(reference) = node.get("$ref").and_then(Value::as_str) else {
        return node;
    };
    reference
        .strip_prefix('#')
        .and_then(|pointer| root.pointer(pointer))
        .unwrap_or(node)
}

fn describe_schema(root: &Value, node: &Value) -> Option<String> {
    if let Some(values) = node.get("enum").and_then(Value::as_array) {
        let list: Vec<String> = values.iter().map(|v| v.to_string()).collect();
        return Some(format!("one of {}", list.join(", ")));
    }
    if let Some(c) = node.get("const") {
        return Some(format!("exactly {c}"));
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(options) = node.get(key).and_then(Value::as_array) {
            let described: Vec<String> = options
                .iter()
                .filter_map(|o| describe_schema(root, resolve(root, o)))
                .collect();
            if !described.is_empty() {
                return Some(described.join(" or "));
            }
        }
    }
    let types: Vec<&str> = match node.get("type")? {
        Value::String(t) => vec![t.as_str()],
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
        _ => return None,
    };
    let words: Vec<String> = types
        .iter()
        .filter(|t| **t != "null")
        .map(|t| type_words(t, node))
        .collect();
    let mut text = words.join(" or ");
    if types.contains(&"null") {
        text.push_str(" (or null)");
    }
    Some(text)
}

fn type_words(t: &str, node: &Value) -> String {
    let range = match (
        node.get("minimum").and_then(Value::as_f64),
        node.get("maximum").and_then(Value::as_f64),
    ) {
        (Some(lo), Some(hi)) => format!(" between {lo} and {hi}"),
        (Some(lo), None) => format!(" of at least {lo}"),
        (None, Some(hi)) => format!(" of at most {hi}"),
        (None, None) => String::new(),
    };
    match t {
        "integer" => format!("an integer{range}"),
        "number" => format!("a number{range}"),
        "string" => match node.get("format").and_then(Value::as_str) {
            Some(f) => format!("a string ({f})"),
            None => "a string".to_owned(),
        },
        "boolean" => "true or false".to_owned(),
        "array" => "an array".to_owned(),
        "object" => "an object".to_owned(),
        other => format!("a {other}"),
    }
}

/// Turns serde's Rust-flavoured expectation ("i64", "a boolean") into plain words.
fn plain_expected(expected: &str) -> String {
    let e = expected.trim();
    if [
        "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128", "usize",
    ]
    .contains(&e)
        || e.starts_with("an integer")
    {
        return "an integer".to_owned();
    }
    if e == "f32" || e == "f64" {
        return "a number".to_owned();
    }
    if e == "a boolean" {
        return "true or false".to_owned();
    }
    e.trim_matches('`').to_owned()
}

/// Describes a JSON value briefly for an error message.
fn describe_value(v: &Value) -> String {
    match v {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => format!("the boolean {b}"),
        Value::Number(n) => format!("the number {n}"),
        Value::String(s) => format!(
            "the string {}",
            truncate(&Value::String(s.clone()).to_string())
        ),
        Value::Array(a) => format!("an array of {} item(s)", a.len()),
        Value::Object(_) => "an object".to_owned(),
    }
}

fn truncate(s: &str) -> String {
    const MAX: usize = 60;
    if s.chars().count() <= MAX {
        s.to_owned()
    } else {
        let cut: String = s.chars().take(MAX).collect();
        format!("{cut}…")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Add {
        a: i64,
        b: i64,
    }

    fn args(v: Value) -> ToolArgs {
        let schema = json!({
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer", "minimum": 0}},
            "required": ["a", "b"]
        });
        ToolArgs::new(Some(crate::protocol::jsonrpc::to_raw(&v)), schema)
    }

    #[test]
    fn wrong_type_names_field_expectation_and_value() {
        let e = args(json!({"a": "five", "b": 1}))
            .parse::<Add>()
            .unwrap_err();
        assert_eq!(
            e.message(),
            "Argument `a` must be an integer, but got the string \"five\"."
        );
    }

    #[test]
    fn missing_field_is_named_with_its_type() {
        let e = args(json!({"a": 1})).parse::<Add>().unwrap_err();
        assert!(
            e.message()
                .starts_with("Missing required argument `b` (an integer of at least 0)")
        );
        assert!(!e.message().contains("line"));
    }

    #[test]
    fn non_object_arguments_are_explained() {
        let e = args(json!([1, 2])).parse::<Add>().unwrap_err();
        assert!(e.message().contains("must be a JSON object"), "{e}");
    }

    #[test]
    fn nested_paths_are_followed() {
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct Outer {
            items: Vec<Inner>,
        }
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct Inner {
            n: u8,
        }
        let schema = json!({
            "type": "object",
            "properties": {"items": {"type": "array", "items": {"$ref": "#/$defs/Inner"}}},
            "$defs": {"Inner": {"type": "object", "properties": {"n": {"type": "integer"}}}}
        });
        let a = ToolArgs::new(
            Some(crate::protocol::jsonrpc::to_raw(
                &json!({"items": [{"n": 1}, {"n": true}]}),
            )),
            schema,
        );
        let e = a.parse::<Outer>().unwrap_err();
        assert_eq!(
            e.message(),
            "Argument `items[1].n` must be an integer, but got the boolean true."
        );
    }

    fn strict(v: Value) -> ToolArgs {
        let schema = json!({
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "additionalProperties": false
        });
        ToolArgs::new(Some(crate::protocol::jsonrpc::to_raw(&v)), schema)
    }

    #[test]
    fn a_type_that_denies_unknown_fields_gets_the_same_message_as_the_schema_check() {
        #[derive(Debug, Deserialize)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct Strict {
            a: i64,
            b: i64,
        }
        let from_serde = args(json!({"a": 1, "b": 2, "c": 3}))
            .parse::<Strict>()
            .unwrap_err();
        let from_schema = strict(json!({"a": 1, "b": 2, "c": 3}))
            .parse::<Add>()
            .unwrap_err();
        assert_eq!(from_serde, from_schema);
        assert_eq!(
            from_schema.message(),
            "Unknown argument `c`; remove it. Accepted: `a`, `b`."
        );
    }

    #[test]
    fn many_unknown_arguments_are_listed_briefly() {
        let mut v = json!({"a": 1, "b": 2});
        for i in 0..20 {
            v[format!("x{i:02}")] = json!(i);
        }
        v["y".repeat(200)] = json!(0);
        let e = strict(v).parse::<Add>().unwrap_err();
        assert!(
            e.message().starts_with(
                "Unknown arguments `x00`, `x01`, `x02`, `x03`, `x04`, `x05`, `x06`, `x07` and 13 more; remove them."
            ),
            "{e}"
        );
        let long = strict(json!({"a": 1, "b": 2, "z".repeat(100): 0}))
            .parse::<Add>()
            .unwrap_err();
        assert!(long.message().len() < 200, "{long}");
    }

    #[test]
    fn decode_takes_the_value_decoded_earlier_instead_of_decoding_again() {
        let a = args(json!({"a": "not a number", "b": 1}))
            .with_decoded(Some(Decoded::new(Add { a: 4, b: 5 })));
        let add = a.decode::<Add>().unwrap();
        assert_eq!((add.a, add.b), (4, 5));
        // A value of another type is not used: the text is decoded.
        let e = args(json!({"a": "x", "b": 1}))
            .with_decoded(Some(Decoded::new(7_u8)))
            .decode::<Add>()
            .unwrap_err();
        assert!(e.message().starts_with("Argument `a`"), "{e}");
    }

    #[test]
    fn absent_arguments_decode_as_empty_object() {
        #[derive(Deserialize)]
        struct None_ {}
        let a = ToolArgs::new(None, json!({"type": "object"}));
        assert!(a.parse::<None_>().is_ok());
        assert_eq!(a.raw_json(), "{}");
    }
}
