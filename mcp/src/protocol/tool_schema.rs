//! A tool's JSON Schema, kept as the compact JSON text `tools/list` sends.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

/// A tool's input or output JSON Schema, kept as compact JSON text rather than as a
/// [`Value`] tree.
///
/// A server keeps one schema per registered tool for as long as it runs, and reads it only
/// to list it (copied out as it is) and to explain a call it rejects. As text a typical
/// schema takes a tenth of the memory of a `Value`, whose every JSON object is a B-tree
/// node with room for eleven members whatever its size. Cloning shares the text.
///
/// Made from a [`Value`] (`ToolSchema::from(json!(...))`); read back with
/// [`to_value`](Self::to_value) or [`get`](Self::get), or compared with a `Value` directly.
///
/// ```
/// use mcp::protocol::ToolSchema;
/// use serde_json::json;
///
/// let schema = ToolSchema::from(json!({"type": "object"}));
/// assert_eq!(schema.as_str(), r#"{"type":"object"}"#);
/// assert_eq!(schema.get("type"), Some(json!("object")));
/// assert_eq!(schema, json!({"type": "object"}));
/// ```
#[derive(Clone)]
pub struct ToolSchema(Arc<RawValue>);

impl ToolSchema {
    /// The schema written as compact JSON text.
    pub fn new(value: &Value) -> Self {
        // Writing a `Value` cannot fail: its keys are strings and its numbers finite.
        let text =
            serde_json::value::to_raw_value(value).unwrap_or_else(|_| RawValue::NULL.to_owned());
        ToolSchema(Arc::from(text))
    }

    /// The compact JSON text.
    pub fn as_str(&self) -> &str {
        self.0.get()
    }

    /// The schema as a [`Value`] (parsed from the text on each call).
    pub fn to_value(&self) -> Value {
        // The text was written from a `Value` or read from JSON: it parses.
        serde_json::from_str(self.as_str()).unwrap_or(Value::Null)
    }

    /// A member of the schema's root object (`None` when it has no such member or is not
    /// an object).
    pub fn get(&self, key: &str) -> Option<Value> {
        match self.to_value() {
            Value::Object(mut map) => map.remove(key),
            _ => None,
        }
    }

    /// Whether the schema is a JSON object (as the protocol requires of both schemas).
    pub fn is_object(&self) -> bool {
        self.as_str().starts_with('{')
    }
}

impl From<Value> for ToolSchema {
    fn from(value: Value) -> Self {
        ToolSchema::new(&value)
    }
}

impl From<&Value> for ToolSchema {
    fn from(value: &Value) -> Self {
        ToolSchema::new(value)
    }
}

impl PartialEq for ToolSchema {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str() || self.to_value() == other.to_value()
    }
}

impl PartialEq<Value> for ToolSchema {
    fn eq(&self, other: &Value) -> bool {
        self.to_value() == *other
    }
}

impl fmt::Debug for ToolSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ToolSchema").field(&self.as_str()).finish()
    }
}

impl fmt::Display for ToolSchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ToolSchema {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ToolSchema {
    /// Any JSON value, kept compact (a listing read by a client may be pretty-printed).
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Value::deserialize(deserializer).map(ToolSchema::from)
    }
}

/// The schema annotation that mirrors an argument into an `Mcp-Param-*` header
/// (2026-07-28).
const X_MCP_HEADER: &str = "x-mcp-header";

/// One argument a tool mirrors into a header.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct HeaderParam {
    /// The chain of `properties` keys from the schema root.
    pub(crate) path: Vec<String>,
    /// The `x-mcp-header` value (the header is `Mcp-Param-<header>`).
    pub(crate) header: String,
}

/// The arguments an input schema mirrors into headers: properties carrying `x-mcp-header`,
/// reachable from the root through `properties` alone (an annotation anywhere else is not
/// valid and mirrors nothing). Worked out once, when a tool is registered.
pub(crate) fn header_params(schema: &Value) -> Vec<HeaderParam> {
    fn walk(schema: &Value, path: &mut Vec<String>, out: &mut Vec<HeaderParam>) {
        let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
            return;
        };
        for (key, property) in properties {
            path.push(key.clone());
            if let Some(name) = property.get(X_MCP_HEADER).and_then(Value::as_str) {
                out.push(HeaderParam {
                    path: path.clone(),
                    header: name.to_owned(),
                });
            }
            walk(property, path, out);
            path.pop();
        }
    }
    let mut out = Vec::new();
    walk(schema, &mut Vec::new(), &mut out);
    // In path order whatever order the schema's maps keep (serde_json's `preserve_order`),
    // so the first mismatch named is the same in every build.
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn written_compact_and_listed_verbatim() {
        let schema = ToolSchema::from(json!({"type": "object", "properties": {"a": {}}}));
        assert!(!schema.as_str().contains(' '));
        let listed = serde_json::to_string(&json!({"inputSchema": schema.to_value()})).unwrap();
        let wire = serde_json::to_string(&Wrapper {
            input_schema: schema,
        })
        .unwrap();
        assert_eq!(wire, listed);
    }

    #[derive(Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Wrapper {
        input_schema: ToolSchema,
    }

    #[test]
    fn read_from_any_json_and_kept_compact() {
        let w: Wrapper =
            serde_json::from_str("{\"inputSchema\": {\n  \"type\" : \"object\" }}").unwrap();
        assert_eq!(w.input_schema.as_str(), r#"{"type":"object"}"#);
        assert!(w.input_schema.is_object());
        // Through a `Value` as well as through text.
        let v = serde_json::to_value(&w).unwrap();
        assert_eq!(v, json!({"inputSchema": {"type": "object"}}));
    }

    #[test]
    fn equal_by_value_whatever_the_text() {
        let a = ToolSchema::from(json!({"a": 1, "b": [true]}));
        let b: ToolSchema = serde_json::from_str(r#"{ "b": [ true ], "a": 1 }"#).unwrap();
        assert_eq!(a, b);
        assert_eq!(a, json!({"b": [true], "a": 1}));
        assert_ne!(a, ToolSchema::from(json!({"a": 2, "b": [true]})));
        assert_eq!(a.get("a"), Some(json!(1)));
        assert_eq!(a.get("c"), None);
        assert_eq!(ToolSchema::from(json!([1])).get("a"), None);
        assert!(!ToolSchema::from(json!([1])).is_object());
    }

    #[test]
    fn clones_share_the_text() {
        let a = ToolSchema::from(json!({"type": "object"}));
        let b = a.clone();
        assert!(std::ptr::eq(a.as_str(), b.as_str()));
    }
}
