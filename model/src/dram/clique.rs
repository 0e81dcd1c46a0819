//! The clique path of the allocator: the seed's simplify + select_impl, computed
//! without neighbour lists when every location interferes with every other.
//!
//! The dram_shared run makes every owned shared tensor live to the end of its
//! function ([`super::shared::extend_shared_lifetimes`]), so its interference
//! graph is a clique: n locations, n(n-1)/2 edges. At 100k instructions per
//! core that is tens of thousands of shared tensors per core, and the general
//! path (neighbour lists, the bucket queue's n^2 decrements, an occupied list
//! of every placed location sorted per node) is quadratic in time and memory.
//!
//! On a clique the answers are known without asking the oracle:
//!
//! - **simplify** ([`super::simplify::simplify`]): every movable location has
//!   the same degree, so the bucket queue pops the lowest movable id, then
//!   (each removal pushing the remaining ones in ascending order, the highest
//!   on top) the highest, the next highest, and so on: the stack is `[m0, mk,
//!   mk-1, ..., m1]` over the movable ids `m0 < m1 < ... < mk` ([`clique_stack`]).
//! - **select_impl** ([`super::select::select_impl`]): each node's occupied list
//!   is every location placed before it (pinned ones included). We keep their
//!   union as merged disjoint ranges in a `BTreeMap` and walk its gaps with the
//!   same [`search_gaps`] decision the general path uses.
//!
//! Cost: O(n log n + n g) for n locations, where g is the number of gaps a
//! search walks past before it fits (0 when every size is a page multiple and
//! nothing was placed out of order; at most the number of free gaps).
//! The unit tests below compare this path with the general one (the pair-scan
//! oracle, no cache) on random cliques in both orders, placements and failures.

use std::collections::BTreeMap;

use super::config::{AllocConfig, Order, regions};
use super::error::AllocError;
use super::interval_tree::FlatTime;
use super::problem::Problem;
use super::renumber::Renumbered;
use super::search::{AddrInterval, Fit, search_gaps};
use super::select::{Allocation, DensePlacement, finish, place_node, size_stack};

/// An instant inside one interval of every location, if there is one (then
/// every two locations interfere: the graph is a clique). A sweep over each
/// location's merged intervals: O(I log I) in intervals, after an O(I)
/// sequential pre-check that rejects most non-cliques without sorting.
pub fn common_instant(r: &Renumbered) -> Option<FlatTime> {
    let n = r.len();
    if n < 2 {
        return None;
    }
    // The instant lies in every location's hull [earliest def, latest use]:
    // none if some location has no interval or two hulls are disjoint.
    let (mut latest_start, mut earliest_end) = (0, FlatTime::MAX);
    for i in 0..n {
        let ivs = r.intervals_of(i);
        let lo = ivs.iter().map(|iv| iv.def).min()?;
        let hi = ivs.iter().map(|iv| iv.last_use).max()?;
        latest_start = latest_start.max(lo);
        earliest_end = earliest_end.min(hi);
    }
    if latest_start > earliest_end {
        return None;
    }
    // +1 at a merged interval's start, -1 just past its end (ends sort first at one time).
    let mut events: Vec<(u64, i8)> = Vec::with_capacity(2 * r.num_intervals());
    let mut mine: Vec<(FlatTime, FlatTime)> = Vec::new();
    for i in 0..n {
        mine.clear();
        mine.extend(r.intervals_of(i).iter().map(|iv| (iv.def, iv.last_use)));
        mine.sort_unstable();
        let mut cur: Option<(FlatTime, FlatTime)> = None;
        for &(lo, hi) in &mine {
            match cur {
                Some((clo, chi)) if lo <= chi.saturating_add(1) => cur = Some((clo, chi.max(hi))),
                _ => {
                    if let Some((clo, chi)) = cur {
                        events.push((u64::from(clo), 1));
                        events.push((u64::from(chi) + 1, -1));
                    }
                    cur = Some((lo, hi));
                }
            }
        }
        if let Some((clo, chi)) = cur {
            events.push((u64::from(clo), 1));
            events.push((u64::from(chi) + 1, -1));
        }
    }
    events.sort_unstable();
    let mut live = 0usize;
    for (t, d) in events {
        if d < 0 {
            live -= 1;
        } else {
            live += 1;
            if live == n {
                return FlatTime::try_from(t).ok();
            }
        }
    }
    None
}

/// simplify's stack on a clique: `[m0, mk, mk-1, ..., m1]` over the movable ids.
pub fn clique_stack(pinned: &[bool]) -> Vec<u32> {
    let movable: Vec<u32> = (0..pinned.len() as u32).filter(|&i| !pinned[i as usize]).collect();
    match movable.split_first() {
        None => Vec::new(),
        Some((&first, rest)) => std::iter::once(first).chain(rest.iter().rev().copied()).collect(),
    }
}

