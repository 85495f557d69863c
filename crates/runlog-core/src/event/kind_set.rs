//! A set of event kinds, as one word: which events a reader keeps when the tables asked
//! for depend on a few types only (`reduce::needs` says which; ingest keeps those).

use super::Kind;

/// A set of [`Kind`]s (bit `k as u8` for kind `k`; [`Kind::Other`] stands for every
/// type the docs do not list).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct KindSet(u32);

impl KindSet {
    /// No kind.
    pub const EMPTY: KindSet = KindSet(0);

    /// The set of the given kinds.
    pub const fn of(kinds: &[Kind]) -> KindSet {
        let mut bits = 0u32;
        let mut i = 0;
        while i < kinds.len() {
            bits |= 1 << kinds[i] as u32;
            i += 1;
        }
        KindSet(bits)
    }

    /// Whether `k` is in the set.
    #[inline]
    pub const fn contains(self, k: Kind) -> bool {
        self.0 & (1 << k as u32) != 0
    }

    /// Both sets' kinds.
    pub const fn union(self, other: KindSet) -> KindSet {
        KindSet(self.0 | other.0)
    }

    /// The kinds in the set, in discriminant order.
    pub fn kinds(self) -> impl Iterator<Item = Kind> {
        (0..32u8)
            .filter(move |b| self.0 & (1 << b) != 0)
            .filter_map(Kind::from_u8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_hold_what_they_are_given() {
        let s = KindSet::of(&[Kind::TurnEnd, Kind::AgentIdle]);
        assert!(s.contains(Kind::TurnEnd) && s.contains(Kind::AgentIdle));
        assert!(!s.contains(Kind::InboxReceipt) && !s.contains(Kind::Other));
        let u = s.union(KindSet::of(&[Kind::Other]));
        assert!(u.contains(Kind::Other) && u.contains(Kind::TurnEnd));
        assert_eq!(
            u.kinds().collect::<Vec<_>>(),
            vec![Kind::AgentIdle, Kind::TurnEnd, Kind::Other]
        );
        assert_eq!(KindSet::EMPTY.kinds().count(), 0);
    }
}
