//! The assignment orders: the seed's `simplify` elimination stack and the
//! decreasing-size order of `--order size`.
//!
//! Both return a *stack*: select_impl pops it back-to-front (seed, "The
//! simplify elimination order": "select_impl pops the stack back-to-front").

use super::interference::Interference;
use super::interval_tree::NONE;

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
pub fn simplify(pinned: &[bool], oracle: &mut impl Interference) -> Vec<u32> {
    let n = pinned.len();
    let mut deg = vec![0u32; n];
    for v in 0..n {
        if !pinned[v] {
            deg[v] = oracle.neighbours(v as u32).len() as u32;
        }
    }
    let max_deg = deg.iter().copied().max().unwrap_or(0) as usize;
    let mut head = vec![NONE; max_deg + 1];
    let mut next = vec![NONE; n];
    let mut prev = vec![NONE; n];
    let push = |head: &mut [u32], next: &mut [u32], prev: &mut [u32], d: usize, v: u32| {
        let h = head[d];
        next[v as usize] = h;
        prev[v as usize] = NONE;
        if h != NONE {
            prev[h as usize] = v;
        }
        head[d] = v;
    };
    let unlink = |head: &mut [u32], next: &mut [u32], prev: &mut [u32], d: usize, v: u32| {
        let (p, x) = (prev[v as usize], next[v as usize]);
        if p != NONE {
            next[p as usize] = x;
        } else {
            head[d] = x;
        }
        if x != NONE {
            prev[x as usize] = p;
        }
    };
    let movable = pinned.iter().filter(|&&p| !p).count();
    for v in (0..n).rev() {
        if !pinned[v] {
            push(&mut head, &mut next, &mut prev, deg[v] as usize, v as u32);
        }
    }
    let mut removed = vec![false; n];
    let mut stack = Vec::with_capacity(movable);
    let mut min_d = 0usize;
    while stack.len() < movable {
        while min_d <= max_deg && head[min_d] == NONE {
            min_d += 1;
        }
        let Some(&v) = head.get(min_d) else { break };
        unlink(&mut head, &mut next, &mut prev, min_d, v);
        removed[v as usize] = true;
        stack.push(v);
        for &u in oracle.neighbours(v) {
            let ui = u as usize;
            if pinned[ui] || removed[ui] {
                continue;
            }
            let d = deg[ui] as usize;
            unlink(&mut head, &mut next, &mut prev, d, u);
            deg[ui] -= 1;
            push(&mut head, &mut next, &mut prev, d - 1, u);
            min_d = min_d.min(d - 1);
        }
    }
    stack
}

/// `--order size`: a stack that pops by decreasing aligned size, then longer
/// total live span, then lower index (the XLA/TFLite greedy-by-size order).
pub fn size_order(pinned: &[bool], sizes: &[u64], spans: &[u64]) -> Vec<u32> {
    let mut v: Vec<u32> = (0..pinned.len() as u32).filter(|&i| !pinned[i as usize]).collect();
    // Stack: the back is popped first, so sort ascending by "popped last".
    v.sort_unstable_by(|&a, &b| {
        let (a_, b_) = (a as usize, b as usize);
        (sizes[a_], spans[a_], std::cmp::Reverse(a)).cmp(&(sizes[b_], spans[b_], std::cmp::Reverse(b)))
    });
    v
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
