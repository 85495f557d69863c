//! The fast path of the line decoder: a single pass over the bytes of a line in the common
//! shape, without serde. It validates the whole line as JSON (the grammar serde_json
//! accepts) and picks the envelope fields out as it goes.
//!
//! It only ever says "this line is this event" or "not sure": anything unusual — an escape
//! in a key or an id, a `\u` escape or a number with an exponent anywhere, a field given
//! twice, a missing or mistyped field, nesting near the limit, a timestamp in a rarer
//! RFC 3339 spelling — returns `None`, and the general decoder (serde_json) decides, with
//! its reasons. So the fast path can change speed, never outcomes; the fuzz target
//! `decode_line` checks that whatever it accepts, the general decoder accepts the same.

use crate::event::payload::Members;

/// An event's envelope as the fast path reads it: the line's own text, borrowed, so that
/// the reader decides how ids become [`crate::event::Id`]s (shared, one per distinct text).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Envelope<'a> {
    pub seq: u64,
    pub ts: i64,
    pub root: &'a str,
    pub session: &'a str,
    pub turn: Option<&'a str>,
    pub kind: &'a str,
    /// `{}` when absent or null.
    pub data: &'a str,
    /// The top-level members of `data`, met while checking it.
    pub members: Members,
}

/// Parses a line in the common shape, or `None`.
pub fn parse_common(line: &str) -> Option<Envelope<'_>> {
    parse_common_after(line, &mut LastMinute::default())
}

/// [`parse_common`] for the next line of a log whose last timestamp's minute is `last`
/// (updated): the same answer, sooner.
pub fn parse_common_after<'l>(line: &'l str, last: &mut LastMinute) -> Option<Envelope<'l>> {
    let b = line.as_bytes();
    let mut s = Scan {
        text: line,
        b,
        i: 0,
    };
    s.ws();
    s.eat(b'{')?;
    let mut seq = None;
    let mut ts = None;
    let mut root = None;
    let mut session = None;
    let mut kind = None;
    // Some(None) is an explicit `null`.
    let mut turn: Option<Option<&str>> = None;
    let mut data: Option<&str> = None;
    let mut members = Members::EMPTY;
    s.ws();
    if s.peek()? == b'}' {
        return None; // no fields: missing `seq`
    }
    // The fields in the order and spelling writers mostly use —
    // `"seq":N,"ts":"…","root":"…","session":"…"[,"turn":…],"type":"…"[,"data":{…}]` — are
    // matched by their keys' bytes, each value read exactly as the loop below reads it
    // (the loop's whitespace skips would skip nothing: each key is followed by its value's
    // first byte). At the first field in another shape the loop takes over, from the
    // separator after the last field read here: a field given twice is still refused there.
    let mut more = true;
    'common: {
        if !(s.at(b"\"seq\":") && matches!(s.byte(6), Some(b'0'..=b'9'))) {
            break 'common;
        }
        s.i += 6;
        seq = Some(s.seq()?);
        if !s.field(b",\"ts\":", b'"') {
            break 'common;
        }
        ts = Some(last.parse(s.plain_string()?)?);
        if !s.field(b",\"root\":", b'"') {
            break 'common;
        }
        root = Some(s.plain_str()?);
        if !s.field(b",\"session\":", b'"') {
            break 'common;
        }
        session = Some(s.plain_str()?);
        if s.field(b",\"turn\":", b'"') {
            turn = Some(Some(s.plain_str()?));
        } else if s.field(b",\"turn\":", b'n') {
            s.literal(b"null")?;
            turn = Some(None);
        }
        if !s.field(b",\"type\":", b'"') {
            break 'common;
        }
        kind = Some(s.plain_str()?);
        if s.field(b",\"data\":", b'{') {
            let start = s.i;
            s.object(start, &mut members, false)?;
            // The span starts and ends at ASCII bytes: char boundaries.
            data = Some(line.get(start..s.i)?);
        }
    }
    if seq.is_some() {
        s.ws();
        match s.next()? {
            b',' => s.ws(),
            b'}' => more = false,
            _ => return None,
        }
    }
    while more {
        let key = s.plain_string()?;
        s.ws();
        s.eat(b':')?;
        s.ws();
        match key {
            b"seq" => {
                if seq.is_some() {
                    return None;
                }
                seq = Some(s.seq()?);
            }
            b"ts" => {
                if ts.is_some() {
                    return None;
                }
                ts = Some(last.parse(s.plain_string()?)?);
            }
            b"root" => root = Some(once(root, s.plain_str()?)?),
            b"session" => session = Some(once(session, s.plain_str()?)?),
            b"type" => kind = Some(once(kind, s.plain_str()?)?),
            b"turn" => {
                if turn.is_some() {
                    return None;
                }
                turn = Some(if s.peek()? == b'n' {
                    s.literal(b"null")?;
                    None
                } else {
                    Some(s.plain_str()?)
                });
            }
            b"data" => {
                if data.is_some() {
                    return None;
                }
                data = Some(match s.peek()? {
                    b'n' => {
                        s.literal(b"null")?;
                        "{}"
                    }
                    b'{' => {
                        let start = s.i;
                        s.object(start, &mut members, false)?;
                        // The span starts and ends at ASCII bytes: char boundaries.
                        line.get(start..s.i)?
                    }
                    _ => return None,
                });
            }
            _ => s.value(1)?,
        }
        s.ws();
        match s.next()? {
            b',' => s.ws(),
            b'}' => more = false,
            _ => return None,
        }
    }
    s.ws();
    if s.i != b.len() {
        return None;
    }
    Some(Envelope {
        seq: seq?,
        ts: ts?,
        root: root?,
        session: session?,
        turn: turn.flatten(),
        kind: kind?,
        data: data.unwrap_or("{}"),
        members,
    })
}

