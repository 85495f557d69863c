//! Finish classes: one small vocabulary over every runtime's raw turn-end kinds, so runtimes
//! can be compared (`end_turn`, `task_complete`, `COMPLETED` and `STOP` are all `completed`).
//!
//! The raw kind stays the truth (`finish_reason`, `stop_reason`, `outcome` keep it as
//! written); the class is a column beside it (`finish_class` on `intervals` and `turns`).
//! [`TABLE`] is the whole mapping, documented in `docs/finish-class.md`. Kinds are looked up
//! folded: ASCII case ignored, `-` and spaces read as `_`. A kind the table does not know
//! is `other`. Where docs/semantics.md §3 gives a kind a turn state, its class agrees with that
//! state: Completed kinds are `completed`, `length`, `refused` or `waiting`; Interrupted
//! kinds `cancelled` or `interrupted`; Failed kinds `error`.

/// How a turn (or the interval it closed) finished, across runtimes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FinishClass {
    /// The turn ran to its natural end (a stop sequence counts).
    Completed,
    /// A token, context or request limit cut the output short.
    Length,
    /// The model or a safety filter declined or blocked the content.
    Refused,
    /// The turn failed (provider error, malformed model output, failed run).
    Error,
    /// The caller cancelled the turn or run (API cancel, abort signal).
    Cancelled,
    /// Stopped before its end by the user or the runtime, without a cancel of the run:
    /// interrupted interactively, replaced by a newer message, out of budget or time.
    Interrupted,
    /// Handed over and waiting: for a person (input, approval, review) or for tools.
    Waiting,
    /// A kind this table does not place (explicitly `other`/`unknown`, or new).
    Other,
}

impl FinishClass {
    /// Every class, in the order the docs and the report list them.
    pub const ALL: [FinishClass; 8] = [
        FinishClass::Completed,
        FinishClass::Length,
        FinishClass::Refused,
        FinishClass::Error,
        FinishClass::Cancelled,
        FinishClass::Interrupted,
        FinishClass::Waiting,
        FinishClass::Other,
    ];

    /// The class's name as the tables write it.
    pub const fn as_str(self) -> &'static str {
        match self {
            FinishClass::Completed => "completed",
            FinishClass::Length => "length",
            FinishClass::Refused => "refused",
            FinishClass::Error => "error",
            FinishClass::Cancelled => "cancelled",
            FinishClass::Interrupted => "interrupted",
            FinishClass::Waiting => "waiting",
            FinishClass::Other => "other",
        }
    }
}

use FinishClass::*;

/// Every known raw kind, folded (lower case, `_` for `-`), with its class and the runtimes
/// that write it. A kind written by several runtimes is listed once.
#[rustfmt::skip]
pub const TABLE: &[(&str, FinishClass, &str)] = &[
    // completed
    ("completed", Completed, "harness, OpenAI Responses, Kestrel (COMPLETED), canonical"),
    ("end_turn", Completed, "Anthropic, Claude Code, Codex (inferred), ACP"),
    ("task_complete", Completed, "Codex"),
    ("stop", Completed, "harness model steps, OpenCode, Gemini (STOP), OpenTelemetry GenAI, OpenAI Chat"),
    ("stop_sequence", Completed, "Anthropic, Claude Code"),
    ("skipped", Completed, "harness: the turn had nothing to do"),
    ("success", Completed, "Claude Code SDK result"),
    // length
    ("max_tokens", Length, "Anthropic, Claude Code, Gemini (MAX_TOKENS), ACP"),
    ("length", Length, "OpenCode, OpenTelemetry GenAI, OpenAI Chat"),
    ("max_output_tokens", Length, "OpenAI Responses (incomplete_details.reason)"),
    ("model_context_window_exceeded", Length, "Anthropic"),
    ("max_turn_requests", Length, "ACP"),
    ("error_max_turns", Length, "Claude Code SDK result"),
    ("incomplete", Length, "OpenAI Responses; refined by reason.cause (content_filter: refused)"),
    // refused
    ("refusal", Refused, "Anthropic, Claude Code, ACP, OpenAI"),
    ("content_filter", Refused, "OpenCode (content-filter), OpenTelemetry GenAI, OpenAI"),
    ("blocked", Refused, "harness: a guard blocked the turn"),
    ("safety", Refused, "Gemini"),
    ("recitation", Refused, "Gemini"),
    ("blocklist", Refused, "Gemini"),
    ("prohibited_content", Refused, "Gemini"),
    ("spii", Refused, "Gemini"),
    ("image_safety", Refused, "Gemini"),
    ("image_prohibited_content", Refused, "Gemini"),
    ("image_recitation", Refused, "Gemini"),
    ("language", Refused, "Gemini: unsupported language"),
    // error
    ("error", Error, "harness, Anthropic, Claude Code, OpenAI, OpenCode, OpenTelemetry GenAI"),
    ("failed", Error, "OpenAI Responses, Kestrel (FAILED)"),
    ("malformed_function_call", Error, "Gemini"),
    ("unexpected_tool_call", Error, "Gemini"),
    ("too_many_tool_calls", Error, "Gemini"),
    ("error_during_execution", Error, "Claude Code SDK result"),
    // cancelled
    ("cancelled", Cancelled, "OpenAI Responses, Kestrel (CANCELLED), ACP, canonical"),
    ("canceled", Cancelled, "the US spelling"),
    ("aborted", Cancelled, "harness (and its legacy disposed), Codex default"),
    // interrupted
    ("interrupted", Interrupted, "Claude Code, Codex, harness"),
    ("replaced", Interrupted, "Codex: a newer message replaced the turn"),
    ("review_ended", Interrupted, "Codex"),
    ("budget_limited", Interrupted, "harness"),
    ("timeout", Interrupted, "golden cases: a deadline stopped the turn"),
    // waiting
    ("waiting", Waiting, "Kestrel (WAITING)"),
    ("pause_turn", Waiting, "Anthropic, Claude Code: the server paused a long turn"),
    ("paused", Waiting, "golden cases"),
    ("paused_for_review", Waiting, "generated logs, golden cases: waits for a reviewer"),
    ("awaiting_input", Waiting, "generated logs: waits for the user"),
    ("input_required", Waiting, "A2A task state (input-required)"),
    ("requires_action", Waiting, "OpenAI Assistants runs"),
    ("handoff", Waiting, "generated logs: handed over to another agent or person"),
    ("deferred", Waiting, "generated logs: put off until later"),
    ("tool_use", Waiting, "Anthropic, Claude Code: the model called tools"),
    ("tool_calls", Waiting, "harness and OpenCode (tool-calls), OpenAI Chat: the model called tools"),
    ("tool_call", Waiting, "OpenTelemetry GenAI"),
    ("function_call", Waiting, "OpenAI Chat (legacy)"),
    // other, said so by the runtime
    ("other", Other, "OpenCode, Gemini (OTHER)"),
    ("unknown", Other, "OpenCode"),
    ("finish_reason_unspecified", Other, "Gemini"),
];

