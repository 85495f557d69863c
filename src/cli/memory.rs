//! The process's memory: the allocator and how it hands memory back to the OS, set up as
//! `runlog_core::alloc` (shared with the core's examples and the benchmarks) describes.

use runlog::pipeline::Memory;
pub use runlog_core::alloc::{keep_freed_memory, set_purge_delay, small_pages};

/// mimalloc: ingest allocates many small strings; the system allocator spent a quarter of
/// the time in malloc/free (measured with perf on a 1.1M-event log).
#[global_allocator]
static GLOBAL: runlog_core::alloc::Mimalloc = runlog_core::alloc::Mimalloc;

/// The purge delay of a spilled ingest, in milliseconds (mimalloc's own is 10): memory a
/// partition freed is handed back only when the next ones did not take it again.
pub const SPILL_PURGE_DELAY_MS: std::ffi::c_long = 1000;

/// How much memory reading these inputs may hold: `--spill-partitions P` (0: in memory),
/// else [`Memory::auto_for`]. A spilled read hands freed memory back to the OS between
/// partitions.
pub(super) fn memory_for(
    spill_partitions: Option<usize>,
    sources: &runlog::inputs::Sources,
) -> Memory {
    let memory = match spill_partitions {
        Some(0) => Memory::InMemory,
        Some(p) => Memory::Spilled(p),
        None => Memory::auto_for(sources),
    };
    if let Memory::Spilled(_) = memory {
        // Partitions come and go one after another: freed memory goes back to the OS, or
        // fragments would add up over them; but not at once (mimalloc's default, 10 ms),
        // since the next partition needs as much again within the second.
        set_purge_delay(SPILL_PURGE_DELAY_MS);
    }
    memory
}
