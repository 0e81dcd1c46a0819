//! The interference oracle: which locations are live at the same time as `v`?
//!
//! The seed answers it with an interval-tree query (`getAllOverlaps`) per
//! interval of `v` ([`TreeInterference`], built by [`build_interval_tree`]).
//! [`PairScan`] answers it by scanning every other location: the naive
//! allocator the benchmark compares against. Both return the same sorted,
//! distinct list, so simplify and select_impl produce identical placements with
//! either (the benchmark checks that).

use super::error::AllocError;
use super::interval_tree::{IntervalTree, TreeError};
use super::problem::{LiveInterval, Problem};

/// An interference oracle over a fixed problem.
pub trait Interference {
    /// Writes into `out` (cleared first) every location `u != v` with an
    /// interval intersecting one of `v`'s, ascending and without duplicates.
    fn neighbours(&mut self, v: u32, out: &mut Vec<u32>);
}

/// `build_interval_tree` (seed STEP D/E): one node per `[def, use]` interval of
/// every location, payload = the location's Info index.
pub fn build_interval_tree(problem: &Problem) -> Result<IntervalTree, AllocError> {
    let n = problem.locations.len();
    if n >= u32::MAX as usize {
        return Err(AllocError::TooMany { count: n });
    }
    let triples = problem.locations.iter().enumerate().flat_map(|(i, l)| {
        l.intervals
            .iter()
            .map(move |iv| (iv.def, iv.last_use, i as u32))
    });
    IntervalTree::new(triples).map_err(|e| match e {
        TreeError::TooMany(count) => AllocError::TooMany { count },
        // Validation rejects inverted intervals and bad indices before we get here.
        TreeError::Inverted { lo, hi } => AllocError::BadInterval {
            name: String::from("?"),
            def: lo,
            last_use: hi,
        },
        TreeError::BadIndex(count) => AllocError::TooMany { count },
    })
}

/// Interference by interval-tree queries: O(k log n) per location.
#[derive(Debug)]
pub struct TreeInterference<'a> {
    tree: IntervalTree,
    problem: &'a Problem,
    stamp: Vec<u32>,
    epoch: u32,
    stack: Vec<u32>,
}

impl<'a> TreeInterference<'a> {
    /// Builds the tree for `problem`.
    pub fn new(problem: &'a Problem) -> Result<Self, AllocError> {
        Ok(TreeInterference {
            tree: build_interval_tree(problem)?,
            problem,
            stamp: vec![0; problem.locations.len()],
            epoch: 0,
            stack: Vec::new(),
        })
    }

    /// The interval tree.
    pub fn tree(&self) -> &IntervalTree {
        &self.tree
    }
}

impl Interference for TreeInterference<'_> {
    fn neighbours(&mut self, v: u32, out: &mut Vec<u32>) {
        out.clear();
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.stamp.iter_mut().for_each(|s| *s = 0);
            self.epoch = 1;
        }
        let Some(loc) = self.problem.locations.get(v as usize) else {
            return;
        };
        let nodes = self.tree.nodes();
        for iv in &loc.intervals {
            let (stamp, epoch) = (&mut self.stamp, self.epoch);
            self.tree
                .for_each_overlap(iv.def, iv.last_use, &mut self.stack, |i| {
                    let u = nodes[i as usize].payload;
                    if u != v && stamp[u as usize] != epoch {
                        stamp[u as usize] = epoch;
                        out.push(u);
                    }
                });
        }
        out.sort_unstable();
    }
}

/// Interference by scanning every pair: O(n) per location, O(n^2) overall.
#[derive(Debug)]
pub struct PairScan<'a> {
    problem: &'a Problem,
}

impl<'a> PairScan<'a> {
    /// The naive oracle for `problem`.
    pub fn new(problem: &'a Problem) -> Self {
        PairScan { problem }
    }
}

fn any_intersect(a: &[LiveInterval], b: &[LiveInterval]) -> bool {
    a.iter()
        .any(|x| b.iter().any(|y| x.def <= y.last_use && y.def <= x.last_use))
}

impl Interference for PairScan<'_> {
    fn neighbours(&mut self, v: u32, out: &mut Vec<u32>) {
        out.clear();
        let locs = &self.problem.locations;
        let Some(me) = locs.get(v as usize) else {
            return;
        };
        for (u, other) in locs.iter().enumerate() {
            if u != v as usize && any_intersect(&me.intervals, &other.intervals) {
                out.push(u as u32);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dram::problem::Location;

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
        let mut t = TreeInterference::new(&p).expect("tree");
        let mut s = PairScan::new(&p);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for v in 0..4 {
            t.neighbours(v, &mut a);
            s.neighbours(v, &mut b);
            assert_eq!(a, b, "location {v}");
        }
        t.neighbours(0, &mut a);
        assert_eq!(a, vec![2, 3]);
    }
}
