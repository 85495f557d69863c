//! Input locations, resolved before anything is read: local files and folders (paths or
//! `file://` URLs) and objects in a store (`s3://BUCKET/PREFIX`, `gs://...`, `az://...`,
//! opened by [`crate::objstore::remote_store`]).
//!
//! The core reads local files only, and knows nothing of object stores. So a store's
//! objects are downloaded first, streamed a chunk at a time (never held whole in memory),
//! [`DOWNLOADS_AT_ONCE`] at a time, into a private temporary folder that is removed when the
//! [`Resolved`] inputs are dropped; and each is handed to the core with the name it is shown
//! by, its URL (`s3://bucket/key`: the `file` column, rejects, the summary, messages), and
//! its key relative to the prefix named (what importers take for a missing id, as they take
//! a file's path relative to its folder). A URL naming an object reads it whatever its
//! name; a prefix lists every object under it, keeping those whose names look like logs
//! as a folder walk does (the others are reported as skipped, by URL).
//!
//! Files are ordered by the names shown, local and remote together, as the core orders a
//! folder's: the objects under `s3://b/p/` come in the order the same files would in a
//! local folder `p/`, so which of two conflicting lines wins (the first in (file, line)
//! order) is the same.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use object_store::path::Path as ObjPath;
use object_store::{ObjectStore, ObjectStoreExt};

use crate::error::{Error, Result};
use crate::ingest::{is_log_name, Input, Inputs};
use crate::objstore;

/// Objects downloaded at once: enough to hide a store's latency on many small files, few
/// enough to leave bandwidth to each.
pub const DOWNLOADS_AT_ONCE: usize = 8;

/// Inputs ready to read: their local copies live as long as this.
#[derive(Debug)]
pub struct Resolved {
    pub inputs: Inputs,
    /// The folder the objects were downloaded to, removed on drop.
    _downloads: Option<tempfile::TempDir>,
}

/// Resolves the input locations: local ones as the core discovers them, remote ones listed
/// and downloaded (see the module documentation). Every remote location is listed before
/// anything is downloaded, so a missing bucket or an empty prefix fails at once.
pub fn resolve(locations: &[PathBuf]) -> Result<Resolved> {
    let (remote, local): (Vec<&PathBuf>, Vec<&PathBuf>) = locations
        .iter()
        .partition(|l| objstore::is_supported_remote(l));
    let local = local
        .into_iter()
        .map(|l| crate::location::local_path(l))
        .collect::<Result<Vec<_>>>()?;
    if remote.is_empty() {
        return Ok(Resolved {
            inputs: Inputs::discover(&local)?,
            _downloads: None,
        });
    }
    let mut parts = Vec::new();
    if !local.is_empty() {
        parts.push(Inputs::discover(&local)?);
    }
    let listed = remote
        .iter()
        .map(|l| list(&l.to_string_lossy()))
        .collect::<Result<Vec<_>>>()?;
    let dir = tempfile::Builder::new()
        .prefix("runlog-inputs-")
        .tempdir()
        .map_err(|e| Error::io(std::env::temp_dir(), e))?;
    let mut jobs = Vec::new();
    for l in &listed {
        for o in &l.objects {
            let local = dir
                .path()
                .join(format!("{:06}-{}", jobs.len(), o.file_name()));
            jobs.push((l.store.clone(), o, local));
        }
    }
    let files = objstore::block_on(
        futures::stream::iter(jobs.into_iter().map(|(store, o, local)| async move {
            download(store.as_ref(), &o.location, &local)
                .await
                .map_err(|e| Error::Invalid(format!("{}: {e}", o.name)))?;
            Ok::<_, Error>(Input {
                path: local,
                name: o.name.clone(),
                rel: o.rel.clone(),
            })
        }))
        .buffered(DOWNLOADS_AT_ONCE)
        .try_collect::<Vec<Input>>(),
    )?;
    parts.push(Inputs {
        files,
        skipped: listed.into_iter().flat_map(|l| l.skipped).collect(),
    });
    Ok(Resolved {
        inputs: Inputs::merge(parts),
        _downloads: Some(dir),
    })
}

/// An object to read.
#[derive(Debug)]
struct Object {
    location: ObjPath,
    /// Its URL.
    name: String,
    /// Its key relative to the prefix named (for an object named itself: its file name).
    rel: String,
}

impl Object {
    /// The last part of its key, kept in the local copy's name (to tell the copies apart).
    fn file_name(&self) -> String {
        self.location
            .filename()
            .unwrap_or("object")
            .replace(['/', '\\'], "_")
    }
}

/// What one remote location holds.
struct Listed {
    store: Arc<dyn ObjectStore>,
    objects: Vec<Object>,
    /// URLs of the objects skipped by name.
    skipped: Vec<String>,
}

/// The objects a remote location names: the object at its key, or else every object under
/// it as a prefix. A URL ending in `/` is always a prefix.
fn list(text: &str) -> Result<Listed> {
    let (store, url) = objstore::remote_store(text)?;
    list_in(store, &url, text)
}

