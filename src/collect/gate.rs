//! How many requests are decoded at once, and which are on their way to the batcher.
//! Exporters post concurrently (a connection each), and every request being decoded holds
//! its body, its decoded records and its spool line; decoding more requests at once than
//! there are cores makes none faster, only the memory held larger. A handler reads its
//! body, then waits for a permit to decode it. A request counts as arrived once its body
//! is read ([`Arrivals`]): a batch due by time takes every request that had arrived by
//! then, decoded or still waiting for a permit, so that the gate does not cut batches
//! short (more commits than the flush policy asks for).

use std::collections::BTreeSet;
use std::sync::{Condvar, Mutex};

/// A counting semaphore of decoding permits.
pub struct Gate {
    free: Mutex<usize>,
    freed: Condvar,
}

/// A permit, given back when dropped.
pub struct Permit<'a>(&'a Gate);

impl Gate {
    /// A gate of `n` permits (at least one).
    pub fn new(n: usize) -> Gate {
        Gate {
            free: Mutex::new(n.max(1)),
            freed: Condvar::new(),
        }
    }

    /// A gate of one permit per core.
    pub fn per_core() -> Gate {
        Gate::new(std::thread::available_parallelism().map_or(2, |n| n.get()))
    }

    /// Waits for a permit.
    pub fn enter(&self) -> Permit<'_> {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        while *free == 0 {
            free = self.freed.wait(free).unwrap_or_else(|e| e.into_inner());
        }
        *free -= 1;
        Permit(self)
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        let mut free = self.0.free.lock().unwrap_or_else(|e| e.into_inner());
        *free += 1;
        self.0.freed.notify_one();
    }
}

/// The requests read and not yet handed to the batcher (or refused), by arrival ticket.
#[derive(Default)]
pub struct Arrivals {
    inner: Mutex<Tickets>,
}

#[derive(Default)]
struct Tickets {
    /// The next ticket.
    next: u64,
    /// Tickets given and not settled.
    open: BTreeSet<u64>,
}

/// A request's arrival, settled when dropped (once it is handed to the batcher or refused).
pub struct Arrival<'a> {
    arrivals: &'a Arrivals,
    ticket: u64,
}

impl Arrivals {
    fn tickets(&self) -> std::sync::MutexGuard<'_, Tickets> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A request arrives.
    pub fn arrive(&self) -> Arrival<'_> {
        let mut t = self.tickets();
        let ticket = t.next;
        t.next += 1;
        t.open.insert(ticket);
        Arrival {
            arrivals: self,
            ticket,
        }
    }

    /// The ticket the next request gets: the requests arrived so far have lower ones.
    pub fn next(&self) -> u64 {
        self.tickets().next
    }

    /// Whether every request of a ticket below `cut` is settled.
    pub fn settled_below(&self, cut: u64) -> bool {
        self.tickets().open.first().is_none_or(|&t| t >= cut)
    }
}

impl Drop for Arrival<'_> {
    fn drop(&mut self) {
        self.arrivals.tickets().open.remove(&self.ticket);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn no_more_than_its_permits_are_held_at_once() {
        let gate = Gate::new(2);
        let (now, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    let _p = gate.enter();
                    let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(n, Ordering::SeqCst);
                    std::thread::sleep(std::time::Duration::from_millis(5));
                    now.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        assert_eq!(most.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_cut_waits_for_the_requests_arrived_before_it_only() {
        let arrivals = Arrivals::default();
        let first = arrivals.arrive();
        let second = arrivals.arrive();
        let cut = arrivals.next();
        let later = arrivals.arrive();
        assert!(!arrivals.settled_below(cut));
        drop(second);
        assert!(!arrivals.settled_below(cut));
        drop(first);
        assert!(
            arrivals.settled_below(cut),
            "the later request is not waited for"
        );
        assert!(!arrivals.settled_below(arrivals.next()));
        drop(later);
        assert!(arrivals.settled_below(arrivals.next()));
    }
}
