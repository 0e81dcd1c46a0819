//! The seeded program generator: one symbolic module for `lnc_size` N.
//!
//! A program is a DAG of compute and DMA ops over DRAM tensors, every op bound
//! to a core, in one function `main` split into a few blocks. It has pre-placed
//! inputs, weights and outputs (so the allocator's HWM floor has work), real
//! cross-core handoffs (a tensor written on one core and read on another),
//! all-reduces across cores (collective adds over every core's partial, so the
//! CC-buffer sizing has work), and tensor sizes from one element (4 bytes) to
//! megabytes. Every tensor is written by exactly one op (SSA), and every op
//! carries a data dependency on the producer of each operand, so a program is
//! race-free by construction. Same config, same program, byte for byte.
//!
//! Cost: O(N·B) time and O(N) memory for N instructions, B = the bit length
//! of `max_elems` (at most 64): operands are drawn from per-(core, length
//! bucket) lists of recent tensors, never by scanning every tensor.
//! [`GenConfig::with_ops`] sizes a program by instructions per core (`lncsim
//! gen --ops N`) and refuses, with a typed error, more than
//! [`MAX_OPS_PER_CORE`] per core or [`MAX_OPS_TOTAL`] in all.

use compact_str::format_compact;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::ir::*;

/// Program size class (`--size`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SizeClass {
    /// ~24 ops, tensors up to 4 Ki elements.
    Small,
    /// ~120 ops, tensors up to 64 Ki elements.
    Medium,
    /// ~600 ops, tensors up to 1 Mi elements (4 MiB).
    Large,
}

impl SizeClass {
    /// The default op count and largest tensor (elements) of this class.
    pub fn shape(self) -> (u32, u64) {
        match self {
            SizeClass::Small => (24, 4 << 10),
            SizeClass::Medium => (120, 64 << 10),
            SizeClass::Large => (600, 1 << 20),
        }
    }
}

/// Everything that shapes a generated program. Property tests draw each field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GenConfig {
    /// Drives every random choice.
    pub seed: u64,
    /// lnc_size: the number of cores (1..=256).
    pub cores: u32,
    /// Number of ops before outputs are written.
    pub ops: u32,
    /// Largest tensor, in elements.
    pub max_elems: u64,
    /// Percent chance that an operand is taken from another core (a handoff).
    pub handoff_pct: u32,
    /// Number of all-reduces (ignored with one core).
    pub allreduces: u32,
    /// Number of program outputs.
    pub outputs: u32,
}

impl GenConfig {
    /// The configuration `lncsim gen --seed S --cores N --size C` uses.
    pub fn new(seed: u64, cores: u32, size: SizeClass) -> Self {
        let (ops, max_elems) = size.shape();
        GenConfig { seed, cores, ops, max_elems, handoff_pct: 30, allreduces: 1, outputs: 3 }
    }
}

/// Most instructions per core [`GenConfig::with_ops`] accepts.
pub const MAX_OPS_PER_CORE: u32 = 2_000_000;
/// Most instructions in all (every core together) [`GenConfig::with_ops`] accepts.
pub const MAX_OPS_TOTAL: u64 = 4_000_000;
/// Largest tensor (elements) [`GenConfig::with_ops`] accepts.
pub const MAX_OPS_ELEMS: u64 = 1 << 20;
/// Instructions per core between two all-reduces in a [`GenConfig::with_ops`] program.
const OPS_PER_ALLREDUCE: u32 = 250;
/// Program outputs of a [`GenConfig::with_ops`] program.
const OPS_OUTPUTS: u32 = 3;

