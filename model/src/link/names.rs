//! The linker's table of claimed location names (used by `copyAllocs2Func`
//! for collision detection): looked up, never iterated.
//!
//! A link of a million locations must stay linear, and a hash table of a
//! million names misses the cache on every probe. Nearly every name is
//! unique, so the table first sorts the hashes of every original name (one
//! cache-friendly sort) and learns which hashes more than one location
//! carries ("contested"). Claiming an uncontested original name then touches
//! only two small tables and a flag; only contested names and the names the
//! linker generates (`<name>.nc<core>`) go through the exact table.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::BuildHasherDefault;

use crate::ir::{MemLocId, MemoryLocation};
use crate::namehash::{IdentityHasher, hash_name};

type ByHash<V> = HashMap<u64, V, BuildHasherDefault<IdentityHasher>>;

/// Claimed names. Every original name has a flat index (its position in the
/// iterator given to [`NameTable::new`]); a claim of an original name says
/// which one it is.
pub(crate) struct NameTable {
    /// Hashes more than one original name carries.
    contested: HashSet<u64, BuildHasherDefault<IdentityHasher>>,
    /// Every original name's hash, by flat index.
    hashes: Vec<u64>,
    /// Every original name's hash and flat index, sorted: searched for
    /// generated names and by [`NameTable::find_original`].
    originals: Vec<(u64, u32)>,
    /// Where each run of `originals` sharing the top `bits` hash bits starts
    /// (plus the end), so a search reads one short run, not a binary search's
    /// twenty cache lines.
    starts: Vec<u32>,
    /// How many top hash bits index `starts`.
    bits: u32,
    /// The exact table: contested originals and generated names claimed so
    /// far, by hash, plus an overflow map for distinct names sharing a hash.
    by_hash: ByHash<MemLocId>,
    overflow: BTreeMap<String, MemLocId>,
}

/// The top `bits` bits of `h` (0 when `bits` is 0).
fn top_bits(h: u64, bits: u32) -> usize {
    h.checked_shr(64 - bits).unwrap_or(0) as usize
}

/// Where each run of the sorted `originals` sharing the top hash bits starts
/// (plus the end), and how many bits: about one original per run.
fn run_starts(originals: &[(u64, u32)]) -> (Vec<u32>, u32) {
    let n = originals.len();
    let bits = (usize::BITS - n.leading_zeros()).min(24);
    let mut starts = vec![0u32; (1 << bits) + 1];
    for &(h, _) in originals {
        starts[top_bits(h, bits) + 1] += 1;
    }
    for k in 1..starts.len() {
        starts[k] += starts[k - 1];
    }
    (starts, bits)
}

