//! The checkers' overlap sweep: every pair of items whose byte ranges share a
//! byte while both are live at a common position, with the first such
//! position. Used only by the two independent checkers ([`super::checker`]
//! and [`super::ir_checker`]); it shares no code with the interval tree, the
//! allocator's liveness or `search`.
//!
//! **Algorithm.** Each item's inclusive live segments are sorted and merged
//! (adjacent or overlapping ones), so an item has at most one segment live at
//! any position. The segments are swept by start position. The items are
//! ranked once by (first byte, item); a max tree over the ranks holds each
//! live item's end byte (0 when not live). A starting item `[lo, hi)` meets
//! exactly the live items of rank below the first rank with first byte `>= hi`
//! whose end is `> lo`; the tree's descent visits only subtrees whose maximum
//! end exceeds `lo`, so each one met costs O(log n) and a start meeting none
//! costs O(log n), whether or not other live items overlap. A pair is recorded
//! the first time it is met, which is at its first common position (starts
//! are visited in ascending order, and the later start of two intersecting
//! segments is a position both cover). The sweep stops once `limit` distinct
//! pairs are recorded (a placement with every buffer at one address has n²/2
//! of them; a foreign placement must not make the checker quadratic).
//!
//! Expiry needs no heap: the merged segments are also ordered by end, and a
//! cursor over that order clears every item whose segment ended before the
//! current start. Both orders are counting sorts when the positions span at
//! most `4s + 1024` values (the IR checker's positions are instruction
//! indices), comparison sorts otherwise (a MiniMalloc CSV's times are any
//! u64); either way stable, so ties keep item order and the sweep visits the
//! same starts in the same order.
//!
//! **Cost.** O(s) to merge the s segments when they come sorted by (item,
//! start), as the IR checker's do (else O(s log s)); O(s + span) or O(s log
//! s) to order them by start and by end; O(n log n) to rank the n items;
//! O((s + k') log n) for the sweep where k' ≤ s + (pairs met, counted with
//! repeats across an item's segments), and O(k log k) for the k ≤ `limit`
//! distinct pairs recorded. Memory O(n + s + k).

use std::collections::BTreeMap;

/// The pairs found by [`overlapping_pairs`], and whether it stopped at its limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overlaps {
    /// `(a, b, time)` with `a < b`, sorted by `(a, b)`.
    pub pairs: Vec<(usize, usize, u64)>,
    /// The sweep stopped at `limit` pairs: there may be more.
    pub truncated: bool,
}

/// Every pair `(a, b, time)` with `a < b` whose nonempty byte ranges
/// `ranges[a] = [lo, hi)` and `ranges[b]` intersect and whose inclusive live
/// segments share a position; `time` is the first shared position. `segs`
/// holds `(item, from, to)` in any order. Sorted by `(a, b)`. Items with an
/// empty range, items out of `ranges`' bounds and inverted segments (`from >
/// to`) take part in nothing. At most `limit` pairs: the sweep stops at the
/// start that records one more than `limit` and reports `truncated`.
pub fn overlapping_pairs(ranges: &[(u64, u64)], mut segs: Vec<(usize, u64, u64)>, limit: usize) -> Overlaps {
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
    // By start, then item (stable: the merge left them in item order, and an
    // item's merged segments start apart, so (start, item) orders them all).
    sort_stably_by_time(&mut events, |e| e.0);
    // The same segments by end, for expiry.
    let mut ends: Vec<(u64, usize)> = events.iter().map(|&(_, i, to)| (to, i)).collect();
    sort_stably_by_time(&mut ends, |e| e.0);
    // Rank the items by (first byte, item): ranks of first byte < x are a prefix.
    let mut by_lo: Vec<usize> = (0..ranges.len()).collect();
    by_lo.sort_unstable_by_key(|&i| (ranges[i].0, i));
    let mut rank = vec![0usize; ranges.len()];
    for (r, &i) in by_lo.iter().enumerate() {
        rank[i] = r;
    }
    let los: Vec<u64> = by_lo.iter().map(|&i| ranges[i].0).collect();
    let mut live = MaxTree::new(ranges.len());
    // `ends[..expired]` have been cleared from `live`.
    let mut expired = 0;
    let mut found: BTreeMap<(usize, usize), u64> = BTreeMap::new();
    let (mut hits, mut stack) = (Vec::new(), Vec::new());
    let mut truncated = false;
    for &(t, i, _) in &events {
        // A segment that ended before `t` started before `t`, so it was set already.
        while let Some(&(end, j)) = ends.get(expired) {
            if end >= t {
                break;
            }
            expired += 1;
            live.set(rank[j], 0);
        }
        let (lo, hi) = ranges[i];
        hits.clear();
        live.above(los.partition_point(|&l| l < hi), lo, &mut stack, &mut hits);
        for &r in &hits {
            let j = by_lo[r];
            found.entry((i.min(j), i.max(j))).or_insert(t);
        }
        if found.len() > limit {
            truncated = true;
            break;
        }
        live.set(rank[i], hi);
    }
    let mut pairs: Vec<(usize, usize, u64)> = found.into_iter().map(|((a, b), t)| (a, b, t)).collect();
    pairs.truncate(limit);
    Overlaps { pairs, truncated }
}

