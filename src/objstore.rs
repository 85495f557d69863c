//! Where a warehouse lives: a folder in an object store. The commit log ([`crate::commit`])
//! and DataFusion both read and write through the same [`object_store`] store, so a
//! warehouse is one of:
//!
//! - a local folder (a path, or a `file://` URL): `LocalFileSystem`, whose put-if-absent is
//!   a hard link (atomic);
//! - `s3://BUCKET/PREFIX` (with the `s3` feature): `AmazonS3`, configured by the standard
//!   environment (`AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
//!   `AWS_REGION`, `AWS_ALLOW_HTTP`, ...) through `AmazonS3Builder::from_env`;
//! - an in-memory store (tests), `memory://NAME/`.
//!
//! The library is synchronous where it writes; [`block_on`] runs the store's futures on one
//! process-wide runtime (one, so that an HTTP client's pooled connections outlive each call).

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use object_store::path::Path as ObjPath;
use object_store::ObjectStore;

use crate::error::{Error, Result};

/// A warehouse's folder in an object store.
#[derive(Debug, Clone)]
pub struct Root {
    pub store: Arc<dyn ObjectStore>,
    /// The folder inside the store.
    pub prefix: ObjPath,
    /// The folder as a URL with a trailing `/` (`file:///srv/wh/`, `s3://bucket/wh/`).
    pub url: url::Url,
    /// The local folder, when the store is the local file system.
    pub local: Option<PathBuf>,
}

impl Root {
    /// The warehouse at `loc`: a local path, a `file://` URL, or `s3://BUCKET/PREFIX`.
    pub fn open(loc: &Path) -> Result<Root> {
        let text = loc.to_string_lossy();
        match crate::location::scheme(&text) {
            Some(s) if s.eq_ignore_ascii_case("s3") => s3(&text),
            _ => Root::local(&crate::location::local_path(loc)?),
        }
    }

    /// A local folder (need not exist yet).
    pub fn local(dir: &Path) -> Result<Root> {
        let abs = std::path::absolute(dir).map_err(|e| Error::io(dir, e))?;
        let prefix = ObjPath::from_absolute_path(&abs).map_err(|e| {
            Error::Invalid(format!("{}: not usable as a warehouse: {e}", dir.display()))
        })?;
        let url = url::Url::from_directory_path(&abs).map_err(|()| {
            Error::Invalid(format!("{}: not an absolute local path", abs.display()))
        })?;
        Ok(Root {
            store: Arc::new(object_store::local::LocalFileSystem::new()),
            prefix,
            url,
            local: Some(abs),
        })
    }

    /// A folder `prefix` in any store, known to DataFusion under `url` (`scheme://authority/`
    /// where the store is registered, then the folder).
    pub fn with_store(store: Arc<dyn ObjectStore>, url: &str) -> Result<Root> {
        let mut url =
            url::Url::parse(url).map_err(|e| Error::Invalid(format!("{url}: not a URL: {e}")))?;
        if !url.path().ends_with('/') {
            url.set_path(&format!("{}/", url.path()));
        }
        let prefix = ObjPath::from_url_path(url.path())
            .map_err(|e| Error::Invalid(format!("{url}: {e}")))?;
        Ok(Root {
            store,
            prefix,
            url,
            local: None,
        })
    }

    /// A fresh in-memory store holding one warehouse at its root (tests).
    pub fn in_memory(name: &str) -> Root {
        Root {
            store: Arc::new(object_store::memory::InMemory::new()),
            prefix: ObjPath::default(),
            url: url::Url::parse(&format!("memory://{name}/")).expect("a valid URL"),
            local: None,
        }
    }

    /// The object of `rel` (a `/`-separated path inside the warehouse).
    pub fn path(&self, rel: &str) -> ObjPath {
        rel.split('/')
            .filter(|p| !p.is_empty())
            .fold(self.prefix.clone(), |p, part| p.join(part))
    }

    /// `obj` relative to the warehouse folder, when it is inside it.
    pub fn relative(&self, obj: &ObjPath) -> Option<String> {
        let parts: Vec<String> = obj
            .prefix_match(&self.prefix)?
            .map(|p| p.as_ref().to_string())
            .collect();
        Some(parts.join("/"))
    }

    /// Where DataFusion reads `rel`: an absolute path for a local warehouse, else a URL.
    pub fn location_of(&self, rel: &str) -> String {
        match &self.local {
            Some(dir) => dir.join(rel).to_string_lossy().into_owned(),
            None => format!("{}{rel}", self.url),
        }
    }

    /// The store's own URL (`scheme://authority`), where DataFusion must find it.
    pub fn store_url(&self) -> String {
        format!("{}://{}", self.url.scheme(), self.url.authority())
    }

