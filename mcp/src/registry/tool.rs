//! Tool definitions: the listing a client sees, the handler that runs, and the validation
//! applied when a tool is registered.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::BoxFuture;
use super::arguments::{ArgsSchema, ArgumentError, Decoded, ToolArgs, json_text};
use super::output::IntoToolResult;
use crate::context::Ctx;
use crate::protocol::{CallToolResult, Icon, Params, Tool, ToolAnnotations, ToolSchema};
use crate::schema::output_schema_for;

/// Runs a tool. Implemented for closures `Fn(Ctx, ToolArgs) -> impl Future<Output = R>`
/// where `R` converts into a tool result; the macros generate implementations too.
pub trait ToolHandler: Send + Sync + 'static {
    /// Runs one call.
    fn call(&self, ctx: Ctx, args: ToolArgs) -> BoxFuture<CallToolResult>;
}

impl<F, Fut, R> ToolHandler for F
where
    F: Fn(Ctx, ToolArgs) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = R> + Send + 'static,
    R: IntoToolResult,
{
    fn call(&self, ctx: Ctx, args: ToolArgs) -> BoxFuture<CallToolResult> {
        let fut = self(ctx, args);
        // The box first, then the future made in it: `Box::pin(async { .. })` made the
        // wrapper on the stack and copied it, the handler's future with it.
        crate::util::spare_box::fresh_with(move || async move { fut.await.into_tool_result() })
    }
}

/// A tool: its wire definition, its handler, and what the framework needs to guard it.
#[derive(Clone)]
pub struct ToolDef {
    pub(crate) tool: Tool,
    schema: ArgsSchema,
    pub(crate) sensitive: bool,
    pub(crate) scopes: Vec<String>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) handler: Arc<dyn ToolHandler>,
    /// Decodes the arguments into the handler's own type, for tools that have one: the
    /// server runs it before an authorizer decides, so a question is only ever asked about
    /// a call that can run.
    decoder: Option<Decoder>,
    /// Layers of this tool's own, inside the server's.
    pub(crate) layers: Vec<Arc<dyn crate::layers::Layer>>,
    /// The states the handler takes.
    pub(crate) needs: Vec<super::needs::Need>,
    /// Whether it may run as a task.
    pub(crate) task_support: crate::tasks::TaskSupport,
    /// When a 2026-07-28 call becomes a task.
    pub(crate) task_policy: crate::tasks::TaskPolicy,
    /// Whether its arguments and result go on its request's span (the `otel` feature).
    pub(crate) trace_content: bool,
}

/// Decodes the JSON text of a call's arguments as a typed tool's handler would.
type Decoder = fn(&str, &ArgsSchema) -> Result<Decoded, ArgumentError>;

fn decode_as<A: DeserializeOwned + Send + Sync + 'static>(
    text: &str,
    schema: &ArgsSchema,
) -> Result<Decoded, ArgumentError> {
    schema.parse::<A>(text).map(Decoded::new)
}

impl fmt::Debug for ToolDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolDef")
            .field("tool", &self.tool)
            .field("sensitive", &self.sensitive)
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

