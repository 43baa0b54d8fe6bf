// A server! without a name, whose `main: false` is respected: the user's own `main` stays
// the only one, and the missing name is the only error.
mcp::server! {
    tools: [],
    main: false,
}

fn main() {
    let _ = server();
}
