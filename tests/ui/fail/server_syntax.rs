// A malformed server! still gets its `main`, so the syntax error is the only error.
mcp::server! {
    name "x",
    tools: [],
}
