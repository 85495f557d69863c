//! Store: the Arrow schemas of every table (docs/semantics.md §8), the conversion of ingested
//! events and reducer rows into record batches, and their Parquet files
//! (`TABLE/part-ID-K.parquet`). Which files make up the warehouse, and when, is
//! [`crate::commit`]'s business: nothing here publishes anything.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Int64Array, RecordBatch, StringBuilder,
    TimestampMicrosecondArray,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{
    DataType, Field, Int64Type, Schema, SchemaRef, TimeUnit, TimestampMicrosecondType,
};
use datafusion::parquet::arrow::ArrowWriter;
use datafusion::parquet::basic::{Compression, Encoding};
use datafusion::parquet::file::properties::{EnabledStatistics, WriterProperties};
use datafusion::parquet::schema::types::ColumnPath;
use rayon::prelude::*;

use crate::error::{Error, Result};
use crate::event::{prefetched, Event, PayloadIndex, Voice};
use crate::ingest::{FileSummary, Ingested};
use crate::reduce::Derived;
use runlog_core::table::{ColumnDef, ColumnKind, ColumnVisitor, Row, Table, EVENTS_COLUMNS};

#[cfg(test)]
mod chunk_test_support;
mod dictionary_chunk;
mod plain_chunk;
pub mod read;

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

fn ts_type() -> DataType {
    DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
}

/// The Arrow type of a column of this kind.
fn data_type(kind: ColumnKind) -> DataType {
    use ColumnKind::*;
    match kind {
        Text | OptText => DataType::Utf8,
        Int | OptInt => DataType::Int64,
        Bool | OptBool => DataType::Boolean,
        Ts | OptTs => ts_type(),
    }
}

/// The schema of a table, from its columns' definition ([`runlog_core::table`]); made
/// once per table.
pub fn schema(table: Table) -> SchemaRef {
    static SCHEMAS: std::sync::OnceLock<Vec<SchemaRef>> = std::sync::OnceLock::new();
    let all = SCHEMAS.get_or_init(|| {
        Table::ALL
            .iter()
            .map(|t| {
                let fields = t.columns().iter();
                let fields =
                    fields.map(|c| Field::new(c.name, data_type(c.kind), c.kind.nullable()));
                Arc::new(Schema::new(fields.collect::<Vec<_>>()))
            })
            .collect()
    });
    all[table as usize].clone()
}

// The string columns go over their rows twice: once for the bytes, so that the values buffer
// is allocated once at its size (`from_iter` grows it by doubling, copying it each time).
fn s<'a>(it: impl Iterator<Item = &'a str> + Clone) -> ArrayRef {
    so(it.map(Some))
}
fn so<'a>(it: impl Iterator<Item = Option<&'a str>> + Clone) -> ArrayRef {
    let bytes = it.clone().map(|x| x.map_or(0, str::len)).sum();
    let mut b = StringBuilder::with_capacity(it.size_hint().0, bytes);
    b.extend(it);
    Arc::new(b.finish())
}
fn i(it: impl Iterator<Item = i64>) -> ArrayRef {
    Arc::new(Int64Array::from_iter_values(it))
}
fn io(it: impl Iterator<Item = Option<i64>>) -> ArrayRef {
    Arc::new(Int64Array::from_iter(it))
}
fn b(it: impl Iterator<Item = bool>) -> ArrayRef {
    Arc::new(BooleanArray::from_iter(it.map(Some)))
}
fn bo(it: impl Iterator<Item = Option<bool>>) -> ArrayRef {
    Arc::new(BooleanArray::from_iter(it))
}
fn t(it: impl Iterator<Item = i64>) -> ArrayRef {
    Arc::new(TimestampMicrosecondArray::from_iter_values(it).with_timezone("UTC"))
}
fn to(it: impl Iterator<Item = Option<i64>>) -> ArrayRef {
    Arc::new(TimestampMicrosecondArray::from_iter(it).with_timezone("UTC"))
}

fn batch(table: Table, cols: Vec<ArrayRef>) -> Result<RecordBatch> {
    Ok(RecordBatch::try_new(schema(table), cols)?)
}

