//! The assignment orders: the seed's `simplify` elimination stack and the
//! decreasing-size order of `--order size`.
//!
//! Both return a *stack*: select_impl pops it back-to-front (seed, "The
//! simplify elimination order": "select_impl pops the stack back-to-front").

use super::interference::{Interference, StackLists};

/// `simplify`: the Briggs-like worklist over interval-tree neighbours.
///
/// Our exact rule (the seed names the worklist, "least-constrained" and the
/// neighbour re-scan, but not the threshold): the constraint of a movable
/// location is its number of *remaining* interfering neighbours (distinct
/// locations, pinned ones included; pinned locations are never removed, being
/// already placed). Repeatedly remove a location of least constraint, push it
/// on the stack, and re-scan its neighbours, each remaining one losing one
/// (the seed's "new candidates"). This is smallest-last ordering: the worklist
/// of the seed's `chooseOne` is the lowest non-empty bucket of a bucket queue,
/// so the whole pass is O(n + m) plus the oracle's queries. Ties: the location
/// that entered its bucket last goes first (the bucket is a LIFO list);
/// initially the lowest index is on top. Neighbour lists are sorted, so the
/// order never depends on the tree's DFS order. Popping the stack back-to-front
/// assigns the most constrained location first (Briggs optimistic order).
///
/// **What the seed has and lncsim does instead** (seed 004, "simplify"): the
/// binary computes a per-node lo/hi liveness span and a "hi ratio", and moves
/// a node to the worklist when it drops below "the simplify threshold"; the
/// seed gives neither the ratio's formula nor the threshold's value. lncsim
/// uses no threshold and no ratio: every movable location is a candidate at
/// every step and the least-constrained one (fewest remaining neighbours) is
/// removed, which is the limit of a Briggs worklist whose threshold admits
/// every node. Since there is no coloring and no spill, the threshold only
/// changes the order, never whether a node is placed; the order it gives is
/// pinned by `simplify_removes_least_constrained_first`. On a clique (the
/// shared run) the same order is computed without neighbour lists
/// ([`super::clique::clique_stack`], tested equal to this function).
pub fn simplify(pinned: &[bool], oracle: &mut impl Interference) -> Vec<u32> {
    simplify_with_lists(pinned, oracle, false).0
}

