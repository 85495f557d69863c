//! HTML report: renders a [`Report`] as one self-contained page that people would rather
//! look at than read — inline CSS and hand-written inline SVG charts, no scripts, fonts,
//! images or network — so it can be opened from a laptop or attached to an incident review.
//!
//! It computes no figures of its own: every chart draws rows of a report section and sits
//! beside that section's table, so the page, `runlog report` and its JSON/Markdown are
//! renderings of the same [`Report`] value built once by [`crate::report::build`].
//! Every string from the data (ids, codes, file names) is HTML-escaped. A baseline
//! comparison ([`crate::baseline`]) gets its page the same way, with side-by-side bars.

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::baseline::{
    as_table, fmt_num, fmt_pp, side_line, totals_table, ComparedSection, Comparison, SHIFT_COLUMN,
};
use crate::report::{cell_number as num, is_numeric, Report, Section};

/// Natural width of a chart in CSS pixels (it shrinks with the page, never grows).
const CHART_W: f64 = 560.0;
/// Longest bar label, in characters, before it is cut with an ellipsis.
const MAX_LABEL_CHARS: usize = 40;
/// Approximate width of one character of 12px chart text (generous: fonts differ).
const CHAR_W: f64 = 7.0;

/// Escapes text for HTML content and double- or single-quoted attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Formats a coordinate without noise (`12`, `12.5`).
pub(crate) fn n(x: f64) -> String {
    let r = (x * 10.0).round() / 10.0;
    if r.fract() == 0.0 {
        format!("{}", r as i64)
    } else {
        format!("{r:.1}")
    }
}

/// An axis tick for people: `500`, `20k`, `1.5M` (ticks are scale marks, not figures).
fn tick(v: f64) -> String {
    if v >= 1e6 {
        format!("{}M", n(v / 1e6))
    } else if v >= 1e4 {
        format!("{}k", n(v / 1e3))
    } else {
        n(v)
    }
}

/// `s` cut to `max` characters (at least 1), the last an ellipsis when cut.
pub(crate) fn truncate(s: &str, max: usize) -> String {
    let max = max.max(1);
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max - 1).collect();
        t.push('…');
        t
    }
}

/// Colour classes: a few with a meaning, then a palette for everything else.
const SEMANTIC: &[(&str, &[&str])] = &[
    ("ok", &["completed", "settled", "ok", "answer", "end_turn"]),
    ("bad", &["error", "failed", "protocol_error", "denied"]),
    ("warn", &["interrupted", "cancelled", "canceled"]),
    (
        "alt",
        &["max_tokens", "unknownoutcome", "length", "refused"],
    ),
    (
        "info",
        &["paused_for_review", "blocked", "waiting", "turn_end"],
    ),
    (
        "none",
        &[
            "unsettled",
            "running",
            "-",
            "open",
            "(no result)",
            "(none)",
            "other",
        ],
    ),
];
const PALETTE: &[&str] = &["p0", "p1", "p2", "p3", "p4", "p5"];

/// Assigns colour classes to category keys, distinct within one chart.
#[derive(Default)]
struct Colours {
    given: HashMap<String, &'static str>,
}

impl Colours {
    fn of(&mut self, key: &str) -> &'static str {
        if let Some(c) = self.given.get(key) {
            return c;
        }
        let lower = key.to_ascii_lowercase();
        let used: Vec<&str> = self.given.values().copied().collect();
        let semantic = SEMANTIC
            .iter()
            .find(|(_, keys)| keys.contains(&lower.as_str()))
            .map(|(c, _)| *c)
            .filter(|c| !used.contains(c));
        let c = semantic.unwrap_or_else(|| {
            let start = key
                .bytes()
                .fold(0usize, |h, b| h.wrapping_mul(31) + b as usize);
            (0..PALETTE.len())
                .map(|i| PALETTE[(start + i) % PALETTE.len()])
                .find(|c| !used.contains(c))
                .unwrap_or(PALETTE[start % PALETTE.len()])
        });
        self.given.insert(key.to_string(), c);
        c
    }
}

/// One bar of a row: the cell as shown, its value (None = nothing to draw) and colour.
struct Bar {
    cell: String,
    value: Option<f64>,
    class: &'static str,
    series: String,
}

/// One row of a horizontal bar chart: a label and one or more bars.
struct BarRow {
    label: String,
    flagged: bool,
    bars: Vec<Bar>,
    note: Option<String>,
}

/// A "nice" axis step for values up to `max` with about `ticks` ticks.
pub(crate) fn nice_step(max: f64, ticks: f64) -> f64 {
    if max <= 0.0 {
        return 1.0;
    }
    let raw = max / ticks;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    // Counts have no fractional ticks.
    if max >= 1.0 {
        step.max(1.0)
    } else {
        step
    }
}

fn svg_open(out: &mut String, w: f64, h: f64, label: &str) {
    let _ = write!(
        out,
        r#"<svg viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" aria-label="{}">"#,
        escape(label),
        w = n(w),
        h = n(h)
    );
}

