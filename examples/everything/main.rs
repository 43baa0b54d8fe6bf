//! Everything: the whole API in one server, and the fixture server of the official MCP
//! conformance suite (`@modelcontextprotocol/conformance`), for both protocol eras.
//!
//! Every tool, resource and prompt the suite's server scenarios call is here, written with
//! the framework's own macros: content of every type, errors the model reads, progress,
//! logging, sampling, elicitation (typed forms and raw schemas with defaults and enums),
//! roots, the 2026-07-28 input-required rounds with sealed request state, a capability a
//! tool requires, resources (text, binary, a template, one that changes), subscriptions,
//! prompts (arguments, completion, embedded resources, images, one that asks first),
//! list-changed triggers, a tool whose input schema is kept verbatim, an argument mirrored
//! into an HTTP header (`x-mcp-header`), a small note
//! store with a destructive tool that the authorizer asks the human about, and a ledger
//! whose destructive `charge` is counted where a test can read it (`ledger://{account}`).
//!
//! ```text
//! cargo run -p mcp-examples --bin everything                # serve on stdio
//! cargo run -p mcp-examples --bin everything -- --list      # print what it offers
//! cargo run -p mcp-examples --bin everything -- --transport http --bind 127.0.0.1:3000
//! ```

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use mcp::context::ClientCapability;
use mcp::elicit::ClientRequestError;
use mcp::extract::State;
use mcp::prelude::*;
use mcp::protocol::{CreateMessageRequestParams, ElicitResult};
use mcp::registry::ToolArgs;
use mcp::{Ctx, ServerBuilder};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// An 8×8 PNG (a gradient), the image of every image fixture.
const PNG: &[u8] = include_bytes!("assets/gradient.png");
/// 40 ms of a 440 Hz tone, 8 kHz 8-bit mono PCM: the audio fixture.
const WAV: &[u8] = include_bytes!("assets/tone.wav");

/// The URI of the resource that changes (and that clients subscribe to).
const WATCHED: &str = "test://watched-resource";

// ------------------------------------------------------------------------------------------
// Content of every type
// ------------------------------------------------------------------------------------------

/// Returns one text block.
#[tool(read_only, idempotent)]
async fn test_simple_text() -> &'static str {
    "This is a simple text response for testing."
}

/// Returns one image block (a PNG, base64 on the wire).
#[tool(read_only, idempotent)]
async fn test_image_content() -> ContentBlock {
    ContentBlock::image(PNG, "image/png")
}

/// Returns one audio block (a WAV, base64 on the wire).
#[tool(read_only, idempotent)]
async fn test_audio_content() -> ContentBlock {
    ContentBlock::audio(WAV, "audio/wav")
}

/// Returns an embedded text resource.
#[tool(read_only, idempotent)]
async fn test_embedded_resource() -> ContentBlock {
    ContentBlock::embedded(ResourceContents::text(
        "test://embedded-resource",
        Some("text/plain"),
        "This is an embedded resource content.",
    ))
}

/// Returns text, an image and an embedded JSON resource in one result.
#[tool(read_only, idempotent)]
async fn test_multiple_content_types() -> Vec<ContentBlock> {
    vec![
        ContentBlock::text("Multiple content types test:"),
        ContentBlock::image(PNG, "image/png"),
        ContentBlock::embedded(ResourceContents::text(
            "test://mixed-content-resource",
            Some("application/json"),
            json!({"test": "data", "value": 123}).to_string(),
        )),
    ]
}

/// Always fails: the failure is a tool result with `isError: true` that the model reads,
/// not a protocol error.
#[tool(read_only, idempotent)]
async fn test_error_handling() -> Result<String, ToolError> {
    Err(ToolError::new(
        "This tool intentionally returns an error for testing",
    ))
}

// ------------------------------------------------------------------------------------------
// Progress and logging
// ------------------------------------------------------------------------------------------

/// Reports progress 0, 50 and 100 of 100, about 50 ms apart (when the caller sent a
/// progress token); stops early if the call is cancelled.
#[tool(read_only)]
async fn test_tool_with_progress(ctx: Ctx) -> Result<String, ToolError> {
    for (i, step) in [0.0, 50.0, 100.0].into_iter().enumerate() {
        if i > 0 {
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_millis(50)) => {}
                _ = ctx.cancelled() => return Err(ToolError::new("cancelled")),
            }
        }
        let message = format!("Completed step {step} of 100");
        ctx.progress(step, Some(100.0), Some(&message));
    }
    Ok("Progress reported: 0, 50 and 100 of 100".to_owned())
}

