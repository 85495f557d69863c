//! The append that reads every input again (the index's files, by name, and this run's)
//! and writes every bucket: a full ingest stored in buckets. It starts a warehouse, turns
//! one written by a full ingest, shards or an older release into buckets, and stands in
//! where the warehouse cannot tell what a full ingest would write.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use super::{bucket_of, per_agent_tables, Appended, Input, Run, Target, Work, BUCKETS};
use crate::commit::{self, Manifest, Staged};
use crate::error::{Error, Result};
use crate::objstore;
use crate::store::{self, read};
use runlog_core::fingerprint::{scan, Fingerprint};
use runlog_core::ingest::{self, Ingested};
use runlog_core::reduce::Derived;
use runlog_core::reduce_all;
use runlog_core::table::Table;

impl Run<'_> {
    /// Reads every input (the index's and this run's) and writes every bucket: a full
    /// ingest stored in buckets.
    pub(super) fn full(
        &self,
        old: Option<&Manifest>,
        inputs: &[Input],
        mut a: Appended,
        t: &Target,
    ) -> Result<Option<Appended>> {
        // Every file the warehouse holds, with this run's, by name: its relative name.
        let mut all: BTreeMap<String, String> = BTreeMap::new();
        if let Some(m) = old {
            if m.inputs.is_empty() {
                for f in read::read_files_table(self.root, m.files(Table::Files))? {
                    let rel = ingest::relative_name(Path::new(&f.file), &[]);
                    all.insert(f.file, rel);
                }
            } else {
                all.extend(m.inputs.iter().map(|(n, fp)| (n.clone(), fp.rel.clone())));
            }
        }
        for i in inputs {
            all.insert(i.name.clone(), i.rel.clone());
        }
        let wanted: Vec<(String, String)> = all.into_iter().collect();
        let mut files = Vec::with_capacity(wanted.len());
        for ((name, _), local) in wanted.iter().zip(self.local_copies(&wanted, inputs)?) {
            let Some(local) = local else {
                return Err(Error::Invalid(format!(
                    "--append has to read every input again ({}), and {name}, ingested \
                     before, is not there (the names are as the earlier ingest was given \
                     them: run it from the same folder). Nothing was written; run a full \
                     ingest of all the logs instead",
                    a.full_rewrite.as_deref().unwrap_or("a new warehouse")
                )));
            };
            files.push(local);
        }
        // `files` is ordered by name, which is the path order every ingest reads in.
        let local: HashMap<String, (PathBuf, String)> = files
            .iter()
            .map(|f| (f.name.clone(), (f.path.clone(), f.rel.clone())))
            .collect();
        let mut ing = ingest::ingest_inputs(
            &ingest::Inputs {
                files,
                skipped: Vec::new(),
            },
            self.opts,
        )?;
        a.new_lines = ing.files.iter().map(|f| f.lines + f.blank).sum();
        let staged = Staged::begin_at(self.root.clone(), commit::new_ingest_id())?;
        let dir = staged.dir().to_path_buf();
        let id = staged.id().to_string();
        let mut by_bucket: BTreeMap<u32, Vec<ingest::Agent>> = BTreeMap::new();
        for ag in std::mem::take(&mut ing.agents) {
            by_bucket
                .entry(bucket_of(&ag.root, BUCKETS))
                .or_default()
                .push(ag);
        }
        let mut bucket_files: BTreeMap<String, BTreeMap<u32, Vec<String>>> = BTreeMap::new();
        let mut bucket_counts = BTreeMap::new();
        let mut file_buckets: Vec<BTreeSet<u32>> = vec![BTreeSet::new(); ing.files.len()];
        for (b, agents) in by_bucket {
            for ev in agents.iter().flat_map(|a| &a.events) {
                file_buckets[ev.file as usize].insert(b);
            }
            // Another shard's bucket: its agents are that shard's to reduce and write.
            if !t.part.owns(b) {
                continue;
            }
            let sub = Ingested {
                files: ing.files.clone(),
                agents,
                ..Default::default()
            };
            let derived = reduce_all(&sub);
            let written = write_bucket(&dir, &id, b, &sub, &derived)?;
            for (t, names) in written {
                bucket_files.entry(t).or_default().insert(b, names);
            }
            bucket_counts.insert(b, [sub.agents.len() as u64, derived.intervals.len() as u64]);
        }
        a.buckets_written = bucket_counts.len();
        let work = |shared, index| Work {
            shared,
            index,
            scope: (0..BUCKETS).filter(|&b| t.part.owns(b)).collect(),
            bucket_files,
            bucket_counts,
            buckets: BUCKETS,
        };
        if !t.part.shared() {
            return self.finish(staged, old, work(None, None), a, t);
        }
        let mut index = BTreeMap::new();
        for (k, f) in ing.files.iter().enumerate() {
            let (p, rel) = &local[&f.file];
            // Scanned again when first downloaded here: the bytes read.
            let s = match inputs.iter().find(|i| i.name == f.file) {
                Some(i) if i.path.is_some() => i.scan,
                _ => scan(p, None).map_err(|e| Error::io(&f.file, e))?,
            };
            let mut fp = Fingerprint::new(&s, f.lines + f.blank, &f.format, rel);
            fp.buckets = std::mem::take(&mut file_buckets[k]);
            fp.object = self.downloads.stamp(&f.file);
            index.insert(f.file.clone(), fp);
        }
        self.stamp(&mut index, inputs);
        let shared = Ingested {
            files: std::mem::take(&mut ing.files),
            rejects: std::mem::take(&mut ing.rejects),
            ..Default::default()
        };
        self.finish(staged, old, work(Some(shared), Some(index)), a, t)
    }

    /// Local copies of the inputs `wanted` (name, relative name), in their order: this
    /// run's; objects (of this run, or named by a URL in the index) downloaded now, one
    /// each; other names as local paths. `None`: no such file or object.
    pub(super) fn local_copies(
        &self,
        wanted: &[(String, String)],
        inputs: &[Input],
    ) -> Result<Vec<Option<ingest::Input>>> {
        let this: HashMap<&str, &Input> = inputs.iter().map(|i| (i.name.as_str(), i)).collect();
        let urls: Vec<(&str, &str)> = wanted
            .iter()
            .filter(|(n, _)| this.get(n.as_str()).is_none_or(|i| i.path.is_none()))
            .filter(|(n, _)| objstore::is_supported_remote(Path::new(n)))
            .map(|(n, r)| {
                let rel = this.get(n.as_str()).map_or(r.as_str(), |i| i.rel.as_str());
                (n.as_str(), rel)
            })
            .collect();
        let mut fetched: HashMap<String, Option<ingest::Input>> = urls
            .iter()
            .map(|(n, _)| n.to_string())
            .zip(self.downloads.fetch_urls(&urls)?)
            .collect();
        wanted
            .iter()
            .map(|(name, rel)| {
                if let Some(got) = fetched.remove(name) {
                    return Ok(got);
                }
                match this.get(name.as_str()) {
                    Some(i) if i.path.is_some() => i.local().map(Some),
                    _ => Ok(Some(ingest::Input {
                        path: PathBuf::from(name),
                        name: name.clone(),
                        rel: rel.clone(),
                    })
                    .filter(|i| i.path.is_file())),
                }
            })
            .collect()
    }

    /// Gives the index's entries of this run's objects what the store said of them now
    /// (an object written again with the same bytes is then known by its new e_tag).
    pub(super) fn stamp(&self, index: &mut BTreeMap<String, Fingerprint>, inputs: &[Input]) {
        for i in inputs {
            if let (Some(fp), Some(o)) = (index.get_mut(&i.name), &i.object) {
                fp.object = Some(self.downloads.stamp(&i.name).unwrap_or(o.clone()));
            }
        }
    }
}

/// Writes every per-agent table of one bucket's agents `ing` (reduced into `derived`).
fn write_bucket(
    dir: &Path,
    id: &str,
    b: u32,
    ing: &Ingested,
    derived: &Derived,
) -> Result<BTreeMap<String, Vec<String>>> {
    let id = format!("{id}-b{b:03}");
    let derived_tables: Vec<Table> = per_agent_tables()
        .into_iter()
        .filter(|t| *t != Table::Events)
        .collect();
    let batches = store::some_batches(ing, derived, &derived_tables)?;
    let mut files = store::write_parts(dir, &id, &batches)?;
    files.insert(
        Table::Events.to_string(),
        store::write_events_parts(dir, &id, ing, None)?,
    );
    Ok(files)
}
