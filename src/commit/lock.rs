//! The warehouse lock (`_lock`): one writer at a time commits into a warehouse.
//!
//! - **Taken whole or not at all.** The owner's identity is written to a private temporary
//!   file first, which is then hard-linked to `_lock`: the link either creates `_lock` with
//!   the complete identity in it or fails because a lock exists. A contender never sees a
//!   lock without its owner (the gap that let two writers hold it).
//! - **Who holds it.** Host, boot, process id and its start time, a random nonce, when it
//!   was taken and when it expires. The holder renews the expiry in the background
//!   ([`RENEW_EVERY`]) for as long as it holds the lock.
//! - **When it is stale.** A lock of this host and boot whose process is gone (no such pid,
//!   or a pid that started at another time) is stale at once, so a re-run after `kill -9`
//!   proceeds. Any other lock — another host's, where a pid means nothing — is stale only
//!   once the expiry written in it has passed ([`TTL`] after its last renewal).
//! - **Breaking a stale lock** is itself exclusive: the breaker takes `_lock.break` (created
//!   exclusively), reads `_lock` again and removes it only if it is still the stale lock it
//!   judged, then removes `_lock.break`. So two breakers never remove each other's fresh
//!   locks. A `_lock.break` older than [`BREAK_TTL`] was left by a breaker that died inside
//!   those few microseconds and is removed.
//! - **Before a commit** the holder checks that `_lock` is still its own ([`WarehouseLock::verify`]).

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime};

use crate::error::{Error, Result};

/// The lock file's name inside the warehouse.
pub const LOCK: &str = "_lock";
/// How long a lock stays valid after its last renewal, for a contender that cannot tell
/// whether its holder is alive (another host).
pub const TTL: Duration = Duration::from_secs(60);
/// How often the holder renews the expiry.
pub const RENEW_EVERY: Duration = Duration::from_secs(10);
/// Age after which a `_lock.break` left by a dead breaker is removed.
pub const BREAK_TTL: Duration = Duration::from_secs(30);

use crate::owner::now_secs;
pub use crate::owner::{host_name, Owner};

impl Owner {
    /// This process, now, valid for [`TTL`].
    pub fn me() -> Owner {
        Owner::valid_for(TTL)
    }

    /// Writes the owner to `path` whole: a temporary file renamed into place.
    fn write_replacing(&self, path: &Path) -> std::io::Result<()> {
        let tmp = path.with_file_name(format!(
            "{}.{}.tmp",
            path.file_name().unwrap_or_default().to_string_lossy(),
            self.nonce
        ));
        fs::write(&tmp, serde_json::to_vec(self).unwrap_or_default())?;
        fs::rename(&tmp, path)
    }

    /// Creates `path` holding this owner, whole, only if it does not exist.
    fn create_exclusive(&self, path: &Path) -> std::io::Result<()> {
        let tmp = path.with_file_name(format!("_lock-{}.tmp", self.nonce));
        fs::write(&tmp, serde_json::to_vec(self).unwrap_or_default())?;
        let linked = fs::hard_link(&tmp, path);
        let _ = fs::remove_file(&tmp);
        linked
    }
}

/// An exclusive lock on a warehouse, released on drop.
pub struct WarehouseLock {
    path: PathBuf,
    owner: Owner,
    /// Dropped to stop the renewer: its wait ends at once (a sleeping renewer kept every
    /// ingest waiting up to its 100 ms nap when the lock was released).
    stop: Option<mpsc::Sender<()>>,
    renewer: Option<std::thread::JoinHandle<()>>,
}

