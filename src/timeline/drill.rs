//! Drill-down from the report (`runlog report --html-dir DIR`): `DIR/index.html` is the
//! report's page ([`crate::html::render_html`]) with a section that lists the notable
//! agents, each linked to its timeline page `DIR/agents/<name>.html`, which links back.
//!
//! Notable agents are found with SQL over the same tables the report reads: every agent
//! with a protocol error (an interval's or a turn's), a run attempt that died on a delta
//! (a provisional tail), an unsettled interval, a failed turn or an error whose recorded
//! retryability differs from the code table's. Pages are written for the first
//! [`DrillOptions::max_pages`] of them (most serious first); the index says how many
//! there are and where the cap cut.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Int64Type};
use datafusion::prelude::SessionContext;

use super::{build, render_page, PageOptions};
use crate::error::{Error, Result};
use crate::html::{escape, render_html};
use crate::report::Report;

/// Options of `--html-dir`.
#[derive(Debug, Clone)]
pub struct DrillOptions {
    /// Timeline pages written at most (`--max-pages`).
    pub max_pages: usize,
}

/// The default of `--max-pages`.
pub const DEFAULT_MAX_PAGES: usize = 200;

impl Default for DrillOptions {
    fn default() -> Self {
        DrillOptions {
            max_pages: DEFAULT_MAX_PAGES,
        }
    }
}

/// A notable agent and why: (reason, how many rows) per reason.
#[derive(Debug, Clone, PartialEq)]
pub struct Notable {
    pub root: String,
    pub reasons: Vec<(String, i64)>,
}

