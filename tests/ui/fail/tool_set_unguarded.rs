use mcp::prelude::*;

struct Files;

#[tools]
impl Files {
    /// Deletes everything.
    #[tool(destructive)]
    async fn wipe(&self) -> String {
        String::new()
    }
}

struct Mutating;

#[tools]
impl Mutating {
    /// Wants exclusive access.
    #[tool]
    async fn poke(&mut self) -> String {
        String::new()
    }
}

mcp::server! {
    name: "files",
    tool_sets: [Files],
}
