//! The stdio transport: newline-delimited JSON-RPC on standard input and output.
//!
//! stdin and stdout are driven by the async runtime directly when they are pipes or sockets
//! (Node.js hosts spawn servers with socket pairs, Python hosts with pipes), not by a
//! blocking thread per read. Each request is polled once as soon as it is read: most finish
//! there, and their replies are written together, one write per read; a request that has to
//! wait continues on its own task. Replies and notifications are queued and written in
//! batches, one write per batch of ready messages. stdout carries
//! protocol messages only. On stdin EOF, parked elicitations close, running requests get a
//! short grace period, and the transport returns. On SIGTERM ([`serve`]) or a stop signal
//! of the caller's ([`serve_io_until`]), new requests are refused while running ones get
//! [`ServerConfig::shutdown_grace`](crate::server::ServerConfig::shutdown_grace) to finish.
//!
//! A client that writes faster than it reads gets backpressure, not an ever-growing
//! backlog: with twice `max_requests_per_connection` requests unanswered, input is not read
//! until one is answered.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::Poll;
use std::time::Duration;

use memchr::memchr;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::protocol::jsonrpc::{Incoming, decode, is_json_whitespace};
use crate::protocol::{ErrorObject, Message, methods};
use crate::server::{ConnId, Connection, Outbound, OutboundReceiver, Reply, Server, Transport};
use crate::util::spare_box;

/// How long running requests may finish after stdin closes.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(1);

const READ_CHUNK: usize = 64 * 1024;
const WRITE_BATCH: usize = 256 * 1024;
/// From this size on, a frame is written from its own buffer instead of being copied into
/// the write batch (copying costs more than the write call saved).
const DIRECT_WRITE: usize = 64 * 1024;
/// Room a batch of replies makes when it outgrows its first reply: a read of pipelined
/// calls brings dozens (64 in flight: ~7 KiB of small results).
const BATCH_ROOM: usize = 16 * 1024;

/// Serves `server` on the process's stdin and stdout until stdin closes or the process is
/// sent SIGTERM. On SIGTERM no new request is accepted (each gets an error), answers and
/// cancellations are still read, and running requests get
/// [`ServerConfig::shutdown_grace`](crate::server::ServerConfig::shutdown_grace) to finish.
pub async fn serve(server: Server) -> io::Result<()> {
    let fds = FdFlags::save();
    let reader = open_stdin()?;
    let writer = open_stdout()?;
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let stop = async move {
        term.recv().await;
    };
    let result = serve_io_until(server, reader, writer, stop).await;
    drop(fds);
    result
}

/// Serves `server` on any byte streams: newline-delimited JSON in, newline-delimited JSON
/// out. Returns when `reader` reaches EOF (after the grace period for running requests).
pub async fn serve_io<R, W>(server: Server, reader: R, writer: W) -> io::Result<()>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_io_until(server, reader, writer, std::future::pending()).await
}

