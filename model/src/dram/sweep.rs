//! The checkers' overlap sweep: every pair of items whose byte ranges share a
//! byte while both are live at a common position, with the first such
//! position. Used only by the two independent checkers ([`super::checker`]
//! and [`super::ir_checker`]); it shares no code with the interval tree, the
//! allocator's liveness or `search`.
//!
//! **Algorithm.** Each item's inclusive live segments are sorted and merged
//! (adjacent or overlapping ones), so an item has at most one segment live at
//! any position. The segments are swept by start position, the live items
//! kept in a map ordered by first byte. While no two live items share a byte
//! (always, on a valid allocation) the live map is a sorted list of disjoint
//! ranges, so a starting item meets a live one iff it meets its predecessor
//! or successor, and the ones it meets are the contiguous run around it.
//! While some live pair overlaps (counted exactly), a start or an expiry scans
//! the whole live map instead. A pair is recorded the first time it is met,
//! which is at its first common position (starts are visited in ascending
//! order, and the later start of two intersecting segments is a position both
//! cover).
//!
//! **Cost.** O(s log s) to sort the s segments, O(s log L) for the sweep with
//! at most L items live at once, plus O(L) per start or expiry while an
//! overlap is live (never on a valid allocation) and O(k log k) for the k
//! pairs found. Memory O(n + s).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

/// Every pair `(a, b, time)` with `a < b` whose nonempty byte ranges
/// `ranges[a] = [lo, hi)` and `ranges[b]` intersect and whose inclusive live
/// segments share a position; `time` is the first shared position. `segs`
/// holds `(item, from, to)` in any order. Sorted by `(a, b)`. Items with an
/// empty range, items out of `ranges`' bounds and inverted segments (`from >
/// to`) take part in nothing.
pub fn overlapping_pairs(ranges: &[(u64, u64)], mut segs: Vec<(usize, u64, u64)>) -> Vec<(usize, usize, u64)> {
    segs.retain(|&(i, f, t)| f <= t && ranges.get(i).is_some_and(|r| r.0 < r.1));
    segs.sort_unstable();
    // Merge each item's overlapping or adjacent segments; then order by start.
    let mut events: Vec<(u64, usize, u64)> = Vec::with_capacity(segs.len());
    for (i, f, t) in segs {
        match events.last_mut() {
            Some(last) if last.1 == i && f <= last.2.saturating_add(1) => last.2 = last.2.max(t),
            _ => events.push((f, i, t)),
        }
    }
    events.sort_unstable();
    let mut live = Live::default();
    let mut expiry: BinaryHeap<Reverse<(u64, usize)>> = BinaryHeap::new();
    let mut found: BTreeMap<(usize, usize), u64> = BTreeMap::new();
    let mut hits = Vec::new();
    for &(t, i, to) in &events {
        while let Some(&Reverse((end, j))) = expiry.peek() {
            if end >= t {
                break;
            }
            expiry.pop();
            live.remove(j, ranges[j]);
        }
        hits.clear();
        live.meeting(ranges[i], &mut hits);
        for &j in &hits {
            found.entry((i.min(j), i.max(j))).or_insert(t);
        }
        live.insert(i, ranges[i], hits.len());
        expiry.push(Reverse((to, i)));
    }
    found.into_iter().map(|((a, b), t)| (a, b, t)).collect()
}

/// The live items by (first byte, item) -> end, and how many live pairs overlap.
#[derive(Default)]
struct Live {
    map: BTreeMap<(u64, usize), u64>,
    overlapping: usize,
}

impl Live {
    /// Pushes every live item sharing a byte with `[lo, hi)` onto `out`.
    fn meeting(&self, (lo, hi): (u64, u64), out: &mut Vec<usize>) {
        if self.overlapping > 0 {
            out.extend(self.map.iter().filter(|&(&(l, _), &h)| l < hi && lo < h).map(|(&(_, j), _)| j));
            return;
        }
        // Disjoint and sorted: the ends ascend with the starts.
        for (&(_, j), _) in self.map.range(..(lo, usize::MAX)).rev().take_while(|&(_, &h)| h > lo) {
            out.push(j);
        }
        for (&(_, j), _) in self.map.range((lo, usize::MAX)..).take_while(|&(&(l, _), _)| l < hi) {
            out.push(j);
        }
    }