impl ToolDef {
    /// Says the handler takes `State<T>`: [`ServerBuilder::build`] fails, naming the
    /// handler and the type, unless the server holds (or a start-up hook promises) a state of
    /// that type. The macros add it for every `State<T>` parameter.
    ///
    /// [`ServerBuilder::build`]: crate::ServerBuilder::build
    pub fn requires_state<T: Send + Sync + 'static>(mut self) -> Self {
        super::needs::add::<T>(&mut self.needs);
        self
    }

    /// A tool with a name, a description for the model, a JSON Schema for its arguments
    /// (an object schema, kept verbatim) and a handler.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
        handler: impl ToolHandler,
    ) -> Self {
        Self::with_args_schema(
            name,
            description,
            ArgsSchema::from_value(&input_schema),
            handler,
        )
    }

    /// [`ToolDef::new`] with a schema already worked out (shared by every tool of one
    /// argument type).
    fn with_args_schema(
        name: impl Into<String>,
        description: impl Into<String>,
        schema: ArgsSchema,
        handler: impl ToolHandler,
    ) -> Self {
        ToolDef {
            needs: Vec::new(),
            tool: Tool {
                name: name.into(),
                title: None,
                description: Some(description.into()),
                input_schema: schema.schema().clone(),
                output_schema: None,
                annotations: None,
                icons: None,
                execution: None,
                meta: None,
            },
            schema,
            sensitive: false,
            scopes: Vec::new(),
            timeout: None,
            handler: Arc::new(handler),
            decoder: None,
            layers: Vec::new(),
            task_support: crate::tasks::TaskSupport::Forbidden,
            task_policy: crate::tasks::TaskPolicy::Always,
            trace_content: false,
        }
    }

    /// A tool whose arguments decode into `A`; the input schema is generated from `A`
    /// (schemars, JSON Schema 2020-12) and says `additionalProperties: false`: arguments
    /// `A` does not name are refused (see [`ToolDef::allow_unknown_arguments`]). Bad
    /// arguments become an `isError` result that names the argument, the expected type and
    /// what was sent.
    ///
    /// Behind an authorizer, the server decodes the arguments before the authorizer
    /// decides (it can read them with
    /// [`AuthRequest::arguments_as`](crate::auth::AuthRequest::arguments_as)), and the
    /// handler receives that same value: the arguments are decoded once per call.
    ///
    /// ```
    /// use mcp::registry::ToolDef;
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Add { a: i64, b: i64 }
    /// let add = ToolDef::from_fn("add", "Adds two integers.", |_ctx, args: Add| async move {
    ///     args.a + args.b
    /// });
    /// assert_eq!(add.name(), "add");
    /// assert_eq!(add.input_schema().get("additionalProperties"), Some(false.into()));
    /// ```
    pub fn from_fn<A, F, Fut, R>(
        name: impl Into<String>,
        description: impl Into<String>,
        f: F,
    ) -> Self
    where
        A: DeserializeOwned + schemars::JsonSchema + Send + Sync + 'static,
        F: Fn(Ctx, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = R> + Send + 'static,
        R: IntoToolResult,
    {
        let handler = move |ctx: Ctx, args: ToolArgs| {
            // Decoded before the future is built: a failure costs no call of `f`.
            let call = args.decode::<A>().map(|a| f(ctx, a));
            async move {
                match call {
                    Ok(fut) => fut.await.into_tool_result(),
                    Err(e) => CallToolResult::error(e.to_string()),
                }
            }
        };
        let mut def =
            ToolDef::with_args_schema(name, description, ArgsSchema::of_type::<A>(), handler);
        def.decoder = Some(decode_as::<A>);
        def
    }

    /// Accepts arguments the input schema does not list, and says so: the schema's
    /// `additionalProperties: false` is removed, and unknown arguments are ignored instead
    /// of refused. (A type that denies unknown fields itself,
    /// `#[serde(deny_unknown_fields)]`, still refuses them.)
    ///
    /// ```
    /// use mcp::registry::ToolDef;
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Query { q: String }
    /// let search = ToolDef::from_fn("search", "Searches.", |_ctx, a: Query| async move { a.q })
    ///     .allow_unknown_arguments();
    /// assert!(search.input_schema().get("additionalProperties").is_none());
    /// ```
    pub fn allow_unknown_arguments(mut self) -> Self {
        let mut schema = self.tool.input_schema.to_value();
        if schema.get("additionalProperties") == Some(&Value::Bool(false))
            && let Value::Object(map) = &mut schema
        {
            map.remove("additionalProperties");
            self.schema = ArgsSchema::from_value(&schema);
            self.tool.input_schema = self.schema.schema().clone();
        }
        self
    }

    /// Decodes a call's arguments (their JSON text, `None` when the call had none) as this
    /// tool's handler will, when the tool has a typed handler; `None` otherwise.
    /// A type whose decoding panics is contained as a panicking handler would be.
    pub(crate) fn decode_arguments(
        &self,
        raw: Option<&str>,
    ) -> Option<Result<Decoded, ArgumentError>> {
        let decode = self.decoder?;
        let decoded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            decode(json_text(raw), &self.schema)
        }));
        Some(decoded.unwrap_or_else(|payload| {
            let message = crate::util::panic_message(&payload);
            tracing::error!(target: "mcp::server", tool = %self.name(), panic = %message, "decoding a tool's arguments panicked");
            Err(ArgumentError::new(crate::util::callback_panicked("tool")))
        }))
    }

    /// The arguments handed to the handler, with the value decoded earlier if any.
    pub(crate) fn call_args(&self, raw: Option<Params>, decoded: Option<Decoded>) -> ToolArgs {
        ToolArgs::with_schema(raw, self.schema.clone()).with_decoded(decoded)
    }

    /// The input schema as decoding uses it.
    pub(crate) fn args_schema(&self) -> &ArgsSchema {
        &self.schema
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.tool.name
    }

    /// The wire definition as `tools/list` shows it.
    pub fn tool(&self) -> &Tool {
        &self.tool
    }

    /// The input schema.
    pub fn input_schema(&self) -> &ToolSchema {
        self.schema.schema()
    }

    /// The arguments the input schema mirrors into `Mcp-Param-*` headers (2026-07-28),
    /// worked out when the schema was set. (Read by the HTTP transport only.)
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn header_params(&self) -> &[crate::protocol::tool_schema::HeaderParam] {
        self.schema.mirrored()
    }

    /// Sets a display title.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.tool.title = Some(title.into());
        self
    }

    /// Sets the output schema (the shape of `structuredContent`): a `serde_json::Value`
    /// or a [`ToolSchema`].
    pub fn output_schema(mut self, schema: impl Into<ToolSchema>) -> Self {
        self.tool.output_schema = Some(schema.into());
        self
    }

    /// Sets the output schema from a type (see [`output_schema_for`]): for a tool returning
    /// [`Json<T>`](super::Json) or [`Structured<T>`](super::Structured).
    pub fn output_type<T: schemars::JsonSchema>(self) -> Self {
        self.output_schema(output_schema_for::<T>())
    }

    /// Replaces the annotations.
    pub fn annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.tool.annotations = Some(annotations);
        self
    }

    fn annotations_mut(&mut self) -> &mut ToolAnnotations {
        self.tool.annotations.get_or_insert_with(Default::default)
    }

    /// Marks the tool read-only (`readOnlyHint: true`).
    pub fn read_only(mut self) -> Self {
        self.annotations_mut().read_only_hint = Some(true);
        self
    }

    /// Marks the tool destructive (`destructiveHint: true`), which makes it sensitive: it
    /// will not be served without an authorizer.
    pub fn destructive(mut self) -> Self {
        self.annotations_mut().destructive_hint = Some(true);
        self
    }

    /// Marks the tool idempotent (`idempotentHint: true`).
    pub fn idempotent(mut self) -> Self {
        self.annotations_mut().idempotent_hint = Some(true);
        self
    }

    /// Marks the tool as reaching an open world (`openWorldHint: true`).
    pub fn open_world(mut self) -> Self {
        self.annotations_mut().open_world_hint = Some(true);
        self
    }

    /// Marks the tool sensitive without calling it destructive: it will not be served without
    /// an authorizer.
    pub fn sensitive(mut self) -> Self {
        self.sensitive = true;
        self
    }

    /// Sets icons.
    pub fn icons(mut self, icons: Vec<Icon>) -> Self {
        self.tool.icons = Some(icons);
        self
    }

    /// Sets `_meta` on the definition.
    pub fn meta(mut self, meta: crate::protocol::Meta) -> Self {
        self.tool.meta = Some(meta);
        self
    }

    /// Requires these OAuth scopes of the caller (checked in the tool seam).
    pub fn scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// The OAuth scopes this tool requires.
    pub fn required_scopes(&self) -> &[String] {
        &self.scopes
    }

    /// Adds a layer of this tool's own: it runs for calls of this tool only, inside the
    /// server's layers (see [`crate::layers`]).
    pub fn layer(mut self, layer: impl crate::layers::Layer) -> Self {
        self.layers.push(Arc::new(layer));
        self
    }

    /// Overrides the server's per-call timeout for this tool. A call running as a task
    /// has the server's task time limit instead.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Lets the tool run as a task (see [`crate::tasks`]); `tools/list` says so in
    /// `execution.taskSupport`.
    ///
    /// ```
    /// use mcp::registry::ToolDef;
    /// use mcp::tasks::TaskSupport;
    /// let report = ToolDef::from_fn("report", "Builds the quarterly report.", |_ctx, _: ()| async {
    ///     "done"
    /// })
    /// .task_support(TaskSupport::Optional);
    /// let execution = report.tool().execution.as_ref().unwrap();
    /// assert_eq!(execution.task_support.as_deref(), Some("optional"));
    /// ```
    pub fn task_support(mut self, support: crate::tasks::TaskSupport) -> Self {
        self.task_support = support;
        self.tool.execution = match support {
            crate::tasks::TaskSupport::Forbidden => None,
            s => Some(crate::protocol::ToolExecution {
                task_support: Some(s.as_str().to_owned()),
            }),
        };
        self
    }

    /// When a 2026-07-28 call of this tool becomes a task (default
    /// [`TaskPolicy::Always`](crate::tasks::TaskPolicy::Always)).
    pub fn task_policy(mut self, policy: crate::tasks::TaskPolicy) -> Self {
        self.task_policy = policy;
        self
    }

    /// Records this tool's arguments and result on its request's span
    /// (`gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`) when OpenTelemetry is on
    /// (the `otel` feature). Off by default, and for good reason: both may hold anything a
    /// user typed. Opt in only for tools whose inputs and outputs are not personal.
    pub fn trace_content(mut self) -> Self {
        self.trace_content = true;
        self
    }

    /// Whether the tool may run as a task.
    pub fn task_support_mode(&self) -> crate::tasks::TaskSupport {
        self.task_support
    }

    /// Whether the tool declares itself read-only (`readOnlyHint: true`) and is not marked
    /// sensitive.
    pub fn is_read_only(&self) -> bool {
        !self.is_sensitive()
            && self
                .tool
                .annotations
                .as_ref()
                .is_some_and(|a| a.read_only_hint == Some(true))
    }

    /// Whether the tool must not be served without an authorizer: `destructiveHint` is
    /// literally `true`, or the tool was marked sensitive (builder, macro, or an annotation
    /// member `"sensitive": true`). One-directional: `readOnlyHint` or `destructiveHint:
    /// false` never exempt a tool marked sensitive.
    pub fn is_sensitive(&self) -> bool {
        if self.sensitive {
            return true;
        }
        match &self.tool.annotations {
            Some(a) => {
                a.destructive_hint == Some(true)
                    || a.other.get("sensitive") == Some(&Value::Bool(true))
            }
            None => false,
        }
    }

    /// Checks the definition, collecting every problem in a fixed order.
    pub fn validate(&self) -> Result<(), ToolDefError> {
        let mut problems = Vec::new();
        if let Err(p) = validate_tool_name(&self.tool.name) {
            problems.push(p);
        }
        if self
            .tool
            .description
            .as_deref()
            .is_none_or(|d| d.trim().is_empty())
        {
            problems.push(ToolProblem::MissingDescription);
        }
        if let Err(reason) = object_root(&self.tool.input_schema) {
            problems.push(ToolProblem::InvalidInputSchema(reason));
        }
        if let Some(out) = &self.tool.output_schema
            && !out.is_object()
        {
            problems.push(ToolProblem::InvalidOutputSchema(
                "an output schema must be a JSON object".into(),
            ));
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ToolDefError {
                tool: self.tool.name.clone(),
                problems,
            })
        }
    }
}

