//! The interference oracle: which locations are live at the same time as `v`?
//!
//! The seed answers it with an interval-tree query (`getAllOverlaps`) per
//! interval of `v` ([`TreeInterference`], built by [`build_interval_tree`]).
//! [`PairScan`] answers it by scanning every other location: the naive
//! allocator the benchmark compares against. Both return the same sorted,
//! distinct list, so simplify and select_impl produce identical placements with
//! either (the benchmark checks that).
//!
//! [`Cached`] asks an oracle for every location's list once and keeps them
//! (the seed's simplify keeps a "neighbor unordered_map" too): the degree
//! pass, simplify's neighbour re-scan and select_impl's occupied list then
//! read them instead of walking the tree three times, twice in an order with
//! no locality. The tree oracle builds all the lists by sweeps in time order
//! over its sorted node array ([`IntervalTree::sweep`]), not by a tree walk
//! per interval: at a million intervals the walks' random node and stamp
//! probes missed the cache. The lists cost 4 bytes per neighbour; past a
//! budget the cache gives up and forwards every call to the oracle (same answers).

use super::error::AllocError;
use super::interval_tree::{FlatTime, IntervalTree, TreeError};
use super::renumber::{FlatInterval, Renumbered};

/// An interference oracle over a fixed problem.
pub trait Interference {
    /// Every location `u != v` with an interval intersecting one of `v`'s,
    /// ascending and without duplicates (valid until the next call).
    fn neighbours(&mut self, v: u32) -> &[u32];

    /// The lists of locations `0..n` as CSR (`starts` of `n + 1` offsets into
    /// `lists`), or `None` when they hold more than `budget` entries (nothing
    /// larger than the budget is allocated for them). The default asks
    /// [`Interference::neighbours`] in id order; an oracle may batch its queries.
    fn all_neighbours(&mut self, n: usize, budget: usize) -> Option<(Vec<u32>, Vec<u32>)> {
        lists_by_queries(self, n, budget)
    }

    /// Every list at once as CSR (`starts`, `lists`), when the oracle holds them
    /// (a complete [`Cached`]); `None` otherwise (the default).
    fn csr(&self) -> Option<(&[u32], &[u32])> {
        None
    }
}

/// The default [`Interference::all_neighbours`]: one query per location, in id order.
fn lists_by_queries<O: Interference + ?Sized>(o: &mut O, n: usize, budget: usize) -> Option<(Vec<u32>, Vec<u32>)> {
    let budget = budget.min(u32::MAX as usize);
    let mut starts = Vec::with_capacity(n + 1);
    let mut lists = Vec::new();
    for v in 0..n {
        let nb = o.neighbours(v as u32);
        if lists.len() + nb.len() > budget {
            return None;
        }
        starts.push(lists.len() as u32);
        lists.extend_from_slice(nb);
        presize(&mut lists, v, n, budget);
    }
    starts.push(lists.len() as u32);
    Some((starts, lists))
}

/// After the first 1024 of `n` lists, reserve room for all of them at the same
/// mean length (within `budget`): saves the copies of doubling a big Vec.
fn presize(lists: &mut Vec<u32>, v: usize, n: usize, budget: usize) {
    if v == 1023 && n > 4096 {
        let want = (lists.len() / 1024).saturating_mul(n + n / 8).min(budget);
        lists.reserve(want.saturating_sub(lists.len()));
    }
}

/// `build_interval_tree` (seed STEP D/E): one node per `[def, use]` interval of
/// every location, payload = the location's dense Info id.
pub fn build_interval_tree(r: &Renumbered) -> Result<IntervalTree, AllocError> {
    let n = r.len();
    if n >= u32::MAX as usize {
        return Err(AllocError::TooMany { count: n });
    }
    let triples = (0..n).flat_map(|i| r.intervals_of(i).iter().map(move |iv| (iv.def, iv.last_use, i as u32)));
    IntervalTree::new(triples).map_err(|e| match e {
        TreeError::TooMany(count) => AllocError::TooMany { count },
        // Validation rejects inverted intervals and bad indices before we get here.
        TreeError::Inverted { lo, hi } => {
            AllocError::BadInterval { name: String::from("?"), def: u64::from(lo), last_use: u64::from(hi) }
        }
        TreeError::BadIndex(count) => AllocError::TooMany { count },
    })
}

/// Interference by interval-tree queries: O(k log n + k log k) per location
/// (k payloads found; the sort de-duplicates them without an id-indexed
/// stamp array, whose probes at random payloads miss the cache at 1M).
#[derive(Debug)]
pub struct TreeInterference<'a> {
    tree: IntervalTree,
    r: &'a Renumbered,
    stack: Vec<u32>,
    out: Vec<u32>,
}