/// Why [`GenConfig::with_ops`] refuses a size.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GenError {
    /// Zero instructions per core.
    #[error("--ops must be at least 1")]
    NoOps,
    /// More instructions per core than the generator makes.
    #[error("{0} instructions per core is more than the generator's limit of {MAX_OPS_PER_CORE}")]
    OpsPerCore(u32),
    /// More instructions in all than the generator makes.
    #[error("{ops} instructions per core on {cores} cores is {total} in all, more than the limit of {MAX_OPS_TOTAL}")]
    OpsTotal {
        /// Requested per core.
        ops: u32,
        /// Cores.
        cores: u32,
        /// Their product.
        total: u64,
    },
    /// A tensor size of zero or past [`MAX_OPS_ELEMS`].
    #[error("--elems {0} is out of range (1 to {MAX_OPS_ELEMS})")]
    Elems(u64),
    /// A core count outside 1..=256.
    #[error("--cores {0} is out of range (1 to 256)")]
    Cores(u32),
}

impl GenConfig {
    /// A program of exactly `ops * cores` instructions (at least 2; about
    /// `ops` per core: each op's core is drawn uniformly), tensors of at most
    /// `max_elems` elements, a handoff chance of 30 %, one all-reduce per
    /// 250 instructions per core (when `cores > 1`) and up to 3 outputs.
    pub fn with_ops(seed: u64, cores: u32, ops: u32, max_elems: u64) -> Result<Self, GenError> {
        if !(1..=256).contains(&cores) {
            return Err(GenError::Cores(cores));
        }
        if ops == 0 {
            return Err(GenError::NoOps);
        }
        if ops > MAX_OPS_PER_CORE {
            return Err(GenError::OpsPerCore(ops));
        }
        let total = u64::from(ops) * u64::from(cores);
        if total > MAX_OPS_TOTAL {
            return Err(GenError::OpsTotal { ops, cores, total });
        }
        if !(1..=MAX_OPS_ELEMS).contains(&max_elems) {
            return Err(GenError::Elems(max_elems));
        }
        let allreduces = if cores > 1 { ops / OPS_PER_ALLREDUCE } else { 0 };
        // At least one output and one op: a program of 1 instruction has 2.
        let outputs = OPS_OUTPUTS.min((total / 2) as u32).max(1);
        // total <= MAX_OPS_TOTAL < u32::MAX, and allreduces * 2 * cores <= 2 * total / 250.
        let fixed = u64::from(allreduces) * 2 * u64::from(cores) + u64::from(outputs);
        let body = total.saturating_sub(fixed).max(1) as u32;
        Ok(GenConfig { seed, cores, ops: body, max_elems, handoff_pct: 30, allreduces, outputs })
    }

    /// The `ops` per core this config was made with by [`GenConfig::with_ops`], if it was.
    pub fn ops_per_core(&self) -> Option<u32> {
        let cores = u64::from(self.cores.max(1));
        let fixed = u64::from(self.allreduces) * 2 * cores + u64::from(self.outputs);
        let n = (u64::from(self.ops) + fixed).div_ceil(cores).max(1);
        let n = u32::try_from(n).ok()?;
        (GenConfig::with_ops(self.seed, self.cores, n, self.max_elems).as_ref() == Ok(self)).then_some(n)
    }
}

/// Size of the pre-placed region's granule: inputs, weights and outputs are
/// laid out from address 0 on 4 KiB boundaries, like compiler-placed IO.
const IO_ALIGN: u64 = 4096;

/// An op's operation before its result tensor exists.
enum Body {
    Dma(AccessPattern),
    Compute(ComputeKind, Srcs),
}

struct Tensor {
    loc: MemLocId,
    len: u64,
    /// The core that wrote it; `None` for inputs and weights (readable anywhere).
    core: Option<u32>,
    /// The instruction that wrote it.
    producer: Option<InstId>,
}

/// The tensors an op can read, by length bucket (a length's bit count), each
/// list in creation order: leaves (readable anywhere), every produced tensor,
/// and each core's own. An operand draw looks at the last few of each list of
/// a long-enough bucket, so it costs O(B), not O(tensors).
#[derive(Default)]
struct Pools {
    leaves: Vec<Vec<usize>>,
    produced: Vec<Vec<usize>>,
    per_core: Vec<Vec<Vec<usize>>>,
}

