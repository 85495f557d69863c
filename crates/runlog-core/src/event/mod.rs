//! The canonical event (docs/events.md envelope) that every stage after ingest works on,
//! and the voice of each event type (docs/semantics.md §6).

/// An id or event type: shared, immutable text behind one 8-byte pointer (a clone counts a
/// reference; equal pointers compare equal without reading the text). The reader hands
/// every event of a file the same `Id` for the same root, session, turn or type, so a
/// million events hold four pointers each, not four copies: as inline 24-byte strings they
/// took 64 bytes more per event, the largest part of ingest's memory.
pub type Id = arcstr::ArcStr;

pub mod data;
pub mod kind_set;
pub mod payload;

pub use data::{prefetched, Data, DataArena, DataBuf};
pub use kind_set::KindSet;
pub use payload::PayloadIndex;

/// One kept event of a recorded session log.
///
/// `data` holds the payload as JSON text (`{}` when absent or null), in a block shared with
/// other events' ([`Data`]): stages that need a field parse just that event's payload,
/// lazily. `index` says where the members the reducer reads are; it belongs to `kind` and
/// `data` as they were when the event was made (an event whose `data` changes needs
/// `PayloadIndex::of` again).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub seq: u64,
    /// Microseconds since the Unix epoch, UTC.
    pub ts: i64,
    pub root: Id,
    pub session: Id,
    pub turn: Option<Id>,
    pub kind: Id,
    pub data: Data,
    /// Index of the input file in the ingest's sorted file list.
    pub file: u32,
    /// 1-based line number within that file.
    pub line: u64,
    /// Where the members of `data` the reducer reads are: built by
    /// [`PayloadIndex::of`]`(&kind, &data)` when the event is made.
    pub index: PayloadIndex,
}

/// Who speaks through an event (docs/semantics.md §6).
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

/// The event types of docs/events.md, so that the reducer tells them apart once per event
/// instead of comparing text in every rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
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
    /// A type docs/events.md does not list (a newer runtime's): kept, passed over.
    #[default]
    Other,
}

/// Every listed type and its name: the one table [`Kind::of`] and [`Kind::name`] read.
const KINDS: [(Kind, &str); 22] = [
    (Kind::TextDelta, "text/delta"),
    (Kind::ReasoningDelta, "reasoning/delta"),
    (Kind::ModelEnd, "model/end"),
    (Kind::ToolCall, "tool/call"),
    (Kind::ToolResult, "tool/result"),
    (Kind::TurnStart, "turn/start"),
    (Kind::TurnEnd, "turn/end"),
    (Kind::InboxReceipt, "inbox/receipt"),
    (Kind::AgentIdle, "agent/idle"),
    (Kind::CallbackOpen, "callback/open"),
    (Kind::CallbackAnswer, "callback/answer"),
    (Kind::Log, "log"),
    (Kind::Progress, "progress"),
    (Kind::SessionStart, "session/start"),
    (Kind::SessionEnd, "session/end"),
    (Kind::TurnBusy, "turn/busy"),
    (Kind::TurnConflict, "turn/conflict"),
    (Kind::RunStarted, "run.started"),
    (Kind::RunStatus, "run.status"),
    (Kind::RunCompleted, "run.completed"),
    (Kind::RunFailed, "run.failed"),
    (Kind::RunCancelled, "run.cancelled"),
];

/// [`KINDS`]' names of 8 to 16 bytes as [`Kind::of`] compares them: length, first eight
/// and last eight bytes (overlapping) as integers. Other names get `(0, 0, 0)`, which no
/// type of 8 to 16 bytes equals.
const WORDS: [(usize, u64, u64); 22] = {
    let mut out = [(0, 0, 0); 22];
    let mut k = 0;
    while k < KINDS.len() {
        let name = KINDS[k].1.as_bytes();
        let n = name.len();
        if n >= 8 && n <= 16 {
            let mut first = [0u8; 8];
            let mut last = [0u8; 8];
            let mut i = 0;
            while i < 8 {
                first[i] = name[i];
                last[i] = name[n - 8 + i];
                i += 1;
            }
            out[k] = (n, u64::from_le_bytes(first), u64::from_le_bytes(last));
        }
        k += 1;
    }
    out
};

