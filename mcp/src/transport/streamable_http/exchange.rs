//! The one exchange driver: runs a POST's requests and answers with one JSON body when
//! their replies come before anything else, or turns the response into an SSE stream as
//! soon as a request sends something first (progress, a log message, a question to the
//! client). Local sessions, cluster sessions and stateless requests differ only in where
//! the stream's frames go, which a [`StreamLog`] says.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;

use axum::body::Bytes;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::layers::BoxFuture;
use crate::server::{Outbound, OutboundReceiver, Reply};
use crate::util::spare_box;

/// Frames buffered between a stream's producer and its HTTP response before the response
/// is considered too slow and detached (the client can resume from the store).
pub(crate) const LIVE_CAPACITY: usize = 256;

/// How a POST is answered, decided by what its requests produce first.
pub(crate) enum Answer {
    /// The replies came before anything else: one JSON body (a batch's replies as one array).
    Json(Reply),
    /// Something came first: the response is an SSE stream of what arrives here (the
    /// channel is made only then: most exchanges never need one).
    Stream(mpsc::Receiver<Bytes>),
    /// Nothing to answer (the request was cancelled).
    Nothing,
}

/// Where the frames of an exchange that became a stream go.
pub(crate) trait StreamLog: Send {
    /// The response becomes a stream whose events go to `live` (called once, before the
    /// first frame).
    fn open(&mut self, live: mpsc::Sender<Bytes>) -> BoxFuture<'_, ()>;

    /// One frame the requests sent before their replies; `false` when nobody reads the
    /// stream any more, which ends the exchange.
    fn publish(&mut self, frame: String) -> BoxFuture<'_, bool>;

    /// The replies, which end the stream.
    fn finish(&mut self, replies: Vec<Reply>) -> BoxFuture<'_, ()>;

    /// The requests are done and nothing is answered yet (a cluster session saves what the
    /// requests changed here, so the client's next request sees it wherever it lands).
    fn settle(&mut self) -> BoxFuture<'_, ()> {
        done()
    }

    /// The exchange stopped before its requests finished (their session closed).
    fn abandon(&mut self) -> BoxFuture<'_, ()> {
        done()
    }
}

/// A finished step of a [`StreamLog`] that had nothing to wait for. Boxing a zero-sized
/// future allocates nothing, where boxing `async {}` or `ready(())` (one byte of state
/// each) allocates on every exchange.
pub(crate) fn done<'a>() -> BoxFuture<'a, ()> {
    Box::pin(Done)
}

/// A future that is ready at once with nothing, and has no state.
struct Done;

impl Future for Done {
    type Output = ();

    fn poll(self: Pin<&mut Self>, _: &mut std::task::Context<'_>) -> Poll<()> {
        Poll::Ready(())
    }
}

/// The outbound channel of one exchange: what its requests send before their replies
/// arrives on it. Taken from this worker thread's spare when there is one
/// ([`Channel::take`]) and given back when the exchange is done ([`Channel::give_back`]).
pub(super) struct Channel {
    /// Kept by the exchange itself, so that the channel outlives its requests' copies.
    sink: Outbound,
    rx: OutboundReceiver,
    capacity: usize,
}

thread_local! {
    /// Making a channel per exchange was ~1,150 instructions of an HTTP request's ~46,000
    /// (callgrind), and its shared part is a cache-line-aligned allocation: glibc serves
    /// those under its arena lock, which the other worker contends for.
    static SPARE_CHANNEL: std::cell::Cell<Option<Channel>> = const { std::cell::Cell::new(None) };
}

impl Channel {
    /// A channel holding `capacity` frames: this thread's spare when it has one of that
    /// capacity, a new one otherwise.
    pub(super) fn take(capacity: usize) -> Channel {
        match SPARE_CHANNEL.take() {
            Some(spare) if spare.capacity == capacity => spare,
            _ => {
                let (sink, rx) = Outbound::channel(capacity);
                Channel { sink, rx, capacity }
            }
        }
    }

    /// A sender for one of the exchange's requests.
    pub(super) fn sink(&self) -> Outbound {
        self.sink.clone()
    }

    /// Where the requests' frames arrive, for [`drive`].
    pub(super) fn receiver(&mut self) -> &mut OutboundReceiver {
        &mut self.rx
    }

    /// Keeps the channel as this thread's spare when it is as good as new: the exchange's
    /// own sender is the only one left (every request's copy is gone, so nothing can
    /// reach a later exchange's client) and nothing is queued.
    pub(super) fn give_back(self) {
        if self.sink.is_sole_sender() && self.rx.is_empty() {
            SPARE_CHANNEL.set(Some(self));
        }
    }
}

/// Starts an exchange (a [`drive`] and what sets it up): polled once right here, where
/// most requests finish and answer, and only otherwise moved to a task of its own (so a
/// client that goes away does not cancel it), which polls it again with a real waker.
/// A request answered on its first poll costs no task: no spawn, no scheduling, no wake
/// of the waiting handler. `make` makes the exchange in its box (see
/// [`spare_box::boxed_with`]). The handle of the task, when there is one.
pub(super) fn start<F>(make: impl FnOnce() -> F) -> Option<JoinHandle<()>>
where
    F: Future<Output = ()> + Send + 'static,
{
    let mut exchange = spare_box::boxed_with(make);
    match crate::util::poll_now(exchange.as_mut()) {
        Poll::Ready(()) => {
            spare_box::recycle(exchange);
            None
        }
        Poll::Pending => Some(crate::util::spawn(exchange)),
    }
}

