//! The interval reducer: replays one agent's events in `seq` order and derives owned run
//! intervals, turn states, errors with their retryability, tool calls, callbacks and run
//! attempts (docs/semantics.md §2–§5).
//!
//! [`Reducer`] is incremental: it takes one event at a time and says which turn the event
//! changed, so the same code serves batch ingest ([`reduce_agent`]) and live monitoring
//! (`runlog replay --follow`). [`Reducer::finish`] turns its state into table rows.

mod apply;
mod drive;
mod events;
mod finish;
pub mod finish_class;
mod intervals;
pub mod needs;
mod record;
mod rows;
pub mod rules;
mod runs;
mod turn_end;
mod turns;

pub use drive::{reduce_agent, reduce_agents, reduce_all, reduce_parts};
pub use rows::{
    AgentRow, CallbackRow, Derived, ErrorRow, IntervalRow, RunRow, ToolCallRow, TurnRow,
};

use foldhash::HashMap;

use serde_json::{json, Value};

use crate::event::payload::{keys, Raw};
use crate::event::{Data, Event, Id, Kind, PayloadIndex, Voice};
use finish_class::{finish_class, FinishClass};
use rules::{end_class, is_cancel_kind, EndClass};

/// An empty vector with the room `v` had.
fn cleared<T>(mut v: Vec<T>) -> Vec<T> {
    v.clear();
    v
}

/// What one event changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Applied {
    pub cursor: u64,
    /// The turn the event belongs to, whose state it may have changed.
    pub turn: Option<TurnId>,
    /// An interval opened at this event.
    pub opened_interval: bool,
    /// An interval closed at this event.
    pub closed_interval: bool,
}

/// A turn of the reducer, by index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TurnId(pub usize);

/// How a turn ended. Its `text`s (and outputs, raw reasons) are kept only when the reducer
/// keeps details; the tables need just the text's length ([`TurnState::end_text_len`]).
#[derive(Debug, Clone)]
enum TurnEnd {
    Completed {
        stop_reason: Option<Data>,
        text: Option<String>,
        /// Kept only when the reducer keeps details (replay).
        output: Option<Value>,
    },
    Interrupted {
        cause: Data,
    },
    Failed {
        /// The recorded Error's JSON text, if there was one.
        error: Option<String>,
        code: Option<Data>,
        text: Option<String>,
    },
    Unknown {
        outcome: Data,
        /// `reason` as JSON text, kept only with details.
        raw: Option<String>,
        text: Option<String>,
    },
    /// A `turn/end` without a string `reason.kind`: no state.
    Malformed,
}

#[derive(Debug, Clone)]
struct TurnState {
    session: Id,
    turn: Id,
    is_root: bool,
    interval_open_seq: Option<i64>,
    start_seq: u64,
    has_start: bool,
    end_seq: Option<u64>,
    end: Option<TurnEnd>,
    /// The end that decided the turn carried `data.inferred: true`.
    end_inferred: bool,
    /// The finish class of that end's kind.
    end_class: Option<&'static str>,
    delta_chars: i64,
    /// The length of the `text` its end recorded (the end's text itself is kept only with
    /// details).
    end_text_len: Option<i64>,
    /// The joined `text/delta` texts, kept only with details.
    delta_text: String,
    /// Callbacks (indices) that block this turn: its own and its subagents', open.
    open_callbacks: Vec<usize>,
    /// Callbacks this turn opened itself (closed by its end).
    opened_callbacks: Vec<usize>,
    /// Its tool calls.
    tool_call_count: i64,
    /// Its tool calls (indices), kept only with details (state records list them): the
    /// tables need only the count, and a list per turn was an allocation per turn.
    tool_calls: Vec<usize>,
    model_calls: i64,
    input_tokens: i64,
    output_tokens: i64,
    /// Model errors (indices into `errors`) not yet followed by another `model/end`.
    pending_model_errors: Vec<usize>,
    model_errors: Vec<usize>,
}

#[derive(Debug, Clone, Default)]
struct SessionInfo {
    parent: Option<String>,
    parent_turn: Option<String>,
    cancelled_at: Option<u64>,
}

/// A `tool/result` with a call id.
#[derive(Debug, Clone)]
struct ToolResult {
    call_id: Data,
    status: Option<Data>,
    detail: Option<Data>,
}

#[derive(Debug, Clone, Default)]
struct RunTrack {
    settled: bool,
    last_was_delta: bool,
}

