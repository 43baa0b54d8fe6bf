//! What the fuzz targets share: a server that exercises every part of the dispatcher (typed
//! and structured tools, an Ask, a deny, handlers that elicit, sample and list roots,
//! resources, a template with completion, prompts, small pages, a read seam), a paused-clock
//! runtime, and checks every target applies to what the server wrote.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use mcp::auth::{Decision, policy};
use mcp::prelude::*;
use mcp::protocol::CreateMessageRequestParams;
use mcp::registry::{ResourceRequest, complete_from};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// How many times the guarded `spend` tool ran (the elicitation target checks it).
pub static SPENT: AtomicUsize = AtomicUsize::new(0);

#[derive(Deserialize, JsonSchema)]
struct Add {
    a: i64,
    b: i64,
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct Echo {
    text: String,
    #[serde(default)]
    times: Option<u8>,
}

#[derive(Deserialize, JsonSchema)]
struct Nothing {}

/// The builder of the server every target uses (a target that needs it on a cluster adds
/// one before building).
pub fn builder() -> ServerBuilder {
    let template = ResourceTemplateDef::new(
        "tmpl://{id}/{+rest}",
        "tmpl",
        |_ctx: Ctx, r: ResourceRequest| async move {
            format!("{:?}", r.vars.get("id").map(String::len))
        },
    )
    .expect("a valid template")
    .complete("id", complete_from(["alpha", "beta", "gamma"]));
    Server::builder("fuzz", "1")
        .tool(ToolDef::from_fn(
            "add",
            "Adds.",
            |_ctx: Ctx, x: Add| async move { x.a.checked_add(x.b).ok_or("overflow") },
        ))
        .tool(
            ToolDef::from_fn(
                "echo",
                "Echoes.",
                |_ctx: Ctx, e: Echo| async move { Json(e) },
            )
            .output_type::<Echo>(),
        )
        .tool(
            ToolDef::from_fn(
                "spend",
                "Spends after asking.",
                |_ctx: Ctx, _n: Nothing| async {
                    SPENT.fetch_add(1, Ordering::SeqCst);
                    "spent"
                },
            )
            .destructive(),
        )
        .tool(ToolDef::from_fn(
            "forbidden",
            "Always denied.",
            |_ctx: Ctx, _n: Nothing| async { "never" },
        ))
        .tool(ToolDef::from_fn(
            "asker",
            "Elicits, samples, lists roots and keeps state across rounds.",
            |ctx: Ctx, _n: Nothing| async move {
                ctx.progress(0.5, Some(1.0), Some("asking"));
                ctx.info("asking");
                let seen: Option<u32> = ctx.request_state();
                ctx.set_request_state(&seen.unwrap_or(0).wrapping_add(1));
                let name = ctx
                    .elicit_schema(
                        "Name?",
                        json!({"type": "object", "properties": {"n": {"type": "string"}}}),
                    )
                    .await;
                let sampled = ctx.sample(CreateMessageRequestParams::ask("hi", 5)).await;
                let roots = ctx.roots().await;
                format!("{} {} {}", name.is_ok(), sampled.is_ok(), roots.is_ok())
            },
        ))
        .resource(ResourceDef::new(
            "res://fixed",
            "fixed",
            |_ctx: Ctx, _r: ResourceRequest| async { "fixed" },
        ))
        .resource(ResourceDef::new(
            "res://secret",
            "secret",
            |_ctx: Ctx, _r: ResourceRequest| async { "secret" },
        ))
        .template(template)
        .prompt(
            PromptDef::new(
                "greet",
                "Greets.",
                |_ctx: Ctx, args: mcp::registry::PromptArgs| async move {
                    format!("Hello, {}", args.get("name").unwrap_or("?"))
                },
            )
            .argument("name", "Who.", true)
            .complete("name", complete_from(["ann", "bob"])),
        )
        .authorizer(policy(|req| match req.name() {
            "spend" => Decision::ask("Spend?"),
            "forbidden" => Decision::deny("no"),
            _ => Decision::Allow,
        }))
        .read_authorizer(policy(|req| {
            if req.arguments().get("uri").and_then(Value::as_str) == Some("res://secret") {
                Decision::deny("secret")
            } else {
                Decision::Allow
            }
        }))
        .page_size(2)
        .call_timeout(Duration::from_secs(5))
        .max_message_size(64 * 1024)
}

fn build() -> Server {
    builder().build().expect("the fuzz server builds")
}

/// A server whose tools run as tasks (`job` sleeps `ms`, `asker` waits then elicits,
/// `fails` is a tool error, `breaks` a JSON-RPC error, `plain` is never a task), with
/// small caps and limits. Built per input: tasks are state.
pub fn task_server() -> Server {
    use mcp::registry::ProtocolError;
    use mcp::tasks::TaskSupport;
    use std::future::IntoFuture as _;

    #[derive(Deserialize, JsonSchema)]
    struct Ms {
        #[serde(default)]
        ms: u64,
    }
    Server::builder("fuzz-tasks", "1")
        .tool(
            ToolDef::from_fn("job", "Sleeps.", |ctx: Ctx, m: Ms| async move {
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_millis(m.ms)) => "done",
                    _ = ctx.cancelled() => "stopped",
                }
            })
            .task_support(TaskSupport::Optional),
        )
        .tool(
            ToolDef::from_fn("asker", "Asks.", |ctx: Ctx, _m: Ms| async move {
                tokio::time::sleep(Duration::from_millis(5)).await;
                let schema = json!({"type": "object", "properties": {"n": {"type": "string"}}});
                let (a, b) = futures::join!(
                    ctx.elicit_schema("First?", schema.clone()).into_future(),
                    ctx.elicit_schema("Second?", schema).into_future(),
                );
                format!("{} {}", a.is_ok(), b.is_ok())
            })
            .task_support(TaskSupport::Required),
        )
        .tool(
            ToolDef::from_fn("fails", "Fails.", |_ctx: Ctx, _m: Ms| async {
                Err::<String, _>(ToolError::new("no"))
            })
            .task_support(TaskSupport::Optional),
        )
        .tool(
            ToolDef::from_fn("breaks", "Breaks.", |_ctx: Ctx, _m: Ms| async {
                Err::<String, _>(ProtocolError::internal("down"))
            })
            .task_support(TaskSupport::Optional),
        )
        .tool(ToolDef::from_fn(
            "plain",
            "Plain.",
            |_ctx: Ctx, _m: Ms| async { "plain" },
        ))
        .max_tasks(6, 3)
        .task_time_limit(Duration::from_secs(20))
        .page_size(2)
        .build()
        .expect("the task server builds")
}

