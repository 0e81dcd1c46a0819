//! Executes the N split per-core modules in one seeded, barrier-respecting
//! interleaving, by names (no addresses): the oracle for "the split preserves
//! the program". A consumer's view of a cross-core tensor reads the
//! producer's buffer through its `RemoteLocalTarget`; a barrier is a
//! rendezvous of its group's participants. Independent of the simulator.
//!
//! A view's `RemoteLocalTarget` core is a NeuronCoreId, found among the
//! modules by id (any order); the outputs gathered are those each core's
//! function writes (a core may declare an output another core writes).
//!
//! Cost: O(V + L) expected to resolve V views by name over L locations (one
//! table of the views' target names per target module, as inline
//! [`super::name_key::NameKey`]s, exact, so a hit follows no pointer into
//! another module's strings; then one scan of each target's locations; no
//! table of all L names), then O(log C) per executed instruction to draw the
//! next core among the C ready ones (a Fenwick tree over cores: the k-th
//! ready core in core order, the same draw as a sorted list of ready cores),
//! O(log G) per barrier arrival among G groups (a binary search in their
//! sorted ids; no map of groups) and O(p) per barrier completion for p
//! participants, plus the element work of each op: O(n log C + L + elements)
//! for n instructions. Memory is one flat buffer of every element
//! ([`FlatMemory`]) and 4 bytes per location for its redirected offset.

use std::collections::{BTreeMap, BTreeSet};

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::interp::{FlatMemory, InterpError, Values, execute_at};
use super::name_key::{KeyMap, NameKey};
use crate::ir::*;

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
    /// A core arrives at a barrier group a second time before the group
    /// completes (so it cannot stand in for a participant that never came).
    #[error("barrier group {group}: core {core} arrives twice")]
    BarrierArrival {
        /// The group.
        group: u32,
        /// The arriving core (its NeuronCoreId).
        core: u32,
    },
    /// No core can run and some have not finished.
    #[error("deadlock: cores {0:?} wait at barriers or semaphores that never complete")]
    Deadlock(Vec<usize>),
    /// Two cores' functions write the same output.
    #[error("output `{0}` is written by more than one core")]
    DuplicateOutput(String),
    /// The linked module's core functions hold more instructions or edges than the run's `u32` tables index.
    #[error("the core functions hold {0} instructions or edges; an interleaved run indexes at most 4294967295")]
    TooLarge(usize),
}

enum CoreState {
    Ready,
    Waiting(u32),
    Done,
}

/// Runs `modules` (core order) on `inputs` in the interleaving chosen by `seed`;
/// returns the outputs gathered from every core.
pub fn run_interleaved(modules: &[Module], inputs: &Values, seed: u64) -> Result<Values, InterleaveError> {
    let modules = VerifiedModules::new(modules).map_err(|(core, e)| InterleaveError::Interp { core, err: e.into() })?;
    run_interleaved_verified(modules, inputs, seed)
}

