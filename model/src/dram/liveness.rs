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
//! Every (reaching def, use) edge gives one inclusive interval `[def, use]`,
//! so a location used in several blocks has several intervals; a def no use
//! reaches gets `[def, def]` (its write still occupies the bytes at that
//! instant); a read with no earlier def gets `[use, use]`.
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

/// Per-location def/use state of the STEP D walk.
///
/// The reaching defs are `first` then `more` (most locations have one at a
/// time, held inline: no allocation per location for them).
#[derive(Default)]
struct Walk {
    /// The first def since the last full overwrite: (flat index, reached some use).
    first: Option<(Time, bool)>,
    /// Later such defs (only when `first` is set).
    more: Vec<(Time, bool)>,
    intervals: Vec<LiveInterval>,
}

impl Walk {
    fn push_def(&mut self, d: (Time, bool)) {
        if self.first.is_none() {
            self.first = Some(d);
        } else {
            self.more.push(d);
        }
    }

    /// Records a read at `t`: one interval from every reaching def, or `[t, t]` with none.
    fn read(&mut self, t: Time) {
        if self.first.is_none() {
            self.intervals.push(LiveInterval::new(t, t));
        }
        let Walk { first, more, intervals } = self;
        for (d, used) in first.iter_mut().chain(more.iter_mut()) {
            *used = true;
            intervals.push(LiveInterval::new(*d, t));
        }
    }

    fn retire_dead_defs(&mut self) {
        let Walk { first, more, intervals } = self;
        for &(d, used) in first.iter().chain(more.iter()) {
            if !used {
                intervals.push(LiveInterval::new(d, d));
            }
        }
    }

    fn clear_reaching(&mut self) {
        self.first = None;
        self.more.clear();
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
            w.push_def((t, false));
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
        let Some(mut w) = w else { continue };
        w.retire_dead_defs();
        w.intervals.sort_unstable();
        w.intervals.dedup();
        let id = MemLocId::from_index(i);
        let l = m.loc(id);
        index_of[i] = Some(locs.len());
        locs.push(id);
        locations.push(Location::new(l.name.clone(), l.byte_size(), DRAM_PAGE, w.intervals));
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
        // a: def 0 used at 1 and 2 (across blocks); the partial write at 3 keeps def 0 reaching 4.
        assert_eq!(iv(0), vec![(0, 1), (0, 2), (0, 4), (3, 4)]);
        // b: def 1 used at 3; the full overwrite at 4 is a dead def.
        assert_eq!(iv(1), vec![(1, 3), (4, 4)]);
        // c: written, never read.
        assert_eq!(iv(2), vec![(2, 2)]);
        assert!(p.problem.locations.iter().all(|l| l.intervals.iter().all(|v| v.def <= v.last_use)));
        assert!(p.problem.locations.iter().all(|l| l.alignment == 4096));
        assert_eq!(p.num_insts, 5);
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