/// How many of the most recent candidates an operand is drawn from.
const RECENT: usize = 6;

/// A length's bucket: its bit count (1..=64 for lengths >= 1).
fn bucket(len: u64) -> usize {
    (64 - len.leading_zeros()) as usize
}

impl Pools {
    fn new(cores: u32) -> Self {
        Pools {
            leaves: vec![Vec::new(); 65],
            produced: vec![Vec::new(); 65],
            per_core: vec![vec![Vec::new(); 65]; cores as usize],
        }
    }

    fn add(&mut self, index: usize, t: &Tensor) {
        let b = bucket(t.len);
        match t.core {
            None => self.leaves[b].push(index),
            Some(c) => {
                self.produced[b].push(index);
                self.per_core[c as usize][b].push(index);
            }
        }
    }
}

/// Appends to `out` the last [`RECENT`] tensors of `list` (newest first) that
/// are at least `len` long and that `keep` accepts.
fn recent(list: &[usize], tensors: &[Tensor], len: u64, keep: impl Fn(&Tensor) -> bool, out: &mut Vec<usize>) {
    let mut found = 0;
    for &i in list.iter().rev() {
        let t = &tensors[i];
        if t.len >= len && keep(t) {
            out.push(i);
            found += 1;
            if found == RECENT {
                return;
            }
        }
    }
}

struct Gen {
    rng: ChaCha8Rng,
    cfg: GenConfig,
    m: Module,
    f: Function,
    tensors: Vec<Tensor>,
    pools: Pools,
    scratch: (Vec<usize>, Vec<usize>),
    next_addr: u64,
    tmp: u32,
}

/// Generates the program for `cfg`. Deterministic in `cfg`.
pub fn generate(cfg: &GenConfig) -> Module {
    let cores = cfg.cores.clamp(1, 256);
    let cfg = GenConfig { cores, max_elems: cfg.max_elems.max(1), ..cfg.clone() };
    let mut g = Gen {
        rng: ChaCha8Rng::seed_from_u64(cfg.seed),
        m: Module {
            name: format!("gen_s{}_c{}", cfg.seed, cores),
            attrs: ModuleAttrs { lnc_size: cores, neuron_core_id: None },
            ..Module::default()
        },
        f: Function::new("main"),
        cfg,
        tensors: Vec::new(),
        pools: Pools::new(cores),
        scratch: (Vec::new(), Vec::new()),
        next_addr: 0,
        tmp: 0,
    };
    g.queues();
    g.leaves();
    let blocks = 1 + g.cfg.ops / 16;
    let mut allreduce_at: Vec<u32> = (0..g.cfg.allreduces).map(|_| g.rng.random_range(0..g.cfg.ops.max(1))).collect();
    allreduce_at.sort_unstable();
    let mut ar = allreduce_at.into_iter().peekable();
    for i in 0..g.cfg.ops {
        let block = BlockId::from_index((u64::from(i) * u64::from(blocks) / u64::from(g.cfg.ops.max(1))) as usize);
        g.ensure_block(block);
        while ar.peek() == Some(&i) {
            ar.next();
            if g.cfg.cores > 1 {
                g.allreduce(block);
            }
        }
        g.op(block);
    }
    let last = BlockId::from_index(g.f.blocks.len() - 1);
    g.outputs(last);
    g.f.args =
        g.m.memlocs
            .iter()
            .enumerate()
            .filter(|(_, l)| matches!(l.usage, Usage::Input | Usage::Output))
            .map(|(i, _)| MemLocId::from_index(i))
            .collect();
    g.sets();
    let Gen { mut m, f, .. } = g;
    m.functions.push(f);
    m
}

impl Gen {
    fn queues(&mut self) {
        self.m.queues.push(DmaQueue {
            name: "qSyncIO".into(),
            qtype: QueueType::Dynamic,
            owner: Engine::Sp,
            semaphores: 2,
            instances: vec![0, 1],
        });
        self.m.queues.push(DmaQueue {
            name: "qPoolDynamic".into(),
            qtype: QueueType::Dynamic,
            owner: Engine::Pool,
            semaphores: 1,
            instances: vec![0],
        });
    }

