//! Which files an ingest reads: the files named, and inside folders the files whose names
//! look like logs (`.jsonl`/`.ndjson`, or OTLP protobuf `.pb`/`.binpb`, optionally
//! `.gz`/`.zst`) and the `.json` files whose
//! content is a format an importer reads as a whole document (a Gemini CLI chat,
//! [`crate::import::sniff_json_head`]); the others are skipped and counted. Also each file's
//! name relative to the folder it was found under. Links to folders are followed, each
//! folder walked once.
//!
//! What is read is an [`Inputs`] list: each file's local path, the name it is shown by (the
//! `file` column, rejects, messages) and its relative name. For local files the name is the
//! path; a caller that fetched files from elsewhere (the `runlog` crate downloads objects of
//! `s3://` inputs to a private folder) names them by where they came from, so that the core
//! never shows a temporary path and orders files as it would the same files in a folder.

use crate::error::{Error, Result};
use std::collections::HashSet;
use std::io::{self};
use std::path::{Path, PathBuf};

/// Whether a file found inside a folder is a log by its name.
pub fn is_log_name(name: &str) -> bool {
    let base = name
        .strip_suffix(".gz")
        .or_else(|| name.strip_suffix(".zst"))
        .unwrap_or(name);
    [".jsonl", ".ndjson", ".pb", ".binpb"]
        .iter()
        .any(|ext| base.ends_with(ext))
}

/// One file to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    /// Where the file is on this machine.
    pub path: PathBuf,
    /// The name it is shown by: the `file` column, rejects, the summary, messages.
    pub name: String,
    /// Its name relative to the folder it was found under (see [`relative_name`]).
    pub rel: String,
}

/// The files an ingest reads, in the order that decides conflicts (first in (file, line)
/// order wins), and the files skipped inside folders because of their name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Inputs {
    pub files: Vec<Input>,
    pub skipped: Vec<String>,
}

impl Inputs {
    /// The local files and folders `paths`, as [`discover`] finds them, each named by its path.
    pub fn discover(paths: &[PathBuf]) -> Result<Inputs> {
        let (files, skipped) = discover(paths)?;
        Ok(Inputs {
            files: files
                .into_iter()
                .map(|path| Input {
                    name: path.display().to_string(),
                    rel: relative_name(&path, paths),
                    path,
                })
                .collect(),
            skipped: skipped.iter().map(|p| p.display().to_string()).collect(),
        })
    }

    /// Files named on their own (not found in a folder): named by their path, their
    /// relative name their file name, in the order given.
    pub fn of_files(files: &[PathBuf]) -> Inputs {
        Inputs {
            files: files
                .iter()
                .map(|p| Input {
                    path: p.clone(),
                    name: p.display().to_string(),
                    rel: relative_name(p, &[]),
                })
                .collect(),
            skipped: Vec::new(),
        }
    }

    /// The inputs of several sources as one: files ordered by the bytes of their names (as
    /// [`discover`] orders paths; of files with the same name the first is kept), skipped
    /// names sorted.
    pub fn merge(parts: impl IntoIterator<Item = Inputs>) -> Inputs {
        let mut all = Inputs::default();
        for mut p in parts {
            all.files.append(&mut p.files);
            all.skipped.append(&mut p.skipped);
        }
        all.files
            .sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
        all.files.dedup_by(|b, a| a.name == b.name);
        all.skipped.sort();
        all.skipped.dedup();
        all
    }
}

/// Expands the command-line paths into the files to read, sorted by path bytes.
/// Returns the files and the files skipped inside folders.
pub fn discover(paths: &[PathBuf]) -> Result<(Vec<PathBuf>, Vec<PathBuf>)> {
    let mut files = Vec::new();
    let mut skipped = Vec::new();
    let mut seen = HashSet::new();
    for p in paths {
        let meta = std::fs::metadata(p).map_err(|e| {
            if e.kind() == io::ErrorKind::NotFound {
                Error::NotFound(p.clone())
            } else {
                Error::io(p, e)
            }
        })?;
        if meta.is_dir() {
            walk(p, &mut files, &mut skipped, &mut seen)?;
        } else {
            files.push(p.clone());
        }
    }
    files.sort_by(|a, b| {
        a.as_os_str()
            .as_encoded_bytes()
            .cmp(b.as_os_str().as_encoded_bytes())
    });
    files.dedup();
    skipped.sort();
    Ok((files, skipped))
}

