//! One commit of the spool, incremental: the groups of agents the batch touched
//! ([`super::groups`]) are mapped again from their spool lines alone ([`super::remap`]),
//! and their agents' rows replaced in the warehouse's buckets
//! ([`crate::append::replace_agents`]); the other agents' files stay as they are. The
//! warehouse is then what an ingest of the spool file gives, table for table, at the cost
//! of the batch and of the agents it touched, not of everything received so far.
//!
//! What the receiver must know of the last version to do so ([`Known`]: each agent's
//! event count for the `files` row, the `rejects` rows, each group's roots) it learns from
//! its own commits, or on start from the warehouse. When it cannot tell (a new warehouse,
//! one written by an older release, a failed commit, a spool line the importer refuses),
//! the commit maps every line and writes every bucket.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use datafusion::arrow::array::{AsArray, RecordBatch};
use datafusion::arrow::datatypes::Int64Type;

use super::remap;
use super::spool::Spool;
use crate::append::{self, Replacement, RowCounts};
use crate::commit::{GcPolicy, Manifest};
use crate::error::{Error, Result};
use crate::objstore::Root;
use crate::store::{self, read};
use runlog_core::fingerprint::Fingerprint;
use runlog_core::import::otlp::Ahead;
use runlog_core::import::Format;
use runlog_core::ingest::{FileSummary, Reject};
use runlog_core::table::Table;

/// The hash-of-root buckets of a receiver's warehouse. Every commit writes a file of each
/// per-agent table in each bucket its new agents fall in, and new agents fall in every
/// bucket: fewer than `ingest --append`'s [`append::BUCKETS`], so that a commit writes
/// and syncs a few dozen files, not hundreds.
pub const BUCKETS: u32 = 8;

/// What the last version holds that a commit builds on.
#[derive(Debug, Default)]
pub struct Known {
    /// Events of each agent.
    events: HashMap<String, u64>,
    total: u64,
    rejects: Vec<Reject>,
    /// The rows of the warehouse's files, so that files kept as they are are not read.
    counts: Arc<RowCounts>,
}

/// What one commit did.
#[derive(Debug)]
pub struct Done {
    pub manifest: Manifest,
    pub agents: u64,
    /// Agents mapped again and written.
    pub touched: usize,
    /// Spool lines read.
    pub lines_read: usize,
    /// Every line was mapped and every bucket written.
    pub whole: bool,
}

/// Commits the spool's touched groups (every group without `known`) onto the latest
/// version of the warehouse `root`; `known` is what the version holds, updated.
pub fn commit(
    root: &Root,
    spool: &mut Spool,
    known: &mut Option<Known>,
    gc: GcPolicy,
) -> Result<Done> {
    let touched = spool.groups.take_touched();
    let ahead = spool.take_ahead();
    let first = match known.take() {
        Some(k) => once(spool, k, touched, ahead, false)?.ok(),
        None => None,
    };
    // Without what the version holds, or on a line the importer refuses: the whole spool,
    // as an ingest reads it.
    let (mapped, k) = match first {
        Some(m) => m,
        None => once(
            spool,
            Known::default(),
            BTreeSet::new(),
            HashMap::new(),
            true,
        )?
        .map_err(|r| Error::Invalid(format!("spool line {}: {}", r.line, r.reason)))?,
    };
    let latest = append::latest(root)?;
    let base = latest.as_ref().map(|(n, m)| (*n, m));
    let replaced = append::replace_agents(root, base, mapped.replacement, gc)?;
    let done = Done {
        manifest: replaced.manifest,
        agents: k.events.len() as u64,
        touched: mapped.agents_now,
        lines_read: mapped.lines_read,
        whole: mapped.whole,
    };
    *known = Some(k);
    Ok(done)
}

/// What a mapping gives to write.
struct Mapped {
    replacement: Replacement,
    agents_now: usize,
    lines_read: usize,
    whole: bool,
}

