//! The drawing of bar charts: colour classes (a few with a meaning, then a palette), the SVG
//! frame, legends, and horizontal bars with their axis and labels.

use std::collections::HashMap;
use std::fmt::Write as _;

use super::{escape, n, nice_step, tick, truncate, CHART_W, CHAR_W, MAX_LABEL_CHARS};

/// Colour classes: a few with a meaning, then a palette for everything else.
pub(super) const SEMANTIC: &[(&str, &[&str])] = &[
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
pub(super) const PALETTE: &[&str] = &["p0", "p1", "p2", "p3", "p4", "p5"];

/// Assigns colour classes to category keys, distinct within one chart.
#[derive(Default)]
pub(super) struct Colours {
    given: HashMap<String, &'static str>,
}

impl Colours {
    pub(super) fn of(&mut self, key: &str) -> &'static str {
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
pub(super) struct Bar {
    pub(super) cell: String,
    pub(super) value: Option<f64>,
    pub(super) class: &'static str,
    pub(super) series: String,
}

/// One row of a horizontal bar chart: a label and one or more bars.
pub(super) struct BarRow {
    pub(super) label: String,
    pub(super) flagged: bool,
    pub(super) bars: Vec<Bar>,
    pub(super) note: Option<String>,
}

pub(super) fn svg_open(out: &mut String, w: f64, h: f64, label: &str) {
    let _ = write!(
        out,
        r#"<svg viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" aria-label="{}">"#,
        escape(label),
        w = n(w),
        h = n(h)
    );
}

pub(super) fn legend(out: &mut String, items: &[(String, &'static str)], y: f64, x0: f64) -> f64 {
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
pub(super) fn hbars(
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