/// Adds the files under `dir` to `files` (logs) and `skipped` (the rest). A link to a folder
/// is followed like a folder (a logs folder often links today's or another disk's folder),
/// and a folder is walked once, by the first of its names in path order (`seen`: the folders
/// walked, as their canonical paths), so a link back up the tree ends there.
fn walk(
    dir: &Path,
    files: &mut Vec<PathBuf>,
    skipped: &mut Vec<PathBuf>,
    seen: &mut HashSet<PathBuf>,
) -> Result<()> {
    let canonical = std::fs::canonicalize(dir).map_err(|e| Error::io(dir, e))?;
    if !seen.insert(canonical) {
        return Ok(());
    }
    let rd = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
    let mut entries = rd
        .map(|e| e.map_err(|e| Error::io(dir, e)))
        .collect::<Result<Vec<_>>>()?;
    // In path order, so that which name a folder is walked by does not depend on the
    // order the file system lists it in.
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        let ft = entry.file_type().map_err(|e| Error::io(&path, e))?;
        // A link is followed to what it names (a broken link counts as a file).
        let is_dir =
            ft.is_dir() || (ft.is_symlink() && std::fs::metadata(&path).is_ok_and(|m| m.is_dir()));
        if is_dir {
            walk(&path, files, skipped, seen)?;
        } else if is_log_name(&entry.file_name().to_string_lossy())
            || is_read_json(&path)
            || super::database::is_read_database(&path)
        {
            files.push(path);
        } else {
            skipped.push(path);
        }
    }
    Ok(())
}

/// Bytes of a `.json` file looked at to tell whether folder ingest reads it.
const JSON_HEAD_BYTES: u64 = 4096;

/// Whether a `.json` file found in a folder is read: its first bytes show a format an
/// importer reads ([`crate::import::sniff_json_head`]).
fn is_read_json(path: &Path) -> bool {
    use std::io::Read;
    if path.extension().and_then(|e| e.to_str()) != Some("json") {
        return false;
    }
    let mut head = Vec::new();
    let read =
        std::fs::File::open(path).and_then(|f| f.take(JSON_HEAD_BYTES).read_to_end(&mut head));
    read.is_ok() && crate::import::sniff_json_head(&head).is_some()
}

/// How many of the skipped names are `.json` files (files a runtime writes as documents
/// that are no format runlog reads, such as Gemini CLI's `logs.json`).
pub fn count_json(skipped: &[String]) -> u64 {
    skipped.iter().filter(|n| n.ends_with(".json")).count() as u64
}