/// Sends three `info` log messages while it runs, about 50 ms apart.
#[tool(read_only)]
async fn test_tool_with_logging(ctx: Ctx) -> &'static str {
    ctx.info("Tool execution started");
    tokio::time::sleep(Duration::from_millis(50)).await;
    ctx.info("Tool processing data");
    tokio::time::sleep(Duration::from_millis(50)).await;
    ctx.info("Tool execution completed");
    "Tool with logging executed successfully"
}

/// Logs one `info` message: on 2026-07-28 it reaches the client only when the request
/// named a log level in its `_meta`.
#[tool(read_only)]
async fn test_logging_tool(ctx: Ctx) -> &'static str {
    ctx.info("Diagnostic trace logging activated");
    "Logging evaluated"
}

// ------------------------------------------------------------------------------------------
// Sampling, elicitation, roots: asking the client
// ------------------------------------------------------------------------------------------

/// Asks the client's model to answer a prompt (`sampling/createMessage`, 100 tokens at most)
/// and returns what it said.
#[tool(read_only)]
async fn test_sampling(
    ctx: Ctx,
    /// The prompt to send to the model.
    prompt: String,
) -> Result<String, ClientRequestError> {
    let reply = ctx
        .sample(CreateMessageRequestParams::ask(prompt, 100))
        .await?;
    Ok(format!(
        "LLM response: {}",
        reply.text().unwrap_or("(no text)")
    ))
}

/// Who is asking: the form of `test_elicitation`, generated from this type.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
struct UserInfo {
    /// Your user name.
    username: String,
    /// Your email address.
    #[schemars(email)]
    email: String,
}

/// Asks the human for a user name and an email address (a form generated from a Rust type)
/// and reports what they did.
#[tool(read_only)]
async fn test_elicitation(
    ctx: Ctx,
    /// The message to show the human.
    message: String,
) -> Result<String, ClientRequestError> {
    Ok(match ctx.elicit::<UserInfo>(&message).await? {
        Elicitation::Accepted(info) => format!(
            "User response: action=accept, content={}",
            serde_json::to_string(&info).unwrap_or_default()
        ),
        Elicitation::Declined => "User response: action=decline".to_owned(),
        Elicitation::Cancelled => "User response: action=cancel".to_owned(),
    })
}

/// How an elicitation ended, as text.
fn describe(result: &ElicitResult) -> String {
    format!(
        "Elicitation completed: action={}, content={}",
        serde_json::to_value(result.action).unwrap_or_default(),
        serde_json::to_string(&result.content.clone().unwrap_or_default()).unwrap_or_default()
    )
}

/// Asks for a form whose fields all have defaults (SEP-1034): a string, an integer, a
/// number, an enum and a boolean.
#[tool(read_only)]
async fn test_elicitation_sep1034_defaults(ctx: Ctx) -> Result<String, ClientRequestError> {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "User name", "default": "John Doe"},
            "age": {"type": "integer", "description": "User age", "default": 30},
            "score": {"type": "number", "description": "User score", "default": 95.5},
            "status": {
                "type": "string",
                "description": "User status",
                "enum": ["active", "inactive", "pending"],
                "default": "active"
            },
            "verified": {"type": "boolean", "description": "Verification status", "default": true}
        },
        "required": []
    });
    let result = ctx
        .elicit_schema(
            "Please review and update the form fields with defaults",
            schema,
        )
        .await?;
    Ok(describe(&result))
}

/// Asks for a form with each of the five enum forms (SEP-1330): untitled and titled single
/// choice, the legacy `enumNames`, untitled and titled multiple choice.
#[tool(read_only)]
async fn test_elicitation_sep1330_enums(ctx: Ctx) -> Result<String, ClientRequestError> {
    let schema = json!({
        "type": "object",
        "properties": {
            "untitledSingle": {
                "type": "string",
                "description": "Select one option",
                "enum": ["option1", "option2", "option3"]
            },
            "titledSingle": {
                "type": "string",
                "description": "Select one option with titles",
                "oneOf": [
                    {"const": "value1", "title": "First Option"},
                    {"const": "value2", "title": "Second Option"},
                    {"const": "value3", "title": "Third Option"}
                ]
            },
            "legacyEnum": {
                "type": "string",
                "description": "Select one option (legacy)",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"]
            },
            "untitledMulti": {
                "type": "array",
                "description": "Select multiple options",
                "minItems": 1,
                "maxItems": 3,
                "items": {"type": "string", "enum": ["option1", "option2", "option3"]}
            },
            "titledMulti": {
                "type": "array",
                "description": "Select multiple options with titles",
                "minItems": 1,
                "maxItems": 3,
                "items": {
                    "anyOf": [
                        {"const": "value1", "title": "First Choice"},
                        {"const": "value2", "title": "Second Choice"},
                        {"const": "value3", "title": "Third Choice"}
                    ]
                }
            }
        },
        "required": []
    });
    let result = ctx
        .elicit_schema("Please select options from the enum fields", schema)
        .await?;
    Ok(describe(&result))
}

