//! A TCP proxy on loopback whose link the test controls: it forwards to a target until it
//! is cut (every connection closed, new ones closed at once) or silenced (connections
//! stay open but nothing passes, as in a partition where packets are lost; what was held
//! passes once the link is healed). It can also lose its open connections silently (a
//! connection-tracking table flushed on the way): what they carry vanishes, neither side
//! hears of it, and new connections pass.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// The state of a [`TcpProxy`]'s link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Link {
    /// Bytes pass.
    Up,
    /// Every connection is closed, and new ones are closed as soon as accepted.
    Cut,
    /// Connections are accepted and kept, but no byte passes until the link is up again.
    Silent,
}

/// A proxy in front of one target.
pub struct TcpProxy {
    addr: SocketAddr,
    link: watch::Sender<Link>,
    /// How many connections were accepted (they are numbered from 1).
    accepted: Arc<AtomicU64>,
    /// Connections numbered up to it are lost.
    lost_up_to: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl TcpProxy {
    /// Listens on a free loopback port and forwards to `target` (must be called inside a
    /// Tokio runtime).
    pub async fn start(target: SocketAddr) -> TcpProxy {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a proxy");
        let addr = listener.local_addr().expect("the proxy's address");
        let (link, watching) = watch::channel(Link::Up);
        let accepted = Arc::new(AtomicU64::new(0));
        let lost_up_to = Arc::new(AtomicU64::new(0));
        let (counter, lost) = (Arc::clone(&accepted), Arc::clone(&lost_up_to));
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let number = counter.fetch_add(1, Ordering::SeqCst) + 1;
                if *watching.borrow() == Link::Cut {
                    drop(client);
                    continue;
                }
                let watching = watching.clone();
                let lost = Arc::clone(&lost);
                tokio::spawn(async move {
                    let Ok(upstream) = TcpStream::connect(target).await else {
                        return;
                    };
                    let (cr, cw) = client.into_split();
                    let (ur, uw) = upstream.into_split();
                    let is_lost = move || number <= lost.load(Ordering::SeqCst);
                    tokio::select! {
                        _ = pump(cr, uw, watching.clone(), is_lost.clone()) => {}
                        _ = pump(ur, cw, watching, is_lost) => {}
                    }
                });
            }
        });
        TcpProxy {
            addr,
            link,
            accepted,
            lost_up_to,
            task,
        }
    }

    /// `redis://` URL of the proxy.
    pub fn redis_url(&self) -> String {
        format!("redis://{}", self.addr)
    }

    /// Sets the link's state.
    pub fn set(&self, link: Link) {
        self.link.send_replace(link);
    }

    /// Loses every connection accepted so far, silently: they stay open, and whatever
    /// either side sends on them vanishes. New connections pass as the link allows.
    pub fn lose_open_connections(&self) {
        self.lost_up_to
            .store(self.accepted.load(Ordering::SeqCst), Ordering::SeqCst);
    }
}

impl Drop for TcpProxy {
    fn drop(&mut self) {
        self.set(Link::Cut);
        self.task.abort();
    }
}

/// Copies `from` to `to` while the link allows, until either side closes or the link is
/// cut; a lost connection's bytes are read and dropped.
async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mut link: watch::Receiver<Link>,
    is_lost: impl Fn() -> bool,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = tokio::select! {
            read = from.read(&mut buf) => match read {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            },
            _ = link.wait_for(|l| *l == Link::Cut) => return,
        };
        // Held while silent; dropped with the connection if cut.
        match link.wait_for(|l| *l != Link::Silent).await {
            Ok(l) if *l == Link::Up => {}
            _ => return,
        }
        if is_lost() {
            continue;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}