    /// Registers a remote store with DataFusion under its `scheme://authority` (the local
    /// file system is registered already).
    pub fn register_store(&self, ctx: &datafusion::prelude::SessionContext) -> Result<()> {
        if self.local.is_none() {
            let url = url::Url::parse(&self.store_url())
                .map_err(|e| Error::Invalid(format!("{}: {e}", self.store_url())))?;
            ctx.register_object_store(&url, self.store.clone());
        }
        Ok(())
    }

    /// How the warehouse is named in messages.
    pub fn shown(&self) -> PathBuf {
        match &self.local {
            Some(d) => d.clone(),
            None => PathBuf::from(self.url.as_str().trim_end_matches('/')),
        }
    }

    /// A warehouse error naming this warehouse.
    pub fn error(&self, message: impl Into<String>) -> Error {
        Error::Warehouse {
            path: self.shown(),
            message: message.into(),
        }
    }

    /// A store error on `rel`, naming the warehouse.
    pub fn store_error(&self, rel: &str, e: object_store::Error) -> Error {
        self.error(format!("{rel}: {e}"))
    }
}

#[cfg(feature = "s3")]
fn s3(text: &str) -> Result<Root> {
    let url =
        url::Url::parse(text).map_err(|e| Error::Invalid(format!("{text}: not a URL: {e}")))?;
    let Some(bucket) = url.host_str().filter(|b| !b.is_empty()) else {
        return Err(Error::Invalid(format!(
            "{text}: an S3 location is s3://BUCKET/PREFIX"
        )));
    };
    let store = object_store::aws::AmazonS3Builder::from_env()
        .with_bucket_name(bucket)
        .build()
        .map_err(|e| {
            Error::Invalid(format!(
                "{text}: {e} (S3 is configured by AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, \
                 AWS_SECRET_ACCESS_KEY, AWS_REGION and AWS_ALLOW_HTTP)"
            ))
        })?;
    Root::with_store(Arc::new(store), text)
}

#[cfg(not(feature = "s3"))]
fn s3(text: &str) -> Result<Root> {
    Err(Error::Invalid(format!(
        "{text}: this runlog was built without S3 support; build it with `--features s3`"
    )))
}

/// Whether `loc` names a warehouse or input in a remote object store (`s3://...`).
pub fn is_remote(loc: &Path) -> bool {
    crate::location::scheme(&loc.to_string_lossy()).is_some_and(|s| !s.eq_ignore_ascii_case("file"))
}

/// Whether `loc` is a remote location this runlog opens as an object store (`s3://`; gs://
/// and az:// are not wired yet and are refused by [`crate::location::local_path`]).
pub fn is_supported_remote(loc: &Path) -> bool {
    crate::location::scheme(&loc.to_string_lossy()).is_some_and(|s| s.eq_ignore_ascii_case("s3"))
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("runlog-objstore")
            .enable_all()
            .build()
            .expect("the object-store runtime starts")
    })
}

/// Runs a store future to its end from synchronous code, inside a runtime or not.
pub fn block_on<F>(f: F) -> F::Output
where
    F: Future + Send,
    F::Output: Send,
{
    if tokio::runtime::Handle::try_current().is_ok() {
        // Not on a runtime's own thread: `block_on` there would panic.
        std::thread::scope(|s| {
            s.spawn(|| runtime().block_on(f))
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p))
        })
    } else {
        runtime().block_on(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_urls_and_relative_names() {
        let r = Root::local(Path::new("/srv/wh")).unwrap();
        assert_eq!(
            r.path("events/a.parquet").as_ref(),
            "srv/wh/events/a.parquet"
        );
        assert_eq!(r.url.as_str(), "file:///srv/wh/");
        assert_eq!(
            r.location_of("events/a.parquet"),
            "/srv/wh/events/a.parquet"
        );
        assert_eq!(
            r.relative(&r.path("_log/1.json")).as_deref(),
            Some("_log/1.json")
        );
        assert_eq!(r.relative(&ObjPath::from("srv/other/x")), None);
        let m = Root::with_store(
            Arc::new(object_store::memory::InMemory::new()),
            "s3://bucket/some/wh",
        )
        .unwrap();
        assert_eq!(m.path("_log/1.json").as_ref(), "some/wh/_log/1.json");
        assert_eq!(
            m.location_of("t/x.parquet"),
            "s3://bucket/some/wh/t/x.parquet"
        );
        assert_eq!(m.store_url(), "s3://bucket");
        assert!(is_remote(Path::new("s3://b/x")));
        assert!(!is_remote(Path::new("file:///x")));
        assert!(!is_remote(Path::new("/x")));
    }
}
