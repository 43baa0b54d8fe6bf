//! Types of the stateless revision (2026-07-28): per-request metadata, discovery,
//! input-required results (multi round-trip requests) and subscriptions.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{ClientCapabilities, Implementation, LoggingLevel, Meta, ServerCapabilities};

/// The reserved `_meta` keys.
pub mod meta_keys {
    /// The request's protocol version (required on every request).
    pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
    /// The client's capabilities for this request (required).
    pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
    /// The client's identity (optional; informational only).
    pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
    /// The minimum log level for this request (optional; no logs without it).
    pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
    /// The listen request a notification belongs to.
    pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
    /// The server's identity on results.
    pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
    /// The task a message belongs to (2025-11-25 tasks).
    pub const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";
    /// The tasks extension's id (2026-07-28, SEP-2663), under `capabilities.extensions`.
    pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";
}

/// The per-request metadata a 2026-07-28 request carries, validated.
#[derive(Clone, Debug, PartialEq)]
pub struct RequestMeta {
    /// The protocol version the request speaks.
    pub protocol_version: String,
    /// What the client can do for this request.
    pub capabilities: ClientCapabilities,
    /// Who the client says it is.
    pub client_info: Option<Implementation>,
    /// The minimum level of log messages wanted for this request.
    pub log_level: Option<LoggingLevel>,
}

/// Why a request's `_meta` is unusable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MetaError {
    /// A required member is missing or has the wrong type.
    Invalid(String),
}

impl RequestMeta {
    /// Reads and validates the reserved members of a request's `_meta`.
    pub fn from_meta(meta: Option<&Meta>) -> Result<RequestMeta, MetaError> {
        let meta = meta.ok_or_else(|| MetaError::Invalid(NO_META.into()))?;
        // The map's text, read the way a request's `_meta` is: one reader of the reserved
        // members, whatever the `_meta` came in as.
        let text = serde_json::to_string(meta).expect("a JSON map serializes");
        let reserved: Reserved<'_> = serde_json::from_str(&text)
            .map_err(|e| MetaError::Invalid(format!("_meta is malformed: {e}")))?;
        let required = Required::from_reserved(&reserved)?;
        Ok(RequestMeta {
            protocol_version: required.protocol_version,
            capabilities: required.capabilities,
            client_info: reserved
                .client_info
                .and_then(|v| serde_json::from_str::<Implementation>(v.0).ok()),
            log_level: required.log_level,
        })
    }
}

/// The reserved members a 2026-07-28 request's `_meta` must carry valid (the client's
/// info, informational only, is not among them: it is read when someone asks).
pub(crate) struct Required {
    /// The protocol version the request speaks.
    pub(crate) protocol_version: String,
    /// What the client can do for this request.
    pub(crate) capabilities: ClientCapabilities,
    /// The minimum level of log messages wanted for this request.
    pub(crate) log_level: Option<LoggingLevel>,
}

impl Required {
    /// Validates the reserved members read from a `_meta` object.
    pub(crate) fn from_reserved(meta: &Reserved<'_>) -> Result<Required, MetaError> {
        let missing =
            |key: &str| MetaError::Invalid(format!("_meta is missing the required \"{key}\""));
        let protocol_version = match meta.protocol_version {
            Some(v) => string_member(v.0, meta_keys::PROTOCOL_VERSION)?,
            None => return Err(missing(meta_keys::PROTOCOL_VERSION)),
        };
        let capabilities = match meta.client_capabilities {
            Some(RawText(v)) if v.starts_with('{') => serde_json::from_str(v).map_err(|e| {
                MetaError::Invalid(format!(
                    "_meta[\"{}\"] is malformed: {e}",
                    meta_keys::CLIENT_CAPABILITIES
                ))
            })?,
            Some(_) => {
                return Err(MetaError::Invalid(format!(
                    "_meta[\"{}\"] must be an object",
                    meta_keys::CLIENT_CAPABILITIES
                )));
            }
            None => return Err(missing(meta_keys::CLIENT_CAPABILITIES)),
        };
        let log_level = match meta.log_level {
            None => None,
            Some(v) => Some(
                string_member(v.0, meta_keys::LOG_LEVEL)?
                    .parse::<LoggingLevel>()
                    .map_err(MetaError::Invalid)?,
            ),
        };
        Ok(Required {
            protocol_version,
            capabilities,
            log_level,
        })
    }
}

/// Why a request without `_meta` is invalid.
pub(crate) const NO_META: &str = "the request has no _meta";

/// A reserved member that must be a string.
fn string_member(value: &str, key: &str) -> Result<String, MetaError> {
    serde_json::from_str(value)
        .map_err(|_| MetaError::Invalid(format!("_meta[\"{key}\"] must be a string")))
}

