//! The page skeleton: style sheet (light and dark), the page head, the header with its
//! totals tiles, and a section's table.

use std::fmt::Write as _;

use super::escape;
use crate::report::{cell_number as num, is_numeric, Report, Section};

pub(super) fn table(out: &mut String, s: &Section) {
    let flag = s.columns.iter().position(|c| c == "mismatches");
    table_flagged(out, s, &|r: &[String]| {
        flag.is_some_and(|i| r.get(i).and_then(|v| num(v)).is_some_and(|v| v > 0.0))
    });
}

/// A section's table, with the rows `flagged` picks marked.
pub(super) fn table_flagged(out: &mut String, s: &Section, flagged: &dyn Fn(&[String]) -> bool) {
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
pub(super) const TILES: &[(&str, &str)] = &[
    ("agents", "agents"),
    ("intervals", "intervals"),
    ("events", "events"),
    ("rejects", "rejects"),
    ("turns", "turns"),
    ("errors", "errors"),
    ("files", "input files"),
];

pub(super) fn header(out: &mut String, r: &Report) {
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

pub(super) const LIGHT: &str =
    "--bg:#f6f7f9;--card:#fff;--fg:#1c1e21;--muted:#5d636b;--border:#e2e5e9;\
--grid:#e6e8eb;--axis:#9aa0a6;--flag:#c62828;--flagbg:#fdecea;\
--ok:#2e7d32;--bad:#c62828;--warn:#e56b00;--alt:#7b1fa2;--info:#1565c0;--none:#a3a8ae;\
--p0:#00838f;--p1:#ad1457;--p2:#b08900;--p3:#6d4c41;--p4:#455a64;--p5:#3949ab;\
--s-total:#9fb3c2;--s-rec:#1565c0;--s-exp:#26a69a;";
pub(super) const DARK: &str =
    "--bg:#111315;--card:#1a1d21;--fg:#e6e8eb;--muted:#a0a6ad;--border:#2c3137;\
--grid:#2a2f35;--axis:#6b727a;--flag:#ff6b6b;--flagbg:#3a1f22;\
--ok:#66bb6a;--bad:#ef5350;--warn:#ffa040;--alt:#ce93d8;--info:#64b5f6;--none:#7d848c;\
--p0:#4dd0e1;--p1:#f06292;--p2:#ffd54f;--p3:#bcaaa4;--p4:#b0bec5;--p5:#9fa8da;\
--s-total:#56697a;--s-rec:#64b5f6;--s-exp:#4db6ac;";

pub(super) fn style() -> String {
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
pub(super) fn page_open(out: &mut String, title: &str) {
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
