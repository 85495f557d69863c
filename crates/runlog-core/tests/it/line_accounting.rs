//! Nothing vanishes: every non-blank line of every real sample under
//! `tests/samples/` (and `../shared/samples/` when present) becomes an event
//! (`Event::line`), is rejected, is SSE framing, or is folded into a named event the
//! importer reports ([`Importer::folded`]), for every format.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use runlog_core::import::{detect_record, importer, sse_payload, FileContext, Format, Importer};

fn samples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/samples")
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|e| e == "jsonl") {
            out.push(p);
        }
    }
}

/// What became of each line of one file: the lines not accounted for, by format. A file
/// whose format is never detected is read as canonical, where every line is an event or a
/// reject: nothing to account for.
fn account(path: &Path, base: &Path) -> (Format, Vec<u64>, usize) {
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<(u64, &str)> = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i as u64 + 1, l.trim_start_matches('\u{feff}')))
        .filter(|(_, l)| !l.trim().is_empty())
        .collect();
    let Some(format) = lines
        .iter()
        .take(16)
        .find_map(|(_, l)| detect_record(l.as_bytes()))
    else {
        return (Format::Runlog, Vec::new(), lines.len());
    };
    let rel = path
        .strip_prefix(base)
        .unwrap()
        .to_string_lossy()
        .to_string();
    let ctx = FileContext {
        file_idx: 0,
        name: rel.clone(),
        rel,
        keep: None,
    };
    let mut imp: Box<dyn Importer> = importer(format, &ctx).expect("an importer");
    let mut out = Vec::new();
    let mut accounted = BTreeSet::new();
    for &(no, l) in &lines {
        let before = out.len();
        if imp.line(no, l.as_bytes(), &mut out).is_err() {
            accounted.insert(no); // a reject
            continue;
        }
        for ev in &mut out[before..] {
            if ev.line == 0 {
                ev.line = no;
            }
        }
        if sse_payload(l.as_bytes()).is_none() {
            accounted.insert(no); // SSE framing
        }
    }
    let last = lines.last().map_or(0, |l| l.0);
    let before = out.len();
    imp.finish(&mut out);
    for ev in &mut out[before..] {
        if ev.line == 0 {
            ev.line = last;
        }
    }
    let kinds: BTreeMap<u64, Vec<&str>> = out.iter().fold(BTreeMap::new(), |mut m, e| {
        m.entry(e.line).or_default().push(e.kind.as_str());
        m
    });
    accounted.extend(kinds.keys().copied());
    for (line, kind) in imp.folded() {
        // Folded into an event of that type written at or after the line.
        let held = kinds.range(line..).any(|(_, ks)| ks.contains(&kind));
        assert!(
            held,
            "{}: line {line} folded into a missing {kind}",
            path.display()
        );
        accounted.insert(line);
    }
    let missing = lines
        .iter()
        .map(|l| l.0)
        .filter(|n| !accounted.contains(n))
        .collect();
    (format, missing, lines.len())
}

#[test]
fn every_line_of_every_sample_is_accounted_for() {
    let mut all = Vec::new();
    files(&samples(), &mut all);
    assert!(all.len() >= 30, "samples found: {}", all.len());
    let mut all: Vec<(PathBuf, PathBuf)> = all.into_iter().map(|p| (p, samples())).collect();
    if let Some(shared) = crate::common::shared_samples() {
        let mut more = Vec::new();
        files(&shared, &mut more);
        all.extend(more.into_iter().map(|p| (p, shared.clone())));
    }
    let mut per_format: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut problems = Vec::new();
    for (p, base) in &all {
        let (format, missing, n) = account(p, base);
        let e = per_format.entry(format.name().to_string()).or_default();
        e.0 += 1;
        e.1 += n;
        if !missing.is_empty() {
            problems.push(format!("{} ({format}): lines {missing:?}", p.display()));
        }
    }
    // Every format with real samples is checked.
    for f in ["claude-code", "codex", "harness", "anthropic", "openai"] {
        assert!(per_format.contains_key(f), "no {f} sample: {per_format:?}");
    }
    assert!(
        problems.is_empty(),
        "lines unaccounted for:\n{}",
        problems.join("\n")
    );
}

#[test]
fn a_tool_use_cut_by_max_tokens_is_a_partial_call_holding_its_lines() {
    let lines = [
        r#"{"type":"message_start","message":{"id":"msg_1","model":"m","usage":{"input_tokens":5,"output_tokens":1}}}"#,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"Write","input":{}}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"path\": \"a"}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":".txt\", \"con"}}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":20}}"#,
        r#"{"type":"message_stop"}"#,
    ];
    let ctx = FileContext {
        file_idx: 0,
        name: "cut.jsonl".into(),
        rel: "cut.jsonl".into(),
        keep: None,
    };
    let mut imp = importer(Format::Anthropic, &ctx).unwrap();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let before = out.len();
        imp.line(i as u64 + 1, l.as_bytes(), &mut out).unwrap();
        for ev in &mut out[before..] {
            ev.line = i as u64 + 1;
        }
    }
    imp.finish(&mut out);
    let call = out
        .iter()
        .find(|e| e.kind == "tool/call")
        .expect("a tool/call");
    assert_eq!(call.line, 5);
    let d: serde_json::Value = serde_json::from_str(&call.data).unwrap();
    assert_eq!(d["partial"], true);
    assert_eq!(d["call_id"], "toolu_1");
    assert_eq!(d["arguments"], "{\"path\": \"a.txt\", \"con");
    let folded: Vec<u64> = imp.folded().into_iter().map(|f| f.0).collect();
    assert_eq!(folded, [2, 3, 4]);
    // max_tokens ends the turn (Completed with a reason), the partial call recorded.
    assert!(out.iter().any(|e| e.kind == "turn/end" && e.line == 6));
}
