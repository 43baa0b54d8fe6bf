//! A note store on an embedded SQLite database: the application's state is a connection
//! opened and migrated at start-up, shared by every tool, the resource template over its
//! rows and the completer; deleting a note asks the human first.
//!
//! ```text
//! cargo run -p mcp-examples --bin notes -- --db notes.sqlite3
//! NOTES_DB=notes.sqlite3 cargo run -p mcp-examples --bin notes -- --list
//! ```

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use mcp::cli::clap::{self, Parser};
use mcp::extract::State;
use mcp::prelude::*;
use parking_lot::Mutex;
use rusqlite::{Connection, OptionalExtension as _, params};
use serde::Serialize;

/// Serves a note store kept in one SQLite file.
#[derive(Parser)]
#[command(name = "notes", version)]
struct Args {
    /// The database file; created and migrated at start-up if needed.
    #[arg(long, env = "NOTES_DB", value_name = "PATH")]
    db: PathBuf,
    #[command(flatten)]
    mcp: mcp::cli::Options,
}

/// The migrations, in order; `PRAGMA user_version` records how many ran.
const MIGRATIONS: &[&str] = &[
    "CREATE TABLE notes (
         id INTEGER PRIMARY KEY,
         title TEXT NOT NULL,
         body TEXT NOT NULL
     )",
    "CREATE INDEX notes_title ON notes (title)",
];

/// The database: the application's state. SQLite calls block, so they run on tokio's
/// blocking pool, one at a time on the one connection.
struct Db {
    conn: Arc<Mutex<Connection>>,
}

impl Db {
    /// Opens (creating if needed) and migrates the database at `path`.
    fn open(path: &std::path::Path) -> Result<Db, String> {
        let mut conn = Connection::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let done: usize = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|e| e.to_string())?;
        if done > MIGRATIONS.len() {
            return Err(format!(
                "{} was migrated by a newer version ({done} migrations; this one knows {})",
                path.display(),
                MIGRATIONS.len()
            ));
        }
        let tx = conn.transaction().map_err(|e| e.to_string())?;
        for sql in &MIGRATIONS[done..] {
            tx.execute_batch(sql).map_err(|e| e.to_string())?;
        }
        tx.pragma_update(None, "user_version", MIGRATIONS.len())
            .map_err(|e| e.to_string())?;
        tx.commit().map_err(|e| e.to_string())?;
        Ok(Db {
            conn: Arc::new(Mutex::new(conn)),
        })
    }

    /// Runs `f` on the connection, on the blocking pool.
    async fn with<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static,
    ) -> Result<T, String> {
        let conn = Arc::clone(&self.conn);
        tokio::task::spawn_blocking(move || f(&conn.lock()))
            .await
            .map_err(|e| format!("the database task failed: {e}"))?
            .map_err(|e| format!("database error: {e}"))
    }
}

/// A stored note.
#[derive(Debug, Serialize, schemars::JsonSchema)]
struct Note {
    /// Its id (also its URI: `note://<id>`).
    id: i64,
    /// Its title.
    title: String,
    /// Its text.
    body: String,
}

/// Notes found.
#[derive(Debug, Serialize, schemars::JsonSchema)]
struct Notes {
    /// The notes, by id.
    notes: Vec<Note>,
}

fn note(row: &rusqlite::Row<'_>) -> rusqlite::Result<Note> {
    Ok(Note {
        id: row.get(0)?,
        title: row.get(1)?,
        body: row.get(2)?,
    })
}

/// Finds notes whose title or text contains a word (every note when it is empty).
#[tool(read_only, idempotent)]
async fn search_notes(
    db: State<Db>,
    /// What to look for; empty for every note.
    #[arg(default = String::new())]
    query: String,
) -> Result<Json<Notes>, ToolError> {
    let pattern = format!("%{}%", query.replace('%', "\\%").replace('_', "\\_"));
    let notes = db
        .with(move |c| {
            let mut stmt = c.prepare(
                "SELECT id, title, body FROM notes
                 WHERE title LIKE ?1 ESCAPE '\\' OR body LIKE ?1 ESCAPE '\\' ORDER BY id",
            )?;
            stmt.query_map([pattern], note)?.collect()
        })
        .await
        .map_err(ToolError::new)?;
    Ok(Json(Notes { notes }))
}

