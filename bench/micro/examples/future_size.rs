//! Prints the size of the futures the stdio transport spawns per request.
use mcp::protocol::Message;
use mcp::server::{ConnId, Outbound, Transport};

fn main() {
    let server = bench_micro::server();
    let (out, _rx) = Outbound::channel(16);
    let conn = server.connect(ConnId::new("x"), Transport::Stdio, out);
    let m = Message::request(1, "ping", serde_json::json!({}));
    let f = conn.handle(m);
    println!(
        "Connection::handle future: {} bytes",
        std::mem::size_of_val(&f)
    );
    let f2 = conn.handle_frame(b"{}");
    println!(
        "Connection::handle_frame future: {} bytes",
        std::mem::size_of_val(&f2)
    );
}