/// [`simplify`], and with `lists` (and an oracle that holds every list,
/// [`Interference::csr`]) the stack's [`StackLists`]: as each node is
/// removed, the neighbours it reads that are still in the graph or pinned,
/// exactly the ones select_impl places before it. Written sequentially, about
/// half the oracle's entries; without them select_impl would read the
/// oracle's lists again in a random order.
///
/// Cost: O(n + m) plus the oracle's queries (m list entries).
pub fn simplify_with_lists(
    pinned: &[bool],
    oracle: &mut impl Interference,
    lists: bool,
) -> (Vec<u32>, Option<StackLists>) {
    let n = pinned.len();
    let mut out = (lists && oracle.csr().is_some()).then(|| {
        let entries = oracle.csr().map_or(0, |(_, l)| l.len());
        StackLists { starts: Vec::with_capacity(n + 1), lists: Vec::with_capacity(entries / 2 + n) }
    });
    // One u32 per location, the only array the neighbour loop probes: its
    // remaining degree, GONE once removed, PINNED for a pinned one.
    const GONE: u32 = u32::MAX;
    const PINNED: u32 = u32::MAX - 1;
    let mut deg = vec![PINNED; n];
    for v in 0..n {
        if !pinned[v] {
            deg[v] = (oracle.neighbours(v as u32).len() as u32).min(PINNED - 1);
        }
    }
    let max_deg = deg.iter().copied().filter(|&d| d < PINNED).max().unwrap_or(0) as usize;
    // The bucket queue with lazy deletion: bucket d is a stack of locations that
    // entered degree d, the latest on top; an entry is stale once its location
    // left d (degrees only fall, so a location enters each bucket at most once)
    // or was removed. The live entries of a bucket are exactly the LIFO list of
    // the seed's worklist, in the same order, but a move is one append to the
    // target bucket's hot end instead of unlinking and relinking two random
    // neighbours of a doubly linked list (the cache misses that made the pass
    // grow faster than linearly). Memory: n + (number of decrements) entries.
    let mut buckets: Vec<Vec<u32>> = vec![Vec::new(); max_deg + 1];
    let movable = pinned.iter().filter(|&&p| !p).count();
    for v in (0..n).rev() {
        if !pinned[v] {
            buckets[deg[v] as usize].push(v as u32);
        }
    }
    let mut stack = Vec::with_capacity(movable);
    let mut min_d = 0usize;
    while stack.len() < movable {
        let mut next = None;
        while min_d <= max_deg {
            match buckets[min_d].pop() {
                // GONE and PINNED equal no bucket index.
                Some(v) if deg[v as usize] as usize == min_d => {
                    next = Some(v);
                    break;
                }
                Some(_) => {}
                None => min_d += 1,
            }
        }
        let Some(v) = next else { break };
        deg[v as usize] = GONE;
        stack.push(v);
        if let Some(o) = out.as_mut() {
            o.starts.push(o.lists.len() as u32);
        }
        for &u in oracle.neighbours(v) {
            let ui = u as usize;
            match deg[ui] {
                GONE => continue,
                PINNED => {
                    if let Some(o) = out.as_mut() {
                        o.lists.push(u);
                    }
                    continue;
                }
                _ => {}
            }
            if let Some(o) = out.as_mut() {
                o.lists.push(u);
            }
            let d = deg[ui] as usize - 1;
            deg[ui] = d as u32;
            buckets[d].push(u);
            min_d = min_d.min(d);
        }
    }
    if let Some(o) = out.as_mut() {
        o.starts.push(o.lists.len() as u32);
    }
    (stack, out)
}

