//! lnc_splitter: one symbolic program into one module per NeuronCoreId (the
//! 1 -> N step the linker inverts; seed 000 §1 and §9, seed 004
//! "Cross-LNC Shared-DRAM Partitioning", DESIGN.md "Shared tensors").
//!
//! For each core: the program's name, the NeuronCoreId attribute, the same
//! function and block names, and only that core's instructions (off-core ops
//! pruned). A tensor written on core A and read (or depended on) on core B is
//! a cross-core tensor: A's copy becomes a `shared` location, and every
//! consumer B gets its own `shared` view named `<tensor>_in<B>` carrying
//! `RemoteLocalTarget(<tensor>, A)`. Each such handoff is fenced by one
//! logical barrier (a `group`) whose participants are A and every consumer:
//! every participant's barrier instruction sits at the producer's position in
//! program order, so all cores meet barriers in one global order and no
//! interleaving deadlocks. The producer's arrival runs after the producing
//! instruction; each consumer instruction runs after its core's arrival. Each
//! core numbers its own barrier slot IDs from 0, flagged for renumbering, as
//! seed 000 §7 says each core does. The handoff groups are numbered after
//! every group the program's own barriers use, and named `cb<group>` (or
//! `cb<group>_<k>` where the program already names an instruction so). A
//! core that waits on or signals a semaphore keeps every queue of the program:
//! a semaphore index names a slot of the pool the queues' semaphores make up.
//!
//! Cost: O(N + D + P + C·L) expected for N instructions, D deps, P barrier
//! arrivals, C cores and L locations: the program's instructions are walked
//! three times in all (owners; dependents, consumers and each core's touched
//! locations and queues; then one walk that hands each instruction to its
//! core and each arrival to every participant), not once per core; each
//! core's location table is dense, the view-name collision test a hash set of
//! the program's names, and each core's arena and block lists are sized
//! before filling.
//!
//! Choices (documented, tested): a program output may not be read on another
//! core (outputs are written once and read by the host); a tensor placed by
//! hand (`@ADDR`) may not be read on another core (it would move to the shared
//! region, which the allocator places); an unbound instruction is on core 0
//! only when `lnc_size == 1`.

use std::collections::HashMap;

pub mod checker;
pub use checker::{SplitViolation, check_split};

use crate::ir::*;
use crate::marks;
use crate::namehash::NameSet;

/// Why a program cannot be split.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SplitError {
    /// The program is not valid IR.
    #[error("invalid program: {0}")]
    Invalid(#[from] VerifyErrors),
    /// The input is not a single-function program.
    #[error("not a program: {0}")]
    NotAProgram(String),
    /// An instruction has no core and the program has more than one core.
    #[error("instruction `{0}` is not bound to a core (add `core N`)")]
    Unbound(String),
    /// Two cores write the same tensor, so it has no single owner.
    #[error("location `{0}` is written on more than one core")]
    MultipleWriters(String),
    /// A program output is read on a core other than its producer's.
    #[error("output `{loc}` is written on core {producer} and read on core {reader}; outputs are host-read only")]
    OutputReadCrossCore {
        /// The output.
        loc: String,
        /// Its producing core.
        producer: u32,
        /// A core that reads it.
        reader: u32,
    },
    /// A tensor placed by hand is read on another core: it must live in the
    /// shared region, whose addresses the shared allocator gives.
    #[error(
        "location `{loc}` is placed by hand at {address:#x} but written on core {producer} and read on core {reader}: \
         a cross-core tensor lives in the shared region, where the allocator places it (drop its `@` address)"
    )]
    PlacedCrossCore {
        /// The location.
        loc: String,
        /// Its hand-given address.
        address: u64,
        /// Its producing core.
        producer: u32,
        /// A core that reads it.
        reader: u32,
    },
    /// A generated view name is already taken by a program location.
    #[error("view name `{0}` collides with a program location")]
    NameCollision(String),
    /// The handoff barrier groups, numbered after the program's own, run past `u32::MAX`.
    #[error("{handoffs} handoff barrier groups numbered from {first} (after the program's own groups) pass u32::MAX")]
    GroupsExhausted {
        /// The first group the split would number.
        first: u64,
        /// How many handoffs need a group.
        handoffs: usize,
    },
    /// The program asks for more cores than a NEFF can hold (one subgraph each).
    #[error("lnc_size {0} is more cores than the {MAX_LNC_SIZE} a NEFF's subgraphs allow")]
    TooManyCores(u32),
}

