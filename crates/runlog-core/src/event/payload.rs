//! Reads the few payload fields the reducer needs straight from an event's `data` text,
//! borrowing and without allocating.
//!
//! The reducer looks at one to four fields of most events (`text` of a delta, `usage` and
//! `error` of a model call, ...). Parsing each payload into a `serde_json::Value` map cost
//! more than everything else the reducer does, so [`fields`] walks the top level of the
//! object once and hands back the raw text of the wanted members, and [`Raw`] reads a member
//! as a string, integer, bool or nested object.
//!
//! The answers are those of reading the payload as a `serde_json` map: the last of duplicate
//! keys wins, and a member of the wrong type reads as absent. Text the walker does not handle
//! itself (an escaped key, anything malformed) is handed to serde_json, as are escaped strings
//! and numbers that are not plain integers, so the walker changes speed, never answers.
//!
//! Each event also carries a [`PayloadIndex`]: where the members its kind needs are, found once
//! when the event is decoded (from the members the decoder met while checking the line), so
//! that reducing it does not walk the text again. Reads through the index give the answers
//! of [`fields`].

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::value::RawValue;
use serde_json::Value;

use crate::event::{same_bytes, Kind};

/// The raw JSON text of one member's value (no surrounding whitespace).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Raw<'a>(pub &'a str);

impl<'a> Raw<'a> {
    /// The value's text exactly as written.
    pub fn text(self) -> &'a str {
        self.0
    }

    /// The value as a string, if it is one.
    #[inline]
    pub fn as_str(self) -> Option<Cow<'a, str>> {
        let t = self.0;
        if !t.starts_with('"') || t.len() < 2 {
            return None;
        }
        let inner = &t[1..t.len() - 1];
        if !has_backslash(inner.as_bytes()) {
            return Some(Cow::Borrowed(inner));
        }
        serde_json::from_str::<String>(t).ok().map(Cow::Owned)
    }

    /// The length in characters of the value, if it is a string, without unescaping it
    /// (a text delta's length is all the tables keep of it).
    pub fn char_len(self) -> Option<i64> {
        let b = self.0.as_bytes();
        if b.first() != Some(&b'"') {
            return None;
        }
        match scan_chars(b, 1) {
            Some((end, n)) if end + 1 == b.len() => Some(n),
            // `\uXXXX` may pair with another into one character: serde_json decides.
            _ => self.as_str().map(|s| s.chars().count() as i64),
        }
    }

    /// The value as an owned string, if it is one.
    pub fn string(self) -> Option<String> {
        self.as_str().map(Cow::into_owned)
    }

    /// The value as an integer: an integer within `i64`, or a float with no fraction
    /// below 9·10^15 (as JSON writers that only know doubles write counts).
    pub fn as_i64(self) -> Option<i64> {
        let b = self.0.as_bytes();
        let digits = b.strip_prefix(b"-").unwrap_or(b);
        if !digits.is_empty() && digits.len() <= 18 {
            // A plain integer that fits (18 digits): read it here, in one pass.
            let mut v = 0i64;
            let mut plain = true;
            for &d in digits {
                plain &= d.is_ascii_digit();
                v = v
                    .wrapping_mul(10)
                    .wrapping_add(i64::from(d.wrapping_sub(b'0')));
            }
            if plain {
                return Some(if digits.len() < b.len() { -v } else { v });
            }
        }
        if !matches!(b.first(), Some(b'-' | b'0'..=b'9')) {
            return None;
        }
        let v: Value = serde_json::from_str(self.0).ok()?;
        v.as_i64().or_else(|| {
            v.as_f64()
                .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
                .map(|f| f as i64)
        })
    }

    /// The value as a bool, if it is one.
    pub fn as_bool(self) -> Option<bool> {
        match self.0 {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        }
    }

    /// Whether the value is an object.
    pub fn is_object(self) -> bool {
        self.0.starts_with('{')
    }

    /// Whether the value is `null`.
    pub fn is_null(self) -> bool {
        self.0 == "null"
    }

    /// Members of the value, if it is an object (see [`fields`]).
    pub fn fields<const N: usize>(self, keys: [&str; N]) -> [Option<Raw<'a>>; N] {
        if self.is_object() {
            fields(self.0, keys)
        } else {
            [None; N]
        }
    }

    /// One member of the value, if it is an object.
    pub fn get(self, key: &str) -> Option<Raw<'a>> {
        let [v] = self.fields([key]);
        v
    }

    /// The value parsed (for the rare consumer that keeps a whole subtree).
    pub fn to_value(self) -> Value {
        serde_json::from_str(self.0).unwrap_or(Value::Null)
    }
}

