//! Codegen: from the linked module, per core function and per engine (PE,
//! ACT, DVE, POOL, SP), streams of 64-byte records ([`record`]) the simulator
//! executes, plus the variable table and DMA descriptors the packager writes
//! into each subgraph's `def.json` and engine JSON.
//!
//! Memory operands name `def.json` variables by var_id plus a compiler-relative
//! offset (what the loader relocates); DMA descriptors carry var-relative
//! addresses. Mapping from the linked module (DESIGN.md, "From allocator to
//! device"): inputs, outputs and weights become `input`, `output` and `file`
//! variables; compiler-placed DRAM tensors become `virtual` variables at the
//! allocator's address inside the per-core scratch variable `__scratch`;
//! shared tensors become `virtual` variables inside `__shared`, the one
//! region the loader allocates per load for every core.
//!
//! Synchronisation (the seed's `synchronizer` / `alloc_semaphores`, run after
//! the link): engines are sequential, so a dependency on the same engine is
//! free; a dependency on another engine of the same core becomes a wait on
//! that engine's completion semaphore (semaphore `e` for engine `e`, counting
//! the signalling instructions it has completed); cross-core dependencies
//! stay CoreBarriers. IR semaphore `s` is semaphore `USER_SEM_BASE + s`.
//! A core's semaphore file is the engines' [`ENGINE_SEMS`] plus the pool of
//! the linked module's queues (the sum of their semaphore counts, seed 000
//! section 6: counts accounted across the merge): an IR semaphore past that
//! pool is emitted as is, so the loaded image refuses it at run time (the
//! simulator's illegal-record check), instead of the file growing to fit.
//!
//! Cost: O(N log N + L) for N instructions and L locations of the linked
//! module: one location-indexed var table serves every core function in
//! turn (reset where that core used it, not rebuilt per core).

pub mod record;

use std::collections::BTreeMap;
use std::collections::btree_map::Entry;

use crate::ir::*;
use record::*;

/// Semaphores `0..5` count each engine's completed signalling instructions.
pub const ENGINE_SEMS: u8 = 5;
/// The IR's semaphore `s` is record semaphore `USER_SEM_BASE + s`.
pub const USER_SEM_BASE: u8 = ENGINE_SEMS;
/// The user semaphores the linked module's queues provide: the sum of their
/// counts, at most what a record's semaphore byte can name past the engines'.
pub fn queue_pool(m: &Module) -> u32 {
    let pool = m.queues.iter().fold(0u32, |t, q| t.saturating_add(q.semaphores));
    pool.min(256 - u32::from(ENGINE_SEMS))
}

/// Name of the per-core private scratch variable.
pub const SCRATCH_VAR: &str = "__scratch";
/// Name of the per-load shared scratch variable.
pub const SHARED_VAR: &str = "__shared";
/// Page size the scratch variables are rounded to.
pub const PAGE: u64 = 4096;

/// What a variable is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VarKind {
    /// A program input, bound by name at run time.
    Input,
    /// A program output, read back by name.
    Output,
    /// A weight whose contents are `init_value(seed, i)` (written as `.npy`).
    File {
        /// The contents' seed.
        init: u64,
    },
    /// The per-core private DRAM region the allocator placed into.
    Scratch,
    /// The per-load region shared by all cores.
    SharedScratch,
    /// A compiler-placed tensor inside a backing variable.
    Virtual {
        /// The backing variable's var_id.
        backing: u32,
        /// Byte offset inside the backing variable (the allocator's address).
        offset: u64,
    },
}

/// A `def.json` variable; its var_id is its index in [`CoreCode::vars`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Var {
    /// Variable name (the IR location's name, or a scratch name).
    pub name: String,
    /// Kind.
    pub kind: VarKind,
    /// Size in bytes.
    pub size: u64,
}

/// A variable-relative address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VarRef {
    /// var_id.
    pub var: u32,
    /// Byte offset in the variable.
    pub offset: u64,
}

