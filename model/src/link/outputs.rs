//! `fixOutputKind` (seed 000 §5d): cross-core intermediates stop being
//! external outputs.
//!
//! Rule (the seed's "Intermediate Output" / "outs2Erase", made precise), for
//! every `output` location of the linked module:
//!
//! - **consumed by another core** (some view of another core was unified into
//!   it): an intermediate. It is demoted to `internal`, dropped from the
//!   function arguments and the tensor map, and reported as "Intermediate
//!   Output <name>" (with whether it has real readers) — mark
//!   `link.fix_output.intermediate`.
//! - **no real reader and no writer** (`hasRealReaders` is false, no DMA copy
//!   reads it and nothing writes it: a declared output no core produces):
//!   erased — the location is removed from the module, its sets, arguments and
//!   the tensor map ("outs2Erase") — mark `link.fix_output.erase`.
//! - otherwise a true program output: it stays external.
//!
//! `hasRealReaders` follows the seed: a reader is real when it is not a DMA
//! copy (a compute instruction reads it).

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

/// `fixOutputKind`: the rule in the module doc.
pub fn fix_output_kind(l: &mut BirLinker<'_>) -> Result<(), LinkError> {
    let counts = access_counts(&l.main);
    let mut demoted: BTreeSet<MemLocId> = BTreeSet::new();
    let mut erased: BTreeSet<MemLocId> = BTreeSet::new();
    for (i, loc) in l.main.memlocs.iter_mut().enumerate() {
        if loc.usage != Usage::Output || loc.remote_local_target.is_some() {
            continue;
        }
        let id = MemLocId::from_index(i);
        let (writers, real, dma) = counts[i];
        if let Some(cores) = l.consumed.get(&id) {
            marks::hit("link.fix_output.intermediate");
            let readers = if real > 0 { "has real readers" } else { "DMA-copy readers only" };
            l.report
                .intermediate_outputs
                .push(format!("Intermediate Output {} (consumed on cores {cores:?}; {readers})", loc.name));
            loc.usage = Usage::Internal;
            demoted.insert(id);
        } else if writers == 0 && real == 0 && dma == 0 {
            marks::hit("link.fix_output.erase");
            l.report.erased_outputs.push(loc.name.clone());
            erased.insert(id);
        } else {
            marks::hit("link.fix_output.kept");
        }
    }
    for id in demoted.iter().chain(&erased) {
        let name = l.main.memlocs[id.index()].name.clone();
        l.tensor_map.entries.remove(&name);
    }
    for f in &mut l.main.functions {
        f.args.retain(|a| !demoted.contains(a) && !erased.contains(a));
    }
    if !erased.is_empty() {
        remove_locs(&mut l.main, &erased);
        let remap = remap_table(l.main.memlocs.len() + erased.len(), &erased);
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