    fn ensure_block(&mut self, b: BlockId) {
        while self.f.blocks.len() <= b.index() {
            let name = format!("bb{}", self.f.blocks.len());
            self.f.blocks.push(Block { name, insts: Vec::new() });
        }
    }

    /// A tensor length: log-uniform from 1 to `max_elems`, so sub-page and
    /// multi-page sizes both occur.
    fn len(&mut self) -> u64 {
        let bits = 64 - self.cfg.max_elems.leading_zeros();
        let b = self.rng.random_range(0..bits.max(1));
        let lo = 1u64 << b;
        let hi = (lo << 1).min(self.cfg.max_elems + 1);
        self.rng.random_range(lo.min(hi - 1)..hi)
    }

    fn preplaced(&mut self, name: String, usage: Usage, len: u64) -> MemLocId {
        let mut l = MemoryLocation::dram(name, usage, len);
        l.address = Some(self.next_addr);
        self.next_addr += l.byte_size().div_ceil(IO_ALIGN) * IO_ALIGN;
        self.m.add_loc(l)
    }

    /// Inputs and weights of assorted sizes, including one of the largest size,
    /// so every op can find operands.
    fn leaves(&mut self) {
        let n_in = 2 + self.cfg.cores.min(4);
        for i in 0..n_in {
            let len = if i == 0 { self.cfg.max_elems } else { self.len() };
            let loc = self.preplaced(format!("x{i}"), Usage::Input, len);
            self.add_tensor(Tensor { loc, len, core: None, producer: None });
        }
        for i in 0..2 {
            let len = if i == 0 { self.cfg.max_elems } else { self.len() };
            let loc = self.preplaced(format!("w{i}"), Usage::Weight, len);
            let init = self.rng.random::<u64>();
            self.m.memlocs[loc.index()].init = Some(init);
            self.add_tensor(Tensor { loc, len, core: None, producer: None });
        }
    }

    /// Records a new tensor and files it in its pools.
    fn add_tensor(&mut self, t: Tensor) {
        self.pools.add(self.tensors.len(), &t);
        self.tensors.push(t);
    }

    /// Picks an operand of at least `len` elements for an op on `core`:
    /// usually local or a leaf, sometimes (handoff_pct) from another core.
    /// Of the chosen pool it takes one of the [`RECENT`] newest, so chains
    /// form. Expected O(B): the newest few of each long-enough bucket.
    fn operand(&mut self, core: u32, len: u64) -> usize {
        let (mut local, mut remote) = std::mem::take(&mut self.scratch);
        local.clear();
        remote.clear();
        let b0 = bucket(len);
        let mine = Some(core);
        for b in b0..self.pools.leaves.len() {
            recent(&self.pools.leaves[b], &self.tensors, len, |_| true, &mut local);
            recent(&self.pools.per_core[core as usize][b], &self.tensors, len, |_| true, &mut local);
            if self.cfg.cores > 1 {
                recent(&self.pools.produced[b], &self.tensors, len, |t| t.core != mine, &mut remote);
            }
        }
        // Newest first; the pool's k-th newest (k < RECENT) is then pool[k].
        local.sort_unstable_by(|a, b| b.cmp(a));
        remote.sort_unstable_by(|a, b| b.cmp(a));
        let want_remote = !remote.is_empty() && self.rng.random_range(0..100) < self.cfg.handoff_pct;
        let pool = if want_remote || local.is_empty() { &remote } else { &local };
        let k = self.rng.random_range(0..pool.len().min(RECENT));
        let pick = pool[k];
        self.scratch = (local, remote);
        pick
    }

    fn ap_of(&mut self, t: usize, len: u64) -> AccessPattern {
        let slack = self.tensors[t].len - len;
        let offset = if slack == 0 { 0 } else { self.rng.random_range(0..=slack) };
        AccessPattern { loc: self.tensors[t].loc, offset, len }
    }

