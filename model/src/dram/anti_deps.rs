//! The post-allocation anti-dependency passes (seed 004, "Why anti-deps re-run
//! after shared placement"; DESIGN.md, "Anti-dependencies"):
//! `anti_dependency_analyzer_post_dram` over the private region and
//! `anti_dependency_analyzer_post_shared_dram` over the shared region.
//!
//! The allocator gives tensors whose live intervals do not meet overlapping
//! addresses. Engines run in parallel, so an instruction that touches those
//! bytes through one tensor must wait for every earlier instruction (same
//! function, program order) that touched them through another tensor.
//!
//! **Rule (our reading of the seed).** For instructions `I` before `J` of one
//! function, with accessed byte ranges `[address + offset * esize, + len *
//! esize)` of *different* locations of the region intersecting and at least one
//! side writing, `J` must run after `I`: `Waw` when both write, `War` when `J`
//! writes what `I` read, and `Data` when `J` reads bytes `I` wrote through
//! another tensor (a read of reused bytes, ordered like a true dependency
//! through memory). Same-tensor ordering is the program's own business (its
//! data edges). Edges point backward (the IR verifier's rule).
//!
//! **How (no n x n structure).** One forward walk keeps an address-keyed
//! interval map of the region's reused bytes: per byte run, the last writer
//! and the readers since it (instruction and location). `J`'s candidates are,
//! over the runs its accesses meet, the last writer (for a read or a write)
//! and the readers since it (for a write), through another location; then its
//! own accesses update the map (a write makes `J` the run's writer and clears
//! its readers). That suffices: by induction the last writer of a byte runs
//! after every earlier access of it (through its edges, or the program's own
//! same-tensor order), so `J` needs edges only to the latest ones.
//!
//! **"Not yet ordered".** A candidate `I` gets no edge when `J` is already
//! ordered after it by what the walk knows cheaply: `J` has a direct edge to
//! `I`, or to an instruction with a direct edge to `I` (two hops, counting
//! edges this pass added), or to an instruction this pass just gave `J` an edge
//! to whose direct edges reach `I`. Candidates are visited latest first, so one
//! edge to the latest conflicting instruction covers the earlier ones it
//! already follows. The covering set is capped at [`COVER_CAP`] instructions:
//! past the cap a candidate gets a (redundant but harmless) edge; an order is
//! never missed.
//!
//! **Cost.** Reuse detection O(L log L) over the L placed locations; the walk
//! O(a log r + m) for a accesses, r byte runs (r <= 2a + 1) and m walk steps
//! (runs visited, reader entries pushed, visited, cloned by a split, runs
//! removed); memory O(r + readers + edges). Generated and split programs keep
//! m linear in the program, but an adversarial reuse pattern (t one-element
//! writes over a reused tensor, then k reads of all of it) makes m about t·k.
//! The walk therefore counts its steps and refuses a function past
//! [`MAX_WALK_STEPS`] with [`DramError::AntiDepLimit`], so the pass's time and
//! memory stay bounded on any input.
//!
//! Cross-core ordering is not this pass's job: shared tensors never reuse each
//! other's addresses ([`super::shared`]) and the splitter's barriers order the
//! handoffs, so the shared pass only finds conflicts in hand-placed modules.

use std::collections::BTreeMap;

use super::allocate::{DramError, Space};
use super::problem::{DRAM_PAGE, round_up};
use crate::ir::{Dep, EdgeKind, InstId, MemLocId, Module};

/// What one pass did to one function.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AntiDepReport {
    /// The function.
    pub function: String,
    /// `Waw` edges added.
    pub waw: usize,
    /// `War` edges added.
    pub war: usize,
    /// `Data` edges added (reads of bytes another tensor wrote).
    pub raw: usize,
    /// Walk steps taken (the pass's cost measure, at most [`MAX_WALK_STEPS`]).
    pub steps: u64,
}

impl AntiDepReport {
    /// All edges added.
    pub fn added(&self) -> usize {
        self.waw + self.war + self.raw
    }
}

