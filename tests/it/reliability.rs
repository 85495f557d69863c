//! Nothing lost, nothing half-written: broken compressed streams, decompression bombs, long
//! lines, BOM and CRLF, and a warehouse that survives `kill -9` at any moment.

use std::io::Write;
use std::path::Path;
use std::process::Command;

use runlog_core::ingest::{IngestOptions, Ingested};

fn line(root: &str, seq: u64) -> String {
    format!(
        r#"{{"seq":{seq},"ts":"2026-11-03T10:00:{:02}.{:03}Z","root":"{root}","session":"{root}","turn":"t{}","type":"text/delta","data":{{"text":"word {seq}"}}}}"#,
        (seq / 1000) % 60,
        seq % 1000,
        seq / 50
    )
}

fn log(roots: usize, per_root: u64) -> String {
    let mut s = String::new();
    for r in 0..roots {
        for q in 1..=per_root {
            s.push_str(&line(&format!("r{r}"), q));
            s.push('\n');
        }
    }
    s
}

fn ingest(path: &Path, opts: &IngestOptions) -> Ingested {
    runlog_core::ingest::ingest_paths(&[path.to_path_buf()], opts).expect("ingest")
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn broken_gzip_keeps_the_lines_before_the_break() {
    let text = log(1, 5000);
    let gz = gzip(text.as_bytes());
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("cut.jsonl.gz");
    std::fs::write(&p, &gz[..gz.len() * 2 / 3]).unwrap();
    let ing = ingest(&p, &IngestOptions::default());
    let t = ing.totals();
    assert!(t.kept > 1000 && t.kept < 5000, "kept {}", t.kept);
    assert_eq!(t.lines, t.kept + t.duplicates + t.rejects);
    let last = ing.rejects.last().expect("the break is a reject");
    assert!(
        last.reason.contains("gzip stream broken"),
        "{}",
        last.reason
    );
    assert_eq!(last.line, t.lines, "the break is the last line read");
    // Every kept event is a line of the original, in order.
    let seqs: Vec<u64> = ing.agents[0].events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
}

fn broken_zstd_keeps_the_lines_before_the_break() {
    let text = log(1, 5000);
    let z = zstd::encode_all(text.as_bytes(), 3).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("cut.jsonl.zst");
    std::fs::write(&p, &z[..z.len() / 2]).unwrap();
    let ing = ingest(&p, &IngestOptions::default());
    let t = ing.totals();
    assert!(t.kept > 0 && t.kept < 5000, "kept {}", t.kept);
    assert_eq!(t.lines, t.kept + t.duplicates + t.rejects);
    assert!(ing
        .rejects
        .last()
        .unwrap()
        .reason
        .contains("zstd stream broken"));
}

fn decompression_bomb_is_rejected_in_bounded_memory() {
    // A tiny gzip holding one 256 MiB line (zeros compress ~1000:1), then a valid line.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bomb.jsonl.gz");
    let f = std::fs::File::create(&p).unwrap();
    let mut e = flate2::write::GzEncoder::new(f, flate2::Compression::best());
    e.write_all(b"{\"seq\":1,\"x\":\"").unwrap();
    let zeros = vec![b'0'; 1 << 20];
    for _ in 0..256 {
        e.write_all(&zeros).unwrap();
    }
    e.write_all(b"\"}\n").unwrap();
    e.write_all(line("ok", 1).as_bytes()).unwrap();
    e.write_all(b"\n").unwrap();
    e.finish().unwrap();
    assert!(
        std::fs::metadata(&p).unwrap().len() < 2 << 20,
        "the bomb is small"
    );
    let opts = IngestOptions {
        max_line_bytes: 1 << 20,
        ..Default::default()
    };
    let ing = ingest(&p, &opts);
    assert_eq!(ing.rejects.len(), 1);
    assert_eq!(ing.rejects[0].line, 1);
    assert!(ing.rejects[0]
        .reason
        .contains("longer than the limit of 1048576 bytes"));
    assert!(ing.rejects[0].excerpt.len() <= 200);
    assert_eq!(ing.totals().kept, 1);
}

fn bom_crlf_blank_lines_and_a_last_line_without_newline() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("win.jsonl");
    let body = format!(
        "\u{feff}{}\r\n\r\n   \r\n{}\r\n{}",
        line("w", 1),
        line("w", 2),
        line("w", 3)
    );
    std::fs::write(&p, body).unwrap();
    let ing = ingest(&p, &IngestOptions::default());
    let t = ing.totals();
    assert_eq!((t.lines, t.kept, t.rejects, t.blank), (3, 3, 0, 2));
}

