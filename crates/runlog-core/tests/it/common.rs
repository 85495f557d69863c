//! Helpers shared by the core's integration tests.

use std::path::{Path, PathBuf};

/// The repository's top folder (the core crate sits at `crates/runlog-core`), where the
/// golden cases and the real samples are.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The real logs kept beside the project, not in it (`../shared/samples`: data found in
/// public repositories, which is not committed), or `None` with a notice when this checkout
/// has none (`RUNLOG_SHARED_SAMPLES` names another folder).
pub fn shared_samples() -> Option<PathBuf> {
    let dir = std::env::var_os("RUNLOG_SHARED_SAMPLES")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("../shared/samples"));
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "NOTE: {} not found: the shared real logs are not checked",
            dir.display()
        );
        None
    }
}

/// Every line of every `.jsonl` / `.ndjson` file below `dir`, in no particular order.
pub fn lines_under(dir: &Path, out: &mut Vec<Vec<u8>>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            lines_under(&p, out);
        } else if p.extension().is_some_and(|e| e == "jsonl" || e == "ndjson") {
            let bytes = std::fs::read(&p).unwrap();
            out.extend(bytes.split(|&b| b == b'\n').map(<[u8]>::to_vec));
        }
    }
}

/// Every line of the golden cases' inputs and of the real samples (`tests/cases`,
/// `tests/samples`).
pub fn golden_and_sample_lines() -> Vec<Vec<u8>> {
    let root = repo().join("tests");
    let mut lines = Vec::new();
    lines_under(&root.join("cases"), &mut lines);
    lines_under(&root.join("samples"), &mut lines);
    lines
}