    fn insert(&mut self, i: usize, (lo, hi): (u64, u64), partners: usize) {
        self.map.insert((lo, i), hi);
        self.overlapping += partners;
    }

    fn remove(&mut self, i: usize, (lo, hi): (u64, u64)) {
        self.map.remove(&(lo, i));
        if self.overlapping > 0 {
            let partners = self.map.iter().filter(|&(&(l, _), &h)| l < hi && lo < h).count();
            self.overlapping -= partners;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The quadratic definition, for comparison.
    fn brute(ranges: &[(u64, u64)], segs: &[Vec<(u64, u64)>]) -> Vec<(usize, usize, u64)> {
        let segs: Vec<Vec<(u64, u64)>> = (0..ranges.len()).map(|i| segs.get(i).cloned().unwrap_or_default()).collect();
        let mut out = Vec::new();
        for a in 0..ranges.len() {
            for b in a + 1..ranges.len() {
                let (ra, rb) = (ranges[a], ranges[b]);
                if ra.0 >= ra.1 || rb.0 >= rb.1 || ra.0 >= rb.1 || rb.0 >= ra.1 {
                    continue;
                }
                let mut best: Option<u64> = None;
                for &(a0, a1) in &segs[a] {
                    for &(b0, b1) in &segs[b] {
                        let lo = a0.max(b0);
                        if lo <= a1.min(b1) && best.is_none_or(|x| lo < x) {
                            best = Some(lo);
                        }
                    }
                }
                if let Some(t) = best {
                    out.push((a, b, t));
                }
            }
        }
        out
    }

    fn pairs(ranges: &[(u64, u64)], segs: &[Vec<(u64, u64)>]) -> Vec<(usize, usize, u64)> {
        let flat = segs.iter().enumerate().flat_map(|(i, l)| l.iter().map(move |&(f, t)| (i, f, t))).collect();
        overlapping_pairs(ranges, flat)
    }

    #[test]
    fn small_cases() {
        // 0 and 1 share bytes and position 3; 2 touches 1's end only; 3 is empty.
        let ranges = [(0, 10), (5, 20), (20, 30), (7, 7)];
        let segs = vec![vec![(0, 3)], vec![(3, 8)], vec![(0, 9)], vec![(0, 9)]];
        assert_eq!(pairs(&ranges, &segs), vec![(0, 1, 3)]);
        // Same bytes, disjoint times: nothing.
        assert_eq!(pairs(&[(0, 4), (0, 4)], &[vec![(0, 1)], vec![(2, 3)]]), vec![]);
        // A long-lived wide item hidden left of a narrow disjoint one is still found.
        let ranges = [(0, 100), (10, 20), (50, 60)];
        let segs = vec![vec![(0, 9)], vec![(1, 9)], vec![(5, 5)]];
        assert_eq!(pairs(&ranges, &segs), vec![(0, 1, 1), (0, 2, 5)]);
        // Three on the same bytes; the overlap count returns to zero once they end.
        let ranges = [(0, 8), (0, 8), (0, 8), (4, 12), (6, 7)];
        let segs = vec![vec![(0, 2)], vec![(1, 3)], vec![(2, 2)], vec![(10, 12)], vec![(11, 11), (20, 19)]];
        assert_eq!(pairs(&ranges, &segs), vec![(0, 1, 1), (0, 2, 2), (1, 2, 2), (3, 4, 11)]);
    }

    #[test]
    fn agrees_with_the_quadratic_definition() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for _ in 0..300 {
            let n = rng.random_range(0..12usize);
            let ranges: Vec<(u64, u64)> = (0..n)
                .map(|_| {
                    let lo = rng.random_range(0..40u64);
                    (lo, lo + rng.random_range(0..12u64))
                })
                .collect();
            let segs: Vec<Vec<(u64, u64)>> = (0..n)
                .map(|_| {
                    (0..rng.random_range(0..4usize))
                        .map(|_| {
                            let f = rng.random_range(0..30u64);
                            (f, f + rng.random_range(0..6u64))
                        })
                        .collect()
                })
                .collect();
            assert_eq!(pairs(&ranges, &segs), brute(&ranges, &segs), "{ranges:?} {segs:?}");
        }
    }
}
