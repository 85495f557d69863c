//! The agent-wide rows of the timeline: the seq axis with its times and grid, the owned
//! run intervals and the run attempts.

use std::fmt::Write as _;

use serde_json::json;

use super::{dist, fields, opt, token, Page, AXIS_H, ROW_H};
use crate::html::{escape, n};
use runlog_core::event::format_ts;

pub(super) fn axis(p: &mut Page, height: f64) {
    let (first, last) = (p.t.first_seq, p.t.last_seq);
    // The report's charts' steps (1, 2 or 5 times a power of ten; whole ones here).
    let step =
        (crate::html::nice_step((dist(first, last) + 1) as f64, p.s.width / 110.0) as i64).max(1);
    let mut seq = (first / step) * step;
    if seq < first {
        seq = seq.saturating_add(step);
    }
    let mut ticks = 0;
    while seq <= last && ticks < 200 {
        ticks += 1;
        let x = p.s.x(seq);
        let time =
            p.t.ts_at(seq)
                .map(|ts| {
                    let f = format_ts(ts);
                    f.get(11..19).unwrap_or(&f).to_string()
                })
                .unwrap_or_default();
        let _ = write!(
            p.plot,
            r#"<line class="grid" x1="{x}" x2="{x}" y1="{}" y2="{}"/><text class="m" x="{x}" y="13" text-anchor="middle">{seq}</text><text class="m" x="{x}" y="27" text-anchor="middle">{}</text>"#,
            n(AXIS_H - 4.0),
            n(height),
            escape(&time),
            x = n(x)
        );
        match seq.checked_add(step) {
            Some(s) => seq = s,
            None => break,
        }
    }
    p.label(0.0, 16.0, "seq", 0.0, "m");
    p.label(14.0, 16.0, "time (UTC)", 0.0, "m");
}

pub(super) fn intervals(p: &mut Page, y: f64) {
    p.label(y, ROW_H, "intervals", 0.0, "t");
    let last = p.t.last_seq;
    let mut rows: Vec<_> = p.t.derived.intervals.iter().collect();
    rows.sort_by_key(|r| r.open_seq);
    for iv in rows {
        let end = iv.close_seq.unwrap_or(last);
        let (x, w) = p.s.bar(iv.open_seq, end);
        let text = match iv.status {
            "settled" => iv.finish_reason.as_deref().unwrap_or("settled").to_string(),
            s => s.replace('_', " "),
        };
        let i = p.detail(
            "interval",
            iv.open_seq,
            fields(vec![
                ("status", json!(iv.status)),
                ("finish_reason", opt(&iv.finish_reason)),
                ("finish_class", opt(&iv.finish_class)),
                ("open_seq", json!(iv.open_seq)),
                ("close_seq", opt(&iv.close_seq)),
                ("opened_at", json!(format_ts(iv.opened_at))),
                ("closed_at", opt(&iv.closed_at.map(format_ts))),
                ("protocol_error", opt(&iv.protocol_error)),
                ("message_id", opt(&iv.message_id)),
                ("turns", json!(iv.turns)),
                ("model_calls", json!(iv.model_calls)),
                ("tool_calls", json!(iv.tool_calls)),
                ("errors", json!(iv.errors)),
                ("input_tokens", json!(iv.input_tokens)),
                ("output_tokens", json!(iv.output_tokens)),
                ("inferred", json!(iv.inferred)),
            ]),
        );
        let _ = write!(
            p.plot,
            r#"<rect class="tl-interval st-{}" data-seq="{}" data-i="{i}" x="{}" y="{}" width="{}" height="{}" rx="3"/>"#,
            token(iv.status),
            iv.open_seq,
            n(x),
            n(y + 1.0),
            n(w),
            n(ROW_H - 2.0)
        );
        p.bar_text(x, y, w, ROW_H, &text);
    }
}

pub(super) fn runs(p: &mut Page, y: f64) {
    p.label(y, ROW_H, "run attempts", 0.0, "t");
    let last = p.t.last_seq;
    let mut rows: Vec<_> = p.t.derived.runs.iter().collect();
    rows.sort_by_key(|r| r.start_seq);
    for r in rows {
        let end = r.settle_seq.unwrap_or(last);
        let (x, w) = p.s.bar(r.start_seq, end);
        let attempt = r.attempt.map(|a| format!(" #{a}")).unwrap_or_default();
        let text = if r.provisional_tail {
            format!("{}{attempt}: provisional tail, not committed", r.settle)
        } else {
            format!("{}{attempt}", r.settle)
        };
        let i = p.detail(
            "run",
            r.start_seq,
            fields(vec![
                ("run_id", opt(&r.run_id)),
                ("attempt", opt(&r.attempt)),
                ("settle", json!(r.settle)),
                ("settle_seq", opt(&r.settle_seq)),
                ("output_status", opt(&r.output_status)),
                ("wait_for_kind", opt(&r.wait_for_kind)),
                ("error_code", opt(&r.error_code)),
                ("provisional_tail", json!(r.provisional_tail)),
                (
                    "committed",
                    json!(if r.provisional_tail {
                        "no: the attempt ended on a delta, its tail is provisional"
                    } else {
                        "-"
                    }),
                ),
                ("assistant_text_len", opt(&r.assistant_text_len)),
                ("assistant_deltas", json!(r.assistant_deltas)),
                ("reasoning_deltas", json!(r.reasoning_deltas)),
                ("progress_events", json!(r.progress_events)),
                ("tool_events", json!(r.tool_events)),
            ]),
        );
        let _ = write!(
            p.plot,
            r#"<rect class="tl-run st-{}{}" data-seq="{}" data-i="{i}" x="{}" y="{}" width="{}" height="{}" rx="3"/>"#,
            token(r.settle),
            if r.provisional_tail {
                " tl-provisional"
            } else {
                ""
            },
            r.start_seq,
            n(x),
            n(y + 1.0),
            n(w),
            n(ROW_H - 2.0)
        );
        p.bar_text(x, y, w, ROW_H, &text);
    }
}
