//! What a question over raw log files must compute: the tables its statements read and,
//! from DataFusion's optimized plans, the columns of each table they read; from those, the
//! event types the answer depends on (`reduce::needs`). A read of the logs then keeps only
//! those events ([`runlog_core::ingest::IngestOptions::keep`]), and the tables are registered
//! with only the columns read, the ones computed exactly from the events kept.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::datasource::MemTable;
use datafusion::logical_expr::LogicalPlan;
use datafusion::prelude::{SessionConfig, SessionContext};
use rayon::prelude::*;

use crate::error::Result;
use crate::query::TimeWindow;
use crate::store;
use runlog_core::event::KindSet;
use runlog_core::table::Table;

/// The tables a question reads, the columns of each it reads, and, when those depend on
/// a few event types only, those types.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Demand {
    /// The tables to build (see [`crate::query::tables_referenced`]).
    pub tables: Vec<Table>,
    /// The columns read of each table (`None`: every column).
    pub columns: Option<BTreeMap<Table, Vec<String>>>,
    /// The kinds of events those columns depend on (`None`: every event); set only with
    /// `columns`.
    pub keep: Option<KindSet>,
}

impl Demand {
    /// Every column of every table named, from every event.
    pub fn whole(tables: Vec<Table>) -> Demand {
        Demand {
            tables,
            columns: None,
            keep: None,
        }
    }

    /// The demand of the SQL statements `sqls` run under `window`. A window's views read
    /// more than the statements name, so under a window every column and every event is
    /// needed.
    pub fn of<S: AsRef<str> + Sync>(sqls: &[S], window: &TimeWindow) -> Demand {
        // One planning context for every statement, planned at once (a report's dozen
        // statements, one after the other, were a serial start before any file was read).
        let planner = Planner::new();
        let whole = !window.is_all();
        let planned: Vec<Planned> = sqls
            .par_iter()
            .map(|s| planner.plan(s.as_ref(), whole))
            .collect();
        let mut tables: Vec<Table> = Vec::new();
        for p in &planned {
            for &t in &p.tables {
                if !tables.contains(&t) {
                    tables.push(t);
                }
            }
        }
        let tables = crate::query::tables_for_window(&tables, window);
        if whole {
            return Demand::whole(tables);
        }
        let columns = columns_read(planned, &tables);
        let keep = columns.as_ref().and_then(|cols| {
            runlog_core::reduce::needs::kinds_for(cols.iter().map(|(t, c)| (t.name(), c.clone())))
        });
        Demand {
            tables,
            columns,
            keep,
        }
    }

    /// The kinds of events to keep when reading the logs (`None`: all).
    pub fn keep(&self) -> Option<KindSet> {
        self.keep
    }

    /// A context over the tables of `loaded` (read with [`Demand::keep`]): those
    /// demanded, each with the columns read when they are known.
    pub fn context(&self, loaded: &crate::loaded::Loaded) -> Result<SessionContext> {
        let Some(cols) = &self.columns else {
            return crate::query::context_from_batches(loaded.some_batches(&self.tables)?);
        };
        // Each table is built with only the columns read (`rejects` and `files`, small,
        // whole): building every column of the derived tables was 8 % of a report's CPU
        // (perf, 196 MB of logs), and the report reads few of them.
        let batches = self
            .tables
            .par_iter()
            .map(|&t| {
                let read = cols.get(&t).map(Vec::as_slice).unwrap_or_default();
                let batches = match t {
                    Table::Events => {
                        crate::events_projected::events_batches_of(&loaded.ingested, read)?
                    }
                    Table::Rejects | Table::Files => {
                        loaded.some_batches(&[t])?.remove(&t).unwrap_or_default()
                    }
                    _ => store::derived_batches_of(&loaded.parts, t, Some(read))?,
                };
                Ok((t, batches))
            })
            .collect::<Result<BTreeMap<_, _>>>()?;
        self.context_of(batches)
    }

    /// A context over the demanded tables' `batches` (built with every column, or with
    /// only those read for `events`), each table given only the columns read when they
    /// are known.
    pub fn context_of(&self, batches: BTreeMap<Table, Vec<RecordBatch>>) -> Result<SessionContext> {
        let Some(cols) = &self.columns else {
            return crate::query::context_from_batches(batches);
        };
        let ctx =
            SessionContext::new_with_config(crate::query::session_config(SessionConfig::new()));
        for (table, batches) in batches {
            let schema = store::schema(table);
            let read = cols.get(&table).map(Vec::as_slice).unwrap_or_default();
            let indices: Vec<usize> = (0..schema.fields().len())
                .filter(|&i| read.iter().any(|c| c == schema.field(i).name()))
                .collect();
            // Batches built with only the columns read keep their own schema (the
            // `events` text columns as string views, `crate::events_projected`).
            let projected = match batches.first() {
                Some(b) if b.num_columns() == indices.len() => b.schema(),
                _ => Arc::new(schema.project(&indices)?),
            };
            let batches = batches
                .iter()
                .map(|b| {
                    if b.num_columns() == indices.len() {
                        Ok(b.clone())
                    } else {
                        b.project(&indices)
                    }
                })
                .collect::<std::result::Result<Vec<RecordBatch>, _>>()?;
            let mem = MemTable::try_new(projected, vec![batches])?;
            ctx.register_table(table.name(), Arc::new(mem))?;
        }
        Ok(ctx)
    }
}

