//! What a finished load leaves on the device for one core: the interface
//! between the loader (which stages and relocates) and the simulator (which
//! fetches and executes). Everything here is a physical address on the
//! [`super::Device`]; the simulator reads records and descriptors from there,
//! so a relocation bug changes what runs (DESIGN.md, "Execution").

use std::collections::BTreeMap;

use crate::codegen::VarKind;
use crate::ir::Engine;
use crate::neff::manifest::VarType;

/// Which instruction set a core's streams are in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Isa {
    /// lncsim's 64-byte records (`codegen::record`): decoded, relocated, executable.
    Lncsim,
    /// The real Neuron ISA: staged as opaque instruction memory, not relocated,
    /// not executable here (only its DMA descriptors were relocated).
    Opaque,
}

/// One engine's staged instruction stream and DMA ring.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamImage {
    /// The engine.
    pub engine: Engine,
    /// Physical address of the first 64-byte record.
    pub pa: u64,
    /// Number of records (after the loader expanded pseudo-instructions).
    pub records: u64,
    /// Physical address of the engine's relocated DMA descriptor ring.
    pub ring_pa: u64,
    /// Number of 32-byte descriptors in the ring.
    pub descriptors: u64,
    /// Debug info kept by the loader when it relocated the stream: for each
    /// staged record, the var_id each operand slot named before relocation
    /// (`None` for unused slots and non-memory operands). Relocation turns
    /// operands into bare physical addresses; this is how the simulator's
    /// shadow-ownership check knows which tensor an access meant.
    pub operand_vars: Vec<[Option<u32>; 3]>,
    /// For each ring descriptor, the (source, destination) var_ids it named.
    pub descriptor_vars: Vec<(u32, u32)>,
}

/// One variable after placement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VarImage {
    /// The `def.json` name.
    pub name: String,
    /// Its kind, as codegen declared it.
    pub kind: VarKind,
    /// Physical address of its first byte.
    pub pa: u64,
    /// Size in bytes.
    pub size: u64,
    /// The `def.json` type as read. `kind` is exact for the types codegen
    /// writes; a type it never writes (`state-buffer`, `dge-table`,
    /// `pointer`, unknown, or a gap in the var_ids) is not in HBM: `kind` is
    /// `VarKind::Scratch`, `pa` and `size` are 0. A `virtual` var with no
    /// `backing_variable` lives in the core's implicit scratchpad and has
    /// `VarKind::Virtual { backing: u32::MAX, .. }`.
    pub var_type: VarType,
}

/// One loaded core (the per-physical-core `model_t`, as far as execution needs it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoreImage {
    /// The subgraph's NeuronCoreId (its index in the NEFF).
    pub core: u32,
    /// The physical core it was staged on.
    pub tpb: u32,
    /// Streams in [`Engine::ALL`] order.
    pub engines: Vec<StreamImage>,
    /// Variables by var_id, with their physical addresses.
    pub vars: Vec<VarImage>,
    /// DMA queue names by queue index.
    pub queues: Vec<String>,
    /// Semaphores the core uses.
    pub semaphores: u32,
    /// Participants of each barrier group the core arrives at.
    pub barrier_groups: BTreeMap<u32, Vec<u32>>,
    /// The streams' instruction set: only [`Isa::Lncsim`] images are executable.
    pub isa: Isa,
}