impl<'a> TreeInterference<'a> {
    /// Builds the tree for the renumbered problem.
    pub fn new(r: &'a Renumbered) -> Result<Self, AllocError> {
        Ok(TreeInterference { tree: build_interval_tree(r)?, r, stack: Vec::new(), out: Vec::new() })
    }

    /// The interval tree.
    pub fn tree(&self) -> &IntervalTree {
        &self.tree
    }
}

impl TreeInterference<'_> {
    /// Appends the payload of every node overlapping `[lo, hi]` to `out`.
    fn collect(&mut self, lo: FlatTime, hi: FlatTime, out: &mut Vec<u32>) {
        let nodes = self.tree.nodes();
        self.tree.for_each_overlap(lo, hi, &mut self.stack, |i| out.push(nodes[i as usize].payload));
    }
}

/// Sorts `list`, drops duplicates and `v` itself: the oracle's answer form.
fn normalise(list: &mut Vec<u32>, v: u32) {
    // In-order answers are often sorted already (one-interval locations).
    if !list.is_sorted() {
        list.sort_unstable();
    }
    list.dedup();
    if let Ok(i) = list.binary_search(&v) {
        list.remove(i);
    }
}

/// The index of `v`'s interval with the earliest def (the one its dense id is ordered by).
fn primary(ivs: &[FlatInterval]) -> Option<usize> {
    (0..ivs.len()).min_by_key(|&k| ivs[k].def)
}

impl Interference for TreeInterference<'_> {
    fn neighbours(&mut self, v: u32) -> &[u32] {
        let mut out = std::mem::take(&mut self.out);
        out.clear();
        if (v as usize) < self.r.len() {
            for iv in self.r.intervals_of(v as usize) {
                self.collect(iv.def, iv.last_use, &mut out);
            }
            normalise(&mut out, v);
        }
        self.out = out;
        &self.out
    }

    /// Every list by two sweeps in time order ([`IntervalTree::sweep`]) instead
    /// of a tree walk per interval; see [`sweep_lists`].
    fn all_neighbours(&mut self, n: usize, budget: usize) -> Option<(Vec<u32>, Vec<u32>)> {
        match sweep_lists(&self.tree, self.r, n, budget) {
            Swept::Done(lists) => lists,
            Swept::Fallback => lists_by_queries(self, n, budget),
        }
    }
}

/// What [`sweep_lists`] found.
enum Swept {
    /// The lists, or `None` past the budget.
    Done(Option<(Vec<u32>, Vec<u32>)>),
    /// The sweep cannot decide (seed tree layout, or side lists past the budget): query one by one.
    Fallback,
}