/// A DMA descriptor in relative (var-relative) form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DmaDescriptor {
    /// Index of the queue in [`CoreCode::queues`].
    pub queue: u32,
    /// Source.
    pub src: VarRef,
    /// Destination.
    pub dst: VarRef,
    /// Bytes to move.
    pub size: u64,
}

/// One engine's code on one core.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineCode {
    /// The engine.
    pub engine: Engine,
    /// Its instruction stream.
    pub records: Vec<Record>,
    /// The DMA descriptors its `Dma` records trigger (by index).
    pub dma: Vec<DmaDescriptor>,
}

/// Everything codegen produces for one core (one NEFF subgraph).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoreCode {
    /// The NeuronCoreId.
    pub core: u32,
    /// The linked module's function for this core.
    pub function: String,
    /// The variable table (var_id = index).
    pub vars: Vec<Var>,
    /// DMA queues this core uses.
    pub queues: Vec<DmaQueue>,
    /// One stream per engine, in [`Engine::ALL`] order.
    pub engines: Vec<EngineCode>,
    /// Semaphores used on this core.
    pub semaphores: u32,
    /// Participants of every barrier group this core arrives at.
    pub barrier_groups: BTreeMap<u32, Vec<u32>>,
}

/// Why a module cannot be compiled to records.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CodegenError {
    /// The module is not valid IR.
    #[error("invalid module: {0}")]
    Invalid(#[from] VerifyErrors),
    /// A compiler-placed tensor has no address (the allocator did not run).
    #[error("location `{0}` has no address; allocate before codegen")]
    Unallocated(String),
    /// Only DRAM locations exist on the simulated device.
    #[error("location `{0}` is not in DRAM; the device models DRAM only")]
    NotDram(String),
    /// A value does not fit its record field.
    #[error("instruction `{inst}`: {what} does not fit the record encoding")]
    TooLarge {
        /// The instruction.
        inst: String,
        /// What overflows.
        what: &'static str,
    },
    /// A core function calls another function.
    #[error("instruction `{0}`: calls exist only in the dispatcher")]
    CallInCore(String),
    /// An n-ary add writes over one of its sources.
    #[error("instruction `{0}`: an add of more than two sources may not write over a source")]
    InPlaceAddN(String),
    /// A location's name is reserved for a scratch variable.
    #[error("location name `{0}` is reserved")]
    ReservedName(String),
    /// No function carries a NeuronCoreId.
    #[error("no core function: codegen takes a linked module (functions with `core N`)")]
    NoCoreFunction,
}

/// Compiles every core function of a linked module (functions carrying a
/// NeuronCoreId, or the one function of a per-core module), in core order.
pub fn codegen(m: &Module) -> Result<Vec<CoreCode>, CodegenError> {
    codegen_verified(m.verified()?)
}

/// [`codegen`] of a module already verified (no second `verify`).
pub fn codegen_verified(m: Verified<'_>) -> Result<Vec<CoreCode>, CodegenError> {
    let m = m.module();
    let mut cores: Vec<(u32, &Function)> =
        m.functions.iter().filter_map(|f| f.attrs.neuron_core_id.or(m.attrs.neuron_core_id).map(|c| (c, f))).collect();
    if cores.is_empty() {
        return Err(CodegenError::NoCoreFunction);
    }
    cores.sort_by_key(|&(c, _)| c);
    let mut var_of = vec![(NO_VAR, 0); m.memlocs.len()];
    let mut out = Vec::with_capacity(cores.len());
    for (c, f) in cores {
        let (code, table) = CoreGen::new(m, f, c, var_of)?.run()?;
        var_of = table;
        out.push(code);
    }
    Ok(out)
}

/// `var_of`'s mark for a location without a var.
const NO_VAR: u32 = u32::MAX;

