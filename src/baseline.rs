//! Baseline: `runlog report --baseline` — two reports side by side (a baseline and the
//! current period or warehouse), with the change of every figure and a test of whether each
//! share moved more than chance explains.
//!
//! It compares two [`Report`] values built by [`crate::report::build`], so every number on
//! either side is the number of the plain report of that side. Per section it keys rows by
//! their label columns and compares: the row's count, its share of the section's total
//! (percentage points), a few other counts, and the retried/recovered rates of model errors.
//! Each share and rate is tested with the pooled two-proportion z-test
//! ([`crate::stats::two_proportion`]); the p-values of the whole report are corrected
//! together with Holm's step-down method ([`crate::stats::holm`]) at
//! [`crate::stats::ALPHA`]. Counts (and token sums) get a change but no test.

use serde::Serialize;

use crate::report::{cell_number as num, Report, Section};
use crate::stats;

/// What a compared figure is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A count (or a sum): change = current - baseline; not tested.
    Count,
    /// The row's share of its section's total, in %: change in percentage points; tested.
    Share,
    /// A rate in % of its own denominator (retried/recovered of model errors); tested.
    Rate,
}

/// One figure on both sides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Compared {
    pub measure: String,
    pub kind: Kind,
    /// `None` when the side has no such figure (a rate without model errors, a row cut by
    /// a section's limit).
    pub baseline: Option<f64>,
    pub current: Option<f64>,
    /// current - baseline (percentage points for shares and rates).
    pub change: Option<f64>,
    /// The denominators of a share or rate.
    pub baseline_n: Option<f64>,
    pub current_n: Option<f64>,
    /// Two-sided p-value of the two-proportion z-test (shares and rates only).
    pub p_value: Option<f64>,
    /// The p-value after Holm's correction over every test of the comparison.
    pub p_holm: Option<f64>,
    /// `p_holm <= alpha`.
    pub significant: bool,
}

/// One row of a compared section: its label and its figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ComparedRow {
    pub key: Vec<String>,
    pub measures: Vec<Compared>,
}

/// A section of the report on both sides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ComparedSection {
    pub id: String,
    pub title: String,
    pub note: String,
    pub key_columns: Vec<String>,
    /// The measures of every row, in order.
    pub measures: Vec<String>,
    pub rows: Vec<ComparedRow>,
}

/// The whole comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub baseline_totals: Vec<(String, String)>,
    pub current_totals: Vec<(String, String)>,
    /// The numeric totals (agents, events, ...) as counts.
    pub totals: Vec<Compared>,
    pub sections: Vec<ComparedSection>,
    /// Number of tests (shares and rates with a p-value) Holm corrected for.
    pub tests: usize,
    pub alpha: f64,
}

/// The test and correction, as the output names them.
pub const RULE: &str = "two-proportion z-test (pooled, two-sided) per compared share and rate; \
Holm step-down correction over all of them";

/// What a share is a share of.
#[derive(Clone, Copy)]
enum Denom {
    /// A total of the report's header (the section may be cut by a LIMIT).
    Total(&'static str),
    /// The sum of the section's count column.
    Rows,
}

/// How a section is compared. A key column `#0` is the section's first column (the time
/// bucket, whose name follows the data's span).
struct Spec {
    id: &'static str,
    keys: &'static [&'static str],
    count: &'static str,
    share: Option<Denom>,
    counts: &'static [&'static str],
    /// (rate column in %, its denominator column).
    rates: &'static [(&'static str, &'static str)],
    /// The section's row limit: a key missing from a side with this many rows is unknown
    /// there, not zero.
    limit: Option<usize>,
}

