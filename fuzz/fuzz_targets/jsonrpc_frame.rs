//! Any byte string as one frame (an HTTP body), handled by a connection in each era: with
//! no era decided, forced to the handshake era, forced to 2026-07-28, and on a connection
//! that negotiated 2025-03-26 (batches) with every client capability (so calls can park).
//! The two forced eras decode the frame as the HTTP transports decode a body they hold
//! alone (taken over, its params and a call's arguments slices of it: `decode_owned`), the
//! other two as a lent frame whose params are copied (`decode`, stdio's path).
//! A request still running after a while is abandoned the way a vanished HTTP client
//! abandons it. Replies must be valid JSON-RPC to ids the client sent, and nothing may be
//! left behind once the connection is dropped. The envelope's one-pass walk must read the
//! frame as the derived readers do, where it reads it at all.

#![no_main]

use std::collections::HashSet;
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use mcp::protocol::Era;
use mcp::protocol::jsonrpc::{Incoming, decode, decode_owned};
use mcp::server::{Outbound, RequestExtras};
use mcp::{ConnId, Transport};
use mcp_fuzz::{check_output, check_released, ids_in, runtime, server};
use serde_json::json;

fuzz_target!(|data: &[u8]| {
    // The envelope's one-pass walk reads what the derived readers read, or leaves it to them.
    if let Ok(text) = std::str::from_utf8(data)
        && let Err(disagreement) = mcp::fuzzing::envelope_walk_agrees(text)
    {
        panic!("{disagreement}");
    }
    let server = server().clone();
    let mut ids = HashSet::new();
    ids_in(data, &mut ids);
    ids.insert("0".to_owned());
    runtime().block_on(async {
        for variant in 0..4 {
            let (out, mut rx) = Outbound::channel(256);
            let conn = server.connect(ConnId::new("frame"), Transport::Http, out);
            if variant == 3 {
                let init = mcp::protocol::Message::request(
                    0,
                    "initialize",
                    json!({
                        "protocolVersion": "2025-03-26",
                        "capabilities": {"elicitation": {}, "sampling": {}, "roots": {}},
                        "clientInfo": {"name": "fuzz", "version": "0"},
                    }),
                );
                conn.handle(init).await.expect("initialize answers");
            }
            let handled = async {
                let incoming = match variant {
                    1 | 2 => decode_owned(data.to_vec()),
                    _ => decode(data),
                };
                match (variant, incoming) {
                    (1 | 2, Incoming::Single(Ok(message))) => {
                        let era = if variant == 1 {
                            Era::Handshake
                        } else {
                            Era::Stateless
                        };
                        let extras = RequestExtras {
                            era: Some(era),
                            ..Default::default()
                        };
                        conn.handle_with(message, extras).await
                    }
                    _ => conn.handle_frame(data).await,
                }
            };
            let reply = tokio::select! {
                reply = handled => reply,
                () = tokio::time::sleep(Duration::from_millis(50)) => None,
            };
            if let Some(reply) = reply {
                check_output(reply.frame(), &ids);
            }
            drop(conn);
            while let Ok(frame) = rx.try_recv() {
                check_output(&frame, &ids);
            }
            check_released(&server);
        }
    });
});
