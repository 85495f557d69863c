//! Golden cases as data: every folder under `tests/cases/` is one case.
//!
//! - `input.jsonl`, or an `input/` folder of log files: what is ingested; or `input.paths`:
//!   one path per line, relative to the case folder (files or folders, e.g. real sample
//!   logs under `tests/samples/`), ingested together. `input.format` (optional) holds the
//!   `--format` to read them with; without it, `auto`.
//! - `expected/<table>.csv`: hand-written rows of that table. The header names the columns
//!   compared (any subset, any order); rows may be in any order; an empty field is NULL;
//!   booleans are `true`/`false`. For `rejects`, `file` is relative to the case folder and a
//!   `reason` matches when the actual reason contains the expected text.
//! - `expected/summary.json`: a subset of the ingest summary (`lines_read`, `kept`, ...).
//! - `expected/timeline/<ROOT>.jsonl`: `runlog replay --root ROOT` output, line by line.
//! - `expected/snapshot/<ROOT>@<SEQ>.jsonl`: `runlog replay --root ROOT --at SEQ` output.
//!
//! A new case is a new folder, not new code: each folder is the test `golden::<folder>`,
//! run alone with `cargo test --all-features --test it -- golden::<folder> --exact`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use libtest_mimic::{Failed, Trial};
use runlog_core::ingest::IngestOptions;

fn cases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cases")
}

/// Parses one CSV line (RFC 4180 quoting).
fn csv_fields(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            ('"', true) => quoted = false,
            ('"', false) if cur.is_empty() => quoted = true,
            (',', false) => out.push(std::mem::take(&mut cur)),
            (c, _) => cur.push(c),
        }
    }
    out.push(cur);
    out
}

fn read_csv(text: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let header = lines.next().map(csv_fields).unwrap_or_default();
    let rows = lines.map(csv_fields).collect();
    (header, rows)
}

/// A case's inputs and the options to read them with (`input.paths`, `input/` or
/// `input.jsonl`; `input.format`).
pub(crate) fn case_input(dir: &Path) -> Result<(Vec<PathBuf>, IngestOptions), String> {
    let inputs: Vec<PathBuf> = if dir.join("input.paths").is_file() {
        std::fs::read_to_string(dir.join("input.paths"))
            .unwrap()
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(|l| dir.join(l))
            .collect()
    } else if dir.join("input").is_dir() {
        vec![dir.join("input")]
    } else {
        vec![dir.join("input.jsonl")]
    };
    let mut opts = IngestOptions::default();
    if let Ok(f) = std::fs::read_to_string(dir.join("input.format")) {
        opts.format = f.trim().parse().map_err(|e: String| e)?;
    }
    Ok((inputs, opts))
}

/// Every case folder, sorted.
pub(crate) fn case_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(cases_dir())
        .expect("tests/cases")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}

