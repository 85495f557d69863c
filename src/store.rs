//! Store: every table's Arrow schema and Parquet settings ([`schema`], from the columns'
//! one definition in [`runlog_core::table`]; docs/semantics.md §8), the conversion of
//! ingested events and reducer rows into record batches ([`batch`], [`events`]), their
//! Parquet files (`TABLE/part-ID-K.parquet`, [`write`]) and reading them back ([`read`]).
//! Which files make up the warehouse, and when, is [`crate::commit`]'s business: nothing
//! here publishes anything.

use runlog_core::table::Table;

pub mod batch;
#[cfg(test)]
mod chunk_test_support;
mod dictionary_chunk;
pub mod events;
mod plain_chunk;
pub mod read;
pub mod schema;
pub mod write;

pub use batch::{
    all_batches, derived_batch, derived_batch_of, derived_batches_of, files_batch, rejects_batch,
    rows_batch, some_batches, some_batches_of,
};
pub use events::{events_batches, events_batches_sized};
pub use read::{
    events_file_names, events_from_batch, files_from_batch, rejects_from_batch, text_column,
};
pub use schema::schema;
pub use write::{write_events_parts, write_parquet, write_parts};

/// Every table of the warehouse, in the order they are written.
pub const TABLES: &[Table] = &Table::ALL;

/// Rows per record batch of the `events` table.
pub const EVENTS_BATCH_ROWS: usize = 64 * 1024;
/// Rows per Parquet file of a table: big tables become several files, written in parallel.
pub const PART_ROWS: usize = 256 * 1024;
/// The fewest rows an `events` part is cut to for the sake of parallel writing.
pub const EVENTS_MIN_PART_ROWS: usize = 16 * 1024;
/// Parts per thread of an in-memory ingest's `events` table (see [`write_events_parts`]).
pub const EVENTS_PARTS_PER_THREAD: usize = 4;