/// Longest folded kind the table can hold; longer kinds are `other` without a lookup.
const MAX_KIND: usize = 40;

/// The class of a raw turn-end kind. `cause` is the turn end's `reason.cause`: it refines
/// the umbrella kind `incomplete` (OpenAI Responses keeps `incomplete_details.reason` there),
/// so `incomplete` with cause `content_filter` is `refused`; every other kind ignores it.
pub fn finish_class(kind: &str, cause: Option<&str>) -> FinishClass {
    let class = lookup(kind);
    if class == Length && fold(kind).as_deref() == Some("incomplete") {
        if let Some(c) = cause.map(lookup).filter(|c| *c != Other) {
            return c;
        }
    }
    class
}

fn lookup(kind: &str) -> FinishClass {
    let Some(k) = fold(kind) else {
        return Other;
    };
    TABLE
        .iter()
        .find(|(known, _, _)| *known == &*k)
        .map_or(Other, |(_, class, _)| *class)
}

/// The kind folded for lookup, on the stack: ASCII lower case, `-` and ` ` as `_`. `None`
/// when longer than any known kind.
fn fold(kind: &str) -> Option<Folded> {
    let b = kind.as_bytes();
    if b.len() > MAX_KIND {
        return None;
    }
    let mut buf = [0u8; MAX_KIND];
    for (d, s) in buf.iter_mut().zip(b) {
        *d = match s.to_ascii_lowercase() {
            b'-' | b' ' => b'_',
            c => c,
        };
    }
    Some(Folded { buf, len: b.len() })
}

/// A folded kind (ASCII-only changes, so it stays UTF-8).
struct Folded {
    buf: [u8; MAX_KIND],
    len: usize,
}

