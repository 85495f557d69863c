//! The allocator runlog's programs use (feature `mimalloc`), and how it hands memory back
//! to the OS. Here, not in the binary, so that the core's examples and benchmarks allocate
//! exactly as `runlog` does and their instruction and page-fault counts are its.
//!
//! [`Mimalloc`] is mimalloc, called the way the C library is fastest: `mi_malloc` for the
//! alignments every block has anyway, the aligned entry points only beyond them. (The
//! `mimalloc` crate calls `mi_malloc_aligned` for every allocation, whose generic path was
//! a tenth of the reducer's instructions.)

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::{c_int, c_long, c_void};

use libmimalloc_sys as mi;

/// Alignment of every mimalloc block of at least this size (`MI_MAX_ALIGN_SIZE`); smaller
/// blocks are aligned to their size rounded up to a power of two, as `malloc`'s are.
const PLAIN_ALIGN: usize = 16;

/// mimalloc as the global allocator: `#[global_allocator] static A: Mimalloc = Mimalloc;`.
pub struct Mimalloc;

/// Whether a plain (unaligned) call gives a block aligned as `layout` asks: the rule
/// Rust's own `System` allocator applies to `malloc`.
#[inline]
fn plain(layout: &Layout) -> bool {
    layout.align() <= PLAIN_ALIGN && layout.align() <= layout.size()
}

// SAFETY: every call passes mimalloc's own functions a size and alignment from `layout`
// (the aligned ones where a plain block would not be aligned enough), and frees and
// reallocates only blocks mimalloc returned, as `GlobalAlloc` guarantees.
unsafe impl GlobalAlloc for Mimalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if plain(&layout) {
            mi::mi_malloc(layout.size()) as *mut u8
        } else {
            mi::mi_malloc_aligned(layout.size(), layout.align()) as *mut u8
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if plain(&layout) {
            mi::mi_zalloc(layout.size()) as *mut u8
        } else {
            mi::mi_zalloc_aligned(layout.size(), layout.align()) as *mut u8
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        mi::mi_free(ptr as *mut c_void);
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let new = Layout::from_size_align_unchecked(new_size, layout.align());
        if plain(&layout) && plain(&new) {
            mi::mi_realloc(ptr as *mut c_void, new_size) as *mut u8
        } else {
            mi::mi_realloc_aligned(ptr as *mut c_void, new_size, layout.align()) as *mut u8
        }
    }
}

extern "C" {
    /// mimalloc's option setter (in the library `libmimalloc-sys` links).
    fn mi_option_set(option: c_int, value: c_long);
    /// Frees the calling thread's empty pages and, forced, purges what is due at once.
    fn mi_collect(force: bool);
}

/// `mi_option_purge_delay` in mimalloc's `mi_option_e` (v2 and v3).
const MI_OPTION_PURGE_DELAY: c_int = 15;

/// Keeps freed memory for reuse instead of handing it back to the OS 10 ms later (the
/// default): ingest frees and allocates in waves (events, then batches, then Parquet pages),
/// and on the machines measured, zeroing fresh pages (`clear_page_erms` in the kernel) took
/// up to 40 % of an ingest when memory went back and forth. Peak RSS is unchanged for an
/// ingest in memory; a spilled ingest sets a delay instead ([`set_purge_delay`]).
pub fn keep_freed_memory() {
    set_purge_delay(-1);
}

/// Hands freed memory back to the OS `ms` milliseconds after it was freed (-1: never).
pub fn set_purge_delay(ms: c_long) {
    // SAFETY: sets an integer option; mimalloc reads options atomically.
    unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, ms) }
}

/// Hands the pages the calling thread holds free back to the OS now. A thread keeps the
/// pages its allocations freed for its next ones (the last page of each size, retired for a
/// while, is reused rather than freed), which costs nothing while it works and its memory
/// while it waits: a thread that then blocks for long (a connection of `runlog collect`
/// waiting for its request's commit) would hold them all that time, and many such threads
/// hold many times the memory they use. Also purges what other threads freed and is due to
/// go back (at once, not after the purge delay): call it after a large piece of work, not
/// per small allocation.
pub fn release_thread_memory() {
    // SAFETY: a call without arguments into mimalloc, which collects the calling thread's
    // own heap and the arenas under its own locks.
    unsafe { mi_collect(true) }
}

/// Asks Linux for ordinary 4 KiB pages instead of transparent huge pages (THP), for this
/// process: mimalloc advises huge pages for its arenas, and each first touch of one then
/// zeroes 2 MiB at once, used or not. On the VM measured, after another process (DuckDB)
/// had just freed its memory, an ingest of a 211 MB log spent 1.6-1.9 s in the kernel
/// zeroing pages with THP, 0.30-0.33 s without (wall 1.76-1.95 s against 1.03-1.13 s), and
/// its peak RSS fell from ~430 to ~370 MB. Elsewhere a no-op.
pub fn small_pages() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: sets a flag of this process; the arguments are the integers prctl(2)
        // documents for this option. A failure (an old kernel) leaves THP as it was.
        unsafe {
            libc::prctl(
                libc::PR_SET_THP_DISABLE,
                1 as libc::c_ulong,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
            );
        }
    }
}
