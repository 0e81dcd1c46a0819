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
//! seed 000 §7 says each core does.
//!
//! Cost: O(C·(N + L)) expected for C cores, N instructions and L locations
//! (each core's module walks the program once; per-index tables are dense
//! vectors, the view-name collision test a hash set of the program's names,
//! and each core's arena, block lists and locations are sized before filling).
//!
//! Choices (documented, tested): a program output may not be read on another
//! core (outputs are written once and read by the host); an unbound
//! instruction is on core 0 only when `lnc_size == 1`.

use std::collections::BTreeSet;

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
    /// A generated view name is already taken by a program location.
    #[error("view name `{0}` collides with a program location")]
    NameCollision(String),
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
        None => Err(SplitError::Unbound(i.name.clone())),
    };
    let cores: Vec<u32> = func.insts.iter().map(core_of).collect::<Result<_, _>>()?;
    let owner = owners(program, func, &cores)?;

    // Cross-core dependents of each instruction: the cores of its dependents elsewhere.
    let mut dependents: Vec<Vec<u32>> = vec![Vec::new(); func.insts.len()];
    for id in func.order() {
        let inst = &func.insts[id.index()];
        let here = cores[id.index()];
        for r in inst.read_slice() {
            if let Some(&Some((a, p))) = owner.get(r.loc.index())
                && a != here
            {
                if program.loc(r.loc).usage == Usage::Output {
                    let loc = program.loc(r.loc).name.clone();
                    return Err(SplitError::OutputReadCrossCore { loc, producer: a, reader: here });
                }
                insert_sorted(&mut dependents[p.index()], here);
            }
        }
        for d in &inst.deps {
            if cores[d.inst.index()] != here {
                insert_sorted(&mut dependents[d.inst.index()], here);
            }
        }
    }
    // Cross-core tensors and the consumer cores of each.
    let mut consumers: Vec<Vec<u32>> = vec![Vec::new(); program.memlocs.len()];
    for id in func.order() {
        let here = cores[id.index()];
        for r in func.insts[id.index()].read_slice() {
            if owner.get(r.loc.index()).copied().flatten().is_some_and(|(a, _)| a != here) {
                insert_sorted(&mut consumers[r.loc.index()], here);
            }
        }
    }
    let names = program.memlocs.iter().map(|l| l.name.as_str()).collect();
    // Barrier arrivals per core: one per instruction with cross-core dependents, on each participant.
    let mut arrivals = vec![0usize; lnc as usize];
    for (p, deps) in dependents.iter().enumerate() {
        if deps.is_empty() {
            continue;
        }
        let here = cores[p];
        for &c in deps.iter().chain((!deps.contains(&here)).then_some(&here)) {
            if let Some(n) = arrivals.get_mut(c as usize) {
                *n += 1;
            }
        }
    }
    let analysis = Analysis { cores, owner, consumers, dependents, names, arrivals };
    (0..lnc).map(|c| CoreSplit::new(program, func, &analysis, c).build()).collect()
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
                Some((a, _)) if a != c => return Err(SplitError::MultipleWriters(program.loc(w.loc).name.clone())),
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
    consumers: Vec<Vec<u32>>,
    /// The cores that depend on each instruction from another core, sorted, by instruction index.
    dependents: Vec<Vec<u32>>,
    /// Every program location's name (a view's name must not be one of them; lookups only).
    names: NameSet<'p>,
    /// Barrier arrivals per core (sizes each core's instruction arena up front).
    arrivals: Vec<usize>,
}

/// A dense map from a program index to an id of this core's module, 4 bytes
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

/// The state of building one core's module.
struct CoreSplit<'a> {
    program: &'a Module,
    func: &'a Function,
    a: &'a Analysis<'a>,
    core: u32,
    /// Program location (by index) -> this core's location.
    locs: Dense,
    m: Module,
}

impl<'a> CoreSplit<'a> {
    fn new(program: &'a Module, func: &'a Function, a: &'a Analysis<'a>, core: u32) -> Self {
        let m = Module {
            name: program.name.clone(),
            attrs: ModuleAttrs { lnc_size: program.attrs.lnc_size, neuron_core_id: Some(core) },
            ..Module::default()
        };
        CoreSplit { program, func, a, core, locs: Dense::new(program.memlocs.len()), m }
    }

    fn build(mut self) -> Result<Module, SplitError> {
        self.locations()?;
        self.queues();
        let mut f = Function { name: self.func.name.clone(), ..Function::default() };
        // This core's instructions plus its barrier arrivals, counted first so
        // the arena is allocated once (no regrowth copies of a large Vec).
        let mine = self.a.cores.iter().filter(|&&c| c == self.core).count();
        f.insts.reserve_exact(mine + self.a.arrivals.get(self.core as usize).copied().unwrap_or(0));
        f.blocks.reserve(self.func.blocks.len());
        f.args = self.func.args.iter().filter_map(|a| self.locs.get(a.index()).map(MemLocId)).collect();
        // Program inst -> this core's inst; producer -> this core's barrier arrival (by program index).
        let mut insts = Dense::new(self.func.insts.len());
        let mut arrival = Dense::new(self.func.insts.len());
        let mut group = 0u32;
        let mut slot = 0u32;
        for b in &self.func.blocks {
            let block = BlockId::from_index(f.blocks.len());
            let here_count = b.insts.iter().filter(|p| self.a.cores[p.index()] == self.core).count()
                + b.insts.iter().filter(|p| self.arrives(p.index())).count();
            f.blocks.push(Block { name: b.name.clone(), insts: Vec::with_capacity(here_count) });
            for &pid in &b.insts {
                let pinst = &self.func.insts[pid.index()];
                let here = self.a.cores[pid.index()];
                if here == self.core {
                    let inst = self.clone_inst(pinst, &insts, &arrival);
                    insts.set(pid.index(), f.push_inst(block, inst).0);
                }
                let deps = &self.a.dependents[pid.index()];
                if !deps.is_empty() {
                    if here == self.core || deps.binary_search(&self.core).is_ok() {
                        let mut participants = Vec::with_capacity(deps.len() + 1);
                        participants.extend_from_slice(deps);
                        insert_sorted(&mut participants, here);
                        let mut cb = Inst::new(
                            format!("cb{group}"),
                            Engine::Sp,
                            Op::CoreBarrier(CoreBarrier { group, participants, id: slot, flagged: true }),
                        );
                        cb.core = Some(self.core);
                        if let Some(mine) = insts.get(pid.index()) {
                            cb.deps.push(Dep { inst: InstId(mine), kind: EdgeKind::Control });
                        }
                        slot += 1;
                        arrival.set(pid.index(), f.push_inst(block, cb).0);
                    }
                    group += 1;
                }
            }
        }
        self.m.functions.push(f);
        Ok(self.m)
    }

