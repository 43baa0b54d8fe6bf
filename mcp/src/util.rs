//! Small shared helpers.

mod flagged;
mod outlined;
pub(crate) mod spare_box;

pub(crate) use flagged::Flagged;
pub(crate) use outlined::Outlined;
#[cfg(feature = "http")]
pub(crate) use outlined::spawn;

use base64::Engine as _;

/// Polls `fut` once, right here, with a waker that does nothing: how a transport runs a
/// request's first poll inline (most requests finish in it) before deciding whether it
/// needs a task of its own. A future still pending must be polled again with a real
/// waker (its task's first poll does that), since any wake-up it asked for here is lost.
pub(crate) fn poll_now<F: std::future::Future + ?Sized>(
    fut: std::pin::Pin<&mut F>,
) -> std::task::Poll<F::Output> {
    fut.poll(&mut std::task::Context::from_waker(std::task::Waker::noop()))
}

/// `n` bytes from the operating system's CSPRNG, as unpadded URL-safe base64: unguessable
/// and made only of visible ASCII.
pub(crate) fn random_token(n: usize) -> String {
    let mut bytes = vec![0u8; n];
    if getrandom::fill(&mut bytes).is_err() {
        // Without an OS random source nothing here can be made safe; refuse loudly.
        panic!("the operating system's random number generator is unavailable");
    }
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// The text of a panic's payload, for the log (never for the client: it can carry upstream
/// bytes).
pub(crate) fn panic_message(payload: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(non-string panic payload)".to_owned()
    }
}

/// What the client is told when a `what` handler panicked: the kind of failure only.
pub(crate) fn callback_panicked(what: &str) -> String {
    format!(
        "callback_panicked: the {what} handler failed unexpectedly; the server log has the details"
    )
}
