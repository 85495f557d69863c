//! Locations of warehouses and inputs: a local path, or a URL. A `file://` URL names a
//! local path (`file:///srv/wh` is `/srv/wh`), so warehouses and inputs shared through a
//! file system every machine mounts at the same place can be written as URLs. Warehouses
//! and inputs in object stores (`s3://`, `gs://`, `az://`) are opened by
//! [`crate::objstore`] (inputs through [`crate::inputs`]); other schemes are refused with
//! a clear message instead of being taken for a relative path.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The URL scheme of a location written `SCHEME://...`, if it is one.
pub fn scheme(loc: &str) -> Option<&str> {
    let (s, _) = loc.split_once("://")?;
    let mut chars = s.chars();
    let first = chars.next()?;
    (first.is_ascii_alphabetic()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
    .then_some(s)
}

/// The local path of a location: a path as it is, or the path of a `file://` URL.
pub fn local_path(loc: &Path) -> Result<PathBuf> {
    let text = loc.to_string_lossy();
    match scheme(&text) {
        None => Ok(loc.to_path_buf()),
        Some(s) if s.eq_ignore_ascii_case("file") => {
            let url = url::Url::parse(&text)
                .map_err(|e| Error::Invalid(format!("{text}: not a valid file:// URL: {e}")))?;
            url.to_file_path().map_err(|()| {
                Error::Invalid(format!(
                    "{text}: a file:// URL must name an absolute local path, like file:///srv/logs"
                ))
            })
        }
        Some(s) => Err(Error::Invalid(format!(
            "{text}: {s}:// is not a local location; runlog reads local paths, file:// URLs, \
             and object stores at s3://, gs:// and az://"
        ))),
    }
}

/// [`local_path`] of every location.
pub fn local_paths(locs: &[PathBuf]) -> Result<Vec<PathBuf>> {
    locs.iter().map(|l| local_path(l)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_urls_are_local_paths() {
        assert_eq!(
            local_path(Path::new("file:///srv/wh")).unwrap(),
            PathBuf::from("/srv/wh")
        );
        assert_eq!(
            local_path(Path::new("file:///tmp/a%20b")).unwrap(),
            PathBuf::from("/tmp/a b")
        );
        assert_eq!(
            local_path(Path::new("rel/dir")).unwrap(),
            PathBuf::from("rel/dir")
        );
        assert!(local_path(Path::new("file://host/x")).is_err());
        let e = local_path(Path::new("ftp://host/wh"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("ftp:// is not a local location"), "{e}");
        assert_eq!(scheme("c:/x"), None);
        assert_eq!(scheme("./a://b"), None);
    }
}