fn run_case(dir: &Path) -> Result<(), String> {
    let (inputs, opts) = case_input(dir)?;
    let loaded = runlog::pipeline::load(&inputs, &opts).map_err(|e| e.to_string())?;
    let ctx = runlog::query::context_from_batches(loaded.batches().map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    let rt = tokio::runtime::Runtime::new().unwrap();
    let expected = dir.join("expected");
    let mut problems = Vec::new();
    let prefix = format!("{}/", dir.display());

    let mut entries: Vec<_> = std::fs::read_dir(&expected)
        .map_err(|e| format!("{}: {e}", expected.display()))?
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if let Some(table) = name.strip_suffix(".csv") {
            let text = std::fs::read_to_string(&path).unwrap();
            let (header, mut want) = read_csv(&text);
            let cols: Vec<String> = header.iter().map(|c| format!("\"{c}\"")).collect();
            let sql = format!("SELECT {} FROM {table}", cols.join(", "));
            let (schema, batches) = rt
                .block_on(runlog::query::run_sql(&ctx, &sql))
                .map_err(|e| format!("{table}: {e}"))?;
            let mut buf = Vec::new();
            runlog::query::write_result(
                &mut buf,
                &schema,
                &batches,
                runlog::query::OutputFormat::Csv,
            )
            .unwrap();
            let (_, mut got) = read_csv(&String::from_utf8(buf).unwrap());
            if table == "rejects" {
                for row in &mut got {
                    for (c, v) in header.iter().zip(row.iter_mut()) {
                        if c == "file" {
                            *v = v.strip_prefix(&prefix).unwrap_or(v).to_string();
                        }
                    }
                }
            }
            want.sort();
            got.sort();
            let reason_col = header.iter().position(|c| c == "reason");
            let same = want.len() == got.len()
                && want.iter().zip(&got).all(|(w, g)| {
                    w.len() == g.len()
                        && w.iter().zip(g).enumerate().all(|(i, (a, b))| {
                            if table == "rejects" && Some(i) == reason_col {
                                b.contains(a.as_str())
                            } else {
                                a == b
                            }
                        })
                });
            if !same {
                let show = |rows: &[Vec<String>]| {
                    rows.iter()
                        .map(|r| format!("    {}", r.join(",")))
                        .collect::<Vec<_>>()
                        .join("\n")
                };
                problems.push(format!(
                    "{table}.csv differs\n  columns: {}\n  expected:\n{}\n  actual:\n{}",
                    header.join(","),
                    show(&want),
                    show(&got)
                ));
            }
        } else if name == "summary.json" {
            let want: BTreeMap<String, serde_json::Value> =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            let got = serde_json::to_value(&loaded.summary).unwrap();
            for (k, v) in want {
                if got.get(&k) != Some(&v) {
                    problems.push(format!(
                        "summary.{k}: expected {v}, actual {:?}",
                        got.get(&k)
                    ));
                }
            }
        } else if name == "timeline" || name == "snapshot" {
            let mut files: Vec<_> = std::fs::read_dir(&path)
                .unwrap()
                .flatten()
                .map(|e| e.path())
                .collect();
            files.sort();
            for f in files {
                let stem = f.file_stem().unwrap().to_string_lossy().to_string();
                let (root, at) = match stem.split_once('@') {
                    Some((r, s)) => (r.to_string(), Some(s.parse::<u64>().expect("snapshot seq"))),
                    None => (stem.clone(), None),
                };
                let events = loaded
                    .ingested
                    .agents
                    .iter()
                    .find(|a| a.root == root)
                    .map(|a| a.events.clone())
                    .unwrap_or_default();
                let got = match at {
                    Some(at) => runlog::replay::snapshot(&root, &events, at),
                    None => runlog::replay::timeline(&root, &events),
                };
                let want: Vec<serde_json::Value> = std::fs::read_to_string(&f)
                    .unwrap()
                    .lines()
                    .filter(|l| !l.trim().is_empty())
                    .map(|l| {
                        serde_json::from_str(l).unwrap_or_else(|e| panic!("{}: {e}", f.display()))
                    })
                    .collect();
                if want != got {
                    problems.push(format!(
                        "{name}/{stem} differs\n  expected:\n{}\n  actual:\n{}",
                        want.iter()
                            .map(|v| format!("    {v}"))
                            .collect::<Vec<_>>()
                            .join("\n"),
                        got.iter()
                            .map(|v| format!("    {v}"))
                            .collect::<Vec<_>>()
                            .join("\n")
                    ));
                }
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

/// Every case folder as the test `golden::<folder name>`; with no case folder, the one
/// test `golden::cases_exist` fails.
pub(crate) fn cases() -> Vec<Trial> {
    let dirs = case_dirs();
    if dirs.is_empty() {
        return vec![Trial::test("golden::cases_exist", || {
            Err(format!("no golden cases found in {}", cases_dir().display()).into())
        })];
    }
    dirs.into_iter()
        .map(|d| {
            let name = d.file_name().unwrap().to_string_lossy().to_string();
            Trial::test(format!("golden::{name}"), move || {
                run_case(&d).map_err(Failed::from)
            })
        })
        .collect()
}
