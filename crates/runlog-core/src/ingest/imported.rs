//! Imported formats (docs/importers/) name a session's root only in the parent's file and
//! restart their counters in every file: roots are followed through the sessions that name
//! them, and an imported root's events from several files are numbered again.

use crate::event::{Event, Id};
use foldhash::fast::RandomState;
use std::collections::HashMap;

/// Imported events name the root their own file knows; a subagent's file may know only its
/// parent session. Each session whose events name another root points there; roots are
/// followed along those links (across files) to the top.
pub fn resolve_imported_roots(all: &mut [Vec<Event>], imported: &[bool]) {
    let mut up: HashMap<Id, Id, RandomState> = HashMap::default();
    for (f, evs) in all.iter().enumerate() {
        if !imported[f] {
            continue;
        }
        for ev in evs {
            if ev.session != ev.root {
                up.entry(ev.session.clone())
                    .or_insert_with(|| ev.root.clone());
            }
        }
    }
    if up.is_empty() {
        return;
    }
    let top = |start: &Id| -> Option<Id> {
        let mut cur = start;
        let mut steps = 0;
        while let Some(next) = up.get(cur) {
            if next == start || steps > 64 {
                break; // a cycle: keep the root as written
            }
            cur = next;
            steps += 1;
        }
        (cur != start).then(|| cur.clone())
    };
    // Each root's top, worked out once.
    let mut tops: HashMap<Id, Option<Id>, RandomState> = HashMap::default();
    for (f, evs) in all.iter_mut().enumerate() {
        if !imported[f] {
            continue;
        }
        for ev in evs.iter_mut() {
            let t = match tops.get(&ev.root) {
                Some(t) => t.clone(),
                None => {
                    let t = top(&ev.root);
                    tops.insert(ev.root.clone(), t.clone());
                    t
                }
            };
            if let Some(t) = t {
                ev.root = t;
            }
        }
    }
}

/// Orders an imported agent's events and numbers them again when its files' counters
/// cannot be compared (several files) or collide; a single file's own order is kept.
pub(super) fn renumber_imported(kept: &mut [Event]) {
    let several_files = kept.windows(2).any(|w| w[0].file != w[1].file);
    let collide = kept.windows(2).any(|w| w[0].seq == w[1].seq);
    if !several_files && !collide {
        return;
    }
    kept.sort_by_key(|e| (e.ts, e.file, e.seq, e.line));
    for (i, ev) in kept.iter_mut().enumerate() {
        ev.seq = i as u64;
    }
}