    fn new_tensor(&mut self, len: u64) -> MemLocId {
        self.tmp += 1;
        self.m.add_loc(MemoryLocation::dram(format_compact!("t{}", self.tmp), Usage::Internal, len))
    }

    fn push(&mut self, block: BlockId, name: Name, engine: Engine, op: Op, core: u32, srcs: &[usize]) -> InstId {
        let mut inst = Inst::new(name, engine, op);
        inst.core = Some(core);
        let mut deps: Deps = srcs
            .iter()
            .filter_map(|&t| self.tensors[t].producer)
            .map(|inst| Dep { inst, kind: EdgeKind::Data })
            .collect();
        deps.sort();
        deps.dedup();
        inst.deps = deps;
        if matches!(inst.op, Op::DmaCopy { .. }) {
            inst.queue = Some(QueueId(if engine == Engine::Pool { 1 } else { 0 }));
        }
        self.f.push_inst(block, inst)
    }

    fn op(&mut self, block: BlockId) {
        let core = self.rng.random_range(0..self.cfg.cores);
        let name = format_compact!("i{}", self.f.insts.len());
        let kind = self.rng.random_range(0..6u32);
        let (engine, op, srcs, out_len) = match kind {
            0 => {
                let len = self.len();
                let s = self.operand(core, len);
                let src = self.ap_of(s, len);
                let engine = if self.rng.random_range(0..4) == 0 { Engine::Pool } else { Engine::Sp };
                (engine, Body::Dma(src), vec![s], len)
            }
            1 | 2 => {
                let len = self.len();
                let n = if kind == 1 { 2 + self.rng.random_range(0..2) } else { 2 };
                let srcs: Vec<usize> = (0..n).map(|_| self.operand(core, len)).collect();
                let aps = srcs.iter().map(|&s| self.ap_of(s, len)).collect();
                let k = if kind == 1 { ComputeKind::Add } else { ComputeKind::Mul };
                (Engine::Dve, Body::Compute(k, aps), srcs, len)
            }
            3 => {
                let len = self.len();
                let s = self.operand(core, len);
                let ap = self.ap_of(s, len);
                (Engine::Act, Body::Compute(ComputeKind::Relu, smallvec![ap]), vec![s], len)
            }
            4 => {
                let out = 1 + self.len() / 8;
                let k = 1 + self.rng.random_range(0..8u64).min((self.cfg.max_elems / out).saturating_sub(1));
                let s = self.operand(core, out * k);
                let ap = self.ap_of(s, out * k);
                (Engine::Pool, Body::Compute(ComputeKind::Reduce, smallvec![ap]), vec![s], out)
            }
            _ => {
                // Keep both operands within max_elems: every dimension <= sqrt(max_elems).
                let cap = (self.cfg.max_elems.isqrt().min(16) as u32).max(1);
                let dim = |g: &mut Gen| 1 + g.rng.random_range(0..cap);
                let (m, k, n) = (dim(self), dim(self), dim(self));
                let a = self.operand(core, u64::from(m * k));
                let b = self.operand(core, u64::from(k * n));
                let aps = smallvec![self.ap_of(a, u64::from(m * k)), self.ap_of(b, u64::from(k * n))];
                (Engine::Pe, Body::Compute(ComputeKind::MatMul { m, k, n }, aps), vec![a, b], u64::from(m * n))
            }
        };
        let dst_loc = self.new_tensor(out_len);
        let dst = AccessPattern { loc: dst_loc, offset: 0, len: out_len };
        let op = match op {
            Body::Dma(src) => Op::DmaCopy { src, dst },
            Body::Compute(kind, srcs) => Op::Compute { kind, srcs, dst },
        };
        let id = self.push(block, name, engine, op, core, &srcs);
        self.add_tensor(Tensor { loc: dst_loc, len: out_len, core: Some(core), producer: Some(id) });
    }

