//! A sandboxed file server: list, read and delete files under one root directory, and
//! nothing outside it. Deleting is `#[tool(destructive)]`, so `server!` refuses to compile
//! without an authorizer; `ask_before_sensitive()` asks the human before every delete.
//!
//! ```text
//! cargo run -p mcp-examples --bin files -- --root ./sandbox
//! FILES_ROOT=./sandbox cargo run -p mcp-examples --bin files -- --list
//! ```

use std::path::{Component, Path, PathBuf};
use std::process::ExitCode;

use std::time::Duration;

// The command line's own clap, re-exported: no clap dependency to keep in step.
use mcp::Transport;
use mcp::cli::Setup;
use mcp::cli::clap::{self, Parser};
use mcp::extract::State;
use mcp::prelude::*;
use serde::Serialize;

/// The largest file `read_file` returns.
const MAX_READ: u64 = 1024 * 1024;

/// The served directory: the application's state, handed to the server in `main` and
/// received by every tool as `State<Root>`.
struct Root {
    dir: PathBuf,
}

// Command line: the root directory, plus every option of `mcp::cli` (--transport, --list,
// the limits…). The doc comment below is what `--help` says the program does.
/// Serves the files under one directory over MCP.
#[derive(Parser)]
#[command(name = "files", version)]
struct Args {
    /// The directory to serve; nothing outside it can be listed, read or deleted.
    #[arg(long, env = "FILES_ROOT", value_name = "DIR")]
    root: PathBuf,
    #[command(flatten)]
    mcp: mcp::cli::Options,
}

/// Resolves a client-supplied relative path inside `root`, refusing anything that could
/// leave it: absolute paths, `..`, and symbolic links that point outside.
fn confine(root: &Path, requested: &str) -> Result<PathBuf, ToolError> {
    let requested = requested.trim();
    let relative = Path::new(requested);
    for component in relative.components() {
        match component {
            Component::Normal(_) | Component::CurDir => {}
            Component::ParentDir => {
                return Err(ToolError::new(format!(
                    "{requested:?} leaves the served directory (`..` is not allowed); use a path relative to it"
                )));
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(ToolError::new(format!(
                    "{requested:?} is absolute; use a path relative to the served directory"
                )));
            }
        }
    }
    let joined = root.join(relative);
    let real = joined.canonicalize().map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => ToolError::new(format!(
            "{requested:?} does not exist; call list_files to see what does"
        )),
        _ => ToolError::new(format!("cannot open {requested:?}: {e}")),
    })?;
    if !real.starts_with(root) {
        return Err(ToolError::new(format!(
            "{requested:?} points outside the served directory"
        )));
    }
    Ok(real)
}

/// One directory entry.
#[derive(Serialize, schemars::JsonSchema)]
struct Entry {
    /// The path relative to the served directory.
    path: String,
    /// `file`, `dir` or `other`.
    kind: &'static str,
    /// Size in bytes (files only).
    #[serde(skip_serializing_if = "Option::is_none")]
    size: Option<u64>,
}

/// A directory's contents.
#[derive(Serialize, schemars::JsonSchema)]
struct Listing {
    /// The entries, sorted by path.
    entries: Vec<Entry>,
}

fn relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

async fn list_dir(root: &Path, dir: &Path) -> Result<Vec<Entry>, ToolError> {
    let mut entries = Vec::new();
    let mut read = tokio::fs::read_dir(dir).await?;
    while let Some(e) = read.next_entry().await? {
        let meta = e.metadata().await?;
        let kind = if meta.is_file() {
            "file"
        } else if meta.is_dir() {
            "dir"
        } else {
            "other"
        };
        entries.push(Entry {
            path: relative(root, &e.path()),
            kind,
            size: meta.is_file().then_some(meta.len()),
        });
    }
    entries.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(entries)
}

/// Lists a directory of the served tree.
#[tool(read_only, idempotent)]
async fn list_files(
    root: State<Root>,
    /// The directory, relative to the served root (default: the root itself).
    dir: Option<String>,
) -> Result<Json<Listing>, ToolError> {
    let dir = confine(&root.dir, dir.as_deref().unwrap_or("."))?;
    Ok(Json(Listing {
        entries: list_dir(&root.dir, &dir).await?,
    }))
}

