//! The interference oracle: which locations are live at the same time as `v`?
//!
//! The seed answers it with an interval-tree query (`getAllOverlaps`) per
//! interval of `v` ([`TreeInterference`], built by [`build_interval_tree`]).
//! [`PairScan`] answers it by scanning every other location: the naive
//! allocator the benchmark compares against. Both return the same sorted,
//! distinct list, so simplify and select_impl produce identical placements with
//! either (the benchmark checks that).
//!
//! [`Cached`] asks an oracle once per location, in dense-id order, and keeps
//! the lists (the seed's simplify keeps a "neighbor unordered_map" too): the
//! degree pass, simplify's neighbour re-scan and select_impl's occupied list
//! then read them instead of walking the tree three times, twice in an order
//! with no locality. The lists cost 4 bytes per neighbour; past a budget the
//! cache gives up and forwards every call to the oracle (same answers).

use super::error::AllocError;
use super::interval_tree::{IntervalTree, TreeError};
use super::renumber::{FlatInterval, Renumbered};

/// An interference oracle over a fixed problem.
pub trait Interference {
    /// Every location `u != v` with an interval intersecting one of `v`'s,
    /// ascending and without duplicates (valid until the next call).
    fn neighbours(&mut self, v: u32) -> &[u32];
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

/// Interference by interval-tree queries: O(k log n) per location.
#[derive(Debug)]
pub struct TreeInterference<'a> {
    tree: IntervalTree,
    r: &'a Renumbered,
    stamp: Vec<u32>,
    epoch: u32,
    stack: Vec<u32>,
    out: Vec<u32>,
}

impl<'a> TreeInterference<'a> {
    /// Builds the tree for the renumbered problem.
    pub fn new(r: &'a Renumbered) -> Result<Self, AllocError> {
        Ok(TreeInterference {
            tree: build_interval_tree(r)?,
            r,
            stamp: vec![0; r.len()],
            epoch: 0,
            stack: Vec::new(),
            out: Vec::new(),
        })
    }

    /// The interval tree.
    pub fn tree(&self) -> &IntervalTree {
        &self.tree
    }
}

impl Interference for TreeInterference<'_> {
    fn neighbours(&mut self, v: u32) -> &[u32] {
        self.out.clear();
        if v as usize >= self.r.len() {
            return &self.out;
        }
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.stamp.iter_mut().for_each(|s| *s = 0);
            self.epoch = 1;
        }
        let nodes = self.tree.nodes();
        let (stamp, epoch, out) = (&mut self.stamp, self.epoch, &mut self.out);
        for iv in self.r.intervals_of(v as usize) {
            self.tree.for_each_overlap(iv.def, iv.last_use, &mut self.stack, |i| {
                let u = nodes[i as usize].payload;
                if u != v && stamp[u as usize] != epoch {
                    stamp[u as usize] = epoch;
                    out.push(u);
                }
            });
        }
        // In-order answers are often sorted already (one-interval locations).
        if !out.is_sorted() {
            out.sort_unstable();
        }
        out
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

/// Default budget of [`Cached`]: 64 Mi neighbour entries (256 MiB).
pub const DEFAULT_CACHE_BUDGET: usize = 64 << 20;

/// An oracle's answers for every location, computed once (CSR), within a budget.
#[derive(Debug)]
pub struct Cached<O> {
    inner: O,
    starts: Vec<usize>,
    lists: Vec<u32>,
    complete: bool,
}

impl<O: Interference> Cached<O> {
    /// Asks `inner` about locations `0..n` in order, keeping at most `budget` entries.
    pub fn new(mut inner: O, n: usize, budget: usize) -> Self {
        let mut starts = Vec::with_capacity(n + 1);
        let mut lists = Vec::new();
        let mut complete = true;
        for v in 0..n {
            let nb = inner.neighbours(v as u32);
            if lists.len() + nb.len() > budget {
                complete = false;
                break;
            }
            starts.push(lists.len());
            lists.extend_from_slice(nb);
            if v == 1023 && n > 4096 {
                // Size the lists from the first 1024 locations (saves the copies of doubling).
                let want = (lists.len() / 1024).saturating_mul(n + n / 8).min(budget);
                lists.reserve(want.saturating_sub(lists.len()));
            }
        }
        starts.push(lists.len());
        if !complete {
            crate::marks::hit("dram.neighbour_cache_over_budget");
            starts = Vec::new();
            lists = Vec::new();
        }
        Cached { inner, starts, lists, complete }
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
            (Some(&a), Some(&b)) => &self.lists[a..b],
            _ => &[],
        }
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
}