/// The most cores a program may split into: one module each, and the runtime
/// loads at most this many subgraphs (`load::graph::MAX_KBINS`). Checked
/// before the per-core modules are allocated, so a huge `lnc` is a typed error.
pub const MAX_LNC_SIZE: u32 = 256;

/// The artifact directory of a core's subgraph: `nc<id>/sg<id>` (DESIGN.md, "Names").
pub fn artifact_dir(core: u32) -> String {
    format!("nc{core}/sg{core}")
}

/// The name of core `consumer`'s view of cross-core tensor `tensor`.
pub fn view_name(tensor: &str, consumer: u32) -> String {
    format!("{tensor}_in{consumer}")
}

/// Splits `program` into `lnc_size` per-core modules, in core order.
pub fn split(program: &Module) -> Result<Vec<Module>, SplitError> {
    program.verify()?;
    if program.attrs.neuron_core_id.is_some() {
        return Err(SplitError::NotAProgram("it already carries a NeuronCoreId".into()));
    }
    let [func] = program.functions.as_slice() else {
        return Err(SplitError::NotAProgram(format!("it has {} functions, expected 1", program.functions.len())));
    };
    let lnc = program.attrs.lnc_size;
    if lnc > MAX_LNC_SIZE {
        marks::hit("split.too_many_cores");
        return Err(SplitError::TooManyCores(lnc));
    }
    let core_of = |i: &Inst| match i.core {
        Some(c) => Ok(c),
        None if lnc == 1 => Ok(0),
        None => Err(SplitError::Unbound(i.name.to_string())),
    };
    let cores: Vec<u32> = func.insts.iter().map(core_of).collect::<Result<_, _>>()?;
    let owner = owners(program, func, &cores)?;

    // One walk in program order (verified: the arena is in block order): the
    // cross-core dependents of each instruction, the consumer cores of each
    // cross-core tensor, and the locations and queues each core touches.
    let lnc_us = lnc as usize;
    // (index << 32 | core) pairs, sorted into flat lists after the walk (no Vec per index).
    let mut dependents: Vec<u64> = Vec::new();
    let mut consumers: Vec<u64> = Vec::new();
    let pair = |i: usize, c: u32| ((i as u64) << 32) | u64::from(c);
    let mut touched: Vec<Vec<bool>> = vec![vec![false; program.memlocs.len()]; lnc_us];
    let mut used_queues: Vec<Vec<bool>> = vec![vec![false; program.queues.len()]; lnc_us];
    for id in func.order() {
        let inst = &func.insts[id.index()];
        let here = cores[id.index()];
        for r in inst.read_slice() {
            if let Some(&Some((a, p))) = owner.get(r.loc.index())
                && a != here
            {
                if program.loc(r.loc).usage == Usage::Output {
                    let loc = program.loc(r.loc).name.to_string();
                    return Err(SplitError::OutputReadCrossCore { loc, producer: a, reader: here });
                }
                dependents.push(pair(p.index(), here));
                consumers.push(pair(r.loc.index(), here));
            }
        }
        for d in &inst.deps {
            if cores[d.inst.index()] != here {
                dependents.push(pair(d.inst.index(), here));
            }
        }
        if let Some(t) = touched.get_mut(here as usize) {
            for a in inst.read_slice().iter().chain(inst.write_ref()) {
                if let Some(slot) = t.get_mut(a.loc.index()) {
                    *slot = true;
                }
            }
        }
        if let Some(u) = used_queues.get_mut(here as usize) {
            // A semaphore index names a slot of the pool every queue's semaphores
            // make up, in queue order: a core that waits or signals keeps every queue,
            // so its pool is the program's.
            if matches!(inst.op, Op::SemWait { .. } | Op::SemSignal { .. }) {
                u.iter_mut().for_each(|q| *q = true);
            }
            let sqi = match inst.op {
                Op::SwitchQueueInstance { queue, .. } => Some(queue),
                _ => None,
            };
            for q in inst.queue.into_iter().chain(sqi) {
                if let Some(slot) = u.get_mut(q.index()) {
                    *slot = true;
                }
            }
        }
    }
    let names = program.memlocs.iter().map(|l| l.name.as_str()).collect();
    // Instructions per core: its own plus one barrier arrival per instruction with
    // cross-core dependents it takes part in.
    let mut per_core = vec![0usize; lnc_us];
    let dependents = Lists::from_pairs(func.insts.len(), dependents);
    let consumers = Lists::from_pairs(program.memlocs.len(), consumers);
    for (p, &here) in cores.iter().enumerate() {
        let deps = dependents.get(p);
        if let Some(n) = per_core.get_mut(here as usize) {
            *n += 1;
        }
        if deps.is_empty() {
            continue;
        }
        for &c in deps.iter().chain((!deps.contains(&here)).then_some(&here)) {
            if let Some(n) = per_core.get_mut(c as usize) {
                *n += 1;
            }
        }
    }
    let analysis = Analysis { cores, owner, consumers, dependents, names };
    // Each core's locations and queues, in core order (the first error is the lowest core's).
    let mut outs = Vec::with_capacity(lnc_us);
    for (c, (t, u)) in touched.iter().zip(&used_queues).enumerate() {
        outs.push(CoreOut::new(program, func, &analysis, c as u32, t, u, per_core[c])?);
    }
    drop((touched, used_queues));
    // The split's handoff groups come after every group the program's own barriers
    // use (one per instruction with cross-core dependents), and must fit in a u32.
    let used = func.insts.iter().filter_map(|i| match &i.op {
        Op::CoreBarrier(b) => Some(b.group),
        _ => None,
    });
    let first_group = used.max().map_or(0, |g| u64::from(g) + 1);
    let handoffs = (0..func.insts.len()).filter(|&p| !analysis.dependents.get(p).is_empty()).count();
    // No handoff: no group to number (the program may use group u32::MAX itself).
    let first_group = match u32::try_from(first_group) {
        _ if handoffs == 0 => 0,
        Ok(g) if u64::from(g) + handoffs as u64 <= u64::from(u32::MAX) + 1 => g,
        _ => return Err(SplitError::GroupsExhausted { first: first_group, handoffs }),
    };
    let barrier_names = BarrierNames::new(func);
    Ok(build(func, &analysis, outs, first_group, &barrier_names))
}