const SPECS: &[Spec] = &[
    Spec {
        id: "finish_classes",
        keys: &["finish_class", "finish_reason"],
        count: "intervals",
        share: Some(Denom::Total("intervals")),
        counts: &[],
        rates: &[],
        limit: None,
    },
    Spec {
        id: "finish_reasons",
        keys: &["status", "finish_reason"],
        count: "intervals",
        share: Some(Denom::Total("intervals")),
        counts: &[],
        rates: &[],
        limit: None,
    },
    Spec {
        id: "interval_status",
        keys: &["status"],
        count: "intervals",
        share: Some(Denom::Total("intervals")),
        counts: &[],
        rates: &[],
        limit: None,
    },
    Spec {
        id: "finish_reasons_over_time",
        keys: &["#0", "status", "finish_reason"],
        count: "intervals",
        share: None,
        counts: &[],
        rates: &[],
        limit: None,
    },
    Spec {
        id: "turn_states",
        keys: &["state", "detail"],
        count: "turns",
        share: Some(Denom::Total("turns")),
        counts: &["root_turns"],
        rates: &[],
        limit: None,
    },
    Spec {
        id: "error_codes",
        keys: &["code"],
        count: "errors",
        share: Some(Denom::Total("errors")),
        counts: &["mismatches"],
        rates: &[("retried", "model_errors"), ("recovered", "model_errors")],
        limit: Some(20),
    },
    Spec {
        id: "runs",
        keys: &["settle", "output_status", "wait_for"],
        count: "attempts",
        share: Some(Denom::Rows),
        counts: &["provisional_tails"],
        rates: &[],
        limit: None,
    },
    Spec {
        id: "tool_calls",
        keys: &["status"],
        count: "calls",
        share: Some(Denom::Rows),
        counts: &[],
        rates: &[],
        limit: None,
    },
    Spec {
        id: "callbacks",
        keys: &["kind", "closed_by"],
        count: "callbacks",
        share: Some(Denom::Rows),
        counts: &[],
        rates: &[],
        limit: None,
    },
    Spec {
        id: "tokens",
        keys: &["status", "finish_reason"],
        count: "intervals",
        share: None,
        counts: &["model_calls", "input_tokens", "output_tokens"],
        rates: &[],
        limit: None,
    },
    Spec {
        id: "turn_ends_by_format",
        keys: &["format"],
        count: "turns",
        share: None,
        counts: &["recorded", "inferred", "no_end"],
        rates: &[],
        limit: None,
    },
];

/// The totals compared as counts.
const TOTALS: &[&str] = &[
    "agents",
    "events",
    "intervals",
    "turns",
    "errors",
    "rejects",
    "files",
];

fn total(r: &Report, k: &str) -> Option<f64> {
    r.totals
        .iter()
        .find(|(key, _)| key == k)
        .and_then(|(_, v)| num(v))
}

fn count(measure: &str, b: Option<f64>, c: Option<f64>) -> Compared {
    Compared {
        measure: measure.to_string(),
        kind: Kind::Count,
        baseline: b,
        current: c,
        change: b.zip(c).map(|(b, c)| c - b),
        baseline_n: None,
        current_n: None,
        p_value: None,
        p_holm: None,
        significant: false,
    }
}

/// A share or rate in % with its denominators, tested when both sides have one.
fn proportion(measure: &str, kind: Kind, b: Option<(f64, f64)>, c: Option<(f64, f64)>) -> Compared {
    let pct = |x: Option<(f64, f64)>| x.filter(|(_, n)| *n > 0.0).map(|(k, n)| 100.0 * k / n);
    let (bp, cp) = (pct(b), pct(c));
    let p_value = b
        .zip(c)
        .and_then(|((x1, n1), (x2, n2))| stats::two_proportion(x1, n1, x2, n2))
        .map(|t| t.p_value);
    Compared {
        measure: measure.to_string(),
        kind,
        baseline: bp,
        current: cp,
        change: bp.zip(cp).map(|(b, c)| c - b),
        baseline_n: b.map(|x| x.1),
        current_n: c.map(|x| x.1),
        p_value,
        p_holm: None,
        significant: false,
    }
}

/// The spec of a section; sections without one (added later) are compared by their
/// numeric columns as counts, keyed by the others.
fn spec_of(s: &Section) -> (Vec<usize>, Option<&'static Spec>) {
    if let Some(spec) = SPECS.iter().find(|x| x.id == s.id) {
        let keys = spec
            .keys
            .iter()
            .filter_map(|k| match *k {
                "#0" => (!s.columns.is_empty()).then_some(0),
                k => s.columns.iter().position(|c| c == k),
            })
            .collect();
        return (keys, Some(spec));
    }
    let keys = (0..s.columns.len())
        .filter(|&i| {
            !s.rows
                .iter()
                .all(|r| r.get(i).is_some_and(|v| num(v).is_some()))
        })
        .collect();
    (keys, None)
}

/// The figures of one row of a section, by column name.
struct Side<'a> {
    section: &'a Section,
    report: &'a Report,
    spec: Option<&'static Spec>,
}

