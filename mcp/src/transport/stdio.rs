//! The stdio transport: newline-delimited JSON-RPC on standard input and output.
//!
//! stdin and stdout are driven by the async runtime directly when they are pipes or sockets
//! (Node.js hosts spawn servers with socket pairs, Python hosts with pipes), not by a
//! blocking thread per read. Each request is polled once as soon as it is read: most finish
//! there, and their replies are written together, one write per read; a request that has to
//! wait continues on its own task. Replies and notifications are queued and written in
//! batches, one write per batch of ready messages. stdout carries
//! protocol messages only. On stdin EOF, parked elicitations close, running requests get a
//! short grace period, and the transport returns.

use std::future::Future as _;
use std::io;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use memchr::memchr;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::protocol::jsonrpc::{Incoming, decode};
use crate::protocol::{ErrorObject, Message, methods};
use crate::server::{ConnId, Connection, Outbound, OutboundReceiver, Reply, Server, Transport};

/// How long running requests may finish after stdin closes.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(1);

const READ_CHUNK: usize = 64 * 1024;
const WRITE_BATCH: usize = 256 * 1024;

/// Serves `server` on the process's stdin and stdout until stdin closes.
pub async fn serve(server: Server) -> io::Result<()> {
    let fds = FdFlags::save();
    let reader = open_stdin()?;
    let writer = open_stdout()?;
    let result = serve_io(server, reader, writer).await;
    drop(fds);
    result
}

/// Serves `server` on any byte streams: newline-delimited JSON in, newline-delimited JSON
/// out. Returns when `reader` reaches EOF (after the grace period for running requests).
pub async fn serve_io<R, W>(server: Server, mut reader: R, writer: W) -> io::Result<()>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let max = server.config().max_message_size;
    let (out, rx) = Outbound::channel(server.config().outbound_capacity);
    let conn = Arc::new(server.connect(ConnId::new("stdio"), Transport::Stdio, out.clone()));
    let stop_writer = CancellationToken::new();
    let writer_task = tokio::spawn(write_loop(writer, rx, stop_writer.clone()));
    let tasks = TaskTracker::new();

    let mut buf: Vec<u8> = Vec::with_capacity(READ_CHUNK);
    let mut batch = String::new();
    let mut discarding = false;
    let read_result = loop {
        if buf.capacity() - buf.len() < READ_CHUNK / 4 {
            buf.reserve(READ_CHUNK);
        }
        let n = match reader.read_buf(&mut buf).await {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => break Err(e),
        };
        if n == 0 {
            if !discarding && !buf.is_empty() {
                let line = std::mem::take(&mut buf);
                handle_line(&conn, &out, &tasks, &line, &mut batch).await;
                flush_batch(&out, &mut batch).await;
            }
            break Ok(());
        }
        let mut start = 0;
        while let Some(pos) = memchr(b'\n', &buf[start..]) {
            let end = start + pos;
            if discarding {
                discarding = false;
            } else {
                handle_line(&conn, &out, &tasks, &buf[start..end], &mut batch).await;
                if batch.len() >= WRITE_BATCH {
                    flush_batch(&out, &mut batch).await;
                }
            }
            start = end + 1;
        }
        flush_batch(&out, &mut batch).await;
        buf.drain(..start);
        if buf.len() > max && !discarding {
            // An oversized message: answer once, then skip the rest of the line.
            discarding = true;
            buf.clear();
            let error = ErrorObject::invalid_request(format!(
                "Invalid request: the message exceeds the {max}-byte limit"
            ));
            out.send(Reply::error(None, &error).into_frame()).await;
        } else if discarding {
            buf.clear();
        }
    };

    // stdin is closed: nobody can answer a parked question any more.
    conn.close_pending();
    tasks.close();
    if tokio::time::timeout(SHUTDOWN_GRACE, tasks.wait())
        .await
        .is_err()
    {
        tracing::warn!(target: "mcp::stdio", "requests still running after stdin closed; abandoning them");
    }
    drop(conn);
    stop_writer.cancel();
    match writer_task.await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::debug!(target: "mcp::stdio", error = %e, "stdout closed"),
        Err(e) => tracing::error!(target: "mcp::stdio", error = %e, "writer task failed"),
    }
    read_result
}

async fn handle_line(
    conn: &Arc<Connection>,
    out: &Outbound,
    tasks: &TaskTracker,
    line: &[u8],
    batch: &mut String,
) {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return;
    }
    match decode(line) {
        Incoming::Single(Ok(message)) => {
            let runs_user_code = match &message {
                // The handshake runs inline so that nothing after it is handled before the
                // session exists.
                Message::Request(r) => r.method != methods::INITIALIZE,
                _ => false,
            };
            if runs_user_code {
                // Most requests finish without waiting for anything: poll once right here and
                // batch the reply with the others from this read. Only a request that has to
                // wait gets a task of its own (and is polled again there, with a real waker).
                let owned = Arc::clone(conn);
                let mut request = Box::pin(async move { owned.handle(message).await });
                let mut cx = Context::from_waker(Waker::noop());
                match request.as_mut().poll(&mut cx) {
                    Poll::Ready(reply) => push_reply(batch, reply),
                    Poll::Pending => {
                        let out = out.clone();
                        tasks.spawn(async move {
                            if let Some(reply) = request.await {
                                out.send(reply.into_frame()).await;
                            }
                        });
                    }
                }
            } else {
                // The handshake, notifications and answers run no user code: handle them in
                // order, inline.
                let reply = conn.handle(message).await;
                push_reply(batch, reply);
            }
        }
        Incoming::Single(Err(e)) => {
            push_reply(batch, Some(Reply::error(e.id(), &e.to_error())));
        }
        incoming @ Incoming::Batch(_) => {
            let conn = Arc::clone(conn);
            let out = out.clone();
            tasks.spawn(async move {
                if let Some(reply) = conn.handle_incoming(incoming).await {
                    out.send(reply.into_frame()).await;
                }
            });
        }
    }
}

