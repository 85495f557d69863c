//! Input locations, resolved before anything is read: local files and folders (paths or
//! `file://` URLs) and objects in a store (`s3://BUCKET/PREFIX`, `gs://...`, `az://...`,
//! opened by [`crate::objstore::remote_store`]).
//!
//! The core reads local files only, and knows nothing of object stores. So a store's
//! objects are downloaded first, streamed a chunk at a time (never held whole in memory),
//! [`DOWNLOADS_AT_ONCE`] at a time, into a private temporary folder that is removed when
//! the [`Resolved`] inputs are dropped. A run killed before that leaves the folder behind:
//! each holds an owner file, and the next run that downloads removes the folders of this
//! host's processes that are gone ([`remove_dead_downloads`]). Each object is handed to
//! the core with the name it is shown by, its URL (`s3://bucket/key`: the `file` column,
//! rejects, the summary, messages), and its key relative to the prefix named (what
//! importers take for a missing id, as they take a file's path relative to its folder). A
//! URL naming an object reads it whatever its name; a prefix lists every object under it,
//! keeping those whose names look like logs as a folder walk does (the others are
//! reported as skipped, by URL).
//!
//! [`list`] lists every location without downloading anything ([`Sources`]: local files,
//! and objects with what the store says of them, [`ObjectStamp`]), and [`Downloads`]
//! makes local copies of the objects chosen, each once: `runlog ingest --append` downloads
//! only the objects its fingerprint index does not know unchanged. [`resolve`] is the two
//! for every object (full ingests, query, report, replay).
//!
//! Files are ordered by the names shown, local and remote together, as the core orders a
//! folder's: the objects under `s3://b/p/` come in the order the same files would in a
//! local folder `p/`, so which of two conflicting lines wins (the first in (file, line)
//! order) is the same.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use object_store::path::Path as ObjPath;
use object_store::{ObjectMeta, ObjectStore, ObjectStoreExt};
use runlog_core::fingerprint::ObjectStamp;

use crate::error::{Error, Result};
use crate::objstore;
use crate::owner::Owner;
use runlog_core::ingest::{is_log_name, Input, Inputs};

/// Objects downloaded at once: enough to hide a store's latency on many small files, few
/// enough to leave bandwidth to each.
pub const DOWNLOADS_AT_ONCE: usize = 8;

/// Inputs ready to read: their local copies live as long as this.
#[derive(Debug)]
pub struct Resolved {
    pub inputs: Inputs,
    /// What the store said of each object read (by URL): a full ingest records it in the
    /// fingerprint index, so that a later append skips the objects unchanged.
    pub stamps: BTreeMap<String, ObjectStamp>,
    /// The objects' local copies, removed on drop.
    _downloads: Option<Downloads>,
}

/// Resolves the input locations: local ones as the core discovers them, remote ones listed
/// and downloaded (see the module documentation). Every remote location is listed before
/// anything is downloaded, so a missing bucket or an empty prefix fails at once.
pub fn resolve(locations: &[PathBuf]) -> Result<Resolved> {
    resolve_with(locations, None)
}

/// [`resolve`], reporting the downloads to `progress` as they go.
pub fn resolve_with(locations: &[PathBuf], progress: Option<DownloadProgress>) -> Result<Resolved> {
    fetch(&list(locations)?, progress)
}

/// The inputs `sources` lists, ready to read: local files as they are, objects downloaded
/// (reported to `progress` as they go).
pub fn fetch(sources: &Sources, progress: Option<DownloadProgress>) -> Result<Resolved> {
    let local = || {
        sources.files.iter().filter_map(|s| match s {
            Source::Local(i) => Some(i.clone()),
            Source::Object(_) => None,
        })
    };
    if sources.objects().next().is_none() {
        return Ok(Resolved {
            inputs: Inputs {
                files: local().collect(),
                skipped: sources.skipped.clone(),
            },
            stamps: BTreeMap::new(),
            _downloads: None,
        });
    }
    let downloads = Downloads::with_progress(progress);
    let objects: Vec<&StoreObject> = sources.objects().collect();
    let mut files = downloads.fetch(&objects)?;
    files.extend(local());
    let inputs = Inputs::merge([Inputs {
        files,
        skipped: sources.skipped.clone(),
    }]);
    Ok(Resolved {
        inputs,
        stamps: downloads.stamps(),
        _downloads: Some(downloads),
    })
}