    /// An all-reduce: every core computes a partial, then every core sums all
    /// partials into its own result (collective adds reading every other core).
    fn allreduce(&mut self, block: BlockId) {
        let len = self.len();
        let mut partials = Vec::new();
        for core in 0..self.cfg.cores {
            let s = self.operand(core, len);
            let src = self.ap_of(s, len);
            let loc = self.new_tensor(len);
            let dst = AccessPattern { loc, offset: 0, len };
            let name = format_compact!("i{}", self.f.insts.len());
            let id = self.push(
                block,
                name,
                Engine::Act,
                Op::Compute { kind: ComputeKind::Relu, srcs: smallvec![src], dst },
                core,
                &[s],
            );
            self.add_tensor(Tensor { loc, len, core: Some(core), producer: Some(id) });
            partials.push(self.tensors.len() - 1);
        }
        for core in 0..self.cfg.cores {
            let srcs: Srcs =
                partials.iter().map(|&p| AccessPattern { loc: self.tensors[p].loc, offset: 0, len }).collect();
            let loc = self.new_tensor(len);
            let dst = AccessPattern { loc, offset: 0, len };
            let name = format_compact!("i{}", self.f.insts.len());
            let id =
                self.push(block, name, Engine::Dve, Op::Compute { kind: ComputeKind::Add, srcs, dst }, core, &partials);
            self.f.insts[id.index()].collective = true;
            self.add_tensor(Tensor { loc, len, core: Some(core), producer: Some(id) });
        }
    }

    /// Copies some produced tensors into pre-placed outputs, each on its
    /// producer's core (so outputs are written once and read by nobody).
    fn outputs(&mut self, block: BlockId) {
        let produced: Vec<usize> = (0..self.tensors.len()).filter(|&i| self.tensors[i].producer.is_some()).collect();
        if produced.is_empty() {
            return;
        }
        for o in 0..self.cfg.outputs.max(1) {
            let k = self.rng.random_range(0..produced.len().min(8));
            let t = produced[produced.len() - 1 - k];
            let len = self.tensors[t].len;
            let core = self.tensors[t].core.unwrap_or(0);
            let loc = self.preplaced(format!("out{o}"), Usage::Output, len);
            let src = AccessPattern { loc: self.tensors[t].loc, offset: 0, len };
            let dst = AccessPattern { loc, offset: 0, len };
            let name = format_compact!("i{}", self.f.insts.len());
            self.push(block, name, Engine::Sp, Op::DmaCopy { src, dst }, core, &[t]);
        }
    }

