//! A map of disjoint half-open address intervals `[start, end)` to values:
//! the storage of the shadow memory ([`crate::check::shadow`]), one map per
//! mirrored region and thread, so most maps hold a handful of intervals.
//!
//! A map starts as a sorted vector (one cache-resident array, searched by
//! bisection, no tree to descend) and becomes an ordered tree when it grows
//! past `SMALL` intervals (it never turns back).
//!
//! Cost: `overlapping` is O(log s + j) for j intervals reported; `assign`
//! and `remove` are O(log s) plus O(log s) per interval they delete on the
//! tree, O(log s + SMALL) on the vector (a splice of at most `SMALL`
//! entries), and create at most two intervals each, so a sequence of m
//! operations costs O(m log s) amortized (s intervals stored, at most 2m + 1).

use std::collections::BTreeMap;

/// Most intervals a map keeps in its vector form.
const SMALL: usize = 32;

/// The two forms of a map.
#[derive(Clone, Debug)]
enum Repr<V> {
    /// Sorted by start, disjoint (so the ends are sorted too).
    Small(Vec<(u64, u64, V)>),
    /// Keyed by start: `start -> (end, value)`.
    Big(BTreeMap<u64, (u64, V)>),
}

/// Disjoint intervals, ascending.
#[derive(Clone, Debug)]
pub(crate) struct Intervals<V> {
    repr: Repr<V>,
}

impl<V: Copy> Default for Intervals<V> {
    fn default() -> Self {
        Intervals { repr: Repr::Small(Vec::new()) }
    }
}

/// The intervals overlapping a query, ascending: `(start, end, value)`.
pub(crate) enum Overlapping<'a, V> {
    /// From the vector form.
    Small(std::slice::Iter<'a, (u64, u64, V)>, u64),
    /// From the tree form: the one starting before the query, then those starting inside it.
    Big(Option<(u64, u64, V)>, std::collections::btree_map::Range<'a, u64, (u64, V)>),
}

impl<V: Copy> Iterator for Overlapping<'_, V> {
    type Item = (u64, u64, V);

    fn next(&mut self) -> Option<(u64, u64, V)> {
        match self {
            Overlapping::Small(it, b) => it.next().filter(|x| x.0 < *b).copied(),
            Overlapping::Big(first, rest) => first.take().or_else(|| rest.next().map(|(&s, &(e, v))| (s, e, v))),
        }
    }
}

impl<V: Copy> Intervals<V> {
    /// An empty map in its tree form (tests compare the two forms).
    #[cfg(test)]
    pub(crate) fn tree() -> Self {
        Intervals { repr: Repr::Big(BTreeMap::new()) }
    }