impl Side<'_> {
    fn col(&self, name: &str) -> Option<usize> {
        self.section.columns.iter().position(|c| c == name)
    }

    fn cell(&self, row: Option<&Vec<String>>, name: &str) -> Option<f64> {
        let i = self.col(name)?;
        num(row?.get(i)?)
    }

    /// Whether a missing key is unknown on this side (cut by the limit) rather than zero.
    fn cut(&self) -> bool {
        self.spec
            .and_then(|s| s.limit)
            .is_some_and(|l| self.section.rows.len() >= l)
    }

    fn denominator(&self, d: Denom, count: &str) -> Option<f64> {
        match d {
            Denom::Total(k) => total(self.report, k),
            Denom::Rows => {
                let i = self.col(count)?;
                Some(
                    self.section
                        .rows
                        .iter()
                        .filter_map(|r| r.get(i).and_then(|v| num(v)))
                        .sum(),
                )
            }
        }
    }
}

fn key_of(row: &[String], keys: &[usize]) -> Vec<String> {
    keys.iter()
        .map(|&i| row.get(i).cloned().unwrap_or_default())
        .collect()
}

fn compare_section(
    base: Option<&Section>,
    cur: &Section,
    b: &Report,
    c: &Report,
) -> ComparedSection {
    let (keys, spec) = spec_of(cur);
    let empty = Section {
        id: cur.id.clone(),
        title: cur.title.clone(),
        note: cur.note.clone(),
        columns: cur.columns.clone(),
        rows: Vec::new(),
    };
    let base = base.unwrap_or(&empty);
    let (bkeys, _) = spec_of(base);
    let bs = Side {
        section: base,
        report: b,
        spec,
    };
    let cs = Side {
        section: cur,
        report: c,
        spec,
    };
    // Rows: the current's order, then the keys only the baseline has.
    let mut order: Vec<Vec<String>> = cur.rows.iter().map(|r| key_of(r, &keys)).collect();
    for r in &base.rows {
        let k = key_of(r, &bkeys);
        if !order.contains(&k) {
            order.push(k);
        }
    }
    let find = |side: &Section, ks: &[usize], key: &[String]| {
        side.rows.iter().find(|r| key_of(r, ks) == key).cloned()
    };
    let measure_cols: Vec<String> = match spec {
        Some(s) => {
            let mut m = vec![s.count.to_string()];
            if s.share.is_some() {
                m.push("share".to_string());
            }
            m.extend(s.counts.iter().map(|c| c.to_string()));
            m.extend(s.rates.iter().map(|r| r.0.to_string()));
            m
        }
        None => (0..cur.columns.len())
            .filter(|i| !keys.contains(i))
            .map(|i| cur.columns[i].clone())
            .collect(),
    };
    let rows = order
        .into_iter()
        .map(|key| {
            let br = find(base, &bkeys, &key);
            let cr = find(cur, &keys, &key);
            // A row absent on a side counts 0 there, unless the side was cut by its limit.
            let value = |side: &Side, row: &Option<Vec<String>>, col: &str| match row {
                Some(_) => side.cell(row.as_ref(), col),
                None if side.cut() => None,
                None => Some(0.0),
            };
            let mut measures = Vec::new();
            match spec {
                Some(s) => {
                    let (bn, cn) = (value(&bs, &br, s.count), value(&cs, &cr, s.count));
                    measures.push(count(s.count, bn, cn));
                    if let Some(d) = s.share {
                        let bd = bs.denominator(d, s.count);
                        let cd = cs.denominator(d, s.count);
                        measures.push(proportion("share", Kind::Share, bn.zip(bd), cn.zip(cd)));
                    }
                    for col in s.counts {
                        measures.push(count(col, value(&bs, &br, col), value(&cs, &cr, col)));
                    }
                    for (rate, n) in s.rates {
                        let side = |side: &Side, row: &Option<Vec<String>>| {
                            let n = side.cell(row.as_ref(), n)?;
                            let pct = side.cell(row.as_ref(), rate)?;
                            Some((pct / 100.0 * n, n))
                        };
                        measures.push(proportion(rate, Kind::Rate, side(&bs, &br), side(&cs, &cr)));
                    }
                }
                None => {
                    for col in &measure_cols {
                        measures.push(count(col, value(&bs, &br, col), value(&cs, &cr, col)));
                    }
                }
            }
            ComparedRow { key, measures }
        })
        .collect();
    ComparedSection {
        id: cur.id.clone(),
        title: cur.title.clone(),
        note: cur.note.clone(),
        key_columns: keys.iter().map(|&i| cur.columns[i].clone()).collect(),
        measures: measure_cols,
        rows,
    }
}

