//! A read of one agent (`IngestOptions::root`, what a replay reads) must give that agent
//! exactly as the read of every agent does: the other agents' canonical lines are read no
//! further than their root, and duplicates, conflicts and rejects of its own lines are
//! settled as before; imported files are read whole.

use std::path::PathBuf;

use runlog_core::ingest::IngestOptions;
use runlog_gen::GenOptions;

#[test]
fn one_agent_read_alone_is_the_agent_read_with_all() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    let gen = GenOptions {
        agents: 120,
        seed: 13,
        files: 3,
        anomalies: 0.3,
        ..Default::default()
    };
    runlog_gen::write(&gen, &logs).unwrap();
    let root = crate::common::repo();
    let paths: Vec<PathBuf> = vec![
        logs,
        root.join("tests/cases/s1_conflict_first_wins/input"),
        root.join("tests/cases/s7_rejects/input.jsonl"),
        root.join("tests/samples/codex"),
    ];
    let whole = runlog_core::ingest::ingest_paths(&paths, &IngestOptions::default()).unwrap();
    assert!(whole.agents.len() > 100 && !whole.rejects.is_empty());
    // Every tenth generated agent, and every agent of the golden cases and samples.
    let roots: Vec<&str> = whole
        .agents
        .iter()
        .enumerate()
        .filter(|(i, a)| i % 10 == 0 || !a.root.starts_with("ag-"))
        .map(|(_, a)| a.root.as_str())
        .collect();
    assert!(roots.len() > 15, "{roots:?}");
    for r in roots {
        let opts = IngestOptions {
            root: Some(r.into()),
            ..Default::default()
        };
        let one = runlog_core::ingest::ingest_paths(&paths, &opts).unwrap();
        let got: Vec<_> = one.agents.iter().filter(|a| a.root == r).collect();
        let want: Vec<_> = whole.agents.iter().filter(|a| a.root == r).collect();
        assert!(got == want, "{r}");
        // Canonical lines of other agents are dropped: only imported agents remain.
        assert!(
            one.agents
                .iter()
                .all(|a| a.root == r || !a.root.starts_with("ag-")),
            "{r}"
        );
    }
}