/// Sorts `v` stably by `time`: a counting sort when the times span at most
/// `4 * len + 1024` values (O(len + span)), else a merge sort (O(len log len)).
fn sort_stably_by_time<T: Copy>(v: &mut Vec<T>, time: impl Fn(&T) -> u64) {
    let (Some(lo), Some(hi)) = (v.iter().map(&time).min(), v.iter().map(&time).max()) else { return };
    let limit = v.len().saturating_mul(4).saturating_add(1024);
    let span = match usize::try_from(hi - lo) {
        Ok(span) if span <= limit => span,
        _ => {
            v.sort_by_key(time);
            return;
        }
    };
    // `next[k]`: where the next item of time `lo + k` goes.
    let mut next = vec![0usize; span + 2];
    for x in v.iter() {
        next[(time(x) - lo) as usize + 1] += 1;
    }
    for k in 1..next.len() {
        next[k] += next[k - 1];
    }
    let mut out: Vec<T> = vec![v[0]; v.len()];
    for x in v.iter() {
        let k = (time(x) - lo) as usize;
        out[next[k]] = *x;
        next[k] += 1;
    }
    *v = out;
}

/// A max tree over `n` leaves (ranks), each holding a live item's end byte or 0.
struct MaxTree {
    leaves: usize,
    node: Vec<u64>,
}

impl MaxTree {
    fn new(n: usize) -> Self {
        let leaves = n.max(1).next_power_of_two();
        MaxTree { leaves, node: vec![0; 2 * leaves] }
    }

    /// Sets leaf `r` to `v` and updates its ancestors, stopping at the first
    /// whose maximum does not change (those above it do not either): O(log n).
    fn set(&mut self, r: usize, v: u64) {
        let mut x = r + self.leaves;
        self.node[x] = v;
        while x > 1 {
            x /= 2;
            let max = self.node[2 * x].max(self.node[2 * x + 1]);
            if self.node[x] == max {
                break;
            }
            self.node[x] = max;
        }
    }