/// Needs a client that declared `sampling`: on 2026-07-28 a request without it is refused
/// with -32021 (MissingRequiredClientCapability) naming the capability.
#[tool(read_only)]
async fn test_missing_capability(ctx: Ctx) -> Result<&'static str, ToolError> {
    ctx.require(ClientCapability::Sampling)
        .await
        .map_err(|_| ToolError::new("this tool needs a client that supports sampling"))?;
    Ok("Success: the client declared sampling")
}

/// A confirmation with one boolean.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct Confirm {
    /// Whether to go ahead.
    ok: bool,
}

/// Reports progress (when the caller sent a token), then asks the human to confirm: its
/// response stream carries notifications and the final response, never a request of its own
/// on 2026-07-28.
#[tool(read_only)]
async fn test_streaming_elicitation(ctx: Ctx) -> Result<String, ClientRequestError> {
    ctx.progress(50.0, Some(100.0), Some("waiting for confirmation"));
    let answer = ctx
        .elicit::<Confirm>("Continue streaming?")
        .key("confirm")
        .await?;
    ctx.progress(100.0, Some(100.0), Some("done"));
    Ok(match answer {
        Elicitation::Accepted(Confirm { ok: true }) => "Streaming complete".to_owned(),
        _ => "Streaming stopped".to_owned(),
    })
}

// ------------------------------------------------------------------------------------------
// Input-required rounds (2026-07-28). The same code serves the handshake era, where each ask
// is a request to the client awaited in place.
// ------------------------------------------------------------------------------------------

/// A name typed by the human.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct Name {
    /// Your name.
    name: String,
}

/// A favourite colour.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct Colour {
    /// Your favourite colour.
    color: String,
}

/// Asks the human's name (input key `user_name`) and greets them.
#[tool(read_only)]
async fn test_input_required_result_elicitation(ctx: Ctx) -> Result<String, ClientRequestError> {
    Ok(
        match ctx
            .elicit::<Name>("What is your name?")
            .key("user_name")
            .await?
        {
            Elicitation::Accepted(Name { name }) => format!("Hello, {name}!"),
            _ => "Hello, stranger!".to_owned(),
        },
    )
}

/// Asks the client's model a question (input key `capital_question`) and returns the answer.
#[tool(read_only)]
async fn test_input_required_result_sampling(ctx: Ctx) -> Result<String, ClientRequestError> {
    let reply = ctx
        .sample(CreateMessageRequestParams::ask(
            "What is the capital of France?",
            100,
        ))
        .key("capital_question")
        .await?;
    Ok(format!(
        "Sampling result: {}",
        reply.text().unwrap_or("(no text)")
    ))
}

/// Asks the client for its roots (input key `client_roots`) and lists them.
#[tool(read_only)]
async fn test_input_required_result_list_roots(ctx: Ctx) -> Result<String, ClientRequestError> {
    let roots = ctx.roots().key("client_roots").await?;
    let uris: Vec<&str> = roots.iter().map(|r| r.uri.as_str()).collect();
    Ok(format!(
        "Found {} root(s): {}",
        roots.len(),
        uris.join(", ")
    ))
}

/// What `test_input_required_result_request_state` carries from one round to the next.
#[derive(Debug, Deserialize, Serialize)]
struct Started {
    kind: String,
    round: u32,
}

/// Stores state for its next round (sealed inside `requestState`), asks for a confirmation
/// (input key `confirm`), and on the retry checks that the state came back intact.
#[tool(read_only)]
async fn test_input_required_result_request_state(ctx: Ctx) -> Result<String, ClientRequestError> {
    let carried = ctx.request_state::<Started>();
    if carried.is_none() {
        ctx.set_request_state(&Started {
            kind: "request-state".to_owned(),
            round: 1,
        });
    }
    let answer = ctx
        .elicit::<Confirm>("Please confirm")
        .key("confirm")
        .await?;
    let confirmed = matches!(answer, Elicitation::Accepted(Confirm { ok: true }));
    Ok(match (carried, ctx.protocol_version().era()) {
        (Some(s), _) if s.kind == "request-state" && confirmed => {
            format!("state-ok: requestState validated (from round {})", s.round)
        }
        // On the handshake era the handler never stopped, so there was nothing to carry.
        (None, mcp::protocol::Era::Handshake) if confirmed => {
            "state-ok: confirmed in one call".to_owned()
        }
        _ => "not confirmed".to_owned(),
    })
}

