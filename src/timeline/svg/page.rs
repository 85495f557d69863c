//! The timeline page around the plot: drawing order (rows, lanes, spawn links, axis), the
//! details' JSON within its budget, the head with the agent's facts, the notes and legend.

use std::fmt::Write as _;

use serde_json::Value;

use super::assets::STYLE;
use super::lane::lane;
use super::rows::{axis, intervals, runs};
use super::{
    token, Page, PageOptions, AXIS_H, LANE_GAP, MAX_DETAIL_BYTES, MAX_MODEL_MARKS, MAX_TOOL_MARKS,
    ROW_H,
};
use crate::html::{escape, n, truncate};
use crate::timeline::Timeline;
use runlog_core::event::format_ts;

/// Draws the rows, the lanes and the spawn links, then the axis under them: the plot's
/// height.
pub(super) fn draw(p: &mut Page, model_bins: bool, tool_bins: bool) -> f64 {
    let t = p.t;
    // Rows first (their height decides the axis' grid lines), into the plot after the axis.
    let mut y = AXIS_H;
    intervals(p, y);
    y += ROW_H + 2.0;
    if !t.derived.runs.is_empty() {
        runs(p, y);
        y += ROW_H + 2.0;
    }
    y += LANE_GAP;
    let mut lanes = Vec::with_capacity(t.sessions.len());
    for k in 0..t.sessions.len() {
        let (next, rows) = lane(p, k, y, model_bins, tool_bins);
        lanes.push(rows);
        y = next;
    }
    // Spawn links: from the spawning turn's row, at the session/start, down to the lane.
    for (k, sess) in t.sessions.iter().enumerate() {
        let (Some(parent), Some(seq)) = (&sess.parent, sess.start_seq) else {
            continue;
        };
        let Some(pl) = t.lane_of(parent) else {
            continue;
        };
        let x = n(p.s.x(seq));
        let _ = write!(
            p.plot,
            r#"<path class="tl-spawn" d="M{x} {}V{}"/>"#,
            n(lanes[pl].turns_y + ROW_H / 2.0),
            n(lanes[k].turns_y + ROW_H / 2.0)
        );
    }
    let height = y;
    let body = std::mem::take(&mut p.plot);
    axis(p, height);
    p.plot.push_str(&body);
    height
}

/// The details as JSON for the page. Past the budget, details lose first the state records,
/// then long texts, then all but what locates the element in the tables: the JSON, and how
/// many of these steps were taken (the page says which).
pub(super) fn details_json(details: &mut [Value]) -> (String, usize) {
    let mut reduced = 0;
    let mut data = serde_json::to_string(&*details).unwrap_or_else(|_| "[]".into());
    while data.len() > MAX_DETAIL_BYTES && reduced < 3 {
        reduced += 1;
        for d in details.iter_mut() {
            if let Value::Object(o) = d {
                match reduced {
                    1 => {
                        o.remove("state_record");
                    }
                    2 => {
                        o.retain(|_, v| !v.is_null());
                        for v in o.values_mut() {
                            if let Value::String(s) = v {
                                if s.chars().count() > 40 {
                                    *s = truncate(s, 40);
                                }
                            }
                        }
                    }
                    _ => o.retain(|k, _| {
                        matches!(k.as_str(), "kind" | "seq" | "count" | "session" | "turn")
                    }),
                }
            }
        }
        data = serde_json::to_string(&*details).unwrap_or_else(|_| "[]".into());
    }
    (data, reduced)
}

