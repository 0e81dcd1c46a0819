//! The IR's data types (DESIGN.md, "The IR").
//!
//! Arena-based: a [`Module`] owns `Vec`s of memory locations, sets, queues and
//! functions; a [`Function`] owns its instructions and blocks. Everything
//! refers to everything by typed index, never by pointer, so cloning a
//! function into another module (the linker) is a remap through tables.
//!
//! Memory locations live at module level: in a per-core module they are the
//! seed's `func.allocs()` of its one function; in a linked module a unified
//! cross-core tensor is one location that several core functions reference.

use std::fmt;

/// A name in the IR (a location's, an instruction's): up to 24 bytes inline,
/// so comparing or hashing a typical name reads no second heap object.
pub type Name = compact_str::CompactString;

/// A compute instruction's sources: up to two inline (every arity but a wide
/// add), so reading an instruction's operands chases no pointer to a heap block.
pub type Srcs = smallvec::SmallVec<[AccessPattern; 2]>;

/// An instruction's dependency edges: up to two inline (24 bytes, as a `Vec`),
/// so walking a function's edges chases no pointer per instruction.
pub type Deps = smallvec::SmallVec<[Dep; 2]>;

pub use smallvec::smallvec;

macro_rules! typed_id {
    ($(#[$doc:meta])* $name:ident, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(pub u32);

        impl $name {
            /// The index into the owning arena.
            pub fn index(self) -> usize {
                self.0 as usize
            }

            /// The id of arena slot `i`.
            pub fn from_index(i: usize) -> Self {
                $name(u32::try_from(i).unwrap_or(u32::MAX))
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($prefix, "{}"), self.0)
            }
        }
    };
}

typed_id!(
    /// Index of a [`Function`] in [`Module::functions`].
    FuncId,
    "func#"
);
typed_id!(
    /// Index of a [`Block`] in [`Function::blocks`].
    BlockId,
    "block#"
);
typed_id!(
    /// Index of an [`Inst`] in [`Function::insts`].
    InstId,
    "inst#"
);
typed_id!(
    /// Index of a [`MemoryLocation`] in [`Module::memlocs`].
    MemLocId,
    "loc#"
);
typed_id!(
    /// Index of a [`DmaQueue`] in [`Module::queues`].
    QueueId,
    "queue#"
);

/// A compilation unit: one program, one per-core module, or one linked module.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Module {
    /// The module's name (per-core modules keep the program's name; linked: `<name>/sgLnk`).
    pub name: String,
    /// Module attributes (NeuronCoreId, lnc_size).
    pub attrs: ModuleAttrs,
    /// Every memory location of the module.
    pub memlocs: Vec<MemoryLocation>,
    /// Named groups of memory locations (the seed's MemoryLocationSets).
    pub sets: Vec<MemoryLocationSet>,
    /// DMA queues.
    pub queues: Vec<DmaQueue>,
    /// Functions: one in a program or per-core module; dispatcher + one per core when linked.
    pub functions: Vec<Function>,
}

/// Module attributes (seed 000 §3: ModuleAttribute key 2 is the NeuronCoreId).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ModuleAttrs {
    /// The number of cores of the logical NeuronCore this program targets.
    pub lnc_size: u32,
    /// Set on per-core modules by the splitter; `None` on programs and linked modules.
    pub neuron_core_id: Option<u32>,
}

/// Kind of memory a location lives in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MemType {
    /// Device HBM, shared by all cores; the DRAM allocator's space.
    Dram,
    /// On-core state buffer.
    Sbuf,
    /// On-core partial-sum buffer.
    Psum,
}

/// What a memory location is used for (its usage class).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Usage {
    /// A program input, bound by name at run time (pre-placed).
    Input,
    /// A program output, read back by name at run time (pre-placed).
    Output,
    /// A weight / file tensor with seeded contents (pre-placed).
    Weight,
    /// A compiler-placed intermediate (a DRAM allocator candidate).
    Internal,
    /// A spill slot (a DRAM allocator candidate).
    Spill,
    /// A cross-core tensor in the shared region (placed by the dram_shared run).
    Shared,
}

/// Element type of a location. Compute is defined on `I32` only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DType {
    /// One byte.
    U8,
    /// Two bytes.
    I16,
    /// Four bytes, wrapping arithmetic: the type every compute op uses.
    I32,
    /// Eight bytes.
    I64,
}

impl DType {
    /// Size of one element in bytes.
    pub fn size(self) -> u32 {
        match self {
            DType::U8 => 1,
            DType::I16 => 2,
            DType::I32 => 4,
            DType::I64 => 8,
        }
    }
}

/// The seed's RemoteLocalTarget: the producing core's name for a shared tensor.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RemoteLocalTarget {
    /// The location's name in the producing core's module.
    pub name: Name,
    /// The producing core (its NeuronCoreId).
    pub core: u32,
}