struct CoreGen<'a> {
    m: &'a Module,
    f: &'a Function,
    code: CoreCode,
    /// Location (by index) -> (var_id, element bytes), var [`NO_VAR`] for a
    /// location this core does not use: one 8-byte probe per operand instead
    /// of one into the location table and one into a var table. Shared by
    /// the cores in turn: back to all [`NO_VAR`] after each core's `run`.
    var_of: Vec<(u32, u32)>,
    /// The locations this core uses, ascending (the entries of `var_of` it set).
    used: Vec<MemLocId>,
    /// Queue -> index in `code.queues`.
    queue_of: BTreeMap<QueueId, u32>,
    /// Engine -> index in `code.queues` of its static default queue, once made.
    default_queue: [Option<u32>; 5],
}

fn fit<T: TryFrom<u64>>(v: u64, inst: &Inst, what: &'static str) -> Result<T, CodegenError> {
    T::try_from(v).map_err(|_| CodegenError::TooLarge { inst: inst.name.to_string(), what })
}

impl<'a> CoreGen<'a> {
    fn new(m: &'a Module, f: &'a Function, core: u32, var_of: Vec<(u32, u32)>) -> Result<Self, CodegenError> {
        let engines =
            Engine::ALL.iter().map(|&engine| EngineCode { engine, records: Vec::new(), dma: Vec::new() }).collect();
        let code = CoreCode {
            core,
            function: f.name.clone(),
            vars: Vec::new(),
            queues: Vec::new(),
            engines,
            semaphores: queue_pool(m).saturating_add(u32::from(ENGINE_SEMS)),
            barrier_groups: BTreeMap::new(),
        };
        let mut g =
            CoreGen { m, f, code, var_of, used: Vec::new(), queue_of: BTreeMap::new(), default_queue: [None; 5] };
        g.vars()?;
        g.queues();
        Ok(g)
    }

    /// The variable table: scratch variables first, then one per referenced location.
    fn vars(&mut self) -> Result<(), CodegenError> {
        let mut used: Vec<MemLocId> = Vec::with_capacity(self.f.insts.len() * 3);
        self.f.insts.iter().for_each(|i| i.for_each_access(|a| used.push(a.loc)));
        used.sort();
        used.dedup();
        let (mut private_end, mut shared_end) = (None, None);
        for &id in &used {
            let l = self.m.loc(id);
            if l.name == SCRATCH_VAR || l.name == SHARED_VAR {
                return Err(CodegenError::ReservedName(l.name.to_string()));
            }
            if l.mem_type != MemType::Dram {
                return Err(CodegenError::NotDram(l.name.to_string()));
            }
            let end = |a: u64| a.saturating_add(l.byte_size());
            match (l.usage, l.address) {
                (Usage::Internal | Usage::Spill, Some(a)) => private_end = private_end.max(Some(end(a))),
                (Usage::Shared, Some(a)) => shared_end = shared_end.max(Some(end(a))),
                (Usage::Internal | Usage::Spill | Usage::Shared, None) => {
                    return Err(CodegenError::Unallocated(l.name.to_string()));
                }
                _ => {}
            }
        }
        let round = |e: u64| e.div_ceil(PAGE).saturating_mul(PAGE);
        let scratch = private_end.map(|e| self.push_var(SCRATCH_VAR.into(), VarKind::Scratch, round(e)));
        let shared = shared_end.map(|e| self.push_var(SHARED_VAR.into(), VarKind::SharedScratch, round(e)));
        for &id in &used {
            let l = self.m.loc(id);
            let kind = match l.usage {
                Usage::Input => VarKind::Input,
                Usage::Output => VarKind::Output,
                Usage::Weight => VarKind::File { init: l.init.unwrap_or(0) },
                Usage::Internal | Usage::Spill => {
                    VarKind::Virtual { backing: scratch.unwrap_or(0), offset: l.address.unwrap_or(0) }
                }
                Usage::Shared => VarKind::Virtual { backing: shared.unwrap_or(0), offset: l.address.unwrap_or(0) },
            };
            let v = self.push_var(l.name.to_string(), kind, l.byte_size());
            if let Some(slot) = self.var_of.get_mut(id.index()) {
                *slot = (v, l.dtype.size());
            }
        }
        self.used = used;
        Ok(())
    }

