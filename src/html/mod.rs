//! HTML report: renders a [`Report`] as one self-contained page that people would rather
//! look at than read — inline CSS and hand-written inline SVG charts, no scripts, fonts,
//! images or network — so it can be opened from a laptop or attached to an incident review.
//!
//! It computes no figures of its own: every chart draws rows of a report section and sits
//! beside that section's table, so the page, `runlog report` and its JSON/Markdown are
//! renderings of the same [`Report`] value built once by [`crate::report::build`].
//! Every string from the data (ids, codes, file names) is HTML-escaped. A baseline
//! comparison ([`crate::baseline`]) gets its page the same way, with side-by-side bars.

mod bars;
mod charts;
mod comparison;
mod page;

use std::fmt::Write as _;

use crate::baseline::{as_table, side_line, totals_table, Comparison, SHIFT_COLUMN};
use crate::report::Report;
use bars::Colours;
use charts::{charts, over_time_series};
use comparison::comparison_chart;
use page::{header, page_open, table, table_flagged};

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