/// How strongly an alias holds (the seed's AliasKind).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AliasKind {
    /// The two names always denote the same bytes.
    Must,
    /// The two names may denote the same bytes.
    May,
}

/// An alias edge: this location is another name for `target`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Alias {
    /// The location this one aliases (for a handoff: the producer's output).
    pub target: MemLocId,
    /// Must or may.
    pub kind: AliasKind,
}

/// A memory location (a tensor, or a view of one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryLocation {
    /// Unique name within the module.
    pub name: Name,
    /// DRAM, SBUF or PSUM.
    pub mem_type: MemType,
    /// Usage class.
    pub usage: Usage,
    /// Element type (element size = `dtype.size()`).
    pub dtype: DType,
    /// Number of elements.
    pub elem_count: u64,
    /// Byte address in its region (private DRAM, or the shared region for
    /// `Usage::Shared`); `None` until allocated.
    pub address: Option<u64>,
    /// Base partition.
    pub partition: u32,
    /// Bank id.
    pub bank: u32,
    /// Set by the dram_shared allocator run (seed 004): one buffer shared by all cores.
    pub is_shared_post_dram_alloc: bool,
    /// For a consumer's view of a cross-core tensor: the producer's name and core.
    pub remote_local_target: Option<RemoteLocalTarget>,
    /// Alias edges (this location is another name for each target).
    pub aliases: Vec<Alias>,
    /// Seeded contents (weights): element `i` is [`init_value`]`(seed, i)`.
    pub init: Option<u64>,
}

impl MemoryLocation {
    /// A new unallocated DRAM location with no flags.
    pub fn dram(name: impl Into<Name>, usage: Usage, elem_count: u64) -> Self {
        MemoryLocation {
            name: name.into(),
            mem_type: MemType::Dram,
            usage,
            dtype: DType::I32,
            elem_count,
            address: None,
            partition: 0,
            bank: 0,
            is_shared_post_dram_alloc: false,
            remote_local_target: None,
            aliases: Vec::new(),
            init: None,
        }
    }

    /// Size in bytes (`elem_count * elem_size`), saturating.
    pub fn byte_size(&self) -> u64 {
        self.elem_count.saturating_mul(u64::from(self.dtype.size()))
    }
}

/// The deterministic contents of a seeded tensor: element `index` of seed `seed`.
///
/// A splitmix64 finalizer folded to i32, so weights need no storage in the IR.
pub fn init_value(seed: u64, index: u64) -> i32 {
    let mut z = seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    // Small values keep matmul sums readable; wrapping makes any value valid.
    ((z % 201) as i32) - 100
}

/// A named group of memory locations (the seed's MemoryLocationSet).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryLocationSet {
    /// Unique name within the module.
    pub name: String,
    /// Member locations, in order.
    pub locs: Vec<MemLocId>,
}

/// The five engines of a NeuronCore.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Engine {
    /// Tensor engine (matmul).
    Pe,
    /// Activation engine.
    Act,
    /// Vector engine.
    Dve,
    /// GpSimd / pool engine.
    Pool,
    /// Sync engine (DMA triggers, barriers).
    Sp,
}

impl Engine {
    /// All engines, in their fixed order.
    pub const ALL: [Engine; 5] = [Engine::Pe, Engine::Act, Engine::Dve, Engine::Pool, Engine::Sp];

    /// Position in [`Engine::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }
}

/// DMA queue type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum QueueType {
    /// Descriptors fixed at compile time.
    Static,
    /// Descriptors generated at run time.
    Dynamic,
}

/// A DMA queue with its instances and semaphore count (seed 000 §6).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DmaQueue {
    /// Unique name within the module; queues fold by name when linking.
    pub name: String,
    /// Static or dynamic.
    pub qtype: QueueType,
    /// The engine that drives the queue.
    pub owner: Engine,
    /// Number of semaphores the queue uses.
    pub semaphores: u32,
    /// Queue instance ids, ascending.
    pub instances: Vec<u32>,
}

/// A function: blocks of instructions over the module's memory locations.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Function {
    /// Unique name within the module.
    pub name: String,
    /// Per-function attributes.
    pub attrs: FuncAttrs,
    /// Function arguments (the locations bound by the caller / the runtime).
    pub args: Vec<MemLocId>,
    /// Blocks in execution order.
    pub blocks: Vec<Block>,
    /// The instruction arena, kept in block order (see [`Function::canonicalize`]).
    pub insts: Vec<Inst>,
}

