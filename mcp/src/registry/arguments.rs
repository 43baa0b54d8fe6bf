//! Tool arguments: kept raw until the tool decodes them into its own type, and decode errors
//! rewritten for a model to act on: which argument, what type was expected, what arrived.
//! Never serde's "at line 1 column 2".

use std::fmt;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_json::value::RawValue;

/// The raw arguments of one tool call, with the tool's input schema for error messages.
#[derive(Clone, Debug)]
pub struct ToolArgs {
    /// The JSON text of the arguments, as the client sent it.
    raw: Option<Arc<str>>,
    schema: Arc<Value>,
}

impl ToolArgs {
    /// Wraps raw arguments (absent arguments decode as `{}`).
    pub fn new(raw: Option<Box<RawValue>>, schema: Arc<Value>) -> Self {
        Self::from_json_text(raw.map(|r| Arc::from(r.get())), schema)
    }

    /// Wraps raw arguments already shared with the authorization seam.
    pub fn shared(raw: Option<Arc<RawValue>>, schema: Arc<Value>) -> Self {
        Self::from_json_text(raw.map(|r| Arc::from(r.get())), schema)
    }

    /// Wraps the JSON text of arguments taken from a valid JSON document (one allocation
    /// per call: the text is copied once out of the frame).
    pub(crate) fn from_json_text(raw: Option<Arc<str>>, schema: Arc<Value>) -> Self {
        ToolArgs { raw, schema }
    }

    /// The raw JSON text of the arguments (`{}` when the client sent none).
    pub fn raw_json(&self) -> &str {
        match self.raw.as_deref() {
            Some(raw) if raw != "null" => raw,
            _ => "{}",
        }
    }

    /// The arguments as a JSON value.
    pub fn to_value(&self) -> Value {
        serde_json::from_str(self.raw_json()).unwrap_or(Value::Null)
    }

    /// Decodes the arguments into `T`. On failure the error names the argument, the
    /// expected type (from the tool's input schema) and what the client sent.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, ArgumentError> {
        let text = self.raw_json();
        if !text.starts_with('{') {
            return Err(ArgumentError {
                message: format!(
                    "The arguments must be a JSON object of named arguments, but got {}.",
                    describe_value(&self.to_value())
                ),
            });
        }
        // The common case pays for no path tracking: only arguments that fail are decoded
        // again, tracking where, to explain the failure.
        if let Ok(v) = serde_json::from_str::<T>(text) {
            return Ok(v);
        }
        let mut de = serde_json::Deserializer::from_str(text);
        match serde_path_to_error::deserialize::<_, T>(&mut de) {
            Ok(v) => Ok(v),
            Err(e) => {
                let path = e.path().to_string();
                let inner = e.into_inner();
                Err(ArgumentError {
                    message: explain(&path, &inner, &self.to_value(), &self.schema),
                })
            }
        }
    }
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
        let full = join_path(path, field);
        let allowed = serde_msg
            .split_once(", expected ")
            .map(|(_, rest)| format!(" Allowed: {rest}."))
            .unwrap_or_default();
        return format!("Unknown argument `{full}`; remove it.{allowed}");
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
    let mut node = schema;
    for segment in segments(path) {
        node = resolve(schema, node);
        node = match segment {
            Segment::Key(k) => node.get("properties")?.get(k)?,
            Segment::Index(_) => node.get("items")?,
        };
    }
    describe_schema(schema, resolve(schema, node))
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
        ToolArgs::new(Some(crate::protocol::jsonrpc::to_raw(&v)), Arc::new(schema))
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
            Arc::new(schema),
        );
        let e = a.parse::<Outer>().unwrap_err();
        assert_eq!(
            e.message(),
            "Argument `items[1].n` must be an integer, but got the boolean true."
        );
    }

    #[test]
    fn absent_arguments_decode_as_empty_object() {
        #[derive(Deserialize)]
        struct None_ {}
        let a = ToolArgs::new(None, Arc::new(json!({"type": "object"})));
        assert!(a.parse::<None_>().is_ok());
        assert_eq!(a.raw_json(), "{}");
    }
}