/// A file's path relative to the command-line folder it was found under (for a file named
/// on the command line: its file name), with `/` separators. Importers use it in place of
/// missing or placeholder ids.
pub fn relative_name(file: &Path, args: &[PathBuf]) -> String {
    let rel = args
        .iter()
        .filter(|a| a.is_dir())
        .find_map(|a| file.strip_prefix(a).ok())
        .map(Path::to_path_buf)
        .unwrap_or_else(|| file.file_name().map(PathBuf::from).unwrap_or_default());
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(name: &str, path: &str) -> Input {
        Input {
            path: PathBuf::from(path),
            name: name.into(),
            rel: name.rsplit('/').next().unwrap_or_default().into(),
        }
    }

    /// Log names: JSON lines and OTLP protobuf files, compressed or not.
    #[test]
    fn log_names() {
        for name in [
            "a.jsonl",
            "a.ndjson.gz",
            "traces.pb",
            "req.binpb.zst",
            "x.pb.gz",
        ] {
            assert!(is_log_name(name), "{name}");
        }
        for name in ["a.json", "notes.txt", "a.pbx", "a.jsonl.bak", "pb"] {
            assert!(!is_log_name(name), "{name}");
        }
    }

    /// In a folder, a `.json` file is read when it is a Gemini CLI chat; other `.json` files
    /// are skipped and counted apart.
    #[test]
    fn json_files_are_read_by_content() {
        let dir = tempfile::tempdir().unwrap();
        let chat = dir.path().join("session-2026-04-01T11-11-5cdd2021.json");
        std::fs::write(
            &chat,
            "{\n  \"sessionId\": \"s\",\n  \"projectHash\": \"h\",\n  \"messages\": []\n}\n",
        )
        .unwrap();
        let logs = dir.path().join("logs.json");
        std::fs::write(&logs, "[\n  {\"sessionId\": \"s\", \"messageId\": 0}\n]\n").unwrap();
        let events = dir.path().join("a.jsonl");
        std::fs::write(&events, "{}\n").unwrap();
        let notes = dir.path().join("notes.txt");
        std::fs::write(&notes, "x").unwrap();
        let found = Inputs::discover(&[dir.path().to_path_buf()]).unwrap();
        let files: Vec<&Path> = found.files.iter().map(|f| f.path.as_path()).collect();
        assert_eq!(files, [events.as_path(), chat.as_path()]);
        assert_eq!(found.skipped.len(), 2);
        assert_eq!(count_json(&found.skipped), 1);
    }

    /// A link to a folder is walked like the folder, under the link's name; a folder
    /// reached by two names is read once, by the first in path order, and a link back
    /// up the tree ends there.
    #[cfg(unix)]
    #[test]
    fn linked_folders_are_followed_once() {
        use std::os::unix::fs::symlink;
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("b.jsonl"), "{}\n").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let day = dir.path().join("2026-12-07");
        std::fs::create_dir(&day).unwrap();
        std::fs::write(day.join("a.jsonl"), "{}\n").unwrap();
        symlink(&day, dir.path().join("latest")).unwrap();
        symlink(outside.path(), dir.path().join("other-disk")).unwrap();
        symlink(dir.path(), day.join("up")).unwrap();
        let found = Inputs::discover(&[dir.path().to_path_buf()]).unwrap();
        let rels: Vec<&str> = found.files.iter().map(|f| f.rel.as_str()).collect();
        assert_eq!(rels, ["2026-12-07/a.jsonl", "other-disk/b.jsonl"]);
        assert!(found.skipped.is_empty(), "{:?}", found.skipped);
    }

    /// Files of several sources are ordered by the names shown (which decides conflicts),
    /// not by where their copies are; a name given twice is read once.
    #[test]
    fn merged_inputs_are_ordered_by_name() {
        let local = Inputs {
            files: vec![input("/logs/b.jsonl", "/logs/b.jsonl")],
            skipped: vec!["/logs/x.txt".into()],
        };
        let remote = Inputs {
            files: vec![
                input("s3://bk/p/b.jsonl", "/tmp/dl/000001-b.jsonl"),
                input("s3://bk/p/a-1/c.jsonl", "/tmp/dl/000000-c.jsonl"),
                input("s3://bk/p/a/c.jsonl", "/tmp/dl/000002-c.jsonl"),
            ],
            skipped: vec!["s3://bk/p/y.txt".into()],
        };
        let again = Inputs {
            files: vec![input("/logs/b.jsonl", "/logs/b.jsonl")],
            skipped: Vec::new(),
        };
        let m = Inputs::merge([remote, local, again]);
        let names: Vec<&str> = m.files.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "/logs/b.jsonl",
                "s3://bk/p/a-1/c.jsonl",
                "s3://bk/p/a/c.jsonl",
                "s3://bk/p/b.jsonl"
            ]
        );
        assert_eq!(m.skipped, ["/logs/x.txt", "s3://bk/p/y.txt"]);
    }
}
