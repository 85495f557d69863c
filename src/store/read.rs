//! Reading a committed warehouse's Parquet files back through its store: a whole table of a
//! version, one file's bytes or batches (every column, or one), the rows of the `events`,
//! `files` and `rejects` tables decoded from their batches, and the batch-level helpers
//! that split a per-agent table's rows by agent and cut them again into the batch size the
//! writers use. `ingest --append` reads the rows it keeps this way.

use std::collections::HashSet;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanArray, RecordBatch};
use datafusion::arrow::compute::{cast, concat_batches, filter_record_batch};
use datafusion::arrow::datatypes::{DataType, Int64Type, TimestampMicrosecondType};

use crate::error::{Error, Result};
use crate::objstore::{block_on, Root};
use runlog_core::event::{Event, PayloadIndex};
use runlog_core::ingest::FileSummary;
use runlog_core::table::Table;

/// Reads the Parquet files `files` of a table (a version's, `commit::Manifest::files`)
/// with `decode`.
pub fn read_table<T>(
    root: &Root,
    files: &[String],
    decode: impl Fn(&RecordBatch) -> Result<Vec<T>>,
) -> Result<Vec<T>> {
    let mut out = Vec::new();
    for rel in files {
        for b in read_parquet(root, rel)? {
            out.extend(decode(&b)?);
        }
    }
    Ok(out)
}

/// The rows of the `files` table in its Parquet files `files`.
pub fn read_files_table(root: &Root, files: &[String]) -> Result<Vec<FileSummary>> {
    read_table(root, files, files_from_batch)
}

/// One committed Parquet file's batches, through the warehouse's store.
pub fn read_parquet(root: &Root, rel: &str) -> Result<Vec<RecordBatch>> {
    decode_parquet(parquet_bytes(root, rel)?, None)
}

/// One committed file's bytes, through the warehouse's store.
pub fn parquet_bytes(root: &Root, rel: &str) -> Result<bytes::Bytes> {
    use object_store::ObjectStoreExt;
    block_on(async {
        root.store
            .get(&root.path(rel))
            .await
            .map_err(|e| root.store_error(rel, e))?
            .bytes()
            .await
            .map_err(|e| root.store_error(rel, e))
    })
}

/// The rows of a Parquet file (from its footer).
pub fn parquet_rows(bytes: bytes::Bytes) -> Result<u64> {
    use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let builder = ParquetRecordBatchReaderBuilder::try_new(bytes)?;
    Ok(builder.metadata().file_metadata().num_rows().max(0) as u64)
}

/// A Parquet file's batches: every column, or the one column `only`.
pub fn decode_parquet(bytes: bytes::Bytes, only: Option<&str>) -> Result<Vec<RecordBatch>> {
    use datafusion::parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use datafusion::parquet::arrow::ProjectionMask;
    let mut builder = ParquetRecordBatchReaderBuilder::try_new(bytes)?;
    if let Some(name) = only {
        let column = builder.schema().index_of(name)?;
        let mask = ProjectionMask::roots(builder.parquet_schema(), [column]);
        builder = builder.with_projection(mask);
    }
    Ok(builder
        .build()?
        .collect::<std::result::Result<Vec<_>, _>>()?)
}

/// `batches` (of one table) as batches of [`super::EVENTS_BATCH_ROWS`] rows, the last one
/// shorter: the batch size the writers cut parts by.
pub fn rebatch(batches: &[RecordBatch]) -> Result<Vec<RecordBatch>> {
    let Some(first) = batches.first() else {
        return Ok(Vec::new());
    };
    let all = concat_batches(&first.schema(), batches)?;
    let rows = super::EVENTS_BATCH_ROWS;
    Ok((0..all.num_rows())
        .step_by(rows)
        .map(|at| all.slice(at, rows.min(all.num_rows() - at)))
        .collect())
}

/// Batches of a per-agent table split into the rows of the agents in `roots` and the others.
pub fn split_by_root(
    batches: &[RecordBatch],
    roots: &HashSet<String>,
) -> Result<(Vec<RecordBatch>, Vec<RecordBatch>)> {
    let (mut yes, mut no) = (Vec::new(), Vec::new());
    for b in batches {
        let col = text_column(b, "a per-agent", "root")?;
        let col = col.as_string::<i32>();
        let mask: BooleanArray = col
            .iter()
            .map(|r| Some(roots.contains(r.unwrap_or_default())))
            .collect();
        let not: BooleanArray = mask.iter().map(|m| m.map(|v| !v)).collect();
        yes.push(filter_record_batch(b, &mask)?);
        no.push(filter_record_batch(b, &not)?);
    }
    yes.retain(|b| b.num_rows() > 0);
    no.retain(|b| b.num_rows() > 0);
    Ok((yes, no))
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
pub fn rejects_from_batch(b: &RecordBatch) -> Result<Vec<runlog_core::ingest::Reject>> {
    let t = Table::Rejects.name();
    let cols: Vec<ArrayRef> = ["file", "reason", "excerpt"]
        .iter()
        .map(|n| text_column(b, t, n))
        .collect::<Result<_>>()?;
    let line = int_column(b, t, "line")?;
    let line = line.as_primitive::<Int64Type>();
    let s = |k: usize, i: usize| cols[k].as_string::<i32>().value(i).to_string();
    Ok((0..b.num_rows())
        .map(|i| runlog_core::ingest::Reject {
            file: s(0, i),
            line: line.value(i).max(0) as u64,
            reason: s(1, i),
            excerpt: s(2, i),
        })
        .collect())
}