/// Like [`serve_io`], and stops gracefully when `stop` completes (what [`serve`] does on
/// SIGTERM): new requests are refused with an error, answers to the server's questions and
/// cancellations are still read, listen streams end with their final result, and running
/// requests get [`ServerConfig::shutdown_grace`](crate::server::ServerConfig::shutdown_grace)
/// to finish before the transport returns.
pub async fn serve_io_until<R, W, S>(
    server: Server,
    reader: R,
    writer: W,
    stop: S,
) -> io::Result<()>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
    S: Future<Output = ()> + Send,
{
    let config = server.config().clone();
    let (out, rx) = Outbound::channel(config.outbound_capacity);
    let conn = Arc::new(server.connect(ConnId::new("stdio"), Transport::Stdio, out.clone()));
    let stop_writer = CancellationToken::new();
    let mut writer_task = tokio::spawn(write_loop(writer, rx, stop_writer.clone()));
    let lines = Lines {
        conn: &conn,
        out: &out,
        tasks: TaskTracker::new(),
        // A client that sends faster than it reads gets backpressure: past this many
        // unanswered requests, input is not read until one is answered.
        slots: Arc::new(Semaphore::new(
            config.max_requests_per_connection.saturating_mul(2),
        )),
        stopping: AtomicBool::new(false),
    };

    let (read_result, deadline) = {
        let mut reading = std::pin::pin!(read_loop(reader, &lines, config.max_message_size));
        tokio::select! {
            r = &mut reading => (r, Instant::now() + SHUTDOWN_GRACE),
            () = stop => {
                let deadline = Instant::now() + config.shutdown_grace;
                tracing::info!(target: "mcp::stdio", running = lines.tasks.len(), grace = ?config.shutdown_grace, "stopping: new requests are refused; running ones may finish");
                lines.stopping.store(true, Ordering::Relaxed);
                server.shutdown();
                lines.tasks.close();
                // Keep reading: a running call may be waiting for the client's answer.
                let r = tokio::select! {
                    r = &mut reading => r,
                    () = lines.tasks.wait() => Ok(()),
                    () = tokio::time::sleep_until(deadline) => Ok(()),
                };
                (r, deadline)
            }
        }
    };

    // Input is closed (or no longer read): nobody can answer a parked question any more.
    conn.close_pending();
    lines.tasks.close();
    if tokio::time::timeout_at(deadline, lines.tasks.wait())
        .await
        .is_err()
    {
        tracing::warn!(target: "mcp::stdio", running = lines.tasks.len(), "requests still running at the end of the grace period; cancelling them");
        conn.cancel_running();
        let _ = tokio::time::timeout(Duration::from_millis(100), lines.tasks.wait()).await;
    }
    drop(lines);
    drop(conn);
    stop_writer.cancel();
    // A client that stopped reading cannot keep the process alive: the last flush gets
    // the rest of the grace period too.
    match tokio::time::timeout_at(
        deadline.max(Instant::now() + SHUTDOWN_GRACE),
        &mut writer_task,
    )
    .await
    {
        Ok(Ok(Ok(()))) => {}
        Ok(Ok(Err(e))) => tracing::debug!(target: "mcp::stdio", error = %e, "stdout closed"),
        Ok(Err(e)) => tracing::error!(target: "mcp::stdio", error = %e, "writer task failed"),
        Err(_) => {
            tracing::warn!(target: "mcp::stdio", "stdout is not being read; dropping what is still queued");
            writer_task.abort();
        }
    }
    read_result
}

/// What every line is handled with.
struct Lines<'a> {
    conn: &'a Arc<Connection>,
    out: &'a Outbound,
    tasks: TaskTracker,
    slots: Arc<Semaphore>,
    /// Set once the server is stopping: requests are refused from then on (read on every
    /// line: a flag, not a token, whose every read takes a lock).
    stopping: AtomicBool,
}