/// The private-region pass (`anti_dependency_analyzer_post_dram`), every function.
pub fn anti_dependency_analyzer_post_dram(m: &mut Module) -> Result<Vec<AntiDepReport>, DramError> {
    analyze(m, Space::Private, MAX_WALK_STEPS)
}

/// The shared-region pass (`anti_dependency_analyzer_post_shared_dram`), every function.
pub fn anti_dependency_analyzer_post_shared_dram(m: &mut Module) -> Result<Vec<AntiDepReport>, DramError> {
    analyze(m, Space::Shared, MAX_WALK_STEPS)
}

/// The most walk steps one function may take (about 16 bytes of reader
/// memory each at worst, so at most about 512 MiB and a few seconds).
pub const MAX_WALK_STEPS: u64 = 1 << 25;

/// The walk's worst case as IR text: `t` one-element writes through `a`, then
/// `k` reads of all of it through `big`, hand-placed on the same bytes (about
/// t·k steps; tests and the limit's documentation use it).
pub fn reuse_worst_case(t: usize, k: usize) -> String {
    let mut s = format!(
        "module adv lnc 1\nloc x dram input i32[1] @0x0\nloc y dram output i32[{t}] @0x1000\n\
         loc a dram internal i32[{t}] @0x100000\nloc big dram internal i32[{t}] @0x100000\n\nfunc main\n  block entry\n"
    );
    for w in 0..t {
        s.push_str(&format!("    w{w} = act relu x[0..1] -> a[{w}..{}]\n", w + 1));
    }
    for r in 0..k {
        s.push_str(&format!("    r{r} = dve relu big[0..{t}] -> y[0..{t}]\n"));
    }
    s
}

/// The most instructions the "already ordered" set of one instruction holds.
pub const COVER_CAP: usize = 256;

#[derive(Clone, Copy)]
struct Access {
    loc: MemLocId,
    lo: u64,
    hi: u64,
    write: bool,
}

/// Whether `l` is a placed location of the pass's region.
fn in_region(m: &Module, id: MemLocId, space: Space) -> Option<(u64, u64)> {
    let l = m.memlocs.get(id.index())?;
    let ok = space.holds(l);
    let a = l.address.filter(|_| ok)?;
    Some((a, a.saturating_add(round_up(l.byte_size(), DRAM_PAGE).unwrap_or(u64::MAX))))
}

/// The locations of `placed` (lo, hi, id) whose nonempty range meets another's:
/// one pass by first byte with the running furthest end, O(L log L).
fn reused_locations(mut placed: Vec<(u64, u64, MemLocId)>, count: usize) -> Vec<bool> {
    placed.retain(|&(lo, hi, _)| lo < hi);
    placed.sort_unstable();
    let mut reused = vec![false; count];
    // The item reaching furthest so far: (end, id).
    let mut furthest: Option<(u64, MemLocId)> = None;
    for &(lo, hi, id) in &placed {
        match furthest {
            Some((end, other)) if lo < end => {
                reused[id.index()] = true;
                reused[other.index()] = true;
                if hi > end {
                    furthest = Some((hi, id));
                }
            }
            Some((end, _)) if hi <= end => {}
            _ => furthest = Some((hi, id)),
        }
    }
    reused
}

/// One run of bytes in the walk's map: its end, last writer, readers since.
#[derive(Clone, Default)]
struct Run {
    end: u64,
    writer: Option<(usize, MemLocId)>,
    readers: Vec<(usize, MemLocId)>,
}

/// The walk's interval map: disjoint runs keyed by first byte, scratch
/// buffers reused by every update (no allocation per access for them), and
/// the steps taken so far.
#[derive(Default)]
struct Runs(BTreeMap<u64, Run>, Vec<u64>, Vec<(u64, u64)>, u64);

impl Runs {
    /// Splits the run containing `at` (if any) so that a run starts at `at`.
    fn split(&mut self, at: u64) {
        let Some((_, run)) = self.0.range_mut(..at).next_back() else { return };
        if run.end <= at {
            return;
        }
        let tail = run.clone();
        run.end = at;
        self.3 = self.3.saturating_add(1 + tail.readers.len() as u64);
        self.0.insert(at, tail);
    }

