//! A bucket's derived table after an append: a list of files, of which only those holding
//! touched agents' rows are written again (without them), the touched agents' rows a new
//! file, the others kept as they are; past [`MAX_DERIVED_FILES`] the smallest are merged.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use datafusion::arrow::array::RecordBatch;

use super::MAX_DERIVED_FILES;
use crate::error::Result;
use crate::objstore::Root;
use crate::store::{self, read};
use runlog_core::table::Table;

/// One file of a bucket's derived table after an append: a committed file kept as it is
/// (its bytes, read to look at its roots, kept for a compaction), or rows to write.
enum Piece {
    Kept {
        rel: String,
        rows: u64,
        bytes: bytes::Bytes,
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
/// not rewrite the history). Files are written under `dir`, ids from `bid`.
pub(super) fn derived_files(
    root: &Root,
    dir: &Path,
    bid: &str,
    table: Table,
    files: &[String],
    touched: &HashSet<String>,
    fresh: RecordBatch,
) -> Result<(Vec<String>, u64)> {
    let mut pieces = Vec::with_capacity(files.len() + 1);
    for rel in files {
        let bytes = read::parquet_bytes(root, rel)?;
        let roots = read::decode_parquet(bytes.clone(), Some("root"))?;
        let (hit, _) = read::split_by_root(&roots, touched)?;
        if hit.iter().all(|b| b.num_rows() == 0) {
            let rows = roots.iter().map(|b| b.num_rows() as u64).sum();
            pieces.push(Piece::Kept {
                rel: rel.clone(),
                rows,
                bytes,
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
                (true, Piece::Kept { bytes, .. }) => {
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
                let one = BTreeMap::from([(table, read::rebatch(&batches)?)]);
                let written = store::write_parts(dir, &format!("{bid}-{k:02}"), &one)?;
                names.extend(written.into_values().flatten());
            }
        }
    }
    Ok((names, total))
}