fn object_root(schema: &ToolSchema) -> Result<(), String> {
    /// The root's `type`; every other member is skipped unread (a server registering
    /// thousands of tools checks each schema once at start-up).
    #[derive(serde::Deserialize)]
    struct Root {
        #[serde(rename = "type")]
        ty: Option<Value>,
    }
    if !schema.is_object() {
        return Err("the input schema must be a JSON object".into());
    }
    match serde_json::from_str::<Root>(schema.as_str()) {
        Ok(Root {
            ty: Some(Value::String(t)),
        }) if t == "object" => Ok(()),
        Ok(Root { ty: Some(other) }) => Err(format!(
            "the root must have \"type\": \"object\", not {other}"
        )),
        _ => Err("the root must have \"type\": \"object\"".into()),
    }
}

/// Checks a tool name: 1 to 128 characters of `A-Z a-z 0-9 _ - .`.
pub fn validate_tool_name(name: &str) -> Result<(), ToolProblem> {
    if name.is_empty() {
        return Err(ToolProblem::MissingName);
    }
    if name.len() > 128 {
        return Err(ToolProblem::InvalidName(format!(
            "{} characters; at most 128 are allowed",
            name.len()
        )));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
    {
        return Err(ToolProblem::InvalidName(format!(
            "{bad:?} is not allowed; use only A-Z, a-z, 0-9, '_', '-' and '.'"
        )));
    }
    Ok(())
}

/// One problem with a tool definition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToolProblem {
    /// The name is empty.
    MissingName,
    /// The name breaks the naming rule.
    InvalidName(String),
    /// The description is missing or blank.
    MissingDescription,
    /// The input schema is not an object schema.
    InvalidInputSchema(String),
    /// The output schema is not a JSON object.
    InvalidOutputSchema(String),
}