    /// Calls `f` on every run meeting `[lo, hi)` (a step per run and per reader in it).
    fn visit(&mut self, lo: u64, hi: u64, mut f: impl FnMut(&Run)) {
        let mut steps = 0u64;
        let mut each = |run: &Run| {
            steps = steps.saturating_add(1 + run.readers.len() as u64);
            f(run);
        };
        if let Some((_, run)) = self.0.range(..lo).next_back()
            && run.end > lo
        {
            each(run);
        }
        for (_, run) in self.0.range(lo..hi) {
            each(run);
        }
        self.3 = self.3.saturating_add(steps);
    }

    /// `[lo, hi)` now written by `who` (one run, no readers).
    fn write(&mut self, lo: u64, hi: u64, who: (usize, MemLocId)) {
        self.split(lo);
        self.split(hi);
        let mut inside = std::mem::take(&mut self.1);
        inside.clear();
        inside.extend(self.0.range(lo..hi).map(|(&k, _)| k));
        for &k in &inside {
            self.0.remove(&k);
        }
        self.3 = self.3.saturating_add(inside.len() as u64);
        self.1 = inside;
        self.0.insert(lo, Run { end: hi, writer: Some(who), readers: Vec::new() });
    }

    /// `[lo, hi)` now also read by `who` (gaps become runs with no writer).
    fn read(&mut self, lo: u64, hi: u64, who: (usize, MemLocId)) {
        self.split(lo);
        self.split(hi);
        let mut gaps = std::mem::take(&mut self.2);
        gaps.clear();
        let mut at = lo;
        let mut pushed = 0u64;
        for (&k, run) in self.0.range_mut(lo..hi) {
            if k > at {
                gaps.push((at, k));
            }
            run.readers.push(who);
            pushed += 1;
            at = run.end;
        }
        if at < hi {
            gaps.push((at, hi));
        }
        self.3 = self.3.saturating_add(pushed).saturating_add(gaps.len() as u64);
        for &(a, b) in &gaps {
            self.0.insert(a, Run { end: b, writer: None, readers: vec![who] });
        }
        self.2 = gaps;
    }
}

fn rank(k: EdgeKind) -> u8 {
    match k {
        EdgeKind::Waw => 3,
        EdgeKind::War => 2,
        _ => 1,
    }
}

/// Both passes with a step limit per function; a function past it is refused
/// before any of its edges are added (functions before it keep theirs).
fn analyze(m: &mut Module, space: Space, limit: u64) -> Result<Vec<AntiDepReport>, DramError> {
    let mut reports = Vec::new();
    for fi in 0..m.functions.len() {
        m.functions[fi].canonicalize();
        let (report, new_deps) = analyze_function(m, fi, space, limit).map_err(|()| DramError::AntiDepLimit {
            func: m.functions[fi].name.clone(),
            space,
            limit,
        })?;
        for (j, inst) in m.functions[fi].insts.iter_mut().enumerate() {
            let deps = new_deps.of(j);
            if deps.is_empty() {
                continue;
            }
            inst.deps.extend_from_slice(deps);
            inst.deps.sort_unstable();
            inst.deps.dedup();
        }
        reports.push(report);
    }
    Ok(reports)
}

/// The edges added to each instruction, in one flat list (instruction order):
/// instruction `j`'s are `deps[start[j]..start[j + 1]]` (no Vec per instruction).
struct NewDeps {
    deps: Vec<Dep>,
    /// Filled up to the instruction being walked (`start[j]` is set when `j` begins).
    start: Vec<usize>,
}

impl NewDeps {
    /// The edges added to instruction `j` so far (those of a finished instruction: all of them).
    fn of(&self, j: usize) -> &[Dep] {
        let lo = self.start.get(j).copied().unwrap_or(self.deps.len());
        let hi = self.start.get(j + 1).copied().filter(|&h| h >= lo).unwrap_or(self.deps.len());
        self.deps.get(lo..hi).unwrap_or(&[])
    }
}

