use mcp::prelude::*;

/// Deletes a file inside the sandbox.
#[tool(destructive)]
async fn delete_file(path: String) -> Result<String, ToolError> {
    Ok(format!("deleted {path}"))
}

/// Reads the deployment's secrets.
#[tool(sensitive, read_only)]
async fn read_secrets() -> String {
    String::new()
}

/// Lists files.
#[tool(read_only)]
async fn list_files() -> String {
    String::new()
}

mcp::server! {
    name: "files",
    tools: [list_files, delete_file, read_secrets],
}
