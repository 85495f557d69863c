//! Typed errors of the library (the core's, taken in one to one, and the warehouse's). Every error that comes from input carries where it
//! happened (`file:line`), so the binary can print one clear line and exit 1.

use std::path::PathBuf;

pub use runlog_core::Location;

/// Errors of the runlog library.
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
    #[error("too many rejects: {rejects} of {lines} lines (limit {limit}); nothing was written")]
    TooManyRejects {
        rejects: u64,
        lines: u64,
        limit: String,
    },
    #[error("warehouse {path}: {message}")]
    Warehouse { path: PathBuf, message: String },
    #[error(transparent)]
    Arrow(#[from] datafusion::arrow::error::ArrowError),
    #[error(transparent)]
    Parquet(#[from] datafusion::parquet::errors::ParquetError),
    #[error("{0}")]
    DataFusion(Box<datafusion::error::DataFusionError>),
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

impl From<datafusion::error::DataFusionError> for Error {
    fn from(e: datafusion::error::DataFusionError) -> Self {
        Error::DataFusion(Box::new(e))
    }
}

/// The core's errors are taken in variant by variant: they print the same.
impl From<runlog_core::Error> for Error {
    fn from(e: runlog_core::Error) -> Self {
        use runlog_core::Error as C;
        match e {
            C::Io { path, source } => Error::Io { path, source },
            C::NotFound(p) => Error::NotFound(p),
            C::Invalid(m) => Error::Invalid(m),
            C::At { location, message } => Error::At { location, message },
            C::Json(e) => Error::Json(e),
        }
    }
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