fn invalid_utf8_and_control_characters_are_rejects_not_panics() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.jsonl");
    let mut body = Vec::new();
    body.extend_from_slice(b"{\"seq\":1,\"ts\":\"2026-11-03T10:00:00Z\",\"root\":\"a\xff\xfe\",\"session\":\"a\",\"type\":\"x\"}\n");
    body.extend_from_slice(b"{\"seq\":2,\"ts\":\"2026-11-03T10:00:00Z\",\"root\":\"a\x01b\",\"session\":\"a\",\"type\":\"x\"}\n");
    body.extend_from_slice(line("a", 3).as_bytes());
    std::fs::write(&p, body).unwrap();
    let ing = ingest(&p, &IngestOptions::default());
    assert_eq!(ing.rejects.len(), 2);
    assert!(ing.rejects[0].reason.contains("UTF-8"));
    assert!(
        ing.rejects[1].reason.contains("control character"),
        "{}",
        ing.rejects[1].reason
    );
    assert_eq!(ing.totals().kept, 1);
}

fn count_events(wh: &Path) -> Option<i64> {
    let o = Command::new(env!("CARGO_BIN_EXE_runlog"))
        .args([
            "query",
            "-w",
            wh.to_str().unwrap(),
            "SELECT count(*) AS n FROM events",
            "-f",
            "csv",
        ])
        .output()
        .unwrap();
    if !o.status.success() {
        return None;
    }
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .nth(1)?
        .trim()
        .parse()
        .ok()
}

fn kill_9_at_any_moment_leaves_the_previous_warehouse_whole() {
    let dir = tempfile::tempdir().unwrap();
    let small = dir.path().join("small.jsonl");
    let big = dir.path().join("big.jsonl");
    std::fs::write(&small, log(3, 100)).unwrap();
    std::fs::write(&big, log(40, 2000)).unwrap();
    let wh = dir.path().join("wh");
    let ok = Command::new(env!("CARGO_BIN_EXE_runlog"))
        .args([
            "ingest",
            small.to_str().unwrap(),
            "-w",
            wh.to_str().unwrap(),
            "-q",
        ])
        .status()
        .unwrap();
    assert!(ok.success());
    assert_eq!(count_events(&wh), Some(300));
    for delay_ms in [5u64, 40, 120, 250, 400, 700] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_runlog"))
            .args([
                "ingest",
                big.to_str().unwrap(),
                "-w",
                wh.to_str().unwrap(),
                "-q",
            ])
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        let _ = child.kill(); // SIGKILL
        let status = child.wait().unwrap();
        let n = count_events(&wh).expect("the warehouse stays readable");
        if status.success() {
            assert_eq!(n, 80_000, "a finished ingest is whole");
            // Put the small one back for the next round.
            let ok = Command::new(env!("CARGO_BIN_EXE_runlog"))
                .args([
                    "ingest",
                    small.to_str().unwrap(),
                    "-w",
                    wh.to_str().unwrap(),
                    "-q",
                ])
                .status()
                .unwrap();
            assert!(ok.success());
        } else {
            assert!(
                n == 300 || n == 80_000,
                "killed after {delay_ms} ms: {n} events"
            );
        }
    }
    // A re-run after the kills converges (and takes over a lock left by a killed ingest).
    let ok = Command::new(env!("CARGO_BIN_EXE_runlog"))
        .args([
            "ingest",
            big.to_str().unwrap(),
            "-w",
            wh.to_str().unwrap(),
            "-q",
        ])
        .status()
        .unwrap();
    assert!(ok.success());
    assert_eq!(count_events(&wh), Some(80_000));
}

fn two_ingests_at_once_never_mix_the_warehouse() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.jsonl");
    let b = dir.path().join("b.jsonl");
    std::fs::write(&a, log(20, 1500)).unwrap();
    std::fs::write(&b, log(10, 1000)).unwrap();
    let wh = dir.path().join("wh");
    for _ in 0..3 {
        let ca = Command::new(env!("CARGO_BIN_EXE_runlog"))
            .args([
                "ingest",
                a.to_str().unwrap(),
                "-w",
                wh.to_str().unwrap(),
                "-q",
            ])
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let cb = Command::new(env!("CARGO_BIN_EXE_runlog"))
            .args([
                "ingest",
                b.to_str().unwrap(),
                "-w",
                wh.to_str().unwrap(),
                "-q",
            ])
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let (oa, ob) = (
            ca.wait_with_output().unwrap(),
            cb.wait_with_output().unwrap(),
        );
        for o in [&oa, &ob] {
            if !o.status.success() {
                let e = String::from_utf8_lossy(&o.stderr);
                assert!(
                    e.contains("another ingest"),
                    "a refused ingest says why: {e}"
                );
            }
        }
        assert!(oa.status.success() || ob.status.success());
        let n = count_events(&wh).expect("readable");
        assert!(
            n == 30_000 || n == 10_000,
            "the warehouse holds one whole ingest, not a mix: {n}"
        );
        let agents = Command::new(env!("CARGO_BIN_EXE_runlog"))
            .args([
                "query",
                "-w",
                wh.to_str().unwrap(),
                "SELECT sum(events) AS n FROM agents",
                "-f",
                "csv",
            ])
            .output()
            .unwrap();
        let m: i64 = String::from_utf8_lossy(&agents.stdout)
            .lines()
            .nth(1)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert_eq!(m, n, "every table is from the same ingest");
    }
}

