//! A map of disjoint half-open address intervals `[start, end)` to values:
//! the storage of the shadow memory ([`crate::check::shadow`]).
//!
//! Cost: `overlapping` is O(log s + j) for j intervals reported; `assign`
//! and `remove` are O(log s) plus O(log s) per interval they delete (one
//! descent when nothing overlaps or `assign` rewrites a stored interval), and
//! create at most two intervals each, so a sequence of m operations costs
//! O(m log s) amortized (s intervals stored, at most 2m + 1).

use std::collections::BTreeMap;

/// Disjoint intervals keyed by their start.
#[derive(Clone, Debug)]
pub(crate) struct Intervals<V> {
    map: BTreeMap<u64, (u64, V)>,
}

impl<V: Copy> Default for Intervals<V> {
    fn default() -> Self {
        Intervals { map: BTreeMap::new() }
    }
}

impl<V: Copy> Intervals<V> {
    /// Number of intervals stored.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    /// The stored intervals overlapping `[a, b)`, ascending, unclipped: `(start, end, value)`.
    pub(crate) fn overlapping(&self, a: u64, b: u64) -> impl Iterator<Item = (u64, u64, V)> + '_ {
        let before = self.map.range(..a).next_back().filter(|&(_, &(e, _))| e > a && a < b);
        let inside = self.map.range(a..b.max(a));
        before.into_iter().chain(inside).map(|(&s, &(e, v))| (s, e, v))
    }

    /// Deletes `[a, b)`, keeping the parts of intervals outside it.
    pub(crate) fn remove(&mut self, a: u64, b: u64) {
        if a >= b || self.last_before(b).is_none_or(|(_, e)| e <= a) {
            return;
        }
        if let Some((&s, &(e, v))) = self.map.range(..a).next_back()
            && e > a
        {
            self.map.insert(s, (a, v));
            if e > b {
                // It held all of [a, b): nothing else can start inside.
                self.map.insert(b, (e, v));
                return;
            }
        }
        if let Some((_, &(e, v))) = self.map.range(a..b).next_back()
            && e > b
        {
            self.map.insert(b, (e, v));
        }
        while let Some((&s, _)) = self.map.range(a..b).next() {
            self.map.remove(&s);
        }
    }

    /// Makes `[a, b)` one interval holding `v`.
    pub(crate) fn assign(&mut self, a: u64, b: u64, v: V) {
        if a >= b {
            return;
        }
        // Fast paths, one descent: `[a, b)` is stored as it is, or nothing overlaps it.
        match self.map.range_mut(..b).next_back() {
            Some((&s, (e, x))) if s == a && *e == b => *x = v,
            Some((_, &mut (e, _))) if e > a => {
                self.remove(a, b);
                self.map.insert(a, (b, v));
            }
            _ => {
                self.map.insert(a, (b, v));
            }
        }
    }

    /// The last interval starting before `b`: `(start, end)`. Every interval
    /// overlapping `[a, b)` ends by its end, so none does when it ends by `a`.
    fn last_before(&self, b: u64) -> Option<(u64, u64)> {
        self.map.range(..b).next_back().map(|(&s, &(e, _))| (s, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(m: &Intervals<u8>) -> Vec<(u64, u64, u8)> {
        m.overlapping(0, u64::MAX).collect()
    }

    #[test]
    fn assign_splits_and_replaces_and_overlapping_clips_nothing() {
        let mut m = Intervals::default();
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
}
