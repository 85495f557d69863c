//! Which events each derived table's columns depend on, so that a question over raw files
//! reads, keeps and reduces only those (`IngestOptions::keep`). A column is listed here
//! only when the reducer computes it from the events of the listed kinds alone, given that
//! the kept events are the ones a full ingest keeps (conflicts with lines of other types
//! are settled by the reader, `ingest::keep`); every other column needs every event.
//! The test `needs` in the core's tests reduces golden cases and generated logs with
//! anomalies both ways and compares these columns.

use crate::event::{Kind, KindSet};

/// The events an interval's boundaries and finish depend on (docs/semantics.md §2): the
/// root's receipts open and join, idles close, the last root turn end gives the reason.
const INTERVAL: KindSet = KindSet::of(&[Kind::InboxReceipt, Kind::AgentIdle, Kind::TurnEnd]);

/// The kinds of events the column `column` of `table` depends on, or `None` when it
/// depends on every event (a count of all of them, a `seq` gap, the payloads as stored)
/// or is not listed.
pub fn column_kinds(table: &str, column: &str) -> Option<KindSet> {
    let more = |kinds: &[Kind]| Some(INTERVAL.union(KindSet::of(kinds)));
    match (table, column) {
        (
            "intervals",
            "" | "root" | "open_seq" | "close_seq" | "opened_at" | "closed_at" | "status"
            | "finish_reason" | "finish_class" | "protocol_error" | "message_id"
            | "joined_messages" | "inferred",
        ) => Some(INTERVAL),
        ("intervals", "turns") => more(&[Kind::TurnStart]),
        ("intervals", "model_calls" | "input_tokens" | "output_tokens") => more(&[Kind::ModelEnd]),
        ("intervals", "errors") => more(&[Kind::ModelEnd, Kind::RunFailed]),
        ("intervals", "tool_calls") => more(&[Kind::ToolCall]),
        ("intervals", "busy") => more(&[Kind::TurnBusy]),
        ("intervals", "conflicts") => more(&[Kind::TurnConflict]),
        // An error row is a failed turn end, a model end with an error or a failed run;
        // whether it was retried or recovered, the later model ends and turn end of its turn.
        ("errors", _) => Some(KindSet::of(&[
            Kind::TurnEnd,
            Kind::ModelEnd,
            Kind::RunFailed,
        ])),
        // A call, and the first result with its id.
        ("tool_calls", _) => Some(KindSet::of(&[Kind::ToolCall, Kind::ToolResult])),
        // A callback opens, and closes at its answer or its turn's end.
        ("callbacks", _) => Some(KindSet::of(&[
            Kind::CallbackOpen,
            Kind::CallbackAnswer,
            Kind::TurnEnd,
        ])),
        _ => None,
    }
}

/// The kinds of events the given columns of the given tables depend on together (a
/// table read with no column, for its number of rows, as its column `""`), or `None` when
/// any of them depends on every event.
pub fn kinds_for<T: AsRef<str>, C: AsRef<str>>(
    reads: impl IntoIterator<Item = (T, Vec<C>)>,
) -> Option<KindSet> {
    let mut set = KindSet::EMPTY;
    for (table, columns) in reads {
        let table = table.as_ref();
        if columns.is_empty() {
            set = set.union(column_kinds(table, "")?);
        }
        for c in &columns {
            set = set.union(column_kinds(table, c.as_ref())?);
        }
    }
    Some(set)
}
