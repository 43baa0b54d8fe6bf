//! Conversions from what handlers return into protocol results, so a tool can return a
//! `String`, a number, `Json<T>`, content blocks or a `Result` and the framework does the rest.

use std::borrow::Cow;
use std::fmt::Display;

use serde::Serialize;

use crate::protocol::{
    CallToolResult, ContentBlock, GetPromptResult, PromptMessage, ResourceContents,
};

/// Structured output: the value becomes `structuredContent`, with its JSON as a text block
/// for clients that predate structured output. In a resource it becomes `application/json`.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Json<T>(pub T);

/// Anything a tool may return.
#[diagnostic::on_unimplemented(
    message = "a tool cannot return `{Self}`",
    label = "this type does not convert into a tool result",
    note = "return text (String, &'static str), a number or bool, Json<T> or Structured<T> for structured output, a ContentBlock or Vec<ContentBlock>, a CallToolResult, or Result<T, E> of one of these with E: Display"
)]
pub trait IntoToolResult {
    /// Converts into the call's result.
    fn into_tool_result(self) -> CallToolResult;
}

impl IntoToolResult for CallToolResult {
    fn into_tool_result(self) -> CallToolResult {
        self
    }
}

impl IntoToolResult for String {
    fn into_tool_result(self) -> CallToolResult {
        CallToolResult::text(self)
    }
}

impl IntoToolResult for &'static str {
    fn into_tool_result(self) -> CallToolResult {
        CallToolResult::text(self)
    }
}

impl IntoToolResult for Cow<'static, str> {
    fn into_tool_result(self) -> CallToolResult {
        CallToolResult::text(self.into_owned())
    }
}

impl IntoToolResult for () {
    fn into_tool_result(self) -> CallToolResult {
        CallToolResult::success(Vec::new())
    }
}

macro_rules! display_results {
    ($($t:ty),*) => {$(
        impl IntoToolResult for $t {
            fn into_tool_result(self) -> CallToolResult {
                CallToolResult::text(self.to_string())
            }
        }
    )*};
}
display_results!(
    i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize, f32, f64, bool, char
);

impl IntoToolResult for ContentBlock {
    fn into_tool_result(self) -> CallToolResult {
        CallToolResult::success(vec![self])
    }
}

impl IntoToolResult for Vec<ContentBlock> {
    fn into_tool_result(self) -> CallToolResult {
        CallToolResult::success(self)
    }
}

impl<T: Serialize> IntoToolResult for Json<T> {
    fn into_tool_result(self) -> CallToolResult {
        match serde_json::to_value(&self.0) {
            Ok(value) => CallToolResult {
                content: vec![ContentBlock::text(value.to_string())],
                structured_content: Some(value),
                ..Default::default()
            },
            Err(e) => CallToolResult::error(format!("the tool's result could not be encoded: {e}")),
        }
    }
}

/// Structured output with content of your own: the value becomes `structuredContent`, and
/// the content you give (a sentence for the model, say) is shown beside it instead of the
/// value's JSON. A `#[tool]` returning it gets an `outputSchema` generated from `T`, as with
/// [`Json`].
///
/// ```
/// use mcp::prelude::*;
///
/// #[derive(serde::Serialize, schemars::JsonSchema)]
/// struct Forecast { celsius: f64, rain: bool }
///
/// /// Tomorrow's weather.
/// #[tool(read_only)]
/// async fn forecast(city: String) -> Structured<Forecast> {
///     let f = Forecast { celsius: 21.5, rain: false };
///     Structured::new(format!("{city}: {} °C, dry", f.celsius), f)
/// }
///
/// # fn main() {
/// let def = <forecast as mcp::macros_support::ToolFactory>::def();
/// assert_eq!(def.tool().output_schema.as_ref().unwrap().to_value()["properties"]["rain"]["type"], "boolean");
/// # }
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Structured<T> {
    /// What `content` carries: text, images, links.
    pub content: Vec<ContentBlock>,
    /// The value: `structuredContent`.
    pub value: T,
}

