//! Query: a DataFusion `SessionContext` with every table registered — from a warehouse's
//! committed Parquet files, or from record batches held in memory — and the renderings of
//! a result as an aligned table, CSV (with a header line) or JSON lines.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::{
    ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl,
};
use datafusion::datasource::MemTable;
use datafusion::prelude::{SessionConfig, SessionContext};

use crate::error::{Error, Result};
use crate::store;

/// How a result is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputFormat {
    #[default]
    Table,
    Csv,
    Json,
}

/// Our settings on a session config: information schema, catalog `runlog`, schema `public`.
pub fn session_config(config: SessionConfig) -> SessionConfig {
    config
        .with_information_schema(true)
        .with_default_catalog_and_schema("runlog", "public")
}

fn new_context() -> SessionContext {
    SessionContext::new_with_config(session_config(SessionConfig::new()))
}

/// A context over a warehouse: every table of its manifest, read from Parquet.
pub fn context_from_warehouse(dir: &Path) -> Result<SessionContext> {
    let ctx = new_context();
    register_warehouse(&ctx, dir)?;
    Ok(ctx)
}

/// Registers every table of a warehouse's manifest in `ctx`, as a listing of the committed
/// Parquet files (absolute paths, so executors elsewhere can read them too).
pub fn register_warehouse(ctx: &SessionContext, dir: &Path) -> Result<()> {
    let root = crate::objstore::Root::open(dir)?;
    register_root(ctx, &root)
}

/// [`register_warehouse`] of a warehouse already opened: its store is registered with
/// DataFusion too (a remote one under its `scheme://bucket`).
pub fn register_root(ctx: &SessionContext, root: &crate::objstore::Root) -> Result<()> {
    root.register_store(ctx)?;
    let manifest = crate::commit::read_latest(root)?;
    for &table in store::TABLES {
        let urls = crate::commit::table_locations(root, &manifest, table)?
            .iter()
            .map(ListingTableUrl::parse)
            .collect::<std::result::Result<Vec<_>, _>>()?;
        let opts =
            ListingOptions::new(Arc::new(ParquetFormat::default())).with_file_extension(".parquet");
        let config = ListingTableConfig::new_with_multi_paths(urls)
            .with_listing_options(opts)
            .with_schema(store::schema(table));
        ctx.register_table(table, Arc::new(ListingTable::try_new(config)?))?;
    }
    Ok(())
}

/// A context over tables held in memory.
pub fn context_from_batches(
    tables: BTreeMap<&'static str, Vec<RecordBatch>>,
) -> Result<SessionContext> {
    let ctx = new_context();
    for (table, batches) in tables {
        let mem = MemTable::try_new(store::schema(table), vec![batches])?;
        ctx.register_table(table, Arc::new(mem))?;
    }
    Ok(ctx)
}

/// The warehouse tables a SQL statement reads (so that a query over raw files builds only
/// those). Falls back to every table when the statement cannot be parsed here; planning
/// will then report the error.
pub fn tables_referenced(sql: &str) -> Vec<&'static str> {
    let ctx = new_context();
    let state = ctx.state();
    let dialect = datafusion::common::config::Dialect::Generic;
    let refs = state
        .sql_to_statement(sql, &dialect)
        .and_then(|st| state.resolve_table_references(&st));
    match refs {
        Ok(refs) => store::TABLES
            .iter()
            .copied()
            .filter(|t| refs.iter().any(|r| r.table() == *t))
            .collect(),
        Err(_) => store::TABLES.to_vec(),
    }
}

/// The SQL text of a `query` argument: the contents of a `.sql` file, or the text itself.
pub fn load_sql(arg: &str) -> Result<String> {
    let p = Path::new(arg);
    if arg.trim_end().ends_with(".sql") && !arg.contains('\n') {
        return std::fs::read_to_string(p).map_err(|e| Error::io(p, e));
    }
    Ok(arg.to_string())
}

/// Runs one SQL statement and collects its result (with the result's schema, for empty ones).
pub async fn run_sql(ctx: &SessionContext, sql: &str) -> Result<(SchemaRef, Vec<RecordBatch>)> {
    let df = ctx.sql(sql).await?;
    let schema: SchemaRef = Arc::new(df.schema().as_arrow().clone());
    let batches = df.collect().await?;
    Ok((schema, batches))
}

/// Writes a result in the chosen format.
pub fn write_result(
    out: &mut dyn Write,
    schema: &SchemaRef,
    batches: &[RecordBatch],
    format: OutputFormat,
) -> Result<()> {
    let empty;
    let batches: &[RecordBatch] = if batches.is_empty() {
        empty = [RecordBatch::new_empty(schema.clone())];
        &empty
    } else {
        batches
    };
    match format {
        OutputFormat::Table => {
            let text = datafusion::arrow::util::pretty::pretty_format_batches(batches)?;
            writeln!(out, "{text}").map_err(|e| Error::io("<stdout>", e))?;
        }
        OutputFormat::Csv => {
            let mut w = datafusion::arrow::csv::WriterBuilder::new()
                .with_header(true)
                .build(out);
            for b in batches {
                w.write(b)?;
            }
        }
        OutputFormat::Json => {
            let mut w = datafusion::arrow::json::WriterBuilder::new()
                .with_explicit_nulls(true)
                .build::<_, datafusion::arrow::json::writer::LineDelimited>(out);
            for b in batches {
                w.write(b)?;
            }
            w.finish()?;
        }
    }
    Ok(())
}
