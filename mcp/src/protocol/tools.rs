//! Tools: definitions, calls and results.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

use super::{ContentBlock, Icon, Meta, ToolSchema};

/// Hints about a tool's behaviour. Clients treat them as untrusted; this framework treats
/// `destructiveHint: true` as a demand for authorization (see [`crate::auth`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// A display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not modify its environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may perform destructive updates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Calling it again with the same arguments has no further effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool reaches an open world of external entities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
    /// Other annotation members, kept verbatim.
    #[serde(flatten)]
    pub other: Meta,
}

/// How a tool takes part in tasks (2025-11-25).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolExecution {
    /// `forbidden`, `optional` or `required`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_support: Option<String>,
}

/// A tool as listed by `tools/list`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// The unique name.
    pub name: String,
    /// A display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The JSON Schema of the arguments, as compact text (shared with the [`ToolDef`] that
    /// checks calls against it, and with every tool whose arguments have the same type).
    ///
    /// [`ToolDef`]: crate::registry::ToolDef
    pub input_schema: ToolSchema,
    /// The JSON Schema of `structuredContent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<ToolSchema>,
    /// Behaviour hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// Icons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Icon>>,
    /// Task support.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution: Option<ToolExecution>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// `tools/call` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolRequestParams {
    /// The tool to call.
    pub name: String,
    /// The arguments, raw until the tool decodes them into its own type.
    #[serde(default)]
    pub arguments: Option<Box<RawValue>>,
    /// Request metadata (progress token, 2026-07-28 fields).
    #[serde(rename = "_meta", default)]
    pub meta: Option<Meta>,
    /// Answers to an input-required result (2026-07-28).
    #[serde(default)]
    pub input_responses: Option<Meta>,
    /// The sealed state of an input-required result (2026-07-28).
    #[serde(default)]
    pub request_state: Option<String>,
}

/// The result of a tool call.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// Unstructured content.
    pub content: Vec<ContentBlock>,
    /// Structured content matching the tool's output schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// Whether the call failed (an execution error the model can read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
    /// Set when the tool failed with a JSON-RPC error instead of a result
    /// ([`ProtocolError`](crate::registry::ProtocolError)): the call is answered with the
    /// error, and a task ends `failed`.
    #[serde(skip)]
    pub(crate) failure: Option<Box<super::ErrorObject>>,
}

impl CallToolResult {
    /// A call that fails with a JSON-RPC error rather than a result the model reads.
    pub fn protocol_error(error: super::ErrorObject) -> Self {
        CallToolResult {
            failure: Some(Box::new(error)),
            ..Default::default()
        }
    }

    /// The JSON-RPC error this call fails with, if it fails with one.
    pub fn failure(&self) -> Option<&super::ErrorObject> {
        self.failure.as_deref()
    }

    /// Writes the result as JSON, byte for byte what its `Serialize` writes, with plain
    /// text blocks (the common result) written directly rather than through serde.
    pub(crate) fn write_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        out.extend_from_slice(br#"{"content":["#);
        for (i, block) in self.content.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            match block {
                ContentBlock::Text(super::TextContent {
                    text,
                    annotations: None,
                    meta: None,
                }) => {
                    out.extend_from_slice(br#"{"type":"text","text":"#);
                    super::json_str::write_json_str(out, text)?;
                    out.push(b'}');
                }
                other => serde_json::to_writer(&mut *out, other)?,
            }
        }
        out.push(b']');
        if let Some(structured) = &self.structured_content {
            out.extend_from_slice(br#","structuredContent":"#);
            serde_json::to_writer(&mut *out, structured)?;
        }
        match self.is_error {
            Some(true) => out.extend_from_slice(br#","isError":true"#),
            Some(false) => out.extend_from_slice(br#","isError":false"#),
            None => {}
        }
        if let Some(meta) = &self.meta {
            out.extend_from_slice(br#","_meta":"#);
            serde_json::to_writer(&mut *out, meta)?;
        }
        out.push(b'}');
        Ok(())
    }

    /// A successful result with these blocks.
    pub fn success(content: Vec<ContentBlock>) -> Self {
        CallToolResult {
            content,
            ..Default::default()
        }
    }

    /// A successful result with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::success(vec![ContentBlock::text(text)])
    }

    /// An execution error: `isError: true` with a text the model can read and act on.
    pub fn error(text: impl Into<String>) -> Self {
        CallToolResult {
            content: vec![ContentBlock::text(text)],
            is_error: Some(true),
            ..Default::default()
        }
    }

    /// Whether this result reports an error.
    pub fn is_error(&self) -> bool {
        self.is_error == Some(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{Annotations, TextContent};

    #[test]
    fn the_direct_writer_writes_what_serde_writes() {
        let mut meta = Meta::new();
        meta.insert("k".into(), serde_json::json!({"b": [1, "x\u{1}"]}));
        let annotated = ContentBlock::Text(TextContent {
            text: "a".into(),
            annotations: Some(Annotations {
                priority: Some(0.5),
                ..Default::default()
            }),
            meta: None,
        });
        let results = [
            CallToolResult::default(),
            CallToolResult::text("hello, benchmark"),
            CallToolResult::text("quote \" slash \\ nl \n tab \t nul \u{0} del \u{7f} é ☃ 🦀"),
            CallToolResult::error("failed"),
            CallToolResult {
                content: vec![
                    ContentBlock::text("one"),
                    annotated,
                    ContentBlock::image(b"\x89PNG", "image/png"),
                    ContentBlock::text(""),
                ],
                structured_content: Some(serde_json::json!({"z": 1, "a": [true, null]})),
                is_error: Some(false),
                meta: Some(meta),
                failure: None,
            },
        ];
        for result in results {
            let mut direct = Vec::new();
            result.write_json(&mut direct).unwrap();
            assert_eq!(
                String::from_utf8(direct).unwrap(),
                serde_json::to_string(&result).unwrap()
            );
        }
    }
}
