//! Anomalies, at the options' rate: what real pipelines deliver besides clean logs
//! (duplicates, conflicting re-deliveries, bad lines, truncated agents, lost lines,
//! malformed turn ends, lines out of `seq` order, agents split over two files).

use super::*;
use crate::text::push_ts;

impl Gen {
    /// Applies anomalies (with a rate > 0) and returns the agent's lines in written order.
    /// `second_first` tells whether ingest reads the agent's second file before its first
    /// (`None`: one file, read in written order).
    pub(crate) fn finish(mut self, split: bool, second_first: Option<bool>) -> Rendered {
        let n = self.out.lines.len();
        let mut order: Vec<usize> = (0..n).collect();
        if self.rate > 0.0 {
            self.anomalies(&mut order);
        }
        let mut items: Vec<Item> = order
            .iter()
            .map(|&i| {
                let l = self.out.lines[i];
                Item {
                    start: l.start,
                    end: l.end,
                    second: false,
                    seq: l.seq,
                    ts: l.ts,
                    content: l.content,
                }
            })
            .collect();
        if split && self.rate > 0.0 && items.len() > 4 && self.arng.chance(0.3 * self.rate) {
            // Split over two files: a tail (log rotation), and a few scattered lines.
            let from =
                self.arng
                    .range(items.len() as u64 / 3, items.len() as u64 - 1) as usize;
            for (i, it) in items.iter_mut().enumerate() {
                it.second = i >= from || self.arng.chance(0.05);
            }
        }
        // The order ingest sees: by file, then line (each file keeps the written order).
        let mut seen: Vec<usize> = (0..items.len()).collect();
        if let Some(sf) = second_first {
            seen.sort_by_key(|&k| items[k].second != sf);
        }
        let expected = self.expected(seen.iter().map(|&k| order[k]));
        Rendered {
            buf: self.out.buf,
            items,
            expected,
        }
    }

    /// Applies §1 and §7 to the lines (indices into `out.lines`) in ingest order: per seq the
    /// first valid line is kept, a later one with equal content is a duplicate, one with
    /// other content a reject; a bad line is a reject.
    pub(crate) fn expected(&self, lines: impl Iterator<Item = usize>) -> Expected {
        let mut e = Expected::default();
        let mut kept: Vec<Option<usize>> = vec![None; self.out.seq as usize + 1];
        for li in lines {
            let line = self.out.lines[li];
            let Some(content) = line.content else {
                e.rejects += 1;
                continue;
            };
            match &mut kept[line.seq as usize] {
                slot @ None => {
                    *slot = Some(content);
                    e.kept += 1;
                }
                Some(k) if *k == content => e.duplicates += 1,
                Some(_) => e.rejects += 1,
            }
        }
        e
    }

    /// Adds a line to the buffer (not to the generated events) and returns its index.
    pub(crate) fn extra_line(&mut self, text: &str, like: Line, content: Content) -> usize {
        let content = match content {
            Content::New => Some(self.out.lines.len()),
            Content::SameAs(i) => self.out.lines[i].content,
            Content::Bad => None,
        };
        let start = self.out.buf.len();
        self.out.buf.push_str(text);
        self.out.lines.push(Line {
            start,
            end: self.out.buf.len(),
            seq: like.seq,
            ts: like.ts,
            mid_turn: false,
            content,
        });
        self.out.lines.len() - 1
    }

    pub(crate) fn line_text(&self, i: usize) -> String {
        let l = self.out.lines[i];
        self.out.buf[l.start..l.end].to_string()
    }

