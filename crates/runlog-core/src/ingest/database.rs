//! An input that is a database rather than a text log: an OpenCode database
//! (`opencode.db`, [`crate::import::opencode_db`]) is read as its rows, one JSON document a
//! line, and from there like any other file; every other file as its bytes.

use std::fs::File;
use std::io::{self, Cursor, Read, Seek, SeekFrom};

use super::discover::Input;
use crate::error::{Error, Result};
use crate::import::Format;

/// What a file is read from: its bytes, or its rows as lines.
pub enum Source {
    File(File),
    Rows(Cursor<Vec<u8>>),
}

/// Opens an input to be read as `format`: an OpenCode database (under `auto` or `opencode`)
/// as its rows, any other file as it is.
pub fn open(input: &Input, format: Format) -> Result<Source> {
    #[cfg(feature = "opencode-db")]
    if matches!(format, Format::Auto | Format::Opencode) {
        let rows = crate::import::opencode_db::read_lines(&input.path)
            .map_err(|e| Error::Invalid(format!("{}: {e}", input.name)))?;
        if let Some(rows) = rows {
            return Ok(Source::Rows(Cursor::new(rows)));
        }
    }
    #[cfg(not(feature = "opencode-db"))]
    let _ = format;
    let f = File::open(&input.path).map_err(|e| Error::io(&input.name, e))?;
    Ok(Source::File(f))
}

/// Whether a file found in a folder is a database ingest reads.
pub fn is_read_database(path: &std::path::Path) -> bool {
    #[cfg(feature = "opencode-db")]
    if path.extension().is_some_and(|e| e == "db") {
        return crate::import::opencode_db::is_database(path);
    }
    let _ = path;
    false
}

impl Read for Source {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Source::File(f) => f.read(buf),
            Source::Rows(c) => c.read(buf),
        }
    }
}

impl Seek for Source {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        match self {
            Source::File(f) => f.seek(pos),
            Source::Rows(c) => c.seek(pos),
        }
    }
}
