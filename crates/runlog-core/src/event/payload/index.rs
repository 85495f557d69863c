//! Where the members the reducer reads sit in a payload: which members each kind of event
//! needs ([`keys`], [`wanted`]) and the [`PayloadIndex`] an event carries, built once when
//! it is decoded so that reducing it does not walk the JSON text again.

use crate::event::{same_bytes, Kind};

use super::scan::sole_string_member;
use super::{fields_into, get, member_chars, Raw};

/// The payload members the reducer reads, per kind of event, in the order it reads them
/// ([`wanted`] says which list a kind's [`PayloadIndex`] holds). `a.b` is member `b` of
/// the object member `a`, which comes earlier in the list.
pub mod keys {
    pub const RECEIPT: [&str; 1] = ["message_id"];
    pub const SESSION_START: [&str; 2] = ["parent", "parent_turn"];
    pub const SESSION_END: [&str; 1] = ["status"];
    pub const DELTA: [&str; 1] = ["text"];
    pub const MODEL_END: [&str; 4] = [
        "usage",
        "error",
        "usage.input_tokens",
        "usage.output_tokens",
    ];
    pub const TURN_END: [&str; 4] = ["reason", "text", "output", "output_error"];
    pub const TOOL_CALL: [&str; 3] = ["call_id", "name", "arguments"];
    pub const TOOL_RESULT: [&str; 3] = ["call_id", "status", "detail"];
    pub const CALLBACK_OPEN: [&str; 3] = ["callback_id", "kind", "title"];
    pub const CALLBACK_ANSWER: [&str; 1] = ["callback_id"];
    pub const RUN_STARTED: [&str; 2] = ["run_id", "attempt"];
    pub const RUN_SETTLED: [&str; 4] = ["run_id", "attempt", "output", "error"];
}

/// The members of [`keys`] the reducer reads of an event of `kind`.
pub fn wanted(kind: Kind) -> &'static [&'static str] {
    match kind {
        Kind::InboxReceipt => &keys::RECEIPT,
        Kind::SessionStart => &keys::SESSION_START,
        Kind::SessionEnd => &keys::SESSION_END,
        Kind::TextDelta => &keys::DELTA,
        Kind::ModelEnd => &keys::MODEL_END,
        Kind::TurnEnd => &keys::TURN_END,
        Kind::ToolCall => &keys::TOOL_CALL,
        Kind::ToolResult => &keys::TOOL_RESULT,
        Kind::CallbackOpen => &keys::CALLBACK_OPEN,
        Kind::CallbackAnswer => &keys::CALLBACK_ANSWER,
        Kind::RunStarted => &keys::RUN_STARTED,
        Kind::RunCompleted | Kind::RunFailed | Kind::RunCancelled => &keys::RUN_SETTLED,
        _ => &[],
    }
}

/// Where the payload members the reducer reads sit in an event's `data`, and the length
/// of its `text`: found once, when the event is decoded, so that reducing it (in ingest,
/// again in `runlog replay`, in a benchmark) does not walk the JSON text again.
///
/// Built from [`fields`](super::fields)' own answers, so reading through the index gives exactly the
/// answers of reading `data`. [`PayloadIndex::NONE`] (a payload over 64 KiB, an event made
/// without one) reads `data` each time. An index belongs to the `type` and `data` it was
/// built from: an event whose `data` changes needs a new one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PayloadIndex {
    /// Start and end in `data` of each member of [`wanted`]`(kind)`; `(0, 0)` when absent
    /// (a value never starts at 0: `data` starts with `{`).
    spans: [(u16, u16); 4],
    /// Characters of the `text` member, when [`TEXT_STRING`] says it is a string.
    text_chars: u16,
    kind: Kind,
    flags: u8,
}

/// Bytes of [`PayloadIndex::to_bytes`].
pub const INDEX_BYTES: usize = 19;

/// [`PayloadIndex::flags`]: the index was built (else every read walks `data`).
const INDEXED: u8 = 1;
/// [`PayloadIndex::flags`]: the wanted members include `text`, and it is a string.
const TEXT_STRING: u8 = 2;
/// [`PayloadIndex::flags`]: the event is a turn end or an idle whose `inferred` member is
/// `true` (its importer deduced it): the reducer asks every such event, and the answer
/// otherwise meant a walk of the whole payload.
const INFERRED: u8 = 4;