/// The incremental reducer of one agent (one `root`).
#[derive(Debug)]
pub struct Reducer {
    root: Id,
    keep_detail: bool,
    last_seq: Option<u64>,
    first_seq: u64,
    first_ts: i64,
    last_ts: i64,
    events: i64,
    /// Keyed by the events' own ids (a clone is a count, not a copy).
    sessions: HashMap<Id, SessionInfo>,
    turns: Vec<TurnState>,
    /// session → turn → index into `turns` (looked up without allocating).
    /// Kept only past [`TURNS_LOOKED_THROUGH`] turns; fewer are looked through.
    turn_index: HashMap<Id, HashMap<Id, usize>>,
    /// The turn [`Reducer::turn_id`] found last.
    last_turn: usize,
    intervals: Vec<IntervalRow>,
    open_interval: Option<usize>,
    /// The last root-session `turn/end` in the open interval: (seq, kind if a string).
    last_root_end: Option<(u64, Option<(Data, &'static str)>)>,
    /// Whether that end was inferred (`data.inferred`).
    last_root_end_inferred: bool,
    errors: Vec<ErrorRow>,
    tool_calls: Vec<ToolCallRow>,
    /// Every `tool/result` with a call id, in order: the first of each id decides, at the
    /// end ([`Reducer::join_tool_results`]).
    tool_results: Vec<ToolResult>,
    callbacks: Vec<CallbackRow>,
    /// For each callback, the turns it blocks (opening turn first, then ancestors).
    callback_blocks: Vec<Vec<usize>>,
    open_callbacks_by_id: HashMap<String, Vec<usize>>,
    runs: Vec<RunRow>,
    run_track: Vec<RunTrack>,
    current_run: Option<usize>,
    stray_idles: i64,
    seq_gaps: i64,
}

/// Each tool call's status and detail: those of the first result with its call id (slices
/// of the result's payload, so a copy is one more count on its block).
fn join_tool_results(results: &[ToolResult], tool_calls: &mut [ToolCallRow]) {
    if results.is_empty() {
        return;
    }
    let firsts = first_results(results, tool_calls);
    for (tc, r) in tool_calls.iter_mut().zip(firsts) {
        if let Some(r) = r {
            tc.status = results[r].status.clone();
            tc.detail = results[r].detail.clone();
        }
    }
}

/// For each tool call, the index of the first result with its call id.
fn first_results(results: &[ToolResult], tool_calls: &[ToolCallRow]) -> Vec<Option<usize>> {
    // A few results (most agents): looked through, no map to build.
    if results.len() <= 8 {
        return tool_calls
            .iter()
            .map(|tc| {
                let id = tc.call_id.as_deref()?;
                results.iter().position(|r| *r.call_id == *id)
            })
            .collect();
    }
    let mut first: HashMap<&str, usize> = HashMap::default();
    first.reserve(results.len());
    for (i, r) in results.iter().enumerate() {
        first.entry(r.call_id.as_str()).or_insert(i);
    }
    tool_calls
        .iter()
        .map(|tc| first.get(tc.call_id.as_deref()?).copied())
        .collect()
}

/// Gives an empty table room for `n` rows at its first row: agents that have one such row
/// mostly have several, and growing 4 → 8 → 16 copied the rows twice.
#[inline]
fn room<T>(v: &mut Vec<T>, n: usize) {
    if v.capacity() == 0 {
        v.reserve_exact(n);
    }
}

/// Up to this many turns, an agent's turns are found by looking through them: cheaper than
/// keeping a map for the few most agents have.
const TURNS_LOOKED_THROUGH: usize = 16;

/// The fields of a recorded Error shape.
struct ErrorFields {
    code: Option<String>,
    message: Option<String>,
    retryable: bool,
    http_status: Option<i64>,
    details_reason: Option<String>,
}

/// Reads a recorded Error (any field of the wrong type, or no Error at all, reads as absent).
fn error_fields(e: Option<Raw>) -> ErrorFields {
    let [code, message, retryable, details] = e.map_or([None; 4], |e| {
        e.fields(["code", "message", "retryable", "details"])
    });
    let [http_status, reason] = details.map_or([None; 2], |d| d.fields(["http_status", "reason"]));
    ErrorFields {
        code: code.and_then(Raw::string),
        message: message.and_then(Raw::string),
        retryable: retryable.and_then(Raw::as_bool).unwrap_or(false),
        http_status: http_status.and_then(Raw::as_i64),
        details_reason: reason.and_then(Raw::string),
    }
}

/// The payload members `keys` of an event (one of [`payload::keys`]' lists, the one for its
/// kind), through the event's index.
/// Whether an event's data says it was deduced by its importer (`inferred: true`), through
/// the event's index (turn ends and idles ask: a quarter of a persisted log's events).
fn data_inferred(ev: &Event) -> bool {
    ev.index.inferred(&ev.data)
}

fn members<'a, const N: usize>(ev: &'a Event, keys: [&str; N]) -> [Option<Raw<'a>>; N] {
    ev.index.members(&ev.data, keys)
}

/// A member's value, if a string, as a slice of the event's payload ([`Data::slice`]: a
/// count on the payload's block instead of a copy; an escaped string is unescaped into a
/// block of its own).
fn string_of(ev: &Event, v: Option<Raw>) -> Option<Data> {
    v?.as_str().map(|s| ev.data.slice(&s))
}

impl Reducer {
    /// A reducer for the agent `root`. With `keep_detail`, it keeps what state records need
    /// (texts, outputs) beyond what the tables need.
    pub fn new(root: &str, keep_detail: bool) -> Reducer {
        Reducer::with_root(Id::from(root), keep_detail)
    }

    fn with_root(root: Id, keep_detail: bool) -> Reducer {
        Reducer {
            root,
            keep_detail,
            last_seq: None,
            first_seq: 0,
            first_ts: 0,
            last_ts: 0,
            events: 0,
            sessions: HashMap::default(),
            turns: Vec::new(),
            turn_index: HashMap::default(),
            last_turn: 0,
            intervals: Vec::new(),
            open_interval: None,
            last_root_end: None,
            last_root_end_inferred: false,
            errors: Vec::new(),
            tool_calls: Vec::new(),
            tool_results: Vec::new(),
            callbacks: Vec::new(),
            callback_blocks: Vec::new(),
            open_callbacks_by_id: HashMap::default(),
            runs: Vec::new(),
            run_track: Vec::new(),
            current_run: None,
            stray_idles: 0,
            seq_gaps: 0,
        }
    }

    pub fn root(&self) -> &str {
        &self.root
    }

    /// The last cursor applied.
    pub fn cursor(&self) -> Option<u64> {
        self.last_seq
    }

    /// The turns seen so far, in order of first appearance.
    pub fn turn_ids(&self) -> impl Iterator<Item = TurnId> {
        (0..self.turns.len()).map(TurnId)
    }
}

#[cfg(test)]
mod tests;
