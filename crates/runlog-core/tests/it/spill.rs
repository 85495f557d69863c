//! A spilled ingest (partitions on disk, one partition in memory at a time) must give
//! exactly the in-memory ingest: the same agents with the same events, the same derived
//! rows, the same per-file accounting and rejects, whatever the number of partitions.

use std::path::PathBuf;

use runlog_core::ingest::IngestOptions;
use runlog_gen::GenOptions;

fn generated(dir: &std::path::Path, anomalies: f64) -> PathBuf {
    let out = dir.join("logs");
    let opts = GenOptions {
        agents: 240,
        seed: 11,
        files: 3,
        anomalies,
        ..Default::default()
    };
    runlog_gen::write(&opts, &out).unwrap();
    out
}

fn check(paths: &[PathBuf], partitions: usize) {
    let opts = IngestOptions::default();
    let whole = runlog_core::ingest::ingest_paths(paths, &opts).unwrap();
    let whole_derived = runlog_core::reduce_all(&whole);

    let spill_dir = tempfile::tempdir().unwrap();
    let got = std::sync::Mutex::new((Vec::new(), Vec::new()));
    let totals = runlog_core::ingest::spill::ingest_partitioned::<runlog_core::Error>(
        paths,
        &opts,
        &spill_dir.path().join("spill"),
        partitions,
        |p| {
            let mut g = got.lock().unwrap();
            g.0.push(p.index);
            g.1.extend(p.agents);
            Ok(())
        },
    )
    .unwrap();
    let (mut seen, mut agents) = got.into_inner().unwrap();
    seen.sort_unstable();
    assert!(
        !spill_dir.path().join("spill").exists(),
        "the spill folder is removed"
    );
    assert_eq!(seen, (0..partitions).collect::<Vec<_>>());
    agents.sort_by(|a, b| a.root.cmp(&b.root));
    assert_eq!(agents.len(), whole.agents.len());
    assert!(agents == whole.agents, "same agents and events");
    assert_eq!(totals.files, whole.files, "same accounting per file");
    assert_eq!(totals.rejects, whole.rejects, "same rejects");
    let spilled = runlog_core::Ingested {
        files: totals.files,
        skipped_files: totals.skipped_files,
        agents,
        rejects: totals.rejects,
    };
    let derived = runlog_core::reduce_all(&spilled);
    assert!(derived.intervals == whole_derived.intervals);
    assert!(derived.turns == whole_derived.turns);
    assert!(derived.errors == whole_derived.errors);
    assert!(derived.runs == whole_derived.runs);
}

#[test]
fn spilled_ingest_equals_the_in_memory_one() {
    let dir = tempfile::tempdir().unwrap();
    let logs = generated(dir.path(), 0.0);
    for partitions in [1, 4, 7] {
        check(std::slice::from_ref(&logs), partitions);
    }
}

#[test]
fn spilled_ingest_keeps_duplicates_conflicts_and_rejects() {
    let dir = tempfile::tempdir().unwrap();
    let logs = generated(dir.path(), 0.3);
    check(std::slice::from_ref(&logs), 5);
}

#[test]
fn spilled_ingest_of_imported_and_golden_inputs() {
    // Canonical golden cases with duplicates and conflicts across files, plus real
    // samples of other formats (imported files are resolved across files before spilling).
    let root = crate::common::repo();
    let paths = vec![
        root.join("tests/cases/s1_conflict_first_wins/input"),
        root.join("tests/cases/s1_order_compressed/input"),
        root.join("tests/cases/s7_rejects/input.jsonl"),
        root.join("tests/samples/deepseek-harness/acp-agent/subagent-max-tokens-partial"),
        root.join("tests/samples/codex"),
    ];
    check(&paths, 3);
}