/// What a reader that keeps some types only needs to know of a line first: its `seq`,
/// `root` and `type`, as the line's own bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head<'a> {
    pub seq: u64,
    pub root: &'a [u8],
    pub kind: &'a [u8],
}

/// The [`Head`] of a line that opens in the common shape
/// (`{"seq":N,"ts":"…","root":"…","session":"…"[,"turn":…],"type":"…"`), read up to the
/// end of `type` and no further: nothing after it, the payload included, is looked at,
/// and `ts` is not parsed. `None` for a line that opens another way. Whether the line is
/// an event at all is not known from this: only the whole line says ([`parse_common`]).
pub fn peek_head(line: &[u8]) -> Option<Head<'_>> {
    // Only byte spans are read (`plain_string`), never `text`.
    let mut s = Scan {
        text: "",
        b: line,
        i: 0,
    };
    s.ws();
    s.eat(b'{')?;
    s.ws();
    if !(s.at(b"\"seq\":") && matches!(s.byte(6), Some(b'0'..=b'9'))) {
        return None;
    }
    s.i += 6;
    let seq = s.seq()?;
    if !s.field(b",\"ts\":", b'"') {
        return None;
    }
    s.plain_string()?;
    if !s.field(b",\"root\":", b'"') {
        return None;
    }
    let root = s.plain_string()?;
    if !s.field(b",\"session\":", b'"') {
        return None;
    }
    s.plain_string()?;
    if s.field(b",\"turn\":", b'"') {
        s.plain_string()?;
    } else if s.field(b",\"turn\":", b'n') {
        s.literal(b"null")?;
    }
    if !s.field(b",\"type\":", b'"') {
        return None;
    }
    let kind = s.plain_string()?;
    Some(Head { seq, root, kind })
}

/// `Some(v)` when the field was not seen before.
fn once<'a>(prev: Option<&'a str>, v: &'a str) -> Option<&'a str> {
    match prev {
        None => Some(v),
        Some(_) => None,
    }
}

/// Nesting the fast path gives up at, well inside the decoder's limit
/// ([`super::MAX_DEPTH`]), so that it never has to tell where the limit falls.
const FAST_DEPTH: usize = 64;

/// Numbers longer than this are left to the general decoder (which checks huge ones).
const FAST_NUMBER: usize = 64;

struct Scan<'a> {
    /// The line, and its bytes.
    text: &'a str,
    b: &'a [u8],
    i: usize,
}

impl<'a> Scan<'a> {
    #[inline]
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    #[inline]
    fn next(&mut self) -> Option<u8> {
        let c = self.peek()?;
        self.i += 1;
        Some(c)
    }