    /// The var of a location the function uses (every one has one after `vars`; 0 otherwise).
    fn var(&self, loc: MemLocId) -> u32 {
        self.var_of.get(loc.index()).map(|&(v, _)| v).filter(|&v| v != NO_VAR).unwrap_or(0)
    }

    /// The element size of a location, from the var table when the function uses it.
    fn elem_size(&self, loc: MemLocId) -> u64 {
        match self.var_of.get(loc.index()) {
            Some(&(v, size)) if v != NO_VAR => u64::from(size),
            _ => u64::from(self.m.loc(loc).dtype.size()),
        }
    }

    fn push_var(&mut self, name: String, kind: VarKind, size: u64) -> u32 {
        self.code.vars.push(Var { name, kind, size });
        (self.code.vars.len() - 1) as u32
    }

    fn queues(&mut self) {
        let mut used: Vec<QueueId> = self
            .f
            .insts
            .iter()
            .flat_map(|i| {
                let sqi = match i.op {
                    Op::SwitchQueueInstance { queue, .. } => Some(queue),
                    _ => None,
                };
                i.queue.into_iter().chain(sqi)
            })
            .collect();
        used.sort();
        used.dedup();
        for q in used {
            self.queue_of.insert(q, self.code.queues.len() as u32);
            self.code.queues.push(self.m.queues[q.index()].clone());
        }
    }

    /// The queue a DMA uses; a DMA without one gets a static queue of its engine.
    fn dma_queue(&mut self, inst: &Inst) -> u32 {
        if let Some(q) = inst.queue.and_then(|q| self.queue_of.get(&q)) {
            return *q;
        }
        if let Some(i) = self.default_queue[inst.engine.index()] {
            return i;
        }
        let name = format!("__default_{:?}", inst.engine).to_lowercase();
        let i = match self.code.queues.iter().position(|q| q.name == name) {
            Some(i) => i as u32,
            None => {
                let q =
                    DmaQueue { name, qtype: QueueType::Static, owner: inst.engine, semaphores: 0, instances: vec![0] };
                self.code.queues.push(q);
                (self.code.queues.len() - 1) as u32
            }
        };
        self.default_queue[inst.engine.index()] = Some(i);
        i
    }