impl NameTable {
    /// A table for the original names `names` (flat index = position).
    pub(crate) fn new<'n>(names: impl Iterator<Item = &'n str>) -> Self {
        let hashes: Vec<u64> = names.map(hash_name).collect();
        let mut originals: Vec<(u64, u32)> =
            hashes.iter().enumerate().map(|(i, &h)| (h, u32::try_from(i).unwrap_or(u32::MAX))).collect();
        originals.sort_unstable();
        let mut contested = HashSet::default();
        for w in originals.windows(2) {
            if w[0].0 == w[1].0 {
                contested.insert(w[0].0);
            }
        }
        let (starts, bits) = run_starts(&originals);
        NameTable { contested, hashes, originals, starts, bits, by_hash: ByHash::default(), overflow: BTreeMap::new() }
    }

    /// The location that claimed `name`, if one did. Exact for an original
    /// name that has not claimed yet (the externals' unification asks before
    /// claiming): any earlier holder is contested or generated.
    pub(crate) fn get(&self, name: &str, locs: &[MemoryLocation]) -> Option<MemLocId> {
        let id = *self.by_hash.get(&hash_name(name))?;
        if locs[id.index()].name == name { Some(id) } else { self.overflow.get(name).copied() }
    }

    /// The original names hashing like `h`, by flat index.
    fn same_hash(&self, h: u64) -> impl Iterator<Item = usize> + '_ {
        let b = top_bits(h, self.bits);
        let run = &self.originals[self.starts[b] as usize..self.starts[b + 1] as usize];
        run.iter().filter(move |e| e.0 == h).map(|e| e.1 as usize)
    }

    /// The flat index of original name `name` within `flats` (one module's
    /// locations), if there is one: the first such location in (hash, flat
    /// index) order; `original` gives an original name by flat index. (The
    /// exact one-query form; the linker batches through
    /// [`NameTable::guess_originals`] and asks this only when a guess's name differs.)
    pub(crate) fn find_original<'n>(
        &self,
        name: &str,
        flats: std::ops::Range<usize>,
        original: impl Fn(usize) -> &'n str,
    ) -> Option<usize> {
        self.same_hash(hash_name(name)).filter(|f| flats.contains(f)).find(|&f| original(f) == name)
    }

    /// For every query `(name, flats)` at once: the first original within
    /// `flats` whose name hashes like `name`, in (hash, flat index) order,
    /// names not compared (the caller compares them in its own, sequential,
    /// order). When that guess's name equals the query's, it is exactly
    /// [`NameTable::find_original`]'s answer; when it differs (a collision),
    /// the caller asks `find_original`; `None` means no original of that
    /// hash, so `find_original` would say `None` too. The queries are sorted
    /// by hash and merged with the sorted originals (one sequential pass, no
    /// probe per query, no name read). Cost: O(Q log Q + N).
    pub(crate) fn guess_originals(&self, queries: &[(&str, std::ops::Range<usize>)]) -> Vec<Option<usize>> {
        let mut order: Vec<(u64, usize)> = queries.iter().enumerate().map(|(q, (n, _))| (hash_name(n), q)).collect();
        order.sort_unstable();
        let mut out = vec![None; queries.len()];
        let mut j = 0;
        for &(h, q) in &order {
            j += self.originals[j..].iter().take_while(|e| e.0 < h).count();
            let flats = &queries[q].1;
            let mut run = self.originals[j..].iter().take_while(|e| e.0 == h).map(|e| e.1 as usize);
            out[q] = run.find(|f| flats.contains(f));
        }
        out
    }

    /// Claims original name `name` (flat index `flat`) for `id` unless it is taken.
    pub(crate) fn claim_original(&mut self, flat: usize, name: &str, id: MemLocId, locs: &[MemoryLocation]) -> bool {
        let h = self.hashes[flat];
        debug_assert_eq!(h, hash_name(name), "flat index {flat} is not `{name}`");
        if !self.contested.contains(&h) && !self.by_hash.contains_key(&h) {
            // No other original carries this hash and no generated name took it.
            return true;
        }
        self.claim_exact(h, name, id, locs)
    }

    /// Claims a generated name for `id` unless it is taken or any original
    /// location holds it (claimed yet or not: a rename never takes a user's
    /// name); `original` gives an original name by flat index.
    pub(crate) fn claim_generated<'n>(
        &mut self,
        name: &str,
        id: MemLocId,
        locs: &[MemoryLocation],
        original: impl Fn(usize) -> &'n str,
    ) -> bool {
        let h = hash_name(name);
        if self.same_hash(h).any(|f| original(f) == name) {
            return false;
        }
        self.claim_exact(h, name, id, locs)
    }

    /// The exact table's claim (one probe in the common case).
    fn claim_exact(&mut self, h: u64, name: &str, id: MemLocId, locs: &[MemoryLocation]) -> bool {
        match self.by_hash.entry(h) {
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

    fn loc(name: &str) -> MemoryLocation {
        MemoryLocation::dram(name, Usage::Internal, 1)
    }

    #[test]
    fn distinct_names_sharing_a_hash_go_to_the_overflow_map() {
        let locs = vec![loc("a"), loc("b")];
        let mut t = NameTable::new(["a", "b"].into_iter());
        assert!(t.claim_exact(hash_name("a"), "a", MemLocId(0), &locs));
        assert!(!t.claim_exact(hash_name("a"), "a", MemLocId(5), &locs), "taken");
        // Plant a hash collision: `b` hashes to the slot `a` holds.
        t.by_hash.insert(hash_name("b"), MemLocId(0));
        assert_eq!(t.get("b", &locs), None);
        assert!(t.claim_exact(hash_name("b"), "b", MemLocId(1), &locs));
        assert_eq!(t.get("b", &locs), Some(MemLocId(1)));
        assert!(!t.claim_exact(hash_name("b"), "b", MemLocId(7), &locs));
        assert_eq!(t.get("a", &locs), Some(MemLocId(0)));
    }

    #[test]
    fn first_claimant_wins_across_originals_and_generated_names() {
        // Originals in claim order: t (core 0), t (core 1), t.nc1 (core 2), u.
        let originals = ["t", "t", "t.nc1", "u"];
        let mut t = NameTable::new(originals.into_iter());
        let mut locs = Vec::new();
        let claim = |t: &mut NameTable, locs: &mut Vec<MemoryLocation>, flat: Option<usize>, name: &str| {
            let id = MemLocId::from_index(locs.len());
            let ok = match flat {
                Some(f) => t.claim_original(f, name, id, locs),
                None => t.claim_generated(name, id, locs, |i| originals[i]),
            };
            if ok {
                locs.push(loc(name));
            }
            ok
        };
        assert!(claim(&mut t, &mut locs, Some(0), "t"));
        assert!(!claim(&mut t, &mut locs, Some(1), "t"), "contested and taken");
        assert!(!claim(&mut t, &mut locs, None, "t.nc1"), "an original holds it, though not claimed yet");
        assert!(claim(&mut t, &mut locs, Some(2), "t.nc1"), "so the original keeps its name");
        assert!(claim(&mut t, &mut locs, None, "t.nc1.2"));
        assert!(claim(&mut t, &mut locs, Some(3), "u"), "uncontested: the fast path");
        assert!(!claim(&mut t, &mut locs, None, "u"), "a generated name equal to a claimed original");
        assert!(claim(&mut t, &mut locs, None, "v"));
        assert_eq!(t.get("t.nc1.2", &locs), Some(MemLocId(2)));
        assert_eq!(t.get("t", &locs), Some(MemLocId(0)));
    }

    #[test]
    fn a_guess_goes_by_hash_alone_and_the_exact_search_compares_names() {
        let originals = ["a", "b", "c"];
        let mut t = NameTable::new(originals.into_iter());
        // Plant a collision: `b`'s entry carries the hash of `zz`.
        for e in &mut t.originals {
            if e.1 == 1 {
                e.0 = hash_name("zz");
            }
        }
        t.originals.sort_unstable();
        (t.starts, t.bits) = run_starts(&t.originals);
        let name = |i: usize| originals[i];
        let queries = [("zz", 0..3), ("zz", 2..3), ("c", 0..3), ("a", 1..3)];
        assert_eq!(t.guess_originals(&queries), vec![Some(1), None, Some(2), None], "`b` guessed for `zz`");
        assert_eq!(t.find_original("zz", 0..3, name), None, "but `b` is not `zz`");
        assert_eq!(t.find_original("c", 0..3, name), Some(2));
    }

    #[test]
    fn find_original_looks_only_inside_the_given_module() {
        // Two modules: flats 0..2 and 2..4; `s` exists only in the second.
        let originals = ["a", "b", "s", "a"];
        let t = NameTable::new(originals.into_iter());
        let name = |i: usize| originals[i];
        assert_eq!(t.find_original("s", 2..4, name), Some(2));
        assert_eq!(t.find_original("s", 0..2, name), None, "a name of another module");
        assert_eq!(t.find_original("a", 2..4, name), Some(3));
        assert_eq!(t.find_original("a", 0..2, name), Some(0));
        assert_eq!(t.find_original("ghost", 0..4, name), None);
        let queries = [("s", 2..4), ("s", 0..2), ("a", 2..4), ("a", 0..2), ("ghost", 0..4), ("a", 0..4)];
        let batch = t.guess_originals(&queries);
        assert_eq!(batch, vec![Some(2), None, Some(3), Some(0), None, Some(0)]);
        let one: Vec<Option<usize>> = queries.iter().map(|(n, r)| t.find_original(n, r.clone(), name)).collect();
        assert_eq!(batch, one, "without a collision the guesses are the exact answers");
    }
}
