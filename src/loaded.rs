//! Logs read into memory: every file read, validated and ordered, every agent reduced
//! (`runlog_core`), with the accounting — what [`crate::pipeline::run`] makes for `query`,
//! `report` and `replay` over log PATHs and the tests. Tables of it as Arrow batches come
//! from [`crate::store`].

use std::collections::BTreeMap;

use datafusion::arrow::array::RecordBatch;
use runlog_core::ingest::Ingested;
use runlog_core::reduce::Derived;
use runlog_core::table::Table;
use runlog_core::Summary;

use crate::error::Result;
use crate::store;

/// Everything one ingest produced, in memory.
pub struct Loaded {
    pub ingested: Ingested,
    pub derived: Derived,
    pub summary: Summary,
}

impl Loaded {
    /// Every table as record batches.
    pub fn batches(&self) -> Result<BTreeMap<Table, Vec<RecordBatch>>> {
        store::all_batches(&self.ingested, &self.derived)
    }

    /// The named tables as record batches.
    pub fn some_batches(&self, tables: &[Table]) -> Result<BTreeMap<Table, Vec<RecordBatch>>> {
        store::some_batches(&self.ingested, &self.derived, tables)
    }
}
