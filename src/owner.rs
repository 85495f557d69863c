//! Who owns a thing left on disk — the warehouse lock, a spill folder, a folder of
//! downloaded inputs — so that a later run can tell a live owner's from one a killed
//! process left behind. The owner is written whole into the thing when it is made: host,
//! boot, process id and the process's start time (a pid reused by a later process does
//! not look alive), when, and until when it is to be trusted from elsewhere.
//!
//! It sits below every stage (inputs, commit) that leaves such things, and imports none.

use std::fs;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// Who holds a lock (or owns a spill or download folder): written whole when it is taken.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Owner {
    /// Random per lock: tells this lock from any other, even of the same process.
    pub nonce: String,
    pub host: String,
    /// The kernel's boot id: a pid means something only within one boot.
    pub boot: String,
    pub pid: u32,
    /// The process's start time (clock ticks since boot, `/proc/PID/stat`): a pid that is
    /// reused by a later process does not look alive.
    pub pid_start: Option<u64>,
    pub taken_at: String,
    /// Seconds since the Unix epoch after which the lock is stale whoever holds it.
    pub expires_at: u64,
}

pub(crate) fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs()
}

fn read_trim(path: &str) -> Option<String> {
    fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// This machine's host name (`/proc/sys/kernel/hostname`, `/etc/hostname`, `$HOSTNAME`).
pub fn host_name() -> String {
    read_trim("/proc/sys/kernel/hostname")
        .or_else(|| read_trim("/etc/hostname"))
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "unknown-host".into())
}

fn boot_id() -> String {
    read_trim("/proc/sys/kernel/random/boot_id").unwrap_or_default()
}

/// A process's start time in clock ticks since boot (field 22 of `/proc/PID/stat`).
fn pid_start(pid: u32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: count after it.
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(19)?.parse().ok()
}

/// A nonce no other lock shares: time, process and a counter, mixed.
fn nonce() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let t = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos() as u64;
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut h = runlog_core::shard::root_hash(&format!("{t}-{}-{n}", std::process::id()));
    h ^= t.rotate_left(17);
    format!("{h:016x}{n:04x}")
}

impl Owner {
    /// This process, now, trusted from elsewhere for `ttl`.
    pub fn valid_for(ttl: Duration) -> Owner {
        let pid = std::process::id();
        Owner {
            nonce: nonce(),
            host: host_name(),
            boot: boot_id(),
            pid,
            pid_start: pid_start(pid),
            taken_at: chrono::Utc::now().to_rfc3339(),
            expires_at: now_secs().saturating_add(ttl.as_secs()),
        }
    }

    /// Whether the owner is gone: its process has ended on this host and boot, or (from
    /// anywhere) its expiry has passed.
    pub fn is_stale(&self) -> bool {
        if now_secs() > self.expires_at {
            return true;
        }
        let here = self.host == host_name() && !self.boot.is_empty() && self.boot == boot_id();
        here && (self.pid_start.is_none() || pid_start(self.pid) != self.pid_start)
    }

    /// Whether the owner is known gone on this host, whatever its expiry: its process has
    /// ended (no such pid, or one that started at another time), or it ran in an earlier
    /// boot. Another host's owner is never known gone here.
    pub fn is_gone_here(&self) -> bool {
        if self.host != host_name() {
            return false;
        }
        let boot = boot_id();
        if !self.boot.is_empty() && !boot.is_empty() && self.boot != boot {
            return true;
        }
        match self.pid_start {
            Some(start) => pid_start(self.pid) != Some(start),
            // No start time was recorded (no /proc): a pid with no /proc entry, or no
            // /proc at all, says nothing; keep it.
            None => false,
        }
    }

    /// How the owner is named in messages.
    pub fn describe(&self) -> String {
        format!(
            "process {} on {} since {}",
            self.pid, self.host, self.taken_at
        )
    }

    /// Reads an owner file; `None` when it is missing or not an owner (damaged, foreign).
    pub fn read(path: &Path) -> Option<Owner> {
        serde_json::from_slice(&fs::read(path).ok()?).ok()
    }
}