impl<T> Structured<T> {
    /// The value, shown as `text`.
    pub fn new(text: impl Into<String>, value: T) -> Self {
        Structured {
            content: vec![ContentBlock::text(text)],
            value,
        }
    }

    /// The value, shown as these content blocks.
    pub fn with_content(content: Vec<ContentBlock>, value: T) -> Self {
        Structured { content, value }
    }
}

impl<T: Serialize> IntoToolResult for Structured<T> {
    fn into_tool_result(self) -> CallToolResult {
        match serde_json::to_value(&self.value) {
            Ok(value) => CallToolResult {
                content: self.content,
                structured_content: Some(value),
                ..Default::default()
            },
            Err(e) => CallToolResult::error(format!("the tool's result could not be encoded: {e}")),
        }
    }
}

impl<T: IntoToolResult, E: IntoToolFailure> IntoToolResult for Result<T, E> {
    fn into_tool_result(self) -> CallToolResult {
        match self {
            Ok(v) => v.into_tool_result(),
            Err(e) => e.into_failure(),
        }
    }
}

/// What a tool's `Err` becomes: any [`Display`] error is an `isError` result the model
/// reads; a [`ProtocolError`] is a JSON-RPC error.
pub trait IntoToolFailure {
    /// The failed call.
    fn into_failure(self) -> CallToolResult;
}

impl<E: Display> IntoToolFailure for E {
    fn into_failure(self) -> CallToolResult {
        CallToolResult::error(self.to_string())
    }
}

/// A tool failing with a JSON-RPC error rather than a result: the request is answered
/// with the error (and a task ends `failed` with it), where an ordinary `Err` is a tool
/// result with `isError` that the model reads (and a task that ends `completed`).
///
/// Return it as a tool's error type, or nest results to have both kinds:
///
/// ```
/// use mcp::registry::{ProtocolError, ToolError};
///
/// async fn export(ready: bool) -> Result<Result<String, ToolError>, ProtocolError> {
///     if !ready {
///         // The upstream is down: not something the model can fix by rephrasing.
///         return Err(ProtocolError::internal("the export service is unavailable"));
///     }
///     Ok(Err(ToolError::new("no rows matched")))
/// }
/// ```
///
/// It implements neither `Display` nor `std::error::Error` on purpose: that keeps it
/// apart from the errors that become `isError` results.
#[derive(Clone, Debug, PartialEq)]
pub struct ProtocolError(pub crate::protocol::ErrorObject);

impl ProtocolError {
    /// An error with a JSON-RPC code and message.
    pub fn new(code: i32, message: impl Into<String>) -> Self {
        ProtocolError(crate::protocol::ErrorObject::new(code, message.into()))
    }

    /// -32603, internal error.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(crate::protocol::codes::INTERNAL_ERROR, message)
    }

    /// -32602, invalid params.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(crate::protocol::codes::INVALID_PARAMS, message)
    }

    /// -32042 (2025-11-25): the call cannot proceed until the human completes these
    /// URL-mode elicitations (each with its `elicitationId`); the client presents them and
    /// retries. On 2026-07-28, where -32042 does not exist, a tool call that fails with it
    /// ends instead with an input-required result asking for the same URLs.
    pub fn url_elicitation_required(
        message: impl Into<String>,
        elicitations: Vec<crate::protocol::ElicitUrlParams>,
    ) -> Self {
        ProtocolError(
            crate::protocol::ErrorObject::new(
                crate::protocol::codes::URL_ELICITATION_REQUIRED,
                message.into(),
            )
            .with_data(serde_json::json!({ "elicitations": elicitations })),
        )
    }
}

impl IntoToolFailure for ProtocolError {
    fn into_failure(self) -> CallToolResult {
        CallToolResult::protocol_error(self.0)
    }
}

impl IntoToolResult for ProtocolError {
    fn into_tool_result(self) -> CallToolResult {
        self.into_failure()
    }
}

/// An error a tool reports to the model: its text is what the model reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolError(pub String);

impl ToolError {
    /// An error with a message for the model.
    pub fn new(message: impl Into<String>) -> Self {
        ToolError(message.into())
    }
}

