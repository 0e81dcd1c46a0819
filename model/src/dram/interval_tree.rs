//! The seed's `IntervalTree` (seed 004, "The IntervalTree"): a static, perfectly
//! balanced, array-indexed BST over `IntervalTreeNode {hi, lo, max, payload,
//! left, right}`, built once by `make_tree` (midpoint partition), augmented by
//! `make_max` (post-order subtree max of `hi`), and queried by `overlaps` /
//! `overlaps_with`: an iterative DFS over an explicit stack that prunes a
//! subtree when `q.lo > node.max` and collects `node.payload` when
//! `node.lo <= q.hi && q.lo <= node.hi` (inclusive intervals). No rebalancing.
//!
//! Layout choice. The seed keys the tree by array index and lays the nodes out
//! in emission order; with only the max pruning a query then visits every node
//! whose subtree reaches `q.lo`, which is O(n) per query. [`IntervalTree::new`]
//! lays the nodes out sorted by `(lo, payload, hi)` first, so the array-index BST
//! is also a BST on `lo` and the DFS may add the second CLRS pruning (nothing
//! right of a node with `node.lo > q.hi` can overlap): O(k + log n) per query,
//! same shape, same answers. The DFS is in-order, so answers come in node order
//! (for one-interval locations renumbered by first def, ascending payload). [`IntervalTree::new_in_order`] keeps the seed's emission layout
//! (max pruning only), and the tests check both against a brute-force scan.
//! `make_tree` and `make_max` are iterative (the depth is only log2 n, but no
//! input size can reach the stack).
//!
//! For a batch of queries sorted by `lo`, [`Sweep`] answers the same questions
//! (same order) by one left-to-right pass over the sorted node array with an
//! active set: O(n + q + K) and sequential in memory, where a walk per query
//! re-descends from the root and, at a million nodes, misses the cache.

/// A flat instruction index (seed: `inst[+76]`, 32 bits, so a node is 24 bytes).
pub type FlatTime = u32;

/// "No child" (the seed's -1).
pub const NONE: u32 = u32::MAX;

/// One node: an inclusive interval `[lo, hi]`, its subtree max, payload and children.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IntervalTreeNode {
    /// The interval's upper end (use flat index), inclusive.
    pub hi: FlatTime,
    /// The interval's lower end (def flat index).
    pub lo: FlatTime,
    /// The max `hi` of this node's subtree (set by `make_max`).
    pub max: FlatTime,
    /// The Info index of the location the interval belongs to.
    pub payload: u32,
    /// Left child index or [`NONE`].
    pub left: u32,
    /// Right child index or [`NONE`].
    pub right: u32,
}

/// Why a tree could not be built or queried.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TreeError {
    /// An interval with `lo > hi`.
    #[error("interval [{lo}, {hi}] has lo > hi")]
    Inverted {
        /// Its lower end.
        lo: FlatTime,
        /// Its upper end.
        hi: FlatTime,
    },
    /// More nodes than 32-bit indices hold.
    #[error("too many intervals ({0}) for 32-bit node indices")]
    TooMany(usize),
    /// A query index outside the node array (seed: interval_tree.cpp:63).
    #[error("query index {0} is outside the tree")]
    BadIndex(usize),
}

/// The static interval tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IntervalTree {
    nodes: Vec<IntervalTreeNode>,
    root: u32,
    sorted_by_lo: bool,
}

impl IntervalTree {
    /// Builds the tree over `(lo, hi, payload)` triples laid out sorted by `(lo, payload, hi)`.
    pub fn new(intervals: impl IntoIterator<Item = (FlatTime, FlatTime, u32)>) -> Result<Self, TreeError> {
        let mut v: Vec<(FlatTime, FlatTime, u32)> = intervals.into_iter().collect();
        v.sort_unstable_by_key(|&(lo, hi, payload)| (lo, payload, hi));
        Self::build(v, true)
    }

    /// Builds the tree in the given (seed emission) order: only the max pruning applies.
    pub fn new_in_order(intervals: impl IntoIterator<Item = (FlatTime, FlatTime, u32)>) -> Result<Self, TreeError> {
        Self::build(intervals.into_iter().collect(), false)
    }

