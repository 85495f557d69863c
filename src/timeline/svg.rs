//! The timeline page: lays a [`Timeline`] out on a `seq` axis and renders it as one
//! self-contained HTML page — inline CSS, inline SVG, and one small inline script that
//! shows an element's details (seq, time, its row, the state record as of its cursor) on
//! hover and pins them on click. No fonts, images or network.
//!
//! Every drawn element carries a class per kind (`tl-turn`, `tl-interval`, `tl-run`,
//! `tl-tool`, `tl-callback`, `tl-error`, `tl-model`, `tl-voice`), `data-seq` (the seq it
//! starts at) and `data-i` (its entry in the page's details). Rows of the tables are drawn
//! one element each, in seq order, in their session's lane (`g.tl-lane`); the many — voice
//! events always, model calls and tool calls past a budget — are drawn in bins (`tl-bin`,
//! with `data-count`): nothing is left out, and the page says how it aggregated.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::{json, Map, Value};

use super::{DrawnVoice, Timeline};
use crate::event::format_ts;
use crate::html::{escape, n, truncate};
use crate::reduce::ToolCallRow;

/// Options of one page.
#[derive(Debug, Clone, Default)]
pub struct PageOptions {
    /// A link back (e.g. to the report that listed the agent): (href, text).
    pub back: Option<(String, String)>,
    /// A line shown under the title (e.g. why the agent is notable).
    pub note: Option<String>,
}

/// Width of the lane labels, in CSS pixels.
const LABEL_W: f64 = 210.0;
/// Horizontal padding of the plot.
const PAD: f64 = 12.0;
/// Pixels per seq the plot aims at, and its narrowest and widest widths.
const PX_PER_SEQ: f64 = 8.0;
const MIN_W: f64 = 900.0;
const MAX_W: f64 = 9000.0;
/// Narrowest drawn bar, and narrowest bin.
const MIN_BAR: f64 = 2.0;
const MIN_BIN_PX: f64 = 4.0;
/// Model calls of an agent drawn one each up to this many; past it, binned.
pub const MAX_MODEL_MARKS: usize = 2000;
/// Tool calls of an agent drawn one each up to this many; past it, binned (the page
/// stays under 5 MB: each element costs ~100 bytes of SVG and more of details).
pub const MAX_TOOL_MARKS: usize = 5000;
/// The details of every element stay under this many bytes: past it, state records are
/// left out of the details (the page says so).
const MAX_DETAIL_BYTES: usize = 2_500_000;
/// Overlapping bars stack up to this many rows; more overlap on the last.
const MAX_STACK: usize = 4;

const AXIS_H: f64 = 38.0;
const ROW_H: f64 = 18.0;
const MARK_H: f64 = 16.0;
const CB_H: f64 = 10.0;
const VOICE_H: f64 = 10.0;
const LANE_GAP: f64 = 8.0;

/// A class-safe token of a value (`Completed` → `completed`, `max tokens` → `max_tokens`).
fn token(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .take(40)
        .collect()
}

/// The x scale: seq → CSS pixel.
struct Scale {
    first: i64,
    px: f64,
    width: f64,
}

impl Scale {
    fn new(t: &Timeline) -> Scale {
        let span = (dist(t.first_seq, t.last_seq) + 1).max(1) as f64;
        let width = (span * PX_PER_SEQ + 2.0 * PAD).clamp(MIN_W, MAX_W);
        Scale {
            first: t.first_seq,
            px: (width - 2.0 * PAD) / span,
            width,
        }
    }
    fn x(&self, seq: i64) -> f64 {
        PAD + dist(self.first, seq) as f64 * self.px
    }
    /// A bar from `from` up to and including `to`.
    fn bar(&self, from: i64, to: i64) -> (f64, f64) {
        let x = self.x(from);
        let w = ((dist(from, to) + 1) as f64 * self.px).max(MIN_BAR);
        (x, w)
    }
    /// Seqs per bin so that a bin is at least [`MIN_BIN_PX`] wide.
    fn bin_seqs(&self) -> i64 {
        (MIN_BIN_PX / self.px).ceil().max(1.0) as i64
    }
    /// The bin of a seq, and the x of a bin's left edge.
    fn bin_of(&self, seq: i64) -> i64 {
        (dist(self.first, seq) / i128::from(self.bin_seqs())) as i64
    }
    fn bin_x(&self, bin: i64) -> f64 {
        PAD + (i128::from(bin) * i128::from(self.bin_seqs())) as f64 * self.px
    }
}

