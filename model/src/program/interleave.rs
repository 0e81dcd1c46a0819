//! Executes the N split per-core modules in one seeded, barrier-respecting
//! interleaving, by names (no addresses): the oracle for "the split preserves
//! the program". A consumer's view of a cross-core tensor reads the
//! producer's buffer through its `RemoteLocalTarget`; a barrier is a
//! rendezvous of its group's participants. Independent of the simulator.
//!
//! Cost: O(V + L) expected to resolve V views by name over L locations (one
//! table of the views' target names per target module, [`crate::namehash`],
//! exact, then one scan of each target's locations; no table of all L names), then O(log C) per executed instruction to draw the
//! next core among the C ready ones (a Fenwick tree over cores: the k-th
//! ready core in core order, the same draw as a sorted list of ready cores),
//! O(p) per barrier completion for p participants, plus the element work of
//! each op: O(n log C + L + elements) for n instructions.

use std::collections::{BTreeMap, BTreeSet};

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::interp::{InterpError, Values, execute, initial_memory};
use crate::ir::*;
use crate::namehash::NameMap;

/// Why an interleaved run failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InterleaveError {
    /// A module could not be set up.
    #[error("core {core}: {err}")]
    Interp {
        /// The core.
        core: usize,
        /// The error.
        err: InterpError,
    },
    /// A remote view names a location that does not exist.
    #[error("core {core}: `{view}` names remote `{name}` on core {target}, which does not exist")]
    MissingRemote {
        /// The consumer core.
        core: usize,
        /// The view's name.
        view: String,
        /// The remote name.
        name: String,
        /// The remote core.
        target: u32,
    },
    /// Two arrivals at one barrier group disagree on the participants.
    #[error("barrier group {0}: participants differ between cores")]
    BarrierMismatch(u32),
    /// No core can run and some have not finished.
    #[error("deadlock: cores {0:?} wait at barriers that never complete")]
    Deadlock(Vec<usize>),
    /// Two cores write the same output.
    #[error("output `{0}` is written by more than one core")]
    DuplicateOutput(String),
}

enum CoreState {
    Ready,
    Waiting(u32),
    Done,
}

