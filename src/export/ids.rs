//! Deterministic trace and span ids: hashes of what a span stands for (its kind, the agent's
//! root, the session and the seq of the event that opens it), so exporting the same tables
//! twice gives the same ids, and a backend that receives a trace again sees the same spans.
//! FNV-1a 64 (runlog's stable root hash, `shard::fnv1a64`), twice with different seeds for
//! the 128-bit trace ids; never all zeros (an invalid id in OTLP).

use runlog_core::shard::{fnv1a64_more, FNV1A64_START};

/// What a span stands for: a turn, a model call, a tool call, a callback, a run attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanKind {
    Turn,
    Model,
    Tool,
    Callback,
    Run,
}

impl SpanKind {
    fn tag(self) -> &'static [u8] {
        match self {
            SpanKind::Turn => b"turn",
            SpanKind::Model => b"model",
            SpanKind::Tool => b"tool",
            SpanKind::Callback => b"callback",
            SpanKind::Run => b"run",
        }
    }
}

/// The hash of `parts` from `seed`, each part followed by a byte no UTF-8 text holds (so
/// `("ab", "c")` and `("a", "bc")` differ).
fn hash(seed: u64, parts: &[&[u8]]) -> u64 {
    let mut h = seed;
    for p in parts {
        h = fnv1a64_more(h, p);
        h = fnv1a64_more(h, &[0xff]);
    }
    h
}

fn nonzero(h: u64) -> u64 {
    if h == 0 {
        1
    } else {
        h
    }
}

/// The 8-byte span id of the span of `kind` opened by event `seq` of `session` in `root`.
pub fn span_id(kind: SpanKind, root: &str, session: &str, seq: i64) -> [u8; 8] {
    let h = hash(
        FNV1A64_START,
        &[
            kind.tag(),
            root.as_bytes(),
            session.as_bytes(),
            &seq.to_le_bytes(),
        ],
    );
    nonzero(h).to_be_bytes()
}

/// The 16-byte trace id of the trace whose top span is of `kind`, opened by event `seq` of
/// `session` in `root`.
pub fn trace_id(kind: SpanKind, root: &str, session: &str, seq: i64) -> [u8; 16] {
    let parts: [&[u8]; 5] = [
        b"trace",
        kind.tag(),
        root.as_bytes(),
        session.as_bytes(),
        &seq.to_le_bytes(),
    ];
    let hi = nonzero(hash(FNV1A64_START, &parts));
    // A second hash of the same parts from another seed (the first hash's own start).
    let lo = hash(hi, &parts);
    let mut id = [0u8; 16];
    id[..8].copy_from_slice(&hi.to_be_bytes());
    id[8..].copy_from_slice(&lo.to_be_bytes());
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_stable_and_tell_their_parts_apart() {
        let a = span_id(SpanKind::Turn, "r", "s", 3);
        assert_eq!(a, span_id(SpanKind::Turn, "r", "s", 3));
        assert_ne!(a, span_id(SpanKind::Model, "r", "s", 3));
        assert_ne!(
            span_id(SpanKind::Turn, "ab", "c", 1),
            span_id(SpanKind::Turn, "a", "bc", 1)
        );
        let t = trace_id(SpanKind::Turn, "r", "s", 3);
        assert_ne!(t[..8], t[8..]);
        assert_ne!(t, trace_id(SpanKind::Turn, "r", "s", 4));
    }
}