impl Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ToolError {}

impl From<String> for ToolError {
    fn from(s: String) -> Self {
        ToolError(s)
    }
}

impl From<&str> for ToolError {
    fn from(s: &str) -> Self {
        ToolError(s.to_owned())
    }
}

impl From<std::io::Error> for ToolError {
    fn from(e: std::io::Error) -> Self {
        ToolError(e.to_string())
    }
}

/// Why a resource could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ResourceError {
    /// Nothing exists at the URI.
    NotFound,
    /// The request was wrong (a bad variable value, say): -32602 with this text.
    InvalidParams(String),
    /// Reading failed: -32603 with this text.
    Failed(String),
}

impl Display for ResourceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ResourceError::NotFound => f.write_str("resource not found"),
            ResourceError::InvalidParams(m) | ResourceError::Failed(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for ResourceError {}

/// Anything a resource handler may return. `uri` and `mime` are the resource's own, used
/// when the value does not carry them.
#[diagnostic::on_unimplemented(
    message = "a resource cannot return `{Self}`",
    label = "this type does not convert into resource contents",
    note = "return text (String, &'static str), bytes (Vec<u8>, sent as a blob), Json<T>, ResourceContents, Vec<ResourceContents>, or Result<T, E> of one of these with E: Into<ResourceError>"
)]
pub trait IntoResourceContents {
    /// Converts into the read's contents.
    fn into_contents(
        self,
        uri: &str,
        mime: Option<&str>,
    ) -> Result<Vec<ResourceContents>, ResourceError>;
}

impl IntoResourceContents for String {
    fn into_contents(
        self,
        uri: &str,
        mime: Option<&str>,
    ) -> Result<Vec<ResourceContents>, ResourceError> {
        Ok(vec![ResourceContents::text(
            uri,
            Some(mime.unwrap_or("text/plain")),
            self,
        )])
    }
}

impl IntoResourceContents for &'static str {
    fn into_contents(
        self,
        uri: &str,
        mime: Option<&str>,
    ) -> Result<Vec<ResourceContents>, ResourceError> {
        self.to_owned().into_contents(uri, mime)
    }
}

impl IntoResourceContents for Vec<u8> {
    fn into_contents(
        self,
        uri: &str,
        mime: Option<&str>,
    ) -> Result<Vec<ResourceContents>, ResourceError> {
        Ok(vec![ResourceContents::blob(
            uri,
            Some(mime.unwrap_or("application/octet-stream")),
            &self,
        )])
    }
}

impl<T: Serialize> IntoResourceContents for Json<T> {
    fn into_contents(
        self,
        uri: &str,
        mime: Option<&str>,
    ) -> Result<Vec<ResourceContents>, ResourceError> {
        let text = serde_json::to_string(&self.0).map_err(|e| {
            ResourceError::Failed(format!("the resource could not be encoded: {e}"))
        })?;
        Ok(vec![ResourceContents::text(
            uri,
            Some(mime.unwrap_or("application/json")),
            text,
        )])
    }
}

impl IntoResourceContents for ResourceContents {
    fn into_contents(
        self,
        _: &str,
        _: Option<&str>,
    ) -> Result<Vec<ResourceContents>, ResourceError> {
        Ok(vec![self])
    }
}

impl IntoResourceContents for Vec<ResourceContents> {
    fn into_contents(
        self,
        _: &str,
        _: Option<&str>,
    ) -> Result<Vec<ResourceContents>, ResourceError> {
        Ok(self)
    }
}

impl<T: IntoResourceContents, E: Into<ResourceError>> IntoResourceContents for Result<T, E> {
    fn into_contents(
        self,
        uri: &str,
        mime: Option<&str>,
    ) -> Result<Vec<ResourceContents>, ResourceError> {
        self.map_err(Into::into)?.into_contents(uri, mime)
    }
}

impl From<String> for ResourceError {
    fn from(s: String) -> Self {
        ResourceError::Failed(s)
    }
}

impl From<&str> for ResourceError {
    fn from(s: &str) -> Self {
        ResourceError::Failed(s.to_owned())
    }
}