/// Inserts `x` into the sorted, distinct `v` (a few cores: a linear insert).
fn insert_sorted(v: &mut Vec<u32>, x: u32) {
    if let Err(at) = v.binary_search(&x) {
        v.insert(at, x);
    }
}

/// The owning core and writing instruction of every written location, by location index.
fn owners(program: &Module, func: &Function, cores: &[u32]) -> Result<Vec<Option<(u32, InstId)>>, SplitError> {
    let mut owner: Vec<Option<(u32, InstId)>> = vec![None; program.memlocs.len()];
    for id in func.order() {
        if let Some(w) = func.insts[id.index()].write() {
            let c = cores[id.index()];
            match owner[w.loc.index()] {
                Some((a, _)) if a != c => return Err(SplitError::MultipleWriters(program.loc(w.loc).name.to_string())),
                Some(_) => {}
                None => owner[w.loc.index()] = Some((c, id)),
            }
        }
    }
    Ok(owner)
}

/// What the whole program says about cores, shared by every core's split.
struct Analysis<'p> {
    /// The core of every instruction.
    cores: Vec<u32>,
    /// The owning core and writing instruction of every written location, by location index.
    owner: Vec<Option<(u32, InstId)>>,
    /// The consumer cores of every location, sorted (empty: not a cross-core tensor).
    consumers: Lists,
    /// The cores that depend on each instruction from another core, sorted, by instruction index.
    dependents: Lists,
    /// Every program location's name (a view's name must not be one of them; lookups only).
    names: NameSet<'p>,
}

/// Sorted, distinct core lists by index, in one flat array: index `i`'s are
/// `cores[start[i]..start[i + 1]]` (no Vec per index).
struct Lists {
    start: Vec<usize>,
    cores: Vec<u32>,
}

