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
//!
//! **Switch-queue instances.** Rule (seed §5a says only "at validated
//! points"): for every unified queue a core function drives with a DMA copy,
//! an `I-SQI-<queue>-call_def_<core>_instance_<idx>` switching the queue to
//! the lowest instance the core's own module declared is inserted immediately
//! before the function's first DMA on that queue, on the queue's owner engine,
//! and that DMA gets a control dependency on it. Skipped when the function
//! already switches that queue before its first use (the program chose), or
//! when the core's module declares no instance. An insertion point is valid
//! (`checkInsertionPointValid`) when it lies before the function's return and
//! completion barrier.

use std::collections::BTreeSet;

use super::{BirLinker, call_name};
use crate::ir::*;
use crate::marks;

/// Prefix of the inserted completion barriers.
pub const CB_RETURN_PREFIX: &str = "cb_return_";
/// Prefix of the inserted returns.
pub const RETURN_PREFIX: &str = "return_";
/// Prefix of the inserted switch-queue-instance instructions.
pub const SQI_PREFIX: &str = "I-SQI-";

/// Runs both function passes on every core function.
pub fn run_function_passes(l: &mut BirLinker<'_>) {
    fpass_insert_returns(l);
    fpass_insert_switch_queue_instances(l);
}

/// The names of `f` that an inserted name could collide with (those with an
/// inserted prefix), collected in one pass.
fn inserted_like_names(f: &Function) -> BTreeSet<String> {
    let like = |n: &str| [CB_RETURN_PREFIX, RETURN_PREFIX, SQI_PREFIX].iter().any(|p| n.starts_with(p));
    f.insts.iter().filter(|i| like(&i.name)).map(|i| i.name.clone()).collect()
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
pub fn fpass_insert_returns(l: &mut BirLinker<'_>) {
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
        let sinks: Vec<Dep> = (0..f.insts.len())
            .filter(|&i| !has_dependent[i])
            .map(|i| Dep { inst: InstId::from_index(i), kind: EdgeKind::Control })
            .collect();
        let last = BlockId::from_index(f.blocks.len() - 1);
        let call = call_name(core, idx);
        let cb = CoreBarrier { group, participants: participants.clone(), id: 0, flagged: true };
        let mut taken = inserted_like_names(f);
        let name = fresh_inst_name(&mut taken, format!("{CB_RETURN_PREFIX}{call}"));
        let mut barrier = Inst::new(name, Engine::Sp, Op::CoreBarrier(cb));
        barrier.core = Some(core);
        barrier.deps = sinks;
        let b = f.push_inst(last, barrier);
        let mut ret = Inst::new(fresh_inst_name(&mut taken, format!("{RETURN_PREFIX}{call}")), Engine::Sp, Op::Return);
        ret.core = Some(core);
        ret.deps = vec![Dep { inst: b, kind: EdgeKind::Control }];
        f.push_inst(last, ret);
        l.report.inserted_returns += 1;
    }
    marks::hit("link.fpass.insert_returns");
}

/// The position (block, index) of the first return or completion barrier of
/// `f`, or one past its end: no instruction may be inserted after it.
pub fn insertion_limit(f: &Function) -> (usize, usize) {
    for (bi, b) in f.blocks.iter().enumerate() {
        for (pos, id) in b.insts.iter().enumerate() {
            let i = &f.insts[id.index()];
            let completion = matches!(i.op, Op::CoreBarrier(_)) && i.name.starts_with(CB_RETURN_PREFIX);
            if matches!(i.op, Op::Return) || completion {
                return (bi, pos);
            }
        }
    }
    (f.blocks.len(), 0)
}

/// `checkInsertionPointValid`: position `pos` of block `block` exists and lies
/// at or before `limit` ([`insertion_limit`]), i.e. before the function's
/// first return or completion barrier.
pub fn check_insertion_point_valid(f: &Function, limit: (usize, usize), block: usize, pos: usize) -> bool {
    f.blocks.get(block).is_some_and(|b| pos <= b.insts.len()) && (block, pos) <= limit
}

/// `fpassInsertSwitchQueueInstances`: the rule in the module doc.
pub fn fpass_insert_switch_queue_instances(l: &mut BirLinker<'_>) {
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
        let limit = insertion_limit(f);
        let mut taken = if inserts.is_empty() { BTreeSet::new() } else { inserted_like_names(f) };
        // Insert back to front so earlier positions stay valid.
        for &(bi, pos, q, instance) in inserts.iter().rev() {
            if !check_insertion_point_valid(f, limit, bi, pos) {
                marks::hit("link.sqi.invalid_point");
                continue;
            }
            let queue = &l.main.queues[q.index()];
            let name = fresh_inst_name(&mut taken, format!("{SQI_PREFIX}{}-{call}", queue.name));
            let mut sqi = Inst::new(name, queue.owner, Op::SwitchQueueInstance { queue: q, instance });
            sqi.core = Some(def.core);
            let sid = InstId::from_index(f.insts.len());
            f.insts.push(sqi);
            let dma = f.blocks[bi].insts[pos];
            f.insts[dma.index()].deps.push(Dep { inst: sid, kind: EdgeKind::Control });
            f.blocks[bi].insts.insert(pos, sid);
            l.report.sqi_inserted += 1;
            marks::hit("link.sqi.inserted");
        }
        f.canonicalize();
    }
}