/// Multiplier of the hash that puts each of [`WORDS`] in its own slot of [`SLOTS`] (found by
/// trying random odd multipliers; [`SLOTS`] fails to compile if two ever share a slot).
const HASH_MUL: u64 = 0x705c_d3ed_9a40_8c5b;

/// The slot of a type of `n` bytes (8 to 16) whose first and last eight bytes are given.
const fn slot(n: usize, first: u64, last: u64) -> usize {
    ((first ^ (last >> 1) ^ n as u64).wrapping_mul(HASH_MUL) >> 59) as usize
}

/// Per slot, 1 + the index in [`KINDS`] of the listed type of 8 to 16 bytes hashed there;
/// 0 for none.
const SLOTS: [u8; 32] = {
    let mut out = [0u8; 32];
    let mut k = 0;
    while k < WORDS.len() {
        let (n, first, last) = WORDS[k];
        if n != 0 {
            let s = slot(n, first, last);
            assert!(
                out[s] == 0,
                "two event types share a slot: pick another HASH_MUL"
            );
            out[s] = k as u8 + 1;
        }
        k += 1;
    }
    out
};

/// Every kind, at its discriminant (`kind as usize`): [`Kind::from_u8`] reads it.
const BY_DISCRIMINANT: [Kind; 23] = {
    use Kind::*;
    let all = [
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
        Other,
    ];
    let mut i = 0;
    while i < all.len() {
        assert!(all[i] as usize == i, "BY_DISCRIMINANT out of order");
        i += 1;
    }
    all
};

impl Kind {
    /// The kind whose discriminant (`kind as u8`) is `b`, for compact encodings (the spill's
    /// records); `None` for a byte no kind has.
    pub fn from_u8(b: u8) -> Option<Kind> {
        BY_DISCRIMINANT.get(usize::from(b)).copied()
    }

    /// The kind of an event `type`.
    #[inline]
    pub fn of(kind: &str) -> Kind {
        Kind::of_bytes(kind.as_bytes())
    }

    /// The kind of an event `type` given as its bytes: a listed type's kind, else
    /// [`Kind::Other`] (whether or not the bytes are UTF-8; every listed type is ASCII).
    pub fn of_bytes(b: &[u8]) -> Kind {
        // Listed types of 8 to 16 bytes (all but `log`) are looked up by a perfect hash of
        // their length, first and last eight bytes, and confirmed by comparing those three
        // integers: one slot read and one comparison, not text against every name.
        let n = b.len();
        if !(8..=16).contains(&n) {
            return KINDS
                .iter()
                .find(|(_, name)| name.as_bytes() == b)
                .map_or(Kind::Other, |&(k, _)| k);
        }
        let first = u64::from_le_bytes(b[..8].try_into().expect("8 bytes"));
        let last = u64::from_le_bytes(b[n - 8..].try_into().expect("8 bytes"));
        match SLOTS[slot(n, first, last)] {
            0 => Kind::Other,
            s => {
                let i = usize::from(s) - 1;
                if WORDS[i] == (n, first, last) {
                    KINDS[i].0
                } else {
                    Kind::Other
                }
            }
        }
    }