    /// Number of intervals stored.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        match &self.repr {
            Repr::Small(v) => v.len(),
            Repr::Big(m) => m.len(),
        }
    }

    /// True when no interval is stored.
    pub(crate) fn is_empty(&self) -> bool {
        match &self.repr {
            Repr::Small(v) => v.is_empty(),
            Repr::Big(m) => m.is_empty(),
        }
    }

    /// The stored intervals overlapping `[a, b)`, ascending, unclipped: `(start, end, value)`.
    pub(crate) fn overlapping(&self, a: u64, b: u64) -> Overlapping<'_, V> {
        match &self.repr {
            Repr::Small(v) => {
                // Nothing overlaps an empty range; else the first interval ending after `a`.
                let from = if a < b { v.partition_point(|x| x.1 <= a) } else { v.len() };
                Overlapping::Small(v[from..].iter(), b)
            }
            Repr::Big(map) => {
                let before = map.range(..a).next_back().filter(|&(_, &(e, _))| e > a && a < b);
                Overlapping::Big(before.map(|(&s, &(e, v))| (s, e, v)), map.range(a..b.max(a)))
            }
        }
    }

    /// Deletes `[a, b)`, keeping the parts of intervals outside it.
    pub(crate) fn remove(&mut self, a: u64, b: u64) {
        if a >= b {
            return;
        }
        match &mut self.repr {
            Repr::Small(v) => {
                let (i, j) = (v.partition_point(|x| x.1 <= a), v.partition_point(|x| x.0 < b));
                if i >= j {
                    return;
                }
                let (first, last) = (v[i], v[j - 1]);
                let left = (first.0 < a).then_some((first.0, a, first.2));
                let right = (last.1 > b).then_some((b, last.1, last.2));
                v.splice(i..j, left.into_iter().chain(right));
            }
            Repr::Big(map) => tree_remove(map, a, b),
        }
        self.grow();
    }

    /// Makes `[a, b)` one interval holding `v`.
    pub(crate) fn assign(&mut self, a: u64, b: u64, val: V) {
        if a >= b {
            return;
        }
        match &mut self.repr {
            Repr::Small(v) => {
                let (i, j) = (v.partition_point(|x| x.1 <= a), v.partition_point(|x| x.0 < b));
                if i + 1 == j && v[i].0 == a && v[i].1 == b {
                    v[i].2 = val;
                    return;
                }
                if v.capacity() == 0 {
                    v.reserve_exact(1);
                }
                let left = (i < j && v[i].0 < a).then(|| (v[i].0, a, v[i].2));
                let right = (i < j && v[j - 1].1 > b).then(|| (b, v[j - 1].1, v[j - 1].2));
                v.splice(i..j, left.into_iter().chain([(a, b, val)]).chain(right));
            }
            Repr::Big(map) => tree_assign(map, a, b, val),
        }
        self.grow();
    }

    /// Turns a vector grown past `SMALL` into a tree.
    fn grow(&mut self) {
        if let Repr::Small(v) = &mut self.repr
            && v.len() > SMALL
        {
            let map = v.drain(..).map(|(s, e, x)| (s, (e, x))).collect();
            self.repr = Repr::Big(map);
        }
    }
}

/// [`Intervals::remove`] on the tree form.
fn tree_remove<V: Copy>(map: &mut BTreeMap<u64, (u64, V)>, a: u64, b: u64) {
    if last_before(map, b).is_none_or(|(_, e)| e <= a) {
        return;
    }
    if let Some((&s, &(e, v))) = map.range(..a).next_back()
        && e > a
    {
        map.insert(s, (a, v));
        if e > b {
            // It held all of [a, b): nothing else can start inside.
            map.insert(b, (e, v));
            return;
        }
    }
    if let Some((_, &(e, v))) = map.range(a..b).next_back()
        && e > b
    {
        map.insert(b, (e, v));
    }
    while let Some((&s, _)) = map.range(a..b).next() {
        map.remove(&s);
    }
}

/// [`Intervals::assign`] on the tree form.
fn tree_assign<V: Copy>(map: &mut BTreeMap<u64, (u64, V)>, a: u64, b: u64, v: V) {
    // Fast paths, one descent: `[a, b)` is stored as it is, or nothing overlaps it.
    match map.range_mut(..b).next_back() {
        Some((&s, (e, x))) if s == a && *e == b => *x = v,
        Some((_, &mut (e, _))) if e > a => {
            tree_remove(map, a, b);
            map.insert(a, (b, v));
        }
        _ => {
            map.insert(a, (b, v));
        }
    }
}