/// The page's head, title, back link, note and the agent's facts.
pub(super) fn head(out: &mut String, t: &Timeline, opts: &PageOptions) {
    let d = &t.derived;
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<meta name=\"color-scheme\" content=\"light dark\">\
<title>runlog timeline: {}</title><style>{STYLE}</style></head><body><main>",
        escape(&t.root)
    );
    if let Some((href, text)) = &opts.back {
        let _ = write!(
            out,
            r#"<p class="back"><a id="back" href="{}">← {}</a></p>"#,
            escape(href),
            escape(text)
        );
    }
    let _ = write!(out, r#"<h1>Agent <code>{}</code></h1>"#, escape(&t.root));
    if let Some(note) = &opts.note {
        let _ = write!(out, r#"<p class="note why">{}</p>"#, escape(note));
    }
    let facts: Vec<(&str, String)> = vec![
        ("events", t.events.to_string()),
        ("seq", format!("{} – {}", t.first_seq, t.last_seq)),
        (
            "time",
            format!("{} – {}", format_ts(t.first_ts), format_ts(t.last_ts)),
        ),
        ("sessions", t.sessions.len().to_string()),
        ("intervals", d.intervals.len().to_string()),
        ("turns", d.turns.len().to_string()),
        ("model calls", t.model_calls.len().to_string()),
        ("tool calls", d.tool_calls.len().to_string()),
        ("callbacks", d.callbacks.len().to_string()),
        ("errors", d.errors.len().to_string()),
        ("run attempts", d.runs.len().to_string()),
    ];
    out.push_str(r#"<dl class="facts">"#);
    for (k, v) in facts {
        let _ = write!(
            out,
            r#"<div data-fact="{}"><dt>{}</dt><dd>{}</dd></div>"#,
            token(k),
            k,
            escape(&v)
        );
    }
    out.push_str("</dl>");
}

/// The notes on what the page draws and how it aggregated (bins, details cut).
pub(super) fn notes(
    out: &mut String,
    t: &Timeline,
    bin: i64,
    (model_bins, tool_bins): (bool, bool),
    reduced: usize,
) {
    let d = &t.derived;
    let _ = write!(
        out,
        r#"<p class="note">The axis is <b>seq</b>, the order the reducer applied the events in (times are shown under it and in each element's details). Every turn, interval, run attempt, tool call, callback and error of the agent's tables is drawn once; {}; assistant text, reasoning and progress events are drawn apart in bins of {bin} seq{}, each bin's count in its details. Hover an element for its details, click to pin them.</p>"#,
        if model_bins {
            format!(
                "its {} model calls are more than {MAX_MODEL_MARKS}, so they are drawn in bins of {bin} seq{} (each bin's count, tokens and errors in its details)",
                t.model_calls.len(),
                if bin == 1 { "" } else { "s" }
            )
        } else {
            "every model call is drawn once, with its tokens in its details".to_string()
        },
        if bin == 1 { "" } else { "s" }
    );
    if reduced > 0 {
        let what = match reduced {
            1 => "without their state records",
            2 => "without state records, texts cut at 40 characters",
            _ => "as kind, seq, session and turn only",
        };
        let _ = write!(
            out,
            r#"<p class="note stripped">The elements are too many for all their details to stay on the page under {} MB: details show each element {what} (<code>runlog query</code> has the rows, <code>runlog replay --root ID --at SEQ</code> the state records).</p>"#,
            MAX_DETAIL_BYTES as f64 / 1e6
        );
    }
    if tool_bins {
        let _ = write!(
            out,
            r#"<p class="note binned">Its {} tool calls are more than {MAX_TOOL_MARKS}: they are drawn in bins of {bin} seq{}, each bin's count and statuses in its details.</p>"#,
            d.tool_calls.len(),
            if bin == 1 { "" } else { "s" }
        );
    }
}

/// The legend of the classes drawn.
pub(super) fn legend(out: &mut String) {
    out.push_str(r#"<div class="legend">"#);
    for (class, text) in [
        ("st-completed", "completed / settled"),
        ("st-failed", "failed / protocol error"),
        ("st-interrupted", "interrupted / cancelled"),
        ("st-unknownoutcome", "unknown outcome"),
        ("st-running", "running"),
        ("st-blocked", "blocked"),
        ("st-unsettled", "unsettled"),
        ("tl-model", "model call"),
        ("ts-ok", "tool ok"),
        ("ts-bad", "tool error"),
        ("ts-none", "tool, no result"),
        ("tl-error", "error"),
        ("tl-callback", "callback"),
        ("v-assistant", "assistant text"),
        ("v-reasoning", "reasoning"),
        ("v-progress", "progress"),
    ] {
        let _ = write!(
            out,
            r#"<span><svg width="12" height="10" style="display:inline;vertical-align:-1px"><rect class="{class}" width="12" height="10" rx="2"/></svg> {text}</span>"#
        );
    }
    out.push_str(
        "<span>dashed: still open at the end of the log · red dashed run: provisional tail, not committed</span></div>",
    );
}
