//! The process's memory: the allocator (mimalloc) and how it hands memory back to the OS.

/// mimalloc: ingest allocates many small strings; the system allocator spent a quarter of
/// the time in malloc/free (measured with perf on a 1.1M-event log).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

extern "C" {
    /// mimalloc's option setter (linked in with the allocator above).
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
}

/// `mi_option_purge_delay` in mimalloc's `mi_option_e` (v2 and v3).
const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;

/// Keeps freed memory for reuse instead of handing it back to the OS 10 ms later (the
/// default): ingest frees and allocates in waves (events, then batches, then Parquet pages),
/// and on the machines measured, zeroing fresh pages (`clear_page_erms` in the kernel) took
/// up to 40 % of an ingest when memory went back and forth. Peak RSS is unchanged for an
/// ingest in memory; a spilled ingest sets the default back (see there).
pub fn keep_freed_memory() {
    set_purge_delay(-1);
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
        extern "C" {
            fn prctl(option: std::ffi::c_int, ...) -> std::ffi::c_int;
        }
        /// `PR_SET_THP_DISABLE` in `<linux/prctl.h>`.
        const PR_SET_THP_DISABLE: std::ffi::c_int = 41;
        // SAFETY: sets a flag of this process; the arguments are the integers prctl(2)
        // documents for this option. A failure (an old kernel) leaves THP as it was.
        unsafe {
            prctl(
                PR_SET_THP_DISABLE,
                1 as std::ffi::c_ulong,
                0 as std::ffi::c_ulong,
                0 as std::ffi::c_ulong,
                0 as std::ffi::c_ulong,
            );
        }
    }
}

/// The purge delay of a spilled ingest, in milliseconds (mimalloc's own is 10): memory a
/// partition freed is handed back only when the next ones did not take it again.
pub const SPILL_PURGE_DELAY_MS: std::ffi::c_long = 1000;

pub fn set_purge_delay(ms: std::ffi::c_long) {
    // SAFETY: sets an integer option; mimalloc reads options atomically.
    unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, ms) }
}
