//! The stdio phase: one server process, `calls` pipelined `tools/call echo` with at most
//! `window` in flight, over pipes or socket pairs.

use std::cell::RefCell;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::rc::Rc;
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::Semaphore;

use crate::proc::{Wiring, spawn_stdio};
use crate::stats::{Measure, percentile};

pub const ECHO_TEXT: &str = "hello, benchmark";

pub const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench-driver","version":"0"}}}"#;
pub const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

fn echo_request(out: &mut Vec<u8>, id: u64) {
    use std::io::Write as _;
    let _ = writeln!(
        out,
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{ECHO_TEXT}"}}}}}}"#
    );
}

type Reader = Box<dyn AsyncRead + Unpin>;
type Writer = Box<dyn AsyncWrite + Unpin>;

fn async_ends(wiring: Wiring, to_child: OwnedFd, from_child: OwnedFd) -> (Writer, Reader) {
    match wiring {
        Wiring::Pipes => (
            Box::new(tokio::net::unix::pipe::Sender::from_owned_fd(to_child).expect("pipe")),
            Box::new(tokio::net::unix::pipe::Receiver::from_owned_fd(from_child).expect("pipe")),
        ),
        Wiring::Sockets => {
            let w = std::os::unix::net::UnixStream::from(to_child);
            let r = std::os::unix::net::UnixStream::from(from_child);
            w.set_nonblocking(true).expect("nonblocking");
            r.set_nonblocking(true).expect("nonblocking");
            (
                Box::new(tokio::net::UnixStream::from_std(w).expect("socket")),
                Box::new(tokio::net::UnixStream::from_std(r).expect("socket")),
            )
        }
    }
}

/// The id of a response line (`"id":<digits>`), without a full parse.
fn response_id(line: &[u8]) -> Option<u64> {
    let key = b"\"id\":";
    let at = line.windows(key.len()).position(|w| w == key)? + key.len();
    let digits = line[at..]
        .iter()
        .skip_while(|b| **b == b' ')
        .take_while(|b| b.is_ascii_digit());
    let mut n: u64 = 0;
    let mut any = false;
    for d in digits {
        n = n * 10 + u64::from(d - b'0');
        any = true;
    }
    any.then_some(n)
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// Reads one line (the handshake's answer).
async fn read_line(reader: &mut Reader, buf: &mut Vec<u8>) -> Vec<u8> {
    loop {
        if let Some(pos) = buf.iter().position(|b| *b == b'\n') {
            let line = buf[..pos].to_vec();
            buf.drain(..=pos);
            return line;
        }
        let mut chunk = [0u8; 8192];
        let n = reader.read(&mut chunk).await.expect("read");
        assert!(n > 0, "the server closed stdout during the handshake");
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Runs the phase against `binary`.
pub fn run(binary: &Path, args: &[&str], wiring: Wiring, calls: u64, window: usize) -> Measure {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (mut child, to_child, from_child) = spawn_stdio(binary, args, wiring);
    let (cpu_before, wall, latencies, mut writer) = rt.block_on(async {
        let (mut writer, mut reader) = async_ends(wiring, to_child, from_child);
        let mut pending = Vec::with_capacity(64 * 1024);
        writer
            .write_all(format!("{INITIALIZE}\n{INITIALIZED}\n").as_bytes())
            .await
            .expect("write");
        let init = read_line(&mut reader, &mut pending).await;
        assert!(
            contains(&init, b"\"protocolVersion\""),
            "bad initialize answer: {}",
            String::from_utf8_lossy(&init)
        );
        let cpu_before = child.cpu_us_now();

        let start = Instant::now();
        let sent: Rc<RefCell<Vec<Instant>>> =
            Rc::new(RefCell::new(vec![start; calls as usize + 1]));
        let permits = Rc::new(Semaphore::new(window));
        let write_side = {
            let sent = Rc::clone(&sent);
            let permits = Rc::clone(&permits);
            let writer = &mut writer;
            async move {
                let mut next: u64 = 1;
                let mut buf = Vec::with_capacity(window * 128);
                while next <= calls {
                    permits.acquire().await.expect("open").forget();
                    let mut batch = 1;
                    while let Ok(p) = permits.try_acquire() {
                        p.forget();
                        batch += 1;
                    }
                    let now = Instant::now();
                    {
                        let mut sent = sent.borrow_mut();
                        for _ in 0..batch {
                            if next > calls {
                                break;
                            }
                            echo_request(&mut buf, next);
                            sent[next as usize] = now;
                            next += 1;
                        }
                    }
                    writer.write_all(&buf).await.expect("write");
                    buf.clear();
                }
            }
        };
        let read_side = {
            let sent = Rc::clone(&sent);
            let permits = Rc::clone(&permits);
            async move {
                let mut latencies: Vec<u64> = Vec::with_capacity(calls as usize);
                let mut buf = std::mem::take(&mut pending);
                let mut seen = 0u64;
                let mut chunk = vec![0u8; 256 * 1024];
                while seen < calls {
                    let mut start = 0;
                    let now = Instant::now();
                    while let Some(pos) = buf[start..].iter().position(|b| *b == b'\n') {
                        let line = &buf[start..start + pos];
                        start += pos + 1;
                        let id = response_id(line).expect("response without an integer id");
                        assert!(
                            contains(line, ECHO_TEXT.as_bytes()) && !contains(line, b"\"error\""),
                            "unexpected answer: {}",
                            String::from_utf8_lossy(line)
                        );
                        let t = sent.borrow()[id as usize];
                        latencies.push(now.duration_since(t).as_nanos() as u64);
                        seen += 1;
                        permits.add_permits(1);
                    }
                    buf.drain(..start);
                    if seen >= calls {
                        break;
                    }
                    let n = reader.read(&mut chunk).await.expect("read");
                    assert!(n > 0, "the server closed stdout after {seen} answers");
                    buf.extend_from_slice(&chunk[..n]);
                }
                latencies
            }
        };
        let ((), latencies) = tokio::join!(write_side, read_side);
        let wall = start.elapsed();
        (cpu_before, wall, latencies, writer)
    });
    let (hwm, _) = child.rss_kib();
    rt.block_on(async {
        let _ = writer.shutdown().await;
    });
    drop(writer);
    let usage = child.wait_usage(Duration::from_secs(10));
    let cpu = (usage.cpu_us - cpu_before).max(0.0);
    let mut lat = latencies;
    lat.sort_unstable();
    Measure {
        requests: calls,
        rps: calls as f64 / wall.as_secs_f64(),
        p50_us: percentile(&lat, 0.50) / 1000.0,
        p99_us: percentile(&lat, 0.99) / 1000.0,
        cpu_us_per_req: cpu / calls as f64,
        // VmHWM of the server's own image: ru_maxrss would also count the driver's pages
        // the child had between fork and exec.
        peak_rss_kib: hwm,
        errors: 0,
    }
}