/// Asks three things at once (a name, a model's greeting, the client's roots) with
/// `tokio::join!`: one input-required result carries all three questions.
#[tool(read_only)]
async fn test_input_required_result_multiple_inputs(
    ctx: Ctx,
) -> Result<String, ClientRequestError> {
    let (name, greeting, roots) = tokio::join!(
        ctx.elicit::<Name>("What is your name?").key("user_name"),
        ctx.sample(CreateMessageRequestParams::ask("Generate a greeting", 50))
            .key("greeting"),
        ctx.roots().key("client_roots"),
    );
    let name = match name? {
        Elicitation::Accepted(Name { name }) => name,
        _ => "stranger".to_owned(),
    };
    let greeting = greeting?;
    Ok(format!(
        "Name: {name}; Greeting: {}; Roots: {}",
        greeting.text().unwrap_or("(no text)"),
        roots?.len()
    ))
}

/// Two questions one after the other (`step1`, then `step2`): three rounds, the sealed
/// state growing with each answer.
#[tool(read_only)]
async fn test_input_required_result_multi_round(ctx: Ctx) -> Result<String, ClientRequestError> {
    let name = match ctx
        .elicit::<Name>("Step 1: What is your name?")
        .key("step1")
        .await?
    {
        Elicitation::Accepted(Name { name }) => name,
        _ => return Ok("Multi-round stopped at step 1".to_owned()),
    };
    let color = match ctx
        .elicit::<Colour>("Step 2: What is your favorite color?")
        .key("step2")
        .await?
    {
        Elicitation::Accepted(Colour { color }) => color,
        _ => return Ok(format!("Multi-round stopped at step 2 for {name}")),
    };
    Ok(format!("Multi-round complete for {name} who likes {color}"))
}

/// Asks for a confirmation; its `requestState` is HMAC-sealed by the framework, so a
/// tampered one is refused with invalid params before this code runs again.
#[tool(read_only)]
async fn test_input_required_result_tampered_state(ctx: Ctx) -> Result<String, ClientRequestError> {
    ctx.elicit::<Confirm>("Please confirm")
        .key("confirm")
        .await?;
    Ok("integrity-ok: state verified".to_owned())
}

/// A value typed by the human.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct Answer {
    /// Any value.
    value: String,
}

/// Asks only what the client declared it can answer: an elicitation (`elicit_input`) and/or
/// a sampling request (`sample_input`).
#[tool(read_only)]
async fn test_input_required_result_capabilities(ctx: Ctx) -> Result<String, ClientRequestError> {
    let can_elicit = ctx.client_supports(ClientCapability::Elicitation);
    let can_sample = ctx.client_supports(ClientCapability::Sampling);
    if !can_elicit && !can_sample {
        return Ok("No supported capabilities declared".to_owned());
    }
    let elicit = async {
        if can_elicit {
            ctx.elicit::<Answer>("Elicitation input")
                .key("elicit_input")
                .await
                .map(|answer| match answer {
                    Elicitation::Accepted(Answer { value }) => {
                        Some(format!("elicit_input={value}"))
                    }
                    _ => Some("elicit_input".to_owned()),
                })
        } else {
            Ok(None)
        }
    };
    let sample = async {
        if can_sample {
            ctx.sample(CreateMessageRequestParams::ask("Sample request", 50))
                .key("sample_input")
                .await
                .map(|_| Some("sample_input".to_owned()))
        } else {
            Ok(None)
        }
    };
    let (elicited, sampled) = tokio::join!(elicit, sample);
    let received: Vec<String> = [elicited?, sampled?].into_iter().flatten().collect();
    Ok(format!("capabilities-ok: received {}", received.join(",")))
}

// ------------------------------------------------------------------------------------------
// Changing lists and resources at run time
// ------------------------------------------------------------------------------------------

/// The tool `test_trigger_tool_change` adds and removes.
const DYNAMIC_TOOL: &str = "test_dynamic_tool";
/// The prompt `test_trigger_prompt_change` adds and removes.
const DYNAMIC_PROMPT: &str = "test_dynamic_prompt";

/// Adds the tool `test_dynamic_tool`, or removes it if present: clients are told the tool
/// list changed (`notifications/tools/list_changed`, on listen streams on 2026-07-28).
#[tool]
async fn test_trigger_tool_change(ctx: Ctx) -> Result<String, ToolError> {
    let server = ctx.server();
    let registry = server.registry();
    if registry.remove_tool(DYNAMIC_TOOL) {
        return Ok(format!("Tool list changed: removed {DYNAMIC_TOOL}"));
    }
    let tool = ToolDef::new(
        DYNAMIC_TOOL,
        "A tool that exists only between two calls of test_trigger_tool_change.",
        json!({"type": "object", "additionalProperties": false}),
        |_ctx: Ctx, _args: ToolArgs| async { "I come and go." },
    )
    .read_only();
    registry
        .replace_tool(tool)
        .map_err(|e| ToolError::new(e.to_string()))?;
    Ok(format!("Tool list changed: added {DYNAMIC_TOOL}"))
}

