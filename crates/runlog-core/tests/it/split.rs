//! A large plain file is read in pieces in parallel (`IngestOptions::split_bytes`): the
//! pieces must give exactly what reading the file whole gives — the same agents and events
//! (with their line numbers), the same rejects, the same file summary.

use std::io::Write;

use runlog_core::ingest::{ingest_files, IngestOptions, Ingested};
use runlog_gen::GenOptions;

fn ingest(
    path: &std::path::Path,
    split_bytes: u64,
    format: runlog_core::import::Format,
) -> Ingested {
    let opts = IngestOptions {
        split_bytes,
        format,
        max_line_bytes: 4000,
        ..Default::default()
    };
    ingest_files(&[path.to_path_buf()], &opts).expect("ingest")
}

/// A generated log with anomalies, and the edges of line reading: a byte order mark at the
/// start, blank lines, a CRLF line, a line too long, a mid-file line that starts with the
/// bytes of a byte order mark (not skipped there), and no newline at the end.
fn awkward_log() -> Vec<u8> {
    let opts = GenOptions {
        agents: 60,
        seed: 5,
        files: 1,
        anomalies: 0.05,
        ..Default::default()
    };
    let mut generated = Vec::new();
    runlog_gen::write_to(&opts, &mut generated).expect("generate");
    let lines: Vec<&[u8]> = generated.split(|&b| b == b'\n').collect();
    let mut out = b"\xEF\xBB\xBF".to_vec();
    for (i, l) in lines.iter().enumerate() {
        out.extend_from_slice(l);
        match i % 97 {
            10 => out.extend_from_slice(b"\r\n\n   \n"),
            20 => {
                out.push(b'\n');
                out.extend_from_slice(&vec![b'x'; 5000]);
                out.push(b'\n');
            }
            30 => out.extend_from_slice(b"\n\xEF\xBB\xBF{\"seq\":1}\n"),
            _ => out.push(b'\n'),
        }
    }
    while out.last() == Some(&b'\n') {
        out.pop();
    }
    out
}

#[test]
fn a_file_read_in_pieces_gives_what_it_gives_read_whole() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("log.jsonl");
    let bytes = awkward_log();
    std::fs::File::create(&path)
        .and_then(|mut f| f.write_all(&bytes))
        .expect("write");
    for format in [
        runlog_core::import::Format::Auto,
        runlog_core::import::Format::Runlog,
    ] {
        let whole = ingest(&path, 0, format);
        assert!(!whole.rejects.is_empty(), "the log has rejects to place");
        assert!(whole.agents.len() > 10);
        for split in [1, 7, 100, 4096, 65536, bytes.len() as u64 / 3] {
            let pieces = ingest(&path, split, format);
            assert_eq!(pieces.files, whole.files, "split {split}");
            assert_eq!(pieces.rejects, whole.rejects, "split {split}");
            assert_eq!(pieces.agents, whole.agents, "split {split}");
        }
    }
}

#[test]
fn compressed_files_are_read_whole_and_give_the_same() {
    // A compressed file cannot be cut at a byte offset: split_bytes must change nothing.
    let dir = tempfile::tempdir().expect("tempdir");
    let plain = dir.path().join("log.jsonl");
    let bytes = awkward_log();
    std::fs::write(&plain, &bytes).expect("write");
    let gz = dir.path().join("log.jsonl.gz");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(&bytes).expect("gzip");
    std::fs::write(&gz, enc.finish().expect("gzip")).expect("write");
    let auto = runlog_core::import::Format::Auto;
    let whole = ingest(&gz, 0, auto);
    let split = ingest(&gz, 100, auto);
    assert_eq!(split.agents, whole.agents);
    assert_eq!(split.rejects, whole.rejects);
    // The gzip file holds what the plain one holds, line for line, read whole or in pieces.
    assert_eq!(ingest(&plain, 100, auto).agents, whole.agents);
}
