//! The `events` table with only some of its columns, for a question over raw logs that
//! reads only those ([`crate::plan_tables::Demand`]): the report reads `root`, `ts` and
//! `source` of every event, and building `data` (every payload copied once more) cost as
//! much as the rest of the table. Each column is the one [`crate::store::events_batches`]
//! builds (the test below compares them).

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, Int64Array, RecordBatch, RecordBatchOptions, StringBuilder, TimestampMicrosecondArray,
};
use rayon::prelude::*;

use crate::error::Result;
use crate::store;
use runlog_core::event::{Event, Voice};
use runlog_core::ingest::Ingested;

/// The `events` table's columns named in `columns` (in the table's order; the others
/// left out), in (root, seq) order, in batches of [`store::EVENTS_BATCH_ROWS`] rows.
pub fn events_batches_of(ing: &Ingested, columns: &[String]) -> Result<Vec<RecordBatch>> {
    let schema = store::schema(runlog_core::table::Table::Events);
    let indices: Vec<usize> = (0..schema.fields().len())
        .filter(|&i| columns.iter().any(|c| c == schema.field(i).name()))
        .collect();
    let projected = Arc::new(schema.project(&indices)?);
    let names = ing.file_names();
    let formats: Vec<&str> = ing.files.iter().map(|f| f.format.as_str()).collect();
    let all: Vec<&Event> = ing.agents.iter().flat_map(|a| &a.events).collect();
    let wanted: Vec<&str> = indices
        .iter()
        .map(|&i| schema.field(i).name().as_str())
        .collect();
    all.par_chunks(store::EVENTS_BATCH_ROWS)
        .map(|chunk| {
            let cols = wanted
                .iter()
                .map(|&c| column(c, chunk, &names, &formats))
                .collect();
            // With no column read (a count), the batches still hold their rows.
            let rows = RecordBatchOptions::new().with_row_count(Some(chunk.len()));
            Ok(RecordBatch::try_new_with_options(
                projected.clone(),
                cols,
                &rows,
            )?)
        })
        .collect()
}

/// One column of the `events` table for `chunk`.
fn column<'a>(name: &str, chunk: &[&'a Event], names: &[&'a str], formats: &[&'a str]) -> ArrayRef {
    match name {
        "root" => text(chunk, |e| Some(e.root.as_str())),
        "session" => text(chunk, |e| Some(e.session.as_str())),
        "turn" => text(chunk, |e| e.turn.as_deref()),
        "seq" => Arc::new(Int64Array::from_iter_values(
            chunk.iter().map(|e| e.seq as i64),
        )),
        "ts" => Arc::new(
            TimestampMicrosecondArray::from_iter_values(chunk.iter().map(|e| e.ts))
                .with_timezone("UTC"),
        ),
        "type" => text(chunk, |e| Some(e.kind.as_str())),
        "voice" => text(chunk, |e| Some(Voice::of(&e.kind).as_str())),
        "file" => text(chunk, |e| Some(names[e.file as usize])),
        "line" => Arc::new(Int64Array::from_iter_values(
            chunk.iter().map(|e| e.line as i64),
        )),
        "data" => text(chunk, |e| Some(e.data.as_str())),
        "source" => text(chunk, |e| Some(formats[e.file as usize])),
        other => unreachable!("the events table has no column {other}"),
    }
}

/// A text column of `chunk`, each value `get` of its event (a generic, inlined, not a call
/// through a pointer per value).
#[inline]
fn text<'a>(chunk: &[&'a Event], get: impl Fn(&'a Event) -> Option<&'a str>) -> ArrayRef {
    let bytes = chunk.iter().map(|e| get(e).map_or(0, str::len)).sum();
    let mut b = StringBuilder::with_capacity(chunk.len(), bytes);
    for e in chunk {
        b.append_option(get(e));
    }
    Arc::new(b.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_column_is_the_one_the_store_builds() {
        let dir = tempfile::tempdir().unwrap();
        let opts = runlog_gen::GenOptions {
            agents: 40,
            files: 2,
            anomalies: 0.1,
            ..Default::default()
        };
        runlog_gen::write(&opts, dir.path()).unwrap();
        let ing =
            runlog_core::ingest::ingest_paths(&[dir.path().to_path_buf()], &Default::default())
                .unwrap();
        let whole = store::events_batches(&ing).unwrap();
        let schema = store::schema(runlog_core::table::Table::Events);
        for (i, field) in schema.fields().iter().enumerate() {
            let cols = [field.name().clone(), "seq".to_string()];
            let some = events_batches_of(&ing, &cols).unwrap();
            let at = some[0].schema().index_of(field.name()).unwrap();
            let a: Vec<ArrayRef> = whole.iter().map(|b| b.column(i).clone()).collect();
            let b: Vec<ArrayRef> = some.iter().map(|b| b.column(at).clone()).collect();
            let cast = |v: &[ArrayRef]| {
                let v: Vec<ArrayRef> = v
                    .iter()
                    .map(|c| {
                        datafusion::arrow::compute::cast(c, schema.field(i).data_type()).unwrap()
                    })
                    .collect();
                let refs: Vec<&dyn datafusion::arrow::array::Array> =
                    v.iter().map(|c| c.as_ref()).collect();
                datafusion::arrow::compute::concat(&refs).unwrap()
            };
            assert_eq!(&cast(&a), &cast(&b), "{}", field.name());
        }
    }
}