/// Adds the prompt `test_dynamic_prompt`, or removes it if present: clients are told the
/// prompt list changed.
#[tool]
async fn test_trigger_prompt_change(ctx: Ctx) -> Result<String, ToolError> {
    let server = ctx.server();
    let registry = server.registry();
    if registry.remove_prompt(DYNAMIC_PROMPT) {
        return Ok(format!("Prompt list changed: removed {DYNAMIC_PROMPT}"));
    }
    let prompt = PromptDef::new(
        DYNAMIC_PROMPT,
        "A prompt that exists only between two calls of test_trigger_prompt_change.",
        |_ctx: Ctx, _args: mcp::registry::PromptArgs| async { "Say something new." },
    );
    registry
        .register_prompt(prompt)
        .map_err(|e| ToolError::new(e.to_string()))?;
    Ok(format!("Prompt list changed: added {DYNAMIC_PROMPT}"))
}

/// How many times `test://watched-resource` changed (the server's state).
#[derive(Default)]
struct Watched {
    revision: AtomicU64,
}

/// Changes `test://watched-resource`: subscribers get `notifications/resources/updated`.
#[tool]
async fn test_update_watched_resource(ctx: Ctx, watched: State<Watched>) -> String {
    let revision = watched.revision.fetch_add(1, Ordering::SeqCst) + 1;
    ctx.server().resource_updated(WATCHED);
    format!("{WATCHED} is now at revision {revision}")
}

// ------------------------------------------------------------------------------------------
// An argument mirrored into an HTTP header (2026-07-28, SEP-2243)
// ------------------------------------------------------------------------------------------

/// Where to look something up.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct Lookup {
    /// The region. On 2026-07-28 over HTTP the client also sends it as the
    /// `Mcp-Param-Region` header, which the transport checks against this value.
    #[schemars(extend("x-mcp-header" = "Region"))]
    region: String,
}

/// Echoes a region that clients also send as the `Mcp-Param-Region` header (`x-mcp-header`
/// in its input schema), so gateways can route on it without reading the body.
#[tool(read_only, idempotent)]
async fn test_header_param(#[args] lookup: Lookup) -> String {
    format!("region: {}", lookup.region)
}

// ------------------------------------------------------------------------------------------
// A note store: structured output, a template with completion, a guarded destructive tool
// ------------------------------------------------------------------------------------------

/// The note store: the server's state, shared by the tools, the resource, its completer
/// and the prompt.
struct Notes {
    by_id: Mutex<BTreeMap<String, String>>,
}

impl Notes {
    /// The store with its welcome note.
    fn new() -> Self {
        Notes {
            by_id: Mutex::new(BTreeMap::from([(
                "welcome".to_owned(),
                "Welcome to the everything server: every MCP feature in one place.".to_owned(),
            )])),
        }
    }
}

/// A stored note.
#[derive(Debug, Serialize, schemars::JsonSchema)]
struct Note {
    /// Its id (also its URI: `note://<id>`).
    id: String,
    /// Its text.
    text: String,
    /// How many notes are stored now.
    total: usize,
}

/// Stores a note (replacing one with the same id) and returns it as structured content.
#[tool(idempotent)]
async fn add_note(
    notes: State<Notes>,
    /// The note's id: letters, digits, `-` and `_`.
    id: String,
    /// The note's text.
    text: String,
) -> Result<Json<Note>, ToolError> {
    if id.is_empty()
        || !id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(ToolError::new(format!(
            "the id {id:?} must be non-empty and use only letters, digits, `-` and `_`"
        )));
    }
    let mut notes = notes.by_id.lock();
    notes.insert(id.clone(), text.clone());
    Ok(Json(Note {
        id,
        text,
        total: notes.len(),
    }))
}

/// Deletes a note for good. Destructive: the authorizer asks the human first.
#[tool(destructive)]
async fn delete_note(
    notes: State<Notes>,
    /// The id of the note to delete.
    id: String,
) -> Result<String, ToolError> {
    match notes.by_id.lock().remove(&id) {
        Some(_) => Ok(format!("deleted note {id}")),
        None => Err(ToolError::new(format!(
            "there is no note {id:?}; read the resource list to see which exist"
        ))),
    }
}

// ------------------------------------------------------------------------------------------
// A ledger: a destructive tool whose runs can be counted from outside
// ------------------------------------------------------------------------------------------

