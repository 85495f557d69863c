//! Typed errors of the core: reading, decoding, assembling and reducing. Every error that
//! comes from input carries where it happened (`file:line`), so the binary can print one
//! clear line and exit 1. The warehouse's errors (Arrow, Parquet, DataFusion, commits) are
//! the `runlog` crate's, which takes these in one to one.

use std::fmt;
use std::path::PathBuf;

/// A place in an input file: shown as `file:line`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub file: String,
    pub line: u64,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// Errors of the runlog core.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}: no such file or folder")]
    NotFound(PathBuf),
    #[error("{0}")]
    Invalid(String),
    #[error("{location}: {message}")]
    At { location: Location, message: String },
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

impl Error {
    /// An I/O error on a path.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
