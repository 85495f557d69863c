//! Query engines: the local DataFusion engine (the default), or Apache Ballista, DataFusion's
//! distributed scheduler (`--engine ballista`, cargo feature `ballista`). Both run the same
//! SQL over the same warehouse Parquet files and give the same answers.
//!
//! Ballista runs on a standalone cluster started inside this process (a scheduler and one
//! executor on localhost), or on a remote cluster named by its scheduler's URL
//! (`df://HOST:PORT`). Executors read the warehouse's Parquet files at the locations the
//! manifest names: a local warehouse at the same path on every machine, or one in an
//! object store (`s3://...`) at its URL. The standalone executor shares this process's
//! runtime, where the warehouse's store is registered before the cluster starts; a remote
//! cluster's scheduler and executors open `s3://` stores themselves (Ballista's own
//! `ballista-scheduler` and `ballista-executor` build them from the AWS_* environment), so
//! they need only the same environment, not a shared mount.

use std::path::Path;

use datafusion::prelude::SessionContext;

use crate::error::{Error, Result};

/// Which engine runs a query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Engine {
    /// DataFusion in this process.
    #[default]
    Local,
    /// Apache Ballista: standalone in this process, or a remote scheduler.
    Ballista,
}

/// Whether this build includes the Ballista engine.
pub const BALLISTA_BUILT: bool = cfg!(feature = "ballista");

/// The scheduler URL Ballista's client expects, from `df://HOST:PORT` or `HOST:PORT`.
pub fn scheduler_url(s: &str) -> String {
    if s.contains("://") {
        s.to_string()
    } else {
        format!("df://{s}")
    }
}

/// A context whose queries run on Ballista over the warehouse's tables: on a standalone
/// in-process cluster when `scheduler` is `None`, else on the scheduler at that URL.
#[cfg(feature = "ballista")]
pub async fn ballista_context(warehouse: &Path, scheduler: Option<&str>) -> Result<SessionContext> {
    use ballista::prelude::{SessionConfigExt, SessionContextExt};
    use datafusion::execution::runtime_env::RuntimeEnvBuilder;
    use datafusion::execution::SessionStateBuilder;

    let root = crate::objstore::Root::open(warehouse)?;
    let config =
        crate::query::session_config(datafusion::prelude::SessionConfig::new_with_ballista());
    // The warehouse's store in the runtime the standalone executor is started with.
    let runtime = RuntimeEnvBuilder::new().build_arc()?;
    root.register_in(&runtime)?;
    let state = SessionStateBuilder::new()
        .with_config(config)
        .with_runtime_env(runtime)
        .with_default_features()
        .build();
    let ctx = match scheduler {
        None => SessionContext::standalone_with_state(state).await?,
        Some(url) => SessionContext::remote_with_state(&scheduler_url(url), state).await?,
    };
    crate::query::register_root(&ctx, &root)?;
    Ok(ctx)
}

/// Without the `ballista` feature: a clear error saying how to get it.
#[cfg(not(feature = "ballista"))]
pub async fn ballista_context(
    _warehouse: &Path,
    _scheduler: Option<&str>,
) -> Result<SessionContext> {
    Err(Error::Invalid(
        "--engine ballista: this runlog was built without Apache Ballista; rebuild it with \
         `cargo build --release --features ballista` (or `cargo install --path . --features ballista`)"
            .into(),
    ))
}

/// A context for `engine` over a warehouse.
pub async fn context(
    engine: Engine,
    warehouse: &Path,
    scheduler: Option<&str>,
) -> Result<SessionContext> {
    match (engine, scheduler) {
        (Engine::Local, Some(_)) => Err(Error::Invalid(
            "--scheduler names a Ballista scheduler: add --engine ballista".into(),
        )),
        (Engine::Local, None) => crate::query::context_from_warehouse(warehouse),
        (Engine::Ballista, s) => ballista_context(warehouse, s).await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scheduler_urls() {
        assert_eq!(scheduler_url("localhost:50050"), "df://localhost:50050");
        assert_eq!(scheduler_url("df://h:1"), "df://h:1");
    }

    #[tokio::test]
    async fn a_scheduler_needs_the_ballista_engine() {
        let e = context(
            Engine::Local,
            Path::new("nowhere"),
            Some("df://localhost:1"),
        )
        .await
        .err()
        .unwrap();
        assert!(e.to_string().contains("--engine ballista"), "{e}");
    }

    #[cfg(not(feature = "ballista"))]
    #[tokio::test]
    async fn without_the_feature_ballista_says_how_to_get_it() {
        let e = context(Engine::Ballista, Path::new("nowhere"), None)
            .await
            .err()
            .unwrap();
        assert!(e.to_string().contains("--features ballista"), "{e}");
    }
}