/// What `charge` did, per account: how many charges ran and the sum of their ids. The
/// cluster soak (`tests/tests/soak_cluster.rs`) reads it through `ledger://{account}` on
/// every replica to check that each approved charge ran exactly once and each declined or
/// unanswered one never. Two numbers per account, at most [`LEDGER_ACCOUNTS`] accounts: its
/// memory is bounded however long the server runs.
#[derive(Default)]
struct Ledger {
    accounts: Mutex<BTreeMap<String, Account>>,
}

/// How many accounts the ledger keeps; a charge to a new one beyond it is refused.
const LEDGER_ACCOUNTS: usize = 1024;

/// One account of the ledger.
#[derive(Clone, Copy, Debug, Default, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Account {
    /// How many charges ran.
    charges: u64,
    /// The sum of their ids (wrapping).
    id_sum: u64,
}

/// Charges an account once, recording the charge's id in the ledger (`ledger://{account}`).
/// Destructive: the authorizer asks the human first.
#[tool(destructive)]
async fn charge(
    ledger: State<Ledger>,
    /// The account to charge.
    account: String,
    /// The caller's id for this charge.
    id: u64,
) -> Result<String, ToolError> {
    let mut accounts = ledger.accounts.lock();
    if !accounts.contains_key(&account) && accounts.len() >= LEDGER_ACCOUNTS {
        return Err(ToolError::new(format!(
            "the ledger keeps {LEDGER_ACCOUNTS} accounts; charge one of those"
        )));
    }
    let entry = accounts.entry(account.clone()).or_default();
    entry.charges += 1;
    entry.id_sum = entry.id_sum.wrapping_add(id);
    Ok(format!("charged {account} ({id})"))
}

/// An account of this process's ledger: how many charges ran and the sum of their ids
/// (zero for an account never charged).
#[resource("ledger://{account}", mime = "application/json")]
async fn ledger(ledger: State<Ledger>, account: String) -> Json<Account> {
    Json(
        ledger
            .accounts
            .lock()
            .get(&account)
            .copied()
            .unwrap_or_default(),
    )
}

/// The ids of the stored notes that start with what was typed.
async fn note_ids(request: CompletionRequest) -> Vec<String> {
    let Some(notes) = request.state::<Notes>() else {
        return Vec::new();
    };
    notes
        .by_id
        .lock()
        .keys()
        .filter(|id| id.starts_with(&request.value))
        .cloned()
        .collect()
}

/// Every stored note, for `resources/list`.
async fn all_notes(ctx: Ctx) -> Vec<Resource> {
    let Some(notes) = ctx.state::<Notes>() else {
        return Vec::new();
    };
    notes
        .by_id
        .lock()
        .keys()
        .map(|id| Resource::new(format!("note://{id}"), format!("note {id}")))
        .collect()
}

/// A stored note, by id.
#[resource("note://{id}", mime = "text/plain", list = all_notes)]
async fn note(
    notes: State<Notes>,
    #[arg(complete = note_ids)] id: String,
) -> Result<String, ResourceError> {
    notes
        .by_id
        .lock()
        .get(&id)
        .cloned()
        .ok_or(ResourceError::NotFound)
}

/// Asks for a one-sentence summary of a stored note.
#[prompt(title = "Summarize a note")]
async fn summarize(
    notes: State<Notes>,
    /// The id of the note.
    #[arg(complete = note_ids)]
    id: String,
) -> Result<String, PromptError> {
    let text = notes
        .by_id
        .lock()
        .get(&id)
        .cloned()
        .ok_or_else(|| PromptError::InvalidParams(format!("there is no note {id:?}")))?;
    Ok(format!("Summarize this note in one sentence:\n\n{text}"))
}

// ------------------------------------------------------------------------------------------
// Resources
// ------------------------------------------------------------------------------------------

/// A static text resource.
#[resource(
    "test://static-text",
    mime = "text/plain",
    title = "Static Text Resource"
)]
async fn static_text() -> &'static str {
    "This is the content of the static text resource."
}

/// A static binary resource (a PNG image).
#[resource(
    "test://static-binary",
    mime = "image/png",
    title = "Static Binary Resource"
)]
async fn static_binary() -> Vec<u8> {
    PNG.to_vec()
}

/// JSON data for any id (a resource template).
#[resource(
    "test://template/{id}/data",
    mime = "application/json",
    title = "Resource Template"
)]
async fn template_data(#[arg(complete = ["1", "42", "123"])] id: String) -> Json<Value> {
    Json(json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")}))
}

/// A resource that changes when `test_update_watched_resource` is called; subscribe to it.
#[resource(
    "test://watched-resource",
    mime = "text/plain",
    title = "Watched Resource"
)]
async fn watched_resource(watched: State<Watched>) -> String {
    format!(
        "Watched resource content (revision {})",
        watched.revision.load(Ordering::SeqCst)
    )
}

