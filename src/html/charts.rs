//! The charts of a report's sections: which rows of which section each chart draws (bars,
//! grouped bars, finish reasons over time), colour keys shared across charts.

use std::collections::HashMap;
use std::fmt::Write as _;

use super::bars::{hbars, legend, svg_open, Bar, BarRow, Colours};
use super::{escape, n, nice_step, tick, CHART_W, CHAR_W};
use crate::report::{cell_number as num, Section};

/// Columns by name; `None` when the section lacks one (the chart is then left out).
pub(super) fn cols(s: &Section, names: &[&str]) -> Option<Vec<usize>> {
    names
        .iter()
        .map(|c| s.columns.iter().position(|x| x == c))
        .collect()
}

/// A label from the non-`-` cells of some columns, joined with ` · `.
pub(super) fn label_of(row: &[String], idx: &[usize]) -> String {
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
pub(super) fn simple_bars(
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
pub(super) fn grouped_bars(
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
pub(super) fn outcome_key(status: &str, reason: &str) -> String {
    match (status, reason) {
        ("settled", "-") => "settled".to_string(),
        ("settled", f) => f.to_string(),
        (st, "-") => st.to_string(),
        (st, f) => format!("{st} · {f}"),
    }
}

/// The stacks of the over-time chart in drawing order: settled finish reasons in first-seen
/// order (the rows come most common first), then `(other)`, then the statuses.
pub(super) fn over_time_series(s: &Section) -> Vec<String> {
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
pub(super) fn over_time(s: &Section, title: &str, colours: &mut Colours) -> Option<String> {
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

pub(super) fn empty_chart() -> String {
    r#"<p class="empty">no rows</p>"#.to_string()
}

/// The charts of a section: (chart id, caption, svg). Sections without a chart spec get none.
/// `outcomes` colours finish reasons alike in the finish-reason and over-time charts.
pub(super) fn charts(s: &Section, outcomes: &mut Colours) -> Vec<(&'static str, String, String)> {
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
            for (id, caption, svg) in error_code_charts(s) {
                add(id, caption, svg);
            }
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

/// The two charts of the error-code section: retryable recorded vs expected, and the
/// retried and recovered rates.
fn error_code_charts(s: &Section) -> [(&'static str, &'static str, Option<String>); 2] {
    [
        (
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
        ),
        (
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
        ),
    ]
}
