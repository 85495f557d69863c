//! The byte-level walker under [`super::fields`]: the top-level members of a JSON object
//! and the length of a string, eight bytes at a time, handing anything it does not handle
//! itself back to serde_json.

use super::Raw;

/// When `b` is exactly `{"key":"..."}` with no `\u` escape: the string value's span
/// (quotes included) and its length in characters, in one pass.
pub(super) fn sole_string_member(b: &[u8], key: &str) -> Option<((usize, usize), i64)> {
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
pub(super) fn scan_chars(b: &[u8], mut i: usize) -> Option<(usize, i64)> {
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
pub(super) fn has_backslash(b: &[u8]) -> bool {
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
pub(super) fn quote_or_backslash(b: &[u8], mut i: usize) -> Option<usize> {
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
pub(super) fn structural(b: &[u8], mut i: usize) -> Option<usize> {
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
pub(super) fn walk<'a>(data: &'a str, keys: &[&str], out: &mut [Option<Raw<'a>>]) -> Option<()> {
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
