//! Record batches of the tables made in memory: each derived table's built column by column
//! through its rows' definition ([`Row::visit_columns`], monomorphic: no dynamic call or
//! boxing per row), `rejects` and `files` from ingest's accounting, and the helpers that build
//! one Arrow array from an iterator (the `events` batches are [`super::events`]'s).

use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BooleanArray, Int64Array, RecordBatch, RecordBatchOptions, StringBuilder,
    TimestampMicrosecondArray,
};
use rayon::prelude::*;

use super::events::events_batches;
use super::schema::schema;
use super::TABLES;
use crate::error::{Error, Result};
use runlog_core::ingest::{FileSummary, Ingested};
use runlog_core::reduce::Derived;
use runlog_core::table::{ColumnVisitor, Row, Table};

// The string columns go over their rows twice: once for the bytes, so that the values buffer
// is allocated once at its size (`from_iter` grows it by doubling, copying it each time).
pub(super) fn s<'a>(it: impl Iterator<Item = &'a str> + Clone) -> ArrayRef {
    so(it.map(Some))
}
pub(super) fn so<'a>(it: impl Iterator<Item = Option<&'a str>> + Clone) -> ArrayRef {
    let bytes = it.clone().map(|x| x.map_or(0, str::len)).sum();
    let mut b = StringBuilder::with_capacity(it.size_hint().0, bytes);
    b.extend(it);
    Arc::new(b.finish())
}
pub(super) fn i(it: impl Iterator<Item = i64>) -> ArrayRef {
    Arc::new(Int64Array::from_iter_values(it))
}
pub(super) fn io(it: impl Iterator<Item = Option<i64>>) -> ArrayRef {
    Arc::new(Int64Array::from_iter(it))
}
pub(super) fn b(it: impl Iterator<Item = bool>) -> ArrayRef {
    Arc::new(BooleanArray::from_iter(it.map(Some)))
}
pub(super) fn bo(it: impl Iterator<Item = Option<bool>>) -> ArrayRef {
    Arc::new(BooleanArray::from_iter(it))
}
pub(super) fn t(it: impl Iterator<Item = i64>) -> ArrayRef {
    Arc::new(TimestampMicrosecondArray::from_iter_values(it).with_timezone("UTC"))
}
pub(super) fn to(it: impl Iterator<Item = Option<i64>>) -> ArrayRef {
    Arc::new(TimestampMicrosecondArray::from_iter(it).with_timezone("UTC"))
}

pub(super) fn batch(table: Table, cols: Vec<ArrayRef>) -> Result<RecordBatch> {
    Ok(RecordBatch::try_new(schema(table), cols)?)
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
    derived_batch_of(d, table, None)
}

/// The batch of a derived table's rows: each column built from its definition
/// ([`Row::visit_columns`]).
pub fn rows_batch<R: Row>(rows: &[R]) -> Result<RecordBatch> {
    let mut columns = ArrowColumns {
        cols: Vec::with_capacity(R::COLUMNS.len()),
        only: None,
    };
    R::visit_columns(rows, &mut columns);
    batch(R::TABLE, columns.cols)
}

/// The batch of a derived table, with every column or only those named in `only` (in the
/// table's order; its rows all the same): a question over raw logs builds no column it does
/// not read ([`crate::plan_tables::Demand`]).
pub fn derived_batch_of(d: &Derived, table: Table, only: Option<&[String]>) -> Result<RecordBatch> {
    match table {
        Table::Intervals => rows_batch_of(&d.intervals, only),
        Table::Turns => rows_batch_of(&d.turns, only),
        Table::Errors => rows_batch_of(&d.errors, only),
        Table::ToolCalls => rows_batch_of(&d.tool_calls, only),
        Table::Callbacks => rows_batch_of(&d.callbacks, only),
        Table::Runs => rows_batch_of(&d.runs, only),
        Table::Agents => rows_batch_of(&d.agents, only),
        Table::Events | Table::Rejects | Table::Files => {
            Err(Error::Invalid(format!("{table} is not a derived table")))
        }
    }
}

/// [`derived_batch_of`] of the derived tables reduced in `parts`
/// ([`runlog_core::reduce_parts`]): a batch per part that has rows, in the parts' order (one
/// empty batch when none has).
pub fn derived_batches_of(
    parts: &[Derived],
    table: Table,
    only: Option<&[String]>,
) -> Result<Vec<RecordBatch>> {
    let mut batches = parts
        .par_iter()
        .map(|d| derived_batch_of(d, table, only))
        .collect::<Result<Vec<_>>>()?;
    batches.retain(|b| b.num_rows() > 0);
    if batches.is_empty() {
        batches.push(derived_batch_of(&Derived::default(), table, only)?);
    }
    Ok(batches)
}

fn rows_batch_of<R: Row>(rows: &[R], only: Option<&[String]>) -> Result<RecordBatch> {
    let Some(only) = only else {
        return rows_batch(rows);
    };
    let mut columns = ArrowColumns {
        cols: Vec::with_capacity(only.len()),
        only: Some(only),
    };
    R::visit_columns(rows, &mut columns);
    let schema = schema(R::TABLE);
    let indices: Vec<usize> = (0..schema.fields().len())
        .filter(|&i| only.iter().any(|c| c == schema.field(i).name()))
        .collect();
    let projected = Arc::new(schema.project(&indices)?);
    // With no column read (a count), the batch still holds its rows.
    let rows = RecordBatchOptions::new().with_row_count(Some(rows.len()));
    Ok(RecordBatch::try_new_with_options(
        projected,
        columns.cols,
        &rows,
    )?)
}

/// Builds the Arrow array of each column a [`Row`] hands over, in order: every column, or
/// those named in `only`.
struct ArrowColumns<'o> {
    cols: Vec<ArrayRef>,
    only: Option<&'o [String]>,
}

impl ArrowColumns<'_> {
    /// Adds column `name`, built by `make`, when it is wanted.
    #[inline]
    fn add(&mut self, name: &str, make: impl FnOnce() -> ArrayRef) {
        if self.only.is_none_or(|o| o.iter().any(|c| c == name)) {
            self.cols.push(make());
        }
    }
}

impl<'a> ColumnVisitor<'a> for ArrowColumns<'_> {
    fn text(&mut self, n: &'static str, v: impl ExactSizeIterator<Item = &'a str> + Clone) {
        self.add(n, || s(v));
    }
    fn opt_text(
        &mut self,
        n: &'static str,
        v: impl ExactSizeIterator<Item = Option<&'a str>> + Clone,
    ) {
        self.add(n, || so(v));
    }
    fn int(&mut self, n: &'static str, v: impl ExactSizeIterator<Item = i64> + Clone) {
        self.add(n, || i(v));
    }
    fn opt_int(&mut self, n: &'static str, v: impl ExactSizeIterator<Item = Option<i64>> + Clone) {
        self.add(n, || io(v));
    }
    fn bool(&mut self, n: &'static str, v: impl ExactSizeIterator<Item = bool> + Clone) {
        self.add(n, || b(v));
    }
    fn opt_bool(
        &mut self,
        n: &'static str,
        v: impl ExactSizeIterator<Item = Option<bool>> + Clone,
    ) {
        self.add(n, || bo(v));
    }
    fn ts(&mut self, n: &'static str, v: impl ExactSizeIterator<Item = i64> + Clone) {
        self.add(n, || t(v));
    }
    fn opt_ts(&mut self, n: &'static str, v: impl ExactSizeIterator<Item = Option<i64>> + Clone) {
        self.add(n, || to(v));
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
                _ => derived_batches_of(parts, table, None)?,
            };
            Ok((table, batches))
        })
        .collect()
}