/// Adds a note and returns it.
#[tool]
async fn add_note(
    db: State<Db>,
    /// A short title.
    title: String,
    /// The note's text.
    body: String,
) -> Result<Json<Note>, ToolError> {
    if title.trim().is_empty() {
        return Err(ToolError::new("the title cannot be empty"));
    }
    let (t, b) = (title.clone(), body.clone());
    let id = db
        .with(move |c| {
            c.execute(
                "INSERT INTO notes (title, body) VALUES (?1, ?2)",
                params![t, b],
            )?;
            Ok(c.last_insert_rowid())
        })
        .await
        .map_err(ToolError::new)?;
    Ok(Json(Note { id, title, body }))
}

/// Deletes a note for good. Destructive: the human is asked first.
#[tool(destructive)]
async fn delete_note(
    db: State<Db>,
    /// The id of the note to delete.
    id: i64,
) -> Result<String, ToolError> {
    let deleted = db
        .with(move |c| c.execute("DELETE FROM notes WHERE id = ?1", [id]))
        .await
        .map_err(ToolError::new)?;
    match deleted {
        0 => Err(ToolError::new(format!(
            "there is no note {id}; search_notes lists them"
        ))),
        _ => Ok(format!("deleted note {id}")),
    }
}

/// Every note, for `resources/list`.
async fn all_notes(ctx: Ctx) -> Vec<Resource> {
    let Some(db) = ctx.state::<Db>() else {
        return Vec::new();
    };
    db.with(|c| {
        let mut stmt = c.prepare("SELECT id, title FROM notes ORDER BY id")?;
        stmt.query_map([], |r| {
            let (id, title): (i64, String) = (r.get(0)?, r.get(1)?);
            Ok(Resource::new(format!("note://{id}"), title))
        })?
        .collect()
    })
    .await
    .unwrap_or_default()
}

/// The ids that start with what was typed.
async fn note_ids(request: CompletionRequest) -> Vec<String> {
    let Some(db) = request.state::<Db>() else {
        return Vec::new();
    };
    let prefix = format!("{}%", request.value);
    db.with(move |c| {
        let mut stmt =
            c.prepare("SELECT id FROM notes WHERE CAST(id AS TEXT) LIKE ?1 ORDER BY id")?;
        stmt.query_map([prefix], |r| r.get::<_, i64>(0).map(|id| id.to_string()))?
            .collect()
    })
    .await
    .unwrap_or_default()
}

/// A stored note, by id: its title and text.
#[resource("note://{id}", mime = "text/plain", list = all_notes)]
async fn note_by_id(
    db: State<Db>,
    #[arg(complete = note_ids)] id: i64,
) -> Result<String, ResourceError> {
    let found = db
        .with(move |c| {
            c.query_row(
                "SELECT id, title, body FROM notes WHERE id = ?1",
                [id],
                note,
            )
            .optional()
        })
        .await
        .map_err(ResourceError::Failed)?;
    found
        .map(|n| format!("# {}\n\n{}", n.title, n.body))
        .ok_or(ResourceError::NotFound)
}

mcp::server! {
    name: "notes",
    title: "Notes on SQLite",
    instructions: "A note store. search_notes finds notes, add_note stores one, note://{id} reads one; deleting asks the user first.",
    tools: [search_notes, add_note, delete_note],
    resources: [note_by_id],
    authorizer: mcp::auth::ask_before_sensitive(),
    main: false,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let path = args.db.clone();
    args.mcp.run(mcp::Transport::Stdio, move || {
        // Opened and migrated at start-up, before anything is served: a database that
        // cannot be opened stops the boot with its error.
        server_builder().state_with(move || async move { Db::open(&path) })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_run_once_and_a_newer_database_is_refused() {
        let path = std::env::temp_dir().join(format!("notes-unit-{}.sqlite3", std::process::id()));
        let _ = std::fs::remove_file(&path);
        drop(Db::open(&path).unwrap());
        let db = Db::open(&path).unwrap();
        let version: usize = db
            .conn
            .lock()
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, MIGRATIONS.len());
        db.conn
            .lock()
            .pragma_update(None, "user_version", 99)
            .unwrap();
        drop(db);
        let e = Db::open(&path).err().unwrap();
        assert!(e.contains("newer version"), "{e}");
        let _ = std::fs::remove_file(&path);
    }
}