/// The local locations, as paths (`file://` URLs too).
fn local_paths(locations: &[PathBuf]) -> Result<Vec<PathBuf>> {
    locations
        .iter()
        .filter(|l| !objstore::is_supported_remote(l))
        .map(|l| crate::location::local_path(l))
        .collect()
}

/// One input before anything is read: a local file, or an object listed in a store (read
/// from its local copy once [`Downloads::fetch`] has made one).
#[derive(Debug, Clone)]
pub enum Source {
    Local(Input),
    Object(StoreObject),
}

impl Source {
    /// The name it is shown by: a local file's path, an object's URL.
    pub fn name(&self) -> &str {
        match self {
            Source::Local(i) => &i.name,
            Source::Object(o) => &o.name,
        }
    }

    /// Its bytes: a local file's size on disk (0 when unreadable), an object's as listed.
    pub fn bytes(&self) -> u64 {
        match self {
            Source::Local(i) => std::fs::metadata(&i.path).map_or(0, |m| m.len()),
            Source::Object(o) => o.stamp.size,
        }
    }

    /// Its name relative to the folder or prefix named (see [`runlog_core::ingest::relative_name`]).
    pub fn rel(&self) -> &str {
        match self {
            Source::Local(i) => &i.rel,
            Source::Object(o) => &o.rel,
        }
    }
}

/// Every input the locations name, listed (nothing downloaded): in the order the core
/// reads files in (by the bytes of their names, local and remote together).
#[derive(Debug, Clone, Default)]
pub struct Sources {
    pub files: Vec<Source>,
    /// Names of the files and objects skipped by name.
    pub skipped: Vec<String>,
}

impl Sources {
    /// The objects among them.
    pub fn objects(&self) -> impl Iterator<Item = &StoreObject> {
        self.files.iter().filter_map(|s| match s {
            Source::Object(o) => Some(o),
            Source::Local(_) => None,
        })
    }

    /// Their bytes: local files' sizes on disk, objects' as listed.
    pub fn bytes(&self) -> u64 {
        self.files.iter().map(Source::bytes).sum()
    }
}

/// Lists the input locations: local files and folders as the core discovers them, every
/// remote location listed (a missing bucket or an empty prefix fails here, before
/// anything is downloaded).
pub fn list(locations: &[PathBuf]) -> Result<Sources> {
    let local = local_paths(locations)?;
    let mut all = Sources::default();
    if !local.is_empty() {
        let found = Inputs::discover(&local)?;
        all.files.extend(found.files.into_iter().map(Source::Local));
        all.skipped.extend(found.skipped);
    }
    for l in locations
        .iter()
        .filter(|l| objstore::is_supported_remote(l))
    {
        let listed = list_remote(&l.to_string_lossy())?;
        all.files
            .extend(listed.objects.into_iter().map(Source::Object));
        all.skipped.extend(listed.skipped);
    }
    // As `Inputs::merge` orders and deduplicates them.
    all.files
        .sort_by(|a, b| a.name().as_bytes().cmp(b.name().as_bytes()));
    all.files.dedup_by(|b, a| a.name() == b.name());
    all.skipped.sort();
    all.skipped.dedup();
    Ok(all)
}

/// An object listed in a store.
#[derive(Debug, Clone)]
pub struct StoreObject {
    store: Arc<dyn ObjectStore>,
    location: ObjPath,
    /// Its URL.
    pub name: String,
    /// Its key relative to the prefix named (for an object named itself: its file name).
    pub rel: String,
    /// What the listing said of it.
    pub stamp: ObjectStamp,
}

impl StoreObject {
    /// The last part of its key, kept in the local copy's name (to tell the copies apart).
    fn file_name(&self) -> String {
        self.location
            .filename()
            .unwrap_or("object")
            .replace(['/', '\\'], "_")
    }
}

/// What a store says of an object, as a fingerprint keeps it.
fn stamp_of(m: &ObjectMeta) -> ObjectStamp {
    ObjectStamp {
        size: m.size,
        e_tag: m.e_tag.clone(),
        last_modified: Some(m.last_modified.to_rfc3339()),
    }
}

/// What downloads report as they go (for a progress bar: the library draws none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DownloadEvent {
    /// Downloads start: how many objects, and their bytes as listed.
    Started { objects: u64, bytes: u64 },
    /// Bytes received (of any of them).
    Bytes(u64),
    /// One object is downloaded whole.
    Object,
    /// The downloads started last are over (all done, or one failed).
    Finished,
}

/// Where downloads report their [`DownloadEvent`]s (called from the download tasks).
pub type DownloadProgress = Arc<dyn Fn(DownloadEvent) + Send + Sync>;

