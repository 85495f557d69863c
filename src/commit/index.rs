//! The fingerprint index a commit records: what each input file was when it was read
//! (its size, the hash of its head and of its last complete line, its format, an object's
//! stamp), so that a later `--append` knows which inputs are unchanged, which only grew
//! and which changed ([`runlog_core::fingerprint`]). A full ingest takes it here; an
//! append carries it forward.

use std::collections::{BTreeMap, HashMap};

use rayon::prelude::*;

use crate::error::{Error, Result};
use runlog_core::fingerprint::{scan, Fingerprint, ObjectStamp};
use runlog_core::ingest::{self, FileSummary};

/// The fingerprints of a full ingest's inputs (`files`: its accounting, by name), keyed by
/// the names the tables give them (an object's URL, read from its local copy).
/// `stamps`: what the store said of each object read, by URL.
pub fn fingerprints(
    inputs: &ingest::Inputs,
    files: &[FileSummary],
    stamps: &BTreeMap<String, ObjectStamp>,
) -> Result<BTreeMap<String, Fingerprint>> {
    let by_name: HashMap<&str, &FileSummary> = files.iter().map(|f| (f.file.as_str(), f)).collect();
    inputs
        .files
        .par_iter()
        .filter_map(|i| Some((i, *by_name.get(i.name.as_str())?)))
        .map(|(i, f)| {
            let s = scan(&i.path, None).map_err(|e| Error::io(&i.name, e))?;
            let mut fp = Fingerprint::new(&s, f.lines + f.blank, &f.format, &i.rel);
            fp.object = stamps.get(&i.name).cloned();
            Ok((i.name.clone(), fp))
        })
        .collect()
}
