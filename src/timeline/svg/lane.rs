//! A session's lane of the timeline: its turns, its row of model calls, tool calls and
//! errors, its callbacks and its voices, each drawn with its details.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{json, Value};

use super::{fields, opt, stack, token, Page, CB_H, LANE_GAP, MARK_H, MIN_BAR, ROW_H, VOICE_H};
use crate::html::{escape, n, truncate};
use crate::timeline::{DrawnVoice, ModelCall};
use runlog_core::event::format_ts;
use runlog_core::reduce::ToolCallRow;

/// The fill class of a tool call's status.
fn tool_class(status: Option<&str>) -> &'static str {
    match status.map(str::to_ascii_lowercase).as_deref() {
        None => "ts-none",
        Some("ok" | "success" | "succeeded" | "completed" | "done") => "ts-ok",
        Some(s) if s.contains("err") || s.contains("fail") || s.contains("den") => "ts-bad",
        Some(_) => "ts-other",
    }
}

/// What one lane drew (so that spawn links can point at its turns row).
pub(super) struct LaneRows {
    pub(super) turns_y: f64,
}

/// One session's lane: its title and separator, then its turns, its row of model calls, tool
/// calls and errors, its callbacks and its voices. The y below it, and where its turns are.
pub(super) fn lane(
    p: &mut Page,
    lane: usize,
    mut y: f64,
    model_bins: bool,
    tool_bins: bool,
) -> (f64, LaneRows) {
    let t = p.t;
    let session = &t.sessions[lane];
    let sid = session.id.as_str();
    let indent = 12.0 * session.depth.min(8) as f64;
    let title = if session.depth == 0 {
        format!("session {sid}")
    } else {
        format!("↳ {sid}")
    };
    p.label(y, ROW_H, &title, indent, "t lane");
    let _ = write!(
        p.plot,
        r#"<g class="tl-lane" data-session="{}" data-depth="{}">"#,
        escape(sid),
        session.depth
    );
    let _ = write!(
        p.plot,
        r#"<line class="lanesep" x1="0" x2="{}" y1="{}" y2="{}"/>"#,
        n(p.s.width),
        n(y - LANE_GAP / 2.0),
        n(y - LANE_GAP / 2.0)
    );

    let turns_y = y;
    y = turns(p, sid, y);

    // Calls: model calls, tool calls, errors, on one row of marks.
    p.label(y, MARK_H, "model · tool · error", indent + 10.0, "m");
    model_marks(p, sid, y, model_bins);
    tool_marks(p, sid, y, tool_bins);
    error_marks(p, sid, y);
    y += MARK_H;

    y = callbacks(p, sid, y, indent);
    y = voices(p, lane, sid, y, indent);
    p.plot.push_str("</g>");
    (y + LANE_GAP, LaneRows { turns_y })
}

/// A lane's turns, stacked when they overlap. The y below them.
fn turns(p: &mut Page, sid: &str, y: f64) -> f64 {
    let t = p.t;
    let last = t.last_seq;
    let mut turns: Vec<usize> = (0..t.derived.turns.len())
        .filter(|&k| t.derived.turns[k].session.as_str() == sid)
        .collect();
    turns.sort_by_key(|&k| t.derived.turns[k].start_seq);
    let spans: Vec<(i64, i64)> = turns
        .iter()
        .map(|&k| {
            let r = &t.derived.turns[k];
            (r.start_seq, r.end_seq.unwrap_or(last))
        })
        .collect();
    let (rows, nrows) = stack(&spans);
    for ((&k, &(from, to)), row) in turns.iter().zip(&spans).zip(rows) {
        let r = &t.derived.turns[k];
        let state = r.state.unwrap_or("protocol_error");
        let (x, w) = p.s.bar(from, to);
        let ry = y + row as f64 * ROW_H;
        let detail = r
            .stop_reason
            .as_ref()
            .or(r.cause.as_ref())
            .or(r.error_code.as_ref())
            .or(r.outcome.as_ref());
        let text = match detail {
            Some(d) => format!("{} {state}: {d}", r.turn),
            None => format!("{} {state}", r.turn),
        };
        let i = p.detail(
            "turn",
            r.start_seq,
            fields(vec![
                ("session", json!(r.session.as_str())),
                ("turn", json!(r.turn.as_str())),
                ("is_root", json!(r.is_root)),
                ("state", opt(&r.state)),
                ("finish_class", opt(&r.finish_class)),
                ("stop_reason", opt(&r.stop_reason)),
                ("cause", opt(&r.cause)),
                ("error_code", opt(&r.error_code)),
                ("outcome", opt(&r.outcome)),
                ("start_seq", json!(r.start_seq)),
                ("end_seq", opt(&r.end_seq)),
                (
                    "ended_at",
                    opt(&r.end_seq.and_then(|s| t.ts_at(s)).map(format_ts)),
                ),
                ("interval_open_seq", opt(&r.interval_open_seq)),
                ("protocol_error", opt(&r.protocol_error)),
                ("model_calls", json!(r.model_calls)),
                ("input_tokens", json!(r.input_tokens)),
                ("output_tokens", json!(r.output_tokens)),
                ("tool_calls", json!(r.tool_calls)),
                ("text_len", opt(&r.text_len)),
                ("inferred", json!(r.inferred)),
                (
                    "state_record",
                    t.final_states.get(k).cloned().unwrap_or(Value::Null),
                ),
            ]),
        );
        let _ = write!(
            p.plot,
            r#"<rect class="tl-turn st-{}{}" data-seq="{}" data-i="{i}" x="{}" y="{}" width="{}" height="{}" rx="3"/>"#,
            token(state),
            if r.end_seq.is_none() { " tl-open" } else { "" },
            r.start_seq,
            n(x),
            n(ry + 1.0),
            n(w),
            n(ROW_H - 2.0)
        );
        p.bar_text(x, ry, w, ROW_H, &text);
    }
    y + nrows as f64 * ROW_H
}