    /// Pushes every leaf `r < prefix` whose value exceeds `floor`, in rank
    /// order (`stack`: scratch space, left empty): O((1 + found) log n).
    fn above(&self, prefix: usize, floor: u64, stack: &mut Vec<(usize, usize, usize)>, out: &mut Vec<usize>) {
        stack.clear();
        stack.push((1usize, 0usize, self.leaves));
        while let Some((x, first, width)) = stack.pop() {
            if first >= prefix || self.node[x] <= floor {
                continue;
            }
            if width == 1 {
                out.push(first);
                continue;
            }
            let half = width / 2;
            stack.push((2 * x + 1, first + half, half));
            stack.push((2 * x, first, half));
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
        overlapping_pairs(ranges, flat, usize::MAX).pairs
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
    fn the_limit_stops_the_sweep_and_says_so() {
        // Five buffers on the same bytes at the same time: ten pairs.
        let ranges = [(0, 4); 5];
        let segs: Vec<(usize, u64, u64)> = (0..5).map(|i| (i, 0, 3)).collect();
        let all = overlapping_pairs(&ranges, segs.clone(), usize::MAX);
        assert_eq!((all.pairs.len(), all.truncated), (10, false));
        let exact = overlapping_pairs(&ranges, segs.clone(), 10);
        assert_eq!((exact.pairs.len(), exact.truncated), (10, false));
        let cut = overlapping_pairs(&ranges, segs.clone(), 3);
        assert_eq!((cut.pairs.len(), cut.truncated), (3, true));
        assert!(cut.pairs.iter().all(|p| all.pairs.contains(p)), "{cut:?}");
        let none = overlapping_pairs(&ranges, segs, 0);
        assert_eq!((none.pairs, none.truncated), (vec![], true));
    }

    #[test]
    fn an_overlap_under_many_disjoint_live_buffers_is_found_once() {
        // Two wide overlapping buffers live throughout, 2000 disjoint ones above them.
        let mut ranges = vec![(0u64, 100u64), (50, 150)];
        ranges.extend((0..2000u64).map(|k| (1000 + 10 * k, 1010 + 10 * k)));
        let segs = (0..ranges.len()).map(|i| (i, i as u64, 5000)).collect();
        assert_eq!(overlapping_pairs(&ranges, segs, usize::MAX), Overlaps { pairs: vec![(0, 1, 1)], truncated: false });
    }

    #[test]
    fn sorting_by_time_is_stable_on_both_paths() {
        // Small span: counted; a span past 4 * len + 1024: merge-sorted. Same order either way.
        for scale in [1u64, 1 << 40] {
            let mut v: Vec<(u64, usize)> = (0..50).map(|i| ((i as u64 * 7 % 5) * scale, i)).collect();
            let mut want = v.clone();
            want.sort_by_key(|e| e.0);
            sort_stably_by_time(&mut v, |e| e.0);
            assert_eq!(v, want, "scale {scale}");
            assert!(v.windows(2).all(|w| w[0].0 < w[1].0 || w[0].1 < w[1].1), "ties keep input order");
        }
        let mut empty: Vec<(u64, usize)> = Vec::new();
        sort_stably_by_time(&mut empty, |e| e.0);
        assert!(empty.is_empty());
        // Times at the ends of u64: the span overflows usize arithmetic nowhere.
        let mut wide = vec![(u64::MAX, 0usize), (0, 1), (u64::MAX, 2)];
        sort_stably_by_time(&mut wide, |e| e.0);
        assert_eq!(wide, vec![(0, 1), (u64::MAX, 0), (u64::MAX, 2)]);
        // A small span at the top of u64 is counted from its lowest time (no sum of times overflows).
        let mut top = vec![(u64::MAX, 0usize), (u64::MAX - 3, 1), (u64::MAX - 1, 2), (u64::MAX - 3, 3)];
        sort_stably_by_time(&mut top, |e| e.0);
        assert_eq!(top, vec![(u64::MAX - 3, 1), (u64::MAX - 3, 3), (u64::MAX - 1, 2), (u64::MAX, 0)]);
    }

    /// `cases` random cases of fewer than `items` items against the quadratic
    /// definition, with every position shifted left by `shift` bits.
    fn agrees_with_brute(seed: u64, cases: usize, items: usize, shift: u32) {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        for _ in 0..cases {
            let n = rng.random_range(0..items);
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
                            let f = rng.random_range(0..30u64) << shift;
                            (f, f + (rng.random_range(0..6u64) << shift))
                        })
                        .collect()
                })
                .collect();
            assert_eq!(pairs(&ranges, &segs), brute(&ranges, &segs), "{ranges:?} {segs:?}");
        }
    }

    #[test]
    fn agrees_with_the_quadratic_definition_at_times_past_the_counting_span() {
        // Positions 2^40 apart force the comparison sorts of starts and ends.
        agrees_with_brute(11, 200, 10, 40);
    }

    #[test]
    fn agrees_with_the_quadratic_definition() {
        agrees_with_brute(7, 300, 12, 0);
    }
}
