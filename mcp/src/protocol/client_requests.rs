//! Requests the server makes of the client: elicitation, sampling and roots.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Meta, Role};

/// `elicitation/create` params.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ElicitRequestParams {
    /// URL mode (2025-11-25 on): the client opens a URL.
    Url(ElicitUrlParams),
    /// Form mode (the default when `mode` is absent): the client shows a form built from a
    /// flat schema.
    Form(ElicitFormParams),
}

/// The `mode` marker of a form elicitation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum FormMode {
    /// `"form"`.
    #[serde(rename = "form")]
    Form,
}

/// The `mode` marker of a URL elicitation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum UrlMode {
    /// `"url"`.
    #[serde(rename = "url")]
    Url,
}

/// Form-mode elicitation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitFormParams {
    /// `"form"`, or absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<FormMode>,
    /// What to ask the human.
    pub message: String,
    /// A flat object schema of primitive properties.
    pub requested_schema: Value,
}

/// URL-mode elicitation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitUrlParams {
    /// `"url"`.
    pub mode: UrlMode,
    /// What the URL is for.
    pub message: String,
    /// The URL to open.
    pub url: String,
    /// Correlates the completion notification (handshake era).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation_id: Option<String>,
}

impl ElicitUrlParams {
    /// A URL-mode elicitation: `message` says why, `url` is where to go;
    /// `elicitation_id` names it on 2025-11-25 (absent on 2026-07-28).
    pub fn new(
        message: impl Into<String>,
        url: impl Into<String>,
        elicitation_id: Option<String>,
    ) -> Self {
        ElicitUrlParams {
            mode: UrlMode::Url,
            message: message.into(),
            url: url.into(),
            elicitation_id,
        }
    }
}

/// `notifications/elicitation/complete` params (2025-11-25).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitationCompleteParams {
    /// The URL-mode elicitation whose flow finished.
    pub elicitation_id: String,
}

/// What the human did with an elicitation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitAction {
    /// Submitted the form.
    Accept,
    /// Explicitly declined.
    Decline,
    /// Dismissed it.
    Cancel,
}

/// The client's answer to `elicitation/create`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ElicitResult {
    /// The action taken.
    pub action: ElicitAction,
    /// The submitted values (accept only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Meta>,
}

/// Model preferences for sampling.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelPreferences {
    /// Model name hints, in order of preference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hints: Option<Vec<Value>>,
    /// 0..1: how much cost matters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_priority: Option<f64>,
    /// 0..1: how much speed matters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed_priority: Option<f64>,
    /// 0..1: how much capability matters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intelligence_priority: Option<f64>,
}

/// One message of a sampling conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SamplingMessage {
    /// Who speaks.
    pub role: Role,
    /// A content block or an array of them (kept as JSON: sampling adds tool blocks).
    pub content: Value,
}

impl SamplingMessage {
    /// A user message with text.
    pub fn user_text(text: impl Into<String>) -> Self {
        SamplingMessage {
            role: Role::User,
            content: serde_json::json!({"type": "text", "text": text.into()}),
        }
    }
}

/// `sampling/createMessage` params.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageRequestParams {
    /// The conversation.
    pub messages: Vec<SamplingMessage>,
    /// The most tokens to generate.
    pub max_tokens: u32,
    /// A system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Model preferences.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_preferences: Option<ModelPreferences>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Stop sequences.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_sequences: Option<Vec<String>>,
    /// `none`, `thisServer` or `allServers`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_context: Option<String>,
    /// Provider-specific metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Value>,
}

impl CreateMessageRequestParams {
    /// A single user question with a token budget.
    pub fn ask(text: impl Into<String>, max_tokens: u32) -> Self {
        CreateMessageRequestParams {
            messages: vec![SamplingMessage::user_text(text)],
            max_tokens,
            system_prompt: None,
            model_preferences: None,
            temperature: None,
            stop_sequences: None,
            include_context: None,
            metadata: None,
        }
    }
}

/// The client's answer to `sampling/createMessage`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageResult {
    /// Who speaks (the assistant).
    pub role: Role,
    /// The generated content.
    pub content: Value,
    /// The model that produced it.
    #[serde(default)]
    pub model: String,
    /// Why generation stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
}

impl CreateMessageResult {
    /// The text of the first text block, if any.
    pub fn text(&self) -> Option<&str> {
        fn text_of(v: &Value) -> Option<&str> {
            (v.get("type")?.as_str()? == "text")
                .then(|| v.get("text")?.as_str())
                .flatten()
        }
        match &self.content {
            Value::Array(items) => items.iter().find_map(text_of),
            v => text_of(v),
        }
    }
}

/// A root the client exposes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Root {
    /// A `file://` URI.
    pub uri: String,
    /// A display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// The client's answer to `roots/list`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ListRootsResult {
    /// The roots.
    pub roots: Vec<Root>,
}
