//! A bucket's derived table after an append: a list of files, of which only those holding
//! touched agents' rows are written again (without them), the touched agents' rows a new
//! file, the others kept as they are; past [`MAX_DERIVED_FILES`] the smallest are merged.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::sync::Mutex;

use datafusion::arrow::array::RecordBatch;

use super::MAX_DERIVED_FILES;
use crate::error::Result;
use crate::objstore::Root;
use crate::store::{self, read};
use runlog_core::table::Table;

/// The rows of committed files, by name, as far as a writer has seen them: a file's rows
/// never change, so a writer that keeps this from one commit to the next (`runlog
/// collect`) does not read a file it keeps as it is.
#[derive(Debug, Default)]
pub struct RowCounts(Mutex<HashMap<String, u64>>);

impl RowCounts {
    fn get(&self, rel: &str) -> Option<u64> {
        self.0.lock().ok()?.get(rel).copied()
    }

    fn set(&self, rel: &str, rows: u64) {
        if let Ok(mut m) = self.0.lock() {
            m.insert(rel.to_string(), rows);
        }
    }

    /// Forgets the files `keep` does not name.
    pub fn retain(&self, keep: impl Fn(&str) -> bool) {
        if let Ok(mut m) = self.0.lock() {
            m.retain(|k, _| keep(k));
        }
    }
}

/// One file of a bucket's derived table after an append: a committed file kept as it is
/// (its bytes when they were read, for a compaction), or rows to write.
enum Piece {
    Kept {
        rel: String,
        rows: u64,
        bytes: Option<bytes::Bytes>,
    },
    New(Vec<RecordBatch>),
}

impl Piece {
    fn rows(&self) -> u64 {
        match self {
            Piece::Kept { rows, .. } => *rows,
            Piece::New(batches) => batches.iter().map(|b| b.num_rows() as u64).sum(),
        }
    }
}

/// The files of the derived table `table` of one bucket after an append that touched the
/// agents `touched` (whose rows are now `fresh`), and its rows. Of the bucket's `files`,
/// only those holding touched agents' rows (found by their `root` column alone) are
/// written again, without those rows; the others stay named as they are, and `fresh` is a
/// new file. So an append that touches new agents only writes no old file, and one that
/// touches yesterday's agents writes yesterday's file again, not the bucket's history.
/// Past [`MAX_DERIVED_FILES`] files, the smallest files but the new one are merged into
/// one (a file is merged again only while it is among the smallest, so a compaction does
/// not rewrite the history). Files are written under `dir`, ids from `bid`. With no
/// `touched` roots the files are not read, only counted (`counts`, or their footers).
#[allow(clippy::too_many_arguments)]
pub(super) fn derived_files(
    root: &Root,
    dir: &Path,
    bid: &str,
    table: Table,
    files: &[String],
    touched: &HashSet<String>,
    fresh: RecordBatch,
    counts: &RowCounts,
) -> Result<(Vec<String>, u64)> {
    let mut pieces = Vec::with_capacity(files.len() + 1);
    for rel in files {
        if touched.is_empty() {
            let (rows, bytes) = match counts.get(rel) {
                Some(n) => (n, None),
                None => {
                    let bytes = read::parquet_bytes(root, rel)?;
                    (read::parquet_rows(bytes.clone())?, Some(bytes))
                }
            };
            counts.set(rel, rows);
            pieces.push(Piece::Kept {
                rel: rel.clone(),
                rows,
                bytes,
            });
            continue;
        }
        let bytes = read::parquet_bytes(root, rel)?;
        let roots = read::decode_parquet(bytes.clone(), Some("root"))?;
        let (hit, _) = read::split_by_root(&roots, touched)?;
        if hit.iter().all(|b| b.num_rows() == 0) {
            let rows = roots.iter().map(|b| b.num_rows() as u64).sum();
            counts.set(rel, rows);
            pieces.push(Piece::Kept {
                rel: rel.clone(),
                rows,
                bytes: Some(bytes),
            });
            continue;
        }
        let (_, mut keep) = read::split_by_root(&read::decode_parquet(bytes, None)?, touched)?;
        keep.retain(|b| b.num_rows() > 0);
        if !keep.is_empty() {
            pieces.push(Piece::New(keep));
        }
    }
    // The touched agents' rows are not merged with others: those agents are the likeliest
    // to be touched again by the next append (agents running on), which would then write
    // the others' rows again with them, day after day.
    let settled = pieces.len();
    if fresh.num_rows() > 0 {
        pieces.push(Piece::New(vec![fresh]));
    }
    if pieces.len() > MAX_DERIVED_FILES {
        // Merge the smallest of the others into one, leaving MAX_DERIVED_FILES.
        let mut order: Vec<usize> = (0..settled).collect();
        order.sort_by_key(|&k| (pieces[k].rows(), k));
        let merge: HashSet<usize> = order[..pieces.len() - MAX_DERIVED_FILES + 1]
            .iter()
            .copied()
            .collect();
        let mut merged = Vec::new();
        let mut rest = Vec::with_capacity(MAX_DERIVED_FILES);
        for (k, p) in pieces.into_iter().enumerate() {
            match (merge.contains(&k), p) {
                (false, p) => rest.push(p),
                (true, Piece::New(b)) => merged.extend(b),
                (true, Piece::Kept { rel, bytes, .. }) => {
                    let bytes = match bytes {
                        Some(b) => b,
                        None => read::parquet_bytes(root, &rel)?,
                    };
                    merged.extend(read::decode_parquet(bytes, None)?)
                }
            }
        }
        rest.push(Piece::New(merged));
        pieces = rest;
    }
    let total = pieces.iter().map(Piece::rows).sum();
    let mut names = Vec::with_capacity(pieces.len());
    for (k, p) in pieces.into_iter().enumerate() {
        match p {
            Piece::Kept { rel, .. } => names.push(rel),
            Piece::New(batches) => {
                let rows: u64 = batches.iter().map(|b| b.num_rows() as u64).sum();
                let one = BTreeMap::from([(table, read::rebatch(&batches)?)]);
                let written = store::write_parts(dir, &format!("{bid}-{k:02}"), &one)?;
                let written: Vec<String> = written.into_values().flatten().collect();
                if let [one] = written.as_slice() {
                    counts.set(one, rows);
                }
                names.extend(written);
            }
        }
    }
    Ok((names, total))
}