/// `to - from` without overflow (seqs span all of `i64` when a log's are huge).
fn dist(from: i64, to: i64) -> i128 {
    i128::from(to) - i128::from(from)
}

/// Assigns each span (from, to) a row: the first whose last span ended before it.
fn stack(spans: &[(i64, i64)]) -> (Vec<usize>, usize) {
    let mut ends: Vec<i64> = Vec::new();
    let rows = spans
        .iter()
        .map(|&(from, to)| match ends.iter().position(|&e| e < from) {
            Some(r) => {
                ends[r] = to;
                r
            }
            None if ends.len() < MAX_STACK => {
                ends.push(to);
                ends.len() - 1
            }
            None => {
                let r = MAX_STACK - 1;
                ends[r] = ends[r].max(to);
                r
            }
        })
        .collect();
    (rows, ends.len().max(1))
}

/// The page being written: the plot's SVG, the labels' SVG, the details.
struct Page<'a> {
    t: &'a Timeline,
    s: Scale,
    plot: String,
    labels: String,
    details: Vec<Value>,
}

impl Page<'_> {
    /// Adds an element's details and returns its index.
    fn detail(&mut self, kind: &str, seq: i64, mut fields: Map<String, Value>) -> usize {
        let mut d = Map::new();
        d.insert("kind".into(), json!(kind));
        d.insert("seq".into(), json!(seq));
        d.insert(
            "ts".into(),
            self.t
                .ts_at(seq)
                .map_or(Value::Null, |ts| json!(format_ts(ts))),
        );
        d.append(&mut fields);
        self.details.push(Value::Object(d));
        self.details.len() - 1
    }

    fn state_at(&self, seq: i64) -> Value {
        self.t.states.get(&seq).cloned().unwrap_or(Value::Null)
    }

    fn label(&mut self, y: f64, h: f64, text: &str, indent: f64, class: &str) {
        let _ = write!(
            self.labels,
            r#"<text class="{class}" x="{}" y="{}">{}</text>"#,
            n(6.0 + indent),
            n(y + h / 2.0 + 4.0),
            escape(&truncate(text, 30 - (indent / 7.0) as usize))
        );
    }

    /// A text inside a bar, when the bar is wide enough for some of it.
    fn bar_text(&mut self, x: f64, y: f64, w: f64, h: f64, text: &str) {
        let chars = ((w - 6.0) / 6.5).floor() as usize;
        if chars < 3 {
            return;
        }
        let _ = write!(
            self.plot,
            r#"<text class="bt" x="{}" y="{}">{}</text>"#,
            n(x + 3.0),
            n(y + h / 2.0 + 4.0),
            escape(&truncate(text, chars))
        );
    }
}

fn opt<T: serde::Serialize>(v: &Option<T>) -> Value {
    v.as_ref().map_or(Value::Null, |v| json!(v))
}