/// The `events` table of an ingest, in (root, seq) order, in batches.
pub fn events_batches(ing: &Ingested) -> Result<Vec<RecordBatch>> {
    events_batches_sized(ing, EVENTS_BATCH_ROWS)
}

/// The `events` table in batches of at most `rows` rows.
pub fn events_batches_sized(ing: &Ingested, rows: usize) -> Result<Vec<RecordBatch>> {
    let cols = EventColumns::of(ing);
    let all = cols.all_events(ing);
    // Batches are independent: build them in parallel.
    all.par_chunks(rows.max(1))
        .map(|chunk| cols.batch(chunk))
        .collect()
}

/// What the `events` table's columns are made of besides the events themselves.
struct EventColumns<'a> {
    names: Vec<&'a str>,
    formats: Vec<&'a str>,
}

/// The `events` columns written as dictionary chunks from their keys ([`EventColumns::keys`]).
const EVENTS_KEYED_COLUMNS: &[&str] =
    &["root", "session", "turn", "type", "voice", "file", "source"];

impl<'a> EventColumns<'a> {
    fn of(ing: &'a Ingested) -> Self {
        EventColumns {
            names: ing.file_names(),
            formats: ing.files.iter().map(|f| f.format.as_str()).collect(),
        }
    }

    /// Every event, in table order (root, then seq).
    fn all_events(&self, ing: &'a Ingested) -> Vec<&'a crate::event::Event> {
        ing.agents.iter().flat_map(|a| &a.events).collect()
    }

    fn batch(&self, chunk: &[&crate::event::Event]) -> Result<RecordBatch> {
        let (names, formats) = (&self.names, &self.formats);
        batch(
            Table::Events,
            vec![
                exact(chunk, |e| Some(e.root.as_str())),
                exact(chunk, |e| Some(e.session.as_str())),
                exact(chunk, |e| e.turn.as_deref()),
                i(chunk.iter().map(|e| e.seq as i64)),
                t(chunk.iter().map(|e| e.ts)),
                exact(chunk, |e| Some(e.kind.as_str())),
                exact(chunk, |e| Some(Voice::of(&e.kind).as_str())),
                exact(chunk, |e| Some(names[e.file as usize])),
                i(chunk.iter().map(|e| e.line as i64)),
                exact(chunk, |e| Some(e.data.as_str())),
                exact(chunk, |e| Some(formats[e.file as usize])),
            ],
        )
    }

    /// The columns of `chunk` written through the Arrow column writers, by name: `seq`, `ts`,
    /// `line` (the id columns and `data` are written as chunks of their own).
    fn unkeyed(&self, chunk: &[&crate::event::Event]) -> [(&'static str, ArrayRef); 3] {
        let n = chunk.len();
        let (mut seq, mut ts, mut line) = (
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
        );
        for e in chunk {
            seq.push(e.seq as i64);
            ts.push(e.ts);
            line.push(e.line as i64);
        }
        [
            ("seq", Arc::new(Int64Array::from(seq)) as ArrayRef),
            (
                "ts",
                Arc::new(TimestampMicrosecondArray::from(ts).with_timezone("UTC")),
            ),
            ("line", Arc::new(Int64Array::from(line))),
        ]
    }

    /// Every row's key of every id column of `chunk` (`EVENTS_KEYED_COLUMNS`), with the
    /// texts the keys point at, in one pass over the events.
    fn keys(&self, chunk: &[&'a crate::event::Event]) -> EventKeys<'a> {
        use crate::event::Kind;
        let n = chunk.len();
        let [mut roots, mut sessions, mut turns, mut kinds] = [(); 4].map(|_| IdKeys::default());
        let mut keys: [Vec<Option<u32>>; 6] = Default::default();
        for column in &mut keys[..4] {
            column.reserve_exact(n);
        }
        keys[5].reserve_exact(n);
        for e in chunk {
            keys[0].push(Some(roots.key(&e.root)));
            keys[1].push(Some(sessions.key(&e.session)));
            keys[2].push(e.turn.as_ref().map(|t| turns.key(t)));
            keys[3].push(Some(kinds.key(&e.kind)));
            keys[5].push(Some(e.file));
        }
        // A voice per type: each type's voice looked up once.
        let voice_of_kind: Vec<u32> = kinds
            .texts
            .iter()
            .map(|&t| {
                let v = Voice::of_kind(Kind::of(t), t);
                ALL_VOICES
                    .iter()
                    .position(|&x| x == v)
                    .expect("every voice") as u32
            })
            .collect();
        keys[4] = keys[3]
            .iter()
            .map(|k| k.map(|k| voice_of_kind[k as usize]))
            .collect();
        EventKeys {
            keys,
            texts: [
                roots.texts,
                sessions.texts,
                turns.texts,
                kinds.texts,
                ALL_VOICES.iter().map(|v| v.as_str()).collect(),
                self.names.clone(),
                self.formats.clone(),
            ],
        }
    }
}

/// The keys of the id columns of some events, in the order of `EVENTS_KEYED_COLUMNS`, and
/// the texts they point at (see [`EventColumns::keys`]). `file` and `source` share their
/// keys (the file's index): the last column's keys are the sixth's.
struct EventKeys<'a> {
    keys: [Vec<Option<u32>>; 6],
    texts: [Vec<&'a str>; 7],
}

impl EventKeys<'_> {
    /// The dictionary column `name` (one of `EVENTS_KEYED_COLUMNS`).
    fn column(&self, name: &str) -> dictionary_chunk::DictionaryColumn<'_> {
        let i = EVENTS_KEYED_COLUMNS
            .iter()
            .position(|&c| c == name)
            .expect("an id column");
        dictionary_chunk::DictionaryColumn {
            keys: &self.keys[i.min(5)],
            texts: &self.texts[i],
            statistics: EVENTS_COLUMNS.iter().any(|c| c.name == name && !c.unpruned),
        }
    }
}

/// Every voice: the texts of the `voice` dictionary.
const ALL_VOICES: [Voice; 10] = [
    Voice::Lifecycle,
    Voice::Assistant,
    Voice::Reasoning,
    Voice::Progress,
    Voice::Log,
    Voice::Tool,
    Voice::Model,
    Voice::Interaction,
    Voice::Terminal,
    Voice::Unknown,
];

/// The keys of an id column written as a dictionary. Ids are shared pointers (see
/// [`crate::event::Id`]), and consecutive events mostly name the same one, so a row costs a
/// pointer comparison; equal texts behind different pointers (ids of different files) are
/// listed twice, which the dictionary chunk merges.
struct IdKeys<'a> {
    index: ahash::AHashMap<*const u8, u32>,
    texts: Vec<&'a str>,
    last: (*const u8, u32),
}

impl Default for IdKeys<'_> {
    fn default() -> Self {
        IdKeys {
            index: ahash::AHashMap::new(),
            texts: Vec::new(),
            last: (std::ptr::null(), 0),
        }
    }
}