    /// The type this kind stands for (`None` for [`Kind::Other`]).
    pub fn name(self) -> Option<&'static str> {
        KINDS
            .iter()
            .find(|&&(k, _)| k == self)
            .map(|&(_, name)| name)
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
            // docs/semantics.md §6 names these families by prefix: session/*, tool/*, callback/*.
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

/// Whether two byte strings are equal, for the short texts ids and payload keys are:
/// strings of 4 to 16 bytes are compared as two (overlapping) words each, inline, where
/// `==` calls `memcmp` (3.4% of the core's instructions on a persisted log, callgrind,
/// mostly for such compares).
#[inline(always)]
pub(crate) fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    let word = |s: &[u8], i: usize| u64::from_le_bytes(s[i..i + 8].try_into().expect("8 bytes"));
    let half = |s: &[u8], i: usize| u32::from_le_bytes(s[i..i + 4].try_into().expect("4 bytes"));
    match n {
        8..=16 => word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8),
        4..=7 => half(a, 0) == half(b, 0) && half(a, n - 4) == half(b, n - 4),
        0..=3 => a.iter().zip(b).all(|(x, y)| x == y),
        _ => a == b,
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
    fn kinds_by_name() {
        let all = [
            Kind::SessionStart,
            Kind::SessionEnd,
            Kind::InboxReceipt,
            Kind::AgentIdle,
            Kind::TurnStart,
            Kind::TurnEnd,
            Kind::TurnBusy,
            Kind::TurnConflict,
            Kind::ModelEnd,
            Kind::TextDelta,
            Kind::ReasoningDelta,
            Kind::Progress,
            Kind::Log,
            Kind::ToolCall,
            Kind::ToolResult,
            Kind::CallbackOpen,
            Kind::CallbackAnswer,
            Kind::RunStarted,
            Kind::RunStatus,
            Kind::RunCompleted,
            Kind::RunFailed,
            Kind::RunCancelled,
        ];
        for k in all {
            let name = k.name().expect("a listed kind has a name");
            assert_eq!(Kind::of(name), k);
            // Near misses are other types.
            assert_eq!(Kind::of(&format!("{name}\0")), Kind::Other);
            assert_eq!(Kind::of(&name[..name.len() - 1]), Kind::Other);
            assert_eq!(Kind::of(&name.to_uppercase()), Kind::Other);
        }
        // The compact encoding: every kind back from its byte, no kind from others.
        for k in all.into_iter().chain([Kind::Other]) {
            assert_eq!(Kind::from_u8(k as u8), Some(k));
        }
        assert_eq!(Kind::from_u8(Kind::Other as u8 + 1), None);
        assert_eq!(Kind::from_u8(u8::MAX), None);
        assert_eq!(Kind::of(""), Kind::Other);
        assert_eq!(Kind::of("text/delta/and/much/more"), Kind::Other);
        // Types sharing a length, a first or a last eight bytes with listed ones.
        for other in [
            "text/deltb",
            "tool/cal1",
            "run.startee",
            "turn/endd",
            "session/endx",
            "callback/opened",
            "run.status.",
            "model/ent",
            "agent/idl",
            "xxxx/end",
        ] {
            assert_eq!(Kind::of(other), Kind::Other, "{other}");
        }
        // Every one-byte change of every listed name is another type.
        for k in all {
            let name = k.name().expect("named").as_bytes();
            for i in 0..name.len() {
                for c in [b'a', b'/', b'.', b'z', b'0'] {
                    let mut t = name.to_vec();
                    if t[i] == c {
                        continue;
                    }
                    t[i] = c;
                    let t = String::from_utf8(t).expect("ascii");
                    assert_eq!(Kind::of(&t), Kind::Other, "{t}");
                }
            }
        }
    }

    #[test]
    fn same_bytes_is_equality() {
        let texts: Vec<Vec<u8>> = (0..40usize)
            .flat_map(|n| {
                let base: Vec<u8> = (0..n).map(|i| b'a' + (i % 26) as u8).collect();
                // The text, and each one-byte change of it (first, middle, last byte).
                let mut out = vec![base.clone()];
                for at in [0, n / 2, n.saturating_sub(1)] {
                    if at < n {
                        let mut t = base.clone();
                        t[at] ^= 0x20;
                        out.push(t);
                    }
                }
                out
            })
            .collect();
        for a in &texts {
            for b in &texts {
                assert_eq!(same_bytes(a, b), a == b, "{a:?} {b:?}");
            }
        }
    }

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