/// A context for planning statements over the warehouse tables, empty.
struct Planner {
    state: datafusion::execution::SessionState,
}

/// What one statement reads: the tables it names, and the columns each of its table scans
/// reads (`None` when it cannot be planned here, or reads a table without scanning it).
struct Planned {
    tables: Vec<Table>,
    columns: Option<BTreeMap<Table, Vec<String>>>,
}

impl Planner {
    fn new() -> Planner {
        let ctx =
            SessionContext::new_with_config(crate::query::session_config(SessionConfig::new()));
        for &t in store::TABLES {
            if let Ok(mem) = MemTable::try_new(store::schema(t), vec![vec![]]) {
                let _ = ctx.register_table(t.name(), Arc::new(mem));
            }
        }
        Planner { state: ctx.state() }
    }

    /// `sql`'s tables, and their columns unless every column is read anyway (`whole`).
    fn plan(&self, sql: &str, whole: bool) -> Planned {
        Planned {
            tables: crate::query::tables_referenced(&self.state, sql),
            columns: if whole { None } else { self.columns(sql) },
        }
    }

    /// The columns the table scans of `sql`'s optimized plan read (a table's filters'
    /// columns included), and every column of a table scanned that the statement names:
    /// the statement is planned again over the tables built, and a column its optimized
    /// plan never reads (`min(source)` under a `count(*)`) must still be there to be named.
    fn columns(&self, sql: &str) -> Option<BTreeMap<Table, Vec<String>>> {
        let state = &self.state;
        // Planning over memory tables waits on nothing: no runtime needed.
        let plan = futures::executor::block_on(state.create_logical_plan(sql)).ok()?;
        let named = names_in(&plan).ok()?;
        let plan = state.optimize(&plan).ok()?;
        let mut out: BTreeMap<Table, Vec<String>> = BTreeMap::new();
        let mut scans_ok = true;
        plan.apply_with_subqueries(|node| {
            if let LogicalPlan::TableScan(scan) = node {
                let Some(&table) = store::TABLES
                    .iter()
                    .find(|t| t.name() == scan.table_name.table())
                else {
                    scans_ok = false;
                    return Ok(TreeNodeRecursion::Stop);
                };
                let schema = store::schema(table);
                let cols = out.entry(table).or_default();
                let mut add = |name: &str| {
                    if !cols.iter().any(|c| c == name) {
                        cols.push(name.to_string());
                    }
                };
                match &scan.projection {
                    Some(p) => p.iter().for_each(|&i| add(schema.field(i).name())),
                    None => schema.fields().iter().for_each(|f| add(f.name())),
                }
                for f in &scan.filters {
                    f.column_refs().iter().for_each(|c| add(&c.name));
                }
            }
            Ok(TreeNodeRecursion::Continue)
        })
        .ok()?;
        for (table, cols) in out.iter_mut() {
            let schema = store::schema(*table);
            for f in schema.fields() {
                if named.contains(f.name().as_str()) && !cols.contains(f.name()) {
                    cols.push(f.name().clone());
                }
            }
        }
        scans_ok.then_some(out)
    }
}

/// The names of every column `plan` (its subqueries included) refers to, whatever table
/// or alias qualifies them.
fn names_in(plan: &LogicalPlan) -> datafusion::error::Result<HashSet<String>> {
    let mut names = HashSet::new();
    plan.apply_with_subqueries(|node| {
        node.apply_expressions(|e| {
            names.extend(e.column_refs().into_iter().map(|c| c.name.clone()));
            Ok(TreeNodeRecursion::Continue)
        })?;
        Ok(TreeNodeRecursion::Continue)
    })?;
    Ok(names)
}