/// Every location's neighbour list, in dense-id order, by sweeps.
///
/// Dense ids follow each location's earliest def, so the locations' earliest
/// ("primary") intervals in id order are a batch sorted by `lo`: one sweep
/// answers them. The other intervals (random times) are sorted by def and
/// swept first, into side lists merged in as their location comes up. The
/// tree's in-order node order is `(lo, payload)`, so the primary nodes'
/// payloads come out ascending: only the few other payloads need a sort before
/// a merge (an answer out of order goes to the sorted part, so the flags are
/// a speed-up, never a correctness assumption).
///
/// Cost: O(n + m log m + K) time for n intervals, m of them non-primary and K
/// answers (plus a sort of each list's non-primary part); memory: one flag per
/// node, the side lists (at most `budget` entries, else [`Swept::Fallback`])
/// and the lists (at most `budget` entries, else `None`). Every access to the
/// node array is sequential.
fn sweep_lists(tree: &IntervalTree, r: &Renumbered, n: usize, budget: usize) -> Swept {
    let budget = budget.min(u32::MAX as usize);
    let (Some(mut main), Some(mut aside)) = (tree.sweep(), tree.sweep()) else { return Swept::Fallback };
    let nodes = tree.nodes();
    let n_here = n.min(r.len());
    // Flag each location's primary node: they come in dense-id order along the nodes.
    let mut is_primary = vec![false; nodes.len()];
    let mut at = 0usize;
    // Non-primary intervals (lo, hi, owner, position in owner order).
    let mut extra: Vec<(FlatTime, FlatTime, u32, u32)> = Vec::new();
    let mut extra_start = Vec::with_capacity(n_here + 1);
    for v in 0..n_here {
        extra_start.push(extra.len());
        let ivs = r.intervals_of(v);
        let p = primary(ivs);
        for (k, iv) in ivs.iter().enumerate() {
            if Some(k) == p {
                let key = (iv.def, v as u32, iv.last_use);
                while nodes.get(at).is_some_and(|x| (x.lo, x.payload, x.hi) < key) {
                    at += 1;
                }
                if nodes.get(at).is_some_and(|x| (x.lo, x.payload, x.hi) == key) {
                    is_primary[at] = true;
                    at += 1;
                }
            } else {
                extra.push((iv.def, iv.last_use, v as u32, extra.len() as u32));
            }
        }
    }
    extra_start.push(extra.len());
    extra.sort_unstable();
    // Side lists in def order; slot[position in owner order] = def-order index.
    let mut slot = vec![0u32; extra.len()];
    let mut side_starts = Vec::with_capacity(extra.len() + 1);
    let mut side: Vec<u32> = Vec::new();
    for (j, &(lo, hi, owner, pos)) in extra.iter().enumerate() {
        slot[pos as usize] = j as u32;
        side_starts.push(side.len());
        aside.for_each_overlap(lo, hi, |i| {
            let u = nodes[i as usize].payload;
            if u != owner {
                side.push(u);
            }
        });
        if side.len() > budget {
            return Swept::Fallback;
        }
    }
    side_starts.push(side.len());
    drop(extra);
    let mut starts = Vec::with_capacity(n + 1);
    let mut lists: Vec<u32> = Vec::new();
    let (mut ordered, mut rest) = (Vec::new(), Vec::new());
    for v in 0..n {
        starts.push(lists.len() as u32);
        if v >= n_here {
            continue;
        }
        ordered.clear();
        rest.clear();
        let ivs = r.intervals_of(v);
        if let Some(p) = primary(ivs) {
            let me = v as u32;
            main.for_each_overlap(ivs[p].def, ivs[p].last_use, |i| {
                let u = nodes[i as usize].payload;
                if u == me {
                    return;
                }
                if is_primary[i as usize] && ordered.last().is_none_or(|&l| l < u) {
                    ordered.push(u);
                } else {
                    rest.push(u);
                }
            });
        }
        for &j in &slot[extra_start[v]..extra_start[v + 1]] {
            rest.extend_from_slice(&side[side_starts[j as usize]..side_starts[j as usize + 1]]);
        }
        merge_into(&mut lists, &ordered, &mut rest);
        if lists.len() > budget {
            return Swept::Done(None);
        }
        presize(&mut lists, v, n, budget);
    }
    starts.push(lists.len() as u32);
    Swept::Done(Some((starts, lists)))
}

/// Appends the ascending union of `ordered` (ascending, distinct) and `rest`
/// (any order; sorted here) to `out`, without duplicates.
fn merge_into(out: &mut Vec<u32>, ordered: &[u32], rest: &mut [u32]) {
    if rest.is_empty() {
        out.extend_from_slice(ordered);
        return;
    }
    rest.sort_unstable();
    let (mut i, mut j) = (0, 0);
    let mut last = None;
    while i < ordered.len() || j < rest.len() {
        let x = match (ordered.get(i), rest.get(j)) {
            (Some(&a), Some(&b)) if a <= b => {
                i += 1;
                a
            }
            (Some(&a), None) => {
                i += 1;
                a
            }
            (_, Some(&b)) => {
                j += 1;
                b
            }
            (None, None) => break,
        };
        if last != Some(x) {
            out.push(x);
            last = Some(x);
        }
    }
}

/// Interference by scanning every pair: O(n) per location, O(n^2) overall.
#[derive(Debug)]
pub struct PairScan<'a> {
    r: &'a Renumbered,
    out: Vec<u32>,
}

impl<'a> PairScan<'a> {
    /// The naive oracle for the renumbered problem.
    pub fn new(r: &'a Renumbered) -> Self {
        PairScan { r, out: Vec::new() }
    }
}

fn any_intersect(a: &[FlatInterval], b: &[FlatInterval]) -> bool {
    a.iter().any(|x| b.iter().any(|y| x.def <= y.last_use && y.def <= x.last_use))
}

impl Interference for PairScan<'_> {
    fn neighbours(&mut self, v: u32) -> &[u32] {
        self.out.clear();
        if v as usize >= self.r.len() {
            return &self.out;
        }
        let me = self.r.intervals_of(v as usize);
        for u in 0..self.r.len() {
            if u != v as usize && any_intersect(me, self.r.intervals_of(u)) {
                self.out.push(u as u32);
            }
        }
        &self.out
    }
}

