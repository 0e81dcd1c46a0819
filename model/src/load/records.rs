//! The three model records, the bridge and the two handles (seed 002, "The
//! Three Model Records and Two Handles").
//!
//! One load makes one [`NrtModel`] (returned to the caller), one [`DlrModel`]
//! (the registry value under H_NN), one [`DlrKelfModel`] (the bridge holding
//! H_MODEL) and one [`Model`] per subgraph (the per-physical-core record, keyed
//! by `(tpb, H_MODEL)` in the device db). The only path from an H_NN to a
//! per-core model is `h_nn -> DlrModel -> kelf_model.h_model -> (tpb, h_model)`.

use std::collections::BTreeMap;

use super::image::CoreImage;
use super::relocate::KbinPatch;
use crate::neff::manifest::VarType;

/// A NEFF UUID (128 bits, compared exactly).
pub type Uuid = [u8; 16];

/// H_NN: the parse-side registry key (`dlr_model_set.last_nn_id++`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HNn(pub u32);

/// H_MODEL: the device-side per-core key (`tdrv_get_unique_h_model()`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HModel(pub u32);

/// `nrt_model_t` (284 B in the runtime): what `nrt_load` returns to the caller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NrtModel {
    /// The logical NeuronCore the model was loaded on.
    pub vnc_idx: u32,
    /// The NEFF's name (header `name`).
    pub name: String,
    /// The NEFF's UUID.
    pub uuid: Uuid,
    /// The registry key.
    pub h_nn: HNn,
}

/// `dlr_model.state` (+0x1A8), the field's raw value. The seed names one
/// value, 4 (READY), written by the S5 tail just before the model is
/// registered; the record is allocated zeroed, so a `dlr_model` whose tail
/// has not run reads 0 ([`DlrState::INIT`]). Any value can be carried, so
/// the unload guard `state == 4 && ref_count == 0` refuses every other one
/// rather than the type ruling them out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DlrState(pub u32);

impl DlrState {
    /// 0: allocated, the S5 tail (bridge, uuid, IO maps) not finished.
    pub const INIT: DlrState = DlrState(0);
    /// 4: registered and executable; the only state unload and execution accept.
    pub const READY: DlrState = DlrState(4);

    /// The seed's numeric value.
    pub fn value(self) -> u32 {
        self.0
    }

    /// `INIT`, `READY`, or `UNKNOWN` for a value the seed does not name.
    pub fn name(self) -> &'static str {
        match self {
            DlrState::INIT => "INIT",
            DlrState::READY => "READY",
            _ => "UNKNOWN",
        }
    }
}

/// A physical region of HBM (one device allocation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Region {
    /// Physical address of the first byte.
    pub pa: u64,
    /// Size in bytes.
    pub size: u64,
}

/// One input or output tensor of a load: one device buffer shared by every core that names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IoTensor {
    /// `input` or `output`.
    pub var_type: VarType,
    /// The buffer.
    pub region: Region,
}

/// `kbl_model_param_t`: the per-model config `nrt_config_parse_model_config` fills.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KblModelParam {
    /// Execution timeout, seconds (carried to the simulator; the loader does not use it).
    pub timeout_s: u32,
    /// Verify the NEFF hash in S1 (`NEURON_RT_VALIDATE_HASH`; off by default, as in the runtime).
    pub verify_hash: bool,
}

impl Default for KblModelParam {
    fn default() -> Self {
        KblModelParam { timeout_s: 30, verify_hash: false }
    }
}

/// `dlr_kelf_model_t` (72 B): the parse <-> stage bridge, the one object
/// that joins H_NN (it hangs off the [`DlrModel`]) and H_MODEL (it carries it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DlrKelfModel {
    /// The device-side key of every per-core [`Model`] of this load.
    pub h_model: HModel,
    /// The vnc index.
    pub vcore: u32,
    /// `vcore->tpbs[0..sg_count)`: the physical core of each subgraph.
    pub tpbs: Vec<u32>,
    /// Number of subgraphs (kbins).
    pub sg_count: u32,
    /// The NEFF's UUID.
    pub uuid: Uuid,
    /// The model config.
    pub params: KblModelParam,
    /// The load's shared region (`vtpb_info_shared_init_vtpb`), if any subgraph has one.
    pub shared: Option<Region>,
    /// The load's input and output buffers, by name.
    pub io: BTreeMap<String, IoTensor>,
}

/// `dlr_model` (480 B): the registry value under H_NN.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DlrModel {
    /// Its key.
    pub h_nn: HNn,
    /// The NEFF's name.
    pub name: String,
    /// The NEFF's UUID.
    pub uuid: Uuid,
    /// The vnc it runs on.
    pub vnc_idx: u32,
    /// `state` (+0x1A8).
    pub state: DlrState,
    /// `ref_count` (+0x1B0): executions in flight; unload requires 0.
    pub ref_count: u32,
    /// `kelf_model` (+0x1A0): the bridge to the device side.
    pub kelf_model: DlrKelfModel,
    /// Inputs by name (size and buffer).
    pub input_info: BTreeMap<String, Region>,
    /// Outputs by name (size and buffer).
    pub output_info: BTreeMap<String, Region>,
}

/// `model_t` (7744 B): one per subgraph, on its physical core, keyed by `(tpb, h_model)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Model {
    /// The physical core.
    pub tpb: u32,
    /// The load's device-side key.
    pub h_model: HModel,
    /// The subgraph index (`pcore` in the fan-out).
    pub sg: u32,
    /// The subgraph's name (`sg00`).
    pub sg_name: String,
    /// The subgraph's HBM carve-out.
    pub carveout: Region,
    /// `kbin_patch_info` (+0x18A0): instruction-IP deltas of expanded pseudo-instructions.
    pub kbin_patch_info: Vec<KbinPatch>,
    /// The engines' tables as staged into the carve-out (`act_local_storage_tbls_init`).
    pub tables: Vec<StagedTable>,
    /// Device records whose operands relocation rewrote (var-id -> PA; lncsim ISA).
    pub relocated_records: u64,
    /// Device records staged as opaque instruction memory (the real ISA, not relocated).
    pub opaque_records: u64,
    /// What the simulator executes.
    pub image: CoreImage,
}

/// One engine table as staged: the NEFF member and where its bytes went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StagedTable {
    /// The member (`sg00/act_info.json`-named `.bin`).
    pub member: String,
    /// Physical address of its first byte.
    pub pa: u64,
    /// Bytes.
    pub len: u64,
}