    /// Whether this core has a barrier arrival at program instruction `p`:
    /// `p` has cross-core dependents and this core is `p`'s or one of them.
    fn arrives(&self, p: usize) -> bool {
        self.a.dependents.get(p).is_some_and(|d| {
            !d.is_empty() && (self.a.cores.get(p) == Some(&self.core) || d.binary_search(&self.core).is_ok())
        })
    }

    /// This core's copy of `pinst`: locations remapped, same-core deps kept,
    /// a control dep on this core's barrier arrival for every cross-core producer.
    fn clone_inst(&self, pinst: &Inst, insts: &Dense, arrival: &Dense) -> Inst {
        // Every location this core's instructions touch was mapped by `locations`.
        let map = |a: &AccessPattern| AccessPattern { loc: self.locs.get(a.loc.index()).map_or(a.loc, MemLocId), ..*a };
        let op = match &pinst.op {
            Op::DmaCopy { src, dst } => Op::DmaCopy { src: map(src), dst: map(dst) },
            Op::Compute { kind, srcs, dst } => {
                Op::Compute { kind: *kind, srcs: srcs.iter().map(map).collect(), dst: map(dst) }
            }
            Op::SwitchQueueInstance { queue, instance } => {
                Op::SwitchQueueInstance { queue: self.queue(*queue), instance: *instance }
            }
            other => other.clone(),
        };
        let mut deps = Vec::new();
        for d in &pinst.deps {
            if let Some(mine) = insts.get(d.inst.index()) {
                deps.push(Dep { inst: InstId(mine), kind: d.kind });
            }
        }
        // Cross-core producers this instruction depends on, by data or by edge.
        let producers = pinst
            .read_slice()
            .iter()
            .filter_map(|r| self.a.owner[r.loc.index()].map(|(_, w)| w))
            .chain(pinst.deps.iter().map(|d| d.inst))
            .filter(|p| self.a.cores[p.index()] != self.core);
        for p in producers {
            if let Some(cb) = arrival.get(p.index()) {
                deps.push(Dep { inst: InstId(cb), kind: EdgeKind::Control });
            }
        }
        deps.sort();
        deps.dedup();
        Inst {
            name: pinst.name.clone(),
            op,
            engine: pinst.engine,
            core: Some(self.core),
            queue: pinst.queue.map(|q| self.queue(q)),
            collective: pinst.collective,
            deps,
        }
    }

    fn queue(&self, q: QueueId) -> QueueId {
        let name = &self.program.queues[q.index()].name;
        self.m.queue_by_name(name).unwrap_or(q)
    }

    fn queues(&mut self) {
        let used: BTreeSet<QueueId> = self
            .func
            .insts
            .iter()
            .zip(&self.a.cores)
            .filter(|&(_, &c)| c == self.core)
            .flat_map(|(i, _)| {
                let sqi = match i.op {
                    Op::SwitchQueueInstance { queue, .. } => Some(queue),
                    _ => None,
                };
                i.queue.into_iter().chain(sqi)
            })
            .collect();
        self.m.queues = used.iter().map(|q| self.program.queues[q.index()].clone()).collect();
    }

    /// This core's locations, in program order: what its instructions touch,
    /// with cross-core tensors as shared locations or remote views.
    fn locations(&mut self) -> Result<(), SplitError> {
        let mut touched = vec![false; self.program.memlocs.len()];
        for (inst, &c) in self.func.insts.iter().zip(&self.a.cores) {
            if c == self.core {
                inst.read_slice().iter().chain(inst.write_ref()).for_each(|a| touched[a.loc.index()] = true);
            }
        }
        self.m.memlocs.reserve_exact(touched.iter().filter(|&&t| t).count());
        for (i, l) in self.program.memlocs.iter().enumerate() {
            if !touched[i] {
                continue;
            }
            let cross = Some(&self.a.consumers[i]).filter(|c| !c.is_empty());
            let mut loc = l.clone();
            loc.aliases.clear();
            match (cross, self.a.owner[i]) {
                (Some(_), Some((w, _))) if w == self.core => loc.usage = Usage::Shared,
                (Some(cons), Some((w, _))) if cons.contains(&self.core) => {
                    loc.name = view_name(&l.name, self.core);
                    if self.a.names.contains(loc.name.as_str()) {
                        return Err(SplitError::NameCollision(loc.name));
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
            self.locs.set(i, self.m.add_loc(loc).0);
        }
        for s in &self.program.sets {
            let locs: Vec<MemLocId> = s.locs.iter().filter_map(|l| self.locs.get(l.index()).map(MemLocId)).collect();
            if !locs.is_empty() {
                self.m.sets.push(MemoryLocationSet { name: s.name.clone(), locs });
            }
        }
        Ok(())
    }
}
