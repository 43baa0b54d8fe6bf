mcp::server! {
    name: "x",
    tools: [],
    transport: carrier_pigeon,
    colour: "blue",
}
fn main() {}