    fn build(v: Vec<(FlatTime, FlatTime, u32)>, sorted_by_lo: bool) -> Result<Self, TreeError> {
        if v.len() >= NONE as usize {
            return Err(TreeError::TooMany(v.len()));
        }
        let mut nodes = Vec::with_capacity(v.len());
        for (lo, hi, payload) in v {
            if lo > hi {
                return Err(TreeError::Inverted { lo, hi });
            }
            // Seed STEP D: IntervalTreeNode{ hi, lo, lo, useIdx, -1, -1 }.
            nodes.push(IntervalTreeNode { hi, lo, max: lo, payload, left: NONE, right: NONE });
        }
        let mut t = IntervalTree { nodes, root: NONE, sorted_by_lo };
        let n = t.nodes.len();
        t.root = t.make_tree(0, n);
        t.make_max(t.root);
        Ok(t)
    }

    /// `makeTree(lo, hi)` over the half-open index range: `mid = (lo+hi)/2`,
    /// `left = makeTree(lo, mid)`, `right = makeTree(mid+1, hi)`; returns `mid`
    /// or [`NONE`] for an empty range. Iterative; the shape equals the recursion's.
    pub fn make_tree(&mut self, lo: usize, hi: usize) -> u32 {
        let hi = hi.min(self.nodes.len());
        if lo >= hi {
            return NONE;
        }
        let root = lo + (hi - lo) / 2;
        let mut stack = vec![(lo, hi)];
        while let Some((l, h)) = stack.pop() {
            let mid = l + (h - l) / 2;
            let node = &mut self.nodes[mid];
            node.left = if l < mid { (l + (mid - l) / 2) as u32 } else { NONE };
            node.right = if mid + 1 < h { (mid + 1 + (h - mid - 1) / 2) as u32 } else { NONE };
            if l < mid {
                stack.push((l, mid));
            }
            if mid + 1 < h {
                stack.push((mid + 1, h));
            }
        }
        root as u32
    }

    /// `makeMax(idx)`: CLRS post-order `node.max = max(node.hi, left.max, right.max)`;
    /// returns the subtree max (0 for [`NONE`]). Iterative post-order.
    pub fn make_max(&mut self, idx: u32) -> FlatTime {
        if idx == NONE {
            return 0;
        }
        // Two-stack post-order: `order` ends up parents-before-children; walk it backwards.
        let mut order = Vec::new();
        let mut stack = vec![idx];
        while let Some(i) = stack.pop() {
            order.push(i);
            let n = self.nodes[i as usize];
            for c in [n.left, n.right] {
                if c != NONE {
                    stack.push(c);
                }
            }
        }
        for &i in order.iter().rev() {
            let n = self.nodes[i as usize];
            let mut m = n.hi;
            for c in [n.left, n.right] {
                if c != NONE {
                    m = m.max(self.nodes[c as usize].max);
                }
            }
            self.nodes[i as usize].max = m;
        }
        self.nodes[idx as usize].max
    }

    /// The node array (in-order = array order).
    pub fn nodes(&self) -> &[IntervalTreeNode] {
        &self.nodes
    }

    /// The root index, or [`NONE`] for an empty tree.
    pub fn root(&self) -> u32 {
        self.root
    }

    /// Number of intervals.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the tree holds no interval.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// `getAllOverlaps(qIdx)`: payloads of every node overlapping node `q_idx` (itself included).
    pub fn overlaps(&self, q_idx: usize) -> Result<Vec<u32>, TreeError> {
        let q = self.nodes.get(q_idx).ok_or(TreeError::BadIndex(q_idx))?;
        Ok(self.overlaps_with(q.lo, q.hi))
    }

    /// `getAllOverlapsWithInterval(lo, hi)`: payloads of every node overlapping `[lo, hi]`.
    pub fn overlaps_with(&self, lo: FlatTime, hi: FlatTime) -> Vec<u32> {
        let mut out = Vec::new();
        let mut stack = Vec::new();
        self.for_each_overlap(lo, hi, &mut stack, |i| out.push(self.nodes[i as usize].payload));
        out
    }