/// The raw values of `keys` among the top-level members of the JSON object `data` (`None`
/// for a key that is absent, or for all keys when `data` is not an object).
pub fn fields<'a, const N: usize>(data: &'a str, keys: [&str; N]) -> [Option<Raw<'a>>; N] {
    let mut out = [None; N];
    fields_into(data, &keys, &mut out);
    out
}

/// [`fields`] into `out` (as long as `keys`).
fn fields_into<'a>(data: &'a str, keys: &[&str], out: &mut [Option<Raw<'a>>]) {
    if walk(data, keys, out).is_none() {
        out.fill(None);
        // serde_json decides: escaped keys, or text this walker does not expect.
        if let Ok(map) = serde_json::from_str::<BTreeMap<Cow<'a, str>, &'a RawValue>>(data) {
            for (slot, key) in out.iter_mut().zip(keys) {
                *slot = map.get(*key).map(|v| Raw(v.get()));
            }
        }
    }
}

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
/// Built from [`fields`]' own answers, so reading through the index gives exactly the
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

    /// The members `keys` of `data` (as [`fields`] reads them, and `a.b` as `b` of `a`).
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
    /// [`fields`] reads it.
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
fn top_level(kind: Kind) -> usize {
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
fn nested_of(kind: Kind) -> Option<(usize, &'static str, &'static [&'static str], usize)> {
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

    /// The values of `keys` (the last member of each key wins, as in [`fields`]) among the
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

    /// The values of `keys` (the last member of each key wins, as in [`fields`]).
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

/// The length in characters of the string member `key` of `data` (see [`Raw::char_len`]).
/// Reads the shape nearly every text delta has, `{"key":"..."}`, in one pass.
#[inline(never)] // off the reducer's path: events read through an index do not call it
pub fn member_chars(data: &str, key: &str) -> Option<i64> {
    match sole_string_member(data.as_bytes(), key) {
        Some((_, n)) => Some(n),
        None => get(data, key).and_then(Raw::char_len),
    }
}

/// When `b` is exactly `{"key":"..."}` with no `\u` escape: the string value's span
/// (quotes included) and its length in characters, in one pass.
fn sole_string_member(b: &[u8], key: &str) -> Option<((usize, usize), i64)> {
    let k = key.len();
    if b.len() >= k + 7
        && b.starts_with(b"{\"")
        && &b[2..2 + k] == key.as_bytes()
        && &b[2 + k..5 + k] == b"\":\""
    {
        let (end, n) = scan_chars(b, 5 + k)?;
        if &b[end + 1..] == b"}" {
            return Some(((4 + k, end + 1), n));
        }
    }
    None
}

const LO: u64 = 0x0101_0101_0101_0101;
const HI: u64 = 0x8080_8080_8080_8080;

/// Scans a string's content from `b[i]` (just after its opening quote) to its closing quote:
/// that quote's index and the characters the string holds once unescaped. `None` for a
/// `\u` escape or a string that does not end. Eight bytes at a time where no quote or
/// backslash is near.
fn scan_chars(b: &[u8], mut i: usize) -> Option<(usize, i64)> {
    let mut chars = 0i64;
    loop {
        while i + 8 <= b.len() {
            let w = word(b, i);
            let hit = bytes_equal(w, b'"') | bytes_equal(w, b'\\');
            if hit != 0 {
                // The lowest flagged byte is exact (borrows only run upwards).
                let k = (hit.trailing_zeros() / 8) as usize;
                chars += b[i..i + k].iter().filter(|&&c| c & 0xC0 != 0x80).count() as i64;
                i += k;
                break;
            }
            // UTF-8 continuation bytes (10xxxxxx) become zero here; the rest do not.
            let c = (w & (LO * 0xC0)) ^ HI;
            let nonzero = ((c & !HI).wrapping_add(!HI) | c) & HI;
            // One bit per byte, summed by a multiply (`count_ones` is no single instruction
            // on the baseline x86-64 target).
            chars += ((nonzero >> 7).wrapping_mul(LO) >> 56) as i64;
            i += 8;
        }
        match *b.get(i)? {
            b'"' => return Some((i, chars)),
            b'\\' => match *b.get(i + 1)? {
                b'u' => return None,
                // Two bytes of text, one character of the string.
                _ => {
                    chars += 1;
                    i += 2;
                }
            },
            c => {
                chars += i64::from(c & 0xC0 != 0x80);
                i += 1;
            }
        }
    }
}

/// One top-level member of the JSON object `data`.
pub fn get<'a>(data: &'a str, key: &str) -> Option<Raw<'a>> {
    let [v] = fields(data, [key]);
    v
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\n' | b'\r' | b'\t') {
        i += 1;
    }
    i
}

