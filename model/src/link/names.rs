//! The linker's table of claimed location names (used by `copyAllocs2Func`
//! for collision detection): a hash table looked up, never iterated.

use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};

use crate::fxhash::{FxHasher, IdentityHasher};

use crate::ir::{MemLocId, MemoryLocation};

/// Claimed names: the 64-bit Fx hash of each name -> the first location
/// claiming it, plus an overflow map for distinct names sharing a hash (so a
/// lookup touches one table slot, and the name itself only on a hit). Hash
/// maps are only ever looked up here, never iterated, so their order cannot
/// leak; the hashers are fixed (no random state). A link of a million
/// locations must stay linear, which a tree of string keys does not.
pub(crate) struct NameTable {
    by_hash: HashMap<u64, MemLocId, BuildHasherDefault<IdentityHasher>>,
    overflow: BTreeMap<String, MemLocId>,
}

/// Fx over the name's bytes, then a splitmix64 finalizer so every bit
/// (the table indexes by the low ones) depends on every byte.
fn fx(name: &str) -> u64 {
    let mut h = FxHasher::default();
    h.write(name.as_bytes());
    let mut z = h.finish() ^ name.len() as u64;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl NameTable {
    /// An empty table sized for `n` names.
    pub(crate) fn with_capacity(n: usize) -> Self {
        NameTable {
            by_hash: HashMap::with_capacity_and_hasher(n, BuildHasherDefault::default()),
            overflow: BTreeMap::new(),
        }
    }

    pub(crate) fn get(&self, name: &str, locs: &[MemoryLocation]) -> Option<MemLocId> {
        let id = *self.by_hash.get(&fx(name))?;
        if locs[id.index()].name == name { Some(id) } else { self.overflow.get(name).copied() }
    }

    /// Claims `name` for `id` unless it is taken (one table probe in the common case).
    pub(crate) fn try_claim(&mut self, name: &str, id: MemLocId, locs: &[MemoryLocation]) -> bool {
        match self.by_hash.entry(fx(name)) {
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(id);
                true
            }
            std::collections::hash_map::Entry::Occupied(e) if locs[e.get().index()].name == name => false,
            std::collections::hash_map::Entry::Occupied(_) => match self.overflow.entry(name.to_string()) {
                std::collections::btree_map::Entry::Occupied(_) => false,
                std::collections::btree_map::Entry::Vacant(e) => {
                    e.insert(id);
                    true
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Usage;

    #[test]
    fn distinct_names_sharing_a_hash_go_to_the_overflow_map() {
        let locs = vec![MemoryLocation::dram("a", Usage::Internal, 1), MemoryLocation::dram("b", Usage::Internal, 1)];
        let mut t = NameTable::with_capacity(2);
        assert!(t.try_claim("a", MemLocId(0), &locs));
        assert!(!t.try_claim("a", MemLocId(5), &locs), "taken");
        // Plant a hash collision: `b` hashes to the slot `a` holds.
        t.by_hash.insert(fx("b"), MemLocId(0));
        assert_eq!(t.get("b", &locs), None);
        assert!(t.try_claim("b", MemLocId(1), &locs));
        assert_eq!(t.get("b", &locs), Some(MemLocId(1)));
        assert!(!t.try_claim("b", MemLocId(7), &locs));
        assert_eq!(t.get("a", &locs), Some(MemLocId(0)));
    }
}