/// Appends a reply to the batch of replies from one read (one JSON line each).
fn push_reply(batch: &mut String, reply: Option<Reply>) {
    if let Some(reply) = reply {
        if !batch.is_empty() {
            batch.push('\n');
        }
        batch.push_str(reply.frame());
    }
}

/// Queues the replies batched so far as one write.
async fn flush_batch(out: &Outbound, batch: &mut String) {
    if !batch.is_empty() {
        out.send(std::mem::take(batch)).await;
    }
}

async fn write_loop<W: AsyncWrite + Unpin>(
    mut writer: W,
    mut rx: OutboundReceiver,
    stop: CancellationToken,
) -> io::Result<()> {
    let mut buf: Vec<u8> = Vec::with_capacity(READ_CHUNK);
    loop {
        let first = tokio::select! {
            biased;
            frame = rx.recv() => frame,
            _ = stop.cancelled() => None,
        };
        let Some(first) = first else {
            // Stopping: write whatever is still queued, then finish.
            while let Ok(frame) = rx.try_recv() {
                push_frame(&mut buf, &frame);
            }
            if !buf.is_empty() {
                writer.write_all(&buf).await?;
            }
            return writer.flush().await;
        };
        push_frame(&mut buf, &first);
        while buf.len() < WRITE_BATCH {
            match rx.try_recv() {
                Ok(frame) => push_frame(&mut buf, &frame),
                Err(_) => break,
            }
        }
        writer.write_all(&buf).await?;
        writer.flush().await?;
        buf.clear();
    }
}

fn push_frame(buf: &mut Vec<u8>, frame: &str) {
    buf.extend_from_slice(frame.as_bytes());
    buf.push(b'\n');
}

type BoxReader = Box<dyn AsyncRead + Send + Unpin>;
type BoxWriter = Box<dyn AsyncWrite + Send + Unpin>;

/// What kind of file a standard stream is.
enum StreamKind {
    Pipe,
    Socket,
    Other,
}

fn kind_of(fd: &std::os::fd::OwnedFd) -> StreamKind {
    use std::os::unix::fs::FileTypeExt as _;
    let Ok(clone) = fd.try_clone() else {
        return StreamKind::Other;
    };
    match std::fs::File::from(clone).metadata() {
        Ok(m) if m.file_type().is_fifo() => StreamKind::Pipe,
        Ok(m) if m.file_type().is_socket() => StreamKind::Socket,
        _ => StreamKind::Other,
    }
}

/// stdin as an async reader: epoll-driven for pipes and sockets, the runtime's blocking
/// reader for anything else (a terminal, a file).
fn open_stdin() -> io::Result<BoxReader> {
    use std::os::fd::AsFd as _;
    let fd = io::stdin().as_fd().try_clone_to_owned()?;
    Ok(match kind_of(&fd) {
        StreamKind::Pipe => Box::new(tokio::net::unix::pipe::Receiver::from_owned_fd(fd)?),
        StreamKind::Socket => Box::new(unix_stream(fd)?),
        StreamKind::Other => Box::new(tokio::io::stdin()),
    })
}

/// stdout as an async writer, chosen like [`open_stdin`].
fn open_stdout() -> io::Result<BoxWriter> {
    use std::os::fd::AsFd as _;
    let fd = io::stdout().as_fd().try_clone_to_owned()?;
    Ok(match kind_of(&fd) {
        StreamKind::Pipe => Box::new(tokio::net::unix::pipe::Sender::from_owned_fd(fd)?),
        StreamKind::Socket => Box::new(unix_stream(fd)?),
        StreamKind::Other => Box::new(tokio::io::stdout()),
    })
}

fn unix_stream(fd: std::os::fd::OwnedFd) -> io::Result<tokio::net::UnixStream> {
    let std_stream = std::os::unix::net::UnixStream::from(fd);
    std_stream.set_nonblocking(true)?;
    tokio::net::UnixStream::from_std(std_stream)
}

/// Driving stdin/stdout asynchronously sets `O_NONBLOCK` on descriptions the parent may
/// share; restore the original flags on the way out.
struct FdFlags {
    saved: [(i32, i32); 2],
}

impl FdFlags {
    fn save() -> Self {
        // SAFETY: F_GETFL on the standard descriptors only reads flags.
        let get = |fd| unsafe { libc::fcntl(fd, libc::F_GETFL) };
        FdFlags {
            saved: [(0, get(0)), (1, get(1))],
        }
    }
}

impl Drop for FdFlags {
    fn drop(&mut self) {
        for (fd, flags) in self.saved {
            if flags >= 0 {
                // SAFETY: restores flags read from the same descriptor at start.
                unsafe {
                    libc::fcntl(fd, libc::F_SETFL, flags);
                }
            }
        }
    }
}
