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

mod assets;
mod lane;
mod page;
mod rows;

use std::fmt::Write as _;

use serde_json::{json, Map, Value};

use super::Timeline;
use crate::html::{escape, n, truncate};
use assets::SCRIPT;
use page::{details_json, draw, head, legend, notes};
use runlog_core::event::format_ts;

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
    let height = draw(&mut p, model_bins, tool_bins);

    // The details, as JSON in the page (every `<` escaped, so no text ends the script).
    let (data, reduced) = details_json(&mut p.details);
    let data = data.replace('<', "\\u003c");

    let mut out = String::with_capacity(p.plot.len() + data.len() + 16 * 1024);
    head(&mut out, t, opts);
    notes(
        &mut out,
        t,
        p.s.bin_seqs(),
        (model_bins, tool_bins),
        reduced,
    );
    legend(&mut out);
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