/// The union of placed byte ranges: disjoint, non-touching `[lo, hi)` keyed by `lo`.
#[derive(Debug, Default)]
struct Union {
    ranges: BTreeMap<u64, u64>,
}

impl Union {
    /// Adds `[lo, hi)`, merging with every range it overlaps or touches. O(log n) amortized.
    fn insert(&mut self, mut lo: u64, mut hi: u64) {
        if hi <= lo {
            return;
        }
        if let Some((&plo, &phi)) = self.ranges.range(..=lo).next_back()
            && phi >= lo
        {
            lo = plo;
            hi = hi.max(phi);
            self.ranges.remove(&plo);
        }
        while let Some((&nlo, &nhi)) = self.ranges.range(lo..).next()
            && nlo <= hi
        {
            hi = hi.max(nhi);
            self.ranges.remove(&nlo);
        }
        self.ranges.insert(lo, hi);
    }

    /// The gaps of `[start, ceiling)` between the ranges, lowest first, as
    /// `search`'s free list yields them (the last one flagged trailing).
    fn walk(&self, start: u64, ceiling: u64, f: &mut dyn FnMut(AddrInterval, bool) -> bool) {
        let mut prev_end = start;
        // A range that starts at or below `start` can only raise the first gap's start.
        if let Some((_, &hi)) = self.ranges.range(..=start).next_back() {
            prev_end = prev_end.max(hi);
        }
        for (&lo, &hi) in self.ranges.range(start.saturating_add(1)..) {
            if prev_end >= ceiling {
                return;
            }
            let lo = lo.min(ceiling);
            if lo > prev_end && !f(AddrInterval { lo: prev_end, hi: lo }, false) {
                return;
            }
            prev_end = prev_end.max(hi);
        }
        if prev_end < ceiling {
            f(AddrInterval { lo: prev_end, hi: ceiling }, true);
        }
    }
}

/// select_impl on a clique: every earlier placement (and every pin) is occupied.
fn select_clique(
    r: &Renumbered,
    stack: &[u32],
    regions: &super::config::Regions,
    page: u64,
    fit: Fit,
) -> Result<DensePlacement, (usize, u64, u64)> {
    let n = r.len();
    let mut addresses = vec![0u64; n];
    let mut in_cc = vec![false; n];
    let mut union = Union::default();
    for (id, info) in r.infos.iter().enumerate() {
        if let Some(a) = info.fixed_address {
            addresses[id] = a;
            union.insert(a, a + info.aligned_size);
        }
    }
    for &v in stack.iter().rev() {
        let vi = v as usize;
        let info = r.infos[vi];
        let result = place_node(&info, regions, page, fit, |p| {
            search_gaps(|f| union.walk(p.start, p.ceiling, f), info.aligned_size, p)
        });
        let (a, cc_placed) = result.map_err(|gap| (vi, info.aligned_size, gap))?;
        addresses[vi] = a;
        in_cc[vi] = cc_placed;
        union.insert(a, a + info.aligned_size);
    }
    Ok(DensePlacement { addresses, in_cc })
}

/// The whole allocation of a clique problem (the caller checked [`common_instant`]).
pub(super) fn run_clique(problem: &Problem, config: &AllocConfig, r: &Renumbered) -> Result<Allocation, AllocError> {
    if config.page == 0 {
        return Err(AllocError::BadPage);
    }
    let regions = regions(config, problem)?;
    let pinned = r.pinned();
    let (stack, fit) = match config.order {
        Order::Seed => (clique_stack(&pinned), Fit::First),
        Order::Size => (size_stack(problem, r, &pinned), Fit::Best),
    };
    let dense = select_clique(r, &stack, &regions, config.page, fit);
    finish(problem, config, r, &regions, &stack, dense)
}

#[cfg(test)]
mod tests {
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::*;
    use crate::dram::interference::TreeInterference;
    use crate::dram::problem::{CcOperand, LiveInterval, Location};
    use crate::dram::renumber::renumber_locations;
    use crate::dram::select::{Oracle, allocate_using};
    use crate::dram::simplify::simplify;

