//! Times runlog's line decoder beside SIMD JSON parsers on the lines of a log folder: the
//! measurement behind runlog keeping its own decoder (BENCHMARKS.md, "Decoding").

use std::time::Instant;

/// One parser's pass over every line: the lines it accepted.
type Pass = fn(&[&str]) -> usize;

fn runlog(lines: &[&str]) -> usize {
    lines
        .iter()
        .filter(|l| runlog_core::decode::parse_envelope(l.as_bytes()).is_some())
        .count()
}

fn sonic(lines: &[&str]) -> usize {
    lines
        .iter()
        .filter(|l| {
            sonic_rs::to_object_iter(**l).all(|m| m.is_ok_and(|(_, v)| !v.as_raw_str().is_empty()))
        })
        .count()
}

fn simd(lines: &[&str]) -> usize {
    let mut buf = Vec::new();
    lines
        .iter()
        .filter(|l| {
            buf.clear();
            buf.extend_from_slice(l.as_bytes());
            simd_json::to_tape(&mut buf).is_ok()
        })
        .count()
}

fn serde(lines: &[&str]) -> usize {
    lines
        .iter()
        .filter(|l| serde_json::from_str::<serde::de::IgnoredAny>(l).is_ok())
        .count()
}

fn main() {
    let Some(dir) = std::env::args().nth(1) else {
        eprintln!("usage: decode-vs-simd LOGS_DIR (a folder of .jsonl logs)");
        std::process::exit(2);
    };
    let mut text = String::new();
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .expect("a readable folder")
        .map(|e| e.expect("a folder entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    paths.sort();
    for p in &paths {
        text.push_str(&std::fs::read_to_string(p).expect("a UTF-8 log"));
    }
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let mb = lines.iter().map(|l| l.len()).sum::<usize>() as f64 / 1e6;
    println!("{} lines, {mb:.0} MB of {} files", lines.len(), paths.len());
    let passes: [(&str, Pass); 4] = [
        ("runlog decoder", runlog),
        ("sonic-rs", sonic),
        ("simd-json", simd),
        ("serde_json", serde),
    ];
    for round in 1..=3 {
        let mut row = format!("round {round}:");
        for (name, pass) in passes {
            let t = Instant::now();
            let ok = pass(&lines);
            let s = t.elapsed().as_secs_f64();
            row.push_str(&format!(" | {name} {s:.3} s {:.0} MB/s ({ok})", mb / s));
        }
        println!("{row}");
    }
}
