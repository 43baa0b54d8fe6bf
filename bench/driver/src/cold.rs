//! Cold start: from spawning the process to its first answer.

use std::io::{BufRead as _, BufReader, Write as _};
use std::time::{Duration, Instant};

use crate::proc::{Program, Wiring, spawn_stdio};

/// Spawn to the answer of `initialize` on stdio (pipes).
pub fn stdio(program: &Program) -> Duration {
    let start = Instant::now();
    let (mut child, to_child, from_child) = spawn_stdio(program, &[], Wiring::Pipes);
    let mut w = std::fs::File::from(to_child);
    let mut r = BufReader::new(std::fs::File::from(from_child));
    w.write_all(format!("{}\n", crate::stdio::INITIALIZE).as_bytes())
        .expect("write");
    let mut line = String::new();
    r.read_line(&mut line).expect("read");
    let elapsed = start.elapsed();
    assert!(line.contains("protocolVersion"), "bad answer: {line}");
    drop(w);
    child.wait_usage(Duration::from_secs(5));
    elapsed
}

/// Spawn to the answer of the first request on HTTP: the server's port accepting, then
/// `initialize` answered. `None` if the server has no HTTP transport.
pub fn http(program: &Program) -> Option<Duration> {
    let start = Instant::now();
    let (mut child, addr, _) = crate::http::start(program, Duration::from_secs(10))?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async {
        let mut c = crate::http::Client::connect(addr, crate::http::Era::Handshake).await;
        c.initialize().await;
    });
    let elapsed = start.elapsed();
    child.stop();
    Some(elapsed)
}
