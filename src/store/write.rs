//! Writing tables as Parquet files (`TABLE/part-ID-K.parquet`): record batches cut into parts
//! written in parallel, the `events` table written part by part while its batches are built
//! (its id columns as dictionary chunks from their keys, `data` as a plain chunk), and the
//! start of each file's writeback to disk. Nothing here publishes a file.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::parquet::arrow::ArrowWriter;
use rayon::prelude::*;

use super::events::{EventColumns, EVENTS_KEYED_COLUMNS};
use super::schema::{schema, writer_props};
use super::{EVENTS_BATCH_ROWS, EVENTS_MIN_PART_ROWS, PART_ROWS};
use crate::error::{Error, Result};
use runlog_core::event::prefetched;
use runlog_core::ingest::Ingested;
use runlog_core::table::Table;

/// Writes one table's batches as one Parquet file.
pub fn write_parquet(path: &Path, table: Table, batches: &[RecordBatch]) -> Result<()> {
    let mut w = ParquetPart::create(path, table)?;
    for b in batches {
        w.write(b)?;
    }
    w.finish()
}

/// One Parquet file of a table being written; [`ParquetPart::finish`] starts writing it to
/// disk ([`start_writeback`]).
struct ParquetPart {
    path: PathBuf,
    writer: ArrowWriter<std::io::BufWriter<fs::File>>,
}

impl ParquetPart {
    fn create(path: &Path, table: Table) -> Result<Self> {
        let file = fs::File::create(path).map_err(|e| Error::io(path, e))?;
        let writer = ArrowWriter::try_new(
            std::io::BufWriter::with_capacity(1 << 20, file),
            schema(table),
            Some(writer_props(table)),
        )?;
        Ok(ParquetPart {
            path: path.to_path_buf(),
            writer,
        })
    }

    fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        Ok(self.writer.write(batch)?)
    }

    fn finish(self) -> Result<()> {
        let path = self.path;
        let inner = self.writer.into_inner()?;
        let file = inner
            .into_inner()
            .map_err(|e| Error::io(&path, e.into_error()))?;
        start_writeback(&file);
        Ok(())
    }
}

/// Starts writing a file's pages to disk, without waiting for them (Linux's
/// `sync_file_range`): the commit syncs every file it publishes
/// ([`crate::commit::Staged`]), and finds little left to write by then. A writer that synced
/// each file as it closed it sat waiting on the disk, its core idle, while other tables
/// were still to be encoded. Elsewhere a no-op (the commit's sync writes everything).
fn start_writeback(file: &fs::File) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: the descriptor is the open file's; offset 0 and length 0 mean the whole
        // file. A failure only means the commit's sync has more to write.
        unsafe {
            // `SYNC_FILE_RANGE_WRITE`: start writeback of the dirty pages.
            libc::sync_file_range(file.as_raw_fd(), 0, 0, libc::SYNC_FILE_RANGE_WRITE);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = file;
}

/// Writes the `events` table in parts (`events/part-ID-K.parquet`, written in parallel),
/// each built batch by batch while it is written: Arrow holds a batch per thread, never the
/// table (it is as large as the input). Returns the files, relative to `dir`.
///
/// A part has at most [`PART_ROWS`] rows. With `parts_per_thread`, a table of more than
/// [`EVENTS_MIN_PART_ROWS`] rows comes in at least that many parts per thread: the other
/// tables are written at the same time, and the part written last runs alone, so parts of
/// a quarter of a thread's share keep the cores busy to the end. (Parts of ~135K rows for
/// the 1.1M-event log left one core idle for the last 0.1 s of a ~1 s ingest.) A spilled
/// ingest writes a table per partition and passes `None`: cut finer, its 5 GB log made
/// 1,450 files of ~0.5 MB.
pub fn write_events_parts(
    dir: &Path,
    id: &str,
    ing: &Ingested,
    parts_per_thread: Option<usize>,
) -> Result<Vec<String>> {
    let tdir = dir.join(Table::Events.name());
    fs::create_dir_all(&tdir).map_err(|e| Error::io(&tdir, e))?;
    let cols = EventColumns::of(ing);
    let all = cols.all_events(ing);
    let threads = rayon::current_num_threads().max(1);
    let rows_per_part = match parts_per_thread {
        Some(k) => (all.len() / (k.max(1) * threads)).clamp(EVENTS_MIN_PART_ROWS, PART_ROWS),
        None => PART_ROWS,
    };
    let parts = match all.len().div_ceil(rows_per_part) {
        0 | 1 => 1,
        n => n.div_ceil(threads) * threads,
    };
    let per_part = all.len().div_ceil(parts).max(1);
    let chunks: Vec<&[&runlog_core::event::Event]> = if all.is_empty() {
        vec![&all[..]]
    } else {
        all.chunks(per_part).collect()
    };
    let rels: Vec<String> = (0..chunks.len())
        .map(|n| format!("{}/part-{id}-{n:05}.parquet", Table::Events))
        .collect();
    chunks
        .par_iter()
        .zip(&rels)
        .map(|(chunk, rel)| write_events_part(&dir.join(rel), &cols, chunk))
        .collect::<Result<Vec<()>>>()?;
    Ok(rels)
}

