//! Capabilities each side declares.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Meta;

/// What a client declares it can do. Unknown members are kept.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClientCapabilities {
    /// Roots support.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roots: Option<Value>,
    /// Sampling support.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<Value>,
    /// Elicitation support (`{}` means form mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation: Option<Value>,
    /// Experimental capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental: Option<Value>,
    /// Everything else (tasks, extensions, ...).
    #[serde(flatten)]
    pub other: Meta,
}

fn declared(v: &Option<Value>) -> bool {
    matches!(v, Some(v) if !v.is_null())
}

impl ClientCapabilities {
    /// Whether the client can answer form elicitations.
    pub fn can_elicit_form(&self) -> bool {
        match &self.elicitation {
            Some(Value::Object(o)) => o.is_empty() || o.get("form").is_some_and(|f| !f.is_null()),
            _ => false,
        }
    }

    /// Whether the client declared elicitation at all (any mode).
    pub fn can_elicit(&self) -> bool {
        declared(&self.elicitation)
    }

    /// Whether the client can answer URL-mode elicitations.
    pub fn can_elicit_url(&self) -> bool {
        matches!(&self.elicitation, Some(Value::Object(o)) if o.get("url").is_some_and(|f| !f.is_null()))
    }

    /// Whether the client can sample.
    pub fn can_sample(&self) -> bool {
        declared(&self.sampling)
    }

    /// Whether the client can list roots.
    pub fn can_list_roots(&self) -> bool {
        declared(&self.roots)
    }
}

/// A capability with only a `listChanged` flag.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListChangedCapability {
    /// Whether list_changed notifications are sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
}

/// The resources capability.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourcesCapability {
    /// Whether subscriptions are offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscribe: Option<bool>,
    /// Whether list_changed notifications are sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_changed: Option<bool>,
}

/// An empty object capability marker (`{}`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Empty {}

/// What the server offers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerCapabilities {
    /// Experimental capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental: Option<Meta>,
    /// Log messages (`logging/setLevel`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logging: Option<Empty>,
    /// Argument completion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completions: Option<Empty>,
    /// Prompts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<ListChangedCapability>,
    /// Resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourcesCapability>,
    /// Tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<ListChangedCapability>,
    /// Tasks (2025-11-25: `{list, cancel, requests: {tools: {call}}}`). On 2026-07-28 tasks
    /// are the `io.modelcontextprotocol/tasks` extension instead, and this slot is never sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks: Option<Value>,
    /// Extensions (2026-07-28).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<Meta>,
}