/// The kinds whose index answers [`PayloadIndex::inferred`].
fn says_inferred(kind: Kind) -> bool {
    matches!(kind, Kind::TurnEnd | Kind::AgentIdle)
}

/// Whether the member `inferred` found in a payload is `true`.
fn is_true(found: Option<Raw>) -> bool {
    found.and_then(Raw::as_bool) == Some(true)
}

impl PayloadIndex {
    /// No index: every read walks `data`.
    pub const NONE: PayloadIndex = PayloadIndex {
        spans: [(0, 0); 4],
        text_chars: 0,
        kind: Kind::Other,
        flags: 0,
    };

    /// The index of an event of type `kind` whose payload is `data`.
    pub fn of(kind: &str, data: &str) -> PayloadIndex {
        PayloadIndex::of_kind(Kind::of(kind), data)
    }

    /// [`PayloadIndex::of`] an event of [`Kind`] `kind`.
    fn of_kind(kind: Kind, data: &str) -> PayloadIndex {
        if data.len() > usize::from(u16::MAX) {
            return PayloadIndex::NONE;
        }
        // Nearly every delta is `{"text":"..."}`: its span and length in one pass.
        if kind == Kind::TextDelta {
            if let Some(((start, end), n)) = sole_string_member(data.as_bytes(), "text") {
                let mut ix = PayloadIndex {
                    kind,
                    flags: INDEXED | TEXT_STRING,
                    text_chars: n as u16,
                    ..PayloadIndex::NONE
                };
                ix.spans[0] = (start as u16, end as u16);
                return ix;
            }
        }
        let found = wanted_members(kind, |keys, out| fields_into(data, keys, out), None);
        let mut ix = PayloadIndex::from_found(kind, data, found);
        if says_inferred(kind) && is_true(get(data, "inferred")) {
            ix.flags |= INFERRED;
        }
        ix
    }

    /// [`PayloadIndex::of`], with the top-level members of `data` as the decoder met them
    /// (when it met them all): the payload is not walked again.
    /// `kind` is the event's [`Kind`], of its type.
    pub fn of_members(kind: Kind, data: &str, members: &Members) -> PayloadIndex {
        if !members.top.complete || data.len() > usize::from(u16::MAX) {
            return PayloadIndex::of_kind(kind, data);
        }
        let found = wanted_members(
            kind,
            |keys, out| members.find(data, keys, out),
            Some((members, data)),
        );
        let mut ix = PayloadIndex::from_found(kind, data, found);
        if says_inferred(kind) {
            let mut inferred = [None];
            members.find(data, &["inferred"], &mut inferred);
            if is_true(inferred[0]) {
                ix.flags |= INFERRED;
            }
        }
        ix
    }

    /// The index of the members `found` of [`wanted`]`(kind)` in `data` (at most 64 KiB).
    fn from_found(kind: Kind, data: &str, found: [Option<Raw>; 4]) -> PayloadIndex {
        let mut ix = PayloadIndex {
            kind,
            flags: INDEXED,
            ..PayloadIndex::NONE
        };
        for (span, raw) in ix.spans.iter_mut().zip(found) {
            if let Some(Raw(v)) = raw {
                // A member's text lies within `data` (serde_json's too: it borrows).
                let start = v.as_ptr() as usize - data.as_ptr() as usize;
                *span = (start as u16, (start + v.len()) as u16);
            }
        }
        let text = match kind {
            Kind::TextDelta => found[0],
            Kind::TurnEnd => found[1],
            _ => None,
        };
        if let Some(n) = text.and_then(Raw::char_len) {
            ix.text_chars = n as u16;
            ix.flags |= TEXT_STRING;
        }
        ix
    }

    /// The index as bytes, for a spill file ([`PayloadIndex::from_bytes`] reads it back):
    /// an event read back from disk then has its index without a walk of `data` again.
    pub fn to_bytes(&self) -> [u8; INDEX_BYTES] {
        let mut b = [0u8; INDEX_BYTES];
        for (k, &(start, end)) in self.spans.iter().enumerate() {
            b[4 * k..4 * k + 2].copy_from_slice(&start.to_le_bytes());
            b[4 * k + 2..4 * k + 4].copy_from_slice(&end.to_le_bytes());
        }
        b[16..18].copy_from_slice(&self.text_chars.to_le_bytes());
        b[18] = self.flags;
        b
    }