fn fields(pairs: Vec<(&str, Value)>) -> Map<String, Value> {
    pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

fn axis(p: &mut Page, height: f64) {
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

fn intervals(p: &mut Page, y: f64) {
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

fn runs(p: &mut Page, y: f64) {
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
struct LaneRows {
    turns_y: f64,
}

fn lane(
    p: &mut Page,
    lane: usize,
    mut y: f64,
    model_bins: bool,
    tool_bins: bool,
) -> (f64, LaneRows) {
    let t = p.t;
    let session = &t.sessions[lane];
    let sid = session.id.as_str();
    let last = t.last_seq;
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

    // Turns, stacked when they overlap.
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
    let turns_y = y;
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
    y += nrows as f64 * ROW_H;

    // Calls: model calls, tool calls, errors, on one row of marks.
    p.label(y, MARK_H, "model · tool · error", indent + 10.0, "m");
    let mid = y + MARK_H / 2.0;
    let models: Vec<_> = t.model_calls.iter().filter(|m| m.session == sid).collect();
    if model_bins {
        let bin = p.s.bin_seqs();
        let mut bins: BTreeMap<i64, Vec<&super::ModelCall>> = BTreeMap::new();
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
    let mut tools: Vec<_> = t
        .derived
        .tool_calls
        .iter()
        .filter(|c| c.session.as_str() == sid)
        .collect();
    tools.sort_by_key(|c| c.seq);
    let r = (MARK_H / 2.0 - 1.5).min(6.0);
    if tool_bins {
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
    y += MARK_H;

    // Callbacks from open to close; still open ones run to the end of the log.
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

    // Voices, apart: assistant text, reasoning, progress, binned.
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
    p.plot.push_str("</g>");
    (y + LANE_GAP, LaneRows { turns_y })
}

const STYLE: &str = ":root{color-scheme:light dark;--bg:#f6f7f9;--card:#fff;--fg:#1c1e21;--muted:#5d636b;\
--border:#e2e5e9;--grid:#eceef1;--ok:#2e7d32;--bad:#c62828;--warn:#e56b00;--alt:#7b1fa2;--info:#1565c0;\
--none:#a3a8ae;--amber:#b08900;--teal:#00838f;--pink:#ad1457;--slate:#455a64}\
@media (prefers-color-scheme:dark){:root{--bg:#111315;--card:#1a1d21;--fg:#e6e8eb;--muted:#a0a6ad;\
--border:#2c3137;--grid:#23272c;--ok:#66bb6a;--bad:#ef5350;--warn:#ffa040;--alt:#ce93d8;--info:#64b5f6;\
--none:#7d848c;--amber:#ffd54f;--teal:#4dd0e1;--pink:#f06292;--slate:#b0bec5}}\
*{box-sizing:border-box}body{margin:0;background:var(--bg);color:var(--fg);\
font:14px/1.45 system-ui,-apple-system,\"Segoe UI\",Roboto,Arial,sans-serif}\
main{padding:16px 20px 40px}h1{font-size:21px;margin:0 0 6px}h1 code{font-size:19px}\
a{color:var(--info)}.back{margin:0 0 8px;font-size:13px}\
.facts{display:flex;flex-wrap:wrap;gap:4px 22px;margin:0 0 8px}.facts div{display:flex;gap:6px}\
.facts dt{color:var(--muted)}.facts dd{margin:0;font-variant-numeric:tabular-nums}\
.note{color:var(--muted);font-size:13px;margin:4px 0}\
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:12px;margin:8px 0;color:var(--muted)}\
.legend i{display:inline-block;width:12px;height:10px;border-radius:2px;margin-right:4px;vertical-align:-1px}\
.tl{display:flex;background:var(--card);border:1px solid var(--border);border-radius:8px}\
.tl svg{display:block;font-size:12px;font-family:inherit;flex:none}\
.scroll{overflow-x:auto;flex:1 1 auto}\
svg .t{fill:var(--fg)}svg .m{fill:var(--muted);font-size:11px}svg .small{font-size:10px}\
svg .lane{font-weight:600}svg .bt{fill:#fff;font-size:11px;pointer-events:none}\
svg .grid{stroke:var(--grid)}svg .lanesep{stroke:var(--border)}\
svg .tl-spawn{stroke:var(--muted);stroke-dasharray:2 2;fill:none}\
[data-i]{cursor:pointer}[data-i]:hover,.pinned{stroke:var(--fg);stroke-width:1.5}\
.st-completed,.st-settled,.st-answer{fill:var(--ok)}.st-failed,.st-protocol_error{fill:var(--bad)}\
.st-interrupted,.st-cancelled{fill:var(--warn)}.st-unknownoutcome{fill:var(--alt)}\
.st-running{fill:var(--info)}.st-blocked{fill:var(--amber)}\
.st-unsettled{fill:var(--none)}.tl-open{fill-opacity:.55;stroke:var(--fg);stroke-dasharray:4 2}\
.tl-provisional{fill-opacity:.5;stroke:var(--bad);stroke-dasharray:3 2}\
.tl-model{fill:var(--slate)}.tl-model.tl-failed{fill:var(--bad)}\
.tl-tool{stroke:var(--card);stroke-width:.5}.ts-ok{fill:var(--teal)}.ts-bad{fill:var(--bad)}\
.ts-none{fill:var(--none)}.ts-other{fill:var(--amber)}\
.tl-error{fill:var(--bad)}.tl-error.tl-recovered{fill:var(--warn)}\
.tl-error.tl-mismatch{stroke:var(--fg);stroke-width:1.5}\
.tl-callback{fill:var(--pink)}\
.v-assistant{fill:var(--ok)}.v-reasoning{fill:var(--alt)}.v-progress{fill:var(--info)}\
#tl-detail{position:fixed;right:16px;bottom:16px;width:min(460px,calc(100vw - 32px));max-height:60vh;\
overflow:auto;background:var(--card);border:1px solid var(--border);border-radius:8px;padding:8px 12px;\
box-shadow:0 4px 18px rgba(0,0,0,.18);font-size:12px}\
#tl-detail h3{margin:0 0 4px;font-size:13px}#tl-detail pre{margin:0;white-space:pre-wrap;overflow-wrap:anywhere}\
#tl-detail button{float:right;border:0;background:none;color:var(--muted);font-size:16px;cursor:pointer}\
footer{color:var(--muted);font-size:12px;margin-top:18px}";

/// Shows an element's details on hover; a click pins them (another click elsewhere, or
/// the close button, unpins).
const SCRIPT: &str = "(()=>{const D=JSON.parse(document.getElementById('tl-data').textContent);\
const box=document.getElementById('tl-detail'),pre=box.querySelector('pre'),h=box.querySelector('h3');\
const plot=document.querySelector('svg.plot');let pinned=null;\
function show(el){const d=D[+el.dataset.i];if(!d)return;h.textContent=d.kind+' at seq '+d.seq+(d.ts?' · '+d.ts:'');\
pre.textContent=JSON.stringify(d,null,2);box.hidden=false;}\
plot.addEventListener('mouseover',e=>{const el=e.target.closest('[data-i]');if(el&&!pinned)show(el);});\
plot.addEventListener('click',e=>{const el=e.target.closest('[data-i]');if(pinned)pinned.classList.remove('pinned');\
pinned=el;if(el){el.classList.add('pinned');show(el);}});\
box.querySelector('button').addEventListener('click',()=>{if(pinned)pinned.classList.remove('pinned');\
pinned=null;box.hidden=true;});})();";

/// Renders one agent's timeline page.
pub fn render_page(t: &Timeline, opts: &PageOptions) -> String {
    let s = Scale::new(t);
    let mut p = Page {
        t,
        s,
        plot: String::with_capacity(64 * 1024),
        labels: String::new(),
        details: Vec::new(),
    };
    let model_bins = t.model_calls.len() > MAX_MODEL_MARKS;
    let tool_bins = t.derived.tool_calls.len() > MAX_TOOL_MARKS;
    // Rows first (their height decides the axis' grid lines), into the plot after the axis.
    let mut y = AXIS_H;
    intervals(&mut p, y);
    y += ROW_H + 2.0;
    if !t.derived.runs.is_empty() {
        runs(&mut p, y);
        y += ROW_H + 2.0;
    }
    y += LANE_GAP;
    let mut lanes = Vec::with_capacity(t.sessions.len());
    for k in 0..t.sessions.len() {
        let (next, rows) = lane(&mut p, k, y, model_bins, tool_bins);
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
    axis(&mut p, height);
    p.plot.push_str(&body);

    // The details, as JSON in the page (every `<` escaped, so no text ends the script).
    // Past the budget, details lose first the state records, then long texts, then all
    // but what locates the element in the tables (the page says which).
    let mut reduced = 0;
    let mut data = serde_json::to_string(&p.details).unwrap_or_else(|_| "[]".into());
    while data.len() > MAX_DETAIL_BYTES && reduced < 3 {
        reduced += 1;
        for d in &mut p.details {
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
        data = serde_json::to_string(&p.details).unwrap_or_else(|_| "[]".into());
    }
    let data = data.replace('<', "\\u003c");

    let d = &t.derived;
    let mut out = String::with_capacity(p.plot.len() + data.len() + 16 * 1024);
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
    let bin = p.s.bin_seqs();
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
    let _ = write!(
        out,
        r#"<div class="tl"><svg class="labels" width="{lw}" height="{h}" viewBox="0 0 {lw} {h}" role="img" aria-label="lanes">{}</svg><div class="scroll"><svg class="plot" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" aria-label="timeline of {}">{}</svg></div></div>"#,
        p.labels,
        escape(&t.root),
        p.plot,
        lw = n(LABEL_W),
        w = n(p.s.width),
        h = n(height)
    );
    let _ = write!(
        out,
        r#"<aside id="tl-detail" hidden><button type="button" aria-label="close">×</button><h3></h3><pre></pre></aside><script type="application/json" id="tl-data">{data}</script><script>{SCRIPT}</script>"#
    );
    let _ = writeln!(
        out,
        "<footer>runlog {} — drawn from the agent's rows of the tables (<code>runlog query</code> shows the same rows).</footer></main></body></html>",
        escape(env!("CARGO_PKG_VERSION"))
    );
    out
}
