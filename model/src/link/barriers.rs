//! Core-barrier slot renumbering (seed 000 §7) and its two companions.
//!
//! `renumberCoreBarriers(Module&)`: one counter from 0 over every function of
//! the merged module (function order, then block order, then instruction
//! order); every *flagged* barrier gets the next slot id and its flag is
//! cleared; unflagged barriers keep their id. Groups and participants are
//! never touched, so the participants of every logical barrier still meet
//! (DESIGN.md, "CoreBarriers"); only the hardware slots become unique.

use std::collections::BTreeMap;

use crate::ir::{BlockId, Function, InstId, Module, Op};
use crate::marks;

/// Renumbers the flagged barriers of `m` from 0 and clears their flags; returns how many.
pub fn renumber_core_barriers(m: &mut Module) -> u32 {
    let mut ctr = 0u32;
    for f in &mut m.functions {
        renumber_function(f, &mut ctr);
    }
    marks::hit("link.barrier.renumber");
    ctr
}

/// The pre-merge overload (seed: `renumberCoreBarriers(vector<unique_ptr<Module>>&, ulong)`):
/// one counter from `base` across the still-separate modules, in slice order;
/// returns the next free id.
pub fn renumber_core_barriers_in_modules(modules: &mut [Module], base: u32) -> u32 {
    let mut ctr = base;
    for m in modules {
        for f in &mut m.functions {
            renumber_function(f, &mut ctr);
        }
    }
    marks::hit("link.barrier.renumber_pre_merge");
    ctr
}

fn renumber_function(f: &mut Function, ctr: &mut u32) {
    // Execution order (the seed walks the function's instruction list).
    let order: Vec<InstId> = f.order().collect();
    for id in order {
        if let Op::CoreBarrier(b) = &mut f.insts[id.index()].op {
            if b.flagged {
                b.id = *ctr;
                *ctr += 1;
                b.flagged = false;
            } else {
                marks::hit("link.barrier.unflagged_kept");
            }
        }
    }
}

/// `orderCoreBarriersAndCollectives(BasicBlock&)`: puts the barriers of
/// `block` in ascending group order, the global rendezvous order in which the
/// splitter places every core's arrivals (so no interleaving deadlocks).
///
/// Choice (seed §7 says only "keeping the merged stream's barrier/collective
/// order legal"): the barriers are permuted among the positions barriers
/// already hold; every other instruction, collectives included, keeps its
/// position, so collectives stay fenced by the barrier slots around them. The
/// new order is kept only when every dependency edge still points to an
/// earlier instruction; otherwise the block is left as it was. Returns true
/// when the block changed. The arena is re-canonicalized.
pub fn order_core_barriers_and_collectives(f: &mut Function, block: BlockId) -> bool {
    let Some(b) = f.blocks.get(block.index()) else { return false };
    let slots: Vec<usize> =
        (0..b.insts.len()).filter(|&p| matches!(f.insts[b.insts[p].index()].op, Op::CoreBarrier(_))).collect();
    let mut barriers: Vec<InstId> = slots.iter().map(|&p| b.insts[p]).collect();
    let group = |id: &InstId| match &f.insts[id.index()].op {
        Op::CoreBarrier(cb) => cb.group,
        _ => u32::MAX,
    };
    barriers.sort_by_key(group);
    let mut new = b.insts.clone();
    for (&p, &id) in slots.iter().zip(&barriers) {
        new[p] = id;
    }
    if new == b.insts {
        return false;
    }
    // Legal only if every dependency inside the function still points backwards.
    let mut pos: BTreeMap<InstId, (usize, usize)> = BTreeMap::new();
    for (bi, blk) in f.blocks.iter().enumerate() {
        let list = if bi == block.index() { &new } else { &blk.insts };
        for (p, &id) in list.iter().enumerate() {
            pos.insert(id, (bi, p));
        }
    }
    let legal = f.insts.iter().enumerate().all(|(i, inst)| {
        let me = pos.get(&InstId::from_index(i));
        inst.deps.iter().all(|d| matches!((pos.get(&d.inst), me), (Some(a), Some(b)) if a < b))
    });
    if !legal {
        marks::hit("link.barrier.order_illegal");
        return false;
    }
    f.blocks[block.index()].insts = new;
    f.canonicalize();
    marks::hit("link.barrier.reordered");
    true
}
