//! Query: a DataFusion `SessionContext` with every table registered — from a warehouse's
//! committed Parquet files, or from record batches held in memory — and the renderings of
//! a result as an aligned table, CSV (with a header line) or JSON lines; and the time
//! window (`--since` / `--until`) that turns every table into a view of its rows in an
//! interval of time, for every query and report alike.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::MemorySchemaProvider;
use datafusion::common::TableReference;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::{
    ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl,
};
use datafusion::datasource::MemTable;
use datafusion::prelude::{SessionConfig, SessionContext};

use crate::error::{Error, Result};
use crate::store;
use runlog_core::table::Table;

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
        ctx.register_table(table.name(), Arc::new(ListingTable::try_new(config)?))?;
    }
    Ok(())
}

/// A context over tables held in memory.
pub fn context_from_batches(tables: BTreeMap<Table, Vec<RecordBatch>>) -> Result<SessionContext> {
    let ctx = new_context();
    for (table, batches) in tables {
        let mem = MemTable::try_new(store::schema(table), vec![batches])?;
        ctx.register_table(table.name(), Arc::new(mem))?;
    }
    Ok(ctx)
}

/// A second context over the tables of `ctx` (for another window of the same logs): the
/// tables' providers are shared, nothing is read or copied again. `ctx` must not be
/// restricted to a window yet.
pub async fn context_like(ctx: &SessionContext) -> Result<SessionContext> {
    let twin = new_context();
    for table in store::TABLES.iter().map(|t| t.name()) {
        if ctx.table_exist(table)? {
            twin.register_table(table, ctx.table_provider(table).await?)?;
        }
    }
    Ok(twin)
}

/// The warehouse tables a SQL statement reads (so that a query over raw files builds only
/// those), parsed by `state`. Falls back to every table when the statement cannot be
/// parsed here; planning will then report the error.
pub fn tables_referenced(state: &datafusion::execution::SessionState, sql: &str) -> Vec<Table> {
    let dialect = datafusion::common::config::Dialect::Generic;
    let refs = state
        .sql_to_statement(sql, &dialect)
        .and_then(|st| state.resolve_table_references(&st));
    match refs {
        Ok(refs) => store::TABLES
            .iter()
            .copied()
            .filter(|t| refs.iter().any(|r| r.table() == t.name()))
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

/// A half-open interval of time `[since, until)` in microseconds since the epoch (UTC);
/// either end may be open. The default is all of time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TimeWindow {
    pub since: Option<i64>,
    pub until: Option<i64>,
}

/// The schema that keeps the whole tables when a window is applied (`unfiltered.events`).
pub const UNFILTERED_SCHEMA: &str = "unfiltered";

/// What each table's rows are windowed by: (table, SQL of the view over the unfiltered
/// table, with `{in:COL}` standing for "COL is inside the window" and `{overlaps}` for "the
/// agent's first_ts..last_ts meets the window"). Rejects and files have no time and are not
/// windowed.
pub const WINDOWED: &[(Table, &str)] = &[
    (
        Table::Events,
        "SELECT * FROM unfiltered.events WHERE {in:ts}",
    ),
    (
        Table::Intervals,
        "SELECT * FROM unfiltered.intervals WHERE {in:opened_at}",
    ),
    (
        Table::Errors,
        "SELECT * FROM unfiltered.errors WHERE {in:ts}",
    ),
    (
        Table::Turns,
        "SELECT t.* FROM unfiltered.turns t JOIN unfiltered.events e
         ON e.root = t.root AND e.seq = t.start_seq WHERE {in:e.ts}",
    ),
    (
        Table::ToolCalls,
        "SELECT t.* FROM unfiltered.tool_calls t JOIN unfiltered.events e
         ON e.root = t.root AND e.seq = t.seq WHERE {in:e.ts}",
    ),
    (
        Table::Callbacks,
        "SELECT t.* FROM unfiltered.callbacks t JOIN unfiltered.events e
         ON e.root = t.root AND e.seq = t.open_seq WHERE {in:e.ts}",
    ),
    (
        Table::Runs,
        "SELECT t.* FROM unfiltered.runs t JOIN unfiltered.events e
         ON e.root = t.root AND e.seq = t.start_seq WHERE {in:e.ts}",
    ),
    (
        Table::Agents,
        "SELECT * FROM unfiltered.agents WHERE {overlaps}",
    ),
];

impl TimeWindow {
    /// True when neither end is set.
    pub fn is_all(&self) -> bool {
        self.since.is_none() && self.until.is_none()
    }

    /// A window from optional `--since` / `--until` texts (see [`parse_time`]).
    pub fn parse(since: Option<&str>, until: Option<&str>) -> Result<TimeWindow> {
        let w = TimeWindow {
            since: since.map(parse_time).transpose()?,
            until: until.map(parse_time).transpose()?,
        };
        if let (Some(a), Some(b)) = (w.since, w.until) {
            if a >= b {
                return Err(Error::Invalid(format!(
                    "the window is empty: --since {} is not before --until {}",
                    format_time(a),
                    format_time(b)
                )));
            }
        }
        Ok(w)
    }

    /// SQL that is true when the timestamp column `col` lies inside the window.
    fn contains_sql(&self, col: &str) -> String {
        let mut parts = Vec::new();
        if let Some(s) = self.since {
            parts.push(format!("{col} >= {}", ts_literal(s)));
        }
        if let Some(u) = self.until {
            parts.push(format!("{col} < {}", ts_literal(u)));
        }
        if parts.is_empty() {
            "true".to_string()
        } else {
            parts.join(" AND ")
        }
    }

    /// SQL that is true when an agent's `[first_ts, last_ts]` meets the window.
    fn overlaps_sql(&self) -> String {
        let mut parts = Vec::new();
        if let Some(s) = self.since {
            parts.push(format!("last_ts >= {}", ts_literal(s)));
        }
        if let Some(u) = self.until {
            parts.push(format!("first_ts < {}", ts_literal(u)));
        }
        if parts.is_empty() {
            "true".to_string()
        } else {
            parts.join(" AND ")
        }
    }
}

impl std::fmt::Display for TimeWindow {
    /// `[2026-11-03T00:00:00Z, 2026-11-04T00:00:00Z)`, `-` for an open end.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let end = |t: Option<i64>| t.map_or("-".to_string(), format_time);
        write!(f, "[{}, {})", end(self.since), end(self.until))
    }
}

