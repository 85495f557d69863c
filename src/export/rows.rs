//! What the exporter reads from the tables, one agent (root) at a time: its turns with their
//! interval and error, its model calls, tool calls, callbacks, run attempts and subagent
//! sessions. `read.rs` fills these from SQL; `trace.rs` turns them into spans.

use std::collections::HashMap;

/// One recorded error (a row of `errors`) as the exporter carries it.
#[derive(Debug, Clone, Default)]
pub struct ErrorRow {
    pub code: Option<String>,
    pub message: Option<String>,
    pub retryable: Option<bool>,
    pub http_status: Option<i64>,
    pub details_reason: Option<String>,
    pub retryable_expected: Option<bool>,
    pub retryable_mismatch: Option<bool>,
    pub status_consistent: Option<bool>,
    pub retried: Option<bool>,
    pub recovered: Option<bool>,
}

/// The interval a turn belongs to (a row of `intervals`).
#[derive(Debug, Clone, Default)]
pub struct IntervalRow {
    pub open_seq: i64,
    pub status: Option<String>,
    pub finish_reason: Option<String>,
    pub finish_class: Option<String>,
}

/// One turn (a row of `turns`) with the times of its events.
#[derive(Debug, Clone, Default)]
pub struct TurnRow {
    pub session: String,
    pub turn: String,
    pub is_root: bool,
    pub state: Option<String>,
    pub stop_reason: Option<String>,
    pub finish_class: Option<String>,
    pub cause: Option<String>,
    pub outcome: Option<String>,
    pub error_code: Option<String>,
    pub inferred: bool,
    pub protocol_error: Option<i64>,
    pub start_seq: i64,
    pub end_seq: Option<i64>,
    /// The time of the event at `start_seq`.
    pub start_ts: i64,
    /// The time of the event at `end_seq` (its `turn/end`).
    pub end_ts: Option<i64>,
    /// The time of the last event naming the turn (looked for only while the turn runs; its
    /// start otherwise).
    pub last_ts: i64,
    pub interval: Option<IntervalRow>,
    /// The turn's own error (a Failed turn's `errors` row, `source = 'turn'`).
    pub error: Option<ErrorRow>,
    /// The `turn/end` data as JSON text, read only for `--content`.
    pub end_data: Option<String>,
}

/// One `model/end` event and its error row.
#[derive(Debug, Clone, Default)]
pub struct ModelRow {
    pub session: String,
    pub turn: String,
    pub seq: i64,
    pub ts: i64,
    /// The event's data as JSON text (finish reason, usage, model, duration).
    pub data: String,
    pub error: Option<ErrorRow>,
}

/// One tool call (a row of `tool_calls`) with the times of its call and first result.
#[derive(Debug, Clone, Default)]
pub struct ToolRow {
    pub session: String,
    pub turn: String,
    pub call_id: String,
    pub seq: i64,
    pub ts: i64,
    pub name: String,
    pub status: Option<String>,
    pub detail: Option<String>,
    /// Read only for `--content`.
    pub arguments: Option<String>,
    /// The time of the first `tool/result` with the call's id.
    pub result_ts: Option<i64>,
}

/// One callback (a row of `callbacks`) with the times it opened and closed.
#[derive(Debug, Clone, Default)]
pub struct CallbackRow {
    pub session: String,
    pub turn: Option<String>,
    pub callback_id: String,
    pub kind: Option<String>,
    pub title: Option<String>,
    pub open_seq: i64,
    pub close_seq: Option<i64>,
    pub closed_by: Option<String>,
    pub open_ts: i64,
    pub close_ts: Option<i64>,
}

/// One run attempt (a row of `runs`) with the times it started and settled.
#[derive(Debug, Clone, Default)]
pub struct RunRow {
    pub run_id: String,
    pub attempt: Option<i64>,
    pub start_seq: i64,
    pub settle_seq: Option<i64>,
    pub settle: Option<String>,
    pub output_status: Option<String>,
    pub wait_for_kind: Option<String>,
    pub provisional_tail: Option<bool>,
    pub error_code: Option<String>,
    pub start_ts: i64,
    pub settle_ts: Option<i64>,
    /// The time of the agent's last event (where an unsettled attempt ends).
    pub last_ts: i64,
}

/// What a `session/start` says of its session.
#[derive(Debug, Clone, Default)]
pub struct SessionRow {
    pub name: Option<String>,
    pub model: Option<String>,
    pub parent: Option<String>,
    pub parent_turn: Option<String>,
}

/// Everything exported of one agent.
#[derive(Debug, Clone, Default)]
pub struct Agent {
    pub root: String,
    /// In `start_seq` order.
    pub turns: Vec<TurnRow>,
    /// In `seq` order.
    pub models: Vec<ModelRow>,
    pub tools: Vec<ToolRow>,
    pub callbacks: Vec<CallbackRow>,
    pub runs: Vec<RunRow>,
    pub sessions: HashMap<String, SessionRow>,
}