// ------------------------------------------------------------------------------------------
// Prompts
// ------------------------------------------------------------------------------------------

/// A simple prompt without arguments.
#[prompt(title = "Simple Test Prompt")]
async fn test_simple_prompt() -> &'static str {
    "This is a simple prompt for testing."
}

/// A prompt with two required arguments; `arg1` completes.
#[prompt(title = "Prompt With Arguments")]
async fn test_prompt_with_arguments(
    /// The first argument.
    #[arg(complete = ["alpha", "beta", "gamma"])]
    arg1: String,
    /// The second argument.
    arg2: String,
) -> String {
    format!("Prompt with arguments: arg1='{arg1}', arg2='{arg2}'")
}

/// A prompt that embeds a resource, then asks about it.
#[prompt(title = "Prompt With Embedded Resource")]
async fn test_prompt_with_embedded_resource(
    /// The URI of the resource to embed.
    #[arg(rename = "resourceUri")]
    resource_uri: String,
) -> Vec<PromptMessage> {
    vec![
        PromptMessage::user(ContentBlock::embedded(ResourceContents::text(
            resource_uri,
            Some("text/plain"),
            "Embedded resource content for testing.",
        ))),
        PromptMessage::user("Please process the embedded resource above."),
    ]
}

/// A prompt with an image, then a question about it.
#[prompt(title = "Prompt With Image")]
async fn test_prompt_with_image() -> Vec<PromptMessage> {
    vec![
        PromptMessage::user(ContentBlock::image(PNG, "image/png")),
        PromptMessage::user("Please analyze the image above."),
    ]
}

/// Context for a prompt, typed by the human.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct PromptContext {
    /// What the prompt should be about.
    context: String,
}

/// A prompt that first asks the human for context (input key `user_context`).
#[prompt(title = "Prompt That Asks First")]
async fn test_input_required_result_prompt(ctx: Ctx) -> Result<String, PromptError> {
    let context = match ctx
        .elicit::<PromptContext>("What context should the prompt use?")
        .key("user_context")
        .await
    {
        Ok(Elicitation::Accepted(c)) => c.context,
        Ok(_) => "none given".to_owned(),
        Err(e) => {
            return Err(PromptError::Failed(format!(
                "could not ask for context: {e}"
            )));
        }
    };
    Ok(format!("Prompt with context: {context}"))
}

// ------------------------------------------------------------------------------------------
// A tool defined without the macros: its input schema is kept verbatim
// ------------------------------------------------------------------------------------------

/// The input schema of `json_schema_2020_12_tool`: the JSON Schema 2020-12 vocabulary
/// (`$schema`, `$defs` with `$anchor`, `$ref`, `allOf`/`anyOf`, `if`/`then`/`else`,
/// `additionalProperties`), which the framework serves exactly as written.
fn json_schema_2020_12() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {
                    "street": {"type": "string"},
                    "city": {"type": "string"}
                }
            }
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"}
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": false
    })
}

/// Adds what the macros do not express to the builder: here, a tool with a hand-written
/// schema.
fn configure(builder: ServerBuilder) -> ServerBuilder {
    builder.tool(
        ToolDef::new(
            "json_schema_2020_12_tool",
            "Echoes its arguments; its input schema uses JSON Schema 2020-12 features, served verbatim.",
            json_schema_2020_12(),
            |_ctx: Ctx, args: ToolArgs| async move {
                format!("JSON Schema 2020-12 tool called with: {}", args.raw_json())
            },
        )
        .read_only(),
    )
}

// ------------------------------------------------------------------------------------------
// Tasks (2025-11-25 core tasks; the 2026-07-28 tasks extension)
// ------------------------------------------------------------------------------------------

/// Greets someone; never a task.
#[tool(read_only, idempotent)]
async fn greet(name: String) -> String {
    format!("Hello, {name}!")
}

/// Computes slowly (`seconds`, then answers); runs as a task when the client allows it,
/// and stops when the task is cancelled.
#[tool(read_only, task = "optional")]
async fn slow_compute(ctx: Ctx, seconds: f64, label: Option<String>) -> String {
    let wait = Duration::from_secs_f64(seconds.clamp(0.0, 3600.0));
    tokio::select! {
        _ = tokio::time::sleep(wait) => {}
        _ = ctx.cancelled() => return "cancelled".into(),
    }
    match label {
        Some(label) => format!("{label}: computed after {seconds} s"),
        None => format!("computed after {seconds} s"),
    }
}

/// Works for about a second, then fails with an error the model reads. Only ever a task.
#[tool(read_only, task = "required")]
async fn failing_job() -> Result<String, ToolError> {
    tokio::time::sleep(Duration::from_secs(1)).await;
    Err(ToolError::new(
        "the job failed: the input data is inconsistent",
    ))
}