/// Runs `modules` (core order) on `inputs` in the interleaving chosen by `seed`;
/// returns the outputs gathered from every core.
pub fn run_interleaved(modules: &[Module], inputs: &Values, seed: u64) -> Result<Values, InterleaveError> {
    // One flat memory: every core's locations, views redirected to their targets.
    let mut mem = Vec::new();
    let mut base = Vec::new();
    for (core, m) in modules.iter().enumerate() {
        base.push(mem.len());
        if m.functions.len() != 1 {
            return Err(InterleaveError::Interp { core, err: InterpError::NoFunction });
        }
        m.verify().map_err(|e| InterleaveError::Interp { core, err: e.into() })?;
        mem.extend(initial_memory(m, inputs).map_err(|err| InterleaveError::Interp { core, err })?);
    }
    // The views' target names, one table per target module (looked up only), then
    // one scan of each target module's locations: the first location of a name wins.
    // Sized first (a rehash would read every stored name again).
    let mut wanted = vec![0usize; modules.len()];
    for r in modules.iter().flat_map(|m| &m.memlocs).filter_map(|l| l.remote_local_target.as_ref()) {
        if let Some(n) = wanted.get_mut(r.core as usize) {
            *n += 1;
        }
    }
    let mut tables: Vec<NameMap<'_, usize>> =
        wanted.iter().map(|&n| NameMap::with_capacity_and_hasher(n, Default::default())).collect();
    let mut target_of: Vec<Option<usize>> = Vec::new();
    let mut view_slot: Vec<Option<usize>> = Vec::new();
    for m in modules {
        for l in &m.memlocs {
            let Some(r) = &l.remote_local_target else { continue };
            let slot = tables.get_mut(r.core as usize).map(|t| {
                *t.entry(r.name.as_str()).or_insert_with(|| {
                    target_of.push(None);
                    target_of.len() - 1
                })
            });
            view_slot.push(slot);
        }
    }
    for (m, t) in modules.iter().zip(&tables) {
        if t.is_empty() {
            continue;
        }
        for (i, l) in m.memlocs.iter().enumerate() {
            if let Some(&s) = t.get(l.name.as_str())
                && target_of[s].is_none()
            {
                target_of[s] = Some(i);
            }
        }
    }
    drop(tables);
    let mut views = view_slot.into_iter();
    let mut slot_of: Vec<Vec<usize>> = Vec::with_capacity(modules.len());
    for (core, m) in modules.iter().enumerate() {
        let mut slots = Vec::with_capacity(m.memlocs.len());
        for (i, l) in m.memlocs.iter().enumerate() {
            let s = match &l.remote_local_target {
                None => base[core] + i,
                Some(r) => {
                    let target = views.next().flatten().and_then(|s| target_of[s]);
                    let Some(t) = target else {
                        return Err(InterleaveError::MissingRemote {
                            core,
                            view: l.name.clone(),
                            name: r.name.clone(),
                            target: r.core,
                        });
                    };
                    base[r.core as usize] + t
                }
            };
            slots.push(s);
        }
        slot_of.push(slots);
    }

    let orders: Vec<Vec<InstId>> = modules.iter().map(|m| m.functions[0].order().collect()).collect();
    let mut pc = vec![0usize; modules.len()];
    let mut state: Vec<CoreState> = modules.iter().map(|_| CoreState::Ready).collect();
    let mut ready = ReadySet::all(modules.len());
    let mut arrived: BTreeMap<u32, (Vec<u32>, BTreeSet<usize>)> = BTreeMap::new();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    loop {
        if ready.len == 0 {
            let waiting: Vec<usize> =
                (0..modules.len()).filter(|&c| matches!(state[c], CoreState::Waiting(_))).collect();
            if waiting.is_empty() {
                break;
            }
            return Err(InterleaveError::Deadlock(waiting));
        }
        let core = ready.kth(rng.random_range(0..ready.len));
        let Some(&id) = orders[core].get(pc[core]) else {
            state[core] = CoreState::Done;
            ready.set(core, false);
            continue;
        };
        pc[core] += 1;
        let inst = &modules[core].functions[0].insts[id.index()];
        match &inst.op {
            Op::CoreBarrier(b) => {
                let entry = arrived.entry(b.group).or_insert_with(|| (b.participants.clone(), BTreeSet::new()));
                if entry.0 != b.participants {
                    return Err(InterleaveError::BarrierMismatch(b.group));
                }
                entry.1.insert(core);
                if entry.1.len() == entry.0.len() {
                    // Every core waiting at this group arrived at it: release them.
                    for &c in &entry.1 {
                        if matches!(state[c], CoreState::Waiting(g) if g == b.group) {
                            state[c] = CoreState::Ready;
                            ready.set(c, true);
                        }
                    }
                } else {
                    state[core] = CoreState::Waiting(b.group);
                    ready.set(core, false);
                }
            }
            Op::Return => {
                state[core] = CoreState::Done;
                ready.set(core, false);
            }
            _ => execute(inst, &mut |ap: &AccessPattern| slot_of[core][ap.loc.index()], &mut mem),
        }
    }
    let mut out = Values::new();
    for (core, m) in modules.iter().enumerate() {
        for (i, l) in m.memlocs.iter().enumerate() {
            if l.usage == Usage::Output && out.insert(l.name.clone(), mem[base[core] + i].clone()).is_some() {
                return Err(InterleaveError::DuplicateOutput(l.name.clone()));
            }
        }
    }
    Ok(out)
}