/// Local copies of objects, in a private temporary folder removed when this is dropped
/// (at the end of the command, and on an error). Each object is downloaded once however
/// many times it is asked for.
#[derive(Default)]
pub struct Downloads {
    state: Mutex<DownloadState>,
    progress: Option<DownloadProgress>,
}

impl std::fmt::Debug for Downloads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Downloads")
            .field("state", &self.state)
            .field("progress", &self.progress.is_some())
            .finish()
    }
}

#[derive(Debug, Default)]
struct DownloadState {
    dir: Option<tempfile::TempDir>,
    /// By URL: the local copy, and what the store said of the bytes downloaded.
    got: HashMap<String, (Input, ObjectStamp)>,
    bytes: u64,
}

impl Downloads {
    pub fn new() -> Downloads {
        Downloads::default()
    }

    /// Downloads that report to `progress` as they go.
    pub fn with_progress(progress: Option<DownloadProgress>) -> Downloads {
        Downloads {
            progress,
            ..Downloads::default()
        }
    }

    fn report(&self, e: DownloadEvent) {
        if let Some(p) = &self.progress {
            p(e);
        }
    }

    /// Local copies of `objects` (in their order), downloading those not downloaded yet
    /// ([`DOWNLOADS_AT_ONCE`] at a time, each streamed to disk).
    pub fn fetch(&self, objects: &[&StoreObject]) -> Result<Vec<Input>> {
        let (dir, jobs) = {
            let mut st = self.lock();
            let mut seen = std::collections::HashSet::new();
            let jobs: Vec<&StoreObject> = objects
                .iter()
                .copied()
                .filter(|o| !st.got.contains_key(&o.name) && seen.insert(o.name.as_str()))
                .collect();
            if st.dir.is_none() && !jobs.is_empty() {
                st.dir = Some(download_dir(&std::env::temp_dir())?);
            }
            let dir = st.dir.as_ref().map(|d| d.path().to_path_buf());
            (dir.unwrap_or_default(), jobs)
        };
        if jobs.is_empty() {
            let st = self.lock();
            return Ok(objects.iter().map(|o| st.got[&o.name].0.clone()).collect());
        }
        self.report(DownloadEvent::Started {
            objects: jobs.len() as u64,
            bytes: jobs.iter().map(|o| o.stamp.size).sum(),
        });
        let first = self.lock().got.len();
        let got = objstore::block_on(
            futures::stream::iter(jobs.into_iter().enumerate().map(|(k, o)| {
                let local = dir.join(format!("{:06}-{}", first + k, o.file_name()));
                async move {
                    let meta = download(o.store.as_ref(), &o.location, &local, &|n| {
                        self.report(DownloadEvent::Bytes(n))
                    })
                    .await
                    .map_err(|e| Error::Invalid(format!("{}: {e}", o.name)))?;
                    self.report(DownloadEvent::Object);
                    let input = Input {
                        path: local,
                        name: o.name.clone(),
                        rel: o.rel.clone(),
                    };
                    Ok::<_, Error>((input, stamp_of(&meta)))
                }
            }))
            .buffered(DOWNLOADS_AT_ONCE)
            .try_collect::<Vec<_>>(),
        );
        self.report(DownloadEvent::Finished);
        let got = got?;
        let mut st = self.lock();
        for (input, stamp) in got {
            st.bytes += stamp.size;
            st.got.insert(input.name.clone(), (input, stamp));
        }
        Ok(objects.iter().map(|o| st.got[&o.name].0.clone()).collect())
    }

    /// Local copies of the objects at `urls` (names a warehouse's index gives, each with
    /// its relative name), in their order: `None` for one the store does not have.
    pub fn fetch_urls(&self, urls: &[(&str, &str)]) -> Result<Vec<Option<Input>>> {
        let heads = objstore::block_on(
            futures::stream::iter(urls.iter().filter(|(u, _)| self.local(u).is_none()).map(
                |&(url, rel)| async move {
                    let (store, parsed) = objstore::remote_store(url)?;
                    let location = ObjPath::from_url_path(parsed.path()).map_err(|e| {
                        Error::Invalid(format!("{url}: not a valid object key: {e}"))
                    })?;
                    match store.head(&location).await {
                        Ok(meta) => Ok(Some(StoreObject {
                            store,
                            location,
                            name: url.to_string(),
                            rel: rel.to_string(),
                            stamp: stamp_of(&meta),
                        })),
                        Err(object_store::Error::NotFound { .. }) => Ok(None),
                        Err(e) => Err(Error::Invalid(format!("{url}: {}", store_message(&e)))),
                    }
                },
            ))
            .buffered(DOWNLOADS_AT_ONCE)
            .try_collect::<Vec<Option<StoreObject>>>(),
        )?;
        let mut found: Vec<&StoreObject> = heads.iter().flatten().collect();
        if let Err(e) = self.fetch(&found) {
            // An object deleted between its head and its download is missing too.
            let before = found.len();
            found.retain(|o| {
                !matches!(
                    objstore::block_on(o.store.head(&o.location)),
                    Err(object_store::Error::NotFound { .. })
                )
            });
            if found.len() == before {
                return Err(e);
            }
            self.fetch(&found)?;
        }
        Ok(urls.iter().map(|(u, _)| self.local(u)).collect())
    }