impl fmt::Display for ToolProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolProblem::MissingName => f.write_str("missing name"),
            ToolProblem::InvalidName(r) => write!(f, "invalid name: {r}"),
            ToolProblem::MissingDescription => {
                f.write_str("missing description (the model needs one to know when to call it)")
            }
            ToolProblem::InvalidInputSchema(r) => write!(f, "invalid input schema: {r}"),
            ToolProblem::InvalidOutputSchema(r) => write!(f, "invalid output schema: {r}"),
        }
    }
}

/// Every problem found with one tool definition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolDefError {
    /// The tool's name as given.
    pub tool: String,
    /// The problems, in check order.
    pub problems: Vec<ToolProblem>,
}

impl fmt::Display for ToolDefError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "tool {:?}: ", self.tool)?;
        for (i, p) in self.problems.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{p}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ToolDefError {}

/// A serialized listing entry: the definition as JSON, computed once at registration.
#[derive(Debug)]
pub(crate) struct Listed<T> {
    pub(crate) def: T,
    pub(crate) json: Box<serde_json::value::RawValue>,
}

impl<T> Listed<T> {
    pub(crate) fn new<W: Serialize>(def: T, wire: &W) -> Self {
        Listed {
            json: crate::protocol::jsonrpc::to_raw(wire),
            def,
        }
    }
}
