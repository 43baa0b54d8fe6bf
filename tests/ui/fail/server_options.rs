// No `fn main` here: server! writes it even when an option is wrong, so the options are
// the only errors.
mcp::server! {
    name: "x",
    tools: [],
    transport: carrier_pigeon,
    colour: "blue",
}
