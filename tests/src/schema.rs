//! Validation of server messages against the official schema of a protocol revision
//! (`tests/schema/<version>/schema.json`, vendored in the repository, or
//! `$MCP_SCHEMA_DIR/<version>/schema.json`).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{Value, json};

/// Where the schemas live.
pub fn schema_dir() -> PathBuf {
    if let Ok(dir) = std::env::var("MCP_SCHEMA_DIR") {
        return PathBuf::from(dir);
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("schema")
}

/// Validators for one revision's schema, one per definition, built on first use.
pub struct SchemaValidator {
    version: String,
    document: Value,
    defs_key: &'static str,
    cache: Mutex<HashMap<String, Arc<jsonschema::Validator>>>,
}

impl SchemaValidator {
    /// The validator for `version` (shared; loads the schema file once).
    pub fn for_version(version: &str) -> Arc<SchemaValidator> {
        static ALL: OnceLock<Mutex<HashMap<String, Arc<SchemaValidator>>>> = OnceLock::new();
        let all = ALL.get_or_init(Default::default);
        let mut all = all.lock().unwrap();
        Arc::clone(all.entry(version.to_owned()).or_insert_with(|| {
            let path = schema_dir().join(version).join("schema.json");
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
            let document: Value = serde_json::from_str(&text).expect("schema is JSON");
            let defs_key = if document.get("$defs").is_some() {
                "$defs"
            } else {
                "definitions"
            };
            Arc::new(SchemaValidator {
                version: version.to_owned(),
                document,
                defs_key,
                cache: Mutex::new(HashMap::new()),
            })
        }))
    }

    /// Whether the schema defines `name`.
    pub fn has(&self, name: &str) -> bool {
        self.document[self.defs_key].get(name).is_some()
    }

    /// Validates `instance` against the definition `name`.
    pub fn validate(&self, name: &str, instance: &Value) -> Result<(), String> {
        let validator = {
            let mut cache = self.cache.lock().unwrap();
            match cache.get(name) {
                Some(v) => Arc::clone(v),
                None => {
                    assert!(self.has(name), "{} has no definition {name}", self.version);
                    let mut root = self.document.clone();
                    root["$ref"] = json!(format!("#/{}/{name}", self.defs_key));
                    let v = Arc::new(
                        jsonschema::validator_for(&root)
                            .unwrap_or_else(|e| panic!("schema {} {name}: {e}", self.version)),
                    );
                    cache.insert(name.to_owned(), Arc::clone(&v));
                    v
                }
            }
        };
        check(&validator, instance).map_err(|e| format!("{} {name}: {e}", self.version))
    }
}

/// Validates `instance` against a schema of its own (a tool's `outputSchema`, say).
pub fn validate_against(schema: &Value, instance: &Value) -> Result<(), String> {
    let validator =
        jsonschema::validator_for(schema).map_err(|e| format!("invalid schema {schema}: {e}"))?;
    check(&validator, instance)
}

/// Every way `instance` breaks the validator's schema, in one message.
fn check(validator: &jsonschema::Validator, instance: &Value) -> Result<(), String> {
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(format!("{}\n  in {instance}", errors.join("; ")))
    }
}

/// The result definition of a method's response, per the schema's naming.
fn result_definition(method: &str) -> Option<&'static str> {
    Some(match method {
        "initialize" => "InitializeResult",
        "ping" | "logging/setLevel" | "resources/subscribe" | "resources/unsubscribe" => {
            "EmptyResult"
        }
        "tools/list" => "ListToolsResult",
        "tools/call" => "CallToolResult",
        "resources/list" => "ListResourcesResult",
        "resources/templates/list" => "ListResourceTemplatesResult",
        "resources/read" => "ReadResourceResult",
        "prompts/list" => "ListPromptsResult",
        "prompts/get" => "GetPromptResult",
        "completion/complete" => "CompleteResult",
        "server/discover" => "DiscoverResult",
        "subscriptions/listen" => "SubscriptionsListenResult",
        // 2025-11-25 tasks (the 2026-07-28 extension has no definitions in the core
        // schema: its results are checked as results only).
        "tasks/get" => "GetTaskResult",
        "tasks/cancel" => "CancelTaskResult",
        "tasks/list" => "ListTasksResult",
        "tasks/result" => "GetTaskPayloadResult",
        _ => return None,
    })
}

/// Validates one message the server sent, for a connection speaking `version`.
/// `request_method` is the method of the request a response answers, when known.
pub fn validate_server_message(
    version: &str,
    message: &Value,
    request_method: Option<&str>,
) -> Result<(), String> {
    let schema = SchemaValidator::for_version(version);
    if let Value::Array(items) = message {
        for item in items {
            validate_server_message(version, item, None)?;
        }
        return Ok(());
    }
    let has = |k: &str| message.get(k).is_some();
    if has("method") && has("id") {
        schema.validate("JSONRPCRequest", message)?;
        if schema.has("ServerRequest") {
            schema.validate("ServerRequest", message)?;
        }
        return Ok(());
    }
    if has("method") {
        schema.validate("JSONRPCNotification", message)?;
        return schema.validate("ServerNotification", message);
    }
    if has("error") {
        let name = if schema.has("JSONRPCErrorResponse") {
            "JSONRPCErrorResponse"
        } else {
            "JSONRPCError"
        };
        return schema.validate(name, message);
    }
    let envelope = if schema.has("JSONRPCResultResponse") {
        "JSONRPCResultResponse"
    } else {
        "JSONRPCResponse"
    };
    schema.validate(envelope, message)?;
    let Some(definition) = request_method.and_then(result_definition) else {
        return Ok(());
    };
    let result = &message["result"];
    if result.get("resultType") == Some(&json!("input_required")) {
        return schema.validate("InputRequiredResult", result);
    }
    // A task's handle answers a tools/call: nested on 2025-11-25, the extension's flat
    // `resultType: "task"` on 2026-07-28 (a result the core schema does not define).
    if request_method == Some("tools/call") && result.get("task").is_some() {
        return schema.validate("CreateTaskResult", result);
    }
    if !schema.has(definition) || result.get("resultType") == Some(&json!("task")) {
        return schema.validate("Result", result);
    }
    schema.validate(definition, result)
}
