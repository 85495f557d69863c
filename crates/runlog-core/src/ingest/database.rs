//! An input that is a database rather than a text log: an OpenCode database
//! (`opencode.db`, [`crate::import::opencode_db`]) is read as its rows, one JSON document a
//! line, and from there like any other file; every other file as its bytes. What of a
//! database cannot be read (the file, a table, a row) is a reject on a line of its own,
//! added to the file's read by [`add_rejects`].

use std::fs::File;
use std::io::{self, Cursor, Read, Seek, SeekFrom};

use super::discover::Input;
use super::{FileRead, Reject};
use crate::decode::excerpt;
use crate::error::{Error, Result};
use crate::import::Format;

/// The lines of a database that are rejects: (line, reason, excerpt).
pub type RowRejects = Vec<(u64, String, Vec<u8>)>;

/// What a file is read from: its bytes, or its rows as lines (the lines that are rejects
/// blank, their reasons beside).
pub enum Source {
    File(File),
    #[cfg_attr(not(feature = "opencode-db"), allow(dead_code))]
    Rows(Cursor<Vec<u8>>, RowRejects),
}

impl Source {
    /// The rejects of a database's rows, taken out (none for a file read as its bytes).
    pub fn take_rejects(&mut self) -> Option<RowRejects> {
        match self {
            Source::File(_) => None,
            Source::Rows(_, rejects) => Some(std::mem::take(rejects)),
        }
    }
}

/// Opens an input to be read as `format`: an OpenCode database (under `auto` or `opencode`)
/// as its rows, any other file as it is.
pub fn open(input: &Input, format: Format) -> Result<Source> {
    #[cfg(feature = "opencode-db")]
    if matches!(format, Format::Auto | Format::Opencode) {
        if let Some(rows) = crate::import::opencode_db::read_lines(&input.path) {
            return Ok(Source::Rows(Cursor::new(rows.text), rows.rejects));
        }
    }
    #[cfg(not(feature = "opencode-db"))]
    let _ = format;
    let f = File::open(&input.path).map_err(|e| Error::io(&input.name, e))?;
    Ok(Source::File(f))
}

/// Adds a database's rejects (`None`: the file was read as its bytes) to what was read of
/// it: each was read as a blank line, and is a line and a reject. A database whose rows
/// told no format is OpenCode's.
pub fn add_rejects(out: &mut FileRead, name: &str, rejects: Option<RowRejects>) {
    let Some(rejects) = rejects else {
        return;
    };
    if matches!(out.format, Format::Auto | Format::Runlog) {
        out.format = Format::Opencode;
        out.summary.format = Format::Opencode.name().to_string();
    }
    for (line, reason, bytes) in rejects {
        out.summary.blank = out.summary.blank.saturating_sub(1);
        out.summary.lines += 1;
        out.summary.rejects += 1;
        out.rejects.push(Reject {
            file: name.to_string(),
            line,
            reason,
            excerpt: excerpt(&bytes),
        });
    }
    out.rejects.sort_by_key(|r| r.line);
}

/// The file at `path` as ingest reads it under `auto`: an OpenCode database as its rows,
/// any other file as it is.
pub(super) fn open_path(path: &std::path::Path) -> io::Result<Source> {
    #[cfg(feature = "opencode-db")]
    if let Some(rows) = crate::import::opencode_db::read_lines(path) {
        return Ok(Source::Rows(Cursor::new(rows.text), rows.rejects));
    }
    File::open(path).map(Source::File)
}

/// Whether a file found in a folder is a database ingest reads: a `.db` file that is
/// OpenCode's, or is named as OpenCode names its database (read to say why it is not one).
pub fn is_read_database(path: &std::path::Path) -> bool {
    #[cfg(feature = "opencode-db")]
    if path.extension().is_some_and(|e| e == "db") {
        use crate::import::opencode_db::{has_opencode_name, is_database};
        return has_opencode_name(path) || is_database(path);
    }
    let _ = path;
    false
}

impl Read for Source {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Source::File(f) => f.read(buf),
            Source::Rows(c, _) => c.read(buf),
        }
    }
}

impl Seek for Source {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        match self {
            Source::File(f) => f.seek(pos),
            Source::Rows(c, _) => c.seek(pos),
        }
    }
}

#[cfg(all(test, feature = "opencode-db"))]
mod tests {
    use crate::import::opencode_db::TEST_SCHEMA;
    use crate::ingest::{ingest_paths, IngestOptions};

    /// A database made by OpenCode's tables, with one part row whose `data` is broken.
    fn database(path: &std::path::Path) {
        let conn = rusqlite::Connection::open(path).unwrap();
        conn.execute_batch(&format!(
            "{TEST_SCHEMA}
             INSERT INTO session VALUES ('ses_1', 'p', NULL, 's', '/w', 't', '1.2.0', 5, 6);
             INSERT INTO message VALUES ('msg_1', 'ses_1', 7, 7,
               '{{\"role\":\"user\",\"time\":{{\"created\":7}}}}');
             INSERT INTO part VALUES ('prt_1', 'msg_1', 'ses_1', 8, 8,
               '{{\"type\":\"text\",\"text\":\"hi\"}}');
             INSERT INTO part VALUES ('prt_2', 'msg_1', 'ses_1', 8, 8, '{{\"type\":');"
        ))
        .unwrap();
    }

    /// Every row is an event or a reject on its line (sessions, messages, then parts); in a
    /// folder, a `.db` file is read when it is OpenCode's and skipped otherwise.
    #[test]
    fn every_row_is_read_or_rejected_on_its_line() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("opencode.db");
        database(&db);
        let other = dir.path().join("other.db");
        rusqlite::Connection::open(&other)
            .unwrap()
            .execute_batch("CREATE TABLE t (a)")
            .unwrap();
        let ing = ingest_paths(&[dir.path().to_path_buf()], &IngestOptions::default()).unwrap();
        assert_eq!(ing.files.len(), 1, "{:?}", ing.files);
        assert_eq!(ing.files[0].format, "opencode");
        assert_eq!(ing.files[0].lines, 4);
        assert_eq!(ing.skipped_files.len(), 1);
        assert_eq!(ing.rejects.len(), 1);
        assert_eq!(ing.rejects[0].line, 4);
        assert_eq!(ing.rejects[0].file, db.display().to_string());
        let kinds: Vec<&str> = ing
            .agents
            .iter()
            .flat_map(|a| a.events.iter().map(|e| &*e.kind))
            .collect();
        assert_eq!(
            kinds,
            [
                "session/start",
                "inbox/receipt",
                "turn/start",
                "opencode:text"
            ]
        );
    }
}