/// A lane's model calls: one mark each, or bins past the budget (`bins`).
fn model_marks(p: &mut Page, sid: &str, y: f64, bins: bool) {
    let t = p.t;
    let models: Vec<_> = t.model_calls.iter().filter(|m| m.session == sid).collect();
    if bins {
        let bin = p.s.bin_seqs();
        let mut bins: BTreeMap<i64, Vec<&ModelCall>> = BTreeMap::new();
        for m in &models {
            bins.entry(p.s.bin_of(m.seq)).or_default().push(m);
        }
        let max = bins.values().map(Vec::len).max().unwrap_or(1) as f64;
        for (b, ms) in bins {
            let from = ms[0].seq;
            let to = ms[ms.len() - 1].seq;
            let input: i64 = ms.iter().map(|m| m.input_tokens).sum();
            let output: i64 = ms.iter().map(|m| m.output_tokens).sum();
            let i = p.detail(
                "model calls (bin)",
                from,
                fields(vec![
                    ("session", json!(sid)),
                    ("count", json!(ms.len())),
                    ("first_seq", json!(from)),
                    ("last_seq", json!(to)),
                    ("bin_seqs", json!(bin)),
                    ("input_tokens", json!(input)),
                    ("output_tokens", json!(output)),
                    ("errors", json!(ms.iter().filter(|m| m.error).count())),
                ]),
            );
            let x = p.s.bin_x(b);
            let h = 4.0 + (MARK_H - 6.0) * ms.len() as f64 / max;
            let _ = write!(
                p.plot,
                r#"<rect class="tl-model tl-bin" data-seq="{from}" data-count="{}" data-i="{i}" x="{}" y="{}" width="{}" height="{}"/>"#,
                ms.len(),
                n(x),
                n(y + MARK_H - 1.0 - h),
                n((bin as f64 * p.s.px).max(MIN_BAR) - 0.5),
                n(h)
            );
        }
    } else {
        for m in &models {
            let i = p.detail(
                "model call",
                m.seq,
                fields(vec![
                    ("session", json!(m.session)),
                    ("turn", opt(&m.turn)),
                    ("input_tokens", json!(m.input_tokens)),
                    ("output_tokens", json!(m.output_tokens)),
                    ("error", json!(m.error)),
                    ("state_record", p.state_at(m.seq)),
                ]),
            );
            let x = p.s.x(m.seq);
            let _ = write!(
                p.plot,
                r#"<rect class="tl-model{}" data-seq="{}" data-count="1" data-i="{i}" x="{}" y="{}" width="{}" height="{}"/>"#,
                if m.error { " tl-failed" } else { "" },
                m.seq,
                n(x),
                n(y + 2.0),
                n((p.s.px * 0.8).clamp(MIN_BAR, 6.0)),
                n(MARK_H - 4.0)
            );
        }
    }
}