/// `--order size`: a stack that pops by decreasing aligned size, then longer
/// total live span, then lower index (the XLA/TFLite greedy-by-size order).
pub fn size_order(pinned: &[bool], sizes: &[u64], spans: &[u64]) -> Vec<u32> {
    // Stack: the back is popped first, so sort ascending by "popped last". The
    // keys are sorted in place (no lookups into `sizes`/`spans` per comparison,
    // which miss the cache at a million locations); `!i` orders ids descending.
    let mut keys: Vec<(u64, u64, u32)> =
        (0..pinned.len()).filter(|&i| !pinned[i]).map(|i| (sizes[i], spans[i], !(i as u32))).collect();
    keys.sort_unstable();
    keys.into_iter().map(|(_, _, k)| !k).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dram::interference::TreeInterference;
    use crate::dram::problem::{LiveInterval, Location, Problem};
    use crate::dram::renumber::renumber_locations;

    fn chain() -> Problem {
        // a-b-c-d a path, plus e overlapping b, c and d: e and c are most constrained.
        let iv = |x, y| vec![LiveInterval::new(x, y)];
        Problem {
            locations: vec![
                Location::new("a", 1, 1, iv(0, 1)),
                Location::new("b", 1, 1, iv(1, 3)),
                Location::new("c", 1, 1, iv(3, 5)),
                Location::new("d", 1, 1, iv(5, 7)),
                Location::new("e", 1, 1, iv(2, 5)),
            ],
            cc_operands: vec![],
        }
    }

    #[test]
    fn simplify_removes_least_constrained_first() {
        let p = chain();
        let r = renumber_locations(&p).expect("renumber");
        let mut t = TreeInterference::new(&r).expect("tree");
        // Dense ids by first def: a0 b1 e2 c3 d4; degrees 1 3 3 3 2. a goes (b:
        // 3->2, on top of bucket 2), b goes (e, c: ->2, c on top), c goes (e, d:
        // ->1, d on top), d goes, e goes.
        let stack = simplify(&[false; 5], &mut t);
        assert_eq!(stack, vec![0, 1, 3, 4, 2]);
        // The hardest (popped first) is e, of the degree-3 core.
        assert_eq!(stack[4], 2);
    }

    #[test]
    fn emitted_lists_are_the_neighbours_placed_earlier() {
        use crate::dram::interference::{Cached, DEFAULT_CACHE_BUDGET, PairScan};
        for seed in 0..100 {
            let (p, _) = crate::dram::generate::random_case(seed);
            let r = renumber_locations(&p).expect("renumber");
            let pinned = r.pinned();
            let tree = TreeInterference::new(&r).expect("tree");
            let mut cached = Cached::new(tree, r.len(), DEFAULT_CACHE_BUDGET);
            let (stack, lists) = simplify_with_lists(&pinned, &mut cached, true);
            let lists = lists.expect("a complete cache gives lists");
            assert_eq!(stack, simplify(&pinned, &mut TreeInterference::new(&r).expect("tree")), "seed {seed}");
            // Expected: every neighbour that is pinned or deeper in the stack (popped earlier), ascending.
            let mut pos = vec![usize::MAX; r.len()];
            for (i, &v) in stack.iter().enumerate() {
                pos[v as usize] = i;
            }
            let mut scan = PairScan::new(&r);
            for (i, &v) in stack.iter().enumerate() {
                let want: Vec<u32> = scan.neighbours(v).iter().copied().filter(|&u| pos[u as usize] > i).collect();
                assert_eq!(lists.list(i), want.as_slice(), "seed {seed} position {i}");
            }
            assert_eq!(lists.starts.len(), stack.len() + 1);
            // Without a complete cache (or unasked) there are none.
            assert!(simplify_with_lists(&pinned, &mut cached, false).1.is_none());
            let (s2, none) = simplify_with_lists(&pinned, &mut TreeInterference::new(&r).expect("tree"), true);
            assert!(none.is_none());
            assert_eq!(s2, stack);
        }
    }

    #[test]
    fn gathered_lists_are_the_stack_positions_lists() {
        use crate::dram::interference::{Cached, DEFAULT_CACHE_BUDGET, StackLists};
        let (p, _) = crate::dram::generate::random_case(3);
        let r = renumber_locations(&p).expect("renumber");
        let mut cached = Cached::new(TreeInterference::new(&r).expect("tree"), r.len(), DEFAULT_CACHE_BUDGET);
        let stack: Vec<u32> = (0..r.len() as u32).rev().collect();
        let (starts, lists) = cached.csr().expect("complete");
        let g = StackLists::gather(&stack, starts, lists).expect("in bounds");
        for (i, &v) in stack.iter().enumerate() {
            assert_eq!(g.list(i), cached.neighbours(v).to_vec().as_slice());
        }
        assert_eq!(g.list(stack.len()), &[] as &[u32]);
        // An id outside the CSR is refused, not read.
        let (starts, lists) = cached.csr().expect("complete");
        assert!(StackLists::gather(&[r.len() as u32], starts, lists).is_none());
    }

    #[test]
    fn pinned_locations_are_not_in_the_stack() {
        let p = chain();
        let r = renumber_locations(&p).expect("renumber");
        let mut t = TreeInterference::new(&r).expect("tree");
        let stack = simplify(&[false, true, false, false, true], &mut t);
        assert_eq!(stack.len(), 3);
        assert!(!stack.contains(&1) && !stack.contains(&4));
    }

    #[test]
    fn size_order_pops_largest_first() {
        let s = size_order(&[false, false, true, false], &[10, 30, 99, 30], &[5, 1, 1, 2]);
        let popped: Vec<u32> = s.iter().rev().copied().collect();
        assert_eq!(popped, vec![3, 1, 0]);
    }
}