/// [`run_interleaved`] of modules already verified (no second `verify`).
pub fn run_interleaved_verified(
    modules: VerifiedModules<'_>,
    inputs: &Values,
    seed: u64,
) -> Result<Values, InterleaveError> {
    let modules = modules.modules();
    // One flat memory: every core's locations, views redirected to their targets.
    let mut mem = FlatMemory::default();
    let mut base = Vec::with_capacity(modules.len());
    for (core, m) in modules.iter().enumerate() {
        if m.functions.len() != 1 {
            return Err(InterleaveError::Interp { core, err: InterpError::NoFunction });
        }
        base.push(mem.push_module(m, inputs).map_err(|err| InterleaveError::Interp { core, err })?);
    }
    // A view names its target's core by NeuronCoreId, not by position in `modules`
    // (a caller may list the modules in any order): the first module of an id is its core.
    let mut by_core: BTreeMap<u32, usize> = BTreeMap::new();
    for (i, m) in modules.iter().enumerate() {
        by_core.entry(m.attrs.neuron_core_id.unwrap_or(i as u32)).or_insert(i);
    }
    let module_of = |core: u32| by_core.get(&core).copied();
    // The views' target names, one table per target module (looked up only), then
    // one scan of each target module's locations: the first location of a name wins.
    // Sized first (a rehash would read every stored name again).
    let mut wanted = vec![0usize; modules.len()];
    for r in modules.iter().flat_map(|m| &m.memlocs).filter_map(|l| l.remote_local_target.as_ref()) {
        if let Some(n) = module_of(r.core).and_then(|t| wanted.get_mut(t)) {
            *n += 1;
        }
    }
    let mut tables: Vec<KeyMap<'_, usize>> =
        wanted.iter().map(|&n| KeyMap::with_capacity_and_hasher(n, Default::default())).collect();
    let mut target_of: Vec<Option<usize>> = Vec::new();
    let mut view_slot: Vec<Option<usize>> = Vec::new();
    for m in modules {
        for l in &m.memlocs {
            let Some(r) = &l.remote_local_target else { continue };
            let slot = module_of(r.core).and_then(|t| tables.get_mut(t)).map(|t| {
                *t.entry(NameKey::new(&r.name)).or_insert_with(|| {
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
            if let Some(&s) = t.get(&NameKey::new(&l.name))
                && target_of[s].is_none()
            {
                target_of[s] = Some(i);
            }
        }
    }
    drop(tables);
    let mut views = view_slot.into_iter();
    // Per core, per location: the first element in `mem.data` of the buffer it
    // names (its own, or a view's target's): one 4-byte probe per operand.
    let mut at_of: Vec<Vec<u32>> = Vec::with_capacity(modules.len());
    for (core, m) in modules.iter().enumerate() {
        let mut slots = Vec::with_capacity(m.memlocs.len());
        for (i, l) in m.memlocs.iter().enumerate() {
            let s = match &l.remote_local_target {
                None => mem.start[base[core] + i],
                Some(r) => {
                    let target = views.next().flatten().and_then(|s| target_of[s]);
                    let (Some(t), Some(tm)) = (target, module_of(r.core)) else {
                        return Err(InterleaveError::MissingRemote {
                            core,
                            view: l.name.to_string(),
                            name: r.name.to_string(),
                            target: r.core,
                        });
                    };
                    mem.start[base[tm] + t]
                }
            };
            slots.push(s);
        }
        at_of.push(slots);
    }

    // A verified function's arena is in block order: program order is arena order.
    let mut pc = vec![0usize; modules.len()];
    let mut state: Vec<CoreState> = modules.iter().map(|_| CoreState::Ready).collect();
    let mut ready = ReadySet::all(modules.len());
    let mut groups = Groups::new(modules.iter().flat_map(|m| &m.functions[0].insts), modules.len());
    // Each module's NeuronCoreId, what barrier participants name.
    let core_ids: Vec<u32> =
        modules.iter().enumerate().map(|(i, m)| m.attrs.neuron_core_id.unwrap_or(i as u32)).collect();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut scratch = Vec::new();
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
        let Some(inst) = modules[core].functions[0].insts.get(pc[core]) else {
            state[core] = CoreState::Done;
            ready.set(core, false);
            continue;
        };
        pc[core] += 1;
        match &inst.op {
            Op::CoreBarrier(b) => {
                let g = groups.arrive(b, core, core_ids[core])?;
                if groups.complete(g) {
                    // Every core waiting at this group arrived at it: release them.
                    for c in groups.arrived(g) {
                        if matches!(state[c], CoreState::Waiting(w) if w == b.group) {
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
            _ => {
                let at = &at_of[core];
                execute_at(&mut mem.data, inst, &mut |ap: &AccessPattern| at[ap.loc.index()] as usize, &mut scratch);
            }
        }
    }
    // The outputs each core's function writes (a core may declare an output another
    // core writes, as hand-written per-core modules sharing one header do).
    let mut out = Values::new();
    for (core, m) in modules.iter().enumerate() {
        let mut written = vec![false; m.memlocs.len()];
        for a in m.functions[0].insts.iter().filter_map(Inst::write) {
            if let Some(w) = written.get_mut(a.loc.index()) {
                *w = true;
            }
        }
        for (i, l) in m.memlocs.iter().enumerate() {
            if l.usage == Usage::Output
                && written[i]
                && out.insert(l.name.to_string(), mem.values(base[core] + i).to_vec()).is_some()
            {
                return Err(InterleaveError::DuplicateOutput(l.name.to_string()));
            }
        }
    }
    Ok(out)
}

/// Runs the core functions of a linked module (those with a NeuronCoreId)
/// in the interleaving chosen by `seed`, respecting exactly what the
/// hardware respects: each engine runs its instructions in program order,
/// an instruction starts only when every instruction it depends on (any
/// edge kind) has finished, a `sem_wait` only once its core's semaphore has
/// been signalled `value` times (a wait takes nothing from the count), and a
/// core barrier finishes when every participant core arrived at its group. Accesses use the linked
/// locations directly (views are already redirected to their unified
/// location). Unlike [`super::interp::interpret`], which runs each core
/// function in program order, a linked module that lost a dependency edge
/// gives different outputs for some seeds. Returns every output location's values.
///
/// Cost: O(n + e + b log G + s (E + log S)) for n instructions, e edges, b barrier
/// arrivals among G groups and s semaphore operations on S semaphores with E
/// engine streams per core (a ready list with O(1) random draws; each edge
/// is released once; an arrival finds its group by binary search; a signal
/// re-checks its core's streams), plus the element work; the
/// per-instruction tables are flat `u32` arrays over every core function
/// (no row per function), 16 bytes per instruction plus 4 per edge.
pub fn run_linked_interleaved(linked: &Module, inputs: &Values, seed: u64) -> Result<Values, InterleaveError> {
    let linked = linked.verified().map_err(|e| InterleaveError::Interp { core: 0, err: e.into() })?;
    run_linked_interleaved_verified(linked, inputs, seed)
}

/// [`run_linked_interleaved`] of a module already verified (no second `verify`).
pub fn run_linked_interleaved_verified(
    linked: Verified<'_>,
    inputs: &Values,
    seed: u64,
) -> Result<Values, InterleaveError> {
    let linked = linked.module();
    let mut mem = FlatMemory::default();
    mem.push_module(linked, inputs).map_err(|err| InterleaveError::Interp { core: 0, err })?;
    let funcs: Vec<usize> =
        (0..linked.functions.len()).filter(|&f| linked.functions[f].attrs.neuron_core_id.is_some()).collect();
    // Every instruction of the core functions in one numbering: function k's
    // instruction i is `base[k] + i` (flat tables, no per-function rows).
    let mut base: Vec<usize> = Vec::with_capacity(funcs.len() + 1);
    base.push(0);
    for &f in &funcs {
        let b = base[base.len() - 1];
        base.push(b.checked_add(linked.functions[f].insts.len()).ok_or(InterleaveError::TooLarge(usize::MAX))?);
    }
    let total = base[funcs.len()];
    let n32 = |x: usize| u32::try_from(x).map_err(|_| InterleaveError::TooLarge(x));
    n32(total)?;
    let edges =
        funcs.iter().flat_map(|&f| &linked.functions[f].insts).fold(0usize, |a, i| a.saturating_add(i.deps.len()));
    n32(edges)?;
    // Engine streams: (function, engine) -> global instructions in program order.
    let mut streams: Vec<(usize, Vec<u32>)> = Vec::new();
    // Per instruction: (stream, position) (u32::MAX: in no stream), undone dependencies.
    let mut at: Vec<(u32, u32)> = vec![(u32::MAX, 0); total];
    let mut undone: Vec<u32> = vec![0; total];
    // Dependents in compressed rows: instruction g's are `users[start[g]..start[g + 1]]`.
    let mut start: Vec<u32> = vec![0; total + 1];
    for (k, &f) in funcs.iter().enumerate() {
        let func = &linked.functions[f];
        let mut by_engine: BTreeMap<Engine, usize> = BTreeMap::new();
        for id in func.order() {
            let s = *by_engine.entry(func.insts[id.index()].engine).or_insert_with(|| {
                streams.push((k, Vec::new()));
                streams.len() - 1
            });
            let g = base[k] + id.index();
            at[g] = (n32(s)?, n32(streams[s].1.len())?);
            streams[s].1.push(n32(g)?);
        }
        for (i, inst) in func.insts.iter().enumerate() {
            undone[base[k] + i] = u32::try_from(inst.deps.len()).unwrap_or(u32::MAX);
            for d in inst.deps.iter().filter(|d| d.inst.index() < func.insts.len()) {
                start[base[k] + d.inst.index() + 1] += 1;
            }
        }
    }
    for g in 0..total {
        start[g + 1] += start[g];
    }
    let mut fill = start.clone();
    let mut users = vec![0u32; start[total] as usize];
    for (k, &f) in funcs.iter().enumerate() {
        let func = &linked.functions[f];
        for (i, inst) in func.insts.iter().enumerate() {
            for d in inst.deps.iter().filter(|d| d.inst.index() < func.insts.len()) {
                let f = &mut fill[base[k] + d.inst.index()];
                users[*f as usize] = n32(base[k] + i)?;
                *f += 1;
            }
        }
    }
    drop(fill);
    // Function k's instructions, by global number.
    let inst_of = |g: u32| {
        let g = g as usize;
        let k = base.partition_point(|&b| b <= g) - 1;
        (k, &linked.functions[funcs[k]].insts[g - base[k]])
    };
    let mut pc = vec![0usize; streams.len()];
    let mut ready: Vec<usize> = Vec::new();
    // Queued in `ready`, or arrived at a barrier and waiting for its group: not to be queued again.
    let mut queued = vec![false; streams.len()];
    // Per core function: its semaphores' counts (a signal adds one; a wait for
    // `value` starts once the count reaches it and takes nothing), by index.
    let mut sems: BTreeMap<(usize, u32), u32> = BTreeMap::new();
    // Per core function: its streams (a signal re-checks only those).
    let mut streams_of: Vec<Vec<usize>> = vec![Vec::new(); funcs.len()];
    for (s, st) in streams.iter().enumerate() {
        streams_of[st.0].push(s);
    }
    let head_ready = |s: usize, pc: &[usize], undone: &[u32], sems: &BTreeMap<(usize, u32), u32>| {
        streams[s].1.get(pc[s]).is_some_and(|&g| {
            undone[g as usize] == 0
                && match inst_of(g).1.op {
                    Op::SemWait { sem, value } => sems.get(&(streams[s].0, sem)).copied().unwrap_or(0) >= value,
                    _ => true,
                }
        })
    };
    for (s, q) in queued.iter_mut().enumerate() {
        if head_ready(s, &pc, &undone, &sems) {
            ready.push(s);
            *q = true;
        }
    }
    let core_insts = funcs.iter().flat_map(|&f| &linked.functions[f].insts);
    let mut arrived = Rendezvous::new(core_insts, streams.len());
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut finished: Vec<usize> = Vec::new();
    let mut scratch = Vec::new();
    let FlatMemory { data, start: first } = &mut mem;
    while !ready.is_empty() {
        let s = ready.swap_remove(rng.random_range(0..ready.len()));
        queued[s] = false;
        let (_, inst) = inst_of(streams[s].1[pc[s]]);
        finished.clear();
        match &inst.op {
            Op::CoreBarrier(b) => {
                let id = linked.functions[funcs[streams[s].0]].attrs.neuron_core_id.unwrap_or(0);
                arrived.arrive(b, s, id, &mut finished)?;
                if finished.is_empty() {
                    queued[s] = true; // blocked at the barrier until the group completes
                    continue;
                }
                for &t in &finished {
                    queued[t] = false;
                }
            }
            Op::SemSignal { sem } => {
                let k = streams[s].0;
                let n = sems.entry((k, *sem)).or_insert(0);
                *n = n.saturating_add(1);
                finished.push(s);
                // A wait of this core that the signal satisfies can start now.
                for &w in &streams_of[k] {
                    if w != s && !queued[w] && head_ready(w, &pc, &undone, &sems) {
                        ready.push(w);
                        queued[w] = true;
                    }
                }
            }
            Op::Return | Op::SwitchQueueInstance { .. } | Op::SemWait { .. } => finished.push(s),
            _ => {
                execute_at(data, inst, &mut |ap: &AccessPattern| first[ap.loc.index()] as usize, &mut scratch);
                finished.push(s);
            }
        }
        for &t in &finished {
            let done = streams[t].1[pc[t]] as usize;
            pc[t] += 1;
            for &u in &users[start[done] as usize..start[done + 1] as usize] {
                let n = &mut undone[u as usize];
                *n = n.saturating_sub(1);
                let (us, _) = at[u as usize];
                let us = us as usize;
                if *n == 0 && us != u32::MAX as usize && !queued[us] && head_ready(us, &pc, &undone, &sems) {
                    ready.push(us);
                    queued[us] = true;
                }
            }
            if !queued[t] && head_ready(t, &pc, &undone, &sems) {
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
    Ok(mem.outputs(linked, 0))
}

/// The barrier groups of a barrier-order run in one dense numbering (the
/// sorted distinct group ids: an arrival finds its group by binary search in
/// one compact array), each with the participants of its first arrival
/// (borrowed, no copy) and the set of cores that arrived as a bit mask: no
/// heap object per group. Memory: O(G · ⌈C/64⌉) for G groups and C cores.
struct Groups<'a> {
    ids: Vec<u32>,
    participants: Vec<Option<&'a [u32]>>,
    count: Vec<u32>,
    words: usize,
    bits: Vec<u64>,
}

impl<'a> Groups<'a> {
    /// The groups of every barrier among `insts`, for `cores` cores.
    fn new(insts: impl Iterator<Item = &'a Inst>, cores: usize) -> Self {
        let mut ids: Vec<u32> = insts
            .filter_map(|i| match &i.op {
                Op::CoreBarrier(b) => Some(b.group),
                _ => None,
            })
            .collect();
        ids.sort_unstable();
        ids.dedup();
        let words = cores.div_ceil(64).max(1);
        let n = ids.len();
        Groups { ids, participants: vec![None; n], count: vec![0; n], words, bits: vec![0; n * words] }
    }

    /// Records the arrival of module `core` (NeuronCoreId `id`) at `b`'s
    /// group; its dense index. Refused: `b`'s participants differ from the
    /// group's first arrival's, or the core arrived already (a group
    /// completes once in a split program). That `id` is a participant the
    /// verifier ensured.
    fn arrive(&mut self, b: &'a CoreBarrier, core: usize, id: u32) -> Result<usize, InterleaveError> {
        let mismatch = InterleaveError::BarrierMismatch(b.group);
        let g = self.ids.binary_search(&b.group).map_err(|_| mismatch.clone())?;
        let first = *self.participants[g].get_or_insert(&b.participants);
        if first != b.participants.as_slice() {
            return Err(mismatch);
        }
        let word = &mut self.bits[g * self.words + core / 64];
        let bit = 1u64 << (core % 64);
        if *word & bit != 0 {
            return Err(InterleaveError::BarrierArrival { group: b.group, core: id });
        }
        *word |= bit;
        self.count[g] += 1;
        Ok(g)
    }

    /// True when as many distinct cores arrived at group `g` as it has participants.
    fn complete(&self, g: usize) -> bool {
        self.participants[g].is_some_and(|p| self.count[g] as usize == p.len())
    }

    /// The cores that arrived at group `g`, ascending.
    fn arrived(&self, g: usize) -> impl Iterator<Item = usize> + '_ {
        let row = &self.bits[g * self.words..(g + 1) * self.words];
        row.iter().enumerate().flat_map(|(w, &word)| {
            let mut x = word;
            std::iter::from_fn(move || {
                (x != 0).then(|| {
                    let c = w * 64 + x.trailing_zeros() as usize;
                    x &= x - 1;
                    c
                })
            })
        })
    }
}

/// The barrier groups of a dependency-order run in one dense numbering (as
/// [`Groups`]), each with its first arrival's participants (borrowed) and
/// the streams waiting at it in arrival order, as a list threaded through a
/// per-stream `next` array (a blocked stream waits at one group at a time):
/// no heap object per group; and which participants wait, a bit each, so a
/// core that arrives twice is refused rather than counted for a missing one.
/// Memory: O(G · ⌈P/64⌉ + S) for G groups, at most P participants, S streams.
struct Rendezvous<'a> {
    ids: Vec<u32>,
    participants: Vec<Option<&'a [u32]>>,
    /// Per group, the cores (by NeuronCoreId, ascending) waiting at it: the
    /// indices of `participants` that arrived, one bit each, `words` words a group.
    words: usize,
    bits: Vec<u64>,
    /// Per group: (first waiting stream, last waiting stream, how many), [`NIL`] when none.
    waiting: Vec<(u32, u32, u32)>,
    next: Vec<u32>,
}

/// The end of a [`Rendezvous`] list.
const NIL: u32 = u32::MAX;

impl<'a> Rendezvous<'a> {
    /// The groups of every barrier among `insts`, for `streams` streams.
    fn new(insts: impl Iterator<Item = &'a Inst>, streams: usize) -> Self {
        let mut insts_participants = 0usize;
        let mut ids: Vec<u32> = insts
            .filter_map(|i| match &i.op {
                Op::CoreBarrier(b) => {
                    insts_participants = insts_participants.max(b.participants.len());
                    Some(b.group)
                }
                _ => None,
            })
            .collect();
        ids.sort_unstable();
        ids.dedup();
        let n = ids.len();
        let most = insts_participants.max(1);
        let words = most.div_ceil(64);
        Rendezvous {
            ids,
            participants: vec![None; n],
            words,
            bits: vec![0; n * words],
            waiting: vec![(NIL, NIL, 0); n],
            next: vec![NIL; streams],
        }
    }

    /// Stream `s` of core `id` (its NeuronCoreId) arrives at `b`'s group.
    /// When that completes the group (every participant arrived), appends
    /// every waiting stream, `s` last, in arrival order to `released` and
    /// empties the group. Refused: `b`'s participants differ from the group's
    /// first arrival's, or core `id` arrived already since the group last
    /// completed. That `id` is a participant the verifier ensured (one that
    /// is none is refused as a mismatch).
    fn arrive(
        &mut self,
        b: &'a CoreBarrier,
        s: usize,
        id: u32,
        released: &mut Vec<usize>,
    ) -> Result<(), InterleaveError> {
        let mismatch = InterleaveError::BarrierMismatch(b.group);
        let g = self.ids.binary_search(&b.group).map_err(|_| mismatch.clone())?;
        let first = *self.participants[g].get_or_insert(&b.participants);
        if first != b.participants.as_slice() {
            return Err(mismatch);
        }
        let p = first.binary_search(&id).map_err(|_| mismatch.clone())?;
        let word = &mut self.bits[g * self.words + p / 64];
        let bit = 1u64 << (p % 64);
        if *word & bit != 0 {
            return Err(InterleaveError::BarrierArrival { group: b.group, core: id });
        }
        *word |= bit;
        let (head, tail, n) = &mut self.waiting[g];
        let s32 = s as u32;
        if *tail == NIL {
            *head = s32;
        } else {
            self.next[*tail as usize] = s32;
        }
        *tail = s32;
        self.next[s] = NIL;
        *n += 1;
        if (*n as usize) < first.len() {
            return Ok(());
        }
        let mut at = *head;
        while at != NIL {
            released.push(at as usize);
            at = self.next[at as usize];
        }
        self.waiting[g] = (NIL, NIL, 0);
        self.bits[g * self.words..(g + 1) * self.words].fill(0);
        Ok(())
    }
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
