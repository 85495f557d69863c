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

/// The event types of EVENTS.md, so that the reducer tells them apart once per event
/// instead of comparing text in every rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    SessionStart,
    SessionEnd,
    InboxReceipt,
    AgentIdle,
    TurnStart,
    TurnEnd,
    TurnBusy,
    TurnConflict,
    ModelEnd,
    TextDelta,
    ReasoningDelta,
    Progress,
    Log,
    ToolCall,
    ToolResult,
    CallbackOpen,
    CallbackAnswer,
    RunStarted,
    RunStatus,
    RunCompleted,
    RunFailed,
    RunCancelled,
    /// A type EVENTS.md does not list (a newer runtime's): kept, passed over.
    Other,
}

impl Kind {
    /// The kind of an event `type`.
    pub fn of(kind: &str) -> Kind {
        match kind {
            "text/delta" => Kind::TextDelta,
            "reasoning/delta" => Kind::ReasoningDelta,
            "model/end" => Kind::ModelEnd,
            "tool/call" => Kind::ToolCall,
            "tool/result" => Kind::ToolResult,
            "turn/start" => Kind::TurnStart,
            "turn/end" => Kind::TurnEnd,
            "inbox/receipt" => Kind::InboxReceipt,
            "agent/idle" => Kind::AgentIdle,
            "callback/open" => Kind::CallbackOpen,
            "callback/answer" => Kind::CallbackAnswer,
            "log" => Kind::Log,
            "progress" => Kind::Progress,
            "session/start" => Kind::SessionStart,
            "session/end" => Kind::SessionEnd,
            "turn/busy" => Kind::TurnBusy,
            "turn/conflict" => Kind::TurnConflict,
            "run.started" => Kind::RunStarted,
            "run.status" => Kind::RunStatus,
            "run.completed" => Kind::RunCompleted,
            "run.failed" => Kind::RunFailed,
            "run.cancelled" => Kind::RunCancelled,
            _ => Kind::Other,
        }
    }
}

impl Voice {
    /// The voice of an event type.
    pub fn of(kind: &str) -> Voice {
        Voice::of_kind(Kind::of(kind), kind)
    }

    /// The voice of an event type whose [`Kind`] is known.
    pub fn of_kind(k: Kind, kind: &str) -> Voice {
        match k {
            Kind::InboxReceipt
            | Kind::AgentIdle
            | Kind::TurnStart
            | Kind::TurnEnd
            | Kind::TurnBusy
            | Kind::TurnConflict
            | Kind::RunStarted
            | Kind::RunStatus
            | Kind::SessionStart
            | Kind::SessionEnd => Voice::Lifecycle,
            Kind::TextDelta => Voice::Assistant,
            Kind::ReasoningDelta => Voice::Reasoning,
            Kind::Progress => Voice::Progress,
            Kind::Log => Voice::Log,
            Kind::ToolCall | Kind::ToolResult => Voice::Tool,
            Kind::ModelEnd => Voice::Model,
            Kind::CallbackOpen | Kind::CallbackAnswer => Voice::Interaction,
            Kind::RunCompleted | Kind::RunFailed | Kind::RunCancelled => Voice::Terminal,
            // SEMANTICS.md §6 names these families by prefix: session/*, tool/*, callback/*.
            Kind::Other if kind.starts_with("session/") => Voice::Lifecycle,
            Kind::Other if kind.starts_with("tool/") => Voice::Tool,
            Kind::Other if kind.starts_with("callback/") => Voice::Interaction,
            Kind::Other => Voice::Unknown,
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
