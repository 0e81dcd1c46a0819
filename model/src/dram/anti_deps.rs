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
//! side writing, `J` gets a dependency on `I`: `Waw` when both write, `War`
//! when `J` writes what `I` read, and `Data` when `J` reads bytes `I` wrote
//! through another tensor (a read of reused bytes, ordered like a true
//! dependency through memory). Same-tensor ordering is the program's own
//! business (its data edges). Edges point backward (the IR verifier's rule)
//! and are deduplicated: no edge is added when `J` already depends on `I`,
//! directly or transitively (through any edge kind), so the pass adds a
//! near-minimal set; candidates are scanned nearest first, so one edge to the
//! latest conflicting instruction covers earlier ones it already follows.
//!
//! Cross-core ordering is not this pass's job: shared tensors never reuse each
//! other's addresses ([`super::shared`]) and the splitter's barriers order the
//! handoffs, so the shared pass only finds conflicts in hand-placed modules.

use super::allocate::Space;
use super::problem::{DRAM_PAGE, round_up};
use crate::ir::{Dep, EdgeKind, InstId, MemLocId, Module, Usage};

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
}

impl AntiDepReport {
    /// All edges added.
    pub fn added(&self) -> usize {
        self.waw + self.war + self.raw
    }
}

/// The private-region pass (`anti_dependency_analyzer_post_dram`), every function.
pub fn anti_dependency_analyzer_post_dram(m: &mut Module) -> Vec<AntiDepReport> {
    analyze(m, Space::Private)
}

/// The shared-region pass (`anti_dependency_analyzer_post_shared_dram`), every function.
pub fn anti_dependency_analyzer_post_shared_dram(m: &mut Module) -> Vec<AntiDepReport> {
    analyze(m, Space::Shared)
}

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
    let ok = space.holds(l) && (space == Space::Shared || matches!(l.usage, Usage::Internal | Usage::Spill));
    let a = l.address.filter(|_| ok)?;
    Some((a, a.saturating_add(round_up(l.byte_size(), DRAM_PAGE).unwrap_or(u64::MAX))))
}

/// The strongest conflict between `earlier` and `later`, if any.
fn conflict(earlier: &[Access], later: &[Access]) -> Option<EdgeKind> {
    let mut best: Option<EdgeKind> = None;
    for b in later {
        for a in earlier {
            if a.loc == b.loc || a.lo >= b.hi || b.lo >= a.hi || !(a.write || b.write) {
                continue;
            }
            let kind = match (a.write, b.write) {
                (true, true) => EdgeKind::Waw,
                (false, true) => EdgeKind::War,
                _ => EdgeKind::Data,
            };
            let rank = |k: Option<EdgeKind>| match k {
                Some(EdgeKind::Waw) => 3,
                Some(EdgeKind::War) => 2,
                Some(_) => 1,
                None => 0,
            };
            if rank(Some(kind)) > rank(best) {
                best = Some(kind);
            }
        }
    }
    best
}

fn set(bits: &mut [u64], i: usize) {
    bits[i / 64] |= 1 << (i % 64);
}

fn get(bits: &[u64], i: usize) -> bool {
    bits[i / 64] & (1 << (i % 64)) != 0
}

fn or_into(dst: &mut [u64], src: &[u64]) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d |= s;
    }
}

fn analyze(m: &mut Module, space: Space) -> Vec<AntiDepReport> {
    let mut reports = Vec::new();
    for fi in 0..m.functions.len() {
        m.functions[fi].canonicalize();
        let (report, new_deps) = analyze_function(m, fi, space);
        for (j, deps) in new_deps.into_iter().enumerate() {
            if deps.is_empty() {
                continue;
            }
            let inst = &mut m.functions[fi].insts[j];
            inst.deps.extend(deps);
            inst.deps.sort_unstable();
            inst.deps.dedup();
        }
        reports.push(report);
    }
    reports
}

/// The edges to add to each instruction of canonical function `fi`.
fn analyze_function(m: &Module, fi: usize, space: Space) -> (AntiDepReport, Vec<Vec<Dep>>) {
    let f = &m.functions[fi];
    let n = f.insts.len();
    let mut report = AntiDepReport { function: f.name.clone(), ..AntiDepReport::default() };
    // Placed locations of the region whose aligned range meets another's: only they can conflict.
    let mut placed: Vec<(u64, u64, MemLocId)> = super::liveness::touched(f)
        .into_iter()
        .filter_map(|id| in_region(m, id, space).map(|(lo, hi)| (lo, hi, id)))
        .collect();
    placed.sort_unstable();
    let mut reused = vec![false; m.memlocs.len()];
    for (k, &(lo, hi, id)) in placed.iter().enumerate() {
        for &(lo2, hi2, id2) in &placed[k + 1..] {
            if lo2 >= hi {
                break;
            }
            if hi2 > lo && lo < hi && lo2 < hi2 {
                reused[id.index()] = true;
                reused[id2.index()] = true;
            }
        }
    }
    let access = |ap: &crate::ir::AccessPattern, write: bool| -> Option<Access> {
        if !reused.get(ap.loc.index()).copied().unwrap_or(false) {
            return None;
        }
        let l = m.loc(ap.loc);
        let esize = u64::from(l.dtype.size());
        let lo = l.address?.saturating_add(ap.offset.saturating_mul(esize));
        Some(Access { loc: ap.loc, lo, hi: lo.saturating_add(ap.len.saturating_mul(esize)), write })
    };
    let accesses: Vec<Vec<Access>> = f
        .insts
        .iter()
        .map(|i| {
            let reads = i.reads().into_iter().filter_map(|ap| access(&ap, false));
            reads.chain(i.write().and_then(|ap| access(&ap, true))).collect()
        })
        .collect();
    let mut new_deps: Vec<Vec<Dep>> = vec![Vec::new(); n];
    let relevant: Vec<usize> = (0..n).filter(|&i| !accesses[i].is_empty()).collect();
    if relevant.len() < 2 {
        return (report, new_deps);
    }
    // reach[j]: every instruction j depends on, transitively (bitset over indices < j).
    let words = n.div_ceil(64);
    let mut reach: Vec<Vec<u64>> = Vec::with_capacity(n);
    for j in 0..n {
        let mut r = vec![0u64; words];
        for d in &f.insts[j].deps {
            let i = d.inst.index();
            if i < j {
                set(&mut r, i);
                or_into(&mut r, &reach[i]);
            }
        }
        if !accesses[j].is_empty() {
            let upto = relevant.partition_point(|&i| i < j);
            for &i in relevant[..upto].iter().rev() {
                if get(&r, i) {
                    continue;
                }
                let Some(kind) = conflict(&accesses[i], &accesses[j]) else { continue };
                match kind {
                    EdgeKind::Waw => report.waw += 1,
                    EdgeKind::War => report.war += 1,
                    _ => report.raw += 1,
                }
                new_deps[j].push(Dep { inst: InstId::from_index(i), kind });
                set(&mut r, i);
                or_into(&mut r, &reach[i]);
            }
        }
        reach.push(r);
    }
    if report.added() > 0 {
        crate::marks::hit(match space {
            Space::Private => "dram.anti_deps_post_dram",
            Space::Shared => "dram.anti_deps_post_shared_dram",
        });
    }
    (report, new_deps)
}