impl Lists {
    /// From `(index << 32) | core` pairs with indices below `n` (others are
    /// dropped). O(p log p) for p pairs: one sort, one dedup, one count.
    fn from_pairs(n: usize, mut pairs: Vec<u64>) -> Self {
        pairs.sort_unstable();
        pairs.dedup();
        pairs.retain(|&k| ((k >> 32) as usize) < n);
        let mut start = vec![0usize; n + 1];
        for &k in &pairs {
            start[(k >> 32) as usize + 1] += 1;
        }
        for i in 1..start.len() {
            start[i] += start[i - 1];
        }
        Lists { start, cores: pairs.iter().map(|&k| k as u32).collect() }
    }

    /// Index `i`'s cores, ascending (empty past the end).
    fn get(&self, i: usize) -> &[u32] {
        match (self.start.get(i), self.start.get(i + 1)) {
            (Some(&lo), Some(&hi)) => self.cores.get(lo..hi).unwrap_or(&[]),
            _ => &[],
        }
    }
}

/// A dense map from a program index to an id of a core's module, 4 bytes
/// a slot (stored as id + 1; 0 is "none", so the table starts as zeroed pages).
struct Dense(Vec<u32>);

impl Dense {
    fn new(n: usize) -> Self {
        Dense(vec![0; n])
    }

    fn get(&self, i: usize) -> Option<u32> {
        self.0.get(i).copied().and_then(|v| v.checked_sub(1))
    }

    fn set(&mut self, i: usize, id: u32) {
        if let Some(slot) = self.0.get_mut(i) {
            *slot = id.saturating_add(1);
        }
    }
}

/// One core's module while the program is walked: its locations and queues
/// are fixed first ([`CoreOut::new`]), its instructions come from [`build`].
struct CoreOut {
    core: u32,
    /// Program location (by index) -> this core's location.
    locs: Dense,
    /// Program queue (by index) -> this core's queue (the queues this core uses).
    queues: Vec<Option<QueueId>>,
    /// This core's next barrier slot id.
    slot: u32,
    f: Function,
    m: Module,
}

impl CoreOut {
    /// Core `core`'s locations (in program order: what its instructions touch,
    /// cross-core tensors as shared locations or remote views), its queues and
    /// its function's arena sized for `insts` instructions. O(L + Q + B).
    fn new(
        program: &Module,
        func: &Function,
        a: &Analysis<'_>,
        core: u32,
        touched: &[bool],
        used_queues: &[bool],
        insts: usize,
    ) -> Result<Self, SplitError> {
        let mut m = Module {
            name: program.name.clone(),
            attrs: ModuleAttrs { lnc_size: program.attrs.lnc_size, neuron_core_id: Some(core) },
            ..Module::default()
        };
        let mut locs = Dense::new(program.memlocs.len());
        m.memlocs.reserve_exact(touched.iter().filter(|&&t| t).count());
        for (i, l) in program.memlocs.iter().enumerate() {
            if !touched.get(i).copied().unwrap_or(false) {
                continue;
            }
            let cross = Some(a.consumers.get(i)).filter(|c| !c.is_empty());
            if let (Some(cons), Some(address), Some((w, _))) = (cross, l.address, a.owner[i]) {
                return Err(SplitError::PlacedCrossCore {
                    loc: l.name.to_string(),
                    address,
                    producer: w,
                    reader: cons.first().copied().unwrap_or(w),
                });
            }
            let mut loc = l.clone();
            loc.aliases.clear();
            match (cross, a.owner[i]) {
                (Some(_), Some((w, _))) if w == core => loc.usage = Usage::Shared,
                (Some(cons), Some((w, _))) if cons.contains(&core) => {
                    loc.name = view_name(&l.name, core).into();
                    if a.names.contains(loc.name.as_str()) {
                        return Err(SplitError::NameCollision(loc.name.to_string()));
                    }
                    loc.usage = Usage::Shared;
                    // A view holds no placement of its own until sync_shared_allocations
                    // copies the owner's (address, partition, bank) onto it (seed 004).
                    loc.address = None;
                    (loc.partition, loc.bank) = (0, 0);
                    loc.remote_local_target = Some(RemoteLocalTarget { name: l.name.clone(), core: w });
                }
                _ => {}
            }
            locs.set(i, m.add_loc(loc).0);
        }
        for s in &program.sets {
            let ls: Vec<MemLocId> = s.locs.iter().filter_map(|l| locs.get(l.index()).map(MemLocId)).collect();
            if !ls.is_empty() {
                m.sets.push(MemoryLocationSet { name: s.name.clone(), locs: ls });
            }
        }
        m.queues = program.queues.iter().zip(used_queues).filter(|&(_, &u)| u).map(|(q, _)| q.clone()).collect();
        // `queue_by_name` on this core's queues (the first of a name), looked up by hash.
        let mut first: HashMap<&str, QueueId> = HashMap::with_capacity(m.queues.len());
        for (i, q) in m.queues.iter().enumerate() {
            first.entry(q.name.as_str()).or_insert(QueueId::from_index(i));
        }
        let queues = program.queues.iter().map(|q| first.get(q.name.as_str()).copied()).collect();
        let mut f = Function { name: func.name.clone(), ..Function::default() };
        f.insts.reserve_exact(insts);
        f.blocks.reserve(func.blocks.len());
        f.args = func.args.iter().filter_map(|a| locs.get(a.index()).map(MemLocId)).collect();
        Ok(CoreOut { core, locs, queues, slot: 0, f, m })
    }