/// Neighbour lists by *stack position*: list `i` holds every neighbour of
/// `stack[i]` that select_impl places before it (pinned ones, and those deeper
/// in the stack, which is popped back first), and possibly others (select_impl
/// skips any neighbour not placed yet). CSR: `starts` has one offset per
/// position plus one. Built by simplify as it removes each node (it reads the
/// node's list then anyway) or by [`StackLists::gather`]; select_impl reads it
/// back to front, sequentially, instead of probing the dense-id CSR at
/// random positions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StackLists {
    /// `starts[i]..starts[i + 1]` is list `i`.
    pub starts: Vec<u32>,
    /// The lists, end to end.
    pub lists: Vec<u32>,
}

impl StackLists {
    /// List `i`, or empty if out of bounds.
    pub fn list(&self, i: usize) -> &[u32] {
        match (self.starts.get(i), self.starts.get(i + 1)) {
            (Some(&a), Some(&b)) => self.lists.get(a as usize..b as usize).unwrap_or(&[]),
            _ => &[],
        }
    }

    /// The lists of `stack` copied from the dense-id CSR `starts`/`lists`
    /// (whole lists: filtering them would probe a per-location array at
    /// random, as select_impl's own reads do); `None` if an id or offset is
    /// out of bounds. One pass over the stack: O(n + lists), its reads of
    /// whole lists independent of one another.
    pub fn gather(stack: &[u32], starts: &[u32], lists: &[u32]) -> Option<StackLists> {
        let mut out =
            StackLists { starts: Vec::with_capacity(stack.len() + 1), lists: Vec::with_capacity(lists.len()) };
        for &v in stack {
            let (a, b) = (*starts.get(v as usize)?, *starts.get(v as usize + 1)?);
            out.starts.push(u32::try_from(out.lists.len()).ok()?);
            out.lists.extend_from_slice(lists.get(a as usize..b as usize)?);
        }
        out.starts.push(u32::try_from(out.lists.len()).ok()?);
        Some(out)
    }
}

/// Default budget of [`Cached`]: 64 Mi neighbour entries (256 MiB).
pub const DEFAULT_CACHE_BUDGET: usize = 64 << 20;

/// An oracle's answers for every location, computed once (CSR), within a budget.
#[derive(Debug)]
pub struct Cached<O> {
    inner: O,
    starts: Vec<u32>,
    lists: Vec<u32>,
    complete: bool,
}

impl<O: Interference> Cached<O> {
    /// Asks `inner` about locations `0..n` ([`Interference::all_neighbours`]),
    /// keeping at most `budget` entries (and at most `u32::MAX`).
    pub fn new(mut inner: O, n: usize, budget: usize) -> Self {
        match inner.all_neighbours(n, budget) {
            Some((starts, lists)) => Cached { inner, starts, lists, complete: true },
            None => {
                crate::marks::hit("dram.neighbour_cache_over_budget");
                Cached { inner, starts: Vec::new(), lists: Vec::new(), complete: false }
            }
        }
    }

    /// Whether every list is cached (false: over budget, calls are forwarded).
    pub fn is_complete(&self) -> bool {
        self.complete
    }
}

impl<O: Interference> Interference for Cached<O> {
    fn neighbours(&mut self, v: u32) -> &[u32] {
        if !self.complete {
            return self.inner.neighbours(v);
        }
        let v = v as usize;
        match (self.starts.get(v), self.starts.get(v + 1)) {
            (Some(&a), Some(&b)) => &self.lists[a as usize..b as usize],
            _ => &[],
        }
    }

