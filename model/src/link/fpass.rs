//! `runFunctionPasses` (seed 000 §5a): `fpassInsertReturns`, then
//! `fpassInsertSwitchQueueInstances`, on every core function.
//!
//! **Returns.** At the end of each core function's last block: first the
//! completion barrier `cb_return_call_def_<core>_instance_<idx>` (a fresh
//! barrier group, one past the largest group of any input, whose participants
//! are all cores; flagged, so `renumberCoreBarriers` gives it a slot), then
//! `return_call_def_<core>_instance_<idx>`. Choice: barrier before return —
//! the seed lists the return first, but an instruction after a return never
//! runs, so the barrier could never complete. The barrier depends (control) on
//! every instruction nothing else in the function depends on (its sinks), so
//! it waits for all of the core's work; the return depends on the barrier.
//! Both edge sets are wired by `addBarrier` ([`add_barrier`]).
//!
//! **Switch-queue instances.** Rule (seed §5a says only "at validated
//! points"): for every unified queue a core function drives with a DMA copy,
//! an `I-SQI-<queue>-call_def_<core>_instance_<idx>` switching the queue to
//! the lowest instance the core's own module declared is inserted immediately
//! before the function's first DMA on that queue, on the queue's owner engine,
//! and that DMA gets a control dependency on it. Skipped when the function
//! already switches that queue before its first use (the program chose), or
//! when the core's module declares no instance. The DMA's edge on the switch
//! is the edge `addBarrier` would add (the switch is before the DMA by
//! construction), appended to the DMA's edges.
//!
//! **No `checkInsertionPointValid`** (deviation, seed §5a, issue 12 §1). The
//! seed validates each insertion point against the block. Here every point is
//! the position of a DMA copied from an input module; inputs hold no return
//! (`runModuleDefPasses` refuses them) and `fpassInsertReturns` appends the
//! completion barrier and return after every copied instruction, so every
//! point lies before them and inside its block by construction: the check
//! could never fail, and a check that cannot fail is a defect (its mark
//! `link.sqi.invalid_point` was unreachable). It is removed; the property it
//! stood for (every switch precedes its DMA and the function's completion
//! barrier) is asserted by the test
//! `switch_queue_instances_precede_their_dma_and_the_completion_barrier`.
//!
//! Cost: O(n + e log s) per core function for n instructions, e edges and
//! s inserted switches (one per queue the core drives): the switches go in
//! by one move of the arena already in block order ([`insert_canonical`]);
//! a function not in block order (none the linker builds) falls back to
//! O(n) per switch.

use std::collections::BTreeSet;

use super::barriers::add_barrier;
use super::{BirLinker, LinkError, call_name};
use crate::ir::*;
use crate::marks;

/// Prefix of the inserted completion barriers.
pub const CB_RETURN_PREFIX: &str = "cb_return_";
/// Prefix of the inserted returns.
pub const RETURN_PREFIX: &str = "return_";
/// Prefix of the inserted switch-queue-instance instructions.
pub const SQI_PREFIX: &str = "I-SQI-";

/// Runs both function passes on every core function.
pub fn run_function_passes(l: &mut BirLinker<'_>) -> Result<(), LinkError> {
    fpass_insert_returns(l)?;
    fpass_insert_switch_queue_instances(l)
}

/// The names of `f` that an inserted name could collide with (those with an
/// inserted prefix), collected in one pass.
fn inserted_like_names(f: &Function) -> BTreeSet<String> {
    let like = |n: &str| [CB_RETURN_PREFIX, RETURN_PREFIX, SQI_PREFIX].iter().any(|p| n.starts_with(p));
    f.insts.iter().filter(|i| like(&i.name)).map(|i| i.name.to_string()).collect()
}

/// A name not in `taken`: `want`, else `want.2`, `want.3`, ...; recorded as taken.
fn fresh_inst_name(taken: &mut BTreeSet<String>, want: String) -> String {
    let name = if taken.contains(&want) {
        (2..).map(|k| format!("{want}.{k}")).find(|n| !taken.contains(n)).unwrap_or(want)
    } else {
        want
    };
    taken.insert(name.clone());
    name
}

/// The group of the completion barrier: one past every input group (0 when
/// there are none); if that overflows, the smallest group no input uses.
pub fn completion_group(modules: &[Module]) -> u32 {
    let used: BTreeSet<u32> = modules
        .iter()
        .flat_map(|m| m.functions.iter().flat_map(|f| &f.insts))
        .filter_map(|i| match &i.op {
            Op::CoreBarrier(b) => Some(b.group),
            _ => None,
        })
        .collect();
    match used.last() {
        None => 0,
        Some(&g) => g.checked_add(1).unwrap_or_else(|| (0..).find(|g| !used.contains(g)).unwrap_or(0)),
    }
}

