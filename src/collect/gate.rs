//! How many requests are decoded at once. Exporters post concurrently (a connection
//! each), and every request being decoded holds its body, its decoded records and its spool
//! line; decoding more requests at once than there are cores makes none faster, only the
//! memory held larger. A handler reads its body, then waits for a permit to decode it.

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
}
