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
    /// The derived tables in parts of consecutive agents, in `root` order
    /// ([`runlog_core::reduce_parts`]): each table's batches are built part by part, and
    /// the rows are never gathered into one list (a copy of every row, made on one core
    /// while the other waited).
    pub parts: Vec<Derived>,
    pub summary: Summary,
}

impl Loaded {
    /// Every table as record batches.
    pub fn batches(&self) -> Result<BTreeMap<Table, Vec<RecordBatch>>> {
        self.some_batches(store::TABLES)
    }

    /// The named tables as record batches.
    pub fn some_batches(&self, tables: &[Table]) -> Result<BTreeMap<Table, Vec<RecordBatch>>> {
        store::some_batches_of(&self.ingested, &self.parts, tables)
    }

    /// The derived tables of every agent, gathered (a copy of every row).
    pub fn derived(&self) -> Derived {
        Derived::concat(self.parts.clone())
    }
}