/// Works briefly, then fails with a JSON-RPC error (a failed task, not a tool error).
#[tool(read_only, task = "optional")]
async fn protocol_error_job() -> Result<String, ProtocolError> {
    tokio::time::sleep(Duration::from_millis(300)).await;
    Err(ProtocolError::internal("the job's backend is unavailable"))
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct Confirmation {
    /// Whether to go ahead.
    confirm: bool,
}

/// Looks a file up, then asks the human to confirm deleting it (nothing is deleted: it
/// is a fixture). Only ever a task: the question becomes one of its input requests.
#[tool(read_only, task = "required")]
async fn confirm_delete(ctx: Ctx, filename: String) -> Result<String, ClientRequestError> {
    // Finding the file takes a moment: by then the call is a task.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let answer = ctx
        .elicit::<Confirmation>(&format!("Delete {filename}?"))
        .await?;
    Ok(match answer {
        Elicitation::Accepted(Confirmation { confirm: true }) => format!("Deleted {filename}"),
        _ => format!("Kept {filename}"),
    })
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct Details {
    /// A name.
    name: Option<String>,
    /// Whether to go ahead.
    confirm: Option<bool>,
}

/// Asks two questions at once inside a task, and answers once both are answered.
#[tool(read_only, task = "required")]
async fn multi_input(ctx: Ctx) -> Result<String, ClientRequestError> {
    tokio::time::sleep(Duration::from_millis(50)).await;
    let (first, second) = tokio::join!(
        ctx.elicit::<Details>("Who is this for?").key("who"),
        ctx.elicit::<Details>("Go ahead?").key("confirm"),
    );
    let describe = |e: Elicitation<Details>| match e {
        Elicitation::Accepted(d) => format!(
            "{} ({})",
            d.name.unwrap_or_else(|| "nobody".into()),
            if d.confirm == Some(true) {
                "confirmed"
            } else {
                "not confirmed"
            }
        ),
        Elicitation::Declined => "declined".into(),
        Elicitation::Cancelled => "cancelled".into(),
    };
    Ok(format!("{}; {}", describe(first?), describe(second?)))
}

/// Asks a name first (an input-required round, before any task), then works as a task.
#[tool(read_only, task = "required")]
async fn test_tool_with_task(ctx: Ctx) -> Result<String, ClientRequestError> {
    let who = match ctx.elicit::<Name>("What is your name?").key("name").await? {
        Elicitation::Accepted(n) => n.name,
        _ => "stranger".into(),
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    Ok(format!("Hello, {who}! The task is done."))
}

mcp::server! {
    name: "everything",
    title: "Everything",
    description: "Every MCP feature in one server: the conformance suite's fixtures and a small note store.",
    instructions: "A showcase and test server. The test_* tools, resources and prompts exercise one \
                   protocol feature each; add_note, delete_note, note://{id} and the summarize \
                   prompt form a small note store.",
    state: [Notes::new(), Watched::default(), Ledger::default()],
    tools: [
        test_simple_text,
        test_image_content,
        test_audio_content,
        test_embedded_resource,
        test_multiple_content_types,
        test_error_handling,
        test_tool_with_progress,
        test_tool_with_logging,
        test_logging_tool,
        test_sampling,
        test_elicitation,
        test_elicitation_sep1034_defaults,
        test_elicitation_sep1330_enums,
        test_missing_capability,
        test_streaming_elicitation,
        test_input_required_result_elicitation,
        test_input_required_result_sampling,
        test_input_required_result_list_roots,
        test_input_required_result_request_state,
        test_input_required_result_multiple_inputs,
        test_input_required_result_multi_round,
        test_input_required_result_tampered_state,
        test_input_required_result_capabilities,
        test_trigger_tool_change,
        test_trigger_prompt_change,
        test_update_watched_resource,
        test_header_param,
        add_note,
        delete_note,
        charge,
        greet,
        slow_compute,
        failing_job,
        protocol_error_job,
        confirm_delete,
        multi_input,
        test_tool_with_task,
    ],
    resources: [static_text, static_binary, template_data, watched_resource, note, ledger],
    prompts: [
        test_simple_prompt,
        test_prompt_with_arguments,
        test_prompt_with_embedded_resource,
        test_prompt_with_image,
        test_input_required_result_prompt,
        summarize,
    ],
    // `delete_note` and `charge` are destructive: ask the human before they run. Everything else is allowed.
    authorizer: mcp::auth::ask_before_sensitive(),
    // The data here is public test data: every client may list and read it.
    read_authorizer: mcp::auth::allow_all(),
    configure: configure,
}
