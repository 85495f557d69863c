//! Writing lines: JSON string literals, RFC 3339 timestamps, and [`Out`], the buffer of an
//! agent's lines with each line's span, seq and time (what anomalies need).

use std::fmt::Write as _;

/// 2026-11-01T00:00:00Z, in milliseconds since the epoch.
pub(crate) const BASE_MS: i64 = 1_793_491_200_000;
/// Agents start spread over this many days after the base.
pub(crate) const SPREAD_DAYS: u64 = 5;

/// Appends `s` as a JSON string literal.
pub(crate) fn json_str(out: &mut String, s: &str) {
    out.push('"');
    if !s.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
        out.push_str(s);
    } else {
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c if (c as u32) < 0x20 => {
                    let _ = write!(out, "\\u{:04x}", c as u32);
                }
                c => out.push(c),
            }
        }
    }
    out.push('"');
}

/// Days since the epoch to (year, month, day) (H. Hinnant's civil_from_days).
pub(crate) fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Formats milliseconds since the epoch as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub(crate) fn push_ts(out: &mut String, ms: i64) {
    let days = ms.div_euclid(86_400_000);
    let rem = ms.rem_euclid(86_400_000);
    let (y, m, d) = civil_from_days(days);
    let (h, mi, s, milli) = (
        rem / 3_600_000,
        rem / 60_000 % 60,
        rem / 1000 % 60,
        rem % 1000,
    );
    let _ = write!(
        out,
        "{y:04}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{milli:03}Z"
    );
}

/// One line of an agent: its span in the agent's buffer and what anomalies need.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Line {
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) seq: u64,
    pub(crate) ts: i64,
    /// A turn-scoped event other than `turn/end`: cutting the log here leaves a turn open.
    pub(crate) mid_turn: bool,
    /// Content identity: the index of the first line with equal content (equal as JSON
    /// values, same root and seq), or `None` for a line that ingest rejects on its own.
    pub(crate) content: Option<usize>,
}

/// The lines of one agent, written into one buffer.
pub(crate) struct Out {
    pub(crate) root: String,
    pub(crate) buf: String,
    pub(crate) lines: Vec<Line>,
    pub(crate) seq: u64,
    pub(crate) ts: i64,
}

impl Out {
    /// Writes one event at the current seq and time. `data` writes the payload object, or
    /// nothing for an event without `data`.
    pub(crate) fn ev(
        &mut self,
        session: &str,
        turn: Option<&str>,
        ty: &str,
        data: impl FnOnce(&mut String),
    ) {
        let start = self.buf.len();
        let b = &mut self.buf;
        let _ = write!(b, "{{\"seq\":{},\"ts\":\"", self.seq);
        push_ts(b, self.ts);
        b.push_str("\",\"root\":");
        json_str(b, &self.root);
        b.push_str(",\"session\":");
        json_str(b, session);
        if let Some(t) = turn {
            b.push_str(",\"turn\":");
            json_str(b, t);
        }
        b.push_str(",\"type\":");
        json_str(b, ty);
        let mark = b.len();
        b.push_str(",\"data\":");
        let before = b.len();
        data(b);
        if b.len() == before {
            b.truncate(mark);
        }
        b.push('}');
        self.lines.push(Line {
            start,
            end: self.buf.len(),
            seq: self.seq,
            ts: self.ts,
            mid_turn: turn.is_some() && ty != "turn/end",
            content: Some(self.lines.len()),
        });
        self.seq += 1;
        self.ts += 1;
    }

    pub(crate) fn ev0(&mut self, session: &str, turn: Option<&str>, ty: &str) {
        self.ev(session, turn, ty, |_| {});
    }

    pub(crate) fn text(&mut self, session: &str, turn: Option<&str>, ty: &str, text: &str) {
        self.ev(session, turn, ty, |d| {
            d.push_str("{\"text\":");
            json_str(d, text);
            d.push('}');
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_format() {
        let mut s = String::new();
        push_ts(&mut s, BASE_MS);
        assert_eq!(s, "2026-11-01T00:00:00.000Z");
        s.clear();
        push_ts(&mut s, 1_793_700_000_123);
        assert_eq!(s, "2026-11-03T10:00:00.123Z");
        s.clear();
        push_ts(&mut s, 951_782_400_000 + 86_399_999); // 2000-02-29, leap day
        assert_eq!(s, "2000-02-29T23:59:59.999Z");
    }
}