/// `fpassInsertReturns`: completion barrier then return at the end of every core function.
pub fn fpass_insert_returns(l: &mut BirLinker<'_>) -> Result<(), LinkError> {
    let group = completion_group(l.modules);
    let participants: Vec<u32> = l.info.defs.iter().map(|d| d.core).collect();
    for (d, &fid) in l.core_funcs.iter().enumerate() {
        let (core, idx) = (l.info.defs[d].core, l.info.defs[d].instance);
        let f = &mut l.main.functions[fid.index()];
        if f.blocks.is_empty() {
            f.blocks.push(Block { name: "entry".into(), insts: Vec::new() });
        }
        let mut has_dependent = vec![false; f.insts.len()];
        for i in &f.insts {
            for dep in &i.deps {
                has_dependent[dep.inst.index()] = true;
            }
        }
        let sinks: Vec<InstId> = (0..f.insts.len()).filter(|&i| !has_dependent[i]).map(InstId::from_index).collect();
        let last = BlockId::from_index(f.blocks.len() - 1);
        let call = call_name(core, idx);
        let cb = CoreBarrier { group, participants: participants.clone(), id: 0, flagged: true };
        let mut taken = inserted_like_names(f);
        let name = fresh_inst_name(&mut taken, format!("{CB_RETURN_PREFIX}{call}"));
        let mut barrier = Inst::new(name, Engine::Sp, Op::CoreBarrier(cb));
        barrier.core = Some(core);
        let b = f.push_inst(last, barrier);
        add_barrier(f, &sinks, &[b], EdgeKind::Control)?;
        let mut ret = Inst::new(fresh_inst_name(&mut taken, format!("{RETURN_PREFIX}{call}")), Engine::Sp, Op::Return);
        ret.core = Some(core);
        let r = f.push_inst(last, ret);
        add_barrier(f, &[b], &[r], EdgeKind::Control)?;
        l.report.inserted_returns += 1;
    }
    marks::hit("link.fpass.insert_returns");
    Ok(())
}

/// `fpassInsertSwitchQueueInstances`: the rule in the module doc.
pub fn fpass_insert_switch_queue_instances(l: &mut BirLinker<'_>) -> Result<(), LinkError> {
    for (d, &fid) in l.core_funcs.iter().enumerate() {
        let def = &l.info.defs[d];
        let own = &l.modules[def.module].queues;
        let call = call_name(def.core, def.instance);
        let f = &mut l.main.functions[fid.index()];
        let mut decided: BTreeSet<QueueId> = BTreeSet::new();
        let mut inserts: Vec<(usize, usize, QueueId, u32)> = Vec::new();
        for (bi, b) in f.blocks.iter().enumerate() {
            for (pos, id) in b.insts.iter().enumerate() {
                let inst = &f.insts[id.index()];
                let q = match (&inst.op, inst.queue) {
                    (Op::SwitchQueueInstance { queue, .. }, _) => {
                        if decided.insert(*queue) {
                            marks::hit("link.sqi.program_switches");
                        }
                        continue;
                    }
                    (Op::DmaCopy { .. }, Some(q)) => q,
                    _ => continue,
                };
                if !decided.insert(q) {
                    continue;
                }
                let qname = &l.main.queues[q.index()].name;
                let Some(&instance) = own.iter().find(|x| &x.name == qname).and_then(|x| x.instances.first()) else {
                    marks::hit("link.sqi.no_instance");
                    continue;
                };
                inserts.push((bi, pos, q, instance));
            }
        }
        if inserts.is_empty() {
            f.canonicalize();
            continue;
        }
        let mut taken = inserted_like_names(f);
        // Named back to front (the order the names are taken in is part of the output).
        let mut sqis: Vec<Inst> = Vec::with_capacity(inserts.len());
        for &(_, _, q, instance) in inserts.iter().rev() {
            let queue = &l.main.queues[q.index()];
            let name = fresh_inst_name(&mut taken, format!("{SQI_PREFIX}{}-{call}", queue.name));
            let mut sqi = Inst::new(name, queue.owner, Op::SwitchQueueInstance { queue: q, instance });
            sqi.core = Some(def.core);
            sqis.push(sqi);
            l.report.sqi_inserted += 1;
            marks::hit("link.sqi.inserted");
        }
        sqis.reverse();
        if f.is_canonical() {
            insert_canonical(f, &inserts, sqis);
            continue;
        }
        // Insert back to front so earlier positions stay valid.
        for (&(bi, pos, _, _), sqi) in inserts.iter().zip(sqis).rev() {
            let sid = InstId::from_index(f.insts.len());
            f.insts.push(sqi);
            let dma = f.blocks[bi].insts[pos];
            f.blocks[bi].insts.insert(pos, sid);
            add_barrier(f, &[sid], &[dma], EdgeKind::Control)?;
        }
        f.canonicalize();
    }
    Ok(())
}