/// Compares a baseline report with a current one: every section of the current report
/// (both are built by the same code, so they have the same sections), each row's figures
/// on both sides (rows of either side), the tests and Holm's correction over all of them.
pub fn compare(baseline: &Report, current: &Report) -> Comparison {
    let mut sections: Vec<ComparedSection> = current
        .sections
        .iter()
        .map(|s| {
            let b = baseline.sections.iter().find(|x| x.id == s.id);
            compare_section(b, s, baseline, current)
        })
        .collect();
    let totals = TOTALS
        .iter()
        .filter(|k| total(baseline, k).is_some() || total(current, k).is_some())
        .map(|k| count(k, total(baseline, k), total(current, k)))
        .collect();
    // Holm over every p-value of the report.
    let mut ps = Vec::new();
    for s in &sections {
        for r in &s.rows {
            ps.extend(r.measures.iter().filter_map(|m| m.p_value));
        }
    }
    let adjusted = stats::holm(&ps);
    let mut next = adjusted.iter();
    for s in &mut sections {
        for r in &mut s.rows {
            for m in r.measures.iter_mut().filter(|m| m.p_value.is_some()) {
                let p = next.next().copied();
                m.p_holm = p;
                m.significant = p.is_some_and(|p| p <= stats::ALPHA);
            }
        }
    }
    Comparison {
        baseline_totals: baseline.totals.clone(),
        current_totals: current.totals.clone(),
        totals,
        sections,
        tests: ps.len(),
        alpha: stats::ALPHA,
    }
}

impl Comparison {
    /// The figures found significant, over all sections.
    pub fn significant(&self) -> usize {
        self.sections
            .iter()
            .flat_map(|s| &s.rows)
            .flat_map(|r| &r.measures)
            .filter(|m| m.significant)
            .count()
    }

    /// The rule line of every rendering.
    pub fn rule_line(&self) -> String {
        format!(
            "{RULE} ({} tests); alpha = {}; {} significant",
            self.tests,
            self.alpha,
            self.significant()
        )
    }
}

/// A number for people: integers without decimals, others with one.
pub fn fmt_num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v:.1}")
    }
}

/// A change with its sign: `+3`, `-2.5`, `0`.
pub fn fmt_change(v: f64) -> String {
    let s = fmt_num(v);
    if v > 0.0 {
        format!("+{s}")
    } else {
        s
    }
}

/// A change in percentage points, one decimal with its sign: `+7.5 pp`, `-1.0 pp`, `0.0 pp`.
pub fn fmt_pp(v: f64) -> String {
    let r = (v * 10.0).round() / 10.0;
    if r == 0.0 {
        "0.0 pp".to_string()
    } else {
        format!("{r:+.1} pp")
    }
}

/// A p-value: `<0.0001` or four decimals.
pub fn fmt_p(p: f64) -> String {
    if p < 1e-4 {
        "<0.0001".to_string()
    } else {
        format!("{p:.4}")
    }
}

/// One figure as a cell: `812 → 790 (-22)`; shares and rates `81.2% → 79.0% (-2.2 pp,
/// p=0.2100)` with Holm's p; `-` for a side without the figure.
pub fn cell(m: &Compared) -> String {
    let side = |v: Option<f64>| match (v, m.kind) {
        (None, _) => "-".to_string(),
        (Some(v), Kind::Count) => fmt_num(v),
        (Some(v), _) => format!("{v:.1}%"),
    };
    let mut s = format!("{} → {}", side(m.baseline), side(m.current));
    let change = m.change.map(|c| match m.kind {
        Kind::Count => fmt_change(c),
        _ => fmt_pp(c),
    });
    match (change, m.p_holm) {
        (Some(c), Some(p)) => {
            let p = fmt_p(p);
            let eq = if p.starts_with('<') { "" } else { "=" };
            s.push_str(&format!(" ({c}, p{eq}{p})"));
        }
        (Some(c), None) => s.push_str(&format!(" ({c})")),
        (None, _) => {}
    }
    s
}