/// The edges to add to each instruction of canonical function `fi`; `Err`
/// once the walk has taken more than `limit` steps.
fn analyze_function(m: &Module, fi: usize, space: Space, limit: u64) -> Result<(AntiDepReport, NewDeps), ()> {
    let f = &m.functions[fi];
    let n = f.insts.len();
    let mut report = AntiDepReport { function: f.name.clone(), ..AntiDepReport::default() };
    // start[j] = deps.len() when j begins; start[n] after the walk (so `of` of a later j is empty).
    let mut new_deps = NewDeps { deps: Vec::new(), start: Vec::new() };
    // Placed locations of the region whose aligned range meets another's: only they can conflict.
    let placed: Vec<(u64, u64, MemLocId)> = super::liveness::touched(f)
        .into_iter()
        .filter_map(|id| in_region(m, id, space).map(|(lo, hi)| (lo, hi, id)))
        .collect();
    let reused = reused_locations(placed, m.memlocs.len());
    if !reused.contains(&true) {
        return Ok((report, new_deps));
    }
    new_deps.start.reserve_exact(n + 1);
    let access = |ap: &crate::ir::AccessPattern, write: bool| -> Option<Access> {
        if !reused.get(ap.loc.index()).copied().unwrap_or(false) {
            return None;
        }
        let l = m.loc(ap.loc);
        let esize = u64::from(l.dtype.size());
        let lo = l.address?.saturating_add(ap.offset.saturating_mul(esize));
        let hi = lo.saturating_add(ap.len.saturating_mul(esize));
        (lo < hi).then_some(Access { loc: ap.loc, lo, hi, write })
    };
    // Direct predecessors (original edges plus added ones), by instruction index.
    // Appended to `out` while it holds fewer than `cap` entries (no temporary Vec).
    let direct = |j: usize, new_deps: &NewDeps, out: &mut Vec<usize>, cap: usize| {
        let old = f.insts[j].deps.iter().map(|d| d.inst.index());
        for i in old.chain(new_deps.of(j).iter().map(|d| d.inst.index())).filter(|&i| i < j) {
            if out.len() >= cap {
                break;
            }
            out.push(i);
        }
    };
    let mut runs = Runs::default();
    let mut cands: BTreeMap<usize, EdgeKind> = BTreeMap::new();
    // This instruction's accesses, one buffer reused for every instruction.
    let mut mine: Vec<Access> = Vec::new();
    // The instructions already ordered before this one (capped), one buffer reused.
    let mut cover: Vec<usize> = Vec::new();
    // The edges being added to this instruction, one buffer reused.
    let mut added: Vec<Dep> = Vec::new();
    for j in 0..n {
        new_deps.start.push(new_deps.deps.len());
        let inst = &f.insts[j];
        mine.clear();
        mine.extend(
            inst.read_slice()
                .iter()
                .filter_map(|ap| access(ap, false))
                .chain(inst.write_ref().and_then(|ap| access(ap, true))),
        );
        if mine.is_empty() {
            continue;
        }
        cands.clear();
        for a in &mine {
            let mut offer = |i: usize, kind: EdgeKind| {
                let e = cands.entry(i).or_insert(kind);
                if rank(kind) > rank(*e) {
                    *e = kind;
                }
            };
            runs.visit(a.lo, a.hi, |run| {
                if let Some((w, loc)) = run.writer
                    && loc != a.loc
                    && w != j
                {
                    offer(w, if a.write { EdgeKind::Waw } else { EdgeKind::Data });
                }
                if a.write {
                    for &(r, loc) in &run.readers {
                        if loc != a.loc && r != j {
                            offer(r, EdgeKind::War);
                        }
                    }
                }
            });
        }
        if !cands.is_empty() {
            // What J already follows: its direct predecessors and theirs (capped).
            cover.clear();
            direct(j, &new_deps, &mut cover, usize::MAX);
            for k in 0..cover.len() {
                if cover.len() >= COVER_CAP {
                    break;
                }
                direct(cover[k], &new_deps, &mut cover, COVER_CAP);
            }
            cover.sort_unstable();
            cover.dedup();
            added.clear();
            for (&i, &kind) in cands.iter().rev() {
                if cover.binary_search(&i).is_ok() {
                    continue;
                }
                match kind {
                    EdgeKind::Waw => report.waw += 1,
                    EdgeKind::War => report.war += 1,
                    _ => report.raw += 1,
                }
                added.push(Dep { inst: InstId::from_index(i), kind });
                if cover.len() < COVER_CAP {
                    cover.push(i);
                    direct(i, &new_deps, &mut cover, COVER_CAP);
                    cover.sort_unstable();
                    cover.dedup();
                }
            }
            new_deps.deps.extend_from_slice(&added);
        }
        for a in &mine {
            if !a.write {
                runs.read(a.lo, a.hi, (j, a.loc));
            }
        }
        for a in &mine {
            if a.write {
                runs.write(a.lo, a.hi, (j, a.loc));
            }
        }
        if runs.3 > limit {
            return Err(());
        }
    }
    report.steps = runs.3;
    new_deps.start.push(new_deps.deps.len());
    if report.added() > 0 {
        crate::marks::hit(match space {
            Space::Private => "dram.anti_deps_post_dram",
            Space::Shared => "dram.anti_deps_post_shared_dram",
        });
    }
    Ok((report, new_deps))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(i: usize) -> MemLocId {
        MemLocId::from_index(i)
    }

    #[test]
    fn reuse_detection_finds_every_overlapping_location() {
        // 0 and 2 overlap through a long 0; 1 is nested in 0; 3 touches 2's end only; 4 is empty.
        let placed = vec![(0, 100, id(0)), (10, 20, id(1)), (50, 60, id(2)), (100, 110, id(3)), (5, 5, id(4))];
        assert_eq!(reused_locations(placed, 5), vec![true, true, true, false, false]);
        assert_eq!(reused_locations(vec![(0, 4, id(0)), (4, 8, id(1))], 2), vec![false, false]);
    }

    #[test]
    fn runs_keep_the_last_writer_and_readers_since() {
        let mut r = Runs::default();
        r.write(0, 100, (0, id(0)));
        r.read(50, 150, (1, id(1)));
        r.write(20, 60, (2, id(2)));
        let mut seen = Vec::new();
        r.visit(0, 200, |run| seen.push((run.end, run.writer.map(|w| w.0), run.readers.len())));
        assert_eq!(seen, vec![(20, Some(0), 0), (60, Some(2), 0), (100, Some(0), 1), (150, None, 1)]);
    }

    #[test]
    fn the_walk_counts_its_steps_and_refuses_past_the_limit() {
        let m = crate::ir::parse(&reuse_worst_case(40, 30)).unwrap_or_else(|e| panic!("{e}"));
        let steps = analyze(&mut m.clone(), Space::Private, u64::MAX).unwrap()[0].steps;
        // Every read meets all 40 one-element runs: the step count grows as t·k.
        assert!(steps >= 40 * 30, "{steps}");
        let mut at = m.clone();
        assert_eq!(analyze(&mut at, Space::Private, steps).unwrap()[0].steps, steps);
        let mut below = m.clone();
        let err = analyze(&mut below, Space::Private, steps - 1).unwrap_err();
        assert!(matches!(&err, DramError::AntiDepLimit { func, limit, .. } if func == "main" && *limit == steps - 1));
        assert_eq!(below, m, "a refused function gets none of its edges");
    }

    #[test]
    fn every_kind_of_step_is_counted() {
        // A split (of a run with readers), a visit, a read's pushes and gaps, a write's removals.
        let mut r = Runs::default();
        r.write(0, 100, (0, id(0)));
        assert_eq!(r.3, 0, "a write into an empty map removes nothing");
        r.read(50, 150, (1, id(1)));
        // Split at 50 (1 run, 0 readers), then at 150 (nothing): the tail [50, 100) gets a reader,
        // [100, 150) is a gap: 1 + 1 + 1.
        assert_eq!(r.3, 3);
        r.visit(0, 200, |_| {});
        // Three runs, two of them with one reader: 3 + 2.
        assert_eq!(r.3, 8);
        r.write(20, 60, (2, id(2)));
        // Split at 20 (0 readers), at 60 (one reader: 1 + 1), then runs [20, 50) and [50, 60) removed.
        assert_eq!(r.3, 8 + 1 + 2 + 2);
    }
}