/// A lane's tool calls: a diamond each, coloured by status, or bins past the budget (`bins`).
fn tool_marks(p: &mut Page, sid: &str, y: f64, bins: bool) {
    let t = p.t;
    let mid = y + MARK_H / 2.0;
    let mut tools: Vec<_> = t
        .derived
        .tool_calls
        .iter()
        .filter(|c| c.session.as_str() == sid)
        .collect();
    tools.sort_by_key(|c| c.seq);
    let r = (MARK_H / 2.0 - 1.5).min(6.0);
    if bins {
        let bin = p.s.bin_seqs();
        let mut bins: BTreeMap<i64, Vec<&ToolCallRow>> = BTreeMap::new();
        for c in &tools {
            bins.entry(p.s.bin_of(c.seq)).or_default().push(c);
        }
        for (b, cs) in bins {
            let from = cs[0].seq;
            let mut statuses: BTreeMap<&str, usize> = BTreeMap::new();
            for c in &cs {
                *statuses
                    .entry(c.status.as_deref().unwrap_or("(no result)"))
                    .or_default() += 1;
            }
            let worst = if cs
                .iter()
                .any(|c| tool_class(c.status.as_deref()) == "ts-bad")
            {
                "ts-bad"
            } else {
                tool_class(cs[0].status.as_deref())
            };
            let i = p.detail(
                "tool calls (bin)",
                from,
                fields(vec![
                    ("session", json!(sid)),
                    ("count", json!(cs.len())),
                    ("first_seq", json!(from)),
                    ("last_seq", json!(cs[cs.len() - 1].seq)),
                    ("bin_seqs", json!(bin)),
                    ("statuses", json!(statuses)),
                ]),
            );
            let _ = write!(
                p.plot,
                r#"<rect class="tl-tool tl-bin {worst}" data-seq="{from}" data-count="{}" data-i="{i}" x="{}" y="{}" width="{}" height="{}"/>"#,
                cs.len(),
                n(p.s.bin_x(b)),
                n(mid - r),
                n((bin as f64 * p.s.px).max(MIN_BAR) - 0.5),
                n(2.0 * r)
            );
        }
        tools.clear();
    }
    for c in tools {
        let i = p.detail(
            "tool call",
            c.seq,
            fields(vec![
                ("session", json!(c.session.as_str())),
                ("turn", opt(&c.turn.as_deref())),
                ("name", opt(&c.name)),
                ("call_id", opt(&c.call_id)),
                ("status", opt(&c.status)),
                (
                    "detail",
                    opt(&c.detail.as_deref().map(|d| truncate(d, 240))),
                ),
                (
                    "arguments",
                    opt(&c.arguments.as_deref().map(|a| truncate(a, 240))),
                ),
                ("state_record", p.state_at(c.seq)),
            ]),
        );
        let x = p.s.x(c.seq) + p.s.px.min(6.0) / 2.0;
        let _ = write!(
            p.plot,
            r#"<path class="tl-tool {}" data-seq="{}" data-i="{i}" d="M{} {}l{r} {r}l-{r} {r}l-{r} -{r}z"/>"#,
            tool_class(c.status.as_deref()),
            c.seq,
            n(x),
            n(mid - r),
        );
    }
}

/// A lane's errors: a triangle each, marked when retryability mismatches or it recovered.
fn error_marks(p: &mut Page, sid: &str, y: f64) {
    let t = p.t;
    let mut errors: Vec<_> = t
        .derived
        .errors
        .iter()
        .filter(|e| e.session.as_str() == sid)
        .collect();
    errors.sort_by_key(|e| e.seq);
    for e in errors {
        let i = p.detail(
            "error",
            e.seq,
            fields(vec![
                ("session", json!(e.session.as_str())),
                ("turn", opt(&e.turn.as_deref())),
                ("source", json!(e.source)),
                ("code", opt(&e.code)),
                (
                    "message",
                    opt(&e.message.as_deref().map(|m| truncate(m, 240))),
                ),
                ("http_status", opt(&e.http_status)),
                ("retryable_recorded", json!(e.retryable)),
                ("retryable_expected", opt(&e.retryable_expected)),
                ("retryable_mismatch", opt(&e.retryable_mismatch)),
                ("status_consistent", opt(&e.status_consistent)),
                ("retried", opt(&e.retried)),
                ("recovered", opt(&e.recovered)),
                ("state_record", p.state_at(e.seq)),
            ]),
        );
        let x = p.s.x(e.seq) + p.s.px.min(6.0) / 2.0;
        let h = MARK_H - 3.0;
        let _ = write!(
            p.plot,
            r#"<path class="tl-error src-{}{}{}" data-seq="{}" data-i="{i}" d="M{} {}l{} {}h-{}z"/>"#,
            token(e.source),
            if e.retryable_mismatch == Some(true) {
                " tl-mismatch"
            } else {
                ""
            },
            if e.recovered == Some(true) {
                " tl-recovered"
            } else {
                ""
            },
            e.seq,
            n(x),
            n(y + 1.5),
            n(h / 2.0 + 1.0),
            n(h),
            n(h + 2.0),
        );
    }
}