impl std::ops::Deref for Folded {
    type Target = str;
    fn deref(&self) -> &str {
        std::str::from_utf8(&self.buf[..self.len]).unwrap_or("")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reduce::rules::{end_class, EndClass};

    /// Every raw kind the importers write, the samples and golden cases hold, and the new
    /// runtimes document, as written, with the class a reader would give it.
    const KINDS: &[(&str, &str)] = &[
        // harness (turn ends and model-step finishes)
        ("completed", "completed"),
        ("max-tokens", "length"),
        ("aborted", "cancelled"),
        ("error", "error"),
        ("interrupted", "interrupted"),
        ("skipped", "completed"),
        ("blocked", "refused"),
        ("budget_limited", "interrupted"),
        ("stop", "completed"),
        ("tool-calls", "waiting"),
        // Kestrel
        ("COMPLETED", "completed"),
        ("FAILED", "error"),
        ("CANCELLED", "cancelled"),
        ("WAITING", "waiting"),
        // Codex
        ("task_complete", "completed"),
        ("end_turn", "completed"),
        ("replaced", "interrupted"),
        ("review_ended", "interrupted"),
        // Claude Code, Anthropic
        ("max_tokens", "length"),
        ("stop_sequence", "completed"),
        ("tool_use", "waiting"),
        ("refusal", "refused"),
        ("pause_turn", "waiting"),
        ("model_context_window_exceeded", "length"),
        // OpenAI Responses
        ("incomplete", "length"),
        ("failed", "error"),
        ("cancelled", "cancelled"),
        // Gemini
        ("STOP", "completed"),
        ("MAX_TOKENS", "length"),
        ("SAFETY", "refused"),
        ("RECITATION", "refused"),
        ("BLOCKLIST", "refused"),
        ("PROHIBITED_CONTENT", "refused"),
        ("SPII", "refused"),
        ("MALFORMED_FUNCTION_CALL", "error"),
        ("OTHER", "other"),
        ("FINISH_REASON_UNSPECIFIED", "other"),
        // OpenCode
        ("length", "length"),
        ("content-filter", "refused"),
        ("other", "other"),
        ("unknown", "other"),
        // OpenTelemetry GenAI
        ("content_filter", "refused"),
        ("tool_call", "waiting"),
        // generated and golden outcomes of newer runtimes
        ("paused_for_review", "waiting"),
        ("paused", "waiting"),
        ("awaiting_input", "waiting"),
        ("handoff", "waiting"),
        ("deferred", "waiting"),
        ("timeout", "interrupted"),
        ("Completed", "completed"),
    ];

    #[test]
    fn every_known_kind_has_its_class() {
        for (kind, class) in KINDS {
            assert_eq!(finish_class(kind, None).as_str(), *class, "{kind}");
        }
    }

    #[test]
    fn folding_ignores_case_dash_and_space() {
        assert_eq!(finish_class("Max-Tokens", None), Length);
        assert_eq!(finish_class("end turn", None), Completed);
        assert_eq!(finish_class("TOOL-CALLS", None), Waiting);
        assert_eq!(finish_class("stöp", None), Other);
        assert_eq!(finish_class("", None), Other);
        assert_eq!(finish_class(&"x".repeat(MAX_KIND + 1), None), Other);
        assert_eq!(finish_class("paused_for_reviews", None), Other);
    }

    #[test]
    fn incomplete_is_refined_by_its_cause() {
        assert_eq!(
            finish_class("incomplete", Some("max_output_tokens")),
            Length
        );
        assert_eq!(finish_class("incomplete", Some("content_filter")), Refused);
        assert_eq!(finish_class("incomplete", Some("made_up")), Length);
        // Other kinds keep their own class whatever the cause.
        assert_eq!(finish_class("interrupted", Some("cancelled")), Interrupted);
        assert_eq!(finish_class("CANCELLED", Some("timeout")), Cancelled);
    }

    #[test]
    fn table_is_folded_and_has_no_duplicates() {
        let mut seen = std::collections::HashSet::new();
        for (kind, _, _) in TABLE {
            assert_eq!(fold(kind).as_deref(), Some(*kind), "{kind} is not folded");
            assert!(seen.insert(*kind), "{kind} listed twice");
        }
    }

    /// The class never contradicts the docs/semantics.md §3 state of the same kind.
    #[test]
    fn classes_agree_with_turn_states() {
        for (kind, _) in KINDS {
            let class = finish_class(kind, None);
            let allowed: &[FinishClass] = match end_class(kind) {
                EndClass::Completed(_) => &[Completed, Length, Refused, Waiting],
                EndClass::Interrupted => &[Cancelled, Interrupted],
                EndClass::Failed => &[Error],
                EndClass::Unknown => continue,
            };
            assert!(allowed.contains(&class), "{kind}: {class:?}");
        }
    }

    /// docs/finish-class.md lists every entry of the table under its class.
    #[test]
    fn the_docs_list_the_table() {
        let doc = include_str!("../../../../docs/finish-class.md");
        let mut class = "";
        let mut listed = Vec::new();
        for line in doc.lines().filter(|l| l.starts_with("| ")) {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            if cells.len() < 4 || !cells[2].starts_with('`') {
                continue;
            }
            if !cells[1].is_empty() {
                class = cells[1].trim_matches('`');
            }
            listed.push((cells[2].trim_matches('`').to_string(), class.to_string()));
        }
        let table: Vec<(String, String)> = TABLE
            .iter()
            .map(|(k, c, _)| (k.to_string(), c.as_str().to_string()))
            .collect();
        assert_eq!(listed, table);
    }

    #[test]
    fn every_class_is_used_and_named_once() {
        let names: std::collections::HashSet<_> =
            FinishClass::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(names.len(), FinishClass::ALL.len());
        for c in FinishClass::ALL {
            assert!(TABLE.iter().any(|(_, class, _)| *class == c), "{c:?}");
        }
    }
}