    /// This core's code, and the var table reset for the next core.
    fn run(mut self) -> Result<(CoreCode, Vec<(u32, u32)>), CodegenError> {
        let order: Vec<InstId> = self.f.order().collect();
        // Every instruction lowers to at least one record of its engine, and a DMA
        // copy to one descriptor: reserve those up front (no regrowth copies).
        let (mut per_engine, mut dmas) = ([0usize; 5], [0usize; 5]);
        for inst in &self.f.insts {
            per_engine[inst.engine.index()] += 1;
            if matches!(inst.op, Op::DmaCopy { .. }) {
                dmas[inst.engine.index()] += 1;
            }
        }
        for (code, (&r, &d)) in self.code.engines.iter_mut().zip(per_engine.iter().zip(&dmas)) {
            code.records.reserve(r);
            code.dma.reserve(d);
        }
        // Each instruction's engine, one byte apiece: the dependency loops below
        // probe it at random producers, which in the full `Inst` table would
        // cost a cache line per probe.
        let engine: Vec<u8> = self.f.insts.iter().map(|i| i.engine.index() as u8).collect();
        // Which instructions another engine waits for, and their signal index.
        let mut signals = vec![false; self.f.insts.len()];
        for &id in &order {
            let inst = &self.f.insts[id.index()];
            let me = engine[id.index()];
            for d in &inst.deps {
                if engine[d.inst.index()] != me {
                    signals[d.inst.index()] = true;
                }
            }
        }
        let mut sig_index = vec![0u32; self.f.insts.len()];
        let mut count = [0u32; 5];
        for &id in &order {
            if signals[id.index()] {
                let e = self.f.insts[id.index()].engine.index();
                count[e] += 1;
                sig_index[id.index()] = count[e];
            }
        }
        // One records buffer and one waits buffer, reused for every instruction.
        let mut recs: Vec<Record> = Vec::new();
        let mut all: Vec<Wait> = Vec::new();
        for (pos, &id) in order.iter().enumerate() {
            let inst = &self.f.insts[id.index()];
            let mut need = [0u32; 5];
            let me = engine[id.index()];
            for d in &inst.deps {
                let p = engine[d.inst.index()];
                if p != me {
                    need[p as usize] = need[p as usize].max(sig_index[d.inst.index()]);
                }
            }
            all.clear();
            all.extend(need.iter().enumerate().filter(|&(_, &v)| v > 0).map(|(e, &v)| Wait { sem: e as u8, value: v }));
            let debug_id = fit::<u32>(pos as u64, inst, "instruction index")?;
            recs.clear();
            self.lower(inst, debug_id, &mut recs)?;
            // The main record takes up to MAX_WAITS waits (an IR sem_wait's own
            // wait included); the rest go into SemWait records just before it.
            all.extend(recs[0].waits.iter().flatten().copied());
            let (pre, head) = all.split_at(all.len().saturating_sub(MAX_WAITS));
            recs[0].waits = [None; MAX_WAITS];
            for (slot, wt) in recs[0].waits.iter_mut().zip(head) {
                *slot = Some(*wt);
            }
            if let Some(last) = recs.iter_mut().rev().find(|r| r.opcode != Opcode::Ext) {
                if signals[id.index()] {
                    last.flags |= FLAG_SIGNAL;
                    last.signal = inst.engine.index() as u8;
                }
                if inst.collective {
                    last.flags |= FLAG_COLLECTIVE;
                }
            }
            let out = &mut self.code.engines[inst.engine.index()].records;
            for chunk in pre.chunks(MAX_WAITS) {
                let mut w = Record::new(Opcode::SemWait, debug_id);
                for (slot, wt) in w.waits.iter_mut().zip(chunk) {
                    *slot = Some(*wt);
                }
                out.push(w);
            }
            out.append(&mut recs);
        }
        for id in &self.used {
            if let Some(slot) = self.var_of.get_mut(id.index()) {
                *slot = (NO_VAR, 0);
            }
        }
        Ok((self.code, self.var_of))
    }

    fn operand(&self, inst: &Inst, ap: &AccessPattern) -> Result<Operand, CodegenError> {
        let size = self.elem_size(ap.loc);
        let var = self.var(ap.loc);
        Ok(Operand::var(
            var,
            fit(ap.offset.saturating_mul(size), inst, "operand offset")?,
            fit(ap.len.saturating_mul(size), inst, "operand length")?,
        ))
    }

