//! From an IR function to the allocator core's [`Problem`]: the flat
//! instruction numbering and the `[def, use]` intervals of
//! `build_interval_tree` (seed 004, "The Interval-Tree Liveness Model",
//! STEP A and STEP D), and the collective operands `cc_buffer_size` sums.
//!
//! **Numbering direction (our choice).** Seed STEP A walks the function
//! backward (`getFirstWithin` / `getPrevInstFlat`), yet STEP D emits each node
//! as `{ hi = use flat#, lo = def flat# }` and the tree's overlap test
//! (`node.lo <= q.hi && q.lo <= node.hi`) and `makeMax` need `lo <= hi`: a
//! backward index would invert every interval (the def of a tensor comes
//! before its use in program order, so it would get the larger index). We
//! number **forward**: the first instruction of the first block is 0 and the
//! index grows in execution order, so `def <= use` always holds. Reversing the
//! numbering mirrors every interval, which leaves the interference relation
//! unchanged; only the dense renumbering (by first def) and hence the simplify
//! tie-breaks depend on the direction.
//!
//! **Intervals (seed STEP D, `get_def_from_use`).** The IR has no loops (blocks
//! run in order), so a use's reaching defs are the writes of the location
//! since its last *full* overwrite (offset 0, every element) strictly before
//! the use: a partial write does not kill the bytes an earlier write left.
//! Every (reaching def, use) edge is the inclusive interval `[def, use]`; a
//! def no use reaches is `[def, def]` (its write still occupies the bytes at
//! that instant); a read with no earlier def is `[use, use]`.
//!
//! **Deviation: one interval per run, not per edge.** The seed emits one tree
//! node per edge, so k partial writes followed by k reads of one location give
//! k² nodes. We emit the union of a location's edges instead, sorted, with
//! overlapping intervals merged: a read's edges all end at the read and start
//! at or after its first reaching def, so their union is one interval. Two
//! locations interfere iff their point sets meet, and the union keeps each
//! location's point set, so the interference graph (and the allocation) is
//! the seed's; only the node count of the interval tree is smaller. Cost:
//! O(n + k log k) for n accesses and k intervals, k <= n.
//!
//! **Collective operands.** `cc_buffer_size` walks `inst.operands` of every
//! collective instruction; we take its reads and its write, each once per
//! appearance, that are candidates of the run, with the access pattern's bytes
//! as `apSize(op)`.

use super::problem::{CcOperand, DRAM_PAGE, LiveInterval, Location, Problem, Time};
use crate::ir::{AccessPattern, Function, InstId, MemLocId, Module};

/// A function's allocation problem with the way back to the IR.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IrProblem {
    /// The core's problem: one [`Location`] per candidate, in [`MemLocId`] order.
    pub problem: Problem,
    /// The IR location of each problem location.
    pub locs: Vec<MemLocId>,
    /// Number of instructions (the flat index of the last one is `num_insts - 1`).
    pub num_insts: u64,
}

/// The flat index of every instruction (by [`InstId`] index): forward, in
/// block order (see the module docs). Instructions no block lists get none.
pub fn flat_numbering(f: &Function) -> Vec<Option<Time>> {
    let mut flat = vec![None; f.insts.len()];
    for (t, id) in f.order().enumerate() {
        if let Some(slot) = flat.get_mut(id.index()) {
            *slot = Some(t as Time);
        }
    }
    flat
}

/// The locations `f` reads or writes, ascending. O(n + L): one pass over the
/// accesses marking a bitmap grown to the largest location index seen, then
/// one scan of it (no sort, no per-instruction allocation).
pub fn touched(f: &Function) -> Vec<MemLocId> {
    let mut seen: Vec<bool> = Vec::new();
    let mut count = 0usize;
    for a in f.insts.iter().flat_map(|i| i.read_slice().iter().chain(i.write_ref())) {
        let i = a.loc.index();
        if i >= seen.len() {
            seen.resize(i + 1, false);
        }
        count += usize::from(!seen[i]);
        seen[i] = true;
    }
    let mut out = Vec::with_capacity(count);
    out.extend(seen.iter().enumerate().filter(|&(_, &s)| s).map(|(i, _)| MemLocId::from_index(i)));
    out
}