/// The significant figures of a row as one cell: `share +7.5 pp`, `` when none.
pub fn shift_cell(r: &ComparedRow) -> String {
    r.measures
        .iter()
        .filter(|m| m.significant)
        .map(|m| format!("{} {}", m.measure, fmt_pp(m.change.unwrap_or(0.0))))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The name of the significance column.
pub const SHIFT_COLUMN: &str = "significant";

/// A compared section as a plain table of strings (key columns, one column per measure,
/// then the significant shifts), the form the text, Markdown and HTML renderings draw.
pub fn as_table(s: &ComparedSection) -> Section {
    let mut columns = s.key_columns.clone();
    columns.extend(s.measures.iter().cloned());
    columns.push(SHIFT_COLUMN.to_string());
    let rows = s
        .rows
        .iter()
        .map(|r| {
            let mut row = r.key.clone();
            row.extend(r.measures.iter().map(cell));
            row.push(shift_cell(r));
            row
        })
        .collect();
    Section {
        id: s.id.clone(),
        title: s.title.clone(),
        note: s.note.clone(),
        columns,
        rows,
    }
}

/// The totals as a table: total, baseline, current, change.
pub fn totals_table(c: &Comparison) -> Section {
    Section {
        id: "totals".to_string(),
        title: "Totals".to_string(),
        note: "counts of each side; rejects and files have no time: each side's whole inputs"
            .to_string(),
        columns: ["total", "baseline", "current", "change"]
            .map(String::from)
            .to_vec(),
        rows: c
            .totals
            .iter()
            .map(|m| {
                vec![
                    m.measure.clone(),
                    m.baseline.map_or("-".to_string(), fmt_num),
                    m.current.map_or("-".to_string(), fmt_num),
                    m.change.map_or("-".to_string(), fmt_change),
                ]
            })
            .collect(),
    }
}

/// The non-numeric totals of a side (inputs, window, time span) as one line.
pub fn side_line(totals: &[(String, String)]) -> String {
    let keep = ["inputs", "window", "first_event", "last_event", "span"];
    totals
        .iter()
        .filter(|(k, _)| keep.contains(&k.as_str()))
        .map(|(k, v)| format!("{k}: {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The comparison as aligned text tables.
pub fn render_text(c: &Comparison) -> String {
    let mut out = String::from("runlog report — baseline vs current\n");
    out.push_str(&format!(
        "  baseline: {}\n  current:  {}\n  test: {}\n",
        side_line(&c.baseline_totals),
        side_line(&c.current_totals),
        c.rule_line()
    ));
    let mut sections = vec![totals_table(c)];
    sections.extend(c.sections.iter().map(as_table));
    let tables = crate::report::render_text(&Report {
        totals: Vec::new(),
        sections,
    });
    // Drop the plain report's header line: ours is above.
    out.push_str(tables.split_once('\n').map_or("", |x| x.1));
    out
}

/// The comparison as Markdown.
pub fn render_markdown(c: &Comparison) -> String {
    let mut out = String::from("# runlog report — baseline vs current\n\n");
    out.push_str(&format!(
        "- **baseline**: {}\n- **current**: {}\n- **test**: {}\n",
        side_line(&c.baseline_totals),
        side_line(&c.current_totals),
        c.rule_line()
    ));
    let mut sections = vec![totals_table(c)];
    sections.extend(c.sections.iter().map(as_table));
    let tables = crate::report::render_markdown(&Report {
        totals: Vec::new(),
        sections,
    });
    out.push_str(tables.trim_start_matches("# runlog report\n"));
    out
}

/// The comparison as one JSON document: every compared row is one object with its section's
/// key columns, `measure`, `kind`, `baseline`, `current`, `change`, `baseline_n`,
/// `current_n`, `p_value`, `p_holm` and `significant`.
pub fn render_json(c: &Comparison) -> String {
    use serde_json::{json, Map, Value};
    let side = |t: &[(String, String)]| -> Value {
        Value::Object(
            t.iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect(),
        )
    };
    let row = |key: Option<(&[String], &[String])>, m: &Compared| -> Value {
        let mut o = Map::new();
        if let Some((cols, vals)) = key {
            for (k, v) in cols.iter().zip(vals) {
                o.insert(k.clone(), Value::String(v.clone()));
            }
        }
        let v = serde_json::to_value(m).unwrap_or(Value::Null);
        if let Value::Object(fields) = v {
            o.extend(fields);
        }
        Value::Object(o)
    };
    let sections: Vec<Value> = c
        .sections
        .iter()
        .map(|s| {
            let rows: Vec<Value> = s
                .rows
                .iter()
                .flat_map(|r| {
                    r.measures
                        .iter()
                        .map(|m| row(Some((&s.key_columns, &r.key)), m))
                        .collect::<Vec<_>>()
                })
                .collect();
            json!({"id": s.id, "title": s.title, "note": s.note,
                   "key_columns": s.key_columns, "rows": rows})
        })
        .collect();
    let totals: Vec<Value> = c.totals.iter().map(|m| row(None, m)).collect();
    let doc = json!({
        "baseline": side(&c.baseline_totals),
        "current": side(&c.current_totals),
        "test": {
            "rule": RULE,
            "method": "two-proportion z-test, pooled, two-sided",
            "correction": "holm",
            "alpha": c.alpha,
            "tests": c.tests,
            "significant": c.significant(),
        },
        "totals": totals,
        "sections": sections,
    });
    serde_json::to_string_pretty(&doc).unwrap_or_default()
}