/// Inserts `sqis[j]` before the DMA at `inserts[j]` (block, position; in
/// block order) of the canonical `f`, each DMA depending (control) on its
/// switch: the arena `canonicalize` would give after inserting one by one
/// (the same instructions, ids and edge order), built in one move of the
/// arena with no per-instruction table. Cost: O(n + e log s) for n
/// instructions, e edges and s switches.
fn insert_canonical(f: &mut Function, inserts: &[(usize, usize, QueueId, u32)], sqis: Vec<Inst>) {
    let n = f.insts.len();
    // Canonical: block `b` holds the arena indices `first[b]..first[b] + len`.
    let mut first = Vec::with_capacity(f.blocks.len());
    let mut acc = 0usize;
    for b in &f.blocks {
        first.push(acc);
        acc += b.insts.len();
    }
    // The DMAs' old indices, ascending (`inserts` is in block order).
    let at: Vec<usize> = inserts.iter().map(|&(bi, pos, _, _)| first[bi] + pos).collect();
    // Old index -> new: shifted by the switches inserted at or before it.
    let shift = |j: usize| j + at.partition_point(|&a| a <= j);
    let old = std::mem::take(&mut f.insts);
    let mut insts = Vec::with_capacity(n + sqis.len());
    let mut next = at.iter().copied().zip(sqis).peekable();
    for (j, mut inst) in old.into_iter().enumerate() {
        // A dangling edge is dropped, as `canonicalize` drops it.
        inst.deps.retain_mut(|d| {
            let keep = d.inst.index() < n;
            if keep {
                d.inst = InstId::from_index(shift(d.inst.index()));
            }
            keep
        });
        if let Some((_, sqi)) = next.next_if(|&(a, _)| a == j) {
            let sid = InstId::from_index(insts.len());
            insts.push(sqi);
            inst.deps.push(Dep { inst: sid, kind: EdgeKind::Control });
        }
        insts.push(inst);
    }
    f.insts = insts;
    let mut start = 0usize;
    for (bi, b) in f.blocks.iter_mut().enumerate() {
        let added = inserts.iter().filter(|e| e.0 == bi).count();
        let len = b.insts.len() + added;
        b.insts.clear();
        b.insts.extend((start..start + len).map(InstId::from_index));
        start += len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A DMA named `name` on queue `q`, depending (data) on `deps`.
    fn dma(name: &str, q: u32, deps: &[u32]) -> Inst {
        let ap = AccessPattern { loc: MemLocId(0), offset: 0, len: 1 };
        let mut i = Inst::new(name, Engine::Sp, Op::DmaCopy { src: ap, dst: ap });
        i.queue = Some(QueueId(q));
        i.deps = deps.iter().map(|&d| Dep { inst: InstId(d), kind: EdgeKind::Data }).collect();
        i
    }

    /// A switch named `name` on queue `q`.
    fn sqi(name: &str, q: u32) -> Inst {
        Inst::new(name, Engine::Sp, Op::SwitchQueueInstance { queue: QueueId(q), instance: 1 })
    }

    /// Two blocks, three queues; every instruction depends on the one before.
    fn function() -> Function {
        let mut f = Function::new("f");
        f.blocks.push(Block { name: "b1".into(), insts: Vec::new() });
        let plan = [(0, 0), (0, 1), (0, 0), (1, 2), (1, 1), (1, 2)];
        for (k, &(b, q)) in plan.iter().enumerate() {
            let deps: Vec<u32> = (0..k as u32).rev().take(2).collect();
            f.push_inst(BlockId(b), dma(&format!("d{k}"), q, &deps));
        }
        assert!(f.is_canonical());
        f
    }

    #[test]
    fn inserting_into_the_block_ordered_arena_equals_inserting_one_by_one_then_canonicalizing() {
        // First DMA of each queue: queue 0 at (0, 0), queue 1 at (0, 1), queue 2 at (1, 0).
        let inserts = [(0, 0, QueueId(0), 1), (0, 1, QueueId(1), 1), (1, 0, QueueId(2), 1)];
        let sqis = || vec![sqi("s0", 0), sqi("s1", 1), sqi("s2", 2)];
        let mut fast = function();
        insert_canonical(&mut fast, &inserts, sqis());
        let mut slow = function();
        for (&(bi, pos, _, _), s) in inserts.iter().zip(sqis()).rev() {
            let sid = InstId::from_index(slow.insts.len());
            slow.insts.push(s);
            let dma = slow.blocks[bi].insts[pos];
            slow.blocks[bi].insts.insert(pos, sid);
            add_barrier(&mut slow, &[sid], &[dma], EdgeKind::Control).expect("the switch precedes its DMA");
        }
        slow.canonicalize();
        assert_eq!(fast, slow);
        // The layout itself: each switch right before its DMA, the DMA's last edge on it.
        let names: Vec<&str> = fast.order().map(|id| fast.insts[id.index()].name.as_str()).collect();
        assert_eq!(names, ["s0", "d0", "s1", "d1", "d2", "s2", "d3", "d4", "d5"]);
        assert!(fast.is_canonical());
        assert_eq!(fast.insts[3].deps.last(), Some(&Dep { inst: InstId(2), kind: EdgeKind::Control }));
        assert_eq!(
            fast.insts[6].deps.as_slice(),
            [
                Dep { inst: InstId(4), kind: EdgeKind::Data },
                Dep { inst: InstId(3), kind: EdgeKind::Data },
                Dep { inst: InstId(5), kind: EdgeKind::Control }
            ]
        );
    }
}
