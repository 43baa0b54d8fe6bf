//! Futures whose drop code is compiled once.
//!
//! In an optimized build the compiler copies a type's drop code into every codegen unit
//! that drops it. The request pipeline's futures are state machines nested a dozen deep
//! (dispatch, route, the method match, a tool call), so each copy was ~10 KiB and there
//! were a dozen: drop code was a fifth of the benchmark server's machine code. [`Outlined`]
//! holds a future where the compiler's glue cannot see it and drops it from one
//! out-of-line function; wrapping the pipeline's entry points and the big spawned tasks
//! took that server's code from 4.41 to 3.82 MB (`cargo bloat`), at the price of one call
//! per dropped future.

use std::future::Future;
use std::mem::ManuallyDrop;
use std::pin::Pin;
use std::task::{Context, Poll};

/// `tokio::spawn` for a big future: the task's stages (tokio keeps the future in two
/// wrappers and a spawn frame, each with drop glue of its own) share one copy of its drop
/// code.
#[cfg(feature = "http")]
pub(crate) fn spawn<F>(task: F) -> tokio::task::JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    tokio::spawn(Outlined::new(task))
}

/// `F`, dropped by one shared function instead of inline drop glue.
pub(crate) struct Outlined<F>(ManuallyDrop<F>);

impl<F> Outlined<F> {
    pub(crate) fn new(inner: F) -> Self {
        Outlined(ManuallyDrop::new(inner))
    }
}

impl<F> Drop for Outlined<F> {
    #[inline(never)]
    fn drop(&mut self) {
        // SAFETY: `drop` runs once and the field is never touched again. Dropping in
        // place keeps the promise a pinned `F` was given: it is not moved before it is
        // dropped.
        unsafe { ManuallyDrop::drop(&mut self.0) }
    }
}

impl<F: Future> Future for Outlined<F> {
    type Output = F::Output;

    // Left to the inliner: `#[inline(never)]` here cost 3-4% of a stdio call's CPU and did
    // not make the binary smaller.
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: structural pinning: `F` is never moved out of `self` (nor out of its
        // `ManuallyDrop`, which is `F` in place), and `Outlined` is not `Unpin` unless `F` is.
        unsafe { self.map_unchecked_mut(|o| &mut *o.0) }.poll(cx)
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::future::Future;
    use std::pin::{Pin, pin};
    use std::rc::Rc;
    use std::task::{Context, Poll, Waker};

    use super::Outlined;

    /// Ready on its second poll; remembers where it was polled and checks, when dropped,
    /// that it was dropped there (a pinned value must not move before its drop).
    struct Pinned {
        polls: u32,
        polled_at: Option<usize>,
        drops: Rc<Cell<u32>>,
        moved: Rc<Cell<bool>>,
    }

    impl Future for Pinned {
        type Output = u32;

        fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<u32> {
            // SAFETY: test code; nothing is moved out.
            let this = unsafe { self.get_unchecked_mut() };
            this.polled_at = Some(this as *const Pinned as usize);
            this.polls += 1;
            if this.polls == 2 {
                Poll::Ready(this.polls)
            } else {
                Poll::Pending
            }
        }
    }

    impl Drop for Pinned {
        fn drop(&mut self) {
            self.drops.set(self.drops.get() + 1);
            if let Some(at) = self.polled_at {
                self.moved.set(at != self as *const Pinned as usize);
            }
        }
    }

    fn pinned() -> (Pinned, Rc<Cell<u32>>, Rc<Cell<bool>>) {
        let drops = Rc::new(Cell::new(0));
        let moved = Rc::new(Cell::new(false));
        let fut = Pinned {
            polls: 0,
            polled_at: None,
            drops: Rc::clone(&drops),
            moved: Rc::clone(&moved),
        };
        (fut, drops, moved)
    }

    #[test]
    fn polls_through_to_the_inner_future() {
        let (fut, drops, _) = pinned();
        let mut fut = pin!(Outlined::new(fut));
        let mut cx = Context::from_waker(Waker::noop());
        assert_eq!(fut.as_mut().poll(&mut cx), Poll::Pending);
        assert_eq!(fut.as_mut().poll(&mut cx), Poll::Ready(2));
        assert_eq!(drops.get(), 0, "finishing is not dropping");
    }

    #[test]
    fn drops_the_inner_future_once_where_it_was_pinned() {
        let (fut, drops, moved) = pinned();
        {
            let mut fut = pin!(Outlined::new(fut));
            let mut cx = Context::from_waker(Waker::noop());
            assert_eq!(fut.as_mut().poll(&mut cx), Poll::Pending);
            // Dropped here, half done: the way a cancelled request's future goes.
        }
        assert_eq!(drops.get(), 1);
        assert!(
            !moved.get(),
            "a pinned future was moved before it was dropped"
        );
    }

    #[test]
    fn an_unpolled_future_is_dropped_too() {
        let (fut, drops, _) = pinned();
        drop(Outlined::new(fut));
        assert_eq!(drops.get(), 1);
    }
}