    fn queue(&self, q: QueueId) -> QueueId {
        self.queues.get(q.index()).copied().flatten().unwrap_or(q)
    }
}

/// Fills every core's function in one walk of the program in block order:
/// each instruction goes to its core, each barrier arrival to every
/// participant, so the program's arena is read once, front to back (not once
/// per core). O(N + D + P) for N instructions, D deps and P arrivals.
fn build(
    func: &Function,
    a: &Analysis<'_>,
    mut outs: Vec<CoreOut>,
    first_group: u32,
    names: &BarrierNames<'_>,
) -> Vec<Module> {
    let n = func.insts.len();
    // Program instruction -> its id in its own core's function.
    let mut local = Dense::new(n);
    // Producer -> index in `arr` of its first participant's arrival; the arrivals of
    // one producer are consecutive, participants in ascending core order.
    let mut arr_start = Dense::new(n);
    let mut arr: Vec<u32> = Vec::new();
    let mut counts = vec![0usize; outs.len()];
    let mut participants: Vec<u32> = Vec::new();
    let mut group = first_group;
    for b in &func.blocks {
        counts.iter_mut().for_each(|c| *c = 0);
        for &p in &b.insts {
            if let Some(c) = counts.get_mut(a.cores[p.index()] as usize) {
                *c += 1;
            }
            for &d in a.dependents.get(p.index()) {
                if let Some(c) = counts.get_mut(d as usize) {
                    *c += 1;
                }
            }
            if !a.dependents.get(p.index()).is_empty()
                && let Some(c) = counts.get_mut(a.cores[p.index()] as usize)
            {
                *c += 1;
            }
        }
        let block = BlockId::from_index(outs.first().map_or(0, |o| o.f.blocks.len()));
        for (o, &c) in outs.iter_mut().zip(&counts) {
            o.f.blocks.push(Block { name: b.name.clone(), insts: Vec::with_capacity(c) });
        }
        for &pid in &b.insts {
            let here = a.cores[pid.index()];
            if let Some(o) = outs.get(here as usize) {
                let inst = clone_inst(o, &func.insts[pid.index()], a, &local, &arr_start, &arr);
                let id = outs[here as usize].f.push_inst(block, inst);
                local.set(pid.index(), id.0);
            }
            let deps = a.dependents.get(pid.index());
            if deps.is_empty() {
                continue;
            }
            participants.clear();
            participants.extend_from_slice(deps);
            insert_sorted(&mut participants, here);
            arr_start.set(pid.index(), u32::try_from(arr.len()).unwrap_or(u32::MAX));
            for &c in &participants {
                let Some(o) = outs.get_mut(c as usize) else {
                    arr.push(u32::MAX);
                    continue;
                };
                let op = Op::CoreBarrier(CoreBarrier {
                    group,
                    participants: participants.clone(),
                    id: o.slot,
                    flagged: true,
                });
                let mut cb = Inst::new(names.of(group), Engine::Sp, op);
                cb.core = Some(c);
                if c == here
                    && let Some(mine) = local.get(pid.index())
                {
                    cb.deps.push(Dep { inst: InstId(mine), kind: EdgeKind::Control });
                }
                o.slot += 1;
                arr.push(o.f.push_inst(block, cb).0);
            }
            // At most u32::MAX + 1 groups in all (checked by the caller): the last one wraps unused.
            group = group.wrapping_add(1);
        }
    }
    outs.into_iter()
        .map(|o| {
            let mut m = o.m;
            m.functions.push(o.f);
            m
        })
        .collect()
}