/// [`list`] in a store already opened (`url` is `text` parsed).
fn list_in(store: Arc<dyn ObjectStore>, url: &url::Url, text: &str) -> Result<Listed> {
    let base = format!("{}://{}", url.scheme(), url.authority());
    let prefix = ObjPath::from_url_path(url.path())
        .map_err(|e| Error::Invalid(format!("{text}: not a valid object key: {e}")))?;
    let shown = |p: &ObjPath| format!("{base}/{p}");
    let err = |e: object_store::Error| Error::Invalid(format!("{text}: {}", store_message(&e)));
    if !url.path().ends_with('/') && !prefix.as_ref().is_empty() {
        match objstore::block_on(store.head(&prefix)) {
            Ok(_) => {
                let rel = prefix.filename().unwrap_or_default().to_string();
                return Ok(Listed {
                    objects: vec![Object {
                        name: shown(&prefix),
                        location: prefix,
                        rel,
                    }],
                    store,
                    skipped: Vec::new(),
                });
            }
            Err(object_store::Error::NotFound { .. }) => {}
            Err(e) => return Err(err(e)),
        }
    }
    let metas =
        objstore::block_on(store.list(Some(&prefix)).try_collect::<Vec<_>>()).map_err(err)?;
    if metas.is_empty() {
        let what = if url.path().ends_with('/') {
            "no objects under it"
        } else {
            "no such object, and no objects under it"
        };
        return Err(Error::Invalid(format!("{text}: {what}")));
    }
    let mut objects = Vec::new();
    let mut skipped = Vec::new();
    for m in metas {
        let rel = m
            .location
            .prefix_match(&prefix)
            .map(|parts| parts.map(|p| p.as_ref().to_string()).collect::<Vec<_>>())
            .unwrap_or_default()
            .join("/");
        let name = shown(&m.location);
        if is_log_name(m.location.filename().unwrap_or_default()) {
            objects.push(Object {
                location: m.location,
                name,
                rel,
            });
        } else {
            skipped.push(name);
        }
    }
    Ok(Listed {
        store,
        objects,
        skipped,
    })
}

/// A store error as one line: object_store's own, with the cause it wraps.
fn store_message(e: &object_store::Error) -> String {
    let mut s = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(c) = src {
        let text = c.to_string();
        if !s.contains(&text) {
            s.push_str(": ");
            s.push_str(&text);
        }
        src = std::error::Error::source(c);
    }
    s
}

/// Streams one object into a new local file.
async fn download(
    store: &dyn ObjectStore,
    location: &ObjPath,
    to: &Path,
) -> std::result::Result<(), String> {
    use std::io::Write;
    let got = store.get(location).await.map_err(|e| store_message(&e))?;
    let mut file = std::io::BufWriter::with_capacity(
        1 << 20,
        std::fs::File::create(to).map_err(|e| format!("{}: {e}", to.display()))?,
    );
    let mut chunks = got.into_stream();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(|e| store_message(&e))?;
        file.write_all(&chunk)
            .map_err(|e| format!("{}: {e}", to.display()))?;
    }
    file.flush().map_err(|e| format!("{}: {e}", to.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(keys: &[&str]) -> Arc<dyn ObjectStore> {
        let mem = object_store::memory::InMemory::new();
        for key in keys {
            objstore::block_on(mem.put(&ObjPath::from(*key), "{}\n".into())).unwrap();
        }
        Arc::new(mem)
    }

    fn listed(store: &Arc<dyn ObjectStore>, text: &str) -> Result<Listed> {
        list_in(store.clone(), &url::Url::parse(text).unwrap(), text)
    }

    /// A prefix is listed as a folder is walked (logs by name, the rest skipped, a sibling
    /// prefix that starts alike not included); a key names its object whatever its name.
    #[test]
    fn prefixes_list_like_folders_and_keys_name_one_object() {
        let s = store(&[
            "p/b.jsonl",
            "p/a/x.ndjson.gz",
            "p/notes.txt",
            "p2/c.jsonl",
            "q/raw.log",
        ]);
        for text in ["s3://bk/p", "s3://bk/p/"] {
            let l = listed(&s, text).unwrap();
            let mut got: Vec<(&str, &str)> = l
                .objects
                .iter()
                .map(|o| (o.name.as_str(), o.rel.as_str()))
                .collect();
            got.sort();
            assert_eq!(
                got,
                [
                    ("s3://bk/p/a/x.ndjson.gz", "a/x.ndjson.gz"),
                    ("s3://bk/p/b.jsonl", "b.jsonl")
                ]
            );
            assert_eq!(l.skipped, ["s3://bk/p/notes.txt"]);
        }
        let one = listed(&s, "s3://bk/q/raw.log").unwrap();
        assert_eq!(one.objects.len(), 1);
        assert_eq!(one.objects[0].name, "s3://bk/q/raw.log");
        assert_eq!(one.objects[0].rel, "raw.log");
        let all = listed(&s, "s3://bk").unwrap();
        assert_eq!((all.objects.len(), all.skipped.len()), (3, 2));
        let e = listed(&s, "s3://bk/nothing").err().unwrap().to_string();
        assert!(e.starts_with("s3://bk/nothing: no such object"), "{e}");
    }

    #[test]
    fn local_inputs_resolve_as_the_core_discovers_them() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.jsonl"), "").unwrap();
        std::fs::write(dir.path().join("b.txt"), "").unwrap();
        let r = resolve(&[dir.path().to_path_buf()]).unwrap();
        assert_eq!(
            r.inputs,
            Inputs::discover(&[dir.path().to_path_buf()]).unwrap()
        );
        assert_eq!(r.inputs.files.len(), 1);
        assert!(r._downloads.is_none());
    }
}
