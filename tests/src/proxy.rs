//! A TCP proxy on loopback whose link the test controls: it forwards to a target until it
//! is cut (every connection closed, new ones closed at once) or silenced (connections
//! stay open but nothing passes, as in a partition where packets are lost; what was held
//! passes once the link is healed).

use std::net::SocketAddr;

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
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                if *watching.borrow() == Link::Cut {
                    drop(client);
                    continue;
                }
                let watching = watching.clone();
                tokio::spawn(async move {
                    let Ok(upstream) = TcpStream::connect(target).await else {
                        return;
                    };
                    let (cr, cw) = client.into_split();
                    let (ur, uw) = upstream.into_split();
                    tokio::select! {
                        _ = pump(cr, uw, watching.clone()) => {}
                        _ = pump(ur, cw, watching) => {}
                    }
                });
            }
        });
        TcpProxy { addr, link, task }
    }

    /// `redis://` URL of the proxy.
    pub fn redis_url(&self) -> String {
        format!("redis://{}", self.addr)
    }

    /// Sets the link's state.
    pub fn set(&self, link: Link) {
        self.link.send_replace(link);
    }
}

impl Drop for TcpProxy {
    fn drop(&mut self) {
        self.set(Link::Cut);
        self.task.abort();
    }
}

/// Copies `from` to `to` while the link allows, until either side closes or the link is
/// cut.
async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mut link: watch::Receiver<Link>,
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
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}