/// Per-location def/use state of the STEP D walk: O(1) amortised per access.
///
/// `reaching` holds the defs since the last full overwrite, ascending; the
/// first `used` of them have reached some read (a read reaches all of them,
/// and later defs are appended, so the used ones are always a prefix).
#[derive(Default)]
struct Walk {
    reaching: Vec<Time>,
    used: usize,
    intervals: Vec<LiveInterval>,
}

impl Walk {
    fn push_def(&mut self, t: Time) {
        self.reaching.push(t);
    }

    /// Records a read at `t`: the union `[first reaching def, t]` of its
    /// (def, use) edges, or `[t, t]` with none. Reads come in time order, so
    /// an interval from the same first def is extended instead of repeated.
    fn read(&mut self, t: Time) {
        let Some(&d) = self.reaching.first() else {
            self.intervals.push(LiveInterval::new(t, t));
            return;
        };
        self.used = self.reaching.len();
        match self.intervals.last_mut() {
            Some(last) if last.def == d => last.last_use = last.last_use.max(t),
            _ => self.intervals.push(LiveInterval::new(d, t)),
        }
    }

    fn retire_dead_defs(&mut self) {
        let Walk { reaching, used, intervals } = self;
        intervals.extend(reaching.get(*used..).unwrap_or_default().iter().map(|&d| LiveInterval::new(d, d)));
    }

    fn clear_reaching(&mut self) {
        self.reaching.clear();
        self.used = 0;
    }

    /// The intervals sorted, with overlapping ones merged (same point set).
    fn into_intervals(mut self) -> Vec<LiveInterval> {
        self.retire_dead_defs();
        let mut v = self.intervals;
        v.sort_unstable();
        let mut out: Vec<LiveInterval> = Vec::with_capacity(v.len());
        for iv in v {
            match out.last_mut() {
                Some(last) if iv.def <= last.last_use => last.last_use = last.last_use.max(iv.last_use),
                _ => out.push(iv),
            }
        }
        out
    }
}

fn is_full(m: &Module, ap: &AccessPattern) -> bool {
    ap.offset == 0 && m.memlocs.get(ap.loc.index()).is_some_and(|l| ap.len >= l.elem_count)
}

/// Builds the problem of `f` over the locations `candidate` accepts (DRAM,
/// 4 KiB alignment from `get_alignment_size`), with their intervals and the
/// collective operands. Locations `f` never touches are not included.
///
/// Cost: O(n + L + k log k) for n instructions, L locations and k intervals;
/// the per-location walk state is a dense vector indexed by location.
pub fn build_problem(m: &Module, f: &Function, candidate: impl Fn(MemLocId) -> bool) -> IrProblem {
    build_problem_touched(m, f, &touched(f), candidate)
}