/// Runs the core functions of a linked module (those with a NeuronCoreId)
/// in the interleaving chosen by `seed`, respecting exactly what the
/// hardware respects: each engine runs its instructions in program order,
/// an instruction starts only when every instruction it depends on (any
/// edge kind) has finished, and a core barrier finishes when every
/// participant core arrived at its group. Accesses use the linked
/// locations directly (views are already redirected to their unified
/// location). Unlike [`super::interp::interpret`], which runs each core
/// function in program order, a linked module that lost a dependency edge
/// gives different outputs for some seeds. Returns every output location's values.
///
/// Cost: O(n + e) for n instructions and e edges (a ready list with O(1)
/// random draws; each edge is released once), plus the element work.
pub fn run_linked_interleaved(linked: &Module, inputs: &Values, seed: u64) -> Result<Values, InterleaveError> {
    linked.verify().map_err(|e| InterleaveError::Interp { core: 0, err: e.into() })?;
    let mut mem = initial_memory(linked, inputs).map_err(|err| InterleaveError::Interp { core: 0, err })?;
    // Engine streams: (function, engine) -> instructions in program order.
    let funcs: Vec<usize> =
        (0..linked.functions.len()).filter(|&f| linked.functions[f].attrs.neuron_core_id.is_some()).collect();
    let mut streams: Vec<(usize, Vec<InstId>)> = Vec::new();
    // Per function: undone dependencies, dependents, and (stream, position) of each instruction.
    let mut undone: Vec<Vec<u32>> = Vec::new();
    // Dependents in compressed rows: instruction i's are `users[k].1[users[k].0[i]..users[k].0[i + 1]]`.
    let mut users: Vec<(Vec<usize>, Vec<InstId>)> = Vec::new();
    let mut at: Vec<Vec<(usize, usize)>> = Vec::new();
    for (k, &f) in funcs.iter().enumerate() {
        let func = &linked.functions[f];
        let mut by_engine: BTreeMap<Engine, usize> = BTreeMap::new();
        let mut pos = vec![(usize::MAX, 0); func.insts.len()];
        for id in func.order() {
            let s = *by_engine.entry(func.insts[id.index()].engine).or_insert_with(|| {
                streams.push((k, Vec::new()));
                streams.len() - 1
            });
            pos[id.index()] = (s, streams[s].1.len());
            streams[s].1.push(id);
        }
        let ni = func.insts.len();
        let mut n = vec![0u32; ni];
        let mut start = vec![0usize; ni + 1];
        for (i, inst) in func.insts.iter().enumerate() {
            n[i] = u32::try_from(inst.deps.len()).unwrap_or(u32::MAX);
            for d in &inst.deps {
                if let Some(c) = start.get_mut(d.inst.index() + 1) {
                    *c += 1;
                }
            }
        }
        for i in 0..ni {
            start[i + 1] += start[i];
        }
        let mut fill = start.clone();
        let mut u = vec![InstId::from_index(0); start[ni]];
        for (i, inst) in func.insts.iter().enumerate() {
            for d in &inst.deps {
                if d.inst.index() < ni {
                    let f = &mut fill[d.inst.index()];
                    u[*f] = InstId::from_index(i);
                    *f += 1;
                }
            }
        }
        undone.push(n);
        users.push((start, u));
        at.push(pos);
    }
    let mut pc = vec![0usize; streams.len()];
    let mut ready: Vec<usize> = Vec::new();
    // Queued in `ready`, or arrived at a barrier and waiting for its group: not to be queued again.
    let mut queued = vec![false; streams.len()];
    let head_ready = |s: usize, pc: &[usize], undone: &[Vec<u32>], streams: &[(usize, Vec<InstId>)]| {
        let (k, ids) = &streams[s];
        ids.get(pc[s]).is_some_and(|id| undone[*k][id.index()] == 0)
    };
    for (s, q) in queued.iter_mut().enumerate() {
        if head_ready(s, &pc, &undone, &streams) {
            ready.push(s);
            *q = true;
        }
    }
    let mut arrived: BTreeMap<u32, (Vec<u32>, Vec<usize>)> = BTreeMap::new();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut finished: Vec<usize> = Vec::new();
    while !ready.is_empty() {
        let s = ready.swap_remove(rng.random_range(0..ready.len()));
        queued[s] = false;
        let k = streams[s].0;
        let func = &linked.functions[funcs[k]];
        let id = streams[s].1[pc[s]];
        let inst = &func.insts[id.index()];
        finished.clear();
        match &inst.op {
            Op::CoreBarrier(b) => {
                let e = arrived.entry(b.group).or_insert_with(|| (b.participants.clone(), Vec::new()));
                if e.0 != b.participants {
                    return Err(InterleaveError::BarrierMismatch(b.group));
                }
                e.1.push(s);
                if e.1.len() < e.0.len() {
                    queued[s] = true; // blocked at the barrier until the group completes
                    continue;
                }
                finished.append(&mut e.1);
                for &t in &finished {
                    queued[t] = false;
                }
            }
            Op::Return | Op::SwitchQueueInstance { .. } | Op::SemWait { .. } | Op::SemSignal { .. } => finished.push(s),
            _ => {
                execute(inst, &mut |ap: &AccessPattern| ap.loc.index(), &mut mem);
                finished.push(s);
            }
        }
        for &t in &finished {
            let kt = streams[t].0;
            let done = streams[t].1[pc[t]];
            pc[t] += 1;
            let (start, list) = &users[kt];
            for &u in &list[start[done.index()]..start[done.index() + 1]] {
                let n = &mut undone[kt][u.index()];
                *n = n.saturating_sub(1);
                let (us, _) = at[kt][u.index()];
                if *n == 0 && us != usize::MAX && !queued[us] && head_ready(us, &pc, &undone, &streams) {
                    ready.push(us);
                    queued[us] = true;
                }
            }
            if !queued[t] && head_ready(t, &pc, &undone, &streams) {
                ready.push(t);
                queued[t] = true;
            }
        }
    }
    let stuck: BTreeSet<usize> = (0..streams.len())
        .filter(|&s| pc[s] < streams[s].1.len())
        .map(|s| linked.functions[funcs[streams[s].0]].attrs.neuron_core_id.unwrap_or(0) as usize)
        .collect();
    if !stuck.is_empty() {
        return Err(InterleaveError::Deadlock(stuck.into_iter().collect()));
    }
    Ok(super::interp::outputs(linked, &mem))
}

