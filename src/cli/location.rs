//! `file://` locations: every warehouse and input given as a `file://` URL becomes its local
//! path before a command runs; object-store URLs stay as they are.

use std::path::PathBuf;

use anyhow::Result;

use super::{export, query, replay, report, Command};

/// Every warehouse and input location given as a `file://` URL becomes its local path
/// (`s3://`, `gs://` and `az://` locations stay URLs: they are opened as object stores).
pub(super) fn localize(cmd: &mut Command) -> Result<()> {
    fn fix(p: &mut PathBuf) -> Result<()> {
        if !runlog::objstore::is_supported_remote(p) {
            *p = runlog::location::local_path(p)?;
        }
        Ok(())
    }
    if let Command::Report(a) = cmd {
        a.baseline.baseline.iter_mut().try_for_each(fix)?;
    }
    match cmd {
        Command::Ingest(a) => {
            fix(&mut a.warehouse)?;
            a.paths.iter_mut().try_for_each(fix)?;
        }
        Command::Query(query::QueryArgs { source, args, .. }) => {
            if let Some(w) = &mut source.warehouse {
                fix(w)?;
            }
            let n = args.len().saturating_sub(1);
            for a in &mut args[..n] {
                let mut p = PathBuf::from(a.as_str());
                fix(&mut p)?;
                *a = p.to_string_lossy().into_owned();
            }
        }
        Command::Report(report::ReportArgs { source, paths, .. })
        | Command::Replay(replay::ReplayArgs { source, paths, .. })
        | Command::Export(export::ExportArgs { source, paths, .. }) => {
            if let Some(w) = &mut source.warehouse {
                fix(w)?;
            }
            paths.iter_mut().try_for_each(fix)?;
        }
        // The benchmark times the reading of local files.
        Command::Bench(a) => a.paths.iter_mut().try_for_each(|p| -> Result<()> {
            *p = runlog::location::local_path(p)?;
            Ok(())
        })?,
        Command::Gen(_) | Command::Collect(_) => {}
    }
    Ok(())
}