/// Drives `work` (the requests, run together; what they send arrives on `rx`) to its
/// answer, sent on `answer` as soon as it is known. `premade` replies (refusals decided
/// before dispatch) go first; `batch` answers with an array. `stop` ends the exchange
/// without answering, unless the work has finished by then.
///
/// `work` comes pinned by the caller: an `async fn` keeps a future passed by value twice in
/// its state (as the argument and as the local it is moved to), and the requests' future
/// is most of an exchange's size (taken by value, the exchange was twice as large).
pub(super) async fn drive<R, W>(
    mut work: Pin<&mut W>,
    rx: &mut OutboundReceiver,
    premade: Vec<Reply>,
    batch: bool,
    stop: Option<&CancellationToken>,
    log: &mut dyn StreamLog,
    answer: oneshot::Sender<Answer>,
) where
    R: IntoIterator<Item = Option<Reply>>,
    W: Future<Output = R> + ?Sized,
{
    let stopped = async {
        match stop {
            Some(token) => token.cancelled().await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(stopped);
    let mut answer = Some(answer);
    let mut open = false;
    let mut sinks_open = true;
    let replies = loop {
        // The work first: most requests are answered on their first poll, and then the
        // stop's token is never polled (each poll of a token's wait takes its lock, twice).
        // A stop still comes before anything else the work sends.
        tokio::select! {
            biased;
            replies = work.as_mut() => break replies,
            _ = &mut stopped => {
                log.abandon().await;
                return;
            }
            frame = rx.recv(), if sinks_open => match frame {
                Some(frame) => {
                    if !open {
                        open = true;
                        open_stream(log, &mut answer).await;
                    }
                    if !log.publish(frame).await {
                        return;
                    }
                }
                None => sinks_open = false,
            },
        }
    };
    // Whatever was queued before the replies was produced before them.
    let mut early = Vec::new();
    while let Ok(frame) = rx.try_recv() {
        early.push(frame);
    }
    log.settle().await;
    let mut replies = premade.into_iter().chain(replies.into_iter().flatten());
    if !open && early.is_empty() {
        let body = if batch {
            Reply::batch(replies.collect())
        } else {
            replies.next()
        };
        if let Some(tx) = answer.take() {
            let _ = tx.send(body.map_or(Answer::Nothing, Answer::Json));
        }
        return;
    }
    if !open {
        open_stream(log, &mut answer).await;
    }
    for frame in early {
        if !log.publish(frame).await {
            return;
        }
    }
    log.finish(replies.collect()).await;
}

/// Turns the exchange's response into a stream: its channel, opened in `log`, and the
/// answer that hands its receiving end to the response.
async fn open_stream(log: &mut dyn StreamLog, answer: &mut Option<oneshot::Sender<Answer>>) {
    let (live, events) = mpsc::channel(LIVE_CAPACITY);
    log.open(live).await;
    if let Some(tx) = answer.take() {
        let _ = tx.send(Answer::Stream(events));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The capacity of this thread's spare channel, if it has one (left in place).
    fn spare_capacity() -> Option<usize> {
        let spare = SPARE_CHANNEL.take();
        let capacity = spare.as_ref().map(|s| s.capacity);
        SPARE_CHANNEL.set(spare);
        capacity
    }

    #[test]
    fn a_channel_is_kept_only_when_nothing_else_can_send_on_it() {
        // Another sender alive (a request's copy kept by a task it spawned): not kept, so
        // what that task sends later cannot reach the next exchange's client.
        let channel = Channel::take(8);
        let elsewhere = channel.sink();
        channel.give_back();
        assert_eq!(spare_capacity(), None);
        drop(elsewhere);

        // A frame still queued: not kept.
        let channel = Channel::take(8);
        assert!(channel.sink().try_send("late".into()));
        channel.give_back();
        assert_eq!(spare_capacity(), None);

        // The only sender, nothing queued: kept, and the next exchange of that capacity
        // takes it (the one after that makes its own).
        Channel::take(8).give_back();
        assert_eq!(spare_capacity(), Some(8));
        let mut channel = Channel::take(8);
        assert_eq!(spare_capacity(), None);
        assert!(channel.sink().try_send("frame".into()));
        assert_eq!(channel.receiver().try_recv().ok().as_deref(), Some("frame"));
    }

    #[test]
    fn a_spare_of_another_capacity_is_not_used() {
        Channel::take(8).give_back();
        let mut channel = Channel::take(2);
        assert_eq!(spare_capacity(), None);
        // The new channel has the capacity asked for: a third frame does not fit.
        let sink = channel.sink();
        assert!(sink.try_send("1".into()));
        assert!(sink.try_send("2".into()));
        assert!(!sink.try_send("3".into()));
        assert_eq!(channel.receiver().try_recv().ok().as_deref(), Some("1"));
    }
}