/// A tiny deterministic PRNG for the property tests (xorshift64*).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn random_bytes_and_mutated_lines_never_panic_and_always_add_up() {
    let valid = [
        line("p", 7),
        r#"{"seq":3,"ts":"2026-11-03T10:00:00.020+02:00","root":"s1","session":"s1","turn":"t1","type":"turn/end","data":{"reason":{"kind":"error","error":{"code":"completion_rejected","message":"bad","retryable":false,"details":{"http_status":400}}}}}"#.to_string(),
        r#"{"seq":9,"ts":"2026-11-03T10:00:00Z","root":"é—ü","session":"x","type":"tool/call","data":{"call_id":"c","name":"n","arguments":"{\"a\":[1,2,{\"b\":null}]}"}}"#.to_string(),
    ];
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let alphabet = b"{}[]\":,.-+eE0123456789 \\/ntfrualsx\x00\x1f\xff\xc3\xa9\n\r";
    let mut corpus: Vec<u8> = Vec::new();
    for round in 0..20_000 {
        let mut l: Vec<u8> = valid[round % valid.len()].as_bytes().to_vec();
        match rng.below(4) {
            0 => {
                // Random bytes from a JSON-ish alphabet.
                let n = rng.below(120);
                l = (0..n)
                    .map(|_| alphabet[rng.below(alphabet.len())])
                    .collect();
            }
            _ => {
                // Mutations of a valid line: flip, insert, delete, truncate.
                for _ in 0..1 + rng.below(4) {
                    if l.is_empty() {
                        break;
                    }
                    let i = rng.below(l.len());
                    match rng.below(4) {
                        0 => l[i] = alphabet[rng.below(alphabet.len())],
                        1 => l.insert(i, alphabet[rng.below(alphabet.len())]),
                        2 => {
                            l.remove(i);
                        }
                        _ => l.truncate(i),
                    }
                }
            }
        }
        let _ = runlog_core::ingest::parse_line(&l);
        corpus.extend_from_slice(&l);
        corpus.push(b'\n');
    }
    // The whole corpus as one stream, plain and gzipped: never a panic, always adds up.
    for bytes in [corpus.clone(), gzip(&corpus)] {
        let fr = runlog_core::ingest::read_stream(
            0,
            "fuzz",
            bytes.as_slice(),
            &IngestOptions::default(),
        )
        .unwrap();
        let ing = runlog_core::ingest::assemble(vec![fr]);
        let t = ing.totals();
        assert_eq!(t.lines, t.kept + t.duplicates + t.rejects);
        assert_eq!(
            t.lines + t.blank,
            corpus.iter().filter(|&&b| b == b'\n').count() as u64
        );
        let d = runlog_core::reduce_all(&ing);
        assert!(runlog::store::all_batches(&ing, &d).is_ok());
    }
}

/// One `seq` written five times: the first copy is kept, exact copies are duplicates and
/// different ones are conflicts, whatever their order (docs/semantics.md §1), and every line is
/// accounted for once.
fn one_seq_many_times_keeps_the_first_and_accounts_for_every_copy() {
    let a = r#"{"seq":1,"ts":"2026-11-03T10:00:00Z","root":"r","session":"r","type":"log","data":{"message":"a"}}"#;
    let b = r#"{"seq":1,"ts":"2026-11-03T10:00:00Z","root":"r","session":"r","type":"log","data":{"message":"b"}}"#;
    let c = r#"{"seq":1,"ts":"2026-11-03T10:00:00Z","root":"r","session":"r","type":"log","data":{"message":"c"}}"#;
    let two =
        r#"{"seq":2,"ts":"2026-11-03T10:00:01Z","root":"r","session":"r","type":"agent/idle"}"#;
    let text = [a, b, a, c, a, two].join("\n");
    let fr =
        runlog_core::ingest::read_stream(0, "x.jsonl", text.as_bytes(), &IngestOptions::default())
            .expect("read");
    let ing = runlog_core::ingest::assemble(vec![fr]);
    let evs = &ing.agents[0].events;
    assert_eq!(evs.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2]);
    assert_eq!(
        (evs[0].line, evs[0].data.as_str()),
        (1, r#"{"message":"a"}"#)
    );
    let t = ing.totals();
    assert_eq!((t.lines, t.kept, t.duplicates, t.rejects), (6, 2, 2, 2));
    let mut conflict_lines: Vec<u64> = ing.rejects.iter().map(|r| r.line).collect();
    conflict_lines.sort_unstable();
    assert_eq!(conflict_lines, [2, 4]);
}

trials! {
    broken_gzip_keeps_the_lines_before_the_break,
    broken_zstd_keeps_the_lines_before_the_break,
    decompression_bomb_is_rejected_in_bounded_memory,
    bom_crlf_blank_lines_and_a_last_line_without_newline,
    invalid_utf8_and_control_characters_are_rejects_not_panics,
    kill_9_at_any_moment_leaves_the_previous_warehouse_whole,
    two_ingests_at_once_never_mix_the_warehouse,
    random_bytes_and_mutated_lines_never_panic_and_always_add_up,
    one_seq_many_times_keeps_the_first_and_accounts_for_every_copy,
}