/// [`build_problem`] with `touched` = [`touched`]`(f)` already at hand (the
/// allocator computes it once per function for its candidate scan). Same cost.
pub fn build_problem_touched(
    m: &Module,
    f: &Function,
    touched: &[MemLocId],
    candidate: impl Fn(MemLocId) -> bool,
) -> IrProblem {
    let flat = flat_numbering(f);
    let slots = touched.last().map_or(0, |l| l.index() + 1);
    let mut walks: Vec<Option<Walk>> = Vec::with_capacity(slots);
    walks.resize_with(slots, || None);
    for &id in touched {
        if candidate(id) {
            walks[id.index()] = Some(Walk::default());
        }
    }
    let mut num_insts = 0;
    let mut cc: Vec<(MemLocId, u64)> = Vec::new();
    for id in f.order() {
        let Some(inst) = f.insts.get(id.index()) else { continue };
        let Some(t) = flat.get(id.index()).copied().flatten() else { continue };
        num_insts = num_insts.max(t + 1);
        for r in inst.read_slice() {
            let Some(Some(w)) = walks.get_mut(r.loc.index()) else { continue };
            w.read(t);
        }
        if let Some(wr) = inst.write_ref()
            && let Some(Some(w)) = walks.get_mut(wr.loc.index())
        {
            if is_full(m, wr) {
                w.retire_dead_defs();
                w.clear_reaching();
            }
            w.push_def(t);
        }
        if inst.collective {
            for ap in inst.read_slice().iter().chain(inst.write_ref()) {
                if matches!(walks.get(ap.loc.index()), Some(Some(_))) {
                    let esize = u64::from(m.loc(ap.loc).dtype.size());
                    cc.push((ap.loc, ap.len.saturating_mul(esize)));
                }
            }
        }
    }
    let count = walks.iter().filter(|w| w.is_some()).count();
    let mut locs = Vec::with_capacity(count);
    let mut locations = Vec::with_capacity(count);
    let mut index_of: Vec<Option<usize>> = vec![None; walks.len()];
    for (i, w) in walks.into_iter().enumerate() {
        let Some(w) = w else { continue };
        let intervals = w.into_intervals();
        let id = MemLocId::from_index(i);
        let l = m.loc(id);
        index_of[i] = Some(locs.len());
        locs.push(id);
        locations.push(Location::new(l.name.clone(), l.byte_size(), DRAM_PAGE, intervals));
    }
    let cc_operands = cc
        .into_iter()
        .filter_map(|(id, b)| index_of[id.index()].map(|i| CcOperand { location: i, ap_bytes: b }))
        .collect();
    IrProblem { problem: Problem { locations, cc_operands }, locs, num_insts }
}