/// Whether each byte of `w` equals `c`: the lowest flagged byte is exact (borrows only run
/// upwards), those above it may not be.
#[inline(always)]
fn bytes_equal(w: u64, c: u8) -> u64 {
    let x = w ^ (LO * u64::from(c));
    x.wrapping_sub(LO) & !x & HI
}

/// Whether `b` holds a backslash: eight bytes at a time, inline (a library search's setup costs
/// more than the short strings of a payload).
#[inline]
fn has_backslash(b: &[u8]) -> bool {
    let mut i = 0;
    while i + 8 <= b.len() {
        if bytes_equal(word(b, i), b'\\') != 0 {
            return true;
        }
        i += 8;
    }
    // The last, partial word: its bytes one by one (`contains` calls a library search,
    // whose setup costs more here).
    for &c in &b[i..] {
        if c == b'\\' {
            return true;
        }
    }
    false
}

/// The eight bytes at `b[i..i + 8]` as one little-endian word.
#[inline(always)]
fn word(b: &[u8], i: usize) -> u64 {
    u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"))
}

/// The index of the first `"` or `\` at or after `b[i]`: eight bytes at a time, inline (the
/// strings of a payload are short, where a library search costs more in its setup).
#[inline]
fn quote_or_backslash(b: &[u8], mut i: usize) -> Option<usize> {
    while i + 8 <= b.len() {
        let w = word(b, i);
        let hit = bytes_equal(w, b'"') | bytes_equal(w, b'\\');
        if hit != 0 {
            return Some(i + (hit.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    (i..b.len()).find(|&j| matches!(b[j], b'"' | b'\\'))
}

/// The index of the first byte at or after `b[i]` that matters inside an object or array:
/// a quote or a bracket. (`{` and `[` differ only in bit 5, as do `}` and `]`.)
#[inline]
fn structural(b: &[u8], mut i: usize) -> Option<usize> {
    while i + 8 <= b.len() {
        let w = word(b, i);
        let folded = w | (LO * 0x20);
        let hit = bytes_equal(w, b'"') | bytes_equal(folded, b'{') | bytes_equal(folded, b'}');
        if hit != 0 {
            return Some(i + (hit.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    (i..b.len()).find(|&j| matches!(b[j], b'"' | b'{' | b'}' | b'[' | b']'))
}

/// The index after the string that opens at `b[i] == '"'`.
fn skip_string(b: &[u8], mut i: usize) -> Option<usize> {
    i += 1;
    loop {
        let j = quote_or_backslash(b, i)?;
        if b[j] == b'"' {
            return Some(j + 1);
        }
        i = j + 2;
        if i > b.len() {
            return None;
        }
    }
}

/// The index after the value that starts at `b[i]`.
fn skip_value(b: &[u8], i: usize) -> Option<usize> {
    match *b.get(i)? {
        b'"' => skip_string(b, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            loop {
                j = structural(b, j)?;
                match b[j] {
                    b'"' => {
                        j = skip_string(b, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    _ => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                }
                j += 1;
            }
        }
        b'-' | b'0'..=b'9' | b't' | b'f' | b'n' => {
            let mut j = i + 1;
            while j < b.len() && !matches!(b[j], b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t')
            {
                j += 1;
            }
            Some(j)
        }
        _ => None,
    }
}

/// Walks the top-level members of `data`; `None` when it meets what it leaves to serde_json.
fn walk<'a>(data: &'a str, keys: &[&str], out: &mut [Option<Raw<'a>>]) -> Option<()> {
    let b = data.as_bytes();
    let mut i = skip_ws(b, 0);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i = skip_ws(b, i + 1);
    if b.get(i) == Some(&b'}') {
        return (skip_ws(b, i + 1) == b.len()).then_some(());
    }
    loop {
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let key_start = i + 1;
        let key_end = quote_or_backslash(b, key_start)?;
        if b[key_end] == b'\\' {
            return None;
        }
        i = skip_ws(b, key_end + 1);
        if b.get(i) != Some(&b':') {
            return None;
        }
        let start = skip_ws(b, i + 1);
        let end = skip_value(b, start)?;
        let key = &b[key_start..key_end];
        for (slot, k) in out.iter_mut().zip(keys) {
            if k.as_bytes() == key {
                *slot = Some(Raw(&data[start..end]));
            }
        }
        i = skip_ws(b, end);
        match b.get(i) {
            Some(b',') => i = skip_ws(b, i + 1),
            Some(b'}') => return (skip_ws(b, i + 1) == b.len()).then_some(()),
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What serde_json's map reading says: the reference the walker must agree with.
    fn reference<'a>(data: &'a str, key: &str) -> Option<&'a str> {
        let map: BTreeMap<Cow<'a, str>, &'a RawValue> = serde_json::from_str(data).ok()?;
        map.get(key).map(|v| v.get())
    }

    #[test]
    fn agrees_with_serde_json() {
        let cases = [
            r#"{}"#,
            r#"  { }  "#,
            r#"{"text":"hello"}"#,
            r#"{"text":"h\"e\\llo","n":1}"#,
            r#"{ "a" : [1, {"b": "]}"}], "text" : "x" , "c":null }"#,
            r#"{"text":"first","text":"second"}"#,
            r#"{"te\u0078t":"escaped key"}"#,
            r#"{"usage":{"input_tokens":5,"output_tokens":7},"error":null}"#,
            r#"{"n":-12,"f":1.5e3,"t":true,"u":false}"#,
            r#"{"nested":{"text":"inner"},"text":"outer"}"#,
            r#"[1,2]"#,
            r#""text""#,
            r#"{"text":"unterminated}"#,
            r#"{"a":1,}"#,
            r#"{"text":"é ü 😀"}"#,
        ];
        for data in cases {
            for key in [
                "text", "a", "n", "f", "t", "u", "usage", "error", "nested", "c",
            ] {
                assert_eq!(
                    get(data, key).map(Raw::text),
                    reference(data, key),
                    "{data} / {key}"
                );
            }
        }
    }

    #[test]
    fn word_scans_agree_with_bytewise_search_at_every_offset() {
        let text = br#"abc{"k":[1,"x\"y",{"z":"]}"}],"q":"w\\"}def"#;
        for start in 0..text.len() {
            for len in 0..=text.len() - start {
                let b = &text[start..start + len];
                for i in 0..=b.len() {
                    let naive = |set: &[u8]| (i..b.len()).find(|&j| set.contains(&b[j]));
                    assert_eq!(quote_or_backslash(b, i), naive(b"\"\\"), "{b:?} {i}");
                    assert_eq!(structural(b, i), naive(b"\"{}[]"), "{b:?} {i}");
                }
                assert_eq!(has_backslash(b), b.contains(&b'\\'), "{b:?}");
            }
        }
    }

    #[test]
    fn nested_members_of_every_length_agree_with_serde_json() {
        // Values long enough for whole words, with brackets and escapes at every offset.
        let filler = "abcdefghijklmnopqrstuvwxyz0123456789";
        for cut in 0..filler.len() {
            let (a, b) = filler.split_at(cut);
            for special in ["", "{", "}", "[", "]", r#"\""#, r"\\", "\"", "Y_y"] {
                let inner = serde_json::to_string(&format!("{a}{special}{b}")).unwrap();
                let data = format!(
                    r#"{{"args":{{"p":{inner},"l":[{inner},{{"d":{inner}}}]}},"text":{inner},"n":{cut}}}"#
                );
                for key in ["args", "text", "n", "l"] {
                    assert_eq!(
                        get(&data, key).map(Raw::text),
                        reference(&data, key),
                        "{data} / {key}"
                    );
                }
            }
        }
    }

    #[test]
    fn reads_values() {
        let d = r#"{"s":"a\nb","p":"plain","i":42,"neg":-3,"f":7.0,"ff":7.5,"big":18446744073709551615,"b":true,"o":{"k":"v"},"z":null}"#;
        let [s, p, i, neg, f, ff, big, b, o, z] =
            fields(d, ["s", "p", "i", "neg", "f", "ff", "big", "b", "o", "z"]);
        assert_eq!(s.unwrap().as_str().as_deref(), Some("a\nb"));
        assert!(matches!(p.unwrap().as_str(), Some(Cow::Borrowed("plain"))));
        assert_eq!(i.unwrap().as_i64(), Some(42));
        assert_eq!(neg.unwrap().as_i64(), Some(-3));
        for n in [
            "0",
            "-0",
            "7",
            "-12",
            "999999999999999999",
            "-999999999999999999",
        ] {
            assert_eq!(Raw(n).as_i64(), Some(n.parse().unwrap()), "{n}");
        }
        assert_eq!(Raw("-").as_i64(), None);
        assert_eq!(Raw("1-2").as_i64(), None);
        assert_eq!(Raw("9999999999999999999").as_i64(), None);
        assert_eq!(f.unwrap().as_i64(), Some(7));
        assert_eq!(ff.unwrap().as_i64(), None);
        assert_eq!(big.unwrap().as_i64(), None);
        assert_eq!(b.unwrap().as_bool(), Some(true));
        assert_eq!(p.unwrap().as_i64(), None);
        assert_eq!(i.unwrap().as_str(), None);
        assert_eq!(
            o.unwrap().get("k").and_then(Raw::string).as_deref(),
            Some("v")
        );
        assert!(z.unwrap().is_null());
        assert_eq!(s.unwrap().get("k"), None);
    }

    /// Checks `char_len` of the JSON string whose content is `text`; returns the string and
    /// its length as serde_json reads it.
    fn check_len(text: &str) -> (String, i64) {
        let raw = format!("\"{text}\"");
        let want = serde_json::from_str::<String>(&raw)
            .unwrap()
            .chars()
            .count() as i64;
        assert_eq!(Raw(&raw).char_len(), Some(want), "{raw}");
        (raw, want)
    }

    #[test]
    fn char_len_counts_the_unescaped_string() {
        for text in [
            "",
            "plain",
            r"a\nb",
            r#"q\"uote\\"#,
            "é ü 😀",
            r"\\\\",
            r"\u00e9",
            r"\ud83d\ude00x",
        ] {
            check_len(text);
        }
        assert_eq!(Raw("12").char_len(), None);
        // Strings long enough for whole words, with the specials at every offset.
        let long = "abcdefghijklmnopqrstuvwxyzé😀ü0123456789";
        for cut in 0..long.chars().count() {
            for special in ["", r"\n", r#"\""#, r"\\", r"\u00e9"] {
                let text: String = long.chars().take(cut).collect::<String>()
                    + special
                    + &long.chars().skip(cut).collect::<String>();
                let (raw, want) = check_len(&text);
                let data = format!("{{\"text\":{raw}}}");
                assert_eq!(member_chars(&data, "text"), Some(want), "{data}");
                let spaced = format!("{{ \"text\" : {raw} }}");
                assert_eq!(member_chars(&spaced, "text"), Some(want), "{spaced}");
                let dup = format!("{{\"text\":{raw},\"text\":\"ab\"}}");
                assert_eq!(member_chars(&dup, "text"), Some(2), "{dup}");
            }
        }
        assert_eq!(member_chars(r#"{"text":5}"#, "text"), None);
        assert_eq!(member_chars(r#"{"other":"x"}"#, "text"), None);
        assert_eq!(member_chars(r#"{"text":"x"#, "text"), None);
    }

    /// Every kind whose payload the reducer reads, one it does not, and one not listed.
    const KINDS: [&str; 16] = [
        "inbox/receipt",
        "session/start",
        "session/end",
        "text/delta",
        "model/end",
        "turn/end",
        "tool/call",
        "tool/result",
        "callback/open",
        "callback/answer",
        "run.started",
        "run.completed",
        "run.failed",
        "run.cancelled",
        "log",
        "x/unlisted",
    ];

    /// [`PayloadIndex::members`] of all of `keys` (one of [`keys`]' lists).
    fn read_all<'a>(ix: &PayloadIndex, data: &'a str, keys: &[&str]) -> Vec<Option<Raw<'a>>> {
        match *keys {
            [] => vec![],
            [a] => ix.members(data, [a]).to_vec(),
            [a, b] => ix.members(data, [a, b]).to_vec(),
            [a, b, c] => ix.members(data, [a, b, c]).to_vec(),
            [a, b, c, d] => ix.members(data, [a, b, c, d]).to_vec(),
            _ => unreachable!("at most four keys"),
        }
    }

    /// Every wanted member of every kind, read through an index, is what reading `data`
    /// gives; so is the `text` length. Payloads with escaped and duplicate keys, odd
    /// spacing, members of every type, malformed text and one too long to index.
    #[test]
    fn an_index_reads_what_the_payload_says() {
        let long = format!(r#"{{"text":"{}","call_id":"c"}}"#, "x".repeat(70_000));
        let mut cases: Vec<String> = [
            r#"{}"#,
            r#"  { }  "#,
            r#"{"text":"hello"}"#,
            r#"{"text":"h\"é\\llo"}"#,
            r#"{"text":"\ud83d\ude00"}"#,
            r#"{"text":5}"#,
            r#"{"text":"first","text":"second"}"#,
            r#"{ "text" : "spaced" , "x":[1,{"text":"inner"}] }"#,
            r#"{"te\u0078t":"escaped key","call_id":"c1"}"#,
            r#"{"usage":{"input_tokens":5,"output_tokens":7},"error":{"code":"x"}}"#,
            r#"{"usage":{"output_tokens":7,"x":[],"input_tokens":5,"input_tokens":6}}"#,
            r#"{"usage":5,"usage.input_tokens":3}"#,
            r#"{"usage":{"input_tokens":"5"},"usage":{"output_tokens":1.0}}"#,
            r#"{"reason":{"kind":"end_turn"},"text":"done ü","output":{"a":[1]},"output_error":null}"#,
            r#"{"call_id":"c1","name":"grep","arguments":{"q":"}\""},"status":"ok","detail":"d"}"#,
            r#"{"callback_id":"cb","kind":"approval","title":"T","callback_id":"cb2"}"#,
            r#"{"run_id":"r","attempt":2,"output":{"status":"done"},"error":null}"#,
            r#"{"message_id":"m","parent":null,"parent_turn":"t","status":"cancelled"}"#,
            r#"{"text":"unterminated}"#,
            r#"{"a":1,}"#,
            r#"[1,2]"#,
        ]
        .map(String::from)
        .to_vec();
        cases.push(long);
        for data in &cases {
            for kind in KINDS {
                let ix = PayloadIndex::of(kind, data);
                let k = Kind::of(kind);
                assert_eq!(ix.kind(kind), k);
                let keys = wanted(k);
                let got = read_all(&ix, data, keys);
                for (i, key) in keys.iter().enumerate() {
                    let want = match key.split_once('.') {
                        Some((a, b)) => get(data, a).and_then(|v| v.get(b)),
                        None => get(data, key),
                    };
                    assert_eq!(got[i], want, "{kind} {data} / {key}");
                }
                if keys.contains(&"text") {
                    assert_eq!(
                        ix.text_chars(data),
                        member_chars(data, "text"),
                        "{kind} {data}"
                    );
                }
                // Without an index, the same answers.
                let none = PayloadIndex::NONE;
                assert_eq!(none.kind(kind), k);
                assert_eq!(none.text_chars(data), member_chars(data, "text"));
                assert_eq!(read_all(&none, data, keys), got);
            }
        }
        // The index is used: a long payload has none, a short one has one.
        assert_eq!(
            PayloadIndex::of("tool/call", &cases[cases.len() - 1]),
            PayloadIndex::NONE
        );
        assert_ne!(
            PayloadIndex::of("tool/call", &cases[11]),
            PayloadIndex::NONE
        );
    }

    /// The index built from the members the decoder met is the one built by walking the
    /// payload: for every kind, payloads with duplicate, escaped and many keys, nesting,
    /// spacing, and payloads the decoder leaves to serde_json (no members then).
    #[test]
    fn an_index_from_the_decoders_members_is_the_walked_one() {
        let many: String = (0..12).map(|i| format!(r#""k{i}":{i},"#)).collect();
        let cases = [
            "{}".to_string(),
            "null".to_string(),
            r#"{"text":"hello"}"#.to_string(),
            r#" { "text" : "h\"é" , "text" : "again" } "#.to_string(),
            r#"{"te\"xt":"escaped key","text":"plain"}"#.to_string(),
            r#"{"te\\xt":1,"call_id":"c","name":"n","arguments":{"a":[1,{"b":"}"}]}}"#.to_string(),
            r#"{"usage":{"input_tokens":5,"output_tokens":7,"input_tokens":9},"error":null}"#
                .to_string(),
            r#"{"usage":{"input_tokens":5},"error":{"code":"x","details":{"http_status":429}}}"#
                .to_string(),
            // The nested members the decoder lists: the last `usage` wins, whatever it is.
            r#"{"usage":{"input_tokens":1},"usage":{"output_tokens":2}}"#.to_string(),
            r#"{"usage":{"input_tokens":1},"usage":null}"#.to_string(),
            r#"{"usage":null,"usage":{"input_tokens":3,"output_tokens":4}}"#.to_string(),
            r#"{"usage":{"input_tokens":1},"usage":"x"}"#.to_string(),
            r#"{"usage":{"usage":{"input_tokens":1},"output_tokens":[2]}}"#.to_string(),
            r#"{"usage" : { "input_tokens" : 5 , "output_tokens" : -7 } }"#.to_string(),
            r#"{"usage":{"input\ttokens":5,"output_tokens":"7","input_tokens":{"a":1}}}"#
                .to_string(),
            format!(r#"{{"usage":{{{many}"input_tokens":6,"output_tokens":8}}}}"#),
            format!(
                r#"{{"usage":{{"x":"{}","input_tokens":6}}}}"#,
                "y".repeat(300)
            ),
            format!(
                r#"{{"x":"{}","usage":{{"input_tokens":6}}}}"#,
                "y".repeat(300)
            ),
            format!(
                r#"{{"text":"{}","usage":{{"input_tokens":6}}}}"#,
                "x".repeat(70_000)
            ),
            format!(r#"{{"usag":{{"input_tokens":6}},"usages":{{}},{many}"usage":1}}"#),
            r#"{"reason":{"kind":"completed"},"text":"done","output":[1,2],"output_error":"bad"}"#
                .to_string(),
            r#"{"run_id":"r1","attempt":2,"output":{"status":"ok"},"error":{"code":"e"}}"#
                .to_string(),
            r#"{"callback_id":"cb","kind":"approval","title":"T","x":true,"y":false}"#.to_string(),
            format!(r#"{{{many}"call_id":"last","text":"x"}}"#),
            format!(r#"{{"text":"{}"}}"#, "é".repeat(40_000)),
        ];
        let mut fast = 0;
        for data in &cases {
            for kind in KINDS {
                let line = format!(
                    r#"{{"seq":1,"ts":"2026-01-01T00:00:00Z","root":"r","session":"s","type":"{kind}","data":{data}}}"#
                );
                let Some(env) = crate::decode::parse_envelope(line.as_bytes()) else {
                    continue;
                };
                fast += 1;
                assert_eq!(
                    PayloadIndex::of_members(Kind::of(kind), env.data, &env.members),
                    PayloadIndex::of(kind, env.data),
                    "{kind} {data}"
                );
            }
        }
        assert_eq!(
            fast,
            cases.len() * KINDS.len(),
            "every case takes the fast path"
        );
        // The nested names, split once, are the lists' own.
        for kind in KINDS {
            let k = Kind::of(kind);
            let keys = wanted(k);
            let n = top_level(k);
            let split: Vec<(&str, &str)> = keys[n..]
                .iter()
                .map(|k| k.split_once('.').expect("a.b"))
                .collect();
            match nested_of(k) {
                None => assert!(split.is_empty(), "{kind}"),
                Some((p, parent, children, first)) => {
                    assert_eq!(keys[p], parent);
                    assert!(p < n && first == n && parent == Members::NESTED);
                    assert_eq!(split.len(), children.len());
                    for ((a, b), c) in split.iter().zip(children) {
                        assert_eq!((*a, *b), (parent, *c));
                    }
                }
            }
        }
        // Why keys may be compared as written (see `Members::push`).
        for kind in KINDS {
            for key in wanted(Kind::of(kind)) {
                assert!(key
                    .bytes()
                    .all(|c| c.is_ascii_lowercase() || c == b'_' || c == b'.'));
            }
        }
    }
}