async fn read_text(root: &Path, path: &str) -> Result<String, ToolError> {
    let file = confine(root, path)?;
    let meta = tokio::fs::metadata(&file).await?;
    if !meta.is_file() {
        return Err(ToolError::new(format!("{path:?} is not a file")));
    }
    if meta.len() > MAX_READ {
        return Err(ToolError::new(format!(
            "{path:?} is {} bytes; read_file returns files up to {MAX_READ} bytes",
            meta.len()
        )));
    }
    let bytes = tokio::fs::read(&file).await?;
    String::from_utf8(bytes).map_err(|_| ToolError::new(format!("{path:?} is not UTF-8 text")))
}

/// Reads a text file of the served tree (up to 1 MiB).
#[tool(read_only, idempotent)]
async fn read_file(
    root: State<Root>,
    /// The file, relative to the served root.
    path: String,
) -> Result<String, ToolError> {
    read_text(&root.dir, &path).await
}

/// Deletes a file of the served tree. The human is asked first.
#[tool(destructive)]
async fn delete_file(
    ctx: Ctx,
    root: State<Root>,
    /// The file, relative to the served root.
    path: String,
) -> Result<String, ToolError> {
    let file = confine(&root.dir, &path)?;
    if !tokio::fs::metadata(&file).await?.is_file() {
        return Err(ToolError::new(format!(
            "{path:?} is not a file; only files can be deleted"
        )));
    }
    tokio::fs::remove_file(&file).await?;
    ctx.notice(format!("deleted {path}"));
    Ok(format!("deleted {path}"))
}

/// A file of the served tree, as a resource.
#[resource("files:///{+path}", mime = "text/plain", list = top_level_files)]
async fn file(root: State<Root>, path: String) -> Result<String, ResourceError> {
    read_text(&root.dir, &path).await.map_err(|e| {
        if e.0.contains("does not exist") {
            ResourceError::NotFound
        } else {
            ResourceError::InvalidParams(e.0)
        }
    })
}

async fn top_level_files(ctx: Ctx) -> Vec<Resource> {
    let Some(root) = ctx.state::<Root>() else {
        return Vec::new();
    };
    let entries = list_dir(&root.dir, &root.dir).await.unwrap_or_default();
    entries
        .into_iter()
        .filter(|e| e.kind == "file")
        .map(|e| Resource::new(format!("files:///{}", e.path), e.path))
        .collect()
}

mcp::server! {
    name: "files",
    title: "Sandboxed files",
    instructions: "Files under one directory. Paths are relative to it. Deleting asks the user first.",
    tools: [list_files, read_file, delete_file],
    resources: [file],
    authorizer: mcp::auth::ask_before_sensitive(),
    main: false,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let root = match args.root.canonicalize() {
        Ok(root) if root.is_dir() => root,
        Ok(root) => {
            eprintln!("error: --root {} is not a directory", root.display());
            return ExitCode::from(2);
        }
        Err(e) => {
            eprintln!("error: --root {}: {e}", args.root.display());
            return ExitCode::from(2);
        }
    };
    args.mcp.run(Transport::Stdio, || {
        // Operators tune the limits from the command line (--call-timeout 30s) or the
        // environment (MCP_CALL_TIMEOUT=30s), never beyond these ceilings.
        Setup::from(server_builder().state(Root { dir: root }))
            .ceiling("call_timeout", Duration::from_secs(600))
            .ceiling("max_message_size", 16 << 20)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_inside_the_root() {
        let dir = std::env::temp_dir().join(format!("mcp-files-confine-{}", std::process::id()));
        let inner = dir.join("inner");
        std::fs::create_dir_all(&inner).unwrap();
        std::fs::write(inner.join("a.txt"), "a").unwrap();
        std::fs::write(dir.join("outside.txt"), "secret").unwrap();
        let root = inner.canonicalize().unwrap();

        assert_eq!(confine(&root, "a.txt").unwrap(), root.join("a.txt"));
        assert_eq!(confine(&root, "./a.txt").unwrap(), root.join("a.txt"));
        for bad in ["../outside.txt", "x/../../outside.txt", "/etc/passwd"] {
            assert!(confine(&root, bad).is_err(), "{bad}");
        }
        assert!(
            confine(&root, "missing.txt")
                .unwrap_err()
                .0
                .contains("does not exist")
        );
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(dir.join("outside.txt"), inner.join("link")).unwrap();
            let e = confine(&root, "link").unwrap_err();
            assert!(e.0.contains("outside"), "{e}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