    #[inline]
    fn eat(&mut self, c: u8) -> Option<()> {
        (self.next()? == c).then_some(())
    }

    #[inline]
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.i += 1;
        }
    }

    /// The byte `ahead` bytes on.
    #[inline]
    fn byte(&self, ahead: usize) -> Option<u8> {
        self.b.get(self.i + ahead).copied()
    }

    /// Whether the text at the cursor starts with `word`.
    #[inline]
    fn at<const N: usize>(&self, word: &[u8; N]) -> bool {
        self.b.get(self.i..self.i + N).is_some_and(|w| w == word)
    }

    /// Steps over `key` (a separator, a key and its colon) when it is at the cursor and the
    /// byte after it is `first`.
    #[inline]
    fn field<const N: usize>(&mut self, key: &[u8; N], first: u8) -> bool {
        let hit = self.at(key) && self.byte(N) == Some(first);
        if hit {
            self.i += N;
        }
        hit
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        if self.b[self.i..].starts_with(word) {
            self.i += word.len();
            Some(())
        } else {
            None
        }
    }

    /// A string without escapes: where its content starts and ends.
    #[inline]
    fn plain_span(&mut self) -> Option<(usize, usize)> {
        self.eat(b'"')?;
        let start = self.i;
        let end = start + special_at(&self.b[start..])?;
        if self.b[end] != b'"' {
            return None;
        }
        self.i = end + 1;
        Some((start, end))
    }

    /// A string without escapes: its content.
    #[inline]
    fn plain_string(&mut self) -> Option<&'a [u8]> {
        let (start, end) = self.plain_span()?;
        Some(&self.b[start..end])
    }

    #[inline]
    fn plain_str(&mut self) -> Option<&'a str> {
        let (start, end) = self.plain_span()?;
        // Just inside two quotes: char boundaries of the line.
        self.text.get(start..end)
    }

    /// Any string, validated: escapes other than `\u` are checked and skipped.
    fn string(&mut self) -> Option<()> {
        self.eat(b'"')?;
        loop {
            let at = self.i + special_at(&self.b[self.i..])?;
            match self.b[at] {
                b'"' => {
                    self.i = at + 1;
                    return Some(());
                }
                b'\\' => match self.b.get(at + 1)? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.i = at + 2,
                    _ => return None, // `\u` (surrogates are checked by the general path) or bad
                },
                _ => return None, // a control character
            }
        }
    }

    /// `seq`: a non-negative integer below 2^63 in JSON's spelling.
    fn seq(&mut self) -> Option<u64> {
        let start = self.i;
        while let Some(b'0'..=b'9') = self.peek() {
            self.i += 1;
        }
        let digits = &self.b[start..self.i];
        if digits.is_empty() || digits.len() > 19 || (digits.len() > 1 && digits[0] == b'0') {
            return None;
        }
        if let Some(b'.' | b'e' | b'E') = self.peek() {
            return None;
        }
        let v = digits
            .iter()
            .fold(0u64, |v, &d| v * 10 + u64::from(d - b'0'));
        (v < 1 << 63).then_some(v)
    }

    /// A JSON number without an exponent.
    fn number(&mut self) -> Option<()> {
        let start = self.i;
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        match self.next()? {
            b'0' => {}
            b'1'..=b'9' => {
                while let Some(b'0'..=b'9') = self.peek() {
                    self.i += 1;
                }
            }
            _ => return None,
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            let frac = self.i;
            while let Some(b'0'..=b'9') = self.peek() {
                self.i += 1;
            }
            if self.i == frac {
                return None;
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            return None;
        }
        (self.i - start <= FAST_NUMBER).then_some(())
    }

    /// The `data` object (at nesting level 1, as [`Scan::value`] reads it), validated, with
    /// its top-level members listed in `members` as offsets from `base`, where it starts;
    /// or (`nested`) the object value of its member [`Members::NESTED`] (level 2), whose
    /// members are listed as its nested ones.
    fn object(&mut self, base: usize, members: &mut Members, nested: bool) -> Option<()> {
        self.eat(b'{')?;
        self.ws();
        if self.peek()? == b'}' {
            self.i += 1;
            return Some(());
        }
        loop {
            let key_start = self.i + 1;
            self.string()?;
            let key_end = self.i - 1;
            self.ws();
            self.eat(b':')?;
            self.ws();
            let value_start = self.i;
            if nested {
                self.value(3)?;
            } else if self.peek() == Some(b'{')
                && &self.b[key_start..key_end] == Members::NESTED.as_bytes()
            {
                members.open_nested(value_start - base);
                self.object(base, members, true)?;
            } else {
                self.value(2)?;
            }
            let key = (key_start - base, key_end - base);
            let value = (value_start - base, self.i - base);
            if nested {
                members.push_nested(key, value);
            } else {
                members.push(key, value);
            }
            self.ws();
            match self.next()? {
                b',' => self.ws(),
                b'}' => return Some(()),
                _ => return None,
            }
        }
    }

    /// Any value, validated, at nesting level `depth` (the line's object is level 1).
    fn value(&mut self, depth: usize) -> Option<()> {
        match self.peek()? {
            b'"' => self.string(),
            b'{' => {
                if depth >= FAST_DEPTH {
                    return None;
                }
                self.i += 1;
                self.ws();
                if self.peek()? == b'}' {
                    self.i += 1;
                    return Some(());
                }
                loop {
                    self.string()?;
                    self.ws();
                    self.eat(b':')?;
                    self.ws();
                    self.value(depth + 1)?;
                    self.ws();
                    match self.next()? {
                        b',' => self.ws(),
                        b'}' => return Some(()),
                        _ => return None,
                    }
                }
            }
            b'[' => {
                if depth >= FAST_DEPTH {
                    return None;
                }
                self.i += 1;
                self.ws();
                if self.peek()? == b']' {
                    self.i += 1;
                    return Some(());
                }
                loop {
                    self.value(depth + 1)?;
                    self.ws();
                    match self.next()? {
                        b',' => self.ws(),
                        b']' => return Some(()),
                        _ => return None,
                    }
                }
            }
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            _ => self.number(),
        }
    }
}

