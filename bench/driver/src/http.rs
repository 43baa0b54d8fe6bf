//! The HTTP phases: `clients` concurrent clients, each on its own keep-alive connection,
//! each sending `tools/call echo` back to back for a fixed time, in the handshake era
//! (initialize once per client, then calls with `Mcp-Session-Id`) or the 2026-07-28 era
//! (stateless: `_meta` and the `MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name` headers).

use std::cell::RefCell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::Request;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;

use crate::proc::{Child, Program, spawn_quiet};
use crate::stats::{Measure, percentile};
use crate::stdio::ECHO_TEXT;

/// Which protocol era the clients speak.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Era {
    /// initialize + Mcp-Session-Id (2025-11-25).
    Handshake,
    /// Stateless 2026-07-28.
    Modern,
}

impl Era {
    pub fn name(self) -> &'static str {
        match self {
            Era::Handshake => "handshake",
            Era::Modern => "2026-07-28",
        }
    }
}

pub const PATH: &str = "/mcp";
const HANDSHAKE_VERSION: &str = "2025-11-25";
const MODERN_VERSION: &str = "2026-07-28";

/// A port nobody listens on right now.
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

/// Starts `program` as an HTTP server on a free port; `None` if it never accepts.
pub fn start(program: &Program, limit: Duration) -> Option<(Child, SocketAddr, Duration)> {
    let port = free_port();
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let bind = addr.to_string();
    let started = Instant::now();
    let mut child = spawn_quiet(program, &["--transport", "http", "--bind", &bind]);
    loop {
        if std::net::TcpStream::connect(addr).is_ok() {
            return Some((child, addr, started.elapsed()));
        }
        if started.elapsed() > limit || child.has_exited() {
            child.stop();
            return None;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}

pub struct Client {
    send: SendRequest<Full<Bytes>>,
    host: String,
    session: Option<String>,
    era: Era,
    next_id: u64,
}

/// A keep-alive HTTP/1 connection to `addr` (TCP_NODELAY set), driven on this thread's
/// local set: the sender and the `Host` header value.
pub async fn open(addr: SocketAddr) -> (SendRequest<Full<Bytes>>, String) {
    let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let _ = tcp.set_nodelay(true);
    let (send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
        .await
        .expect("http handshake");
    tokio::task::spawn_local(async move {
        let _ = conn.await;
    });
    (send, addr.to_string())
}

impl Client {
    pub async fn connect(addr: SocketAddr, era: Era) -> Client {
        let (send, host) = open(addr).await;
        Client {
            send,
            host,
            session: None,
            era,
            next_id: 1,
        }
    }

    fn request(&self, body: String, method: Option<(&str, Option<&str>)>) -> Request<Full<Bytes>> {
        let mut b = Request::post(PATH)
            .header("host", &self.host)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        match self.era {
            Era::Handshake => {
                if let Some(s) = &self.session {
                    b = b
                        .header("mcp-session-id", s)
                        .header("mcp-protocol-version", HANDSHAKE_VERSION);
                }
            }
            Era::Modern => {
                b = b.header("mcp-protocol-version", MODERN_VERSION);
                if let Some((m, name)) = method {
                    b = b.header("mcp-method", m);
                    if let Some(n) = name {
                        b = b.header("mcp-name", n);
                    }
                }
            }
        }
        b.body(Full::new(Bytes::from(body))).expect("request")
    }

    async fn send(&mut self, req: Request<Full<Bytes>>) -> (u16, Option<String>, Bytes) {
        self.send.ready().await.expect("connection ready");
        let resp = self.send.send_request(req).await.expect("response");
        let status = resp.status().as_u16();
        let session = resp
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = resp.into_body().collect().await.expect("body").to_bytes();
        (status, session, body)
    }

    /// The handshake era's initialize + initialized; nothing on 2026-07-28.
    pub async fn open(&mut self) {
        if self.era == Era::Modern {
            return;
        }
        self.initialize().await;
        let req = self.request(
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned(),
            None,
        );
        let (status, _, _) = self.send(req).await;
        assert!(status == 202 || status == 200, "initialized: {status}");
    }

    /// `initialize` (handshake era), keeping the session id.
    pub async fn initialize(&mut self) {
        let init = format!(
            r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"{HANDSHAKE_VERSION}","capabilities":{{}},"clientInfo":{{"name":"bench-driver","version":"0"}}}}}}"#
        );
        let req = self.request(init, None);
        let (status, session, body) = self.send(req).await;
        assert_eq!(
            status,
            200,
            "initialize: {}",
            String::from_utf8_lossy(&body)
        );
        assert!(
            contains(&body, b"protocolVersion"),
            "initialize: {}",
            String::from_utf8_lossy(&body)
        );
        self.session = session;
    }

    /// One `tools/call echo`; `true` if it was answered correctly.
    pub async fn call(&mut self) -> bool {
        let id = self.next_id;
        self.next_id += 1;
        let body = match self.era {
            Era::Handshake => format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{ECHO_TEXT}"}}}}}}"#
            ),
            Era::Modern => format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{ECHO_TEXT}"}},"_meta":{{"io.modelcontextprotocol/protocolVersion":"{MODERN_VERSION}","io.modelcontextprotocol/clientCapabilities":{{}},"io.modelcontextprotocol/clientInfo":{{"name":"bench-driver","version":"0"}}}}}}}}"#
            ),
        };
        let req = self.request(body, Some(("tools/call", Some("echo"))));
        let (status, _, body) = self.send(req).await;
        let ok = status == 200
            && contains(&body, ECHO_TEXT.as_bytes())
            && !contains(&body, b"\"error\"");
        if !ok {
            eprintln!(
                "bad answer ({status}): {}",
                String::from_utf8_lossy(&body[..body.len().min(300)])
            );
        }
        ok
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// Runs one phase on a fresh server process. `None` if the server has no HTTP transport.
pub fn run(program: &Program, era: Era, clients: usize, duration: Duration) -> Option<Measure> {
    let (mut child, addr, _) = start(program, Duration::from_secs(10))?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let local = tokio::task::LocalSet::new();
    let (cpu_before, wall, lat, errors) = local.block_on(&rt, async {
        let mut conns = Vec::with_capacity(clients);
        for _ in 0..clients {
            let mut c = Client::connect(addr, era).await;
            c.open().await;
            conns.push(c);
        }
        // One warm-up call each, so lazily built state is not timed.
        for c in &mut conns {
            c.call().await;
        }
        let cpu_before = child.cpu_us_now();
        let latencies = Rc::new(RefCell::new(Vec::<u64>::with_capacity(1 << 20)));
        let errors = Rc::new(RefCell::new(0u64));
        let start = Instant::now();
        let deadline = start + duration;
        let mut tasks = Vec::new();
        for mut c in conns {
            let latencies = Rc::clone(&latencies);
            let errors = Rc::clone(&errors);
            tasks.push(tokio::task::spawn_local(async move {
                while Instant::now() < deadline {
                    let t = Instant::now();
                    let ok = c.call().await;
                    let dt = t.elapsed().as_nanos() as u64;
                    if ok {
                        latencies.borrow_mut().push(dt);
                    } else {
                        *errors.borrow_mut() += 1;
                    }
                }
            }));
        }
        for t in tasks {
            let _ = t.await;
        }
        let wall = start.elapsed();
        let lat = std::mem::take(&mut *latencies.borrow_mut());
        let errors = *errors.borrow();
        (cpu_before, wall, lat, errors)
    });
    let (hwm, _) = child.rss_kib();
    let usage = child.stop();
    drop(rt);
    let mut lat = lat;
    lat.sort_unstable();
    let n = lat.len() as u64;
    if n == 0 {
        // Not one request answered: this server does not serve this era over HTTP.
        return None;
    }
    let cpu = (usage.cpu_us - cpu_before).max(0.0);
    Some(Measure {
        requests: n,
        rps: n as f64 / wall.as_secs_f64(),
        p50_us: percentile(&lat, 0.50) / 1000.0,
        p99_us: percentile(&lat, 0.99) / 1000.0,
        cpu_us_per_req: cpu / n.max(1) as f64,
        // VmHWM of the server's own image: ru_maxrss would also count the driver's pages
        // the child had between fork and exec.
        peak_rss_kib: hwm,
        errors,
    })
}
