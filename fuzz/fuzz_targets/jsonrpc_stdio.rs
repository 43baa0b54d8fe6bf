//! Any byte string as a client's whole stdio session: framing, decoding and dispatch on a
//! live server, both protocol eras. The server must answer with valid JSON-RPC only, to ids
//! the client sent, finish everything by EOF without needing the grace period, and keep no
//! state for the connection afterwards.

#![no_main]

use std::collections::HashSet;

use libfuzzer_sys::fuzz_target;
use mcp::transport::stdio::{SHUTDOWN_GRACE, serve_io};
use mcp_fuzz::{Collected, check_output, check_released, ids_in, runtime, server};

fuzz_target!(|data: &[u8]| {
    let server = server().clone();
    let mut ids = HashSet::new();
    for line in data.split(|b| *b == b'\n') {
        ids_in(line.strip_suffix(b"\r").unwrap_or(line), &mut ids);
    }
    let out = Collected::default();
    let waited = runtime().block_on(async {
        let start = tokio::time::Instant::now();
        serve_io(server.clone(), data, out.clone())
            .await
            .expect("reading from memory cannot fail");
        start.elapsed()
    });
    assert!(
        waited < SHUTDOWN_GRACE,
        "requests were still running at EOF ({waited:?} of virtual time)"
    );
    let written = out.take();
    let text = std::str::from_utf8(&written).expect("the server writes UTF-8");
    for line in text.split_terminator('\n') {
        check_output(line, &ids);
    }
    check_released(&server);
});