/// A timestamp literal of the tables' type (microseconds, UTC), so that comparisons need no
/// cast of the column and Parquet statistics can prune.
fn ts_literal(us: i64) -> String {
    format!("arrow_cast({us}, 'Timestamp(Microsecond, Some(\"UTC\"))')")
}

/// Microseconds since the epoch as RFC 3339 in UTC (`2026-11-03T10:00:00Z`, fractions only
/// when there are some).
pub fn format_time(us: i64) -> String {
    match chrono::DateTime::from_timestamp_micros(us) {
        Some(t) => t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true),
        None => us.to_string(),
    }
}

/// A time for `--since` / `--until`: RFC 3339 (`2026-11-03T10:00:00Z`, `...+02:00`,
/// fractions allowed) or a date `2026-11-03` (its midnight UTC), as microseconds since the
/// epoch.
pub fn parse_time(s: &str) -> Result<i64> {
    let t = s.trim();
    if let Ok(dt) = chrono::DateTime::parse_from_rfc3339(t) {
        return Ok(dt.timestamp_micros());
    }
    if let Ok(d) = chrono::NaiveDate::parse_from_str(t, "%Y-%m-%d") {
        if let Some(dt) = d.and_hms_opt(0, 0, 0) {
            return Ok(dt.and_utc().timestamp_micros());
        }
    }
    Err(Error::Invalid(format!(
        "{s:?} is not a time: give RFC 3339 (2026-11-03T10:00:00Z) or a date (2026-11-03)"
    )))
}

/// The tables to build for a statement over raw logs that reads `tables` under `window`:
/// a windowed turn, tool call, callback or run needs `events` for its time.
pub fn tables_for_window(tables: &[Table], window: &TimeWindow) -> Vec<Table> {
    let mut out = tables.to_vec();
    let needs_events = [
        Table::Turns,
        Table::ToolCalls,
        Table::Callbacks,
        Table::Runs,
    ];
    if !window.is_all()
        && !out.contains(&Table::Events)
        && out.iter().any(|t| needs_events.contains(t))
    {
        out.push(Table::Events);
    }
    out
}

/// Restricts every table of `ctx` to `window`: each registered table moves to the
/// [`UNFILTERED_SCHEMA`] and a view of the same name keeps the rows inside the window (see
/// [`WINDOWED`]). Every query and report over `ctx` then sees the window alone. Nothing is
/// done for the whole of time.
pub async fn restrict_to_window(ctx: &SessionContext, window: &TimeWindow) -> Result<()> {
    if window.is_all() {
        return Ok(());
    }
    let catalog = ctx
        .catalog("runlog")
        .ok_or_else(|| Error::Invalid("no catalog runlog in the session".to_string()))?;
    catalog.register_schema(UNFILTERED_SCHEMA, Arc::new(MemorySchemaProvider::new()))?;
    let mut moved = Vec::new();
    for &(table, _) in WINDOWED {
        let name = table.name();
        if !ctx.table_exist(name)? {
            continue;
        }
        let provider = ctx.table_provider(name).await?;
        ctx.register_table(TableReference::partial(UNFILTERED_SCHEMA, name), provider)?;
        ctx.deregister_table(name)?;
        moved.push(table);
    }
    for &(table, sql) in WINDOWED {
        if !moved.contains(&table) {
            continue;
        }
        if sql.contains("unfiltered.events e") && !moved.contains(&Table::Events) {
            return Err(Error::Invalid(format!(
                "windowing {table} needs the events table (for its rows' time)"
            )));
        }
        let mut view = sql.replace("{overlaps}", &window.overlaps_sql());
        while let Some(i) = view.find("{in:") {
            let j = view[i..].find('}').map_or(view.len(), |j| i + j);
            let col = view[i + 4..j].to_string();
            view.replace_range(i..(j + 1).min(view.len()), &window.contains_sql(&col));
        }
        ctx.sql(&format!("CREATE VIEW {table} AS {view}")).await?;
    }
    Ok(())
}