/// Whether every byte of `s` is ASCII: thirty-two bytes at a time with SSE2 (part of every
/// x86-64), the rest with the standard library. (`<[u8]>::is_ascii` alone, a word at a
/// time, took more instructions than a full `from_utf8` check of the generated lines.)
#[inline]
pub fn is_ascii(s: &[u8]) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128};
        let mut blocks = s.chunks_exact(32);
        for block in &mut blocks {
            // SAFETY: SSE2 is in the x86-64 baseline; the two loads read the block's 32
            // bytes, unaligned.
            let high = unsafe {
                let p = block.as_ptr();
                let v = _mm_or_si128(_mm_loadu_si128(p.cast()), _mm_loadu_si128(p.add(16).cast()));
                _mm_movemask_epi8(v)
            };
            if high != 0 {
                return false;
            }
        }
        blocks.remainder().is_ascii()
    }
    #[cfg(not(target_arch = "x86_64"))]
    s.is_ascii()
}

/// The offset of the first `"`, `\` or control character (< 0x20) in `s`: sixteen bytes at
/// a time with SSE2 (part of every x86-64), then eight at a time.
#[inline]
fn special_at(s: &[u8]) -> Option<usize> {
    let mut i = 0;
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{
            _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
            _mm_setzero_si128, _mm_subs_epu8,
        };
        // SAFETY: SSE2 is in the x86-64 baseline, so the intrinsics are always available;
        // each load reads the 16 bytes at `i`, within `s` (`i + 16 <= s.len()`), unaligned.
        unsafe {
            let quote = _mm_set1_epi8(b'"' as i8);
            let slash = _mm_set1_epi8(b'\\' as i8);
            let control_max = _mm_set1_epi8(0x1f);
            let zero = _mm_setzero_si128();
            while i + 16 <= s.len() {
                let v = _mm_loadu_si128(s.as_ptr().add(i).cast());
                // Saturating `v - 0x1f` is zero exactly for the bytes 0x00..=0x1f.
                let control = _mm_cmpeq_epi8(_mm_subs_epu8(v, control_max), zero);
                let hit = _mm_or_si128(
                    _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, slash)),
                    control,
                );
                let mask = _mm_movemask_epi8(hit) as u32;
                if mask != 0 {
                    return Some(i + mask.trailing_zeros() as usize);
                }
                i += 16;
            }
        }
    }
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    while i + 8 <= s.len() {
        let w = u64::from_le_bytes(s[i..i + 8].try_into().expect("8 bytes"));
        let quote = w ^ (LO * u64::from(b'"'));
        let slash = w ^ (LO * u64::from(b'\\'));
        // A byte is zero / below 0x20 exactly when the high bit of this is set (and the
        // byte itself is below 0x80).
        let hit = (quote.wrapping_sub(LO) & !quote)
            | (slash.wrapping_sub(LO) & !slash)
            | (w.wrapping_sub(LO * 0x20) & !w);
        let hit = hit & HI;
        if hit != 0 {
            // The lowest flagged byte is exact (borrows only run upwards).
            return Some(i + (hit.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    s[i..]
        .iter()
        .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
        .map(|p| i + p)
}

/// `ts` in the spelling nearly every log uses — `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)` —
/// as microseconds, exactly as [`super::parse_ts`] reads it; `None` for anything else.
pub fn parse_ts_common(s: &[u8]) -> Option<i64> {
    let minute = minute_secs(s)?;
    seconds_on(minute, s)
}

/// The last minute [`parse_ts_common`] read, so that the next timestamp of the same minute
/// reads only its seconds, fraction and offset, and one of the same day only its hour and
/// minute besides. Timestamps of a log come in order, mostly many to a minute: the date and
/// time up to the minute took ~300 of the ~430 instructions of a timestamp (callgrind,
/// generated log); where agents interleave out of order, minutes change often, days seldom.
#[derive(Debug, Clone, Copy, Default)]
pub struct LastMinute {
    /// Whether a minute was read yet.
    known: bool,
    /// `YYYY-MM-DDTHH:MM`, as read.
    text: [u8; 16],
    /// Its seconds since the Unix epoch (at second 0, before the offset).
    secs: i64,
    /// The seconds since the epoch of its day (`YYYY-MM-DD`, the first 10 bytes of `text`).
    day: i64,
}

impl LastMinute {
    /// [`parse_ts_common`]`(s)`, reading the minute again only when it changed.
    #[inline]
    pub fn parse(&mut self, s: &[u8]) -> Option<i64> {
        let head: &[u8; 16] = s.get(..16)?.try_into().ok()?;
        if !self.known || *head != self.text {
            // A date read (and found valid) before needs no second reading.
            let day = if self.known && head[..10] == self.text[..10] {
                self.day
            } else {
                day_secs(s)?
            };
            let secs = day + hour_minute_secs(s)?;
            *self = LastMinute {
                known: true,
                text: *head,
                secs,
                day,
            };
        }
        seconds_on(self.secs, s)
    }
}

/// `YYYY-MM-DDTHH:MM`, the first 16 bytes of a timestamp in the common spelling (which is
/// at least 20 bytes long), validated: its seconds since the Unix epoch; `None` for
/// anything else.
fn minute_secs(s: &[u8]) -> Option<i64> {
    Some(day_secs(s)? + hour_minute_secs(s)?)
}

/// The digit `c` stands for.
#[inline(always)]
fn digit(c: u8) -> Option<u32> {
    let d = c.wrapping_sub(b'0');
    (d < 10).then_some(u32::from(d))
}

/// The two digits at `s[i..i + 2]` as a number.
#[inline(always)]
fn two_digits(s: &[u8], i: usize) -> Option<u32> {
    Some(digit(s[i])? * 10 + digit(s[i + 1])?)
}

/// The date part of [`minute_secs`] (`YYYY-MM-DD`), validated: its day's seconds since the
/// epoch.
fn day_secs(s: &[u8]) -> Option<i64> {
    if s.len() < 20 || s[4] != b'-' || s[7] != b'-' {
        return None;
    }
    let year = (two_digits(s, 0)? * 100 + two_digits(s, 2)?) as i32;
    let (month, day) = (two_digits(s, 5)?, two_digits(s, 8)?);
    if !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
        return None;
    }
    Some(days_from_civil(i64::from(year), month, day) * 86_400)
}

/// The time part of [`minute_secs`] (`THH:MM`), validated: its seconds into the day.
#[inline]
fn hour_minute_secs(s: &[u8]) -> Option<i64> {
    if s.len() < 20 || s[10] != b'T' || s[13] != b':' {
        return None;
    }
    let (hour, minute) = (two_digits(s, 11)?, two_digits(s, 14)?);
    if hour > 23 || minute > 59 {
        return None;
    }
    Some(i64::from(hour * 3600 + minute * 60))
}

/// The rest of a timestamp in the common spelling, from byte 16 (`:SS[.fraction](Z|±HH:MM)`),
/// on the minute `minute` (seconds since the epoch, from [`minute_secs`]): microseconds, or
/// `None`.
fn seconds_on(minute: i64, s: &[u8]) -> Option<i64> {
    if s.len() < 20 || s[16] != b':' {
        return None;
    }
    let second = two_digits(s, 17)?;
    if second > 59 {
        return None; // leap seconds: the general path
    }
    let mut i = 19;
    let mut nanos = 0u32;
    if s[i] == b'.' {
        i += 1;
        let start = i;
        while i < s.len() && s[i].is_ascii_digit() {
            if i - start < 9 {
                nanos = nanos * 10 + u32::from(s[i] - b'0');
            }
            i += 1;
        }
        let n = i - start;
        if n == 0 || n > 9 {
            return None;
        }
        nanos *= 10u32.pow(9 - n as u32);
    }
    let offset_secs: i64 = match &s[i..] {
        b"Z" => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let digit = |c: u8| c.is_ascii_digit().then(|| i64::from(c - b'0'));
            let h = digit(*h1)? * 10 + digit(*h2)?;
            let m = digit(*m1)? * 10 + digit(*m2)?;
            if h > 23 || m > 59 {
                return None;
            }
            let secs = h * 3600 + m * 60;
            if *sign == b'-' {
                -secs
            } else {
                secs
            }
        }
        _ => return None,
    };
    let secs = minute + i64::from(second) - offset_secs;
    Some(secs * 1_000_000 + i64::from(nanos / 1000))
}

/// Days in `month` (1-12) of `year` (proleptic Gregorian).
fn days_in_month(year: i32, month: u32) -> u32 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to a valid date (proleptic Gregorian), as in Howard Hinnant's
/// `days_from_civil`: a few integer operations where a calendar library's checked
/// constructors took a tenth of the timestamp's cost.
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_bytes_are_found_wherever_they_are() {
        // Past 40 bytes: a hit in the 16-byte blocks, the 8-byte words after them and the tail.
        for len in 0..41 {
            for at in 0..len {
                for c in [b'"', b'\\', 0x00, 0x1f, b'\n'] {
                    let mut s = vec![b'a'; len];
                    s[at] = c;
                    if at + 1 < len {
                        s[at + 1] = b'"'; // a later hit must not win
                    }
                    assert_eq!(special_at(&s), Some(at), "len {len} at {at} byte {c}");
                }
            }
            assert_eq!(special_at(&vec![b'a'; len]), None);
            // Bytes at and above 0x20 and UTF-8 continuation bytes are not special.
            let s: Vec<u8> = (0..len)
                .map(|i| [0x20, 0x7f, 0x80, 0xc3, 0xff][i % 5])
                .collect();
            assert_eq!(special_at(&s), None);
        }
    }

    #[test]
    fn a_byte_above_ascii_is_found_wherever_it_is() {
        // Past 70 bytes: the byte in the 32-byte blocks and in the tail.
        for len in 0..71 {
            assert!(is_ascii(&vec![0x7f; len]));
            for at in 0..len {
                for c in [0x80, 0xc3, 0xff] {
                    let mut s = vec![b'a'; len];
                    s[at] = c;
                    assert!(!is_ascii(&s), "len {len} at {at} byte {c:#x}");
                }
            }
        }
    }

    #[test]
    fn common_timestamps_read_as_chrono_reads_them() {
        let cases = [
            "2026-11-03T10:00:00Z",
            "2026-11-03T10:00:00.5Z",
            "2026-11-03T10:00:00.123456Z",
            "2026-11-03T10:00:00.123456789Z",
            "2026-11-03T10:00:00.1234567Z",
            "1969-12-31T23:59:59.999999Z",
            "0001-01-01T00:00:00Z",
            "2024-02-29T12:00:00+05:30",
            "2024-02-29T12:00:00.25-08:00",
            "2024-02-29T12:00:00-23:59",
            "9999-12-31T23:59:59.999999999+00:00",
        ];
        // chrono itself, not `parse_ts` (which tries this function first).
        let chrono_reads = |c: &str| {
            chrono::DateTime::parse_from_rfc3339(c)
                .ok()
                .map(|t| t.timestamp_micros())
        };
        for c in cases {
            assert_eq!(parse_ts_common(c.as_bytes()), chrono_reads(c), "{c}");
        }
        // Every day of a span of years with leap days and century rules, at a time with a
        // fraction, in UTC and with an offset; and day 29-31 of every month (some invalid).
        let mut day = chrono::NaiveDate::from_ymd_opt(1896, 1, 1).unwrap();
        let last = chrono::NaiveDate::from_ymd_opt(2104, 12, 31).unwrap();
        while day <= last {
            for suffix in ["T23:59:59.999999Z", "T00:00:00.5-09:30"] {
                let c = format!("{}{suffix}", day.format("%Y-%m-%d"));
                assert_eq!(parse_ts_common(c.as_bytes()), chrono_reads(&c), "{c}");
            }
            day = day.succ_opt().unwrap();
        }
        for year in [1900, 2000, 2023, 2024, 2100] {
            for month in 1..=12 {
                for d in 28..=32 {
                    let c = format!("{year:04}-{month:02}-{d:02}T12:00:00Z");
                    assert_eq!(parse_ts_common(c.as_bytes()), chrono_reads(&c), "{c}");
                }
            }
        }
        // Not the common shape, or not a timestamp: left to the general path.
        for c in [
            "2023-02-29T12:00:00Z",
            "2026-11-03T10:00:60Z",
            "2026-11-03t10:00:00Z",
            "2026-11-03T10:00:00z",
            "2026-11-03 10:00:00Z",
            "2026-11-03T10:00:00",
            "2026-11-03T10:00:00.Z",
            "2026-11-03T10:00:00.1234567891Z",
            "2026-11-03T24:00:00Z",
            "2026-13-03T10:00:00Z",
            "2026-11-03T10:00:00+24:00",
            "2026-11-03T10:00:00+0530",
        ] {
            assert_eq!(parse_ts_common(c.as_bytes()), None, "{c}");
        }
    }

    #[test]
    fn a_remembered_minute_reads_as_a_fresh_parse() {
        // Timestamps sharing minutes (valid and not), in an order that goes back and forth,
        // each read after the one before: every answer must be the fresh parse's.
        let mut cases: Vec<String> = Vec::new();
        for minute in [
            "2026-11-03T10:00",
            "2026-11-03T10:01",
            "2026-11-03T24:00",
            "2026-11-03T1a:00",
            "2026-11-03X10:00",
            "2026-11-03T11:60",
            "2026-11-03T11:59",
            "2026-11-04T11:59",
            "2024-02-29T23:59",
            "2023-02-29T12:00",
            "2023-02-29T12:01",
        ] {
            for rest in [
                ":00Z",
                ":59.999999Z",
                ":30.5+05:30",
                ":30.5-23:59",
                ":60Z",
                ":0Z",
                ":00",
                ":00.Z",
                ":00+24:00",
                "Z",
                ":00.1234567891Z",
                ":07.123456789-00:00",
            ] {
                cases.push(format!("{minute}{rest}"));
            }
        }
        cases.extend(
            [
                "",
                "2026-11-03T10:00",
                "2026-11-03T10:0",
                "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0:00Z",
            ]
            .map(String::from),
        );
        let n = cases.len();
        for order in [
            (0..n).collect::<Vec<_>>(),
            (0..n).rev().collect(),
            (0..n).map(|k| (k * 7) % n).collect(),
        ] {
            let mut last = LastMinute::default();
            for k in order {
                let c = cases[k].as_bytes();
                assert_eq!(last.parse(c), parse_ts_common(c), "{}", cases[k]);
            }
        }
        // The fast line decoder with a remembered minute reads the same events.
        let mut last = LastMinute::default();
        for c in &cases {
            let line = format!(r#"{{"seq":1,"ts":"{c}","root":"r","session":"r","type":"log"}}"#);
            assert_eq!(
                parse_common_after(&line, &mut last),
                parse_common(&line),
                "{line}"
            );
        }
    }
}
