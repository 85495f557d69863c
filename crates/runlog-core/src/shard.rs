//! Which agents a shard owns: `runlog ingest ... --shard I/N` keeps the agents whose root
//! has `fnv1a64(root) % N == I`. The hash is a fixed function over the root's UTF-8 bytes,
//! so every machine and every release agrees on it; spill partitions (and, later, warehouse
//! buckets) are placed by the same hash. How shards commit into one warehouse is the
//! warehouse's business (`runlog::commit`), not this module's. A leaf: it knows roots, not
//! ingest ([`crate::ingest::Ingested::retain_shard`] keeps a shard's agents).

use std::fmt;
use std::str::FromStr;

use crate::table::Table;

/// Tables that are not per agent: shard 0 writes them for the whole input it read (a
/// reject has no agent, or an agent whose events conflict; the `files` accounting counts
/// every agent); the other shards commit them empty.
pub const SHARED_TABLES: &[Table] = &[Table::Rejects, Table::Files];

/// FNV-1a, 64 bits, of the root's bytes: the stable hash that places an agent in a shard.
pub fn root_hash(root: &str) -> u64 {
    fnv1a64(root.as_bytes())
}

/// FNV-1a's 64-bit offset basis: the hash of no bytes, where [`fnv1a64_more`] starts.
pub const FNV1A64_START: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a, 64 bits, of `bytes`.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    fnv1a64_more(FNV1A64_START, bytes)
}

/// Continues the FNV-1a 64 hash `h` of some bytes over `bytes`: the hash of both.
pub fn fnv1a64_more(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// One shard of a sharded ingest: `index` of `count` (written `I/N`, `0 <= I < N`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl Shard {
    /// The shard an agent's root belongs to, among `count`.
    pub fn of(root: &str, count: u32) -> u32 {
        (root_hash(root) % u64::from(count.max(1))) as u32
    }

    /// Whether this shard keeps the agent with this root.
    pub fn owns(&self, root: &str) -> bool {
        Shard::of(root, self.count) == self.index
    }

    /// Whether this shard writes the tables that are not per agent ([`SHARED_TABLES`]).
    pub fn owns_shared_tables(&self) -> bool {
        self.index == 0
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Shard, String> {
        let bad = || format!("{s:?}: a shard is I/N with 0 <= I < N, like 0/3");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let index: u32 = i.trim().parse().map_err(|_| bad())?;
        let count: u32 = n.trim().parse().map_err(|_| bad())?;
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a64_known_values() {
        // Published FNV-1a 64 test vectors: the hash must never change.
        assert_eq!(root_hash(""), 0xcbf29ce484222325);
        assert_eq!(root_hash("a"), 0xaf63dc4c8601ec8c);
        assert_eq!(root_hash("foobar"), 0x85944171f73967e8);
    }

    #[test]
    fn parses_i_of_n() {
        assert_eq!(
            "2/3".parse::<Shard>().unwrap(),
            Shard { index: 2, count: 3 }
        );
        assert_eq!("0/1".parse::<Shard>().unwrap().to_string(), "0/1");
        for bad in ["3/3", "1/0", "x/2", "1", "-1/2", "1/2/3", ""] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
    }

    #[test]
    fn every_root_is_in_exactly_one_shard() {
        for n in 1..6u32 {
            for r in ["a", "b", "agent-000017", "ü", ""] {
                let owners: Vec<u32> = (0..n)
                    .filter(|&i| Shard { index: i, count: n }.owns(r))
                    .collect();
                assert_eq!(owners.len(), 1, "{r} of {n}");
            }
        }
    }
}