/// Per-function attributes (seed 004's FunctionAttribute keys 11 and 13, and metrics).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct FuncAttrs {
    /// The core this function runs on (carried by the linker from the module attribute).
    pub neuron_core_id: Option<u32>,
    /// FunctionAttribute key 11: the DRAM allocation result.
    pub dram_alloc_ok: Option<bool>,
    /// Metric 31: reserved space (the DRAM high-water mark), bytes.
    pub reserved_space: Option<u64>,
    /// FunctionAttribute key 13: the real CC buffer size, bytes.
    pub real_cc_buffer_size: Option<u64>,
    /// The private DRAM region ceiling the allocator placed under (its compact window).
    pub dram_region_ceiling: Option<u64>,
}

/// A basic block: a name and its instructions in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    /// Unique name within the function.
    pub name: String,
    /// Instructions in execution order.
    pub insts: Vec<InstId>,
}

/// A dependency edge kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EdgeKind {
    /// Read after write (a true data dependency).
    Data,
    /// Write after read (an anti-dependency).
    War,
    /// Write after write (an output dependency).
    Waw,
    /// Ordering only.
    Control,
}

/// "This instruction runs after `inst`".
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Dep {
    /// The earlier instruction, in the same function.
    pub inst: InstId,
    /// Why.
    pub kind: EdgeKind,
}

/// A contiguous run of elements of one location: `loc[offset .. offset + len]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AccessPattern {
    /// The location accessed.
    pub loc: MemLocId,
    /// First element.
    pub offset: u64,
    /// Number of elements.
    pub len: u64,
}

/// Arithmetic of a compute instruction, on wrapping i32.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ComputeKind {
    /// `dst[i] = sum of srcs[j][i]` (two or more sources).
    Add,
    /// `dst[i] = a[i] * b[i]`.
    Mul,
    /// `dst[i] = max(a[i], 0)`.
    Relu,
    /// `dst[i] = sum_j src[i*k + j]` with `k = src.len / dst.len`.
    Reduce,
    /// `dst (m x n) = a (m x k) * b (k x n)`, row-major.
    MatMul {
        /// Rows of `a` and `dst`.
        m: u32,
        /// Columns of `a`, rows of `b`.
        k: u32,
        /// Columns of `b` and `dst`.
        n: u32,
    },
}

/// One core's arrival at a logical barrier (DESIGN.md, "CoreBarriers").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoreBarrier {
    /// The logical barrier, shared by all its participants (set by the splitter).
    pub group: u32,
    /// The participating cores, ascending.
    pub participants: Vec<u32>,
    /// The hardware event slot this arrival uses.
    pub id: u32,
    /// Flagged for renumbering by the linker (seed 000 §7).
    pub flagged: bool,
}

/// An instruction's operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// Copy `src` to `dst` through a DMA queue.
    DmaCopy {
        /// Source.
        src: AccessPattern,
        /// Destination (same length).
        dst: AccessPattern,
    },
    /// Arithmetic.
    Compute {
        /// Which arithmetic.
        kind: ComputeKind,
        /// Operands.
        srcs: Srcs,
        /// Result.
        dst: AccessPattern,
    },
    /// Call a function of the same module (the linker's dispatcher).
    Call {
        /// The callee.
        callee: FuncId,
    },
    /// Return to the caller.
    Return,
    /// Arrive at a cross-core barrier.
    CoreBarrier(CoreBarrier),
    /// Switch the active instance of a DMA queue.
    SwitchQueueInstance {
        /// The queue.
        queue: QueueId,
        /// The instance to make active.
        instance: u32,
    },
    /// Wait until semaphore `sem` reaches `value`.
    SemWait {
        /// Semaphore index.
        sem: u32,
        /// The value to wait for.
        value: u32,
    },
    /// Increment semaphore `sem`.
    SemSignal {
        /// Semaphore index.
        sem: u32,
    },
}

/// An instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inst {
    /// Unique name within the function.
    pub name: Name,
    /// The operation.
    pub op: Op,
    /// The engine that executes it.
    pub engine: Engine,
    /// The core it is bound to (programs bind every op; per-core modules keep it).
    pub core: Option<u32>,
    /// The DMA queue a DMA copy uses.
    pub queue: Option<QueueId>,
    /// Part of a collective (counted by `cc_buffer_size`, seed 004).
    pub collective: bool,
    /// Instructions this one runs after.
    pub deps: Deps,
}

impl Inst {
    /// A new instruction with no core, queue, flags or deps.
    pub fn new(name: impl Into<Name>, engine: Engine, op: Op) -> Self {
        Inst { name: name.into(), op, engine, core: None, queue: None, collective: false, deps: Deps::new() }
    }

    /// The access patterns this instruction reads.
    pub fn reads(&self) -> Vec<AccessPattern> {
        match &self.op {
            Op::DmaCopy { src, .. } => vec![*src],
            Op::Compute { srcs, .. } => srcs.to_vec(),
            _ => Vec::new(),
        }
    }