/// The last interval starting before `b`: `(start, end)`. Every interval
/// overlapping `[a, b)` ends by its end, so none does when it ends by `a`.
fn last_before<V: Copy>(map: &BTreeMap<u64, (u64, V)>, b: u64) -> Option<(u64, u64)> {
    map.range(..b).next_back().map(|(&s, &(e, _))| (s, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(m: &Intervals<u8>) -> Vec<(u64, u64, u8)> {
        m.overlapping(0, u64::MAX).collect()
    }

    #[test]
    fn assign_splits_and_replaces_and_overlapping_clips_nothing() {
        sequence(Intervals::default());
        sequence(Intervals::tree());
    }

    fn sequence(mut m: Intervals<u8>) {
        m.assign(10, 20, 1);
        m.assign(30, 40, 2);
        assert_eq!(m.overlapping(15, 35).collect::<Vec<_>>(), vec![(10, 20, 1), (30, 40, 2)]);
        assert_eq!(m.overlapping(20, 30).count(), 0, "half-open ends");
        assert_eq!(m.overlapping(5, 5).count(), 0, "an empty range overlaps nothing");
        assert_eq!(m.overlapping(15, 15).count(), 0, "not even inside an interval");
        m.assign(15, 35, 3);
        assert_eq!(all(&m), vec![(10, 15, 1), (15, 35, 3), (35, 40, 2)]);
        m.assign(16, 17, 4);
        assert_eq!(all(&m), vec![(10, 15, 1), (15, 16, 3), (16, 17, 4), (17, 35, 3), (35, 40, 2)]);
        m.remove(0, 16);
        assert_eq!(all(&m), vec![(16, 17, 4), (17, 35, 3), (35, 40, 2)]);
        m.remove(20, 21);
        assert_eq!(all(&m), vec![(16, 17, 4), (17, 20, 3), (21, 35, 3), (35, 40, 2)]);
        // A stored interval rewritten as it is, and an assign or remove that overlaps nothing.
        m.assign(17, 20, 5);
        assert_eq!(all(&m), vec![(16, 17, 4), (17, 20, 5), (21, 35, 3), (35, 40, 2)]);
        m.assign(50, 60, 6);
        m.remove(40, 50);
        m.remove(20, 21);
        assert_eq!(all(&m), vec![(16, 17, 4), (17, 20, 5), (21, 35, 3), (35, 40, 2), (50, 60, 6)]);
        m.assign(18, 19, 7);
        assert_eq!(m.overlapping(17, 20).collect::<Vec<_>>(), vec![(17, 18, 5), (18, 19, 7), (19, 20, 5)]);
        m.assign(0, 100, 9);
        assert_eq!((all(&m), m.len()), (vec![(0, 100, 9)], 1));
        m.assign(7, 7, 1);
        m.remove(9, 3);
        assert_eq!(m.len(), 1, "empty ranges change nothing");
    }

    #[test]
    fn the_vector_form_and_the_tree_form_agree_past_the_switch() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        for round in 0..20 {
            let (mut small, mut tree) = (Intervals::default(), Intervals::tree());
            let mut bytes = vec![None; 2000];
            for k in 0..300u32 {
                let a = rng.random_range(0..2000u64);
                let len = if rng.random_bool(0.8) { rng.random_range(0..12) } else { rng.random_range(0..400) };
                let b = (a + len).min(2000);
                let v = (k % 200) as u8;
                if rng.random_bool(0.25) {
                    small.remove(a, b);
                    tree.remove(a, b);
                    bytes[a as usize..b as usize].fill(None);
                } else {
                    small.assign(a, b, v);
                    tree.assign(a, b, v);
                    bytes[a as usize..b as usize].fill(Some(v));
                }
                let (qa, qb) = (rng.random_range(0..2000u64), rng.random_range(0..2000u64));
                let got: Vec<_> = small.overlapping(qa, qb).collect();
                assert_eq!(got, tree.overlapping(qa, qb).collect::<Vec<_>>(), "round {round}, step {k}");
                // Every byte of the query is covered as the byte array says.
                for x in qa..qb {
                    let at = got.iter().find(|&&(s, e, _)| s <= x && x < e).map(|&(_, _, v)| v);
                    assert_eq!(at, bytes[x as usize], "byte {x}");
                }
                assert!(got.iter().all(|&(s, e, _)| s < qb && e > qa), "only overlapping ones");
            }
            assert_eq!(small.len(), tree.len());
            assert!(matches!(small.repr, Repr::Big(_)), "the sequences grow past the vector form");
        }
    }
}