    /// The index [`PayloadIndex::to_bytes`] wrote, of an event whose type is of `kind`.
    /// Spans are only ever read through `data.get(..)`, so bytes that do not belong to the
    /// event give absent members, never a panic.
    pub fn from_bytes(kind: Kind, b: &[u8; INDEX_BYTES]) -> PayloadIndex {
        let mut ix = PayloadIndex {
            kind,
            flags: b[18] & (INDEXED | TEXT_STRING | INFERRED),
            text_chars: u16::from_le_bytes([b[16], b[17]]),
            ..PayloadIndex::NONE
        };
        for (k, span) in ix.spans.iter_mut().enumerate() {
            let start = u16::from_le_bytes([b[4 * k], b[4 * k + 1]]);
            let end = u16::from_le_bytes([b[4 * k + 2], b[4 * k + 3]]);
            *span = (start, end);
        }
        ix
    }

    /// The event's kind (`kind` is its type, read when there is no index).
    #[inline]
    pub fn kind(&self, kind: &str) -> Kind {
        if self.flags & INDEXED != 0 {
            self.kind
        } else {
            Kind::of(kind)
        }
    }

    /// The members `keys` of `data` (as [`fields`](super::fields) reads them, and `a.b` as `b` of `a`).
    /// `keys` is the kind's list in [`keys`], or the start of it.
    #[inline]
    pub fn members<'a, const N: usize>(
        &self,
        data: &'a str,
        keys: [&str; N],
    ) -> [Option<Raw<'a>>; N] {
        if self.flags & INDEXED == 0 {
            let mut out = [None; N];
            resolve(data, &keys, &mut out);
            return out;
        }
        debug_assert!(
            wanted(self.kind).starts_with(&keys),
            "{keys:?} are not what {:?} indexes",
            self.kind
        );
        let mut out = [None; N];
        for (slot, &(start, end)) in out.iter_mut().zip(&self.spans) {
            if end != 0 {
                *slot = data.get(usize::from(start)..usize::from(end)).map(Raw);
            }
        }
        out
    }

    /// Whether `data` (the payload of a turn end or an idle) has `inferred: true`, as
    /// [`fields`](super::fields) reads it.
    #[inline]
    pub fn inferred(&self, data: &str) -> bool {
        if self.flags & INDEXED == 0 || !says_inferred(self.kind) {
            return is_true(get(data, "inferred"));
        }
        self.flags & INFERRED != 0
    }

    /// The length in characters of the string member `text` of `data`:
    /// [`member_chars`]`(data, "text")`, for a kind whose list holds `text`.
    #[inline]
    pub fn text_chars(&self, data: &str) -> Option<i64> {
        if self.flags & INDEXED == 0 {
            return member_chars(data, "text");
        }
        (self.flags & TEXT_STRING != 0).then_some(i64::from(self.text_chars))
    }
}

/// How many of [`wanted`]`(kind)` are top-level members (the rest are `a.b` names).
pub(super) fn top_level(kind: Kind) -> usize {
    match kind {
        Kind::ModelEnd => 2,
        k => wanted(k).len(),
    }
}