/// Reads newline-delimited messages until EOF, refusing lines longer than `max`.
async fn read_loop<R: AsyncRead + Unpin>(
    mut reader: R,
    lines: &Lines<'_>,
    max: usize,
) -> io::Result<()> {
    let mut buf: Vec<u8> = Vec::with_capacity(READ_CHUNK);
    let mut batch = String::new();
    let mut discarding = false;
    loop {
        if buf.capacity() - buf.len() < READ_CHUNK / 4 {
            buf.reserve(READ_CHUNK);
        }
        let n = match reader.read_buf(&mut buf).await {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if n == 0 {
            if !discarding && !buf.is_empty() {
                let line = std::mem::take(&mut buf);
                handle_line(lines, &line, max, &mut batch).await;
                flush_batch(lines.out, &mut batch).await;
            }
            return Ok(());
        }
        let mut start = 0;
        while let Some(pos) = memchr(b'\n', &buf[start..]) {
            let end = start + pos;
            if discarding {
                discarding = false;
            } else {
                handle_line(lines, &buf[start..end], max, &mut batch).await;
                if batch.len() >= WRITE_BATCH {
                    flush_batch(lines.out, &mut batch).await;
                }
            }
            start = end + 1;
        }
        flush_batch(lines.out, &mut batch).await;
        buf.drain(..start);
        if buf.len() > max && !discarding {
            // An oversized message: answer once, then skip the rest of the line.
            discarding = true;
            buf.clear();
            lines.out.send(oversized(max)).await;
        } else if discarding {
            buf.clear();
        }
    }
}

/// A request that runs user code, as a future: polled once where it is read, and moved to a
/// task of its own if it has to wait (hence boxed).
async fn request(conn: Arc<Connection>, message: Message) -> Option<Reply> {
    conn.handle(message).await
}

/// Handles one line. Replies that are ready at once go to `batch`, which the caller writes
/// once per read; replies of requests that have to wait are sent by their own task.
async fn handle_line(lines: &Lines<'_>, line: &[u8], max: usize, batch: &mut String) {
    let Lines {
        conn,
        out,
        tasks,
        slots,
        stopping,
    } = lines;
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(is_json_whitespace) {
        return;
    }
    // A line can arrive whole in one read, never having crossed the limit while incomplete.
    if line.len() > max {
        batch_frame(batch, &oversized(max));
        return;
    }
    let incoming = decode(line);
    if stopping.load(Ordering::Relaxed) {
        // Shutting down: answers and notifications are still handled, requests are not.
        let refused = match &incoming {
            Incoming::Single(Ok(Message::Request(r))) => Some(Some(r.id.clone())),
            Incoming::Batch(_) => Some(None),
            _ => None,
        };
        if let Some(id) = refused {
            let error = ErrorObject::internal(
                "Internal error: the server is shutting down and accepts no new requests",
            );
            push_reply(batch, Some(Reply::error(id.as_ref(), &error)));
            return;
        }
    }
    match incoming {
        Incoming::Single(Ok(message)) => {
            let runs_user_code = match &message {
                // The handshake runs inline so that nothing after it is handled before the
                // session exists.
                Message::Request(r) => r.method != methods::INITIALIZE,
                _ => false,
            };
            if runs_user_code {
                // With every slot held by a request still running, wait until one is
                // answered before starting another. This loop is the only one that takes
                // slots, so one is still free below when the request has to wait.
                if slots.available_permits() == 0 && take_slot(slots, out, batch).await.is_none() {
                    return;
                }
                // Most requests finish without waiting for anything: poll once right here and
                // batch the reply with the others from this read (such a request never
                // holds a slot). Only a request that has to wait gets a task of its own (and
                // is polled again there, with a real waker), and keeps a slot until it is
                // answered.
                // The box is this thread's spare, and goes back to it (see `spare_box`).
                let mut request = spare_box::boxed_with(|| request(Arc::clone(conn), message));
                let first = crate::util::poll_now(request.as_mut());
                match first {
                    Poll::Ready(reply) => {
                        push_reply(batch, reply);
                        spare_box::recycle(request);
                    }
                    Poll::Pending => {
                        let Some(slot) = take_slot(slots, out, batch).await else {
                            return;
                        };
                        let out = (*out).clone();
                        tasks.spawn(async move {
                            if let Some(reply) = request.await {
                                out.send(reply.into_frame()).await;
                            }
                            drop(slot);
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
            let Some(slot) = take_slot(slots, out, batch).await else {
                return;
            };
            let conn = Arc::clone(conn);
            let out = (*out).clone();
            tasks.spawn(async move {
                if let Some(reply) = conn.handle_incoming(incoming).await {
                    out.send(reply.into_frame()).await;
                }
                drop(slot);
            });
        }
    }
}

/// A slot for one more unanswered request. When none is free, the replies batched so far
/// are written first: the client may be waiting for them before it answers what holds the
/// slots (an elicitation, say). `None` once the transport is closing.
async fn take_slot(
    slots: &Arc<Semaphore>,
    out: &Outbound,
    batch: &mut String,
) -> Option<OwnedSemaphorePermit> {
    if let Ok(slot) = Arc::clone(slots).try_acquire_owned() {
        return Some(slot);
    }
    flush_batch(out, batch).await;
    Arc::clone(slots).acquire_owned().await.ok()
}

/// The error for a line longer than `max` bytes.
fn oversized(max: usize) -> String {
    let error = ErrorObject::invalid_request(format!(
        "Invalid request: the message exceeds the {max}-byte limit"
    ));
    Reply::error(None, &error).into_frame()
}

/// Appends a reply to the batch of replies from one read (one JSON line each).
fn push_reply(batch: &mut String, reply: Option<Reply>) {
    match reply {
        // The first reply of a batch is the batch: its frame is kept, not copied.
        Some(reply) if batch.is_empty() => *batch = reply.into_frame(),
        Some(reply) => batch_frame(batch, reply.frame()),
        None => {}
    }
}

/// Appends one encoded frame to the batch.
fn batch_frame(batch: &mut String, frame: &str) {
    if !batch.is_empty() {
        if batch.capacity() - batch.len() <= frame.len() {
            // Grown once to hold a read's worth of replies (and the newline the writer
            // ends it with), not doubled from the first reply's exact size, which copied
            // the batch at every step.
            batch.reserve(frame.len() + 1 + BATCH_ROOM);
        }
        batch.push('\n');
    }
    batch.push_str(frame);
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
        if first.len() >= DIRECT_WRITE || (rx.is_empty() && first.capacity() > first.len()) {
            // A large frame (a page of a listing, a big result), or the only one queued
            // when it has room for its newline (a read's batch of replies has), goes out
            // from its own buffer, not copied into the batch; what is queued behind it goes
            // next. A frame of exactly its own size would be reallocated for the newline:
            // copying it into the batch costs less.
            let mut frame = first;
            frame.push('\n');
            writer.write_all(frame.as_bytes()).await?;
            writer.flush().await?;
            continue;
        }
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
