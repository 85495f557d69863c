//! Reading a committed warehouse's Parquet files back through its store: a whole table of a
//! version, one file's bytes or batches (every column, or one), and the batch-level helpers
//! that split a per-agent table's rows by agent and cut them again into the batch size the
//! writers use. `ingest --append` reads the rows it keeps this way.

use std::collections::HashSet;

use datafusion::arrow::array::{AsArray, BooleanArray, RecordBatch};
use datafusion::arrow::compute::{concat_batches, filter_record_batch};

use crate::commit::Manifest;
use crate::error::Result;
use crate::ingest::FileSummary;
use crate::objstore::{block_on, Root};
use runlog_core::table::Table;

/// Reads a whole table of the version `m` with `decode`.
pub fn read_table<T>(
    root: &Root,
    m: &Manifest,
    table: Table,
    decode: impl Fn(&RecordBatch) -> Result<Vec<T>>,
) -> Result<Vec<T>> {
    let mut out = Vec::new();
    for rel in m.tables.get(table.name()).into_iter().flatten() {
        for b in read_parquet(root, rel)? {
            out.extend(decode(&b)?);
        }
    }
    Ok(out)
}

/// The rows of the `files` table of the version `m`.
pub fn read_files_table(root: &Root, m: &Manifest) -> Result<Vec<FileSummary>> {
    read_table(root, m, Table::Files, super::files_from_batch)
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
        let col = super::text_column(b, "a per-agent", "root")?;
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