    /// The access pattern this instruction writes, if any.
    pub fn write(&self) -> Option<AccessPattern> {
        match &self.op {
            Op::DmaCopy { dst, .. } | Op::Compute { dst, .. } => Some(*dst),
            _ => None,
        }
    }

    /// The access pattern this instruction writes, if any, borrowed.
    pub fn write_ref(&self) -> Option<&AccessPattern> {
        match &self.op {
            Op::DmaCopy { dst, .. } | Op::Compute { dst, .. } => Some(dst),
            _ => None,
        }
    }

    /// The access patterns this instruction reads, as a slice (no allocation, unlike [`Inst::reads`]).
    pub fn read_slice(&self) -> &[AccessPattern] {
        match &self.op {
            Op::DmaCopy { src, .. } => std::slice::from_ref(src),
            Op::Compute { srcs, .. } => srcs,
            _ => &[],
        }
    }

    /// Calls `f` on every access pattern: the reads in order, then the write.
    pub fn for_each_access(&self, mut f: impl FnMut(&AccessPattern)) {
        self.read_slice().iter().for_each(&mut f);
        if let Some(w) = self.write() {
            f(&w);
        }
    }
}

impl Module {
    /// The location named `name`, by linear search.
    pub fn loc_by_name(&self, name: &str) -> Option<MemLocId> {
        self.memlocs.iter().position(|l| l.name == name).map(MemLocId::from_index)
    }

    /// The function named `name`, by linear search.
    pub fn func_by_name(&self, name: &str) -> Option<FuncId> {
        self.functions.iter().position(|f| f.name == name).map(FuncId::from_index)
    }

    /// The queue named `name`, by linear search.
    pub fn queue_by_name(&self, name: &str) -> Option<QueueId> {
        self.queues.iter().position(|q| q.name == name).map(QueueId::from_index)
    }

    /// The location `id`.
    pub fn loc(&self, id: MemLocId) -> &MemoryLocation {
        &self.memlocs[id.index()]
    }

    /// Adds a location and returns its id.
    pub fn add_loc(&mut self, loc: MemoryLocation) -> MemLocId {
        self.memlocs.push(loc);
        MemLocId::from_index(self.memlocs.len() - 1)
    }
}

impl Function {
    /// A new function with one empty block named `entry`.
    pub fn new(name: impl Into<String>) -> Self {
        Function {
            name: name.into(),
            blocks: vec![Block { name: "entry".into(), insts: Vec::new() }],
            ..Function::default()
        }
    }

    /// Appends `inst` to the end of `block` and returns its id.
    ///
    /// Keeps the arena canonical only when `block` is the last block; call
    /// [`Function::canonicalize`] after inserting into an earlier block.
    pub fn push_inst(&mut self, block: BlockId, inst: Inst) -> InstId {
        let id = InstId::from_index(self.insts.len());
        self.insts.push(inst);
        self.blocks[block.index()].insts.push(id);
        id
    }

    /// Instruction ids in execution order (blocks in order, then within each block).
    pub fn order(&self) -> impl Iterator<Item = InstId> + '_ {
        self.blocks.iter().flat_map(|b| b.insts.iter().copied())
    }

    /// The instruction named `name`, by linear search.
    pub fn inst_by_name(&self, name: &str) -> Option<InstId> {
        self.insts.iter().position(|i| i.name == name).map(InstId::from_index)
    }

    /// True when the arena lists instructions in block order (ids 0, 1, 2, ...).
    pub fn is_canonical(&self) -> bool {
        self.order().enumerate().all(|(i, id)| id.index() == i) && self.order().count() == self.insts.len()
    }

    /// Renumbers the arena into block order, remapping every dependency edge.
    ///
    /// Instructions that no block lists are dropped, and so are edges to them.
    pub fn canonicalize(&mut self) {
        if self.is_canonical() {
            return;
        }
        let mut remap = vec![None; self.insts.len()];
        let mut next = 0;
        for old in self.order() {
            if let Some(slot @ None) = remap.get_mut(old.index()) {
                *slot = Some(InstId::from_index(next));
                next += 1;
            }
        }
        let mut old: Vec<Option<Inst>> = std::mem::take(&mut self.insts).into_iter().map(Some).collect();
        let mut insts = Vec::with_capacity(old.len());
        for b in &mut self.blocks {
            b.insts.retain_mut(|id| {
                // A second listing of the same instruction finds its slot empty: drop it.
                let Some(mut inst) = old.get_mut(id.index()).and_then(Option::take) else {
                    return false;
                };
                inst.deps.retain_mut(|d| match remap.get(d.inst.index()).copied().flatten() {
                    Some(n) => {
                        d.inst = n;
                        true
                    }
                    None => false,
                });
                *id = InstId::from_index(insts.len());
                insts.push(inst);
                true
            });
        }
        self.insts = insts;
    }
}