    /// Appends the records of one instruction (without its waits and signal) to `out`.
    fn lower(&mut self, inst: &Inst, id: u32, out: &mut Vec<Record>) -> Result<(), CodegenError> {
        let mut r = Record::new(Opcode::SemWait, id);
        match &inst.op {
            Op::DmaCopy { src, dst } => {
                let size = self.elem_size(src.loc);
                let q = self.dma_queue(inst);
                let desc = DmaDescriptor {
                    queue: q,
                    src: VarRef { var: self.var(src.loc), offset: src.offset * size },
                    dst: VarRef { var: self.var(dst.loc), offset: dst.offset * size },
                    size: src.len * size,
                };
                let dma = &mut self.code.engines[inst.engine.index()].dma;
                let index = fit::<u32>(dma.len() as u64, inst, "descriptor index")?;
                dma.push(desc);
                r.opcode = Opcode::Dma;
                r.ops[0] = Operand::var(q, index, fit(desc.size, inst, "DMA size")?);
            }
            Op::Compute { kind, srcs, dst } => return self.compute(inst, id, *kind, srcs, dst, out),
            Op::CoreBarrier(b) => {
                // Every arrival of a group carries its participants: the last one wins,
                // cloned only when it differs from what the group holds.
                match self.code.barrier_groups.entry(b.group) {
                    Entry::Occupied(mut e) => {
                        if *e.get() != b.participants {
                            *e.get_mut() = b.participants.clone();
                        }
                    }
                    Entry::Vacant(e) => {
                        e.insert(b.participants.clone());
                    }
                }
                r.opcode = Opcode::Barrier;
                r.ops[0] = Operand::var(b.id, b.group, b.participants.len() as u32);
            }
            Op::SemWait { sem, value } => {
                r.waits[0] = Some(Wait { sem: self.user_sem(inst, *sem)?, value: *value });
            }
            Op::SemSignal { sem } => {
                r.opcode = Opcode::SemSignal;
                r.ops[0] = Operand::var(u32::from(self.user_sem(inst, *sem)?), 0, 0);
            }
            Op::SwitchQueueInstance { queue, instance } => {
                r.opcode = Opcode::SwitchQueue;
                r.ops[0] = Operand::var(self.queue_of.get(queue).copied().unwrap_or(0), *instance, 0);
            }
            Op::Return => r.opcode = Opcode::Return,
            Op::Call { .. } => return Err(CodegenError::CallInCore(inst.name.to_string())),
        }
        out.push(r);
        Ok(())
    }

    fn user_sem(&self, inst: &Inst, sem: u32) -> Result<u8, CodegenError> {
        let s = u32::from(USER_SEM_BASE) + sem;
        let s = u8::try_from(s)
            .map_err(|_| CodegenError::TooLarge { inst: inst.name.to_string(), what: "semaphore index" })?;
        Ok(s)
    }

    fn compute(
        &self,
        inst: &Inst,
        id: u32,
        kind: ComputeKind,
        srcs: &[AccessPattern],
        dst: &AccessPattern,
        out: &mut Vec<Record>,
    ) -> Result<(), CodegenError> {
        let mut r = Record::new(Opcode::Add, id);
        r.ops[0] = self.operand(inst, dst)?;
        for (slot, s) in r.ops[1..].iter_mut().zip(srcs) {
            *slot = self.operand(inst, s)?;
        }
        r.opcode = match kind {
            ComputeKind::Add if srcs.len() > 2 => {
                if srcs
                    .iter()
                    .any(|s| s.loc == dst.loc && s.offset < dst.offset + dst.len && dst.offset < s.offset + s.len)
                {
                    return Err(CodegenError::InPlaceAddN(inst.name.to_string()));
                }
                r.imm = srcs[2..].chunks(3).len() as u32;
                out.push(Record { opcode: Opcode::PseudoAddN, ..r });
                for chunk in srcs[2..].chunks(3) {
                    let mut e = Record::new(Opcode::Ext, id);
                    e.imm = chunk.len() as u32;
                    for (slot, s) in e.ops.iter_mut().zip(chunk) {
                        *slot = self.operand(inst, s)?;
                    }
                    out.push(e);
                }
                return Ok(());
            }
            ComputeKind::Add => Opcode::Add,
            ComputeKind::Mul => Opcode::Mul,
            ComputeKind::Relu => Opcode::Relu,
            ComputeKind::Reduce => Opcode::Reduce,
            ComputeKind::MatMul { m, k, n } => {
                r.imm = matmul_imm(m, k, n)
                    .ok_or_else(|| CodegenError::TooLarge { inst: inst.name.to_string(), what: "matmul dimension" })?;
                Opcode::MatMul
            }
        };
        out.push(r);
        Ok(())
    }
}
