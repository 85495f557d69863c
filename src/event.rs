//! The canonical event (EVENTS.md envelope) that every stage after ingest works on,
//! and the voice of each event type (SEMANTICS.md §6).

/// An id or event type: short text kept inline (up to 24 bytes) rather than on the heap.
/// A million events hold four of these each; as `String`s they cost four allocations and
/// about 64 heap bytes per event more.
pub type Id = compact_str::CompactString;

/// One kept event of a recorded session log.
///
/// `data` holds the payload as JSON text (`{}` when absent or null): stages that need a
/// field parse just that event's payload, lazily.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub seq: u64,
    /// Microseconds since the Unix epoch, UTC.
    pub ts: i64,
    pub root: Id,
    pub session: Id,
    pub turn: Option<Id>,
    pub kind: Id,
    pub data: String,
    /// Index of the input file in the ingest's sorted file list.
    pub file: u32,
    /// 1-based line number within that file.
    pub line: u64,
}

/// Who speaks through an event (SEMANTICS.md §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Voice {
    Lifecycle,
    Assistant,
    Reasoning,
    Progress,
    Log,
    Tool,
    Model,
    Interaction,
    Terminal,
    Unknown,
}

impl Voice {
    /// The voice of an event type.
    pub fn of(kind: &str) -> Voice {
        match kind {
            "inbox/receipt" | "agent/idle" | "turn/start" | "turn/end" | "turn/busy"
            | "turn/conflict" | "run.started" | "run.status" => Voice::Lifecycle,
            "text/delta" => Voice::Assistant,
            "reasoning/delta" => Voice::Reasoning,
            "progress" => Voice::Progress,
            "log" => Voice::Log,
            "tool/call" | "tool/result" => Voice::Tool,
            "model/end" => Voice::Model,
            "callback/open" | "callback/answer" => Voice::Interaction,
            "run.completed" | "run.failed" | "run.cancelled" => Voice::Terminal,
            // SEMANTICS.md §6 names these families by prefix: session/*, tool/*, callback/*.
            k if k.starts_with("session/") => Voice::Lifecycle,
            k if k.starts_with("tool/") => Voice::Tool,
            k if k.starts_with("callback/") => Voice::Interaction,
            _ => Voice::Unknown,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Voice::Lifecycle => "lifecycle",
            Voice::Assistant => "assistant",
            Voice::Reasoning => "reasoning",
            Voice::Progress => "progress",
            Voice::Log => "log",
            Voice::Tool => "tool",
            Voice::Model => "model",
            Voice::Interaction => "interaction",
            Voice::Terminal => "terminal",
            Voice::Unknown => "unknown",
        }
    }
}

/// Formats microseconds since the epoch as RFC 3339 UTC with microsecond precision.
pub fn format_ts(micros: i64) -> String {
    match chrono::DateTime::from_timestamp_micros(micros) {
        Some(t) => t.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string(),
        None => micros.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn voices_by_type_and_family() {
        assert_eq!(Voice::of("text/delta"), Voice::Assistant);
        assert_eq!(Voice::of("run.failed"), Voice::Terminal);
        assert_eq!(Voice::of("session/paused"), Voice::Lifecycle);
        assert_eq!(Voice::of("tool/progress"), Voice::Tool);
        assert_eq!(Voice::of("callback/expired"), Voice::Interaction);
        assert_eq!(Voice::of("turn/paused"), Voice::Unknown);
        assert_eq!(Voice::of("codex:token_count"), Voice::Unknown);
    }
}