    /// The local copy of the object `url`, when it was downloaded.
    pub fn local(&self, url: &str) -> Option<Input> {
        self.lock().got.get(url).map(|(i, _)| i.clone())
    }

    /// What the store said of the bytes downloaded of `url`.
    pub fn stamp(&self, url: &str) -> Option<ObjectStamp> {
        self.lock().got.get(url).map(|(_, s)| s.clone())
    }

    /// What the store said of every object downloaded, by URL.
    pub fn stamps(&self) -> BTreeMap<String, ObjectStamp> {
        self.lock()
            .got
            .iter()
            .map(|(n, (_, s))| (n.clone(), s.clone()))
            .collect()
    }

    /// Objects downloaded, and their bytes.
    pub fn counts(&self) -> (u64, u64) {
        let st = self.lock();
        (st.got.len() as u64, st.bytes)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, DownloadState> {
        // A download that panicked leaves nothing half-recorded: the state stays usable.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The prefix of the folders objects are downloaded to, under the temporary folder.
pub const DOWNLOAD_DIR_PREFIX: &str = "runlog-inputs-";
/// The owner file inside each such folder ([`Owner`]: host, boot, pid and its start time).
pub const DOWNLOAD_OWNER: &str = "_owner.json";
/// A download folder without an owner file (a run killed between making the folder and
/// writing the file, or an older release's) is removed once it is older than this.
pub const UNOWNED_DOWNLOADS_AGE: Duration = Duration::from_secs(24 * 3600);

/// A new private folder under `tmp` for this run's downloads, with its owner file; the
/// folders of runs that are gone are removed first ([`remove_dead_downloads`]).
fn download_dir(tmp: &Path) -> Result<tempfile::TempDir> {
    remove_dead_downloads(tmp);
    let dir = tempfile::Builder::new()
        .prefix(DOWNLOAD_DIR_PREFIX)
        .tempdir_in(tmp)
        .map_err(|e| Error::io(tmp, e))?;
    // The expiry is not what removes it: see remove_dead_downloads.
    let owner = Owner::valid_for(UNOWNED_DOWNLOADS_AGE);
    let p = dir.path().join(DOWNLOAD_OWNER);
    std::fs::write(&p, serde_json::to_vec(&owner)?).map_err(|e| Error::io(&p, e))?;
    Ok(dir)
}

/// Removes the download folders (`runlog-inputs-*`) under `tmp` that a killed run left
/// behind (a normal run removes its own when it ends): those whose owner is this host and
/// whose process is gone ([`Owner::is_gone_here`]), and those without a readable owner
/// file older than [`UNOWNED_DOWNLOADS_AGE`]. A live process's folder, this one's
/// included, and another host's (a shared temporary folder) are kept. Best effort: a
/// folder that cannot be read or removed is left.
pub fn remove_dead_downloads(tmp: &Path) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let Ok(rd) = std::fs::read_dir(tmp) else {
        return removed;
    };
    for e in rd.flatten() {
        let p = e.path();
        let named = e
            .file_name()
            .to_str()
            .is_some_and(|n| n.starts_with(DOWNLOAD_DIR_PREFIX));
        // Not followed through a link: only real folders are ours.
        if !named || !e.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let gone = match Owner::read(&p.join(DOWNLOAD_OWNER)) {
            Some(owner) => owner.is_gone_here(),
            None => std::fs::metadata(&p)
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age > UNOWNED_DOWNLOADS_AGE),
        };
        if gone && std::fs::remove_dir_all(&p).is_ok() {
            removed.push(p);
        }
    }
    removed
}

/// What one remote location holds.
struct Listed {
    objects: Vec<StoreObject>,
    /// URLs of the objects skipped by name.
    skipped: Vec<String>,
}

/// The objects a remote location names: the object at its key, or else every object under
/// it as a prefix. A URL ending in `/` is always a prefix.
fn list_remote(text: &str) -> Result<Listed> {
    let (store, url) = objstore::remote_store(text)?;
    list_in(store, &url, text)
}

/// [`list_remote`] in a store already opened (`url` is `text` parsed).
fn list_in(store: Arc<dyn ObjectStore>, url: &url::Url, text: &str) -> Result<Listed> {
    let base = format!("{}://{}", url.scheme(), url.authority());
    let prefix = ObjPath::from_url_path(url.path())
        .map_err(|e| Error::Invalid(format!("{text}: not a valid object key: {e}")))?;
    let shown = |p: &ObjPath| format!("{base}/{p}");
    let err = |e: object_store::Error| Error::Invalid(format!("{text}: {}", store_message(&e)));
    if !url.path().ends_with('/') && !prefix.as_ref().is_empty() {
        match objstore::block_on(store.head(&prefix)) {
            Ok(meta) => {
                let rel = prefix.filename().unwrap_or_default().to_string();
                return Ok(Listed {
                    objects: vec![StoreObject {
                        name: shown(&prefix),
                        location: prefix,
                        rel,
                        stamp: stamp_of(&meta),
                        store,
                    }],
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
            objects.push(StoreObject {
                stamp: stamp_of(&m),
                store: store.clone(),
                location: m.location,
                name,
                rel,
            });
        } else {
            skipped.push(name);
        }
    }
    Ok(Listed { objects, skipped })
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

/// Streams one object into a new local file, telling `got_bytes` each chunk's size; what the
/// store said of the bytes it sent.
async fn download(
    store: &dyn ObjectStore,
    location: &ObjPath,
    to: &Path,
    got_bytes: &(dyn Fn(u64) + Sync),
) -> std::result::Result<ObjectMeta, String> {
    use std::io::Write;
    let got = store.get(location).await.map_err(|e| store_message(&e))?;
    let meta = got.meta.clone();
    let mut file = std::io::BufWriter::with_capacity(
        1 << 20,
        std::fs::File::create(to).map_err(|e| format!("{}: {e}", to.display()))?,
    );
    let mut chunks = got.into_stream();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(|e| store_message(&e))?;
        file.write_all(&chunk)
            .map_err(|e| format!("{}: {e}", to.display()))?;
        got_bytes(chunk.len() as u64);
    }
    file.flush().map_err(|e| format!("{}: {e}", to.display()))?;
    Ok(meta)
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

    /// Listed objects carry what the store says of them; each is downloaded once however
    /// often it is asked for, with the stamp of the bytes it sent.
    #[test]
    fn objects_are_listed_with_their_stamps_and_downloaded_once() {
        let s = store(&["p/a.jsonl", "p/b.jsonl"]);
        let l = listed(&s, "s3://bk/p/").unwrap();
        for o in &l.objects {
            assert_eq!(o.stamp.size, 3);
            assert!(o.stamp.e_tag.is_some(), "{o:?}");
        }
        let d = Downloads::new();
        assert_eq!(d.counts(), (0, 0));
        let a = &l.objects[0];
        let got = d.fetch(&[a, a]).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(std::fs::read_to_string(&got[0].path).unwrap(), "{}\n");
        assert_eq!(
            (got[0].name.as_str(), got[0].rel.as_str()),
            ("s3://bk/p/a.jsonl", "a.jsonl")
        );
        assert_eq!(d.counts(), (1, 3));
        let both: Vec<&StoreObject> = l.objects.iter().collect();
        let got = d.fetch(&both).unwrap();
        assert_eq!(got[1].name, "s3://bk/p/b.jsonl");
        assert_ne!(got[0].path, got[1].path);
        assert_eq!(d.counts(), (2, 6));
        assert_eq!(d.stamp(&a.name), Some(a.stamp.clone()));
        // Written again: a new e_tag, and the listing says so.
        objstore::block_on(s.put(&ObjPath::from("p/a.jsonl"), "{}\n".into())).unwrap();
        let again = listed(&s, "s3://bk/p/a.jsonl").unwrap();
        assert_eq!(again.objects[0].stamp.size, 3);
        assert!(!a.stamp.same_object(&again.objects[0].stamp));
        // The copies go with the downloads; their folder says whose it is.
        let dir = got[0].path.parent().unwrap().to_path_buf();
        assert!(dir.is_dir());
        let owner = Owner::read(&dir.join(DOWNLOAD_OWNER)).unwrap();
        assert_eq!(owner.pid, std::process::id());
        assert!(!owner.is_gone_here());
        drop(d);
        assert!(!dir.exists());
    }

    /// A download folder left by a process that is gone (`kill -9`: no drop ran) is
    /// removed by the next run that downloads; a live process's (this test's), another
    /// host's and a recent one without an owner file are kept, one without an owner file
    /// older than a day is removed; other folders are never looked at.
    #[test]
    fn dead_runs_download_folders_are_removed_and_live_ones_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let folder = |name: &str, owner: Option<&Owner>| {
            let d = tmp.path().join(format!("{DOWNLOAD_DIR_PREFIX}{name}"));
            std::fs::create_dir(&d).unwrap();
            std::fs::write(d.join("000000-a.jsonl"), "{}\n").unwrap();
            if let Some(o) = owner {
                std::fs::write(d.join(DOWNLOAD_OWNER), serde_json::to_vec(o).unwrap()).unwrap();
            }
            d
        };
        // A process that has ended: its pid no longer has the start time recorded.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let mut dead = Owner::valid_for(UNOWNED_DOWNLOADS_AGE);
        dead.pid = child.id();
        child.wait().unwrap();
        assert!(dead.is_gone_here());
        let dead_dir = folder("dead", Some(&dead));
        let live_dir = folder("live", Some(&Owner::valid_for(UNOWNED_DOWNLOADS_AGE)));
        let mut elsewhere = dead.clone();
        elsewhere.host = format!("not-{}", elsewhere.host);
        let other_host = folder("elsewhere", Some(&elsewhere));
        let fresh = folder("fresh", None);
        let old = folder("old", None);
        let two_days = std::time::SystemTime::now() - 2 * UNOWNED_DOWNLOADS_AGE;
        std::fs::File::open(&old)
            .unwrap()
            .set_modified(two_days)
            .unwrap();
        let unrelated = tmp.path().join("someone-else");
        std::fs::create_dir(&unrelated).unwrap();
        std::fs::File::open(&unrelated)
            .unwrap()
            .set_modified(two_days)
            .unwrap();

        let mut removed = remove_dead_downloads(tmp.path());
        removed.sort();
        assert_eq!(removed, [dead_dir.clone(), old.clone()]);
        for d in [&dead_dir, &old] {
            assert!(!d.exists(), "{}", d.display());
        }
        for d in [&live_dir, &other_host, &fresh, &unrelated] {
            assert!(d.is_dir(), "{}", d.display());
        }
        // A run that downloads sweeps first, and its own folder survives the next sweep.
        let dead_again = folder("dead2", Some(&dead));
        let mine = download_dir(tmp.path()).unwrap();
        assert!(!dead_again.exists());
        assert!(remove_dead_downloads(tmp.path()).is_empty());
        assert!(mine.path().join(DOWNLOAD_OWNER).is_file());
    }

    /// Downloads report what they start (objects and listed bytes), every byte received,
    /// each object done, and their end; objects downloaded already report nothing.
    #[test]
    fn downloads_report_their_progress() {
        let s = store(&["p/a.jsonl", "p/b.jsonl", "p/c.jsonl"]);
        objstore::block_on(s.put(&ObjPath::from("p/c.jsonl"), vec![b'\n'; 3 << 20].into()))
            .unwrap();
        let l = listed(&s, "s3://bk/p/").unwrap();
        let events = Arc::new(Mutex::new(Vec::new()));
        let e = events.clone();
        let d = Downloads::with_progress(Some(Arc::new(move |ev| e.lock().unwrap().push(ev))));
        let objects: Vec<&StoreObject> = l.objects.iter().collect();
        d.fetch(&objects).unwrap();
        let got = std::mem::take(&mut *events.lock().unwrap());
        let total = 3 + 3 + (3 << 20);
        assert_eq!(
            got.first(),
            Some(&DownloadEvent::Started {
                objects: 3,
                bytes: total
            })
        );
        assert_eq!(got.last(), Some(&DownloadEvent::Finished));
        let bytes: u64 = got
            .iter()
            .map(|e| match e {
                DownloadEvent::Bytes(n) => *n,
                _ => 0,
            })
            .sum();
        assert_eq!(bytes, total);
        let done = got.iter().filter(|e| **e == DownloadEvent::Object).count();
        assert_eq!(done, 3);
        d.fetch(&objects).unwrap();
        assert!(events.lock().unwrap().is_empty());
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