    pub(crate) fn anomalies(&mut self, order: &mut Vec<usize>) {
        let rate = self.rate;
        let n = order.len();
        // Truncated: the log was cut inside a turn.
        if n > 10 && self.arng.chance(0.08 * rate) {
            let cands: Vec<usize> = (n / 2..n - 1)
                .filter(|&i| self.out.lines[i].mid_turn)
                .collect();
            if !cands.is_empty() {
                let cut = cands[self.arng.below(cands.len() as u64) as usize];
                order.truncate(cut + 1);
            }
        }
        // Lost lines: gaps in seq.
        if order.len() > 10 && self.arng.chance(0.06 * rate) {
            for _ in 0..self.arng.range(1, 3) {
                let i = self.arng.range(1, order.len() as u64 - 1) as usize;
                order.remove(i);
            }
        }
        // Conflicting re-deliveries: same root and seq, different content.
        // Only generated events get a variant, at most one each: two variants of one event
        // could be equal, and a variant of a variant could repeat a key.
        if order.len() > 2 && self.arng.chance(0.25 * rate) {
            let mut varied = usize::MAX;
            for _ in 0..self.arng.range(1, 2) {
                let pos = self.arng.below(order.len() as u64) as usize;
                let li = order[pos];
                if li >= n || li == varied {
                    continue;
                }
                varied = li;
                let line = self.out.lines[li];
                let text = self.line_text(li);
                let variant = self.conflicting(&text, line);
                let extra = self.extra_line(&variant, line, Content::New);
                // Usually after the original, sometimes before it (then the original conflicts).
                let at = if self.arng.chance(0.75) {
                    self.arng.range(pos as u64 + 1, order.len() as u64) as usize
                } else {
                    pos
                };
                order.insert(at, extra);
            }
        }
        // Exact duplicates (at-least-once delivery), some re-serialized with other spacing.
        if self.arng.chance(0.4 * rate) {
            let mut i = 0;
            while i < order.len() {
                if self.arng.chance(0.03) {
                    let li = order[i];
                    let line = self.out.lines[li];
                    let dup = if self.arng.chance(0.25) {
                        let t = self.line_text(li);
                        let spaced = format!("{{ {} }}", &t[1..t.len() - 1]);
                        self.extra_line(&spaced, line, Content::SameAs(li))
                    } else {
                        li
                    };
                    let at = (i + 1 + self.arng.below(20) as usize).min(order.len());
                    order.insert(at, dup);
                    i += 1;
                }
                i += 1;
            }
        }
        // Bad lines.
        if self.arng.chance(0.3 * rate) {
            for _ in 0..self.arng.range(1, 3) {
                let pos = self.arng.below(order.len() as u64 + 1) as usize;
                let near = self.arng.below(n as u64) as usize;
                let bad = self.bad_line(near);
                let extra = self.extra_line(&bad, self.out.lines[near], Content::Bad);
                order.insert(pos, extra);
            }
        }
        // Lines out of seq order.
        if order.len() > 3 && self.arng.chance(0.2 * rate) {
            for _ in 0..self.arng.range(1, 5) {
                let i = self.arng.below(order.len() as u64 - 1) as usize;
                order.swap(i, i + 1);
            }
        }
    }

    /// A different event with the same root and seq as `text`.
    pub(crate) fn conflicting(&mut self, text: &str, line: Line) -> String {
        let ts_at = text.find("\"ts\":\"").map(|i| i + 6);
        match (self.arng.below(2), ts_at) {
            (0, Some(at)) => {
                // Re-recorded with another clock.
                let mut s = String::with_capacity(text.len());
                s.push_str(&text[..at]);
                push_ts(&mut s, line.ts + self.arng.range(1, 5000) as i64);
                s.push_str(&text[at + 24..]);
                s
            }
            _ => {
                // Always a valid line with other data: `data` null or empty gets an object.
                if let Some(body) = text.strip_suffix("\"data\":null}") {
                    format!("{body}\"data\":{{\"redelivered\":true}}}}")
                } else if let Some(body) = text.strip_suffix("\"data\":{}}") {
                    format!("{body}\"data\":{{\"redelivered\":true}}}}")
                } else if let Some(body) = text.strip_suffix("}}") {
                    format!("{body},\"redelivered\":true}}}}")
                } else {
                    format!(
                        "{},\"data\":{{\"redelivered\":true}}}}",
                        &text[..text.len() - 1]
                    )
                }
            }
        }
    }

    /// A line that ingest must reject, made from the line `near`.
    pub(crate) fn bad_line(&mut self, near: usize) -> String {
        let line = self.out.lines[near];
        let text = self.line_text(near);
        let root = self.out.root.clone();
        let mut ts = String::new();
        push_ts(&mut ts, line.ts);
        match self.arng.below(8) {
            0 => {
                // A partial write: cut in the middle.
                let mut cut = text.len() / 2;
                while !text.is_char_boundary(cut) {
                    cut -= 1;
                }
                text[..cut].to_string()
            }
            1 => format!(
                "{{\"seq\":{},\"ts\":\"{ts}\",\"session\":\"{root}\",\"type\":\"log\",\"data\":{{\"level\":\"warn\",\"message\":\"missing root\"}}}}",
                line.seq
            ),
            2 => text.replacen("{\"seq\":", "{\"seq\":-", 1),
            3 => match text.find("\"ts\":\"") {
                Some(i) => {
                    let bad = self.arng.pick(&["2026-11-03 10:00:00", "yesterday", "2026-11-03T10:00:00"]);
                    format!("{}{}{}", &text[..i + 6], bad, &text[i + 6 + 24..])
                }
                None => text.replacen("{\"seq\":", "{\"seq\":\"x", 1),
            },
            4 => format!(
                "{{\"seq\":\"{}\",\"ts\":\"{ts}\",\"root\":\"{root}\",\"session\":\"{root}\",\"type\":\"progress\",\"data\":{{\"text\":\"seq as a string\"}}}}",
                line.seq
            ),
            5 => format!(
                "{{\"seq\":{},\"ts\":\"{ts}\",\"root\":\"{root}\",\"session\":\"{root}\",\"type\":\"progress\",\"data\":\"working\"}}",
                line.seq
            ),
            6 => format!("{ts} ERROR runtime: connection reset by peer (agent {root})"),
            _ => format!("[\"{root}\",{},\"log\"]", line.seq),
        }
    }
}
