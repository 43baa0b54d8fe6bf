//! Where outgoing messages go: a bounded queue of JSON frames that a transport drains.

use tokio::sync::mpsc;

/// Where outgoing messages for a connection (or one request's stream) go: a bounded queue
/// of JSON frames the transport drains.
#[derive(Clone, Debug)]
pub struct Outbound {
    tx: mpsc::Sender<String>,
}

/// The receiving end of an [`Outbound`]: the transport writes what arrives here.
pub type OutboundReceiver = mpsc::Receiver<String>;

impl Outbound {
    /// A queue holding at most `capacity` frames.
    pub fn channel(capacity: usize) -> (Outbound, OutboundReceiver) {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        (Outbound { tx }, rx)
    }

    /// Queues a frame without waiting. A full queue means the reader is too slow: the frame
    /// is dropped (and logged) rather than letting one client's backlog grow without bound.
    pub fn try_send(&self, frame: String) -> bool {
        match self.tx.try_send(frame) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Full(_)) => {
                tracing::warn!(target: "mcp::server", "outbound queue full; dropping a message for a slow client");
                false
            }
            Err(mpsc::error::TrySendError::Closed(_)) => false,
        }
    }

    /// Queues a frame, waiting for room (used for responses, which must not be dropped).
    pub async fn send(&self, frame: String) -> bool {
        self.tx.send(frame).await.is_ok()
    }

    /// Whether the receiving side is gone.
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }

    pub(crate) fn same_channel(&self, other: &Outbound) -> bool {
        self.tx.same_channel(&other.tx)
    }

    /// Whether this is the only way left to send on the channel (no other clone, no weak
    /// handle): then nothing can be queued on it behind this handle's back.
    #[cfg(feature = "http")]
    pub(crate) fn is_sole_sender(&self) -> bool {
        self.tx.strong_count() == 1 && self.tx.weak_count() == 0
    }
}