/// The members of [`wanted`]`(kind)`, the top-level ones found by `top(keys, out)`, the
/// nested ones among the decoder's `listed` members of `data` when it listed them.
#[inline]
fn wanted_members<'a>(
    kind: Kind,
    top: impl Fn(&[&str], &mut [Option<Raw<'a>>]),
    listed: Option<(&Members, &'a str)>,
) -> [Option<Raw<'a>>; 4] {
    let keys = wanted(kind);
    let n = top_level(kind);
    let mut out = [None; 4];
    top(&keys[..n], &mut out[..n]);
    if let Some((p, parent, children, first)) = nested_of(kind) {
        let value = out[p].filter(|v| v.is_object());
        let slots = &mut out[first..first + children.len()];
        if let Some(v) = value {
            let found = listed.is_some_and(|(members, data)| {
                members.find_nested(data, parent, v, children, slots)
            });
            if !found {
                fields_into(v.0, children, slots);
            }
        }
    }
    out
}

/// The `a.b` names of [`wanted`]`(kind)` as [`nested`] splits them, split once: the slot
/// and name of the parent `a`, the children `b` and the slot of the first. Only model/end
/// has any (`usage.input_tokens`, `usage.output_tokens`).
pub(super) fn nested_of(
    kind: Kind,
) -> Option<(usize, &'static str, &'static [&'static str], usize)> {
    const USAGE: [&str; 2] = ["input_tokens", "output_tokens"];
    match kind {
        Kind::ModelEnd => Some((0, "usage", &USAGE, 2)),
        _ => None,
    }
}

/// The `a.b` members among `keys`, from the top-level ones (the first `top`) in `out`.
/// Consecutive names with the same `a` are read in one walk of `a`.
fn nested(keys: &[&str], top: usize, out: &mut [Option<Raw>]) {
    let mut i = top;
    while i < keys.len() {
        let (parent, _) = keys[i].split_once('.').expect("a nested key");
        let mut children = [""; 4];
        let mut j = i;
        while let Some((p, child)) = keys.get(j).and_then(|k| k.split_once('.')) {
            if p != parent || j - i == children.len() {
                break;
            }
            children[j - i] = child;
            j += 1;
        }
        let p = keys[..top].iter().position(|&k| k == parent);
        match p.and_then(|p| out[p]).filter(|v| v.is_object()) {
            Some(v) => fields_into(v.0, &children[..j - i], &mut out[i..j]),
            None => out[i..j].fill(None),
        }
        i = j;
    }
}

/// The top-level members of a payload object as the decoder met them while it checked the
/// line: where each key and value is in `data`, in order; and the members of the object
/// value of [`Members::NESTED`] (model/end's `usage`, whose `input_tokens` and
/// `output_tokens` the reducer reads). With them, indexing the payload
/// ([`PayloadIndex::of_members`]) does not walk it again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Members {
    top: List,
    /// The members of the last object value of a [`Members::NESTED`] member met, as offsets
    /// from where it starts (one byte each: an object of more than 255 bytes is walked),
    /// so that `Members` stays small enough to be copied inline (as 134 bytes, two
    /// `memcpy` calls a line: 1% of a persisted log's read).
    nested: NestedList,
    /// Where that object starts in `data`; 0 when none was met (no value starts at 0).
    nested_at: u16,
}

/// The members of the nested object, as [`List`], but offsets from its start in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct NestedList {
    spans: [[u8; 4]; Members::MAX],
    len: u8,
    complete: bool,
}

impl NestedList {
    const EMPTY: NestedList = NestedList {
        spans: [[0; 4]; Members::MAX],
        len: 0,
        complete: true,
    };

    /// Adds a member at `key` and `value` (offsets in `data`) of the object at `at`.
    #[inline]
    fn push(&mut self, at: usize, key: (usize, usize), value: (usize, usize)) {
        let n = usize::from(self.len);
        let span = [key.0, key.1, value.0, value.1].map(|o| u8::try_from(o.wrapping_sub(at)));
        match span {
            [Ok(a), Ok(b), Ok(c), Ok(d)] if n < Members::MAX => {
                self.spans[n] = [a, b, c, d];
                self.len += 1;
            }
            _ => self.complete = false,
        }
    }

    /// The values of `keys` (the last member of each key wins, as in [`fields`](super::fields)) among the
    /// members of the object at `at` of `data`.
    fn find<'a>(&self, data: &'a str, at: usize, keys: &[&str], out: &mut [Option<Raw<'a>>]) {
        let b = data.as_bytes();
        for m in &self.spans[..usize::from(self.len)] {
            let [k0, k1, v0, v1] = m.map(|o| at + usize::from(o));
            let Some(key) = b.get(k0..k1) else {
                continue;
            };
            for (slot, k) in out.iter_mut().zip(keys) {
                if same_bytes(k.as_bytes(), key) {
                    *slot = data.get(v0..v1).map(Raw);
                }
            }
        }
    }
}

/// Members of one object, as [`Members`] lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct List {
    /// Key start, key end, value start, value end (offsets in `data`).
    spans: [[u16; 4]; Members::MAX],
    len: u8,
    /// Every member is listed.
    complete: bool,
}