    /// The DFS itself: calls `f(node index)` for every node overlapping `[lo, hi]`,
    /// in ascending node index (an in-order DFS over the explicit stack).
    ///
    /// A subtree is not entered when `lo > node.max` (the seed's pruning). In
    /// the sorted layout every node after one with `node.lo > hi` starts later
    /// still, so the walk stops there (the CLRS right-subtree pruning, in
    /// in-order form). `stack` is scratch space (cleared first).
    pub fn for_each_overlap(&self, lo: FlatTime, hi: FlatTime, stack: &mut Vec<u32>, mut f: impl FnMut(u32)) {
        stack.clear();
        let mut cur = self.root;
        loop {
            while cur != NONE {
                let n = &self.nodes[cur as usize];
                if lo > n.max {
                    break; // the augmentation's purpose: nothing below reaches q.lo
                }
                stack.push(cur);
                cur = n.left;
            }
            let Some(i) = stack.pop() else { return };
            let n = &self.nodes[i as usize];
            if n.lo > hi && self.sorted_by_lo {
                return;
            }
            if n.lo <= hi && lo <= n.hi {
                f(i);
            }
            cur = n.right;
        }
    }
}

/// Overlap queries answered by a sweep over the `lo`-sorted node array
/// instead of tree walks ([`IntervalTree::sweep`]): for queries given in
/// ascending `lo` it keeps the nodes that started before the query and are
/// still live (the active set, in node order), and scans forward over the
/// nodes starting inside the query. Each node enters and leaves the active set
/// once and every node it looks at overlaps (or leaves), so a batch of q
/// sorted queries costs O(n + q + K) for K answers, all of it sequential in
/// memory: no per-query descent from the root. A query with a smaller `lo`
/// than the one before restarts the sweep from the first node (still correct).
#[derive(Debug, Clone)]
pub struct Sweep<'t> {
    nodes: &'t [IntervalTreeNode],
    next: usize,
    last_lo: FlatTime,
    active: Vec<(FlatTime, u32)>,
}

impl Sweep<'_> {
    /// Calls `f(node index)` for every node overlapping `[lo, hi]`, in
    /// ascending node index (the order [`IntervalTree::for_each_overlap`] uses).
    pub fn for_each_overlap(&mut self, lo: FlatTime, hi: FlatTime, mut f: impl FnMut(u32)) {
        if lo < self.last_lo {
            self.next = 0;
            self.active.clear();
        }
        self.last_lo = lo;
        while let Some(n) = self.nodes.get(self.next)
            && n.lo < lo
        {
            if n.hi >= lo {
                self.active.push((n.hi, self.next as u32));
            }
            self.next += 1;
        }
        // Every kept entry started before `lo` and ends at or after it: it overlaps.
        self.active.retain(|&(end, i)| {
            let live = end >= lo;
            if live {
                f(i);
            }
            live
        });
        // Every node from `next` on starts at or after `lo`; those up to `hi` overlap.
        let mut j = self.next;
        while let Some(n) = self.nodes.get(j)
            && n.lo <= hi
        {
            f(j as u32);
            j += 1;
        }
    }
}