impl<'a> IdKeys<'a> {
    #[inline]
    fn key(&mut self, id: &'a crate::event::Id) -> u32 {
        let p = id.as_ptr();
        if p != self.last.0 {
            let next = self.texts.len() as u32;
            let texts = &mut self.texts;
            let k = *self.index.entry(p).or_insert_with(|| {
                texts.push(id.as_str());
                next
            });
            self.last = (p, k);
        }
        self.last.1
    }
}

/// A string column of events, its buffers allocated once at their exact size (growing
/// them by doubling copied and touched up to twice the memory), as `so` does.
fn exact<'e>(
    chunk: &[&'e crate::event::Event],
    get: impl Fn(&'e crate::event::Event) -> Option<&'e str>,
) -> ArrayRef {
    so(chunk.iter().map(|&e| get(e)))
}

/// The `rejects` table.
pub fn rejects_batch(ing: &Ingested) -> Result<RecordBatch> {
    let r = &ing.rejects;
    batch(
        Table::Rejects,
        vec![
            s(r.iter().map(|x| x.file.as_str())),
            i(r.iter().map(|x| x.line as i64)),
            s(r.iter().map(|x| x.reason.as_str())),
            s(r.iter().map(|x| x.excerpt.as_str())),
        ],
    )
}

/// The `files` table: the accounting of every input file.
pub fn files_batch(files: &[FileSummary]) -> Result<RecordBatch> {
    batch(
        Table::Files,
        vec![
            s(files.iter().map(|x| x.file.as_str())),
            i(files.iter().map(|x| x.bytes as i64)),
            i(files.iter().map(|x| x.lines as i64)),
            i(files.iter().map(|x| x.blank as i64)),
            i(files.iter().map(|x| x.kept as i64)),
            i(files.iter().map(|x| x.duplicates as i64)),
            i(files.iter().map(|x| x.rejects as i64)),
            s(files.iter().map(|x| x.format.as_str())),
            i(files.iter().map(|x| x.events as i64)),
        ],
    )
}

/// The batch of one derived table.
pub fn derived_batch(d: &Derived, table: Table) -> Result<RecordBatch> {
    match table {
        Table::Intervals => rows_batch(&d.intervals),
        Table::Turns => rows_batch(&d.turns),
        Table::Errors => rows_batch(&d.errors),
        Table::ToolCalls => rows_batch(&d.tool_calls),
        Table::Callbacks => rows_batch(&d.callbacks),
        Table::Runs => rows_batch(&d.runs),
        Table::Agents => rows_batch(&d.agents),
        Table::Events | Table::Rejects | Table::Files => {
            Err(Error::Invalid(format!("{table} is not a derived table")))
        }
    }
}

/// The batch of a derived table's rows: each column built from its definition
/// ([`Row::visit_columns`]).
pub fn rows_batch<R: Row>(rows: &[R]) -> Result<RecordBatch> {
    let mut columns = ArrowColumns(Vec::with_capacity(R::COLUMNS.len()));
    R::visit_columns(rows, &mut columns);
    batch(R::TABLE, columns.0)
}

/// Builds the Arrow array of each column a [`Row`] hands over, in order.
struct ArrowColumns(Vec<ArrayRef>);

impl<'a> ColumnVisitor<'a> for ArrowColumns {
    fn text(&mut self, _: &'static str, v: impl ExactSizeIterator<Item = &'a str> + Clone) {
        self.0.push(s(v));
    }
    fn opt_text(
        &mut self,
        _: &'static str,
        v: impl ExactSizeIterator<Item = Option<&'a str>> + Clone,
    ) {
        self.0.push(so(v));
    }
    fn int(&mut self, _: &'static str, v: impl ExactSizeIterator<Item = i64> + Clone) {
        self.0.push(i(v));
    }
    fn opt_int(&mut self, _: &'static str, v: impl ExactSizeIterator<Item = Option<i64>> + Clone) {
        self.0.push(io(v));
    }
    fn bool(&mut self, _: &'static str, v: impl ExactSizeIterator<Item = bool> + Clone) {
        self.0.push(b(v));
    }
    fn opt_bool(
        &mut self,
        _: &'static str,
        v: impl ExactSizeIterator<Item = Option<bool>> + Clone,
    ) {
        self.0.push(bo(v));
    }
    fn ts(&mut self, _: &'static str, v: impl ExactSizeIterator<Item = i64> + Clone) {
        self.0.push(t(v));
    }
    fn opt_ts(&mut self, _: &'static str, v: impl ExactSizeIterator<Item = Option<i64>> + Clone) {
        self.0.push(to(v));
    }
}

/// Every table of an ingest as record batches, by table name.
pub fn all_batches(ing: &Ingested, d: &Derived) -> Result<BTreeMap<Table, Vec<RecordBatch>>> {
    some_batches(ing, d, TABLES)
}

/// The named tables of an ingest as record batches, by table name.
pub fn some_batches(
    ing: &Ingested,
    d: &Derived,
    tables: &[Table],
) -> Result<BTreeMap<Table, Vec<RecordBatch>>> {
    some_batches_of(ing, std::slice::from_ref(d), tables)
}

/// [`some_batches`] of derived tables reduced in parts ([`runlog_core::reduce_parts`]): a
/// derived table is a batch per part that has rows, in the parts' order.
pub fn some_batches_of(
    ing: &Ingested,
    parts: &[Derived],
    tables: &[Table],
) -> Result<BTreeMap<Table, Vec<RecordBatch>>> {
    tables
        .par_iter()
        .map(|&table| {
            let batches = match table {
                Table::Events => events_batches(ing)?,
                Table::Rejects => vec![rejects_batch(ing)?],
                Table::Files => vec![files_batch(&ing.files)?],
                _ => {
                    let mut batches = parts
                        .par_iter()
                        .map(|d| derived_batch(d, table))
                        .collect::<Result<Vec<_>>>()?;
                    batches.retain(|b| b.num_rows() > 0);
                    if batches.is_empty() {
                        batches.push(derived_batch(&Derived::default(), table)?);
                    }
                    batches
                }
            };
            Ok((table, batches))
        })
        .collect()
}

/// Snappy, as DuckDB and Spark write by default: on a generated 211 MB log it made a
/// 39 MB warehouse in 1.40 s of CPU, where zstd level 1 made 24 MB in 1.57-1.62 s (zstd
/// was a tenth of the ingest's CPU). Every Parquet reader reads it.
///
/// The columns' definitions say which are stored without a dictionary
/// ([`ColumnDef::distinct`]), without min/max statistics ([`ColumnDef::unpruned`]) and as
/// packed differences ([`ColumnDef::ascending`]; the `events` files of a 211 MB log took
/// 29 MB instead of 34 MB, at no measurable CPU cost).
fn writer_props(table: Table) -> WriterProperties {
    let mut b = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_max_row_group_row_count(Some(256 * 1024));
    for c in table.columns() {
        let col = || ColumnPath::from(c.name);
        if !dictionary(table, c) {
            b = b.set_column_dictionary_enabled(col(), false);
        }
        if !statistics(table, c) {
            b = b.set_column_statistics_enabled(col(), EnabledStatistics::None);
        }
        if c.ascending {
            b = b.set_column_encoding(col(), Encoding::DELTA_BINARY_PACKED);
        }
    }
    b.build()
}

/// Whether a column is stored with a dictionary. The derived tables' rows are few per
/// agent: their numbers repeat a few times at most, and a dictionary would cost a hash of
/// every value to save little; their categories (texts and flags) keep theirs.
fn dictionary(table: Table, c: &ColumnDef) -> bool {
    use ColumnKind::*;
    !c.distinct && (!table.is_derived() || matches!(c.kind, Text | OptText | Bool | OptBool))
}

/// Whether a column's min/max statistics are written. A derived table has them for its
/// root (rows are in root order, so a row group's range prunes a look-up of one agent) and
/// its times only: ids are hashes and counts span every row group alike, so their ranges
/// prune nothing.
fn statistics(table: Table, c: &ColumnDef) -> bool {
    use ColumnKind::*;
    !c.unpruned && (!table.is_derived() || c.name == "root" || matches!(c.kind, Ts | OptTs))
}

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
    let chunks: Vec<&[&crate::event::Event]> = if all.is_empty() {
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
    chunk: &[&crate::event::Event],
) -> Result<()> {
    use datafusion::parquet::arrow::arrow_writer::{compute_leaves, ArrowRowGroupWriterFactory};
    use datafusion::parquet::arrow::{add_encoded_arrow_schema_to_metadata, ArrowSchemaConverter};
    use datafusion::parquet::file::writer::SerializedFileWriter;
    use dictionary_chunk::ChunkBytes;

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
                let close = dictionary_chunk::encode(parquet_schema.column(i), &col, &mut sink)?;
                rg.append_column(&ChunkBytes(&sink), close)?;
            } else if i == data {
                let rows = prefetched(group, |e| &e.data).map(|e| e.data.as_str());
                let close = plain_chunk::encode(parquet_schema.column(i), rows, &mut sink)?;
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

/// The events of a batch of the `events` table read back (`Event::file` is 0: the `file`
/// column holds the name).
pub fn events_from_batch(b: &RecordBatch) -> Result<Vec<Event>> {
    let get = |name: &str| {
        b.column_by_name(name).ok_or_else(|| {
            Error::Invalid(format!(
                "the events table has no column {name}: not a runlog warehouse, or damaged"
            ))
        })
    };
    let wrong = |name: &str, want: &str, got: &DataType| {
        Error::Invalid(format!(
            "the events table's column {name} is {got}, not {want}: not a runlog warehouse, or damaged"
        ))
    };
    // Parquet strings may come back as views: normalise to plain UTF-8 arrays.
    let text = |name: &str| -> Result<ArrayRef> {
        let c = get(name)?;
        if !matches!(
            c.data_type(),
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
        ) {
            return Err(wrong(name, "a string", c.data_type()));
        }
        Ok(cast(c, &DataType::Utf8)?)
    };
    let (root, session, turn, kind, data) = (
        text("root")?,
        text("session")?,
        text("turn")?,
        text("type")?,
        text("data")?,
    );
    let (root, session, turn, kind, data) = (
        root.as_string::<i32>(),
        session.as_string::<i32>(),
        turn.as_string::<i32>(),
        kind.as_string::<i32>(),
        data.as_string::<i32>(),
    );
    let int = |name: &str| {
        let c = get(name)?;
        c.as_primitive_opt::<Int64Type>()
            .ok_or_else(|| wrong(name, "Int64", c.data_type()))
    };
    let (seq, line) = (int("seq")?, int("line")?);
    let ts = get("ts")?;
    let ts = ts
        .as_primitive_opt::<TimestampMicrosecondType>()
        .ok_or_else(|| wrong("ts", "a timestamp in microseconds", ts.data_type()))?;
    Ok((0..b.num_rows())
        .map(|i| Event {
            seq: seq.value(i) as u64,
            ts: ts.value(i),
            root: root.value(i).into(),
            session: session.value(i).into(),
            turn: (!turn.is_null(i)).then(|| turn.value(i).into()),
            kind: kind.value(i).into(),
            data: data.value(i).into(),
            file: 0,
            line: line.value(i) as u64,
            index: PayloadIndex::of(kind.value(i), data.value(i)),
        })
        .collect())
}

/// A column of a table read back, as plain UTF-8 strings.
pub fn text_column(b: &RecordBatch, table: &str, name: &str) -> Result<ArrayRef> {
    let c = b.column_by_name(name).ok_or_else(|| {
        Error::Invalid(format!(
            "the {table} table has no column {name}: not a runlog warehouse, or damaged"
        ))
    })?;
    Ok(cast(c, &DataType::Utf8)?)
}

/// A column of a table read back, as 64-bit integers.
fn int_column(b: &RecordBatch, table: &str, name: &str) -> Result<ArrayRef> {
    let c = b.column_by_name(name).ok_or_else(|| {
        Error::Invalid(format!(
            "the {table} table has no column {name}: not a runlog warehouse, or damaged"
        ))
    })?;
    Ok(cast(c, &DataType::Int64)?)
}

/// The `file` column of an `events` batch read back.
pub fn events_file_names(b: &RecordBatch) -> Result<Vec<String>> {
    let c = text_column(b, Table::Events.name(), "file")?;
    Ok(c.as_string::<i32>()
        .iter()
        .map(|v| v.unwrap_or_default().to_string())
        .collect())
}

/// The rows of a `files` batch read back.
pub fn files_from_batch(b: &RecordBatch) -> Result<Vec<FileSummary>> {
    let t = Table::Files.name();
    let (file, format) = (text_column(b, t, "file")?, text_column(b, t, "format")?);
    let (file, format) = (file.as_string::<i32>(), format.as_string::<i32>());
    let ints: Vec<ArrayRef> = [
        "bytes",
        "lines",
        "blank",
        "kept",
        "duplicates",
        "rejects",
        "events",
    ]
    .iter()
    .map(|n| int_column(b, t, n))
    .collect::<Result<_>>()?;
    let v = |k: usize, i: usize| ints[k].as_primitive::<Int64Type>().value(i).max(0) as u64;
    Ok((0..b.num_rows())
        .map(|i| FileSummary {
            file: file.value(i).to_string(),
            format: format.value(i).to_string(),
            bytes: v(0, i),
            lines: v(1, i),
            blank: v(2, i),
            kept: v(3, i),
            duplicates: v(4, i),
            rejects: v(5, i),
            events: v(6, i),
        })
        .collect())
}

/// The rows of a `rejects` batch read back.
pub fn rejects_from_batch(b: &RecordBatch) -> Result<Vec<crate::ingest::Reject>> {
    let t = Table::Rejects.name();
    let cols: Vec<ArrayRef> = ["file", "reason", "excerpt"]
        .iter()
        .map(|n| text_column(b, t, n))
        .collect::<Result<_>>()?;
    let line = int_column(b, t, "line")?;
    let line = line.as_primitive::<Int64Type>();
    let s = |k: usize, i: usize| cols[k].as_string::<i32>().value(i).to_string();
    Ok((0..b.num_rows())
        .map(|i| crate::ingest::Reject {
            file: s(0, i),
            line: line.value(i).max(0) as u64,
            reason: s(1, i),
            excerpt: s(2, i),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::compute::concat_batches;

    #[test]
    fn events_table_is_the_same_whatever_the_batch_size() {
        let mut log = String::new();
        for root in ["b", "a", "c"] {
            for seq in 1..=40 {
                log.push_str(&format!(
                    "{{\"seq\":{seq},\"ts\":\"2026-11-03T10:00:00Z\",\"root\":\"{root}\",\"session\":\"{root}\",\"type\":\"log\",\"data\":{{\"n\":{seq}}}}}\n"
                ));
            }
        }
        let fr = crate::ingest::read_stream(0, "x", log.as_bytes(), &Default::default()).unwrap();
        let ing = crate::ingest::assemble(vec![fr]);
        let whole = |rows| {
            let b = events_batches_sized(&ing, rows).unwrap();
            if rows < 120 {
                assert_eq!(b.len(), 120usize.div_ceil(rows));
            }
            concat_batches(&schema(Table::Events), &b).unwrap()
        };
        let reference = whole(EVENTS_BATCH_ROWS);
        assert_eq!(reference.num_rows(), 120);
        for rows in [1, 3, 100] {
            assert_eq!(whole(rows), reference, "batch size {rows}");
        }
    }

    #[test]
    fn written_events_read_back_as_the_plain_table() {
        use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
        // Two files naming the same roots (equal ids behind different pointers), turns and
        // none, listed and unlisted types: every id column's dictionary case.
        let mut reads = Vec::new();
        for (f, name) in ["one.jsonl", "two.jsonl"].iter().enumerate() {
            let mut log = String::new();
            for (r, root) in ["b", "a", "c"].iter().enumerate() {
                for k in 1..=30u64 {
                    let seq = k * 2 + f as u64;
                    let kind = ["text/delta", "log", "tool/call", "x/new", "agent/idle"]
                        [(k as usize + r) % 5];
                    let turn = if k % 3 == 0 {
                        String::new()
                    } else {
                        format!(",\"turn\":\"t{}\"", k / 4)
                    };
                    let session = if k % 7 == 0 {
                        format!("{root}/sub")
                    } else {
                        root.to_string()
                    };
                    log.push_str(&format!(
                        "{{\"seq\":{seq},\"ts\":\"2026-11-03T10:00:00Z\",\"root\":\"{root}\",\"session\":\"{session}\"{turn},\"type\":\"{kind}\",\"data\":{{\"n\":{seq}}}}}\n"
                    ));
                }
            }
            let fr =
                crate::ingest::read_stream(f as u32, name, log.as_bytes(), &Default::default())
                    .unwrap();
            reads.push(fr);
        }
        let ing = crate::ingest::assemble(reads);
        let plain = concat_batches(&schema(Table::Events), &events_batches(&ing).unwrap()).unwrap();
        assert_eq!(plain.num_rows(), 180);
        let dir = std::env::temp_dir().join(format!("runlog-keyed-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let files = write_events_parts(&dir, "t", &ing, Some(4)).unwrap();
        let mut back = Vec::new();
        for f in &files {
            let file = fs::File::open(dir.join(f)).unwrap();
            let reader = ParquetRecordBatchReaderBuilder::try_new(file)
                .unwrap()
                .build()
                .unwrap();
            for b in reader {
                let b = b.unwrap();
                assert_eq!(b.schema(), schema(Table::Events), "stored schema");
                back.push(b);
            }
        }
        fs::remove_dir_all(&dir).unwrap();
        assert_eq!(
            concat_batches(&schema(Table::Events), &back).unwrap(),
            plain
        );
    }
}