/// A lane's callbacks from open to close; still open ones run to the end of the log. The y
/// below them.
fn callbacks(p: &mut Page, sid: &str, mut y: f64, indent: f64) -> f64 {
    let t = p.t;
    let last = t.last_seq;
    let mut cbs: Vec<_> = t
        .derived
        .callbacks
        .iter()
        .filter(|c| c.session.as_str() == sid)
        .collect();
    cbs.sort_by_key(|c| c.open_seq);
    if !cbs.is_empty() {
        let spans: Vec<(i64, i64)> = cbs
            .iter()
            .map(|c| (c.open_seq, c.close_seq.unwrap_or(last)))
            .collect();
        let (rows, nrows) = stack(&spans);
        p.label(
            y,
            CB_H.max(CB_H * nrows as f64 / 2.0),
            "callbacks",
            indent + 10.0,
            "m small",
        );
        for ((c, &(from, to)), row) in cbs.iter().zip(&spans).zip(rows) {
            let i = p.detail(
                "callback",
                c.open_seq,
                fields(vec![
                    ("session", json!(c.session.as_str())),
                    ("turn", opt(&c.turn.as_deref())),
                    ("callback_id", opt(&c.callback_id)),
                    ("callback_kind", opt(&c.kind)),
                    ("title", opt(&c.title)),
                    ("open_seq", json!(c.open_seq)),
                    ("close_seq", opt(&c.close_seq)),
                    ("closed_by", opt(&c.closed_by)),
                    ("state_record", p.state_at(c.open_seq)),
                ]),
            );
            let (x, w) = p.s.bar(from, to);
            let _ = write!(
                p.plot,
                r#"<rect class="tl-callback{}" data-seq="{}" data-i="{i}" x="{}" y="{}" width="{}" height="{}" rx="2"/>"#,
                if c.close_seq.is_none() {
                    " tl-open"
                } else {
                    ""
                },
                c.open_seq,
                n(x),
                n(y + row as f64 * CB_H + 1.0),
                n(w),
                n(CB_H - 2.0)
            );
        }
        y += nrows as f64 * CB_H;
    }
    y
}

/// A lane's voices, apart: assistant text, reasoning, progress, binned. The y below them.
fn voices(p: &mut Page, lane: usize, sid: &str, mut y: f64, indent: f64) -> f64 {
    let t = p.t;
    let bin = p.s.bin_seqs();
    for v in DrawnVoice::ALL {
        let mut bins: BTreeMap<i64, (i64, usize)> = BTreeMap::new();
        for e in t
            .voices
            .iter()
            .filter(|e| e.session == lane && e.voice == v)
        {
            let b = bins.entry(p.s.bin_of(e.seq)).or_insert((e.seq, 0));
            b.1 += 1;
        }
        if bins.is_empty() {
            continue;
        }
        p.label(y - 1.0, VOICE_H, v.name(), indent + 10.0, "m small");
        let max = bins.values().map(|b| b.1).max().unwrap_or(1) as f64;
        for (b, (from, count)) in bins {
            let i = p.detail(
                &format!("{} events (bin)", v.name()),
                from,
                fields(vec![
                    ("session", json!(sid)),
                    ("voice", json!(v.name())),
                    ("count", json!(count)),
                    ("bin_seqs", json!(bin)),
                ]),
            );
            let _ = write!(
                p.plot,
                r#"<rect class="tl-voice v-{}" data-seq="{from}" data-count="{count}" data-i="{i}" x="{}" y="{}" width="{}" height="{}" fill-opacity="{}"/>"#,
                v.name(),
                n(p.s.bin_x(b)),
                n(y + 1.5),
                n((bin as f64 * p.s.px).max(MIN_BAR) - 0.5),
                n(VOICE_H - 3.0),
                n(0.3 + 0.7 * count as f64 / max),
            );
        }
        y += VOICE_H;
    }
    y
}
