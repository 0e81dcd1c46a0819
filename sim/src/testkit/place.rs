//! A trivial address assignment for split per-core modules, standing in for
//! the DRAM allocator and the linker until the real pipeline is used: every
//! private location its own disjoint range of its core's scratch, every
//! producer's shared tensor its own disjoint range of the shared region, every
//! consumer view synced to its target's address and renamed to the target's
//! name (the linker's name unification), and barrier slot IDs renumbered
//! with one counter over all cores (the linker's `renumberCoreBarriers`).

use std::collections::BTreeMap;

use lncsim_model::ir::{Module, Op, Usage};
use lncsim_model::split::split;

/// What to get deliberately wrong (for checker tests).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PlaceOptions {
    /// Keep each core's own barrier numbering (slot IDs collide across cores;
    /// the real linker renumbers).
    pub skip_barrier_renumbering: bool,
    /// Place the named location at the address of the second one (same core).
    pub overlap: Option<(String, String)>,
    /// Keep consumer views' own names (`<t>_in<c>`), as unlinked per-core
    /// modules have them, or for the real linker (which unifies names).
    pub keep_view_names: bool,
    /// Move the consumer views of this shared tensor by this many bytes (unsynced).
    pub unsync_shared: Option<(String, u64)>,
}

/// Alignment of every placed location.
const ALIGN: u64 = 64;

/// Assigns addresses in `modules` (core order) as the module docs say.
pub fn place(modules: &mut [Module], opts: &PlaceOptions) {
    let mut shared_next = 0u64;
    let mut shared_at: BTreeMap<(u32, String), u64> = BTreeMap::new();
    for (core, m) in modules.iter_mut().enumerate() {
        let mut next = 0u64;
        for l in &mut m.memlocs {
            let size = l.byte_size().div_ceil(ALIGN).max(1) * ALIGN;
            match l.usage {
                Usage::Internal | Usage::Spill => {
                    l.address = Some(next);
                    next += size;
                }
                Usage::Shared if l.remote_local_target.is_none() => {
                    l.address = Some(shared_next);
                    shared_at.insert((core as u32, l.name.to_string()), shared_next);
                    shared_next += size;
                }
                _ => {}
            }
        }
        if let Some((a, b)) = &opts.overlap
            && let (Some(ia), Some(ib)) = (m.loc_by_name(a), m.loc_by_name(b))
        {
            m.memlocs[ia.index()].address = m.memlocs[ib.index()].address;
        }
    }
    let mut slot = 0u32;
    for m in modules.iter_mut() {
        for l in &mut m.memlocs {
            let Some(r) = &l.remote_local_target else { continue };
            let mut at = shared_at.get(&(r.core, r.name.to_string())).copied();
            if let Some((name, delta)) = &opts.unsync_shared
                && name == r.name
            {
                at = at.map(|a| a + delta);
            }
            l.address = at;
            if !opts.keep_view_names {
                l.name = r.name.clone();
            }
        }
        for f in &mut m.functions {
            for i in &mut f.insts {
                if let Op::CoreBarrier(b) = &mut i.op
                    && !opts.skip_barrier_renumbering
                {
                    b.id = slot;
                    slot += 1;
                }
            }
        }
    }
}

/// Splits `program` and places the per-core modules.
pub fn split_and_place(program: &Module, opts: &PlaceOptions) -> Result<Vec<Module>, String> {
    let mut modules = split(program).map_err(|e| format!("split: {e}"))?;
    place(&mut modules, opts);
    Ok(modules)
}
