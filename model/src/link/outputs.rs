//! `fixOutputKind` (seed 000 §5d): cross-core intermediates stop being
//! external outputs.
//!
//! The seed: an output "only consumed by another core is demoted from
//! ExternalOutput to an internal/intermediate kind; outputs with no real
//! reader are erased", `hasRealReaders` deciding. Made precise for this IR
//! (choice: the seed's outputs list is a separate table, here being an output
//! *is* the usage class plus the arguments, sets and tensor map, and bytes an
//! instruction still touches can never be dropped), for every `output`
//! location of the linked module that is not a view:
//!
//! - **intermediate** (some view of another core was unified into it) with
//!   real readers ([`has_real_readers`]: a non-DMA-copy instruction reads it):
//!   demoted to `internal` and reported as "Intermediate Output <name>" —
//!   mark `link.fix_output.intermediate`.
//! - **intermediate without a real reader** (only DMA copies read it, or
//!   nothing does): the seed's `outs2Erase`: erased from the outputs and
//!   reported in `erased_outputs` — mark `link.fix_output.erase_intermediate`.
//! - **no writer and no real reader** (a declared output no core produces;
//!   valid IR reads no location before a write, so nothing reads it either):
//!   erased — mark `link.fix_output.erase`.
//! - otherwise a true program output: it stays external (`link.fix_output.kept`).
//!
//! An erased output leaves the module when no instruction references it;
//! otherwise (a write or a DMA copy still moves its bytes) it stays as an
//! `internal` location. Every demoted or erased location, and every view that
//! was dangling IO (`io2Spill`), leaves the function arguments, the tensor
//! map and every MemoryLocationSet (seed §5b: the sets bind a function's
//! arguments, `FunctionArgumentMap::setMapping`), so no set names a location
//! that is no longer IO.
//!
//! Cost: O(I + L + S) in instructions, locations and set members.

use std::collections::BTreeSet;

use super::{BirLinker, LinkError};
use crate::ir::{MemLocId, Module, Op, Usage};
use crate::marks;

/// How each location of `m` is used: (writers, real readers, DMA-copy readers).
pub fn access_counts(m: &Module) -> Vec<(u32, u32, u32)> {
    let mut c = vec![(0u32, 0u32, 0u32); m.memlocs.len()];
    for inst in m.functions.iter().flat_map(|f| &f.insts) {
        // Matched directly (not through `Inst::reads`) to allocate nothing per instruction.
        match &inst.op {
            Op::DmaCopy { src, dst } => {
                c[src.loc.index()].2 += 1;
                c[dst.loc.index()].0 += 1;
            }
            Op::Compute { srcs, dst, .. } => {
                srcs.iter().for_each(|s| c[s.loc.index()].1 += 1);
                c[dst.loc.index()].0 += 1;
            }
            _ => {}
        }
    }
    c
}

/// `hasRealReaders`: some non-DMA-copy instruction of `m` reads `loc`.
pub fn has_real_readers(m: &Module, loc: MemLocId) -> bool {
    m.functions
        .iter()
        .flat_map(|f| &f.insts)
        .any(|i| !matches!(i.op, Op::DmaCopy { .. }) && i.reads().iter().any(|a| a.loc == loc))
}

/// What `fixOutputKind` does with one output (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputFate {
    /// A true program output: stays external.
    Kept,
    /// A cross-core intermediate with real readers: demoted to `internal`.
    Intermediate,
    /// No real reader (an intermediate read only by DMA copies, or an
    /// unproduced output): erased from the outputs.
    Erased,
}

/// The fate of an output from its uses: `consumed` by another core,
/// `writers`, `real` readers (the count behind [`has_real_readers`]).
pub fn output_fate(consumed: bool, writers: u32, real: u32) -> OutputFate {
    match (consumed, real > 0) {
        (true, true) => OutputFate::Intermediate,
        (true, false) => OutputFate::Erased,
        (false, false) if writers == 0 => OutputFate::Erased,
        (false, _) => OutputFate::Kept,
    }
}

