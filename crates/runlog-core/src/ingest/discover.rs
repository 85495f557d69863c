//! Which files an ingest reads: the files named, and inside folders the files whose names
//! look like logs (`.jsonl`/`.ndjson`, optionally `.gz`/`.zst`); the others are skipped and
//! counted. Also each file's name relative to the folder it was found under.

use crate::error::{Error, Result};
use std::io::{self};
use std::path::{Path, PathBuf};

/// Whether a file found inside a folder is a log by its name.
pub fn is_log_name(name: &str) -> bool {
    let base = name
        .strip_suffix(".gz")
        .or_else(|| name.strip_suffix(".zst"))
        .unwrap_or(name);
    base.ends_with(".jsonl") || base.ends_with(".ndjson")
}

/// Expands the command-line paths into the files to read, sorted by path bytes.
/// Returns the files and the files skipped inside folders.
pub fn discover(paths: &[PathBuf]) -> Result<(Vec<PathBuf>, Vec<PathBuf>)> {
    let mut files = Vec::new();
    let mut skipped = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p).map_err(|e| {
            if e.kind() == io::ErrorKind::NotFound {
                Error::NotFound(p.clone())
            } else {
                Error::io(p, e)
            }
        })?;
        if meta.is_dir() {
            walk(p, &mut files, &mut skipped)?;
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

fn walk(dir: &Path, files: &mut Vec<PathBuf>, skipped: &mut Vec<PathBuf>) -> Result<()> {
    let rd = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
    for entry in rd {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let path = entry.path();
        let ft = entry.file_type().map_err(|e| Error::io(&path, e))?;
        if ft.is_dir() {
            walk(&path, files, skipped)?;
        } else if is_log_name(&entry.file_name().to_string_lossy()) {
            files.push(path);
        } else {
            skipped.push(path);
        }
    }
    Ok(())
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