/// The instruction at flat index `t` (inverse of [`flat_numbering`]).
pub fn inst_at(f: &Function, t: Time) -> Option<InstId> {
    f.order().nth(usize::try_from(t).ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::parse;

    const PROG: &str = "\
module p lnc 1
loc x dram input i32[8] @0x0
loc a dram internal i32[8]
loc b dram internal i32[8]
loc c dram internal i32[4]

func main
  block entry
    i0 = dve add x[0..8], x[0..8] -> a[0..8]
    i1 = act relu a[0..8] -> b[0..8]
  block bb1
    i2 = act relu a[0..4] -> c[0..4]
    i3 = act relu b[0..4] -> a[0..4]
    i4 = act relu a[0..8] -> b[0..8]
";

    fn prog() -> Module {
        parse(PROG).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn numbering_is_forward_in_block_order() {
        let m = prog();
        let f = &m.functions[0];
        let flat = flat_numbering(f);
        let order: Vec<Time> = f.order().map(|id| flat[id.index()].unwrap_or(u64::MAX)).collect();
        assert_eq!(order, vec![0, 1, 2, 3, 4]);
        assert_eq!(inst_at(f, 2).map(|i| f.insts[i.index()].name.as_str()), Some("i2"));
    }

    /// The seed's backward walk would number instruction `k` as `n - 1 - k`;
    /// mirrored intervals (swapping def and use) interfere exactly when ours do.
    #[test]
    fn backward_numbering_would_give_the_same_interference() {
        use crate::program::{GenConfig, SizeClass, generate};
        for seed in 0..8 {
            let p = generate(&GenConfig::new(seed, 1, SizeClass::Medium));
            let f = &p.functions[0];
            let ir = build_problem(&p, f, |id| p.loc(id).address.is_none());
            let n = ir.num_insts;
            let meet = |a: &[LiveInterval], b: &[LiveInterval]| {
                a.iter().any(|x| b.iter().any(|y| x.def.max(y.def) <= x.last_use.min(y.last_use)))
            };
            let mirror = |v: &[LiveInterval]| -> Vec<LiveInterval> {
                v.iter().map(|i| LiveInterval::new(n - 1 - i.last_use, n - 1 - i.def)).collect()
            };
            let locs = &ir.problem.locations;
            let mut pairs = 0;
            for a in 0..locs.len() {
                for b in a + 1..locs.len() {
                    let fwd = meet(&locs[a].intervals, &locs[b].intervals);
                    let bwd = meet(&mirror(&locs[a].intervals), &mirror(&locs[b].intervals));
                    assert_eq!(fwd, bwd);
                    pairs += usize::from(fwd);
                }
            }
            assert!(pairs > 0);
        }
    }

    #[test]
    fn intervals_follow_def_use_edges_and_partial_writes() {
        let m = prog();
        let f = &m.functions[0];
        let p = build_problem(&m, f, |id| m.loc(id).address.is_none());
        let names: Vec<&str> = p.problem.locations.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, vec!["a", "b", "c"]);
        let iv = |i: usize| p.problem.locations[i].intervals.iter().map(|v| (v.def, v.last_use)).collect::<Vec<_>>();
        // a: def 0 used at 1 and 2 (across blocks); the partial write at 3 keeps def 0 reaching 4:
        // the edges [0,1], [0,2], [0,4] and [3,4] are one run.
        assert_eq!(iv(0), vec![(0, 4)]);
        // b: def 1 used at 3; the full overwrite at 4 is a dead def.
        assert_eq!(iv(1), vec![(1, 3), (4, 4)]);
        // c: written, never read.
        assert_eq!(iv(2), vec![(2, 2)]);
        assert!(p.problem.locations.iter().all(|l| l.intervals.iter().all(|v| v.def <= v.last_use)));
        assert!(p.problem.locations.iter().all(|l| l.alignment == 4096));
        assert_eq!(p.num_insts, 5);
    }

    /// k partial writes then k full reads of one location: the seed's k² edges
    /// are one interval here (the case that ran >21 min at 2.8 GB per edge).
    #[test]
    fn many_partial_writes_then_many_reads_are_one_interval() {
        let k = 3000;
        let mut s = format!(
            "module p lnc 1\nloc x dram input i32[1] @0x0\nloc a dram internal i32[{k}]\n\
             loc y dram output i32[{k}] @0x100000\n\nfunc main\n  block entry\n"
        );
        for w in 0..k {
            s.push_str(&format!("    w{w} = act relu x[0..1] -> a[{w}..{}]\n", w + 1));
        }
        for r in 0..k {
            s.push_str(&format!("    r{r} = dve relu a[0..{k}] -> y[0..{k}]\n"));
        }
        let m = parse(&s).unwrap_or_else(|e| panic!("{e}"));
        let p = build_problem(&m, &m.functions[0], |id| m.loc(id).address.is_none());
        let last = 2 * k as u64 - 1;
        assert_eq!(p.problem.locations[0].intervals, vec![LiveInterval::new(0, last)]);
    }

    /// The seed's rule, one interval per edge, by brute force: for the read at
    /// `t` of location `loc`, every write of it before `t` and not before its
    /// last full overwrite before `t`. O(n²): small programs only.
    fn edge_intervals(m: &Module, f: &Function, loc: MemLocId) -> Vec<(Time, Time)> {
        let accs: Vec<(Time, bool, Option<bool>)> = f
            .order()
            .enumerate()
            .map(|(t, id)| {
                let i = &f.insts[id.index()];
                let reads = i.read_slice().iter().any(|a| a.loc == loc);
                let write =
                    i.write_ref().filter(|w| w.loc == loc).map(|w| w.offset == 0 && w.len >= m.loc(loc).elem_count);
                (t as Time, reads, write)
            })
            .collect();
        let mut out = Vec::new();
        let mut reached = vec![false; accs.len()];
        for &(t, ..) in accs.iter().filter(|a| a.1) {
            let before = &accs[..t as usize];
            let kill = before.iter().rposition(|a| a.2 == Some(true)).unwrap_or(0);
            let defs: Vec<Time> = before[kill..].iter().filter(|a| a.2.is_some()).map(|a| a.0).collect();
            if defs.is_empty() {
                out.push((t, t));
            }
            for d in defs {
                reached[d as usize] = true;
                out.push((d, t));
            }
        }
        out.extend(accs.iter().filter(|a| a.2.is_some() && !reached[a.0 as usize]).map(|a| (a.0, a.0)));
        out
    }

    /// Sorted, with overlapping or adjacent intervals merged: equal iff the
    /// integer point sets are equal.
    fn canonical(mut v: Vec<(Time, Time)>) -> Vec<(Time, Time)> {
        v.sort_unstable();
        let mut out: Vec<(Time, Time)> = Vec::new();
        for (a, b) in v {
            match out.last_mut() {
                Some(l) if a <= l.1 + 1 => l.1 = l.1.max(b),
                _ => out.push((a, b)),
            }
        }
        out
    }

    proptest::proptest! {
        /// Random straight-line programs over three 8-element locations with
        /// partial and full reads and writes: each location's intervals cover
        /// exactly the points of the seed's per-edge intervals, and no two of
        /// them overlap.
        #[test]
        fn intervals_are_the_union_of_the_seed_edges(
            ops in proptest::collection::vec((0usize..4, 0u64..8, 1u64..9, 0usize..3, 0u64..8, 1u64..9), 1..40),
        ) {
            let names = ["a", "b", "c", "x"];
            let mut s = String::from(
                "module p lnc 1\nloc x dram input i32[8] @0x0\nloc a dram internal i32[8]\n\
                 loc b dram internal i32[8]\nloc c dram internal i32[8]\n\nfunc main\n  block entry\n",
            );
            for (i, &(r, ro, rl, w, wo, wl)) in ops.iter().enumerate() {
                let (ro, wo) = (ro.min(7), wo.min(7));
                let (rl, wl) = (rl.min(8 - ro), wl.min(8 - wo));
                s.push_str(&format!(
                    "    i{i} = act relu {}[{ro}..{}] -> {}[{wo}..{}]\n",
                    names[r], ro + rl, names[w], wo + wl
                ));
            }
            let m = parse(&s).unwrap_or_else(|e| panic!("{e}\n{s}"));
            let f = &m.functions[0];
            let p = build_problem(&m, f, |id| m.loc(id).address.is_none());
            for (loc, l) in p.locs.iter().zip(&p.problem.locations) {
                let got: Vec<(Time, Time)> = l.intervals.iter().map(|v| (v.def, v.last_use)).collect();
                proptest::prop_assert!(got.windows(2).all(|w| w[0].1 < w[1].0), "{got:?}");
                proptest::prop_assert_eq!(canonical(got), canonical(edge_intervals(&m, f, *loc)));
            }
        }
    }

    #[test]
    fn a_full_overwrite_kills_earlier_defs() {
        let text = "\
module p lnc 1
loc x dram input i32[4] @0x0
loc a dram internal i32[4]
loc y dram output i32[4] @0x1000

func main
  block entry
    i0 = act relu x[0..4] -> a[0..4]
    i1 = act relu x[0..4] -> a[0..4]
    i2 = act relu a[0..4] -> y[0..4]
";
        let m = parse(text).unwrap_or_else(|e| panic!("{e}"));
        let p = build_problem(&m, &m.functions[0], |id| m.loc(id).address.is_none());
        let iv: Vec<(u64, u64)> = p.problem.locations[0].intervals.iter().map(|v| (v.def, v.last_use)).collect();
        assert_eq!(iv, vec![(0, 0), (1, 2)]);
    }

    #[test]
    fn collective_operands_are_reads_and_write_that_are_candidates() {
        let text = "\
module p lnc 1
loc x dram input i32[4] @0x0
loc a dram internal i32[4]
loc b dram internal i32[2]

func main
  block entry
    i0 = act relu x[0..4] -> a[0..4]
    i1 = dve add a[0..2], x[0..2] -> b[0..2] collective
";
        let m = parse(text).unwrap_or_else(|e| panic!("{e}"));
        let p = build_problem(&m, &m.functions[0], |id| m.loc(id).address.is_none());
        let cc: Vec<(usize, u64)> = p.problem.cc_operands.iter().map(|o| (o.location, o.ap_bytes)).collect();
        assert_eq!(cc, vec![(0, 8), (1, 8)]);
    }
}