    fn csr(&self) -> Option<(&[u32], &[u32])> {
        self.complete.then_some((self.starts.as_slice(), self.lists.as_slice()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dram::problem::{LiveInterval, Location, Problem};
    use crate::dram::renumber::renumber_locations;

    #[test]
    fn tree_and_pair_scan_agree_on_multi_interval_locations() {
        let iv = |a, b| LiveInterval::new(a, b);
        let p = Problem {
            locations: vec![
                Location::new("a", 1, 1, vec![iv(0, 2), iv(10, 12)]),
                Location::new("b", 1, 1, vec![iv(3, 9)]),
                Location::new("c", 1, 1, vec![iv(12, 20)]),
                Location::new("d", 1, 1, vec![iv(1, 1), iv(11, 11)]),
            ],
            cc_operands: vec![],
        };
        let r = renumber_locations(&p).expect("renumber");
        let mut t = TreeInterference::new(&r).expect("tree");
        let mut s = PairScan::new(&r);
        for v in 0..4 {
            assert_eq!(t.neighbours(v), s.neighbours(v), "location {v}");
        }
        // Dense ids by first def: a=0, d=1, b=2, c=3.
        assert_eq!(t.neighbours(0), &[1, 3]);
        // The cache answers the same, and past its budget forwards the same.
        for budget in [100, 3] {
            let rec = crate::marks::Recorder::start();
            let mut c = Cached::new(TreeInterference::new(&r).expect("tree"), 4, budget);
            assert_eq!(c.is_complete(), budget == 100);
            assert_eq!(rec.hits("dram.neighbour_cache_over_budget"), u64::from(budget == 3));
            for v in 0..4 {
                assert_eq!(c.neighbours(v), s.neighbours(v), "budget {budget} location {v}");
            }
        }
    }

    /// Every location's cached list next to a scan of all pairs.
    fn assert_cache_matches_scan(p: &Problem, budget: usize) -> bool {
        let r = renumber_locations(p).expect("renumber");
        let mut c = Cached::new(TreeInterference::new(&r).expect("tree"), r.len(), budget);
        let mut s = PairScan::new(&r);
        for v in 0..r.len() as u32 {
            assert_eq!(c.neighbours(v), s.neighbours(v), "location {v}");
        }
        c.is_complete()
    }

    #[test]
    fn swept_lists_equal_a_scan_of_all_pairs() {
        // Generated problems: multi-interval locations, pins, repeated times.
        for seed in 0..200 {
            let (p, _) = crate::dram::generate::random_case(seed);
            assert!(assert_cache_matches_scan(&p, DEFAULT_CACHE_BUDGET), "seed {seed}");
        }
        let p = crate::dram::generate::bench_problem(7, 3000, 16);
        assert!(assert_cache_matches_scan(&p, DEFAULT_CACHE_BUDGET));
        // A long-lived location (it stays in the sweep's active set), identical
        // intervals, an interval nested in another, a point interval at the end.
        let iv = |a, b| LiveInterval::new(a, b);
        let p = Problem {
            locations: vec![
                Location::new("long", 1, 1, vec![iv(0, 1000)]),
                Location::new("twin", 1, 1, vec![iv(5, 9), iv(5, 9), iv(700, 700)]),
                Location::new("nested", 1, 1, vec![iv(6, 7), iv(2, 3)]),
                Location::new("late", 1, 1, vec![iv(1000, 1000)]),
                Location::new("pin", 1, 1, vec![]).pinned_at(0),
            ],
            cc_operands: vec![],
        };
        assert!(assert_cache_matches_scan(&p, DEFAULT_CACHE_BUDGET));
        let r = renumber_locations(&p).expect("renumber");
        let mut c = Cached::new(TreeInterference::new(&r).expect("tree"), r.len(), DEFAULT_CACHE_BUDGET);
        // Dense ids by first def: long 0, nested 1, twin 2, late 3, pin 4.
        assert_eq!(c.neighbours(0), &[1, 2, 3]);
        assert_eq!(c.neighbours(2), &[0, 1]);
        assert_eq!(c.neighbours(3), &[0]);
        assert_eq!(c.neighbours(4), &[] as &[u32]);
    }

    #[test]
    fn duplicate_side_answers_do_not_decide_the_budget() {
        // `a`'s three extra intervals each meet `b`: three side entries, but the
        // lists hold two ({b} and {a}). Budget 2 fits exactly (the sweep falls
        // back to one query per location); budget 1 does not.
        let iv = |x, y| LiveInterval::new(x, y);
        let p = Problem {
            locations: vec![
                Location::new("a", 1, 1, vec![iv(0, 1), iv(0, 1), iv(0, 1), iv(0, 1)]),
                Location::new("b", 1, 1, vec![iv(0, 1)]),
            ],
            cc_operands: vec![],
        };
        let rec = crate::marks::Recorder::start();
        assert!(assert_cache_matches_scan(&p, 2));
        assert_eq!(rec.hits("dram.neighbour_cache_over_budget"), 0);
        assert!(!assert_cache_matches_scan(&p, 1));
        assert_eq!(rec.hits("dram.neighbour_cache_over_budget"), 1);
    }

    #[test]
    fn out_of_order_answers_are_merged_not_trusted() {
        assert_eq!(merged(&[1, 4, 9], &mut [9, 0, 4, 12, 0]), vec![0, 1, 4, 9, 12]);
        assert_eq!(merged(&[2, 3], &mut []), vec![2, 3]);
        assert_eq!(merged(&[], &mut [5, 5, 1]), vec![1, 5]);
    }

    fn merged(ordered: &[u32], rest: &mut [u32]) -> Vec<u32> {
        let mut out = vec![77];
        merge_into(&mut out, ordered, rest);
        out.split_off(1)
    }
}