impl From<std::io::Error> for ResourceError {
    fn from(e: std::io::Error) -> Self {
        match e.kind() {
            std::io::ErrorKind::NotFound => ResourceError::NotFound,
            _ => ResourceError::Failed(e.to_string()),
        }
    }
}

impl From<ToolError> for ResourceError {
    fn from(e: ToolError) -> Self {
        ResourceError::Failed(e.0)
    }
}

/// Why a prompt could not be rendered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PromptError {
    /// The arguments were wrong: -32602 with this text.
    InvalidParams(String),
    /// Rendering failed: -32603 with this text.
    Failed(String),
}

impl Display for PromptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PromptError::InvalidParams(m) | PromptError::Failed(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for PromptError {}

impl From<String> for PromptError {
    fn from(s: String) -> Self {
        PromptError::Failed(s)
    }
}

impl From<&str> for PromptError {
    fn from(s: &str) -> Self {
        PromptError::Failed(s.to_owned())
    }
}

impl From<ToolError> for PromptError {
    fn from(e: ToolError) -> Self {
        PromptError::Failed(e.0)
    }
}

/// Anything a prompt handler may return.
#[diagnostic::on_unimplemented(
    message = "a prompt cannot return `{Self}`",
    label = "this type does not convert into a prompt result",
    note = "return text (String, &'static str, sent as one user message), a PromptMessage, Vec<PromptMessage>, a GetPromptResult, or Result<T, E> of one of these with E: Into<PromptError>"
)]
pub trait IntoPromptResult {
    /// Converts into the rendered prompt.
    fn into_prompt_result(self) -> Result<GetPromptResult, PromptError>;
}

impl IntoPromptResult for GetPromptResult {
    fn into_prompt_result(self) -> Result<GetPromptResult, PromptError> {
        Ok(self)
    }
}

impl IntoPromptResult for String {
    fn into_prompt_result(self) -> Result<GetPromptResult, PromptError> {
        Ok(GetPromptResult {
            messages: vec![PromptMessage::user(self)],
            ..Default::default()
        })
    }
}

impl IntoPromptResult for &'static str {
    fn into_prompt_result(self) -> Result<GetPromptResult, PromptError> {
        self.to_owned().into_prompt_result()
    }
}

impl IntoPromptResult for PromptMessage {
    fn into_prompt_result(self) -> Result<GetPromptResult, PromptError> {
        Ok(GetPromptResult {
            messages: vec![self],
            ..Default::default()
        })
    }
}

impl IntoPromptResult for Vec<PromptMessage> {
    fn into_prompt_result(self) -> Result<GetPromptResult, PromptError> {
        Ok(GetPromptResult {
            messages: self,
            ..Default::default()
        })
    }
}

impl<T: IntoPromptResult, E: Into<PromptError>> IntoPromptResult for Result<T, E> {
    fn into_prompt_result(self) -> Result<GetPromptResult, PromptError> {
        self.map_err(Into::into)?.into_prompt_result()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_convert() {
        assert_eq!(5i64.into_tool_result(), CallToolResult::text("5"));
        let r: Result<String, String> = Err("boom".into());
        assert!(r.into_tool_result().is_error());
        let j = Json(serde_json::json!({"a": 1})).into_tool_result();
        assert_eq!(j.structured_content, Some(serde_json::json!({"a": 1})));
        assert_eq!(j.content[0].as_text(), Some("{\"a\":1}"));
    }

    #[test]
    fn resources_convert() {
        let c = "hi".into_contents("x://a", None).unwrap();
        assert_eq!(
            c,
            vec![ResourceContents::text("x://a", Some("text/plain"), "hi")]
        );
        let b = vec![1u8, 2]
            .into_contents("x://b", Some("image/png"))
            .unwrap();
        assert!(matches!(&b[0], ResourceContents::Blob(blob) if blob.blob == "AQI="));
        let e: Result<String, ResourceError> = Err(ResourceError::NotFound);
        assert_eq!(e.into_contents("x://c", None), Err(ResourceError::NotFound));
    }
}
