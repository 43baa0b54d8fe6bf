//! JSON Schemas generated from Rust types (schemars), shaped as the protocol wants them:
//! tool input and output schemas and elicitation forms. Below the registry and `Ctx`,
//! which both use it.

use serde_json::Value;

/// The input schema generated for an argument type: schemars' 2020-12 output with an
/// object root, saying `additionalProperties: false` (arguments the type does not name are
/// refused) unless the type says otherwise (a flattened map, say) or the root combines
/// subschemas (an enum), where listing the accepted names at the root would be wrong.
pub fn input_schema_for<A: schemars::JsonSchema>() -> Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(A)).unwrap_or_default();
    if let Value::Object(map) = &mut schema {
        map.entry("type")
            .or_insert_with(|| Value::String("object".into()));
        // The dialect is the protocol's default (2020-12); some hosts choke on `$schema`.
        map.remove("$schema");
        map.remove("title");
        const COMBINED: &[&str] = &[
            "additionalProperties",
            "unevaluatedProperties",
            "patternProperties",
            "allOf",
            "anyOf",
            "oneOf",
            "not",
            "if",
            "$ref",
            "dependentSchemas",
        ];
        if !COMBINED.iter().any(|k| map.contains_key(*k)) {
            map.insert("additionalProperties".into(), Value::Bool(false));
        }
    }
    schema
}

/// The `outputSchema` for a structured result of type `T`: schemars' 2020-12 schema
/// without `$schema` (the protocol's default dialect; some hosts refuse the keyword).
pub fn output_schema_for<T: schemars::JsonSchema>() -> Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(T)).unwrap_or_default();
    if let Value::Object(map) = &mut schema {
        map.remove("$schema");
    }
    schema
}