impl List {
    const EMPTY: List = List {
        spans: [[0; 4]; Members::MAX],
        len: 0,
        complete: true,
    };

    #[inline]
    fn push(&mut self, key: (usize, usize), value: (usize, usize)) {
        let n = usize::from(self.len);
        if n == Members::MAX || value.1 > usize::from(u16::MAX) {
            self.complete = false;
            return;
        }
        self.spans[n] = [key.0, key.1, value.0, value.1].map(|o| o as u16);
        self.len += 1;
    }

    /// The values of `keys` (the last member of each key wins, as in [`fields`](super::fields)).
    fn find<'a>(&self, data: &'a str, keys: &[&str], out: &mut [Option<Raw<'a>>]) {
        let b = data.as_bytes();
        for m in &self.spans[..usize::from(self.len)] {
            let key = &b[usize::from(m[0])..usize::from(m[1])];
            for (slot, k) in out.iter_mut().zip(keys) {
                if same_bytes(k.as_bytes(), key) {
                    *slot = data.get(usize::from(m[2])..usize::from(m[3])).map(Raw);
                }
            }
        }
    }
}

impl Members {
    /// Members listed at most (per object); a payload with more is walked.
    pub const MAX: usize = 8;

    /// The member whose object value's members are listed too: the only parent of the
    /// `a.b` names of [`keys`].
    pub const NESTED: &'static str = "usage";

    /// The members of an empty object (or of an absent payload, read as `{}`).
    pub const EMPTY: Members = Members {
        top: List::EMPTY,
        nested: NestedList::EMPTY,
        nested_at: 0,
    };

    /// Adds the member whose key's text (inside its quotes, as written) is at `key` and
    /// whose value is at `value`, as offsets in `data`. Keys are compared as written: every
    /// name of [`keys`] is made of `a`–`z` and `_`, which no escape stands for, so a key
    /// written with an escape is never one of them.
    #[inline]
    pub fn push(&mut self, key: (usize, usize), value: (usize, usize)) {
        self.top.push(key, value);
    }

    /// Starts listing the members of the object value, at offset `at` of `data`, of a
    /// [`Members::NESTED`] member (forgetting those of an earlier one).
    #[inline]
    pub fn open_nested(&mut self, at: usize) {
        self.nested = NestedList::EMPTY;
        self.nested_at = u16::try_from(at).unwrap_or(0);
    }

    /// Adds a member of the object [`Members::open_nested`] opened (offsets in `data`, as
    /// [`Members::push`]).
    #[inline]
    pub fn push_nested(&mut self, key: (usize, usize), value: (usize, usize)) {
        self.nested.push(usize::from(self.nested_at), key, value);
    }

    /// The values of `keys` among the top-level members.
    fn find<'a>(&self, data: &'a str, keys: &[&str], out: &mut [Option<Raw<'a>>]) {
        self.top.find(data, keys, out);
    }

    /// The values of `keys` among the members of `value`, the object value of the member
    /// `parent` of `data`, when they were listed (`false`: they were not, walk `value`).
    fn find_nested<'a>(
        &self,
        data: &'a str,
        parent: &str,
        value: Raw<'a>,
        keys: &[&str],
        out: &mut [Option<Raw<'a>>],
    ) -> bool {
        let at = (value.0.as_ptr() as usize).wrapping_sub(data.as_ptr() as usize);
        if parent != Members::NESTED
            || self.nested_at == 0
            || at != usize::from(self.nested_at)
            || !self.nested.complete
        {
            return false;
        }
        out.fill(None);
        self.nested.find(data, at, keys, out);
        true
    }
}

/// The members `keys` (a list of [`keys`]: top-level names, then `a.b` names) of `data`,
/// into `out`.
fn resolve<'a>(data: &'a str, keys: &[&str], out: &mut [Option<Raw<'a>>]) {
    let top = keys.iter().take_while(|k| !k.contains('.')).count();
    fields_into(data, &keys[..top], &mut out[..top]);
    nested(keys, top, out);
}
