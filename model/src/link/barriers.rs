//! Core-barrier slot renumbering (seed 000 §7) and its two companions.
//!
//! `renumberCoreBarriers(Module&)`: one counter from 0 over every function of
//! the merged module (function order, then block order, then instruction
//! order); every *flagged* barrier gets the next slot id and its flag is
//! cleared; unflagged barriers keep their id. Groups and participants are
//! never touched, so the participants of every logical barrier still meet
//! (DESIGN.md, "CoreBarriers"); only the hardware slots become unique.
//!
//! `orderCoreBarriersAndCollectives(BasicBlock&)` orders each block's
//! barriers; `run` calls it ([`order_module_core_barriers`]) on every block
//! of the merged module right before the renumbering (the seed keeps it in
//! the renumbering's translation unit without naming its call site; choice:
//! just before, so slot ids follow the ordered stream). `addBarrier`
//! ([`add_barrier`]) is the link-time fence wiring: dependency edges from one
//! instruction set to another (used by `fpassInsertReturns` and
//! `fpassInsertSwitchQueueInstances`).

use std::collections::{BTreeMap, BTreeSet};

use crate::ir::{BlockId, Dep, EdgeKind, Function, InstId, Module, Op};
use crate::marks;

/// Why `addBarrier` refused to wire two instruction sets (nothing was added).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AddBarrierError {
    /// An instruction id is not in the function.
    #[error("instruction #{0} is not in function `{1}`")]
    NoSuchInst(u32, String),
    /// An edge would not point to an earlier instruction (program order), so it would form a cycle.
    #[error("`{after}` cannot depend on `{before}`: `{before}` does not come first in `{func}`")]
    NotEarlier {
        /// The instruction that would wait.
        after: String,
        /// The instruction it would wait for.
        before: String,
        /// The function.
        func: String,
    },
}

/// `addBarrier(vec<Instruction*>, vec<Instruction*>)` (seed 000 §7, the
/// seed's `Instruction::addDependency` per pair): every instruction of
/// `after` gets a dependency of `kind` on every instruction of `before`,
/// skipping edges it already has. Every edge must point to an instruction
/// earlier in program order (the IR's acyclicity rule); otherwise nothing is
/// added and the error names the pair. Returns the number of edges added.
///
/// Cost: O(n) for the program-order positions plus O(|before| * |after|)
/// edges checked (it adds up to that many; callers pass small sets).
pub fn add_barrier(
    f: &mut Function,
    before: &[InstId],
    after: &[InstId],
    kind: EdgeKind,
) -> Result<usize, AddBarrierError> {
    let n = f.insts.len();
    let mut pos = vec![usize::MAX; n];
    for (p, id) in f.order().enumerate() {
        if let Some(slot) = pos.get_mut(id.index()) {
            *slot = p;
        }
    }
    let at = |id: InstId| match pos.get(id.index()) {
        Some(&p) if p != usize::MAX => Ok(p),
        _ => Err(AddBarrierError::NoSuchInst(id.0, f.name.clone())),
    };
    for &a in after {
        for &b in before {
            if at(b)? >= at(a)? {
                let name = |id: InstId| f.insts[id.index()].name.to_string();
                return Err(AddBarrierError::NotEarlier { after: name(a), before: name(b), func: f.name.clone() });
            }
        }
    }
    let mut added = 0;
    for &a in after {
        let deps = &mut f.insts[a.index()].deps;
        let mut have: BTreeSet<(InstId, EdgeKind)> = deps.iter().map(|d| (d.inst, d.kind)).collect();
        for &b in before {
            if have.insert((b, kind)) {
                deps.push(Dep { inst: b, kind });
                added += 1;
            }
        }
    }
    marks::hit("link.barrier.add_barrier");
    Ok(added)
}

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

/// The new order of `block`'s instructions with its barriers in ascending
/// group order: `Ok(None)` when it is already ordered (or has under two
/// barriers), `Err(())` when the new order would make a dependency edge point
/// forwards (then the block must stay as it is).
///
/// Cost: O(b log b) in the block's instructions plus their edges (edges to
/// other blocks keep their direction: blocks keep their order).
fn plan_block_order(f: &Function, block: BlockId) -> Result<Option<Vec<InstId>>, ()> {
    let Some(b) = f.blocks.get(block.index()) else { return Ok(None) };
    // (position, group, instruction) of every barrier, in one pass over the block.
    let mut slots: Vec<(usize, u32, InstId)> = Vec::new();
    for (p, &id) in b.insts.iter().enumerate() {
        if let Op::CoreBarrier(cb) = &f.insts[id.index()].op {
            slots.push((p, cb.group, id));
        }
    }
    // Already in group order (the common case): the stable sort would change nothing.
    if slots.windows(2).all(|w| w[0].1 <= w[1].1) {
        return Ok(None);
    }
    let mut barriers: Vec<(u32, InstId)> = slots.iter().map(|s| (s.1, s.2)).collect();
    barriers.sort_by_key(|e| e.0);
    let mut new = b.insts.clone();
    for (s, &(_, id)) in slots.iter().zip(&barriers) {
        new[s.0] = id;
    }
    if new == b.insts {
        return Ok(None);
    }
    // Legal only if every edge between two instructions of this block still points backwards.
    let pos: BTreeMap<InstId, usize> = new.iter().enumerate().map(|(p, &id)| (id, p)).collect();
    let legal = new
        .iter()
        .enumerate()
        .all(|(p, id)| f.insts[id.index()].deps.iter().all(|d| pos.get(&d.inst).is_none_or(|&q| q < p)));
    if legal { Ok(Some(new)) } else { Err(()) }
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
    match plan_block_order(f, block) {
        Ok(None) => false,
        Err(()) => {
            marks::hit("link.barrier.order_illegal");
            false
        }
        Ok(Some(new)) => {
            f.blocks[block.index()].insts = new;
            f.canonicalize();
            marks::hit("link.barrier.reordered");
            true
        }
    }
}

/// What [`order_module_core_barriers`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BarrierOrder {
    /// Every block was already in order.
    Unchanged,
    /// This many blocks were reordered.
    Reordered(usize),
    /// Some block could not be reordered legally, so none was: reordering the
    /// arrivals of one core only would let two cores meet two groups in
    /// opposite orders (a deadlock the inputs did not have).
    Refused,
}

/// `orderCoreBarriersAndCollectives` over every block of `m`, all or
/// nothing (see [`BarrierOrder::Refused`]). Cost: O(n log n) in instructions.
pub fn order_module_core_barriers(m: &mut Module) -> BarrierOrder {
    let mut plans: Vec<(usize, usize, Vec<InstId>)> = Vec::new();
    for (fi, f) in m.functions.iter().enumerate() {
        for bi in 0..f.blocks.len() {
            match plan_block_order(f, BlockId::from_index(bi)) {
                Ok(None) => {}
                Ok(Some(new)) => plans.push((fi, bi, new)),
                Err(()) => {
                    marks::hit("link.barrier.order_refused");
                    return BarrierOrder::Refused;
                }
            }
        }
    }
    if plans.is_empty() {
        return BarrierOrder::Unchanged;
    }
    let n = plans.len();
    let mut touched = BTreeSet::new();
    for (fi, bi, new) in plans {
        m.functions[fi].blocks[bi].insts = new;
        touched.insert(fi);
    }
    for fi in touched {
        m.functions[fi].canonicalize();
    }
    marks::hit("link.barrier.reordered");
    BarrierOrder::Reordered(n)
}