impl WarehouseLock {
    /// Takes the lock, or fails with a clear message naming the holder when another writer
    /// holds it.
    pub fn acquire(dir: &Path) -> Result<WarehouseLock> {
        let path = dir.join(LOCK);
        loop {
            let owner = Owner::me();
            match owner.create_exclusive(&path) {
                Ok(()) => return Ok(WarehouseLock::hold(path, owner)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(Error::io(&path, e)),
            }
            let holder = Owner::read(&path);
            let stale = match &holder {
                Some(h) => h.is_stale(),
                // Unreadable: a foreign file, or one damaged on disk. Judged by its age.
                None => age(&path).is_some_and(|a| a > TTL),
            };
            if !stale {
                let who = holder.map_or_else(|| "an unreadable lock".into(), |h| h.describe());
                return Err(Error::Warehouse {
                    path: dir.to_path_buf(),
                    message: format!(
                        "another ingest ({who}) is writing this warehouse; wait for it, or remove {} if it is gone",
                        path.display()
                    ),
                });
            }
            break_stale(dir, &path, holder.as_ref())?;
        }
    }

    /// Takes the lock, waiting while another writer holds it (up to `wait`).
    pub fn acquire_waiting(dir: &Path, wait: Duration) -> Result<WarehouseLock> {
        let start = Instant::now();
        loop {
            match WarehouseLock::acquire(dir) {
                Ok(l) => return Ok(l),
                Err(e @ Error::Warehouse { .. }) if start.elapsed() >= wait => return Err(e),
                Err(Error::Warehouse { .. }) => std::thread::sleep(Duration::from_millis(20)),
                Err(e) => return Err(e),
            }
        }
    }

    fn hold(path: PathBuf, owner: Owner) -> WarehouseLock {
        let (stop, stopped) = mpsc::channel::<()>();
        let renewer = {
            let (path, mut owner) = (path.clone(), owner.clone());
            std::thread::Builder::new()
                .name("runlog-lock".into())
                .spawn(move || {
                    // Wakes every RENEW_EVERY, or at once when the lock is dropped.
                    while let Err(mpsc::RecvTimeoutError::Timeout) =
                        stopped.recv_timeout(RENEW_EVERY)
                    {
                        // Renew only a lock that is still ours.
                        if Owner::read(&path).is_some_and(|o| o.nonce == owner.nonce) {
                            owner.expires_at = now_secs() + TTL.as_secs();
                            let _ = owner.write_replacing(&path);
                        }
                    }
                })
                .ok()
        };
        WarehouseLock {
            path,
            owner,
            stop: Some(stop),
            renewer,
        }
    }

    /// The lock's owner (this process).
    pub fn owner(&self) -> &Owner {
        &self.owner
    }

    /// Fails unless `_lock` is still this lock (it would not be after a stall longer than
    /// [`TTL`] let another writer break it): checked right before a commit.
    pub fn verify(&self) -> Result<()> {
        match Owner::read(&self.path) {
            Some(o) if o.nonce == self.owner.nonce => Ok(()),
            other => Err(Error::Warehouse {
                path: self.path.parent().unwrap_or(Path::new(".")).to_path_buf(),
                message: format!(
                    "the warehouse lock was lost before the commit ({}); nothing was committed",
                    other.map_or_else(|| "no lock".into(), |o| format!("held by {}", o.describe()))
                ),
            }),
        }
    }
}

impl Drop for WarehouseLock {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.renewer.take() {
            let _ = t.join();
        }
        if Owner::read(&self.path).is_some_and(|o| o.nonce == self.owner.nonce) {
            let _ = fs::remove_file(&self.path);
        }
    }
}

fn age(path: &Path) -> Option<Duration> {
    let m = fs::metadata(path).ok()?.modified().ok()?;
    SystemTime::now().duration_since(m).ok()
}

/// Removes the stale lock `judged` (see the module documentation), holding `_lock.break`.
fn break_stale(dir: &Path, path: &Path, judged: Option<&Owner>) -> Result<()> {
    let breaker = dir.join("_lock.break");
    match fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&breaker)
    {
        Ok(mut f) => {
            let _ = writeln!(f, "{}", std::process::id());
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            if age(&breaker).is_some_and(|a| a > BREAK_TTL) {
                let _ = fs::remove_file(&breaker);
            } else {
                std::thread::sleep(Duration::from_millis(1));
            }
            return Ok(()); // try again from the start
        }
        Err(e) => return Err(Error::io(&breaker, e)),
    }
    let still = Owner::read(path);
    let same = match (judged, &still) {
        (Some(j), Some(s)) => j.nonce == s.nonce,
        (None, None) => path.exists() && age(path).is_some_and(|a| a > TTL),
        _ => false,
    };
    if same {
        let _ = fs::remove_file(path);
    }
    let _ = fs::remove_file(&breaker);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_is_refused_with_its_holder_named() {
        let dir = tempfile::tempdir().unwrap();
        let a = WarehouseLock::acquire(dir.path()).unwrap();
        let e = WarehouseLock::acquire(dir.path())
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains(&format!("process {}", std::process::id())),
            "{e}"
        );
        assert!(e.contains(&host_name()), "{e}");
        a.verify().unwrap();
        drop(a);
        assert!(!dir.path().join(LOCK).exists());
        WarehouseLock::acquire(dir.path()).unwrap();
    }

    #[test]
    fn a_dead_local_holder_or_an_expired_lock_is_broken() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOCK);
        // A process of this host that has ended: its start time does not match.
        let mut dead = Owner::me();
        dead.pid_start = Some(u64::MAX);
        std::fs::write(&path, serde_json::to_vec(&dead).unwrap()).unwrap();
        let l = WarehouseLock::acquire(dir.path()).unwrap();
        assert_ne!(l.owner().nonce, dead.nonce);
        drop(l);
        // Another host's lock is judged by its expiry only.
        let mut other = Owner::me();
        other.host = "elsewhere".into();
        other.pid_start = Some(u64::MAX);
        std::fs::write(&path, serde_json::to_vec(&other).unwrap()).unwrap();
        assert!(WarehouseLock::acquire(dir.path()).is_err());
        other.expires_at = now_secs() - 1;
        std::fs::write(&path, serde_json::to_vec(&other).unwrap()).unwrap();
        WarehouseLock::acquire(dir.path()).unwrap();
    }

    #[test]
    fn a_lost_lock_fails_verification() {
        let dir = tempfile::tempdir().unwrap();
        let l = WarehouseLock::acquire(dir.path()).unwrap();
        let mut thief = Owner::me();
        thief.host = "elsewhere".into();
        std::fs::write(dir.path().join(LOCK), serde_json::to_vec(&thief).unwrap()).unwrap();
        assert!(l.verify().is_err());
        drop(l);
        // The thief's lock is not removed by the loser.
        assert!(dir.path().join(LOCK).exists());
    }
}