/// The server every target uses, built once.
pub fn server() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(build)
}

/// A single-threaded runtime whose clock is paused: timers fire as soon as nothing else
/// can run, so a timeout costs no wall time, and the virtual time elapsed tells whether
/// something had to wait.
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .expect("a runtime")
    })
}

/// Every id a frame carries (of the message, or of each batch element), as JSON values.
///
/// A frame can be JSON by the grammar and still not a `serde_json::Value`: a `\\u` escape
/// of a lone surrogate (`"\\udcc1"`) is grammatical (RFC 8259 section 8.2 leaves its meaning
/// to the reader), and the server, which skips members it does not use without decoding
/// their strings, answers such a request. Its id is read the same way then: every other
/// member skipped.
pub fn ids_in(frame: &[u8], into: &mut HashSet<String>) {
    use serde_json::value::RawValue;
    /// A message's id, every other member skipped undecoded.
    #[derive(Deserialize)]
    struct IdOnly<'a> {
        #[serde(default, borrow)]
        id: Option<&'a RawValue>,
    }
    /// The id of one message, read as the server reads it: from the message as a whole
    /// when it is a `Value`, else from its `id` member alone.
    fn id_of(message: &str) -> Option<Value> {
        match serde_json::from_str::<Value>(message) {
            Ok(value) => value.get("id").cloned(),
            Err(_) => serde_json::from_str::<IdOnly>(message)
                .ok()?
                .id
                .and_then(|raw| serde_json::from_str(raw.get()).ok()),
        }
    }
    let Ok(text) = std::str::from_utf8(frame) else {
        return;
    };
    // A batch is read element by element: one element a `Value` cannot hold (a number
    // beyond f64, say) leaves the others' ids readable, as it does for the server.
    let ids: Vec<Option<Value>> = match serde_json::from_str::<Vec<&RawValue>>(text) {
        Ok(items) => items.iter().map(|item| id_of(item.get())).collect(),
        Err(_) => vec![id_of(text)],
    };
    into.extend(ids.into_iter().flatten().map(|id| id.to_string()));
}

/// Checks one message the server wrote: a JSON-RPC 2.0 object (or, for a batch reply, an
/// array of them) whose response ids are ids the client sent (or null).
pub fn check_output(text: &str, client_ids: &HashSet<String>) {
    let value: Value = serde_json::from_str(text)
        .unwrap_or_else(|e| panic!("the server wrote invalid JSON ({e}): {text:?}"));
    let items = match value {
        Value::Array(items) => {
            assert!(!items.is_empty(), "an empty batch reply");
            items
        }
        other => vec![other],
    };
    for item in items {
        assert_eq!(item["jsonrpc"], "2.0", "not JSON-RPC 2.0: {item}");
        let is_response = item.get("method").is_none();
        if is_response {
            // An error about a message whose id could not be read carries none (as the
            // 2025-11-25 schema allows); every other response names a client's id.
            let id = item.get("id");
            assert!(
                id.is_some() || item.get("error").is_some(),
                "a result without id: {item}"
            );
            assert!(
                id.is_none_or(|id| client_ids.contains(&id.to_string())),
                "a response to an id the client never sent: {item}"
            );
            assert!(
                item.get("result").is_some() != item.get("error").is_some(),
                "a response needs exactly one of result and error: {item}"
            );
        }
    }
}

/// Asserts the server kept nothing for connections that are gone.
pub fn check_released(server: &Server) {
    assert_eq!(
        server.connection_count(),
        0,
        "connection state outlived its transport"
    );
}

/// Output written by the server, collected in memory.
#[derive(Clone, Default)]
pub struct Collected(Arc<std::sync::Mutex<Vec<u8>>>);

impl Collected {
    /// Everything written so far.
    pub fn take(&self) -> Vec<u8> {
        std::mem::take(&mut *self.0.lock().expect("not poisoned"))
    }
}

impl tokio::io::AsyncWrite for Collected {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        self.0.lock().expect("not poisoned").extend_from_slice(buf);
        std::task::Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}

/// A byte program, read front to back: the structured targets take their decisions from it
/// (a missing byte reads as 0).
pub struct Program<'a>(pub &'a [u8]);

impl Program<'_> {
    /// The next byte, if any is left.
    pub fn byte(&mut self) -> Option<u8> {
        let (first, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(*first)
    }

    /// Text of fewer than `max` bytes (its length from the next byte), lossily UTF-8.
    pub fn text(&mut self, max: u8) -> String {
        let n = usize::from(self.byte().unwrap_or(0) % max).min(self.0.len());
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        String::from_utf8_lossy(head).into_owned()
    }
}