/// The ready cores as a Fenwick tree of 0/1 over core indices: O(log C)
/// membership changes and selection of the k-th ready core in core order.
struct ReadySet {
    tree: Vec<u32>,
    member: Vec<bool>,
    len: usize,
}

impl ReadySet {
    /// Every one of `n` cores ready.
    fn all(n: usize) -> ReadySet {
        let mut s = ReadySet { tree: vec![0; n + 1], member: vec![false; n], len: 0 };
        for c in 0..n {
            s.set(c, true);
        }
        s
    }

    /// Makes core `c` ready or not (no effect when it already is as asked).
    fn set(&mut self, c: usize, on: bool) {
        if self.member[c] == on {
            return;
        }
        self.member[c] = on;
        if on {
            self.len += 1;
        } else {
            self.len -= 1;
        }
        let mut j = c + 1;
        while j < self.tree.len() {
            if on {
                self.tree[j] += 1;
            } else {
                self.tree[j] -= 1;
            }
            j += j & j.wrapping_neg();
        }
    }

    /// The `k`-th ready core (0-based) in core order; `k < len`.
    fn kth(&self, k: usize) -> usize {
        let mut pos = 0;
        let mut rem = k as u32 + 1;
        let mut step = (self.tree.len()).next_power_of_two() / 2;
        while step > 0 {
            if pos + step < self.tree.len() && self.tree[pos + step] < rem {
                pos += step;
                rem -= self.tree[pos];
            }
            step /= 2;
        }
        pos
    }
}

#[cfg(test)]
mod tests {
    use super::ReadySet;

    #[test]
    fn the_kth_ready_core_is_the_kth_of_the_sorted_ready_list() {
        for n in [1usize, 2, 5, 8, 13] {
            let mut s = ReadySet::all(n);
            let mut list: Vec<usize> = (0..n).collect();
            for step in 0..3 * n {
                let c = (step * 7 + 3) % n;
                let on = step % 3 == 0;
                s.set(c, on);
                list.retain(|&x| x != c);
                if on {
                    list.push(c);
                    list.sort_unstable();
                }
                assert_eq!(s.len, list.len());
                for (k, &want) in list.iter().enumerate() {
                    assert_eq!(s.kth(k), want, "n {n} step {step} k {k}");
                }
            }
        }
    }
}