    fn sets(&mut self) {
        for (name, usage) in [("inputs", Usage::Input), ("weights", Usage::Weight), ("outputs", Usage::Output)] {
            let locs: Vec<MemLocId> = self
                .m
                .memlocs
                .iter()
                .enumerate()
                .filter(|(_, l)| l.usage == usage)
                .map(|(i, _)| MemLocId::from_index(i))
                .collect();
            if !locs.is_empty() {
                self.m.sets.push(MemoryLocationSet { name: name.into(), locs });
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn with_ops_makes_exactly_ops_times_cores_instructions_and_says_so() {
        for (cores, ops) in [(1, 2), (1, 3), (1, 7), (2, 1), (2, 250), (8, 1000), (3, 2501)] {
            let cfg = GenConfig::with_ops(5, cores, ops, 64).unwrap();
            let m = generate(&cfg);
            assert_eq!(m.functions[0].insts.len() as u64, u64::from(ops) * u64::from(cores), "{cores} x {ops}");
            assert_eq!(cfg.ops_per_core(), Some(ops), "{cores} x {ops}");
            assert!(m.verify().is_ok());
        }
        // One instruction is two (an op and an output), as `--ops 2` makes.
        assert_eq!(GenConfig::with_ops(5, 1, 1, 64), GenConfig::with_ops(5, 1, 2, 64));
        // A size-class config was not made by with_ops.
        assert_eq!(GenConfig::new(5, 4, SizeClass::Small).ops_per_core(), None);
    }

    #[test]
    fn with_ops_refuses_past_its_limits_with_typed_errors() {
        assert_eq!(GenConfig::with_ops(0, 2, 0, 64), Err(GenError::NoOps));
        assert_eq!(
            GenConfig::with_ops(0, 1, MAX_OPS_PER_CORE + 1, 64),
            Err(GenError::OpsPerCore(MAX_OPS_PER_CORE + 1))
        );
        assert_eq!(
            GenConfig::with_ops(0, 8, 600_000, 64),
            Err(GenError::OpsTotal { ops: 600_000, cores: 8, total: 4_800_000 })
        );
        assert_eq!(GenConfig::with_ops(0, 2, 10, 0), Err(GenError::Elems(0)));
        assert_eq!(GenConfig::with_ops(0, 2, 10, MAX_OPS_ELEMS + 1), Err(GenError::Elems(MAX_OPS_ELEMS + 1)));
        assert_eq!(GenConfig::with_ops(0, 0, 10, 64), Err(GenError::Cores(0)));
        assert_eq!(GenConfig::with_ops(0, 257, 10, 64), Err(GenError::Cores(257)));
        assert!(GenConfig::with_ops(0, 2, MAX_OPS_PER_CORE, 64).is_ok());
        let e = GenConfig::with_ops(0, 8, 600_000, 64).unwrap_err().to_string();
        assert!(e.contains("4800000") && e.contains("4000000"), "{e}");
    }

    /// Race-free by construction: every location is written once, every read
    /// of a produced tensor depends on its producer, and the program really has
    /// cross-core handoffs and collectives (one per 250 instructions per core).
    #[test]
    fn an_ops_program_is_ssa_with_a_dep_on_every_producer_and_has_handoffs_and_collectives() {
        let cfg = GenConfig::with_ops(11, 8, 2000, 64).unwrap();
        let m = generate(&cfg);
        let f = &m.functions[0];
        let mut producer: Vec<Option<InstId>> = vec![None; m.memlocs.len()];
        for (i, inst) in f.insts.iter().enumerate() {
            let w = inst.write().unwrap();
            assert!(producer[w.loc.index()].is_none(), "{} written twice", m.loc(w.loc).name);
            producer[w.loc.index()] = Some(InstId::from_index(i));
        }
        let (mut handoffs, mut collectives) = (0, 0);
        for inst in &f.insts {
            for r in inst.reads() {
                if let Some(p) = producer[r.loc.index()] {
                    assert!(inst.deps.iter().any(|d| d.inst == p && d.kind == EdgeKind::Data), "{}", inst.name);
                    if f.insts[p.index()].core != inst.core {
                        handoffs += 1;
                    }
                }
            }
            collectives += usize::from(inst.collective);
        }
        assert_eq!(collectives, 8 * 8, "2000 / 250 all-reduces, one collective add per core each");
        assert!(handoffs > 2000, "{handoffs} cross-core reads in 16000 instructions");
        let max = m.memlocs.iter().map(|l| l.elem_count).max().unwrap();
        assert!(max <= 64, "tensors of at most --elems elements, got {max}");
    }

    #[test]
    fn the_same_config_gives_the_same_program_and_another_seed_another() {
        let cfg = GenConfig::with_ops(3, 4, 500, 32).unwrap();
        let a = crate::ir::print(&generate(&cfg));
        assert_eq!(a, crate::ir::print(&generate(&cfg)));
        let other = GenConfig::with_ops(4, 4, 500, 32).unwrap();
        assert_ne!(a, crate::ir::print(&generate(&other)));
    }

    /// 200k instructions per core is within reach (the operand draw is not a
    /// scan of every tensor: a quadratic generator would take minutes here).
    #[test]
    fn two_hundred_thousand_instructions_on_one_core() {
        let m = generate(&GenConfig::with_ops(1, 1, 200_000, 64).unwrap());
        assert_eq!(m.functions[0].insts.len(), 200_000);
    }
}
