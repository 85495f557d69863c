//! The rows the reducer makes, one struct per derived table, and [`Derived`], the tables of
//! one or many agents (docs/semantics.md §8 lists every column).

use crate::event::{Data, Id};

/// A row of `intervals`.
#[derive(Debug, Clone, PartialEq)]
pub struct IntervalRow {
    pub root: Id,
    pub open_seq: i64,
    pub close_seq: Option<i64>,
    pub opened_at: i64,
    pub closed_at: Option<i64>,
    pub status: &'static str,
    pub finish_reason: Option<Data>,
    /// The class of `finish_reason` ([`finish_class`]); NULL with it.
    pub finish_class: Option<&'static str>,
    pub protocol_error: Option<i64>,
    pub message_id: Option<Data>,
    pub joined_messages: i64,
    pub turns: i64,
    pub model_calls: i64,
    pub errors: i64,
    pub tool_calls: i64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub busy: i64,
    pub conflicts: i64,
    pub seq_gaps: i64,
    /// Settled by an end the importer deduced (`data.inferred` on the closing idle or on
    /// the last root `turn/end` in it), not by one the log recorded.
    pub inferred: bool,
}

/// A row of `turns`.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnRow {
    pub root: Id,
    pub session: Id,
    pub turn: Id,
    pub is_root: bool,
    pub interval_open_seq: Option<i64>,
    pub start_seq: i64,
    pub end_seq: Option<i64>,
    pub state: Option<&'static str>,
    pub stop_reason: Option<Data>,
    pub cause: Option<Data>,
    pub outcome: Option<Data>,
    pub error_code: Option<Data>,
    pub text_len: Option<i64>,
    pub tool_calls: i64,
    pub model_calls: i64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub protocol_error: Option<i64>,
    /// The class of the kind of the turn end that decided its state ([`finish_class`]);
    /// NULL while the turn has not ended, or when that end has no string kind.
    pub finish_class: Option<&'static str>,
    /// Its end was deduced by the importer (`data.inferred: true` on the `turn/end`).
    pub inferred: bool,
}

/// A row of `errors`.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorRow {
    pub root: Id,
    pub session: Id,
    pub turn: Option<Id>,
    pub seq: i64,
    pub ts: i64,
    pub source: &'static str,
    pub code: Option<String>,
    pub message: Option<String>,
    pub retryable: bool,
    pub http_status: Option<i64>,
    pub details_reason: Option<String>,
    pub retryable_expected: Option<bool>,
    pub retryable_mismatch: Option<bool>,
    pub status_consistent: Option<bool>,
    pub retried: Option<bool>,
    pub recovered: Option<bool>,
}

/// A row of `tool_calls`.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallRow {
    pub root: Id,
    pub session: Id,
    pub turn: Option<Id>,
    pub call_id: Option<Data>,
    pub seq: i64,
    pub name: Option<Data>,
    /// The arguments as JSON text.
    pub arguments: Option<Data>,
    pub status: Option<Data>,
    pub detail: Option<Data>,
}

/// A row of `callbacks`.
#[derive(Debug, Clone, PartialEq)]
pub struct CallbackRow {
    pub root: Id,
    pub session: Id,
    pub turn: Option<Id>,
    pub callback_id: Option<String>,
    pub kind: Option<String>,
    pub title: Option<String>,
    pub open_seq: i64,
    pub close_seq: Option<i64>,
    pub closed_by: Option<&'static str>,
}

/// A row of `runs`.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRow {
    pub root: Id,
    pub run_id: Option<String>,
    pub attempt: Option<i64>,
    pub start_seq: i64,
    pub settle_seq: Option<i64>,
    pub settle: &'static str,
    pub output_status: Option<String>,
    pub wait_for_kind: Option<String>,
    pub assistant_text_len: Option<i64>,
    pub provisional_tail: bool,
    pub error_code: Option<String>,
    pub assistant_deltas: i64,
    pub reasoning_deltas: i64,
    pub progress_events: i64,
    pub tool_events: i64,
    pub log_events: i64,
    pub interaction_events: i64,
}

/// A row of `agents` (docs/semantics.md §8): per-root facts with no other home,
/// such as stray idles.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentRow {
    pub root: Id,
    pub events: i64,
    pub sessions: i64,
    pub first_seq: i64,
    pub last_seq: i64,
    pub first_ts: i64,
    pub last_ts: i64,
    pub intervals: i64,
    pub stray_idles: i64,
    pub seq_gaps: i64,
}

/// The derived tables of one or many agents.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Derived {
    pub intervals: Vec<IntervalRow>,
    pub turns: Vec<TurnRow>,
    pub errors: Vec<ErrorRow>,
    pub tool_calls: Vec<ToolCallRow>,
    pub callbacks: Vec<CallbackRow>,
    pub runs: Vec<RunRow>,
    pub agents: Vec<AgentRow>,
}

impl Derived {
    /// All parts' rows, in order. Each table is allocated once at its exact size: appended
    /// to tables grown by doubling, they held up to twice their rows.
    pub fn concat(parts: Vec<Derived>) -> Derived {
        fn sized<T>(parts: &[Derived], table: impl Fn(&Derived) -> &Vec<T>) -> Vec<T> {
            Vec::with_capacity(parts.iter().map(|p| table(p).len()).sum())
        }
        let mut out = Derived {
            intervals: sized(&parts, |p| &p.intervals),
            turns: sized(&parts, |p| &p.turns),
            errors: sized(&parts, |p| &p.errors),
            tool_calls: sized(&parts, |p| &p.tool_calls),
            callbacks: sized(&parts, |p| &p.callbacks),
            runs: sized(&parts, |p| &p.runs),
            agents: sized(&parts, |p| &p.agents),
        };
        for p in parts {
            out.append(p);
        }
        out
    }

    /// Gives every table room for `times` as many rows as it has, and an eighth more.
    pub(super) fn reserve_for(&mut self, times: f64) {
        fn room<T>(v: &mut Vec<T>, times: f64) {
            let want = (v.len() as f64 * times * 1.125) as usize;
            v.reserve(want.saturating_sub(v.len()));
        }
        room(&mut self.intervals, times);
        room(&mut self.turns, times);
        room(&mut self.errors, times);
        room(&mut self.tool_calls, times);
        room(&mut self.callbacks, times);
        room(&mut self.runs, times);
        room(&mut self.agents, times);
    }

    /// Appends another agent's rows.
    pub fn append(&mut self, mut other: Derived) {
        self.intervals.append(&mut other.intervals);
        self.turns.append(&mut other.turns);
        self.errors.append(&mut other.errors);
        self.tool_calls.append(&mut other.tool_calls);
        self.callbacks.append(&mut other.callbacks);
        self.runs.append(&mut other.runs);
        self.agents.append(&mut other.agents);
    }
}