/// The names of the split's barrier arrivals: `cb<group>`, or, where the
/// program already names an instruction so, the first free `cb<group>_<k>`
/// (k = 1, 2, ...); instruction names are unique within a function. The
/// program's names are kept only when one starts with `cb` (lookups only).
struct BarrierNames<'p> {
    taken: NameSet<'p>,
}

impl<'p> BarrierNames<'p> {
    fn new(func: &'p Function) -> Self {
        BarrierNames { taken: func.insts.iter().map(|i| i.name.as_str()).filter(|n| n.starts_with("cb")).collect() }
    }

    /// The name of group `group`'s arrivals.
    fn of(&self, group: u32) -> String {
        let base = format!("cb{group}");
        if !self.taken.contains(base.as_str()) {
            return base;
        }
        (1u64..).map(|k| format!("{base}_{k}")).find(|n| !self.taken.contains(n.as_str())).unwrap_or(base)
    }
}

/// Core `o.core`'s arrival at producer `p`'s barrier, if it was pushed already.
fn arrival_of(a: &Analysis<'_>, arr_start: &Dense, arr: &[u32], p: usize, core: u32) -> Option<u32> {
    let start = arr_start.get(p)? as usize;
    let deps = a.dependents.get(p);
    deps.binary_search(&core).ok()?;
    let at = deps.partition_point(|&d| d < core) + usize::from(a.cores[p] < core);
    arr.get(start + at).copied().filter(|&id| id != u32::MAX)
}

/// Core `o.core`'s copy of `pinst`: locations remapped, same-core deps kept,
/// a control dep on this core's barrier arrival for every cross-core producer.
fn clone_inst(o: &CoreOut, pinst: &Inst, a: &Analysis<'_>, local: &Dense, arr_start: &Dense, arr: &[u32]) -> Inst {
    let core = o.core;
    // Every location this core's instructions touch was mapped by `CoreOut::new`.
    let map = |ap: &AccessPattern| AccessPattern { loc: o.locs.get(ap.loc.index()).map_or(ap.loc, MemLocId), ..*ap };
    let op = match &pinst.op {
        Op::DmaCopy { src, dst } => Op::DmaCopy { src: map(src), dst: map(dst) },
        Op::Compute { kind, srcs, dst } => {
            Op::Compute { kind: *kind, srcs: srcs.iter().map(map).collect(), dst: map(dst) }
        }
        Op::SwitchQueueInstance { queue, instance } => {
            Op::SwitchQueueInstance { queue: o.queue(*queue), instance: *instance }
        }
        other => other.clone(),
    };
    let mut deps = Deps::new();
    for d in &pinst.deps {
        if a.cores[d.inst.index()] == core
            && let Some(mine) = local.get(d.inst.index())
        {
            deps.push(Dep { inst: InstId(mine), kind: d.kind });
        }
    }
    // Cross-core producers this instruction depends on, by data or by edge.
    let producers = pinst
        .read_slice()
        .iter()
        .filter_map(|r| a.owner[r.loc.index()].map(|(_, w)| w))
        .chain(pinst.deps.iter().map(|d| d.inst))
        .filter(|p| a.cores[p.index()] != core);
    for p in producers {
        if let Some(cb) = arrival_of(a, arr_start, arr, p.index(), core) {
            deps.push(Dep { inst: InstId(cb), kind: EdgeKind::Control });
        }
    }
    deps.sort();
    deps.dedup();
    Inst {
        name: pinst.name.clone(),
        op,
        engine: pinst.engine,
        core: Some(core),
        queue: pinst.queue.map(|q| o.queue(q)),
        collective: pinst.collective,
        deps,
    }
}