/// A member's JSON text, validated and kept as sent (an explicit `null` reads as absent, as
/// for any `Option`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RawText<'a>(pub(crate) &'a str);

impl<'de: 'a, 'a> Deserialize<'de> for RawText<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        <&'de serde_json::value::RawValue>::deserialize(d).map(|raw| RawText(raw.get()))
    }
}

/// The members of a `_meta` object the server reads, as their JSON text: found in one pass
/// over `_meta`, without building a map of it (the rest is skipped). A `null` member counts
/// as absent; a member given twice makes `_meta` malformed.
#[derive(Deserialize, Default, Debug)]
#[serde(default, bound(deserialize = "'de: 'a"))]
pub(crate) struct Reserved<'a> {
    /// [`meta_keys::PROTOCOL_VERSION`].
    #[serde(rename = "io.modelcontextprotocol/protocolVersion")]
    pub(crate) protocol_version: Option<RawText<'a>>,
    /// [`meta_keys::CLIENT_CAPABILITIES`].
    #[serde(rename = "io.modelcontextprotocol/clientCapabilities")]
    pub(crate) client_capabilities: Option<RawText<'a>>,
    /// [`meta_keys::CLIENT_INFO`].
    #[serde(rename = "io.modelcontextprotocol/clientInfo")]
    pub(crate) client_info: Option<RawText<'a>>,
    /// [`meta_keys::LOG_LEVEL`].
    #[serde(rename = "io.modelcontextprotocol/logLevel")]
    pub(crate) log_level: Option<RawText<'a>>,
    /// A W3C trace context's `traceparent`.
    pub(crate) traceparent: Option<RawText<'a>>,
    /// A W3C trace context's `tracestate`.
    pub(crate) tracestate: Option<RawText<'a>>,
    /// The token a request's progress notifications carry.
    #[serde(rename = "progressToken")]
    pub(crate) progress_token: Option<RawText<'a>>,
}

impl<'a> Reserved<'a> {
    /// Its members in declaration order (as `inbound::HeadSpans` keeps them).
    pub(crate) fn members(&self) -> [Option<&'a str>; 7] {
        [
            self.protocol_version,
            self.client_capabilities,
            self.client_info,
            self.log_level,
            self.traceparent,
            self.tracestate,
            self.progress_token,
        ]
        .map(|member| member.map(|RawText(text)| text))
    }

    /// The members [`Reserved::members`] gives, back in their places.
    pub(crate) fn of_members(members: [Option<&'a str>; 7]) -> Reserved<'a> {
        let [version, capabilities, info, level, parent, state, token] =
            members.map(|m| m.map(RawText));
        Reserved {
            protocol_version: version,
            client_capabilities: capabilities,
            client_info: info,
            log_level: level,
            traceparent: parent,
            tracestate: state,
            progress_token: token,
        }
    }
}

/// How widely a cacheable result may be shared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheScope {
    /// No caller-specific data: any cache may serve it to anyone.
    Public,
    /// Depends on the caller's authorization: caches must not share it across callers.
    Private,
}

impl CacheScope {
    /// The wire form.
    pub fn as_str(self) -> &'static str {
        match self {
            CacheScope::Public => "public",
            CacheScope::Private => "private",
        }
    }
}

/// `server/discover` result (its `resultType`, cache hints and `_meta` are added on the way out).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoverResult {
    /// The revisions a client may put in its requests' `_meta`.
    pub supported_versions: Vec<String>,
    /// What the server offers.
    pub capabilities: ServerCapabilities,
    /// Usage hints for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
}

/// Which notifications a `subscriptions/listen` stream carries.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionFilter {
    /// `notifications/tools/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_list_changed: Option<bool>,
    /// `notifications/prompts/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts_list_changed: Option<bool>,
    /// `notifications/resources/list_changed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources_list_changed: Option<bool>,
    /// `notifications/resources/updated` for these URIs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_subscriptions: Option<Vec<String>>,
    /// `notifications/tasks` for these tasks (the tasks extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_ids: Option<Vec<String>>,
}

/// `subscriptions/listen` params.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct ListenParams {
    /// What to listen to.
    pub notifications: SubscriptionFilter,
}

/// One request the server needs the client to fulfil before it can finish.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InputRequest {
    /// `elicitation/create`, `sampling/createMessage` or `roots/list`.
    pub method: String,
    /// Its params.
    pub params: Value,
}

/// A result asking the client for input before the request can complete.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputRequiredResult {
    /// Always `"input_required"`.
    pub result_type: String,
    /// What the client should ask, by server-chosen key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<std::collections::BTreeMap<String, InputRequest>>,
    /// Opaque state to echo on the retry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
}
