//! The loader's one error type: the runtime's status code, the stage that
//! failed, and the runtime's message (seed 002 and DESIGN.md status codes).

use std::fmt;

use super::device::DeviceError;
use crate::neff::{NeffError, NrtStatus};

/// The pipeline stage an event or error belongs to (seed 002, "Stage Pipeline").
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Stage {
    /// S0: `nrt_load` / `nrt_load_util` (guard, header preflight, vnc claim, model config).
    S0Guard,
    /// S1: the TNC cache and `neff_parse`.
    S1Parse,
    /// S2: `parse_neff_json`, `kelf_load`, `construct_kbin`, `kelf_resolve_vtpb_remote_variables`.
    S2Graph,
    /// S3: `gen_kbin` (the KBIN record per subgraph).
    S3Build,
    /// S4: `dlr_kelf_stage`, `kbl_model_add` per core, the fan-out and its rollback.
    S4Stage,
    /// S5: relocation (inside S4's build) and `dlr_model_set` registration.
    S5Register,
    /// `nrt_unload` / `kmgr_unload_nn`.
    Unload,
}

impl Stage {
    /// A short label (`S0` .. `S5`, `unload`).
    pub fn label(self) -> &'static str {
        match self {
            Stage::S0Guard => "S0",
            Stage::S1Parse => "S1",
            Stage::S2Graph => "S2",
            Stage::S3Build => "S3",
            Stage::S4Stage => "S4",
            Stage::S5Register => "S5",
            Stage::Unload => "unload",
        }
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// Why a load or unload failed: one line, `NRT_INVALID(2): <message>`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{status}: {message}")]
pub struct LoadError {
    /// The runtime status code.
    pub status: NrtStatus,
    /// The stage that failed.
    pub stage: Stage,
    /// The runtime's message.
    pub message: String,
}

impl LoadError {
    /// An error of `status` at `stage`.
    pub fn new(status: NrtStatus, stage: Stage, message: impl Into<String>) -> Self {
        LoadError { status, stage, message: message.into() }
    }

    /// `NRT_INVALID` at `stage`.
    pub fn invalid(stage: Stage, message: impl Into<String>) -> Self {
        Self::new(NrtStatus::Invalid, stage, message)
    }

    /// A NEFF reader rejection, with the status the runtime gives it ([`NeffError::status`]).
    pub fn neff(stage: Stage, e: &NeffError) -> Self {
        Self::new(e.status(), stage, e.to_string())
    }

    /// A device failure during staging. Choice (the seed names no code for
    /// it): a refused `MEM_ALLOC_V2MT64` is `NRT_RESOURCE`; a failed
    /// `dmem_buf_copyin` (a DMA into HBM) is `NRT_HW_ERROR`; a bad free or a
    /// missing tpb, which only a loader bug causes, is `NRT_FAILURE`.
    pub fn device(stage: Stage, e: &DeviceError) -> Self {
        let status = match e {
            DeviceError::OutOfMemory { .. } => NrtStatus::Resource,
            DeviceError::BadCopy { .. } => NrtStatus::HwError,
            DeviceError::BadFree(_) | DeviceError::NoSuchTpb(_) => NrtStatus::Failure,
        };
        Self::new(status, stage, e.to_string())
    }
}