impl Notable {
    fn why(&self) -> String {
        self.reasons
            .iter()
            .map(|(r, n)| format!("{r} ×{n}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The reasons, most serious first, with the SQL that finds their rows (rank, label, query).
const REASONS: &[(i64, &str, &str)] = &[
    (
        0,
        "protocol error (interval)",
        "SELECT root FROM intervals WHERE status = 'protocol_error'",
    ),
    (
        1,
        "protocol error (turn end)",
        "SELECT root FROM turns WHERE protocol_error IS NOT NULL",
    ),
    (
        2,
        "run died on a delta",
        "SELECT root FROM runs WHERE provisional_tail",
    ),
    (
        3,
        "unsettled interval",
        "SELECT root FROM intervals WHERE status = 'unsettled'",
    ),
    (
        4,
        "failed turn",
        "SELECT root FROM turns WHERE state = 'Failed'",
    ),
    (
        5,
        "retryable mismatch",
        "SELECT root FROM errors WHERE retryable_mismatch",
    ),
];

/// Every notable agent, most serious first (by its most serious reason, then root).
pub async fn notable_agents(ctx: &SessionContext) -> Result<Vec<Notable>> {
    let union: Vec<String> = REASONS
        .iter()
        .map(|(rank, label, sql)| {
            format!("SELECT root, {rank} AS rank, '{label}' AS reason FROM ({sql}) AS q{rank}")
        })
        .collect();
    let sql = format!(
        "SELECT root, rank, reason, count(*) AS n FROM ({}) AS u GROUP BY root, rank, reason ORDER BY root, rank",
        union.join(" UNION ALL ")
    );
    let (_, batches) = crate::query::run_sql(ctx, &sql).await?;
    let mut by_root: BTreeMap<String, (i64, Vec<(String, i64)>)> = BTreeMap::new();
    for b in batches {
        let text = |i: usize| cast(b.column(i), &DataType::Utf8);
        let (root, reason) = (text(0)?, text(2)?);
        let (root, reason) = (root.as_string::<i32>(), reason.as_string::<i32>());
        let int = |i: usize| cast(b.column(i), &DataType::Int64);
        let (rank, count) = (int(1)?, int(3)?);
        let (rank, count) = (
            rank.as_primitive::<Int64Type>(),
            count.as_primitive::<Int64Type>(),
        );
        for i in 0..b.num_rows() {
            if root.is_null(i) {
                continue;
            }
            let e = by_root
                .entry(root.value(i).to_string())
                .or_insert((i64::MAX, Vec::new()));
            e.0 = e.0.min(rank.value(i));
            e.1.push((reason.value(i).to_string(), count.value(i)));
        }
    }
    let mut out: Vec<(i64, Notable)> = by_root
        .into_iter()
        .map(|(root, (rank, reasons))| (rank, Notable { root, reasons }))
        .collect();
    out.sort_by(|a, b| (a.0, &a.1.root).cmp(&(b.0, &b.1.root)));
    Ok(out.into_iter().map(|(_, n)| n).collect())
}

/// A file name (without `.html`) for a root id: letters, digits and `-` kept, every other
/// byte written `_XX` (hex), so any id becomes a safe file name and URL path; long ids are
/// cut and end with a hash of the whole id.
pub fn page_file_name(root: &str) -> String {
    let mut out = String::with_capacity(root.len());
    for b in root.bytes() {
        if b.is_ascii_alphanumeric() || b == b'-' {
            out.push(b as char);
        } else {
            let _ = write!(out, "_{b:02X}");
        }
    }
    if out.is_empty() {
        out.push_str("_empty");
    }
    if out.len() > 120 {
        out.truncate(96);
        let _ = write!(out, "_h{:016x}", runlog_core::shard::root_hash(root));
    }
    out
}

/// What [`write_html_dir`] wrote.
#[derive(Debug, Clone)]
pub struct DrillWritten {
    pub index: PathBuf,
    /// Notable agents found, and the pages written for them (root, file name).
    pub notable: usize,
    pub pages: Vec<(String, String)>,
}

fn io(p: &Path, e: std::io::Error) -> Error {
    Error::io(p, e)
}

/// Writes `dir/index.html` (the report with the notable agents linked) and a timeline page
/// per notable agent, up to the cap, under `dir/agents/`.
pub async fn write_html_dir(
    ctx: &SessionContext,
    report: &Report,
    dir: &Path,
    opts: &DrillOptions,
) -> Result<DrillWritten> {
    let notable = notable_agents(ctx).await?;
    let cap = opts.max_pages.min(notable.len());
    let agents_dir = dir.join("agents");
    std::fs::create_dir_all(&agents_dir).map_err(|e| io(&agents_dir, e))?;
    // File names, unique even on file systems that ignore case.
    let mut used: HashSet<String> = HashSet::new();
    let names: Vec<String> = notable[..cap]
        .iter()
        .map(|a| {
            let mut name = page_file_name(&a.root);
            if !used.insert(name.to_ascii_lowercase()) {
                name = format!("{name}_h{:016x}", runlog_core::shard::root_hash(&a.root));
                used.insert(name.to_ascii_lowercase());
            }
            name
        })
        .collect();
    let roots: Vec<String> = notable[..cap].iter().map(|a| a.root.clone()).collect();
    let mut events = crate::replay::events_of_roots(ctx, &roots).await?;
    let cap_text = cap_sentence(notable.len(), cap, opts.max_pages);
    let mut pages = Vec::with_capacity(cap);
    for (a, name) in notable[..cap].iter().zip(&names) {
        let evs = events.remove(&a.root).unwrap_or_default();
        let t = build(&a.root, &evs);
        let page = render_page(
            &t,
            &PageOptions {
                back: Some(("../index.html#s-notable".into(), "report".into())),
                note: Some(format!("Notable: {}. {cap_text}", a.why())),
            },
        );
        let p = agents_dir.join(format!("{name}.html"));
        std::fs::write(&p, page).map_err(|e| io(&p, e))?;
        pages.push((a.root.clone(), name.clone()));
    }
    let index = dir.join("index.html");
    let html = with_notable_section(render_html(report), &notable, &names, &cap_text);
    std::fs::write(&index, html).map_err(|e| io(&index, e))?;
    Ok(DrillWritten {
        index,
        notable: notable.len(),
        pages,
    })
}

fn cap_sentence(notable: usize, pages: usize, cap: usize) -> String {
    if notable > pages {
        format!(
            "{notable} notable agents; timeline pages for the first {pages} (the cap, --max-pages {cap}); {} more have none.",
            notable - pages
        )
    } else {
        format!("{notable} notable agents, a timeline page for each (cap --max-pages {cap}).")
    }
}

/// The report page with a section listing the notable agents (linked up to the cap) and a
/// link to it in the page's navigation.
fn with_notable_section(
    mut html: String,
    notable: &[Notable],
    names: &[String],
    cap_text: &str,
) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<section class="card" id="s-notable" data-section="notable_agents"><h2>Notable agents</h2><p class="note">Agents with a protocol error, a run that died on a delta, an unsettled interval, a failed turn or a retryable mismatch, most serious first. {}</p><div class="tablewrap"><table data-table="notable_agents"><thead><tr><th>agent</th><th>why</th></tr></thead><tbody>"#,
        escape(cap_text)
    );
    for (a, name) in notable.iter().zip(names) {
        let _ = write!(
            s,
            r#"<tr><td><a class="agent-link" href="agents/{}.html">{}</a></td><td>{}</td></tr>"#,
            escape(name),
            escape(&a.root),
            escape(&a.why())
        );
    }
    if notable.is_empty() {
        s.push_str(r#"<tr><td class="empty" colspan="2">none</td></tr>"#);
    }
    s.push_str("</tbody></table></div></section>");
    match html.rfind("<footer>").or_else(|| html.rfind("</main>")) {
        Some(i) => html.insert_str(i, &s),
        None => html.push_str(&s),
    }
    if let Some(i) = html.find("</nav>") {
        html.insert_str(i, r##"<a href="#s-notable">Notable agents</a>"##);
    }
    html
}