/// The columns each of `tables` is read for by the `planned` statements together; `None`
/// when one of them could not be planned here, or a table is named but never scanned
/// (DESCRIBE, say: read whole).
fn columns_read(planned: Vec<Planned>, tables: &[Table]) -> Option<BTreeMap<Table, Vec<String>>> {
    let mut out: BTreeMap<Table, Vec<String>> = BTreeMap::new();
    for p in planned {
        for (table, cols) in p.columns? {
            let all = out.entry(table).or_default();
            for c in cols {
                if !all.contains(&c) {
                    all.push(c);
                }
            }
        }
    }
    tables.iter().all(|t| out.contains_key(t)).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use runlog_core::event::Kind;

    fn demand(sql: &str) -> Demand {
        Demand::of(&[sql], &TimeWindow::default())
    }

    #[test]
    fn finish_reasons_need_the_interval_events_only() {
        let sql = std::fs::read_to_string("queries/finish_reasons.sql").unwrap();
        let d = demand(&sql);
        assert_eq!(d.tables, vec![Table::Intervals]);
        let (cols, kinds) = (d.columns.expect("columns"), d.keep.expect("some events"));
        let mut read = cols[&Table::Intervals].clone();
        read.sort();
        assert_eq!(read, vec!["finish_class", "finish_reason", "status"]);
        let mut k: Vec<Kind> = kinds.kinds().collect();
        k.sort_by_key(|k| *k as u8);
        assert_eq!(k, vec![Kind::InboxReceipt, Kind::AgentIdle, Kind::TurnEnd]);
    }

    #[test]
    fn counts_filters_and_joins_name_their_columns() {
        let d = demand("SELECT count(*) FROM intervals");
        assert_eq!(
            d.keep(),
            runlog_core::reduce::needs::kinds_for([("intervals", Vec::<&str>::new())])
        );
        let d = demand("SELECT root FROM intervals WHERE model_calls > 2");
        assert!(d.keep().unwrap().contains(Kind::ModelEnd));
        let d = demand(
            "SELECT i.root FROM intervals i JOIN errors e ON i.root = e.root WHERE e.code = 'x'",
        );
        let keep = d.keep().unwrap();
        assert!(keep.contains(Kind::RunFailed) && keep.contains(Kind::InboxReceipt));
    }

    #[test]
    fn every_event_where_a_column_or_table_needs_them() {
        for sql in [
            "SELECT sum(seq_gaps) FROM intervals",
            "SELECT * FROM intervals",
            "SELECT count(*) FROM events",
            "SELECT * FROM rejects",
            "SELECT count(*) FROM agents",
            "DESCRIBE intervals",
            "SELECT nonsense FROM",
        ] {
            assert_eq!(demand(sql).keep(), None, "{sql}");
        }
        let window = TimeWindow {
            since: Some(0),
            until: None,
        };
        assert_eq!(
            Demand::of(&["SELECT finish_reason FROM intervals"], &window).keep(),
            None
        );
    }

    /// Each statement's answer over the tables [`Demand::context`] builds from a read
    /// under [`Demand::keep`] is its answer over every table read whole, on a generated log
    /// with anomalies.
    #[test]
    fn answers_are_those_of_a_whole_read() {
        let dir = tempfile::tempdir().unwrap();
        let opts = runlog_gen::GenOptions {
            agents: 150,
            files: 3,
            anomalies: 0.1,
            layout: runlog_gen::Layout::Scattered,
            ..Default::default()
        };
        runlog_gen::write(&opts, dir.path()).unwrap();
        let paths = [dir.path().to_path_buf()];
        let whole = crate::pipeline::load(&paths, &Default::default()).unwrap();
        let all = crate::query::context_from_batches(whole.batches().unwrap()).unwrap();
        let finish = std::fs::read_to_string("queries/finish_reasons.sql").unwrap();
        let mut sqls: Vec<String> = vec![
            finish,
            "SELECT count(*) FROM intervals".into(),
            "SELECT status, sum(turns), sum(errors), sum(input_tokens) FROM intervals GROUP BY 1 ORDER BY 1".into(),
            "SELECT code, count(*) FROM errors GROUP BY 1 ORDER BY 1".into(),
            "SELECT count(*), min(ts), max(root) FROM events".into(),
            // Columns named but never read once optimized: still in the tables built.
            "SELECT count(*) FROM (SELECT root, min(source) FROM events GROUP BY root)".into(),
            "WITH t AS (SELECT root, status, model_calls FROM intervals) SELECT count(*) FROM t"
                .into(),
        ];
        sqls.extend(crate::report::statements());
        let rt = tokio::runtime::Runtime::new().unwrap();
        let mut kept_some = 0;
        for sql in &sqls {
            let d = Demand::of(&[sql], &TimeWindow::default());
            let opts = runlog_core::ingest::IngestOptions {
                keep: d.keep(),
                ..Default::default()
            };
            kept_some += usize::from(d.keep().is_some());
            let some = crate::pipeline::load(&paths, &opts).unwrap();
            let ctx = d.context(&some).unwrap();
            let show = |ctx: &SessionContext| {
                let (_, b) = rt.block_on(crate::query::run_sql(ctx, sql)).unwrap();
                datafusion::arrow::util::pretty::pretty_format_batches(&b)
                    .unwrap()
                    .to_string()
            };
            assert_eq!(show(&all), show(&ctx), "{sql}");
        }
        assert!(kept_some >= 4);
        // The report's statements together: every table, with the columns they read.
        let d = Demand::of(&crate::report::statements(), &TimeWindow::default());
        assert_eq!(d.keep(), None);
        let cols = d.columns.expect("the report's columns are known");
        let mut events = cols[&Table::Events].clone();
        events.sort();
        assert_eq!(events, vec!["root", "source", "ts"]);
    }
}