thread_local! {
    /// The buffer [`write_events_part`] encodes its hand-written column chunks into.
    static CHUNK_BUFFER: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Writes one `events` part: row groups of at most [`PART_ROWS`] rows. The id columns
/// (`EVENTS_KEYED_COLUMNS`) are written as dictionary chunks from their keys
/// ([`dictionary_chunk`]), `data` as a plain chunk from the rows ([`plain_chunk`]); the
/// others through the Arrow column writers, a batch of
/// [`EVENTS_BATCH_ROWS`] rows at a time.
fn write_events_part(
    path: &Path,
    cols: &EventColumns,
    chunk: &[&runlog_core::event::Event],
) -> Result<()> {
    use super::dictionary_chunk::ChunkBytes;
    use datafusion::parquet::arrow::arrow_writer::{compute_leaves, ArrowRowGroupWriterFactory};
    use datafusion::parquet::arrow::{add_encoded_arrow_schema_to_metadata, ArrowSchemaConverter};
    use datafusion::parquet::file::writer::SerializedFileWriter;

    let schema = schema(Table::Events);
    let parquet_schema = ArrowSchemaConverter::new().convert(&schema)?;
    let mut props = writer_props(Table::Events);
    add_encoded_arrow_schema_to_metadata(&schema, &mut props);
    let props = Arc::new(props);
    let file = fs::File::create(path).map_err(|e| Error::io(path, e))?;
    let mut writer = SerializedFileWriter::new(
        std::io::BufWriter::with_capacity(1 << 20, file),
        parquet_schema.root_schema_ptr(),
        props.clone(),
    )?;
    let factory = ArrowRowGroupWriterFactory::new(&writer, schema.clone());
    let keyed: Vec<bool> = schema
        .fields()
        .iter()
        .map(|f| EVENTS_KEYED_COLUMNS.contains(&f.name().as_str()))
        .collect();
    let data = schema.index_of("data")?;
    // The hand-written chunks are encoded into the thread's buffer, kept from part to part
    // (the `data` chunk of a part is a third of its payloads' bytes).
    let mut sink = CHUNK_BUFFER.take();
    for (n, group) in chunk.chunks(PART_ROWS).enumerate() {
        let mut writers = factory.create_column_writers(n)?;
        for b in group.chunks(EVENTS_BATCH_ROWS) {
            for (name, array) in cols.unkeyed(b) {
                let i = schema.index_of(name)?;
                for leaf in compute_leaves(schema.field(i), &array)? {
                    writers[i].write(&leaf)?;
                }
            }
        }
        let keys = cols.keys(group);
        let mut rg = writer.next_row_group()?;
        for (i, w) in writers.into_iter().enumerate() {
            if keyed[i] {
                let col = keys.column(schema.field(i).name());
                let close =
                    super::dictionary_chunk::encode(parquet_schema.column(i), &col, &mut sink)?;
                rg.append_column(&ChunkBytes(&sink), close)?;
            } else if i == data {
                let rows = prefetched(group, |e| &e.data).map(|e| e.data.as_str());
                let close = super::plain_chunk::encode(parquet_schema.column(i), rows, &mut sink)?;
                rg.append_column(&ChunkBytes(&sink), close)?;
            } else {
                w.close()?.append_to_row_group(&mut rg)?;
            }
        }
        rg.close()?;
    }
    CHUNK_BUFFER.set(sink);
    let inner = writer.into_inner()?;
    let file = inner
        .into_inner()
        .map_err(|e| Error::io(path, e.into_error()))?;
    start_writeback(&file);
    Ok(())
}

/// Writes every table's batches as Parquet parts named `TABLE/part-ID-K.parquet`; returns
/// the files by table, relative to `dir`. Nothing is committed.
pub fn write_parts(
    dir: &Path,
    id: &str,
    tables: &BTreeMap<Table, Vec<RecordBatch>>,
) -> Result<BTreeMap<String, Vec<String>>> {
    // Each table is cut into parts of at most PART_ROWS rows; all parts are written in parallel.
    let mut jobs: Vec<(Table, String, &[RecordBatch])> = Vec::new();
    let mut files: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (&table, batches) in tables {
        let tdir = dir.join(table.name());
        fs::create_dir_all(&tdir).map_err(|e| Error::io(&tdir, e))?;
        let chunks = parts_of(batches);
        for (n, chunk) in chunks.into_iter().enumerate() {
            let rel = format!("{table}/part-{id}-{n:05}.parquet");
            files
                .entry(table.to_string())
                .or_default()
                .push(rel.clone());
            jobs.push((table, rel, chunk));
        }
    }
    jobs.par_iter()
        .map(|(table, rel, chunk)| write_parquet(&dir.join(rel), *table, chunk))
        .collect::<Result<Vec<()>>>()?;
    Ok(files)
}

/// Consecutive batches cut into parts of at most [`PART_ROWS`] rows (a larger batch is a
/// part of its own); no batches are one empty part.
fn parts_of(batches: &[RecordBatch]) -> Vec<&[RecordBatch]> {
    let mut parts = Vec::new();
    let (mut start, mut rows) = (0, 0);
    for (k, b) in batches.iter().enumerate() {
        if k > start && rows + b.num_rows() > PART_ROWS {
            parts.push(&batches[start..k]);
            (start, rows) = (k, 0);
        }
        rows += b.num_rows();
    }
    parts.push(&batches[start..]);
    parts
}
