//! The fixed tables of docs/semantics.md: raw turn-end kinds to turn states (§3) and the
//! error-code table with its retryability and HTTP-status rules (§4).

/// The state a known raw `turn/end` kind maps to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndClass {
    /// Completed; `true` when the raw kind becomes the `stop_reason`.
    Completed(bool),
    Interrupted,
    Failed,
    Unknown,
}

/// Maps a raw `reason.kind` to its state class (docs/semantics.md §3).
pub fn end_class(kind: &str) -> EndClass {
    match kind {
        "completed" | "end_turn" | "COMPLETED" | "task_complete" => EndClass::Completed(false),
        "max_tokens" | "max-tokens" | "skipped" | "blocked" | "stop_sequence" | "refusal"
        | "incomplete" => EndClass::Completed(true),
        "cancelled" | "interrupted" | "aborted" | "CANCELLED" | "replaced" | "review_ended"
        | "budget_limited" => EndClass::Interrupted,
        "error" | "failed" | "FAILED" => EndClass::Failed,
        _ => EndClass::Unknown,
    }
}

/// Kinds whose Interrupted cause defaults to `cancelled`.
pub fn is_cancel_kind(kind: &str) -> bool {
    matches!(kind, "cancelled" | "aborted" | "CANCELLED")
}

/// Which HTTP statuses a code may carry.
enum Statuses {
    /// No status is expected: any status is inconsistent.
    None,
    /// Every status is accepted.
    Any,
    /// Only these.
    Only(fn(i64) -> bool),
}

fn statuses(code: &str) -> Option<Statuses> {
    Some(match code {
        "completion_rejected" => {
            Statuses::Only(|s| (400..500).contains(&s) && ![401, 403, 408, 409, 429].contains(&s))
        }
        "completion_unauthorized" => Statuses::Only(|s| s == 401 || s == 403),
        "completion_rate_limited" => Statuses::Only(|s| s == 429),
        "completion_unavailable" => {
            Statuses::Only(|s| s == 409 || s == 429 || (500..600).contains(&s))
        }
        "completion_timed_out" => Statuses::Only(|s| s == 408),
        "completion_context_too_large" => Statuses::Only(|s| (400..500).contains(&s)),
        "completion_billing_denied" | "remote_session_failed" | "turn_failed" => Statuses::Any,
        "completion_failed"
        | "completion_failed_permanently"
        | "capability_execution_failed"
        | "tool_raised"
        | "tool_output_schema_mismatch"
        | "invalid_compaction_summary"
        | "compaction_request_too_large"
        | "compaction_replacement_too_large" => Statuses::None,
        _ => return None,
    })
}

/// Every code of the table, for generators and reports.
pub const KNOWN_CODES: &[&str] = &[
    "completion_rejected",
    "completion_unauthorized",
    "completion_rate_limited",
    "completion_unavailable",
    "completion_timed_out",
    "completion_context_too_large",
    "completion_billing_denied",
    "completion_failed",
    "completion_failed_permanently",
    "remote_session_failed",
    "capability_execution_failed",
    "tool_raised",
    "tool_output_schema_mismatch",
    "invalid_compaction_summary",
    "compaction_request_too_large",
    "compaction_replacement_too_large",
    "turn_failed",
];

/// What the code's documented rule says about retrying (NULL where it does not decide).
pub fn retryable_expected(
    code: Option<&str>,
    http_status: Option<i64>,
    details_reason: Option<&str>,
) -> Option<bool> {
    match code? {
        "completion_rejected" | "completion_unauthorized" => Some(false),
        "completion_rate_limited" => Some(true),
        "completion_unavailable" => match http_status {
            Some(502..=504) => Some(true),
            _ => None,
        },
        "completion_timed_out" => Some(details_reason != Some("time_limit")),
        "completion_context_too_large" => Some(matches!(
            details_reason,
            Some("after_compaction") | Some("minimal_summary_request")
        )),
        "completion_billing_denied" => Some(false),
        "completion_failed" => Some(true),
        "completion_failed_permanently"
        | "remote_session_failed"
        | "capability_execution_failed"
        | "tool_raised"
        | "tool_output_schema_mismatch"
        | "invalid_compaction_summary"
        | "compaction_request_too_large"
        | "compaction_replacement_too_large" => Some(false),
        _ => None,
    }
}

/// Whether a present HTTP status is in the code's column (NULL without status or known code).
pub fn status_consistent(code: Option<&str>, http_status: Option<i64>) -> Option<bool> {
    let status = http_status?;
    Some(match statuses(code?)? {
        Statuses::None => false,
        Statuses::Any => true,
        Statuses::Only(f) => f(status),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_table() {
        assert_eq!(
            retryable_expected(Some("completion_unavailable"), Some(503), None),
            Some(true)
        );
        assert_eq!(
            retryable_expected(Some("completion_unavailable"), Some(500), None),
            None
        );
        assert_eq!(
            retryable_expected(Some("completion_unavailable"), None, None),
            None
        );
        assert_eq!(
            retryable_expected(Some("completion_timed_out"), None, Some("time_limit")),
            Some(false)
        );
        assert_eq!(
            retryable_expected(Some("completion_timed_out"), Some(408), None),
            Some(true)
        );
        assert_eq!(
            retryable_expected(
                Some("completion_context_too_large"),
                None,
                Some("after_compaction")
            ),
            Some(true)
        );
        assert_eq!(
            retryable_expected(Some("completion_context_too_large"), Some(400), None),
            Some(false)
        );
        assert_eq!(retryable_expected(Some("turn_failed"), None, None), None);
        assert_eq!(retryable_expected(Some("made_up"), None, None), None);
        assert_eq!(retryable_expected(None, None, None), None);
        assert_eq!(
            status_consistent(Some("completion_rejected"), Some(400)),
            Some(true)
        );
        assert_eq!(
            status_consistent(Some("completion_rejected"), Some(429)),
            Some(false)
        );
        assert_eq!(
            status_consistent(Some("completion_unavailable"), Some(409)),
            Some(true)
        );
        assert_eq!(
            status_consistent(Some("completion_unavailable"), Some(400)),
            Some(false)
        );
        assert_eq!(
            status_consistent(Some("completion_failed"), Some(500)),
            Some(false)
        );
        assert_eq!(
            status_consistent(Some("completion_billing_denied"), Some(402)),
            Some(true)
        );
        assert_eq!(status_consistent(Some("completion_failed"), None), None);
        assert_eq!(status_consistent(Some("unknown_code"), Some(500)), None);
        assert_eq!(status_consistent(None, Some(500)), None);
    }

    #[test]
    fn kinds() {
        assert_eq!(end_class("completed"), EndClass::Completed(false));
        assert_eq!(end_class("max-tokens"), EndClass::Completed(true));
        assert_eq!(end_class("aborted"), EndClass::Interrupted);
        assert_eq!(end_class("FAILED"), EndClass::Failed);
        assert_eq!(end_class("paused_for_review"), EndClass::Unknown);
    }
}
