//! The `events` table with only some of its columns, for a question over raw logs that
//! reads only those ([`crate::plan_tables::Demand`]): the report reads `root`, `ts` and
//! `source` of every event, and building `data` (every payload copied once more) cost as
//! much as the rest of the table. Each column holds the values [`crate::store::events_batches`]
//! builds (the test below compares them). `root` and `source` are dictionaries
//! ([`text_dict`]: a row costs a 4-byte key; spilled, a report of 1.96 GB of logs peaked
//! at 0.90 GB with them, 1.09 GB with string views), the other text columns but `data` string
//! views ([`text_view`]), which cost a row 16 bytes instead of a copy of its text.

use std::sync::Arc;

use datafusion::arrow::array::builder::make_view;
use datafusion::arrow::array::{
    ArrayRef, Int64Array, RecordBatch, RecordBatchOptions, StringBuilder, StringViewArray,
    StringViewBuilder, TimestampMicrosecondArray,
};
use datafusion::arrow::buffer::{Buffer, NullBuffer, ScalarBuffer};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use rayon::prelude::*;

use crate::error::Result;
use crate::store;
use runlog_core::event::{Event, Voice};
use runlog_core::ingest::Ingested;

/// The `events` table's columns named in `columns` (in the table's order; the others
/// left out), in (root, seq) order, in batches of [`store::EVENTS_BATCH_ROWS`] rows; the
/// text columns but `data` as dictionaries or string views ([`schema_of`]).
pub fn events_batches_of(ing: &Ingested, columns: &[String]) -> Result<Vec<RecordBatch>> {
    let schema = store::schema(runlog_core::table::Table::Events);
    let indices: Vec<usize> = (0..schema.fields().len())
        .filter(|&i| columns.iter().any(|c| c == schema.field(i).name()))
        .collect();
    let projected = schema_of(&schema.project(&indices)?);
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

/// The schema of [`events_batches_of`]'s batches with the columns of `projected` (a
/// projection of the `events` table's): the same, with `root` and `source` as dictionaries
/// and the other text but `data` as string views.
pub fn schema_of(projected: &Schema) -> Arc<Schema> {
    let fields: Vec<Field> = projected
        .fields()
        .iter()
        .map(|f| match f.data_type() {
            DataType::Utf8 if DICTIONARY.contains(&f.name().as_str()) => {
                f.as_ref().clone().with_data_type(DataType::Dictionary(
                    Box::new(DataType::Int32),
                    Box::new(DataType::Utf8),
                ))
            }
            DataType::Utf8 if f.name() != "data" => {
                f.as_ref().clone().with_data_type(DataType::Utf8View)
            }
            _ => f.as_ref().clone(),
        })
        .collect();
    Arc::new(Schema::new_with_metadata(
        fields,
        projected.metadata().clone(),
    ))
}

/// One column of the `events` table for `chunk`.
fn column<'a>(name: &str, chunk: &[&'a Event], names: &[&'a str], formats: &[&'a str]) -> ArrayRef {
    match name {
        "root" => text_dict(chunk, |e| e.root.as_str()),
        "session" => text_view(chunk, |e| Some(e.session.as_str())),
        "turn" => text_view(chunk, |e| e.turn.as_deref()),
        "seq" => Arc::new(Int64Array::from_iter_values(
            chunk.iter().map(|e| e.seq as i64),
        )),
        "ts" => Arc::new(
            TimestampMicrosecondArray::from_iter_values(chunk.iter().map(|e| e.ts))
                .with_timezone("UTC"),
        ),
        "type" => text_view(chunk, |e| Some(e.kind.as_str())),
        "voice" => text_view(chunk, |e| Some(Voice::of(&e.kind).as_str())),
        "file" => text_view(chunk, |e| Some(names[e.file as usize])),
        "line" => Arc::new(Int64Array::from_iter_values(
            chunk.iter().map(|e| e.line as i64),
        )),
        "data" => text(chunk, |e| Some(e.data.as_str())),
        "source" => text_dict(chunk, |e| formats[e.file as usize]),
        other => unreachable!("the events table has no column {other}"),
    }
}

/// The text columns given as dictionaries ([`text_dict`]): an agent's root and its file's
/// format, the same text row after row.
const DICTIONARY: &[&str] = &["root", "source"];

/// A text column of `chunk` that is never null, as a dictionary: each distinct text stored
/// once, each row a 4-byte key (a string view is 16).
#[inline]
fn text_dict<'a>(chunk: &[&'a Event], get: impl Fn(&'a Event) -> &'a str) -> ArrayRef {
    let mut keys: Vec<i32> = Vec::with_capacity(chunk.len());
    let mut values: Vec<&str> = Vec::new();
    let mut seen: std::collections::HashMap<&str, i32> = std::collections::HashMap::new();
    let mut last: Option<(&str, i32)> = None;
    for e in chunk {
        let s = get(e);
        let key = match last {
            Some((l, k)) if l == s => k,
            _ => {
                let k = *seen.entry(s).or_insert_with(|| {
                    values.push(s);
                    (values.len() - 1) as i32
                });
                last = Some((s, k));
                k
            }
        };
        keys.push(key);
    }
    let values = datafusion::arrow::array::StringArray::from(values);
    Arc::new(
        datafusion::arrow::array::DictionaryArray::<
            datafusion::arrow::datatypes::Int32Type,
        >::try_new(keys.into(), Arc::new(values))
        .expect("every key is an index of the values"),
    )
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

/// A text column of `chunk` as string views: a value equal to the one before it (an
/// agent's root, session, file and format repeat row after row) points at the text stored
/// for that one, so most rows copy nothing.
#[inline]
fn text_view<'a>(chunk: &[&'a Event], get: impl Fn(&'a Event) -> Option<&'a str>) -> ArrayRef {
    let mut data: Vec<u8> = Vec::new();
    let mut views: Vec<u128> = Vec::with_capacity(chunk.len());
    let mut valid: Vec<bool> = Vec::with_capacity(chunk.len());
    let mut last: Option<(&str, u128)> = None;
    for e in chunk {
        let Some(s) = get(e) else {
            views.push(0);
            valid.push(false);
            continue;
        };
        let view = match last {
            Some((l, v)) if l == s => v,
            _ => {
                // Text of up to 12 bytes lives in the view itself; longer text in `data`,
                // whose offsets are 32-bit (a chunk of huge ids: the builder's blocks).
                let offset = if s.len() > 12 { data.len() } else { 0 };
                if u32::try_from(offset + s.len()).is_err() {
                    let mut b = StringViewBuilder::with_capacity(chunk.len());
                    chunk.iter().for_each(|e| b.append_option(get(e)));
                    return Arc::new(b.finish());
                }
                if s.len() > 12 {
                    data.extend_from_slice(s.as_bytes());
                }
                let v = make_view(s.as_bytes(), 0, offset as u32);
                last = Some((s, v));
                v
            }
        };
        views.push(view);
        valid.push(true);
    }
    let nulls = valid.contains(&false).then(|| NullBuffer::from(valid));
    // SAFETY: each view is `make_view` of a whole `&str` (valid UTF-8) that is either
    // inline (12 bytes or fewer) or stored whole at its offset, which fits in a u32, of
    // the one buffer, block 0.
    Arc::new(unsafe {
        StringViewArray::new_unchecked(
            ScalarBuffer::from(views),
            vec![Buffer::from_vec(data)],
            nulls,
        )
    })
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
