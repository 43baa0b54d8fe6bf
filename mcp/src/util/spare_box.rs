//! One spare allocation per thread for the box a request's future is polled in.
//!
//! A transport boxes each request's future so that it can poll it once in place and hand it
//! to a task of its own only if it has to wait. That future is a few KiB (the dispatcher's
//! deepest path is inlined into it): an allocation that size misses malloc's per-thread
//! cache, so glibc serves it from an arena under the arena's lock, and frees it the same
//! way, contending with the other worker threads that free into that arena. Most requests
//! finish on their first poll: their box goes back to the thread ([`recycle`]) and the
//! next request's future is made in it ([`boxed_with`]), whatever the transport or era, as
//! long as its layout is the same.

use std::alloc::{Layout, dealloc};
use std::cell::Cell;
use std::pin::Pin;
use std::ptr::NonNull;

/// The largest allocation a thread keeps: a request's future is far smaller, and a thread
/// should not hold on to an unusual giant.
const MAX_KEPT: usize = 16 * 1024;

/// An allocation of the global allocator, with nothing in it.
struct Block {
    ptr: NonNull<u8>,
    layout: Layout,
}

impl Drop for Block {
    fn drop(&mut self) {
        // SAFETY: `ptr` was allocated by the global allocator with `layout` (it came out of
        // a `Box` of a type with that layout), holds no value, and is owned by this block
        // alone.
        unsafe { dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

thread_local! {
    static SPARE: Cell<Option<Block>> = const { Cell::new(None) };
}

/// The value `make` makes, in a pinned box: this thread's spare allocation when it has the
/// layout `T` needs, a new one otherwise. The box is there before `make` runs, so the value
/// is made where it stays rather than made on the stack and copied (a request's future is
/// a few KiB, nearly all of it room for states it has not reached yet).
#[inline(always)]
pub(crate) fn boxed_with<T>(make: impl FnOnce() -> T) -> Pin<Box<T>> {
    Box::into_pin(Box::write(empty_box::<T>(), make()))
}

/// The value `make` makes, in a new pinned box, made there rather than on the stack and
/// copied (what [`boxed_with`] does, without the thread's spare: for futures of many
/// layouts, such as tool handlers').
#[inline(always)]
pub(crate) fn fresh_with<T>(make: impl FnOnce() -> T) -> Pin<Box<T>> {
    Box::into_pin(Box::write(Box::new_uninit(), make()))
}

/// An empty box for a `T`: this thread's spare allocation when it has `T`'s layout.
fn empty_box<T>() -> Box<std::mem::MaybeUninit<T>> {
    let layout = Layout::new::<T>();
    if layout.size() != 0
        && let Ok(Some(block)) = SPARE.try_with(Cell::take)
    {
        if block.layout == layout {
            let ptr = block.ptr.cast::<std::mem::MaybeUninit<T>>().as_ptr();
            std::mem::forget(block);
            // SAFETY: the block is an empty allocation of the global allocator with `T`'s
            // layout, now owned by nobody else (forgotten above): what `Box::new_uninit`
            // would have made.
            return unsafe { Box::from_raw(ptr) };
        }
        // Another layout: kept for whoever needs it (dropped if the thread is going away).
        let _ = SPARE.try_with(|spare| spare.set(Some(block)));
    }
    Box::new_uninit()
}

/// Drops the boxed value where it is and keeps its allocation as this thread's spare (the
/// spare it replaces is freed).
pub(crate) fn recycle<T>(done: Pin<Box<T>>) {
    let layout = Layout::new::<T>();
    if layout.size() == 0 || layout.size() > MAX_KEPT {
        return;
    }
    // SAFETY: the value is dropped in place and the memory is only reused after that,
    // which is all a pin promises.
    let ptr = Box::into_raw(unsafe { Pin::into_inner_unchecked(done) });
    // SAFETY: `ptr` holds a valid `T` that nothing else owns any more. Should its drop
    // panic, the allocation leaks; it is never freed twice.
    unsafe { std::ptr::drop_in_place(ptr) };
    let block = Block {
        // SAFETY: it came out of a `Box`, which is never null.
        ptr: unsafe { NonNull::new_unchecked(ptr.cast::<u8>()) },
        layout,
    };
    // On a thread that is going away the closure is dropped unrun, and the block with it.
    let _ = SPARE.try_with(move |spare| spare.set(Some(block)));
}

#[cfg(test)]
mod tests {
    use std::rc::Rc;

    use super::*;

    #[test]
    fn a_recycled_box_holds_the_next_value_of_the_same_layout() {
        let first = boxed_with(|| [1u64; 64]);
        let at = &*first as *const [u64; 64] as usize;
        recycle(first);
        // Same layout, another type: the same memory.
        let second = boxed_with(|| [2i64; 64]);
        assert_eq!(&*second as *const [i64; 64] as usize, at);
        assert!(second.iter().all(|&v| v == 2));
        // Another layout: a box of its own; the spare stays for its layout.
        let other = boxed_with(|| [3u8; 100]);
        assert_ne!(&*other as *const [u8; 100] as usize, at);
        drop(other);
        recycle(second);
        let third = boxed_with(|| [4u64; 64]);
        assert_eq!(&*third as *const [u64; 64] as usize, at);
    }

    #[test]
    fn a_value_that_fails_to_be_made_takes_nothing_with_it() {
        recycle(boxed_with(|| [1u64; 64]));
        // The spare is taken for the value; the panic frees it, and drops nothing that was
        // never made.
        let failed = std::panic::catch_unwind(|| {
            boxed_with(|| -> [u64; 64] { panic!("no value") });
        });
        assert!(failed.is_err());
        let next = boxed_with(|| [7u64; 64]);
        assert!(next.iter().all(|&v| v == 7));
    }

    #[test]
    fn recycling_drops_the_value_once() {
        let count = Rc::new(());
        let held = boxed_with(|| (Rc::clone(&count), [0u8; 256]));
        assert_eq!(Rc::strong_count(&count), 2);
        recycle(held);
        assert_eq!(Rc::strong_count(&count), 1);
        let again = boxed_with(|| (Rc::clone(&count), [1u8; 256]));
        assert_eq!(Rc::strong_count(&count), 2);
        drop(again);
        assert_eq!(Rc::strong_count(&count), 1);
    }

    #[test]
    fn giants_and_empty_types_do_not_displace_the_spare() {
        let small = boxed_with(|| [0u8; 64]);
        let at = &*small as *const [u8; 64] as usize;
        recycle(small);
        recycle(boxed_with(|| [0u8; MAX_KEPT + 1]));
        recycle(boxed_with(|| ()));
        let again = boxed_with(|| [5u8; 64]);
        assert_eq!(&*again as *const [u8; 64] as usize, at);
        assert_eq!(again[63], 5);
    }
}
