//! nrt_load (seed 002): the six-stage NEFF load pipeline, against a [`Device`].
//!
//! | stage | functions (the seed's names) | file |
//! |---|---|---|
//! | S0 | `nrt_load`, `nrt_load_util`, `nrt_vnc_usage_find_and_inc` / `_dec` | [`nrt`], [`registry`] |
//! | S1 | TNC cache (`lncsim_tnc`), `neff_parse` | [`nrt`], [`graph`] |
//! | S2 | `parse_neff_json`, `dlr_kelf_load`, `kelf_load`, `construct_kbin`, `kelf_resolve_vtpb_remote_variables` | [`graph`], [`kbin`] |
//! | S3 | `kelf_load_from_neff`, `gen_kbin` (the var table: `mem_ref_set`) | [`kbin`], [`mem_ref`] |
//! | S4 | `dlr_kelf_stage`, `vtpb_info_shared_init_vtpb`, `kbl_model_add`, the fan-out, `kbl_model_remove` | [`fanout`], [`stage`] |
//! | S5 | relocation (a) `translate_pseudo_instrs` + `kbin_patch_info`, (b) `imcpy_load_vring`; `dlr_model_set` | [`relocate`], [`stage`], [`nrt`] |
//! | unload | `nrt_unload`, `kmgr_unload_nn`, `dlr_kelf_unstage`, `dlr_kelf_unload` | [`runtime`] |
//!
//! [`device`] is the IOCTL-shaped surface the loader stages through (the
//! simulator implements it); [`image`] describes what a finished load leaves
//! on the device for each core, which is what the simulator executes;
//! [`records`] holds the three model records and two handles.
//!
//! ```text
//! let rt = Runtime::new(device);                     // nrt_init
//! let m = rt.nrt_load(&neff_bytes, -1, -1)?;         // S0..S5, threads for the fan-out
//! let images = rt.core_images(m.h_nn)?;              // one CoreImage per subgraph
//! rt.nrt_unload(&m)?;
//! ```

pub mod checker;
pub mod checker_registered;
mod checker_vars;
pub mod device;
pub mod error;
pub mod fanout;
pub mod fuzz;
pub mod graph;
pub mod image;
pub mod kbin;
pub mod mem_ref;
pub mod mla;
pub mod nrt;
pub mod records;
pub mod registry;
pub mod relocate;
pub mod runtime;
pub mod stage;
pub mod testkit;
pub mod trace;
pub mod var_table;

/// The TNC cache crate, re-exported so a simulator steps the same [`tnc::TncState`] the loader uses.
pub use lncsim_tnc as tnc;

pub use device::{Device, DeviceError};
pub use error::{LoadError, Stage};
pub use fanout::{StageFanout, StageStep, StepRefused};
pub use graph::{KelfNn, NeffLoadInfo};
pub use image::{CoreImage, Isa, StreamImage, VarImage};
pub use nrt::PendingLoad;
pub use records::{DlrKelfModel, DlrModel, DlrState, HModel, HNn, KblModelParam, Model, NrtModel, Region, StagedTable};
pub use runtime::{ExecRef, Runtime, RuntimeConfig};
pub use trace::{LoadTrace, TraceEvent};
