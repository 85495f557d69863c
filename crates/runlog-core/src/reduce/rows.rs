//! The rows the reducer makes: each derived table's one definition (its row struct and
//! columns, in column order, through [`define_table!`]), and [`Derived`], the tables of one
//! or many agents (docs/semantics.md §8 lists every column).
//!
//! To add a column to a derived table: add it to the table's definition here and set it in
//! the reducer rule that fills it. The store's Arrow schema, record batches and Parquet
//! settings follow from the definition.

use crate::event::{Data, Id};
use crate::table::{
    define_table, ColumnDef, Row, Table, EVENTS_COLUMNS, FILES_COLUMNS, REJECTS_COLUMNS,
};

define_table! {
    /// A row of `intervals`.
    #[derive(Debug, Clone, PartialEq)]
    pub struct IntervalRow: Intervals {
        root: Id => Text [distinct],
        open_seq: i64 => Int,
        close_seq: Option<i64> => OptInt,
        opened_at: i64 => Ts,
        closed_at: Option<i64> => OptTs,
        status: &'static str => Text,
        finish_reason: Option<Data> => OptText,
        protocol_error: Option<i64> => OptInt,
        message_id: Option<Data> => OptText [distinct],
        joined_messages: i64 => Int,
        turns: i64 => Int,
        model_calls: i64 => Int,
        errors: i64 => Int,
        tool_calls: i64 => Int,
        input_tokens: i64 => Int,
        output_tokens: i64 => Int,
        busy: i64 => Int,
        conflicts: i64 => Int,
        seq_gaps: i64 => Int,
        /// Settled by an end the importer deduced (`data.inferred` on the closing idle or on
        /// the last root `turn/end` in it), not by one the log recorded.
        inferred: bool => Bool,
        /// The class of `finish_reason` ([`finish_class`]); NULL with it.
        finish_class: Option<&'static str> => OptText,
    }
}

define_table! {
    /// A row of `turns`.
    #[derive(Debug, Clone, PartialEq)]
    pub struct TurnRow: Turns {
        root: Id => Text [distinct],
        session: Id => Text [distinct],
        turn: Id => Text [distinct],
        is_root: bool => Bool,
        interval_open_seq: Option<i64> => OptInt,
        start_seq: i64 => Int,
        end_seq: Option<i64> => OptInt,
        state: Option<&'static str> => OptText,
        stop_reason: Option<Data> => OptText,
        cause: Option<Data> => OptText,
        outcome: Option<Data> => OptText,
        error_code: Option<Data> => OptText,
        text_len: Option<i64> => OptInt,
        tool_calls: i64 => Int,
        model_calls: i64 => Int,
        input_tokens: i64 => Int,
        output_tokens: i64 => Int,
        protocol_error: Option<i64> => OptInt,
        /// Its end was deduced by the importer (`data.inferred: true` on the `turn/end`).
        inferred: bool => Bool,
        /// The class of the kind of the turn end that decided its state ([`finish_class`]);
        /// NULL while the turn has not ended, or when that end has no string kind.
        finish_class: Option<&'static str> => OptText,
    }
}

define_table! {
    /// A row of `errors`.
    #[derive(Debug, Clone, PartialEq)]
    pub struct ErrorRow: Errors {
        root: Id => Text [distinct],
        session: Id => Text [distinct],
        turn: Option<Id> => OptText [distinct],
        seq: i64 => Int [distinct],
        ts: i64 => Ts [distinct],
        source: &'static str => Text,
        code: Option<String> => OptText,
        message: Option<String> => OptText [distinct],
        retryable: bool => Bool,
        http_status: Option<i64> => OptInt,
        details_reason: Option<String> => OptText,
        retryable_expected: Option<bool> => OptBool,
        retryable_mismatch: Option<bool> => OptBool,
        status_consistent: Option<bool> => OptBool,
        retried: Option<bool> => OptBool,
        recovered: Option<bool> => OptBool,
    }
}

define_table! {
    /// A row of `tool_calls`.
    #[derive(Debug, Clone, PartialEq)]
    pub struct ToolCallRow: ToolCalls {
        root: Id => Text [distinct],
        session: Id => Text [distinct],
        turn: Option<Id> => OptText [distinct],
        call_id: Option<Data> => OptText [distinct],
        seq: i64 => Int [distinct],
        name: Option<Data> => OptText,
        /// The arguments as JSON text.
        arguments: Option<Data> => OptText [distinct],
        status: Option<Data> => OptText,
        detail: Option<Data> => OptText [distinct],
    }
}

define_table! {
    /// A row of `callbacks`.
    #[derive(Debug, Clone, PartialEq)]
    pub struct CallbackRow: Callbacks {
        root: Id => Text [distinct],
        session: Id => Text [distinct],
        turn: Option<Id> => OptText [distinct],
        callback_id: Option<String> => OptText [distinct],
        kind: Option<String> => OptText,
        title: Option<String> => OptText,
        open_seq: i64 => Int,
        close_seq: Option<i64> => OptInt,
        closed_by: Option<&'static str> => OptText,
    }
}

define_table! {
    /// A row of `runs`.
    #[derive(Debug, Clone, PartialEq)]
    pub struct RunRow: Runs {
        root: Id => Text [distinct],
        run_id: Option<String> => OptText [distinct],
        attempt: Option<i64> => OptInt,
        start_seq: i64 => Int,
        settle_seq: Option<i64> => OptInt,
        settle: &'static str => Text,
        output_status: Option<String> => OptText,
        wait_for_kind: Option<String> => OptText,
        assistant_text_len: Option<i64> => OptInt,
        provisional_tail: bool => Bool,
        error_code: Option<String> => OptText,
        assistant_deltas: i64 => Int,
        reasoning_deltas: i64 => Int,
        progress_events: i64 => Int,
        tool_events: i64 => Int,
        log_events: i64 => Int,
        interaction_events: i64 => Int,
    }
}

define_table! {
    /// A row of `agents` (docs/semantics.md §8): per-root facts with no other home,
    /// such as stray idles.
    #[derive(Debug, Clone, PartialEq)]
    pub struct AgentRow: Agents {
        root: Id => Text [distinct],
        events: i64 => Int,
        sessions: i64 => Int,
        first_seq: i64 => Int,
        last_seq: i64 => Int,
        first_ts: i64 => Ts,
        last_ts: i64 => Ts,
        intervals: i64 => Int,
        stray_idles: i64 => Int,
        seq_gaps: i64 => Int,
    }
}

impl Table {
    /// The table's columns, in order: a derived table's from its row's definition above,
    /// the others' from [`crate::table`].
    pub const fn columns(self) -> &'static [ColumnDef] {
        match self {
            Table::Events => EVENTS_COLUMNS,
            Table::Intervals => IntervalRow::COLUMNS,
            Table::Turns => TurnRow::COLUMNS,
            Table::Errors => ErrorRow::COLUMNS,
            Table::ToolCalls => ToolCallRow::COLUMNS,
            Table::Callbacks => CallbackRow::COLUMNS,
            Table::Runs => RunRow::COLUMNS,
            Table::Rejects => REJECTS_COLUMNS,
            Table::Agents => AgentRow::COLUMNS,
            Table::Files => FILES_COLUMNS,
        }
    }
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
