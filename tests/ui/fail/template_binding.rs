use mcp::prelude::*;

/// A user's repository file.
#[resource("repo://{owner}/{+path}")]
async fn repo_file(owner: String, branch: String) -> String {
    format!("{owner} {branch}")
}

/// A fixed resource cannot take parameters.
#[resource("file:///readme")]
async fn readme(lang: String) -> String {
    lang
}

/// Level-3 operators are refused.
#[resource("search://{?query}")]
async fn search(query: String) -> String {
    query
}

/// No scheme.
#[resource("readme.md")]
async fn no_scheme() -> String {
    String::new()
}

fn main() {}
