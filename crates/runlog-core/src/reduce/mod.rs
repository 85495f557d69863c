//! The interval reducer: replays one agent's events in `seq` order and derives owned run
//! intervals, turn states, errors with their retryability, tool calls, callbacks and run
//! attempts (docs/semantics.md §2–§5).
//!
//! [`Reducer`] is incremental: it takes one event at a time and says which turn the event
//! changed, so the same code serves batch ingest ([`reduce_agent`]) and live monitoring
//! (`runlog replay --follow`). [`Reducer::finish`] turns its state into table rows.

mod drive;
mod finish;
pub mod finish_class;
pub mod needs;
mod record;
mod rows;
pub mod rules;

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

    fn turn_id(&mut self, session_id: &Id, turn_id: &Id, seq: u64) -> usize {
        // Most events name the turn the event before named: compare before hashing (ids
        // the reader shared compare as pointers).
        if let Some(last) = self.turns.get(self.last_turn) {
            if last.turn == *turn_id && last.session == *session_id {
                return self.last_turn;
            }
        }
        self.find_or_add_turn(session_id, turn_id, seq)
    }

    /// [`Reducer::turn_id`] of a turn other than the last event's.
    #[inline(never)]
    fn find_or_add_turn(&mut self, session_id: &Id, turn_id: &Id, seq: u64) -> usize {
        let (session, turn) = (session_id.as_str(), turn_id.as_str());
        if let Some(i) = self.lookup_turn(session, turn) {
            self.last_turn = i;
            return i;
        }
        self.last_turn = self.turns.len();
        let i = self.turns.len();
        room(&mut self.turns, 8);
        self.turns.push(TurnState {
            session: session_id.clone(),
            turn: turn_id.clone(),
            is_root: session == self.root,
            interval_open_seq: self.open_interval.map(|k| self.intervals[k].open_seq),
            start_seq: seq,
            has_start: false,
            end_seq: None,
            end: None,
            end_inferred: false,
            end_class: None,
            delta_chars: 0,
            end_text_len: None,
            delta_text: String::new(),
            open_callbacks: Vec::new(),
            opened_callbacks: Vec::new(),
            tool_call_count: 0,
            tool_calls: Vec::new(),
            model_calls: 0,
            input_tokens: 0,
            output_tokens: 0,
            pending_model_errors: Vec::new(),
            model_errors: Vec::new(),
        });
        if self.turns.len() > TURNS_LOOKED_THROUGH {
            // Index every turn the first time, then each new one.
            let first = if self.turn_index.is_empty() { 0 } else { i };
            for t in first..=i {
                let (session, turn) = (&self.turns[t].session, &self.turns[t].turn);
                match self.turn_index.get_mut(session.as_str()) {
                    Some(turns) => {
                        turns.insert(turn.clone(), t);
                    }
                    None => {
                        let mut turns = HashMap::default();
                        turns.insert(turn.clone(), t);
                        self.turn_index.insert(session.clone(), turns);
                    }
                }
            }
        }
        // A turn first named after a session/start named it as its spawner: the callbacks
        // already open in that subtree block it too (docs/semantics.md §3).
        if self
            .sessions
            .values()
            .any(|s| s.parent.as_deref() == Some(session) && s.parent_turn.as_deref() == Some(turn))
        {
            self.relink_open_callbacks();
        }
        i
    }

    /// Adds the turns up the spawn chain that open callbacks do not block yet (the chain
    /// grew after they opened), keeping each turn's open callbacks in opening order.
    fn relink_open_callbacks(&mut self) {
        for cb in 0..self.callbacks.len() {
            if self.callbacks[cb].closed_by.is_some() {
                continue;
            }
            let session = self.callbacks[cb].session.clone();
            let opener = self.callbacks[cb]
                .turn
                .as_deref()
                .and_then(|t| self.lookup_turn(&session, t));
            for t in self.blocked_turns(&session, opener) {
                if !self.callback_blocks[cb].contains(&t) {
                    self.callback_blocks[cb].push(t);
                    self.turns[t].open_callbacks.push(cb);
                    self.turns[t].open_callbacks.sort_unstable();
                }
            }
        }
    }

    fn lookup_turn(&self, session: &str, turn: &str) -> Option<usize> {
        if self.turns.len() <= TURNS_LOOKED_THROUGH {
            // Each (session, turn) has one TurnState.
            return self
                .turns
                .iter()
                .position(|t| t.turn.as_str() == turn && t.session.as_str() == session);
        }
        self.turn_index.get(session)?.get(turn).copied()
    }

    fn record_error(&mut self, ev: &Event, source: &'static str, e: Option<Raw>) -> usize {
        let f = error_fields(e);
        let expected = rules::retryable_expected(
            f.code.as_deref(),
            f.http_status,
            f.details_reason.as_deref(),
        );
        let i = self.errors.len();
        self.errors.push(ErrorRow {
            root: self.root.clone(),
            session: ev.session.clone(),
            turn: ev.turn.clone(),
            seq: ev.seq as i64,
            ts: ev.ts,
            source,
            status_consistent: rules::status_consistent(f.code.as_deref(), f.http_status),
            retryable_mismatch: expected.map(|x| x != f.retryable),
            retryable_expected: expected,
            code: f.code,
            message: f.message,
            retryable: f.retryable,
            http_status: f.http_status,
            details_reason: f.details_reason,
            retried: if source == "model" { Some(false) } else { None },
            recovered: if source == "model" { Some(false) } else { None },
        });
        if let Some(k) = self.open_interval {
            self.intervals[k].errors += 1;
        }
        i
    }

    fn close_callback(&mut self, cb: usize, seq: u64, by: &'static str) {
        if self.callbacks[cb].closed_by.is_some() {
            return;
        }
        self.callbacks[cb].close_seq = Some(seq as i64);
        self.callbacks[cb].closed_by = Some(by);
        for &t in &self.callback_blocks[cb] {
            self.turns[t].open_callbacks.retain(|&c| c != cb);
        }
        if let Some(id) = &self.callbacks[cb].callback_id {
            if let Some(v) = self.open_callbacks_by_id.get_mut(id) {
                v.retain(|&c| c != cb);
                if v.is_empty() {
                    self.open_callbacks_by_id.remove(id);
                }
            }
        }
    }

    /// The turns a callback opened in (`session`, `turn`) blocks: the opening turn, then the
    /// turn that spawned the session, and so on up the tree.
    fn blocked_turns(&self, session: &str, turn: Option<usize>) -> Vec<usize> {
        let mut out: Vec<usize> = turn.into_iter().collect();
        let mut s = session;
        for _ in 0..256 {
            let Some(info) = self.sessions.get(s) else {
                break;
            };
            let (Some(p), pt) = (info.parent.as_deref(), info.parent_turn.as_deref()) else {
                break;
            };
            if let Some(pt) = pt {
                if let Some(t) = self.lookup_turn(p, pt) {
                    if !out.contains(&t) {
                        out.push(t);
                    }
                }
            }
            if p == s {
                break;
            }
            s = p;
        }
        out
    }

    /// Applies the next event of this agent. Events must come in increasing `seq`; an
    /// event at or before the last cursor is ignored (`None`).
    pub fn apply(&mut self, ev: &Event) -> Option<Applied> {
        let seq = ev.seq;
        if let Some(last) = self.last_seq {
            if seq <= last {
                return None;
            }
        }
        let prev = self.last_seq;
        self.last_seq = Some(seq);
        if self.events == 0 {
            self.first_seq = seq;
            self.first_ts = ev.ts;
        }
        self.last_ts = ev.ts;
        self.events += 1;
        if let Some(p) = prev {
            if seq - p > 1 {
                self.seq_gaps += 1;
                if let Some(k) = self.open_interval {
                    self.intervals[k].seq_gaps += 1;
                }
            }
        }

        debug_assert!(
            ev.index == PayloadIndex::NONE || ev.index == PayloadIndex::of(&ev.kind, &ev.data),
            "the payload index of seq {seq} is not that of its type and data (changed after?)"
        );
        let kind = ev.index.kind(&ev.kind);

        // The turn this event names (refusals name no turn of their own).
        let turn_idx = match (&ev.turn, kind) {
            (_, Kind::TurnBusy) | (_, Kind::TurnConflict) => None,
            (Some(t), _) => Some(self.turn_id(&ev.session, t, seq)),
            (None, _) => None,
        };
        let turn = turn_idx.map(TurnId);

        // Deltas, most events, touch only their turn and the current run attempt: no
        // interval boundary or count, no payload but the text's length.
        if let Kind::TextDelta | Kind::ReasoningDelta = kind {
            // `count_on_run` for a delta, written out: calling it cost ~5 instructions per
            // event on this path.
            if let Some(i) = self.current_run {
                let row = &mut self.runs[i];
                if kind == Kind::TextDelta {
                    row.assistant_deltas += 1;
                } else {
                    row.reasoning_deltas += 1;
                }
                self.run_track[i].last_was_delta = true;
            }
            if let (Kind::TextDelta, Some(t)) = (kind, turn_idx) {
                self.text_delta(ev, t);
            }
            return Some(Applied {
                cursor: seq,
                turn,
                opened_interval: false,
                closed_interval: false,
            });
        }
        // The boundaries come back by value and `Applied` is built here, in the caller's
        // slot: filled in place across the call, its fields were written by separate stores
        // and read back as one wider copy, which stalled (perf: ~9% of the reducer's time on
        // that copy).
        let (opened_interval, closed_interval) = self.apply_other(ev, kind, turn_idx);
        Some(Applied {
            cursor: seq,
            turn,
            opened_interval,
            closed_interval,
        })
    }

    /// A `text/delta` of turn `t`: its length counts on the turn until the turn ends.
    fn text_delta(&mut self, ev: &Event, t: usize) {
        let ts = &mut self.turns[t];
        if ts.end.is_none() {
            if let Some(n) = ev.index.text_chars(&ev.data) {
                ts.delta_chars += n;
                if self.keep_detail {
                    let [text] = members(ev, keys::DELTA);
                    let text = text.and_then(Raw::as_str);
                    ts.delta_text.push_str(&text.unwrap_or_default());
                }
            }
        }
    }

    /// [`Reducer::apply`] of an event that is not a delta: whether it opened an interval,
    /// and whether it closed one.
    #[inline(never)]
    fn apply_other(&mut self, ev: &Event, kind: Kind, turn_idx: Option<usize>) -> (bool, bool) {
        let seq = ev.seq;
        // Interval boundaries and counts. Only receipts and turn ends ask whether the
        // event is the root session's.
        let is_root_session =
            matches!(kind, Kind::InboxReceipt | Kind::TurnEnd) && ev.session == self.root;
        let mut boundary = false;
        let (mut opened, mut closed) = (false, false);
        match kind {
            Kind::InboxReceipt if is_root_session && self.open_interval.is_none() => {
                self.intervals.push(IntervalRow {
                    root: self.root.clone(),
                    open_seq: seq as i64,
                    close_seq: None,
                    opened_at: ev.ts,
                    closed_at: None,
                    status: "unsettled",
                    finish_reason: None,
                    finish_class: None,
                    protocol_error: None,
                    message_id: string_of(ev, members(ev, keys::RECEIPT)[0]),
                    joined_messages: 0,
                    turns: 0,
                    model_calls: 0,
                    errors: 0,
                    tool_calls: 0,
                    input_tokens: 0,
                    output_tokens: 0,
                    busy: 0,
                    conflicts: 0,
                    seq_gaps: 0,
                    inferred: false,
                });
                self.open_interval = Some(self.intervals.len() - 1);
                self.last_root_end = None;
                opened = true;
                boundary = true;
            }
            Kind::AgentIdle => {
                boundary = true;
                match self.open_interval.take() {
                    Some(k) => {
                        let iv = &mut self.intervals[k];
                        iv.close_seq = Some(seq as i64);
                        iv.closed_at = Some(ev.ts);
                        iv.inferred =
                            std::mem::take(&mut self.last_root_end_inferred) || data_inferred(ev);
                        match self.last_root_end.take() {
                            Some((s, None)) => {
                                iv.status = "protocol_error";
                                iv.protocol_error = Some(s as i64);
                            }
                            Some((_, Some((k, class)))) => {
                                iv.status = "settled";
                                iv.finish_reason = Some(k);
                                iv.finish_class = Some(class);
                            }
                            None => iv.status = "settled",
                        }
                        closed = true;
                    }
                    None => self.stray_idles += 1,
                }
            }
            _ => {}
        }
        if !boundary {
            if let Some(k) = self.open_interval {
                let iv = &mut self.intervals[k];
                match kind {
                    Kind::InboxReceipt if is_root_session => iv.joined_messages += 1,
                    Kind::TurnStart => iv.turns += 1,
                    Kind::ToolCall => iv.tool_calls += 1,
                    Kind::TurnBusy => iv.busy += 1,
                    Kind::TurnConflict => iv.conflicts += 1,
                    _ => {}
                }
            }
        }

        // Run attempts: count the event on the attempt it falls in.
        if self.current_run.is_some()
            || matches!(
                kind,
                Kind::RunStarted | Kind::RunCompleted | Kind::RunFailed | Kind::RunCancelled
            )
        {
            self.track_run(ev, kind);
        }

        match kind {
            Kind::SessionStart => {
                let [parent, parent_turn] = members(ev, keys::SESSION_START);
                let info = self.sessions.entry(ev.session.clone()).or_default();
                info.parent = parent.and_then(Raw::string);
                info.parent_turn = parent_turn.and_then(Raw::string);
                self.relink_open_callbacks();
            }
            Kind::SessionEnd => {
                let [status] = members(ev, keys::SESSION_END);
                let status = status.and_then(Raw::as_str);
                if status.as_deref() == Some("cancelled") {
                    let info = self.sessions.entry(ev.session.clone()).or_default();
                    info.cancelled_at.get_or_insert(seq);
                }
            }
            Kind::TurnStart => {
                if let Some(t) = turn_idx {
                    let open = self.open_interval.map(|k| self.intervals[k].open_seq);
                    let ts = &mut self.turns[t];
                    if !ts.has_start {
                        ts.has_start = true;
                        ts.start_seq = seq;
                        ts.interval_open_seq = open;
                    }
                }
            }
            Kind::ModelEnd => {
                let [_, error, input, output] = members(ev, keys::MODEL_END);
                let input = input.and_then(Raw::as_i64).unwrap_or(0);
                let output = output.and_then(Raw::as_i64).unwrap_or(0);
                if let Some(k) = self.open_interval {
                    let iv = &mut self.intervals[k];
                    iv.model_calls += 1;
                    iv.input_tokens += input;
                    iv.output_tokens += output;
                }
                let err = if error.is_some_and(Raw::is_object) {
                    Some(self.record_error(ev, "model", error))
                } else {
                    None
                };
                if let Some(t) = turn_idx {
                    let pending = std::mem::take(&mut self.turns[t].pending_model_errors);
                    for e in pending {
                        self.errors[e].retried = Some(true);
                    }
                    let ts = &mut self.turns[t];
                    ts.model_calls += 1;
                    ts.input_tokens += input;
                    ts.output_tokens += output;
                    if let Some(e) = err {
                        ts.pending_model_errors.push(e);
                        ts.model_errors.push(e);
                        // After the turn's end, that end already says whether it recovered.
                        if let Some(end) = &ts.end {
                            let completed = matches!(end, TurnEnd::Completed { .. });
                            self.errors[e].recovered = Some(completed);
                        }
                    }
                }
            }
            Kind::TurnEnd => self.turn_end(ev, turn_idx, is_root_session),
            Kind::ToolCall => {
                let [call_id, name, arguments] = members(ev, keys::TOOL_CALL);
                let i = self.tool_calls.len();
                room(&mut self.tool_calls, 16);
                self.tool_calls.push(ToolCallRow {
                    root: self.root.clone(),
                    session: ev.session.clone(),
                    turn: ev.turn.clone(),
                    call_id: string_of(ev, call_id),
                    seq: seq as i64,
                    name: string_of(ev, name),
                    arguments: arguments
                        .filter(|a| !a.is_null())
                        .map(|a| ev.data.slice(a.text())),
                    status: None,
                    detail: None,
                });
                if let Some(t) = turn_idx {
                    let ts = &mut self.turns[t];
                    ts.tool_call_count += 1;
                    if self.keep_detail {
                        ts.tool_calls.push(i);
                    }
                }
            }
            Kind::ToolResult => {
                let [id, status, detail] = members(ev, keys::TOOL_RESULT);
                if let Some(call_id) = string_of(ev, id) {
                    room(&mut self.tool_results, 16);
                    self.tool_results.push(ToolResult {
                        call_id,
                        status: string_of(ev, status),
                        detail: string_of(ev, detail),
                    });
                }
            }
            Kind::CallbackOpen => {
                let [id, cb_kind, title] = members(ev, keys::CALLBACK_OPEN);
                let i = self.callbacks.len();
                let id = id.and_then(Raw::string);
                self.callbacks.push(CallbackRow {
                    root: self.root.clone(),
                    session: ev.session.clone(),
                    turn: ev.turn.clone(),
                    callback_id: id.clone(),
                    kind: cb_kind.and_then(Raw::string),
                    title: title.and_then(Raw::string),
                    open_seq: seq as i64,
                    close_seq: None,
                    closed_by: None,
                });
                let blocks = self.blocked_turns(&ev.session, turn_idx);
                for &t in &blocks {
                    self.turns[t].open_callbacks.push(i);
                }
                if let Some(t) = turn_idx {
                    self.turns[t].opened_callbacks.push(i);
                }
                self.callback_blocks.push(blocks);
                if let Some(id) = id {
                    self.open_callbacks_by_id.entry(id).or_default().push(i);
                }
            }
            Kind::CallbackAnswer => {
                let [id] = members(ev, keys::CALLBACK_ANSWER);
                let id = id.and_then(Raw::as_str);
                if let Some(id) = id {
                    let open = self.open_callbacks_by_id.get(id.as_ref());
                    if let Some(&cb) = open.and_then(|v| v.first()) {
                        self.close_callback(cb, seq, "answer");
                    }
                }
            }
            Kind::RunFailed => {
                let [_, _, _, e] = members(ev, keys::RUN_SETTLED);
                self.record_error(ev, "run", e);
            }
            _ => {}
        }
        (opened, closed)
    }

    fn turn_end(&mut self, ev: &Event, turn_idx: Option<usize>, is_root_session: bool) {
        let seq = ev.seq;
        let [reason, text, output, output_error] = members(ev, keys::TURN_END);
        let [kind, cause, inner_reason, error] = reason.map_or([None; 4], |r| {
            r.fields(["kind", "cause", "reason", "error"])
        });
        let kind = string_of(ev, kind);
        let mut fclass = kind.as_deref().map(|k| {
            let cause = cause.and_then(Raw::as_str);
            finish_class(k, cause.as_deref()).as_str()
        });
        let inferred = data_inferred(ev);
        if is_root_session && self.open_interval.is_some() {
            self.last_root_end = Some((seq, kind.clone().zip(fclass)));
            self.last_root_end_inferred = inferred;
        }
        let class = kind.as_deref().map(end_class);
        let text_len = ev.index.text_chars(&ev.data);
        let text = if self.keep_detail {
            text.and_then(Raw::string)
        } else {
            None
        };
        if class == Some(EndClass::Failed) {
            self.record_error(ev, "turn", error);
        }
        let Some(t) = turn_idx else {
            return;
        };
        if self.turns[t].end.is_some() {
            return; // The first end of a turn decides its state.
        }
        let end = match (class, kind) {
            (None, _) | (_, None) => TurnEnd::Malformed,
            (Some(EndClass::Completed(with_reason)), Some(k)) => {
                let output = if self.keep_detail {
                    let out = match output {
                        Some(o) => o.to_value(),
                        None => Value::String(text.clone().unwrap_or_default()),
                    };
                    Some(match output_error {
                        Some(err) => {
                            let raw = output.map_or(Value::Null, Raw::to_value);
                            json!({"invalid": {"raw": raw, "error": err.to_value()}})
                        }
                        None => out,
                    })
                } else {
                    None
                };
                TurnEnd::Completed {
                    stop_reason: with_reason.then_some(k),
                    text,
                    output,
                }
            }
            (Some(EndClass::Interrupted), Some(k)) => {
                let cancelled_session = self
                    .sessions
                    .get(ev.session.as_str())
                    .and_then(|s| s.cancelled_at)
                    .is_some_and(|c| c > self.turns[t].start_seq && c < seq);
                let cause = string_of(ev, cause)
                    .or_else(|| string_of(ev, inner_reason.and_then(|r| r.get("kind"))))
                    .unwrap_or_else(|| {
                        if is_cancel_kind(&k) || cancelled_session {
                            "cancelled".into()
                        } else {
                            "interrupted".into()
                        }
                    });
                // The turn's class reads its state too: an Interrupted turn whose cause is
                // `cancelled` (said so, or it ended with its cancelled session) was cancelled.
                if &*cause == "cancelled" {
                    fclass = Some(FinishClass::Cancelled.as_str());
                }
                TurnEnd::Interrupted { cause }
            }
            (Some(EndClass::Failed), Some(_)) => TurnEnd::Failed {
                error: error.map(|e| e.text().to_string()),
                code: string_of(ev, error.and_then(|e| e.get("code"))),
                text,
            },
            (Some(EndClass::Unknown), Some(k)) => TurnEnd::Unknown {
                outcome: k,
                raw: if self.keep_detail {
                    reason.map(|r| r.text().to_string())
                } else {
                    None
                },
                text,
            },
        };
        let completed = matches!(end, TurnEnd::Completed { .. });
        let ts = &mut self.turns[t];
        ts.end = Some(end);
        ts.end_inferred = inferred;
        ts.end_class = fclass;
        ts.end_seq = Some(seq);
        ts.end_text_len = text_len;
        let opened = ts.opened_callbacks.clone();
        let model_errors = ts.model_errors.clone();
        for cb in opened {
            self.close_callback(cb, seq, "turn_end");
        }
        for e in model_errors {
            self.errors[e].recovered = Some(completed);
        }
    }

    fn track_run(&mut self, ev: &Event, kind: Kind) {
        match kind {
            Kind::RunStarted => {
                let [run_id, attempt] = members(ev, keys::RUN_STARTED);
                let run_id = run_id.and_then(Raw::string);
                let attempt = attempt.and_then(Raw::as_i64);
                self.runs.push(RunRow {
                    root: self.root.clone(),
                    run_id,
                    attempt,
                    start_seq: ev.seq as i64,
                    settle_seq: None,
                    settle: "unsettled",
                    output_status: None,
                    wait_for_kind: None,
                    assistant_text_len: None,
                    provisional_tail: false,
                    error_code: None,
                    assistant_deltas: 0,
                    reasoning_deltas: 0,
                    progress_events: 0,
                    tool_events: 0,
                    log_events: 0,
                    interaction_events: 0,
                });
                self.run_track.push(RunTrack::default());
                self.current_run = Some(self.runs.len() - 1);
            }
            Kind::RunCompleted | Kind::RunFailed | Kind::RunCancelled => {
                // Whatever attempt it settles (maybe another, or none), this event is the
                // current attempt's last so far, and it is not a delta (§5).
                if let Some(c) = self.current_run {
                    self.run_track[c].last_was_delta = false;
                }
                let [run_id, attempt, output, error] = members(ev, keys::RUN_SETTLED);
                let run_id = run_id.and_then(Raw::as_str);
                let attempt = attempt.and_then(Raw::as_i64);
                let found = (0..self.runs.len()).rev().find(|&i| {
                    !self.run_track[i].settled
                        && self.runs[i].run_id.as_deref() == run_id.as_deref()
                        && (attempt.is_none() || self.runs[i].attempt == attempt)
                });
                let Some(i) = found else {
                    return;
                };
                self.run_track[i].settled = true;
                let row = &mut self.runs[i];
                row.settle_seq = Some(ev.seq as i64);
                match kind {
                    Kind::RunCompleted => {
                        row.settle = "completed";
                        let [status, wait_for, text] = output.map_or([None; 3], |o| {
                            o.fields(["status", "waitFor", "assistantText"])
                        });
                        row.output_status = status.and_then(Raw::string);
                        row.wait_for_kind =
                            wait_for.and_then(|w| w.get("kind")).and_then(Raw::string);
                        row.assistant_text_len = text.and_then(Raw::char_len);
                    }
                    Kind::RunFailed => {
                        row.settle = "failed";
                        row.error_code = error.and_then(|e| e.get("code")).and_then(Raw::string);
                    }
                    _ => row.settle = "cancelled",
                }
                if self.current_run == Some(i) {
                    self.current_run = None;
                }
            }
            _ => self.count_on_run(ev, kind),
        }
    }

    /// Counts an event that is not a run event on the current attempt, if one is open.
    fn count_on_run(&mut self, ev: &Event, kind: Kind) {
        let Some(i) = self.current_run else {
            return;
        };
        let row = &mut self.runs[i];
        // Counted by voice (docs/semantics.md §5, §6), so every type of a voice counts.
        match Voice::of_kind(kind, &ev.kind) {
            Voice::Assistant => row.assistant_deltas += 1,
            Voice::Reasoning => row.reasoning_deltas += 1,
            Voice::Progress => row.progress_events += 1,
            Voice::Log => row.log_events += 1,
            Voice::Tool => row.tool_events += 1,
            Voice::Interaction => row.interaction_events += 1,
            _ => {}
        }
        self.run_track[i].last_was_delta = matches!(kind, Kind::TextDelta | Kind::ReasoningDelta);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(seq: u64, session: &str, turn: Option<&str>, kind: &str, data: &str) -> Event {
        Event {
            seq,
            ts: seq as i64,
            root: "r".into(),
            session: session.into(),
            turn: turn.map(Into::into),
            kind: kind.into(),
            data: data.into(),
            file: 0,
            line: seq,
            index: PayloadIndex::of(kind, data),
        }
    }

    /// Past 16 turns the reducer finds turns through a map, and past 8 tool results it
    /// joins them through one: the rows are what the rules say either way. Turns in two
    /// sessions are written to again after many others; a call's first result decides, a
    /// result may come before its call, and two calls may share an id.
    #[test]
    fn many_turns_and_tool_results_are_found() {
        let mut evs = Vec::new();
        let mut seq = 0;
        let mut push =
            |evs: &mut Vec<Event>, session: &str, turn: Option<&str>, kind: &str, data: &str| {
                seq += 1;
                evs.push(event(seq, session, turn, kind, data));
            };
        push(&mut evs, "r", None, "inbox/receipt", "{}");
        push(&mut evs, "c", None, "session/start", r#"{"parent":"r"}"#);
        let session = |k: usize| if k % 2 == 0 { "r" } else { "c" };
        for k in 0..40 {
            let t = format!("t{k}");
            push(&mut evs, session(k), Some(&t), "turn/start", "{}");
            let text = format!(r#"{{"text":"{}"}}"#, "x".repeat(k));
            push(&mut evs, session(k), Some(&t), "text/delta", &text);
        }
        for k in 0..40 {
            let t = format!("t{k}");
            push(
                &mut evs,
                session(k),
                Some(&t),
                "text/delta",
                r#"{"text":"ab"}"#,
            );
        }
        push(
            &mut evs,
            "r",
            Some("t0"),
            "tool/result",
            r#"{"call_id":"early","status":"e"}"#,
        );
        for k in 0..12 {
            let call = format!(r#"{{"call_id":"c{k}","name":"n"}}"#);
            push(&mut evs, "r", Some("t0"), "tool/call", &call);
            let result = format!(r#"{{"call_id":"c{k}","status":"ok{k}"}}"#);
            push(&mut evs, "r", Some("t0"), "tool/result", &result);
        }
        for (kind, data) in [
            ("tool/result", r#"{"call_id":"c3","status":"late"}"#),
            ("tool/call", r#"{"call_id":"early","name":"n"}"#),
            ("tool/call", r#"{"call_id":"dup","name":"n"}"#),
            ("tool/result", r#"{"call_id":"dup","status":"d"}"#),
            ("tool/call", r#"{"call_id":"dup","name":"n"}"#),
            ("tool/call", r#"{"call_id":"none","name":"n"}"#),
        ] {
            push(&mut evs, "r", Some("t0"), kind, data);
        }

        for few in [false, true] {
            // The same log cut to 8 turns and 8 results takes the paths without maps.
            let evs: Vec<Event> = if few {
                evs.iter()
                    .filter(|e| {
                        let t = e.turn.as_deref().unwrap_or("t0");
                        t[1..].parse::<usize>().unwrap() < 8 && e.kind != "tool/call"
                    })
                    .cloned()
                    .collect()
            } else {
                evs.clone()
            };
            let d = reduce_agent("r", &evs);
            let turns = if few { 8 } else { 40 };
            assert_eq!(d.turns.len(), turns);
            for (k, row) in d.turns.iter().enumerate() {
                assert_eq!(row.turn.as_str(), format!("t{k}"));
                assert_eq!(row.session.as_str(), session(k));
                assert_eq!(row.text_len, Some(k as i64 + 2), "t{k}");
            }
            if few {
                continue;
            }
            let status: Vec<(String, Option<String>)> = d
                .tool_calls
                .iter()
                .map(|c| {
                    let status = c.status.as_deref().map(str::to_string);
                    (c.call_id.as_deref().unwrap().to_string(), status)
                })
                .collect();
            let mut want: Vec<(String, Option<String>)> = (0..12)
                .map(|k| (format!("c{k}"), Some(format!("ok{k}"))))
                .collect();
            want.push(("early".into(), Some("e".into())));
            want.push(("dup".into(), Some("d".into())));
            want.push(("dup".into(), Some("d".into())));
            want.push(("none".into(), None));
            assert_eq!(status, want);
        }
    }
}