/// `fixOutputKind`: the rule in the module doc.
pub fn fix_output_kind(l: &mut BirLinker<'_>) -> Result<(), LinkError> {
    let counts = access_counts(&l.main);
    // No longer IO: leaves arguments, tensor map and sets.
    let mut not_io: BTreeSet<MemLocId> = l.io_views.iter().copied().collect();
    // Erased and referenced by no instruction: leaves the module.
    let mut removed: BTreeSet<MemLocId> = BTreeSet::new();
    for (i, loc) in l.main.memlocs.iter_mut().enumerate() {
        if loc.usage != Usage::Output || loc.remote_local_target.is_some() {
            continue;
        }
        let id = MemLocId::from_index(i);
        let (writers, real, dma) = counts[i];
        let consumed = l.consumed.get(&id);
        match output_fate(consumed.is_some(), writers, real) {
            OutputFate::Kept => {
                marks::hit("link.fix_output.kept");
                continue;
            }
            OutputFate::Intermediate => {
                marks::hit("link.fix_output.intermediate");
                let cores = consumed.cloned().unwrap_or_default();
                l.report
                    .intermediate_outputs
                    .push(format!("Intermediate Output {} (consumed on cores {cores:?}; has real readers)", loc.name));
            }
            OutputFate::Erased => {
                let why = match consumed {
                    Some(c) => {
                        marks::hit("link.fix_output.erase_intermediate");
                        format!("intermediate consumed on cores {c:?} without a real reader")
                    }
                    None => {
                        marks::hit("link.fix_output.erase");
                        "no core writes it and no real reader".to_string()
                    }
                };
                l.report.erased_outputs.push(format!("{} ({why})", loc.name));
                if writers == 0 && dma == 0 && real == 0 {
                    removed.insert(id);
                }
            }
        }
        loc.usage = Usage::Internal;
        not_io.insert(id);
    }
    for id in &not_io {
        let name = l.main.memlocs[id.index()].name.clone();
        l.tensor_map.entries.remove(name.as_str());
    }
    for f in &mut l.main.functions {
        f.args.retain(|a| !not_io.contains(a));
    }
    for s in &mut l.main.sets {
        s.locs.retain(|a| !not_io.contains(a));
    }
    if !removed.is_empty() {
        remove_locs(&mut l.main, &removed);
        let remap = remap_table(l.main.memlocs.len() + removed.len(), &removed);
        l.consumed =
            std::mem::take(&mut l.consumed).into_iter().filter_map(|(k, v)| remap[k.index()].map(|n| (n, v))).collect();
    }
    Ok(())
}

/// Old index -> new id after removing `gone` from an arena of `len` slots.
fn remap_table(len: usize, gone: &BTreeSet<MemLocId>) -> Vec<Option<MemLocId>> {
    let mut next = 0;
    (0..len)
        .map(|i| {
            if gone.contains(&MemLocId::from_index(i)) {
                None
            } else {
                next += 1;
                Some(MemLocId::from_index(next - 1))
            }
        })
        .collect()
}

/// Removes locations no instruction references, remapping every id in `m`
/// (sets, arguments, aliases and access patterns); edges into removed locations vanish.
pub fn remove_locs(m: &mut Module, gone: &BTreeSet<MemLocId>) {
    let remap = remap_table(m.memlocs.len(), gone);
    let map = |id: MemLocId| remap.get(id.index()).copied().flatten();
    let old = std::mem::take(&mut m.memlocs);
    for (i, mut loc) in old.into_iter().enumerate() {
        if remap[i].is_none() {
            continue;
        }
        loc.aliases.retain_mut(|a| map(a.target).map(|t| a.target = t).is_some());
        m.memlocs.push(loc);
    }
    for s in &mut m.sets {
        s.locs.retain_mut(|id| map(*id).map(|n| *id = n).is_some());
    }
    for f in &mut m.functions {
        f.args.retain_mut(|id| map(*id).map(|n| *id = n).is_some());
        for inst in &mut f.insts {
            let fix = |a: &mut crate::ir::AccessPattern| {
                if let Some(n) = map(a.loc) {
                    a.loc = n;
                }
            };
            match &mut inst.op {
                Op::DmaCopy { src, dst } => {
                    fix(src);
                    fix(dst);
                }
                Op::Compute { srcs, dst, .. } => {
                    srcs.iter_mut().for_each(fix);
                    fix(dst);
                }
                _ => {}
            }
        }
    }
}