    /// A random clique: every location is live at `t`, with extra intervals around.
    fn clique(rng: &mut ChaCha8Rng, n: usize) -> Problem {
        let t = 50;
        let mut locations = Vec::new();
        for i in 0..n {
            let mut ivs = vec![LiveInterval::new(rng.random_range(0..=t), rng.random_range(t..100))];
            if rng.random_bool(0.3) {
                let a = rng.random_range(0..100);
                ivs.push(LiveInterval::new(a, a + rng.random_range(0..5)));
            }
            let size = match rng.random_range(0..4) {
                0 => rng.random_range(1..200),
                1 => 4096 * rng.random_range(1..4),
                2 => rng.random_range(1..10000),
                _ => rng.random_range(3000..5000),
            };
            let mut l = Location::new(format!("l{i}"), size, [1, 64, 4096][rng.random_range(0..3)], ivs);
            if rng.random_bool(0.1) {
                l.fixed_address = Some(4096 * rng.random_range(0..8));
            }
            locations.push(l);
        }
        let mut cc_operands = Vec::new();
        for location in 0..n {
            if rng.random_bool(0.1) {
                cc_operands.push(CcOperand { location, ap_bytes: rng.random_range(0..100) });
            }
        }
        Problem { locations, cc_operands }
    }

    #[test]
    fn clique_stack_is_what_simplify_pops_on_a_clique() {
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        for case in 0..200 {
            let n = rng.random_range(2..40);
            let p = clique(&mut rng, n);
            let r = renumber_locations(&p).expect("renumber");
            assert!(common_instant(&r).is_some(), "case {case}");
            let pinned = r.pinned();
            assert_eq!(clique_stack(&pinned), simplify(&pinned, &mut TreeInterference::new(&r).expect("tree")));
        }
    }

    #[test]
    fn the_clique_path_places_exactly_like_the_general_path() {
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let mut placed = 0;
        for case in 0..300 {
            let n = rng.random_range(2..60);
            let p = clique(&mut rng, n);
            for order in [Order::Seed, Order::Size] {
                let mut config = AllocConfig::dram(rng.random_range(0..3) * 4096);
                config.region_ceiling = [1 << 16, 1 << 18, 1 << 24][rng.random_range(0..3)];
                config.allreduce_buffer_size_mib = [-1, 0][rng.random_range(0..2)];
                config.order = order;
                let fast = allocate_using(&p, &config, Oracle::Tree, true);
                let general = allocate_using(&p, &config, Oracle::PairScan, false);
                assert_eq!(fast, general, "case {case} {order:?}");
                placed += usize::from(fast.is_ok());
            }
        }
        // Both outcomes are exercised: placements and out-of-space failures.
        assert!(placed > 100 && placed < 600, "{placed} of 600 placed");
    }

    #[test]
    fn a_graph_with_no_common_instant_is_not_a_clique() {
        let iv = |a, b| vec![LiveInterval::new(a, b)];
        let p = Problem {
            locations: vec![Location::new("a", 8, 1, iv(0, 5)), Location::new("b", 8, 1, iv(6, 9))],
            cc_operands: vec![],
        };
        assert_eq!(common_instant(&renumber_locations(&p).expect("renumber")), None);
    }

    #[test]
    fn a_location_counts_once_however_its_intervals_lie() {
        let p = |a: Vec<LiveInterval>, b: Vec<LiveInterval>| Problem {
            locations: vec![Location::new("a", 8, 1, a), Location::new("b", 8, 1, b)],
            cc_operands: vec![],
        };
        let instant = |p: &Problem| common_instant(&renumber_locations(p).expect("renumber"));
        // `a`'s own intervals overlap at 3..5: counted twice there, `a` alone would look like a clique with `b`.
        let own_overlap = p(vec![LiveInterval::new(0, 5), LiveInterval::new(3, 8)], vec![LiveInterval::new(10, 12)]);
        assert_eq!(instant(&own_overlap), None);
        // The same past the hull pre-check (`b`'s hull [0, 12] covers `a`'s): the sweep must merge.
        let own_overlap = p(
            vec![LiveInterval::new(2, 5), LiveInterval::new(4, 8)],
            vec![LiveInterval::new(0, 0), LiveInterval::new(10, 12)],
        );
        assert_eq!(instant(&own_overlap), None);
        // `a` has a hole at 2..9 where `b` lives: merging across the hole would make them meet.
        let hole = p(vec![LiveInterval::new(0, 1), LiveInterval::new(10, 11)], vec![LiveInterval::new(5, 6)]);
        assert_eq!(instant(&hole), None);
        // Touching intervals of one location merge, and `b` inside the joint is found.
        let touching = p(vec![LiveInterval::new(0, 4), LiveInterval::new(5, 9)], vec![LiveInterval::new(4, 5)]);
        assert_eq!(instant(&touching), Some(4));
    }

    #[test]
    fn union_merges_touching_and_overlapping_ranges() {
        let mut u = Union::default();
        for (lo, hi) in [(10, 20), (30, 40), (20, 25), (35, 50), (0, 5), (5, 10)] {
            u.insert(lo, hi);
        }
        assert_eq!(u.ranges.into_iter().collect::<Vec<_>>(), vec![(0, 25), (30, 50)]);
    }
}
