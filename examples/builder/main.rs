//! A notes server written with the builder API (no macros): tools, a fixed resource, a
//! resource template with completion, a prompt, progress, and a destructive tool that asks
//! the human before it runs.
//!
//! Run it over stdio: `cargo run -p mcp-examples --bin builder`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use mcp::prelude::*;
use mcp::registry::{CompletionRequest, ResourceRequest};
use parking_lot::Mutex;
use schemars::JsonSchema;
use serde::Deserialize;

type Notes = Arc<Mutex<BTreeMap<String, String>>>;

#[derive(Deserialize, JsonSchema)]
struct AddNote {
    /// A short identifier, such as "groceries".
    id: String,
    /// The note's text.
    text: String,
}

#[derive(Deserialize, JsonSchema)]
struct NoteId {
    /// The note's identifier.
    id: String,
}

#[derive(Deserialize, JsonSchema)]
struct Count {
    /// How far to count (at most 100).
    to: u32,
}

fn build(notes: Notes) -> Result<Server, mcp::server::BuildError> {
    let add = {
        let notes = Arc::clone(&notes);
        ToolDef::from_fn(
            "add_note",
            "Stores a note under an id, replacing any note with that id.",
            move |ctx: Ctx, a: AddNote| {
                let notes = Arc::clone(&notes);
                async move {
                    notes.lock().insert(a.id.clone(), a.text);
                    ctx.server().resource_updated(&format!("note://{}", a.id));
                    format!("Saved note {:?}.", a.id)
                }
            },
        )
        .idempotent()
    };
    let delete = {
        let notes = Arc::clone(&notes);
        ToolDef::from_fn(
            "delete_note",
            "Deletes a note. Asks the user first.",
            move |_ctx: Ctx, a: NoteId| {
                let notes = Arc::clone(&notes);
                async move {
                    match notes.lock().remove(&a.id) {
                        Some(_) => Ok(format!("Deleted note {:?}.", a.id)),
                        None => Err(ToolError::new(format!(
                            "There is no note {:?}; list them with the notes://index resource.",
                            a.id
                        ))),
                    }
                }
            },
        )
        .destructive()
    };
    let count = ToolDef::from_fn(
        "count",
        "Counts slowly to a number, reporting progress; stops when cancelled.",
        |ctx: Ctx, c: Count| async move {
            let to = c.to.min(100);
            for i in 1..=to {
                if ctx.is_cancelled() {
                    return format!("Cancelled at {i}.");
                }
                ctx.progress(
                    f64::from(i),
                    Some(f64::from(to)),
                    Some(&format!("counted {i}")),
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            format!("Counted to {to}.")
        },
    )
    .read_only();

    let index = {
        let notes = Arc::clone(&notes);
        ResourceDef::new(
            "notes://index",
            "index",
            move |_ctx: Ctx, _r: ResourceRequest| {
                let ids: Vec<String> = notes.lock().keys().cloned().collect();
                async move { Json(ids) }
            },
        )
        .description("The ids of every stored note, as a JSON array.")
        .mime_type("application/json")
    };
    let note = {
        let read = Arc::clone(&notes);
        let complete = Arc::clone(&notes);
        ResourceTemplateDef::new(
            "note://{id}",
            "note",
            move |_ctx: Ctx, r: ResourceRequest| {
                let text = read.lock().get(&r.vars["id"]).cloned();
                async move { text.ok_or(mcp::registry::ResourceError::NotFound) }
            },
        )
        .expect("a valid template")
        .description("One note's text.")
        .mime_type("text/plain")
        .complete(
            "id",
            Arc::new(move |req: CompletionRequest| {
                let ids: Vec<String> = complete.lock().keys().cloned().collect();
                async move { mcp::registry::prefix_matches(&ids, &req.value) }
            }),
        )
    };
    let summarize = PromptDef::new("summarize", "Asks the model to summarize a note.", {
        let notes = Arc::clone(&notes);
        move |_ctx: Ctx, args: mcp::registry::PromptArgs| {
            let id = args.get("id").unwrap_or_default().to_owned();
            let text = notes.lock().get(&id).cloned();
            async move {
                let text = text.ok_or_else(|| {
                    mcp::registry::PromptError::InvalidParams(format!("no note {id:?}"))
                })?;
                Ok::<_, mcp::registry::PromptError>(vec![PromptMessage::user(format!(
                    "Summarize this note in one sentence:\n\n{text}"
                ))])
            }
        }
    })
    .argument("id", "The note to summarize.", true);

    Server::builder("notes", env!("CARGO_PKG_VERSION"))
        .title("Notes (builder API example)")
        .instructions("Store notes with add_note, read them as note://{id} resources.")
        .tool(add)
        .tool(delete)
        .tool(count)
        .resource(index)
        .template(note)
        .prompt(summarize)
        .authorizer(mcp::auth::ask_before_sensitive())
        .build()
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let notes: Notes = Arc::new(Mutex::new(BTreeMap::from([(
        "welcome".to_owned(),
        "Welcome to the notes server.".to_owned(),
    )])));
    let server = match build(notes) {
        Ok(server) => server,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    mcp::transport::stdio::serve(server).await
}