/// Maps the groups `touched` (`whole`: every group) and works out the tables after them;
/// the lines of `ahead` are taken as the importer reads them, not read back. `Err`
/// (inner): a line the importer refused.
fn once(
    spool: &mut Spool,
    mut k: Known,
    touched: BTreeSet<u32>,
    ahead: HashMap<u32, Ahead>,
    whole: bool,
) -> Result<std::result::Result<(Mapped, Known), remap::Refused>> {
    let groups = if whole { spool.groups.all() } else { touched };
    let idx = spool.groups.lines_of(&groups);
    let lines_read = idx.len();
    let input = spool.input().clone();
    let last_line = spool.lines();
    let mut rejects = Vec::new();
    let mut whole_row = None;
    let exists = input.path.exists();
    let ing = if !exists {
        // Nothing received yet: the tables of an ingest of the empty spool folder.
        runlog_core::ingest::Ingested::default()
    } else if whole {
        // Every line, as an ingest reads it: a refused line is a reject.
        let read = runlog_core::ingest::ingest_inputs(
            &runlog_core::ingest::Inputs {
                files: vec![input.clone()],
                skipped: Vec::new(),
            },
            &runlog_core::ingest::IngestOptions {
                format: Format::Otlp,
                ..Default::default()
            },
        )?;
        rejects = read.rejects.clone();
        whole_row = read.files.first().cloned();
        read
    } else {
        let g = &spool.groups;
        let mut of_root: HashMap<String, bool> = HashMap::new();
        let mut wanted = |r: &str| -> bool {
            if let Some(&w) = of_root.get(r) {
                return w;
            }
            let w = g.peek_group(r).is_some_and(|x| groups.contains(&x));
            of_root.insert(r.to_string(), w);
            w
        };
        let invalid = |e: super::spool::SpoolError| Error::Invalid(e.to_string());
        let lines = spool.read_lines(&idx, ahead).map_err(invalid)?;
        let ing = match remap::map(&input, lines, last_line, &mut wanted).map_err(invalid)? {
            Ok(i) => i,
            Err(r) => return Ok(Err(r)),
        };
        rejects = std::mem::take(&mut k.rejects);
        ing
    };
    // The roots the touched groups had go; those they have now come.
    let mut gone: HashSet<String> = HashSet::new();
    for &g in &groups {
        gone.extend(spool.groups.roots(g).iter().map(|r| r.to_string()));
    }
    // The roots the warehouse holds rows of: the touched groups' roots before, and any
    // agent's whose events it counts. A new agent's root is in no file: a bucket of new
    // agents only keeps its files unread.
    let mut held = gone.clone();
    held.extend(
        ing.agents
            .iter()
            .filter(|a| k.events.contains_key(&a.root))
            .map(|a| a.root.clone()),
    );
    for r in &gone {
        if let Some(n) = k.events.remove(r) {
            k.total -= n;
        }
    }
    let mut now: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for a in &ing.agents {
        let n = a.events.len() as u64;
        k.events.insert(a.root.to_string(), n);
        k.total += n;
        if let Some(g) = spool.groups.group_of(&a.root) {
            now.entry(g).or_default().push(a.root.to_string());
        }
    }
    for &g in &groups {
        spool
            .groups
            .set_roots(g, now.remove(&g).unwrap_or_default());
    }
    let lines = spool.lines();
    let row = whole_row.unwrap_or(FileSummary {
        file: input.name.clone(),
        format: Format::Otlp.name().to_string(),
        bytes: spool.size(),
        lines,
        blank: 0,
        kept: lines.saturating_sub(rejects.len() as u64),
        duplicates: 0,
        rejects: rejects.len() as u64,
        events: k.total,
    });
    let mut index = BTreeMap::new();
    if exists {
        let fp = Fingerprint::new(&spool.scan(), lines, Format::Otlp.name(), &input.rel);
        index.insert(input.name.clone(), fp);
    }
    k.rejects = rejects.clone();
    let agents_now = ing.agents.len();
    Ok(Ok((
        Mapped {
            replacement: Replacement {
                agents: ing.agents,
                gone,
                held: (!whole).then_some(held),
                counts: k.counts.clone(),
                all: whole,
                buckets: BUCKETS,
                files: if exists { vec![row] } else { Vec::new() },
                rejects,
                index,
            },
            agents_now,
            lines_read,
            whole,
        },
        k,
    )))
}

/// What the warehouse's latest version `m` holds that a commit builds on, when it was
/// written by this receiver's commits (stored in buckets, its index this spool file):
/// read from its `agents` and `rejects` tables; each group given its agents' roots.
/// `None`: the next commit maps every line.
pub fn learn(root: &Root, m: &Manifest, spool: &mut Spool) -> Result<Option<Known>> {
    if m.buckets != BUCKETS || !m.inputs.contains_key(&spool.input().name) {
        return Ok(None);
    }
    let agents = read::read_table(root, m.files(Table::Agents), agent_events)?;
    let rejects = read::read_table(root, m.files(Table::Rejects), store::rejects_from_batch)?;
    let mut k = Known {
        rejects,
        ..Default::default()
    };
    let mut roots: BTreeMap<u32, Vec<String>> = BTreeMap::new();
    for (r, n) in agents {
        let Some(g) = spool.groups.group_of(&r) else {
            return Ok(None);
        };
        roots.entry(g).or_default().push(r.clone());
        k.total += n;
        k.events.insert(r, n);
    }
    for (g, rs) in roots {
        spool.groups.set_roots(g, rs);
    }
    // Nothing is touched that the version holds already.
    spool.groups.take_touched();
    Ok(Some(k))
}

/// (root, events) of a batch of the `agents` table.
fn agent_events(b: &RecordBatch) -> Result<Vec<(String, u64)>> {
    let roots = store::text_column(b, Table::Agents.name(), "root")?;
    let roots = roots.as_string::<i32>();
    let events = b
        .column_by_name("events")
        .ok_or_else(|| Error::Invalid("agents: no events column".into()))?
        .as_primitive::<Int64Type>();
    Ok((0..b.num_rows())
        .map(|i| (roots.value(i).to_string(), events.value(i).max(0) as u64))
        .collect())
}