fn legend(out: &mut String, items: &[(String, &'static str)], y: f64, x0: f64) -> f64 {
    let mut x = x0;
    let mut y = y;
    for (name, class) in items {
        let text = truncate(name, MAX_LABEL_CHARS);
        let w = 18.0 + text.chars().count() as f64 * CHAR_W + 14.0;
        if x + w > CHART_W && x > x0 {
            x = x0;
            y += 18.0;
        }
        let _ = write!(
            out,
            r#"<rect x="{}" y="{}" width="11" height="11" rx="2" class="{class}"/><text x="{}" y="{}" class="t">{}</text>"#,
            n(x),
            n(y),
            n(x + 16.0),
            n(y + 10.0),
            escape(&text)
        );
        x += w;
    }
    y + 18.0
}

/// Horizontal bars, one group per row; `max` fixes the scale (e.g. 100 for rates).
fn hbars(
    title: &str,
    rows: &[BarRow],
    series: &[(String, &'static str)],
    max: Option<f64>,
    unit: &str,
) -> String {
    let mut out = String::new();
    let label_chars = rows
        .iter()
        .map(|r| truncate(&r.label, MAX_LABEL_CHARS).chars().count() + usize::from(r.flagged) * 2)
        .max()
        .unwrap_or(4);
    let label_w = (label_chars as f64 * CHAR_W + 12.0).clamp(60.0, 300.0);
    let note_w = rows
        .iter()
        .filter_map(|r| r.note.as_ref())
        .map(|t| t.chars().count() as f64 * CHAR_W + 8.0)
        .fold(0.0, f64::max);
    let value_w = rows
        .iter()
        .flat_map(|r| &r.bars)
        .map(|b| (b.cell.chars().count() as f64) * CHAR_W + 10.0)
        .fold(24.0, f64::max);
    let x0 = label_w;
    let plot_w = (CHART_W - x0 - value_w - note_w - 4.0).max(80.0);
    let per = rows.first().map_or(1, |r| r.bars.len().max(1));
    let bar_h = if per == 1 { 18.0 } else { 12.0 };
    let group_h = per as f64 * (bar_h + 2.0) - 2.0;
    let gap = if per == 1 { 6.0 } else { 10.0 };
    let legend_h = if series.len() > 1 {
        let mut probe = String::new();
        legend(&mut probe, series, 0.0, x0) + 4.0
    } else {
        0.0
    };
    let top = legend_h + 4.0;
    let h = top + rows.len() as f64 * (group_h + gap) + 22.0;
    let vmax = max.unwrap_or_else(|| {
        rows.iter()
            .flat_map(|r| &r.bars)
            .filter_map(|b| b.value)
            .fold(0.0, f64::max)
    });
    let step = nice_step(vmax, 4.0);
    let top_tick = (vmax / step).ceil().max(1.0) * step;
    let scale = |v: f64| x0 + plot_w * (v / top_tick);
    svg_open(&mut out, CHART_W, h, title);
    if series.len() > 1 {
        legend(&mut out, series, 2.0, x0);
    }
    let axis_y = h - 18.0;
    let mut t = 0.0;
    while t <= top_tick + 1e-9 {
        let x = scale(t);
        let _ = write!(
            out,
            r#"<line x1="{x}" y1="{}" x2="{x}" y2="{}" class="grid"/><text x="{x}" y="{}" class="m" text-anchor="middle">{}{unit}</text>"#,
            n(top - 2.0),
            n(axis_y),
            n(axis_y + 13.0),
            tick(t),
            x = n(x)
        );
        t += step;
    }
    for (i, r) in rows.iter().enumerate() {
        let gy = top + i as f64 * (group_h + gap);
        let label = truncate(&r.label, MAX_LABEL_CHARS);
        let _ = write!(
            out,
            r#"<text x="{}" y="{}" text-anchor="end" class="{}"><title>{}</title>{}{}</text>"#,
            n(x0 - 6.0),
            n(gy + group_h / 2.0 + 4.0),
            if r.flagged { "t flag" } else { "t" },
            escape(&r.label),
            if r.flagged { "⚠ " } else { "" },
            escape(&label)
        );
        let mut end_x: f64 = x0;
        for (j, b) in r.bars.iter().enumerate() {
            let y = gy + j as f64 * (bar_h + 2.0);
            let _ = write!(
                out,
                r#"<g class="bar" data-label="{}" data-series="{}" data-value="{}">"#,
                escape(&r.label),
                escape(&b.series),
                escape(&b.cell)
            );
            match b.value {
                Some(v) => {
                    let w = (scale(v) - x0).max(if v > 0.0 { 2.0 } else { 0.0 });
                    let _ = write!(
                        out,
                        r#"<rect x="{}" y="{}" width="{}" height="{}" rx="2" class="{}"><title>{}{}: {}</title></rect><text x="{}" y="{}" class="v">{}</text>"#,
                        n(x0),
                        n(y),
                        n(w),
                        n(bar_h),
                        b.class,
                        escape(&r.label),
                        if b.series.is_empty() {
                            String::new()
                        } else {
                            format!(" — {}", escape(&b.series))
                        },
                        escape(&b.cell),
                        n(x0 + w + 4.0),
                        n(y + bar_h / 2.0 + 4.0),
                        escape(&b.cell)
                    );
                    end_x = end_x.max(x0 + w + 4.0 + b.cell.chars().count() as f64 * CHAR_W);
                }
                None => {
                    let _ = write!(
                        out,
                        r#"<text x="{}" y="{}" class="m">n/a</text>"#,
                        n(x0 + 4.0),
                        n(y + bar_h / 2.0 + 4.0)
                    );
                    end_x = end_x.max(x0 + 4.0 + 3.0 * CHAR_W);
                }
            }
            out.push_str("</g>");
        }
        if let Some(note) = &r.note {
            let _ = write!(
                out,
                r#"<text x="{}" y="{}" class="t flag">{}</text>"#,
                n(end_x + 8.0),
                n(gy + group_h / 2.0 + 4.0),
                escape(note)
            );
        }
    }
    let _ = write!(
        out,
        r#"<line x1="{x}" y1="{}" x2="{x}" y2="{}" class="axis"/></svg>"#,
        n(top - 2.0),
        n(axis_y),
        x = n(x0)
    );
    out
}

/// Columns by name; `None` when the section lacks one (the chart is then left out).
fn cols(s: &Section, names: &[&str]) -> Option<Vec<usize>> {
    names
        .iter()
        .map(|c| s.columns.iter().position(|x| x == c))
        .collect()
}

/// A label from the non-`-` cells of some columns, joined with ` · `.
fn label_of(row: &[String], idx: &[usize]) -> String {
    let parts: Vec<&str> = idx
        .iter()
        .map(|&i| row[i].as_str())
        .filter(|v| *v != "-")
        .collect();
    if parts.is_empty() {
        "-".to_string()
    } else {
        parts.join(" · ")
    }
}

/// One bar per row: label columns, the value column, and the column that picks the colour.
fn simple_bars(
    s: &Section,
    title: &str,
    labels: &[&str],
    value: &str,
    colour_by: &str,
    colours: &mut Colours,
    keep: impl Fn(&[String]) -> bool,
) -> Option<String> {
    let li = cols(s, labels)?;
    let vi = cols(s, &[value, colour_by])?;
    let rows: Vec<BarRow> = s
        .rows
        .iter()
        .filter(|r| keep(r))
        .map(|r| BarRow {
            label: label_of(r, &li),
            flagged: false,
            bars: vec![Bar {
                cell: r[vi[0]].clone(),
                value: num(&r[vi[0]]),
                class: colours.of(&r[vi[1]]),
                series: String::new(),
            }],
            note: None,
        })
        .collect();
    if rows.is_empty() {
        return Some(empty_chart());
    }
    Some(hbars(title, &rows, &[], None, ""))
}

/// Bars of several numeric columns per row, one colour per column.
fn grouped_bars(
    s: &Section,
    title: &str,
    labels: &[&str],
    series: &[(&str, &str, &'static str)],
    max: Option<f64>,
    unit: &str,
    flag: Option<&str>,
) -> Option<String> {
    let li = cols(s, labels)?;
    let si = cols(s, &series.iter().map(|x| x.0).collect::<Vec<_>>())?;
    let fi = match flag {
        Some(f) => Some(cols(s, &[f])?[0]),
        None => None,
    };
    let rows: Vec<BarRow> = s
        .rows
        .iter()
        .map(|r| {
            let flagged_n = fi.and_then(|i| num(&r[i])).filter(|v| *v > 0.0);
            BarRow {
                label: label_of(r, &li),
                flagged: flagged_n.is_some(),
                bars: si
                    .iter()
                    .zip(series)
                    .map(|(&i, (_, name, class))| Bar {
                        cell: r[i].clone(),
                        value: num(&r[i]),
                        class: if flagged_n.is_some() && *class == "s-rec" {
                            "s-rec mismatch"
                        } else {
                            class
                        },
                        series: name.to_string(),
                    })
                    .collect(),
                note: fi
                    .filter(|_| flagged_n.is_some())
                    .map(|i| format!("{} mismatch", r[i])),
            }
        })
        .collect();
    if rows.is_empty() {
        return Some(empty_chart());
    }
    let legend: Vec<(String, &'static str)> = series
        .iter()
        .map(|(_, name, class)| (name.to_string(), *class))
        .collect();
    Some(hbars(title, &rows, &legend, max, unit))
}

/// The stack of an over-time row: the finish reason of a settled interval, else the status.
fn outcome_key(status: &str, reason: &str) -> String {
    match (status, reason) {
        ("settled", "-") => "settled".to_string(),
        ("settled", f) => f.to_string(),
        (st, "-") => st.to_string(),
        (st, f) => format!("{st} · {f}"),
    }
}

/// The stacks of the over-time chart in drawing order: settled finish reasons in first-seen
/// order (the rows come most common first), then `(other)`, then the statuses.
fn over_time_series(s: &Section) -> Vec<String> {
    let Some(idx) = cols(s, &["status", "finish_reason"]) else {
        return Vec::new();
    };
    let mut series: Vec<String> = Vec::new();
    for r in &s.rows {
        let k = outcome_key(&r[idx[0]], &r[idx[1]]);
        if !series.contains(&k) {
            series.push(k);
        }
    }
    series.sort_by_key(|k| {
        if k == "(other)" {
            1
        } else if k.starts_with("unsettled") || k.starts_with("protocol_error") {
            2
        } else {
            0
        }
    });
    series
}

/// Stacked columns over time: column 0 is the bucket, stacks keyed by [`outcome_key`].
fn over_time(s: &Section, title: &str, colours: &mut Colours) -> Option<String> {
    let idx = cols(s, &["status", "finish_reason", "intervals"])?;
    if s.rows.is_empty() {
        return Some(empty_chart());
    }
    let key = |r: &[String]| outcome_key(&r[idx[0]], &r[idx[1]]);
    let mut buckets: Vec<&str> = Vec::new();
    for r in &s.rows {
        if !buckets.contains(&r[0].as_str()) {
            buckets.push(&r[0]);
        }
    }
    let series = over_time_series(s);
    let legend_items: Vec<(String, &'static str)> =
        series.iter().map(|k| (k.clone(), colours.of(k))).collect();
    // Stack heights per bucket are only for the scale; the figures are the section's cells.
    let mut height: HashMap<&str, f64> = HashMap::new();
    for r in &s.rows {
        *height.entry(&r[0]).or_default() += num(&r[idx[2]]).unwrap_or(0.0);
    }
    let vmax = height.values().copied().fold(0.0, f64::max);
    let step = nice_step(vmax, 4.0);
    let top_tick = (vmax / step).ceil().max(1.0) * step;

    let mut out = String::new();
    let x0 = 10.0 + tick(top_tick).len() as f64 * CHAR_W;
    let mut probe = String::new();
    let legend_h = legend(&mut probe, &legend_items, 0.0, x0) + 6.0;
    let plot_top = legend_h + 6.0;
    let plot_h = 200.0;
    let label_chars = buckets.iter().map(|b| b.chars().count()).max().unwrap_or(4);
    let plot_w = CHART_W - x0 - 10.0;
    let slot = plot_w / buckets.len() as f64;
    let col_w = (slot * 0.7).min(56.0);
    // Show every k-th bucket label so that labels never overlap.
    let every = ((label_chars as f64 * CHAR_W + 8.0) / slot).ceil().max(1.0) as usize;
    let h = plot_top + plot_h + 24.0;
    let base = plot_top + plot_h;
    let y = |v: f64| base - plot_h * (v / top_tick);
    svg_open(&mut out, CHART_W, h, title);
    legend(&mut out, &legend_items, 2.0, x0);
    let mut t = 0.0;
    while t <= top_tick + 1e-9 {
        let _ = write!(
            out,
            r#"<line x1="{}" y1="{yy}" x2="{}" y2="{yy}" class="grid"/><text x="{}" y="{}" class="m" text-anchor="end">{}</text>"#,
            n(x0),
            n(CHART_W - 10.0),
            n(x0 - 4.0),
            n(y(t) + 4.0),
            tick(t),
            yy = n(y(t))
        );
        t += step;
    }
    let mut last_label_end = f64::NEG_INFINITY;
    for (bi, b) in buckets.iter().enumerate() {
        let cx = x0 + slot * (bi as f64 + 0.5);
        let mut acc = 0.0;
        for k in &series {
            for r in s.rows.iter().filter(|r| r[0] == *b && key(r) == *k) {
                let v = num(&r[idx[2]]).unwrap_or(0.0);
                let (y1, y2) = (y(acc + v), y(acc));
                let _ = write!(
                    out,
                    r#"<g class="bar" data-label="{}" data-series="{}" data-value="{}"><rect x="{}" y="{}" width="{}" height="{}" class="{} seg"><title>{} — {}: {}</title></rect></g>"#,
                    escape(b),
                    escape(k),
                    escape(&r[idx[2]]),
                    n(cx - col_w / 2.0),
                    n(y1),
                    n(col_w),
                    n(y2 - y1),
                    colours.of(k),
                    escape(b),
                    escape(k),
                    escape(&r[idx[2]])
                );
                acc += v;
            }
        }
        // A label stays inside the chart and clear of the one before it.
        let half = b.chars().count() as f64 * CHAR_W * 0.95 / 2.0;
        let lx = cx.clamp(half, CHART_W - half);
        if bi % every == 0 && lx - half >= last_label_end + 6.0 {
            let _ = write!(
                out,
                r#"<text x="{}" y="{}" class="m" text-anchor="middle">{}</text>"#,
                n(lx),
                n(base + 15.0),
                escape(b)
            );
            last_label_end = lx + half;
        }
    }
    let _ = write!(
        out,
        r#"<line x1="{}" y1="{b}" x2="{}" y2="{b}" class="axis"/></svg>"#,
        n(x0),
        n(CHART_W - 10.0),
        b = n(base)
    );
    Some(out)
}

fn empty_chart() -> String {
    r#"<p class="empty">no rows</p>"#.to_string()
}

/// The charts of a section: (chart id, caption, svg). Sections without a chart spec get none.
/// `outcomes` colours finish reasons alike in the finish-reason and over-time charts.
fn charts(s: &Section, outcomes: &mut Colours) -> Vec<(&'static str, String, String)> {
    let mut out = Vec::new();
    let mut add = |id: &'static str, caption: &str, svg: Option<String>| {
        if let Some(svg) = svg {
            out.push((id, caption.to_string(), svg));
        }
    };
    match s.id.as_str() {
        "finish_classes" => add(
            "finish_classes",
            "Intervals by finish class (the raw finish reasons of each class: see the table)",
            simple_bars(
                s,
                "Intervals by finish class",
                &["finish_class"],
                "intervals",
                "finish_class",
                &mut Colours::default(),
                |r| cols(s, &["finish_reason"]).is_some_and(|i| r[i[0]] == "(all)"),
            ),
        ),
        "finish_reasons" => add(
            "finish_reasons",
            "Finish reasons of settled intervals (unsettled and protocol errors: see the table and Intervals by status)",
            simple_bars(
                s,
                "Finish reasons of settled intervals",
                &["finish_reason"],
                "intervals",
                "finish_reason",
                outcomes,
                |r| cols(s, &["status"]).is_some_and(|i| r[i[0]] == "settled"),
            ),
        ),
        "interval_status" => add(
            "interval_status",
            "Intervals by status",
            simple_bars(
                s,
                "Intervals by status",
                &["status"],
                "intervals",
                "status",
                &mut Colours::default(),
                |_| true,
            ),
        ),
        "finish_reasons_over_time" => add(
            "finish_reasons_over_time",
            "Intervals per bucket, stacked by finish reason (settled) or status",
            over_time(s, "Finish reasons over time", outcomes),
        ),
        "turn_states" => add(
            "turn_states",
            "Turns by state and detail, coloured by state",
            simple_bars(
                s,
                "Turn states",
                &["state", "detail"],
                "turns",
                "state",
                &mut Colours::default(),
                |_| true,
            ),
        ),
        "error_codes" => {
            add(
                "error_codes_retryable",
                "Errors per code and how many were retryable: as recorded vs as the code table expects (⚠ = mismatches)",
                grouped_bars(
                    s,
                    "Error codes: retryable recorded vs expected",
                    &["code"],
                    &[
                        ("errors", "errors", "s-total"),
                        ("recorded_retryable", "retryable (recorded)", "s-rec"),
                        ("expected_retryable", "retryable (expected)", "s-exp"),
                    ],
                    None,
                    "",
                    Some("mismatches"),
                ),
            );
            add(
                "error_codes_rates",
                "Share of model errors retried and recovered, per code (n/a = no model errors)",
                grouped_bars(
                    s,
                    "Error codes: retried and recovered rates",
                    &["code"],
                    &[
                        ("retried", "retried", "s-rec"),
                        ("recovered", "recovered", "ok"),
                    ],
                    Some(100.0),
                    "%",
                    None,
                ),
            );
        }
        "runs" => add(
            "runs",
            "Run attempts by how they settled, coloured by settle",
            simple_bars(
                s,
                "Run attempts by settle",
                &["settle", "output_status", "wait_for"],
                "attempts",
                "settle",
                &mut Colours::default(),
                |_| true,
            ),
        ),
        "tool_calls" => add(
            "tool_calls",
            "Tool calls by outcome",
            simple_bars(
                s,
                "Tool-call outcomes",
                &["status"],
                "calls",
                "status",
                &mut Colours::default(),
                |_| true,
            ),
        ),
        "callbacks" => add(
            "callbacks",
            "Callbacks by kind, coloured by how they closed",
            simple_bars(
                s,
                "Callbacks",
                &["kind", "closed_by"],
                "callbacks",
                "closed_by",
                &mut Colours::default(),
                |_| true,
            ),
        ),
        "tokens" => add(
            "tokens",
            "Input and output tokens by status and finish reason",
            grouped_bars(
                s,
                "Tokens by finish reason",
                &["status", "finish_reason"],
                &[
                    ("input_tokens", "input tokens", "s-rec"),
                    ("output_tokens", "output tokens", "s-exp"),
                ],
                None,
                "",
                None,
            ),
        ),
        _ => {}
    }
    out
}

fn table(out: &mut String, s: &Section) {
    let flag = s.columns.iter().position(|c| c == "mismatches");
    table_flagged(out, s, &|r: &[String]| {
        flag.is_some_and(|i| r.get(i).and_then(|v| num(v)).is_some_and(|v| v > 0.0))
    });
}

/// A section's table, with the rows `flagged` picks marked.
fn table_flagged(out: &mut String, s: &Section, flagged: &dyn Fn(&[String]) -> bool) {
    if s.rows.is_empty() {
        let _ = write!(
            out,
            r#"<p class="empty" data-table="{}">(none)</p>"#,
            escape(&s.id)
        );
        return;
    }
    let _ = write!(
        out,
        r#"<div class="tablewrap"><table data-table="{}"><thead><tr>"#,
        escape(&s.id)
    );
    // A column of numbers (and `-`) is right-aligned, header included.
    let numeric: Vec<bool> = (0..s.columns.len())
        .map(|i| {
            let cells = || s.rows.iter().filter_map(|r| r.get(i));
            cells().any(|v| is_numeric(v)) && cells().all(|v| is_numeric(v) || v == "-")
        })
        .collect();
    for (c, &num) in s.columns.iter().zip(&numeric) {
        let _ = write!(
            out,
            "<th{}>{}</th>",
            if num { r#" class="num""# } else { "" },
            escape(c)
        );
    }
    out.push_str("</tr></thead><tbody>");
    for r in &s.rows {
        out.push_str(if flagged(r) {
            r#"<tr class="flagged">"#
        } else {
            "<tr>"
        });
        for (i, v) in r.iter().enumerate() {
            let _ = write!(
                out,
                r#"<td{}>{}</td>"#,
                if numeric.get(i).copied().unwrap_or(false) {
                    r#" class="num""#
                } else {
                    ""
                },
                escape(v)
            );
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table></div>");
}

/// Friendly names of the totals in the header tiles.
const TILES: &[(&str, &str)] = &[
    ("agents", "agents"),
    ("intervals", "intervals"),
    ("events", "events"),
    ("rejects", "rejects"),
    ("turns", "turns"),
    ("errors", "errors"),
    ("files", "input files"),
];

fn header(out: &mut String, r: &Report) {
    let get = |k: &str| {
        r.totals
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.as_str())
    };
    out.push_str(r#"<header><h1>runlog report</h1><dl class="facts">"#);
    if let Some(inputs) = get("inputs") {
        let _ = write!(
            out,
            r#"<div><dt>inputs</dt><dd data-total="inputs">{}</dd></div>"#,
            escape(inputs)
        );
    }
    if let Some(w) = get("window") {
        let _ = write!(
            out,
            r#"<div><dt>window</dt><dd data-total="window">{}</dd></div>"#,
            escape(w)
        );
    }
    if let (Some(a), Some(b)) = (get("first_event"), get("last_event")) {
        let _ = write!(
            out,
            r#"<div><dt>time span</dt><dd data-total="span">{} → {}{}</dd></div>"#,
            escape(a),
            escape(b),
            get("span")
                .map(|s| format!(" ({})", escape(s)))
                .unwrap_or_default()
        );
    }
    out.push_str(r#"</dl><dl class="tiles">"#);
    let shown = ["inputs", "window", "first_event", "last_event", "span"];
    let mut tiles: Vec<(String, &str)> = TILES
        .iter()
        .filter_map(|(k, name)| get(k).map(|v| (name.to_string(), v)))
        .collect();
    for (k, v) in &r.totals {
        if !shown.contains(&k.as_str()) && !TILES.iter().any(|(t, _)| t == k) {
            tiles.push((k.clone(), v));
        }
    }
    for (name, v) in tiles {
        let warn = name == "rejects" && num(v).is_some_and(|x| x > 0.0);
        let _ = write!(
            out,
            r#"<div class="tile{}"><dd>{}</dd><dt>{}</dt></div>"#,
            if warn { " warn" } else { "" },
            escape(v),
            escape(&name)
        );
    }
    out.push_str("</dl></header>");
}

const LIGHT: &str = "--bg:#f6f7f9;--card:#fff;--fg:#1c1e21;--muted:#5d636b;--border:#e2e5e9;\
--grid:#e6e8eb;--axis:#9aa0a6;--flag:#c62828;--flagbg:#fdecea;\
--ok:#2e7d32;--bad:#c62828;--warn:#e56b00;--alt:#7b1fa2;--info:#1565c0;--none:#a3a8ae;\
--p0:#00838f;--p1:#ad1457;--p2:#b08900;--p3:#6d4c41;--p4:#455a64;--p5:#3949ab;\
--s-total:#9fb3c2;--s-rec:#1565c0;--s-exp:#26a69a;";
const DARK: &str = "--bg:#111315;--card:#1a1d21;--fg:#e6e8eb;--muted:#a0a6ad;--border:#2c3137;\
--grid:#2a2f35;--axis:#6b727a;--flag:#ff6b6b;--flagbg:#3a1f22;\
--ok:#66bb6a;--bad:#ef5350;--warn:#ffa040;--alt:#ce93d8;--info:#64b5f6;--none:#7d848c;\
--p0:#4dd0e1;--p1:#f06292;--p2:#ffd54f;--p3:#bcaaa4;--p4:#b0bec5;--p5:#9fa8da;\
--s-total:#56697a;--s-rec:#64b5f6;--s-exp:#4db6ac;";

fn style() -> String {
    let fills: String = [
        "ok", "bad", "warn", "alt", "info", "none", "p0", "p1", "p2", "p3", "p4", "p5", "s-total",
        "s-rec", "s-exp",
    ]
    .iter()
    .map(|c| format!(".{c}{{fill:var(--{c})}}"))
    .collect();
    format!(
        ":root{{color-scheme:light dark;{LIGHT}}}\
@media (prefers-color-scheme:dark){{:root{{{DARK}}}}}\
*{{box-sizing:border-box}}\
body{{margin:0;background:var(--bg);color:var(--fg);font:14px/1.45 system-ui,-apple-system,\"Segoe UI\",Roboto,\"Helvetica Neue\",Arial,sans-serif}}\
main{{max-width:1200px;margin:0 auto;padding:20px 24px 40px}}\
h1{{font-size:24px;margin:0 0 8px}}h2{{font-size:17px;margin:0 0 2px}}\
.facts{{margin:0 0 12px;display:grid;gap:2px}}.facts div{{display:flex;gap:10px}}\
.facts dt{{color:var(--muted);min-width:72px}}.facts dd{{margin:0;overflow-wrap:anywhere}}\
.tiles{{display:flex;flex-wrap:wrap;gap:10px;margin:0}}\
.tile{{background:var(--card);border:1px solid var(--border);border-radius:8px;padding:8px 14px;min-width:96px}}\
.tile dd{{margin:0;font-size:22px;font-weight:600;font-variant-numeric:tabular-nums}}\
.tile dt{{color:var(--muted);font-size:12px}}.tile.warn dd{{color:var(--flag)}}\
nav{{margin:16px 0 4px;font-size:13px;display:flex;flex-wrap:wrap;gap:4px 14px}}\
nav a{{color:var(--info);text-decoration:none}}nav a:hover{{text-decoration:underline}}\
.card{{background:var(--card);border:1px solid var(--border);border-radius:10px;padding:16px 20px;margin:16px 0;break-inside:avoid}}\
.note{{color:var(--muted);font-size:13px;margin:0 0 12px}}\
.pair{{display:flex;flex-wrap:wrap;gap:16px 28px;align-items:flex-start}}\
.charts{{flex:0 1 560px;min-width:0;display:grid;gap:14px}}\
.charts.multi{{flex-basis:100%;grid-template-columns:repeat(auto-fit,minmax(min(100%,480px),1fr))}}\
figure{{margin:0}}figcaption{{color:var(--muted);font-size:12px;margin:0 0 6px}}\
svg{{display:block;max-width:100%;height:auto;font-size:12px;font-family:inherit}}\
svg .t{{fill:var(--fg)}}svg .m{{fill:var(--muted);font-size:11px}}svg .v{{fill:var(--fg);font-size:11px;font-variant-numeric:tabular-nums}}\
svg .flag{{fill:var(--flag);font-weight:600}}svg .grid{{stroke:var(--grid)}}svg .axis{{stroke:var(--axis)}}\
svg .mismatch{{stroke:var(--flag);stroke-width:2}}svg .seg{{stroke:var(--card);stroke-width:1}}\
{fills}\
.tablewrap{{flex:1 1 auto;min-width:0;max-width:100%;overflow-x:auto}}\
table{{border-collapse:collapse;font-size:13px;font-variant-numeric:tabular-nums}}\
th,td{{padding:3px 10px;border-bottom:1px solid var(--border);text-align:left;white-space:nowrap}}\
th{{color:var(--muted);font-weight:600;font-size:12px}}.num{{text-align:right}}\
tr.flagged td{{background:var(--flagbg);color:var(--flag)}}\
.empty{{color:var(--muted);font-style:italic}}\
footer{{color:var(--muted);font-size:12px;margin-top:24px}}\
@media print{{:root{{{LIGHT}--bg:#fff;--card:#fff}}\
*{{-webkit-print-color-adjust:exact;print-color-adjust:exact}}\
body{{font-size:10pt}}main{{max-width:none;padding:0}}nav{{display:none}}\
.card{{border:1px solid #ccc;border-radius:0;padding:8px 10px;margin:8px 0;break-inside:avoid;page-break-inside:avoid}}\
.tablewrap{{overflow:visible}}th,td{{padding:1px 6px}}}}"
    )
}

/// The page's head and the opening of its body.
fn page_open(out: &mut String, title: &str) {
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<meta name=\"color-scheme\" content=\"light dark\">\
<title>{}</title><style>{}</style></head><body><main>",
        escape(title),
        style()
    );
}

/// Renders the report as one self-contained HTML page.
pub fn render_html(r: &Report) -> String {
    let mut out = String::with_capacity(32 * 1024);
    page_open(&mut out, "runlog report");
    header(&mut out, r);
    out.push_str("<nav>");
    for s in &r.sections {
        let _ = write!(
            out,
            r##"<a href="#s-{}">{}</a>"##,
            escape(&s.id),
            escape(&s.title)
        );
    }
    out.push_str("</nav>");
    // Finish reasons get the same colour in every chart; the over-time stacks pick first so
    // that they are told apart.
    let mut outcomes = Colours::default();
    if let Some(s) = r
        .sections
        .iter()
        .find(|s| s.id == "finish_reasons_over_time")
    {
        for k in over_time_series(s) {
            outcomes.of(&k);
        }
    }
    for s in &r.sections {
        let _ = write!(
            out,
            r#"<section class="card" id="s-{id}" data-section="{id}"><h2>{}</h2><p class="note">{}</p>"#,
            escape(&s.title),
            escape(&s.note),
            id = escape(&s.id)
        );
        let figs = charts(s, &mut outcomes);
        out.push_str(r#"<div class="pair">"#);
        if !figs.is_empty() {
            out.push_str(if figs.len() > 1 {
                r#"<div class="charts multi">"#
            } else {
                r#"<div class="charts">"#
            });
            for (id, caption, svg) in figs {
                let _ = write!(
                    out,
                    r#"<figure class="chart" data-chart="{id}"><figcaption>{}</figcaption>{svg}</figure>"#,
                    escape(&caption)
                );
            }
            out.push_str("</div>");
        }
        table(&mut out, s);
        out.push_str("</div></section>");
    }
    let _ = writeln!(
        out,
        "<footer>runlog {} — the charts draw the rows of the tables beside them, the same figures as <code>runlog report</code>.</footer></main></body></html>",
        escape(env!("CARGO_PKG_VERSION"))
    );
    out
}

/// The side-by-side chart of a compared section: per row a baseline and a current bar of
/// its share (or, without shares, its count); rows with a significant shift of that figure
/// are flagged with their change.
fn comparison_chart(s: &ComparedSection) -> Option<String> {
    let mi = s
        .measures
        .iter()
        .position(|m| m == "share")
        .or_else(|| (!s.measures.is_empty()).then_some(0))?;
    let is_share = s.measures[mi] == "share";
    let rows: Vec<BarRow> = s
        .rows
        .iter()
        .filter_map(|r| {
            let m = r.measures.get(mi)?;
            let cell = |v: Option<f64>| match v {
                None => "-".to_string(),
                Some(v) if is_share => format!("{v:.1}%"),
                Some(v) => fmt_num(v),
            };
            let parts: Vec<&str> = r
                .key
                .iter()
                .map(String::as_str)
                .filter(|v| *v != "-")
                .collect();
            Some(BarRow {
                label: if parts.is_empty() {
                    "-".to_string()
                } else {
                    parts.join(" · ")
                },
                flagged: m.significant,
                bars: vec![
                    Bar {
                        cell: cell(m.baseline),
                        value: m.baseline,
                        class: "s-total",
                        series: "baseline".to_string(),
                    },
                    Bar {
                        cell: cell(m.current),
                        value: m.current,
                        class: "s-rec",
                        series: "current".to_string(),
                    },
                ],
                note: m.significant.then(|| fmt_pp(m.change.unwrap_or(0.0))),
            })
        })
        .collect();
    if rows.is_empty() {
        return Some(empty_chart());
    }
    let series = [
        ("baseline".to_string(), "s-total"),
        ("current".to_string(), "s-rec"),
    ];
    Some(hbars(
        &s.title,
        &rows,
        &series,
        None,
        if is_share { "%" } else { "" },
    ))
}

/// Renders a baseline comparison as one self-contained HTML page: the two sides and the
/// test in the header, then per section side-by-side bars (baseline, current) beside the
/// table of every compared figure, significant shifts flagged.
pub fn render_comparison_html(c: &Comparison) -> String {
    let mut out = String::with_capacity(64 * 1024);
    page_open(&mut out, "runlog report — baseline vs current");
    let _ = write!(
        out,
        r#"<header><h1>runlog report — baseline vs current</h1><dl class="facts"><div><dt>baseline</dt><dd data-side="baseline">{}</dd></div><div><dt>current</dt><dd data-side="current">{}</dd></div><div><dt>test</dt><dd data-rule="holm" data-alpha="{}" data-tests="{}" data-significant="{}">{}</dd></div></dl></header>"#,
        escape(&side_line(&c.baseline_totals)),
        escape(&side_line(&c.current_totals)),
        c.alpha,
        c.tests,
        c.significant(),
        escape(&c.rule_line())
    );
    let totals = totals_table(c);
    out.push_str("<nav>");
    let _ = write!(
        out,
        r##"<a href="#s-totals">{}</a>"##,
        escape(&totals.title)
    );
    for s in &c.sections {
        let _ = write!(
            out,
            r##"<a href="#s-{}">{}</a>"##,
            escape(&s.id),
            escape(&s.title)
        );
    }
    out.push_str("</nav>");
    let _ = write!(
        out,
        r#"<section class="card" id="s-totals" data-section="totals"><h2>{}</h2><p class="note">{}</p><div class="pair">"#,
        escape(&totals.title),
        escape(&totals.note)
    );
    table(&mut out, &totals);
    out.push_str("</div></section>");
    for s in &c.sections {
        let _ = write!(
            out,
            r#"<section class="card" id="s-{id}" data-section="{id}"><h2>{}</h2><p class="note">{}</p><div class="pair">"#,
            escape(&s.title),
            escape(&s.note),
            id = escape(&s.id)
        );
        // Over time the rows are buckets of each side's own span: a table only.
        if s.id != "finish_reasons_over_time" {
            if let Some(svg) = comparison_chart(s) {
                let _ = write!(
                    out,
                    r#"<div class="charts"><figure class="chart" data-chart="{}"><figcaption>baseline vs current (⚠ = significant shift)</figcaption>{svg}</figure></div>"#,
                    escape(&s.id)
                );
            }
        }
        let t = as_table(s);
        let shift = t.columns.iter().position(|x| x == SHIFT_COLUMN);
        table_flagged(&mut out, &t, &|r: &[String]| {
            shift.is_some_and(|i| r.get(i).is_some_and(|v| !v.is_empty()))
        });
        out.push_str("</div></section>");
    }
    let _ = writeln!(
        out,
        "<footer>runlog {} — each side's figures are those of its plain <code>runlog report</code>; p = Holm-adjusted two-sided p-value.</footer></main></body></html>",
        escape(env!("CARGO_PKG_VERSION"))
    );
    out
}
