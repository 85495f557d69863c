//! The process's memory: the allocator and how it hands memory back to the OS, set up as
//! `runlog_core::alloc` (shared with the core's examples and the benchmarks) describes.

pub use runlog_core::alloc::{keep_freed_memory, set_purge_delay, small_pages};

/// mimalloc: ingest allocates many small strings; the system allocator spent a quarter of
/// the time in malloc/free (measured with perf on a 1.1M-event log).
#[global_allocator]
static GLOBAL: runlog_core::alloc::Mimalloc = runlog_core::alloc::Mimalloc;

/// The purge delay of a spilled ingest, in milliseconds (mimalloc's own is 10): memory a
/// partition freed is handed back only when the next ones did not take it again.
pub const SPILL_PURGE_DELAY_MS: std::ffi::c_long = 1000;