impl IntervalTree {
    /// A [`Sweep`] over this tree's nodes, if they are laid out sorted by `lo`
    /// ([`IntervalTree::new`]); `None` for the seed layout ([`IntervalTree::new_in_order`]).
    pub fn sweep(&self) -> Option<Sweep<'_>> {
        self.sorted_by_lo.then(|| Sweep { nodes: &self.nodes, next: 0, last_lo: 0, active: Vec::new() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn brute(t: &IntervalTree, lo: FlatTime, hi: FlatTime) -> Vec<usize> {
        let mut v: Vec<usize> = (0..t.len())
            .filter(|&i| {
                let n = t.nodes()[i];
                n.lo <= hi && lo <= n.hi
            })
            .collect();
        v.sort_unstable();
        v
    }

    fn via_tree(t: &IntervalTree, lo: FlatTime, hi: FlatTime) -> Vec<usize> {
        let mut v = Vec::new();
        t.for_each_overlap(lo, hi, &mut Vec::new(), |i| v.push(i as usize));
        v.sort_unstable();
        v
    }

    #[test]
    fn shape_is_the_midpoint_recursion() {
        let t = IntervalTree::new_in_order((0..7u32).map(|i| (i, i, i))).expect("tree");
        assert_eq!(t.root(), 3);
        let n = t.nodes();
        assert_eq!((n[3].left, n[3].right), (1, 5));
        assert_eq!((n[1].left, n[1].right), (0, 2));
        assert_eq!((n[5].left, n[5].right), (4, 6));
        assert_eq!((n[0].left, n[0].right), (NONE, NONE));
        assert_eq!(n[3].max, 6);
        assert_eq!(n[1].max, 2);
        // Even count: [0,4) -> mid 2, left [0,2) -> 1, right [3,4) -> 3.
        let t = IntervalTree::new_in_order((0..4).map(|i| (i, i, 0))).expect("tree");
        assert_eq!(t.root(), 2);
        assert_eq!((t.nodes()[2].left, t.nodes()[2].right), (1, 3));
        assert_eq!((t.nodes()[1].left, t.nodes()[1].right), (0, NONE));
    }

    #[test]
    fn empty_tree_and_bad_inputs() {
        let t = IntervalTree::new(std::iter::empty()).expect("tree");
        assert!(t.is_empty());
        assert!(t.overlaps_with(0, 100).is_empty());
        assert_eq!(t.overlaps(0), Err(TreeError::BadIndex(0)));
        assert_eq!(IntervalTree::new([(5, 4, 0)]), Err(TreeError::Inverted { lo: 5, hi: 4 }));
    }

    #[test]
    fn inclusive_ends_touch() {
        let t = IntervalTree::new([(0, 3, 0), (4, 9, 1), (3, 3, 2)]).expect("tree");
        let mut p = t.overlaps_with(3, 3);
        p.sort_unstable();
        assert_eq!(p, vec![0, 2]);
        let mut p = t.overlaps_with(4, 4);
        p.sort_unstable();
        assert_eq!(p, vec![1]);
        let q = t.nodes().iter().position(|n| n.payload == 2).expect("node");
        let mut p = t.overlaps(q).expect("query");
        p.sort_unstable();
        assert_eq!(p, vec![0, 2]);
    }

    #[test]
    fn a_million_nodes_build_without_recursion() {
        let t = IntervalTree::new((0..1_000_000u32).map(|i| (i, i + 3, i))).expect("tree");
        assert_eq!(t.len(), 1_000_000);
        let mut p = t.overlaps_with(500_000, 500_000);
        p.sort_unstable();
        assert_eq!(p, vec![499_997, 499_998, 499_999, 500_000]);
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, rng_seed: proptest::test_runner::RngSeed::Fixed(4), ..ProptestConfig::default() })]
        #[test]
        fn overlaps_equal_a_brute_force_scan(
            raw in prop::collection::vec((0u32..200, 0u32..40), 0..120),
            queries in prop::collection::vec((0u32..240, 0u32..60), 1..20),
        ) {
            let ivs: Vec<(FlatTime, FlatTime, u32)> =
                raw.iter().enumerate().map(|(i, &(lo, len))| (lo, lo + len, i as u32)).collect();
            let sorted = IntervalTree::new(ivs.iter().copied()).expect("tree");
            let seed = IntervalTree::new_in_order(ivs.iter().copied()).expect("tree");
            for &(lo, len) in &queries {
                let hi = lo + len;
                prop_assert_eq!(via_tree(&sorted, lo, hi), brute(&sorted, lo, hi));
                prop_assert_eq!(via_tree(&seed, lo, hi), brute(&seed, lo, hi));
            }
            prop_assert!(seed.sweep().is_none());
            // The sweep: queries in ascending lo, then the same queries unsorted (restarts).
            let mut sorted_q: Vec<(FlatTime, FlatTime)> = queries.iter().map(|&(lo, len)| (lo, lo + len)).collect();
            sorted_q.sort_unstable();
            let unsorted_q: Vec<(FlatTime, FlatTime)> = queries.iter().map(|&(lo, len)| (lo, lo + len)).collect();
            for batch in [&sorted_q, &unsorted_q] {
                let mut sw = sorted.sweep().expect("sorted layout");
                for &(lo, hi) in batch {
                    let mut got = Vec::new();
                    sw.for_each_overlap(lo, hi, |i| got.push(i as usize));
                    prop_assert!(got.is_sorted(), "sweep answers in node order");
                    prop_assert_eq!(got, brute(&sorted, lo, hi));
                }
            }
            for q in 0..sorted.len() {
                let mut got = sorted.overlaps(q).expect("query");
                got.sort_unstable();
                let n = sorted.nodes()[q];
                let mut want: Vec<u32> = ivs.iter()
                    .filter(|&&(lo, hi, _)| lo <= n.hi && n.lo <= hi)
                    .map(|&(_, _, p)| p).collect();
                want.sort_unstable();
                prop_assert_eq!(got, want);
            }
        }
    }
}
