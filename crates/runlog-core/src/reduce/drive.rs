//! The drivers: one agent, consecutive agents on one thread, or a whole ingest in parallel
//! parts, each through one [`Reducer`] that goes from agent to agent.

use rayon::prelude::*;

use super::{Derived, Reducer};
use crate::event::{Event, Id};

/// Reduces every agent of an ingest, in parallel ([`reduce_parts`], joined); rows come out in
/// `root` order.
pub fn reduce_all(ing: &crate::ingest::Ingested) -> Derived {
    Derived::concat(reduce_parts(ing, rayon::current_num_threads() * 4))
}

/// Reduces every agent of an ingest into about `parts` parts of consecutive agents, in
/// parallel; the parts in order hold [`reduce_all`]'s rows in its order.
///
/// Each part gathers its agents' rows on the thread that reduced them, so the memory one
/// agent's rows took is taken again by the next agent's: [`reduce_all`] copies every row
/// once more into tables of the whole ingest, fresh memory that cost ~10 % of an ingest's
/// page faults, and writers that read the parts in order need no such copy.
pub fn reduce_parts(ing: &crate::ingest::Ingested, parts: usize) -> Vec<Derived> {
    let per_part = ing.agents.len().div_ceil(parts.max(1)).max(1);
    ing.agents.par_chunks(per_part).map(reduce_agents).collect()
}

/// Reduces consecutive agents on this thread into one [`Derived`], their rows in order.
///
/// One reducer goes from agent to agent, keeping the room its tables grew: a new reducer
/// per agent allocated (and grew, and freed) each of its tables again, a tenth of the
/// reducer's time on the persisted mix. Each agent's rows are appended as soon as they are
/// made (collecting every agent's rows first held them all in fresh memory until one more
/// copy).
pub fn reduce_agents(agents: &[crate::ingest::Agent]) -> Derived {
    let mut part = Derived::default();
    let Some(first) = agents.first() else {
        return part;
    };
    let mut r = Reducer::with_root(root_id(&first.root, &first.events), false);
    // Once a sixteenth of the events is reduced, every table is given room for as many rows
    // per event as it has so far, and a little more: grown by doubling instead, the tables
    // were copied (and their memory touched) about twice over, 5 % of the reducer's time.
    let total: usize = agents.iter().map(|a| a.events.len()).sum();
    let mut done = 0;
    let mut sized = false;
    for a in agents {
        r.renew(root_id(&a.root, &a.events));
        for ev in crate::event::prefetched(&a.events, |e| &e.data) {
            r.apply(ev);
        }
        r.finish_into(&mut part);
        done += a.events.len();
        if !sized && done >= total / 16 && done > 0 {
            sized = true;
            part.reserve_for(total as f64 / done as f64);
        }
    }
    part
}

/// Reduces one agent's events (in `seq` order) into its rows.
pub fn reduce_agent(root: &str, events: &[Event]) -> Derived {
    let mut r = Reducer::with_root(root_id(root, events), false);
    for ev in events {
        r.apply(ev);
    }
    r.finish()
}

/// The events' own root id, when they share one (rows then share it too), else `root`'s.
fn root_id(root: &str, events: &[Event]) -> Id {
    match events.first().filter(|e| e.root == root) {
        Some(first) => first.root.clone(),
        None => Id::from(root),
    }
}
