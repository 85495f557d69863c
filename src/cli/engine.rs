//! Where a command's SQL runs: the tokio runtime, the query context over a warehouse or over
//! logs (in memory, or through spill partitions when large), on the local engine or Ballista.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{bail, Result};
use runlog::pipeline::{Tables, Target};

use super::args::{EngineArgs, EngineName, Source};
use super::memory::memory_for;
use super::progress::{download_progress, progress_options};

pub(super) fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}

/// A query context, and the temporary warehouse it reads when its logs were too large to
/// hold in memory (removed when the context is dropped).
pub(super) struct QueryContext {
    ctx: datafusion::prelude::SessionContext,
    _scratch: Option<Arc<tempfile::TempDir>>,
}

impl QueryContext {
    /// A second context over the same tables ([`runlog::query::context_like`]), keeping
    /// the temporary warehouse while either is alive.
    pub(super) fn twin(&self, rt: &tokio::runtime::Runtime) -> Result<QueryContext> {
        Ok(QueryContext {
            ctx: rt.block_on(runlog::query::context_like(&self.ctx))?,
            _scratch: self._scratch.clone(),
        })
    }
}

impl std::ops::Deref for QueryContext {
    type Target = datafusion::prelude::SessionContext;
    fn deref(&self) -> &Self::Target {
        &self.ctx
    }
}

impl From<datafusion::prelude::SessionContext> for QueryContext {
    fn from(ctx: datafusion::prelude::SessionContext) -> Self {
        QueryContext {
            ctx,
            _scratch: None,
        }
    }
}

/// A context over a warehouse, or over logs ([`read_logs`]: in memory, only the tables
/// and columns `demand`ed built, from the events they depend on, all when `None`; or, when
/// large, through spill partitions, into those tables or a temporary warehouse: a query of
/// 2 GB of logs held 3.7 GB in memory, 0.6 GB so).
pub(super) fn context(
    source: &Source,
    paths: &[PathBuf],
    demand: Option<&runlog::plan_tables::Demand>,
) -> Result<QueryContext> {
    match &source.warehouse {
        Some(w) => {
            if !paths.is_empty() {
                bail!("give either --warehouse or log PATHs, not both");
            }
            Ok(runlog::query::context_from_warehouse(w)?.into())
        }
        None => match read_logs(source, paths, demand, None)? {
            Tables::Loaded(loaded) => {
                let ctx = match demand {
                    Some(d) => d.context(&loaded)?,
                    None => runlog::query::context_from_batches(loaded.batches()?)?,
                };
                // The context holds its own batches, and the command ends after its
                // statements: freeing the read events one by one first would only delay
                // them (a twentieth of a second per million events, on one core).
                std::mem::forget(loaded);
                Ok(ctx.into())
            }
            Tables::Kept(batches) => match demand {
                Some(d) => Ok(d.context_of(batches)?.into()),
                None => bail!("tables of kept events without a demand"),
            },
            Tables::Stored(scratch) => Ok(QueryContext {
                ctx: runlog::query::context_from_warehouse(scratch.path())?,
                _scratch: Some(Arc::new(scratch)),
            }),
        },
    }
}

/// Log PATHs read for `query`, `report` or `replay` ([`runlog::pipeline::run`]): in
/// memory, or, when they are large ([`memory_for`]), through spill partitions: into a
/// temporary warehouse (removed when dropped), so that reading 2 GB of logs holds about
/// what an ingest of them does; or, for a question (`demand`) whose columns are known,
/// into the tables and columns it reads ([`runlog::spilled_tables`]), from only the kinds
/// of events they depend on. With `root`, only that agent's events are kept (a replay: the
/// other agents' canonical lines are read no further than their root).
pub(super) fn read_logs(
    source: &Source,
    paths: &[PathBuf],
    demand: Option<&runlog::plan_tables::Demand>,
    root: Option<&str>,
) -> Result<Tables> {
    if paths.is_empty() {
        bail!("give log PATHs or --warehouse DIR");
    }
    let sources = runlog::inputs::list(paths)?;
    let (mut opts, bar) = progress_options(&source.read, || sources.bytes());
    opts.keep = demand.and_then(|d| d.keep());
    opts.root = root.map(std::sync::Arc::from);
    let target = Target::Tables {
        memory: memory_for(source.spill_partitions, &sources),
        shard: None,
        only: demand.map(|d| runlog::pipeline::Only {
            tables: &d.tables,
            columns: d.columns.as_ref(),
        }),
    };
    let made = runlog::pipeline::run(&sources, &opts, target, download_progress(false, None));
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    Ok(made?.into_tables()?)
}

/// A context for the chosen engine: the local one over a warehouse or logs, or Ballista
/// over a warehouse (its servers, when standalone, run on `rt`).
pub(super) fn engine_context(
    engine: &EngineArgs,
    source: &Source,
    paths: &[PathBuf],
    demand: Option<&runlog::plan_tables::Demand>,
    rt: &tokio::runtime::Runtime,
) -> Result<QueryContext> {
    let which = match engine.engine {
        EngineName::Local => runlog::engine::Engine::Local,
        EngineName::Ballista => runlog::engine::Engine::Ballista,
    };
    if which == runlog::engine::Engine::Local && engine.scheduler.is_none() {
        return context(source, paths, demand);
    }
    let Some(w) = &source.warehouse else {
        bail!(
            "--engine ballista reads a warehouse: ingest the logs first and give --warehouse DIR"
        );
    };
    if !paths.is_empty() {
        bail!("give either --warehouse or log PATHs, not both");
    }
    Ok(rt
        .block_on(runlog::engine::context(
            which,
            w,
            engine.scheduler.as_deref(),
        ))?
        .into())
}
