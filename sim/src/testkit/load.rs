//! The real flow for tests and benchmarks: compile with the pipeline, pack a
//! NEFF, load it with the real loader (`nrt_load`, seed 002 S0-S5) on the
//! simulated device ([`crate::device::SimDevice`]), and hand back the
//! runtime and the core images the simulator executes.

use lncsim_model::codegen::CoreCode;
use lncsim_model::ir::Module;
use lncsim_model::load::{CoreImage, NrtModel, Runtime};
use lncsim_model::neff::PackOptions;
use lncsim_model::neff::pack::pack_code;
use lncsim_model::pipeline::{PipelineOptions, compile};

use crate::device::SimDevice;

/// A loaded NEFF: the runtime (which owns the device), the model, its core images.
#[derive(Debug)]
pub struct Loaded {
    /// The runtime; `runtime.device()` is the simulated device.
    pub runtime: Runtime<SimDevice>,
    /// The loaded model.
    pub model: NrtModel,
    /// One image per core, in core order.
    pub images: Vec<CoreImage>,
}

/// Loads the NEFF `bytes` of `lnc` cores on a fresh device of `lnc` tpbs (one vnc).
pub fn load_neff(bytes: &[u8], lnc: u32) -> Result<Loaded, String> {
    let runtime = Runtime::new(SimDevice::new(lnc.max(1), lnc.max(1)));
    let model = runtime.nrt_load(bytes, -1, -1).map_err(|e| format!("nrt_load: {e}"))?;
    let images = runtime.core_images(model.h_nn).map_err(|e| format!("core images: {e}"))?;
    Ok(Loaded { runtime, model, images })
}

/// Packs `codes` (one per core) into a NEFF and loads it.
pub fn load_codes(name: &str, lnc: u32, codes: &[CoreCode], seed: u64) -> Result<Loaded, String> {
    let bytes = pack_code(name, lnc, codes, &PackOptions { seed, ..PackOptions::default() })
        .map_err(|e| format!("pack: {e}"))?;
    load_neff(&bytes, lnc)
}

/// Compiles `program` with the real pipeline (split, DRAM allocator,
/// anti-dependencies, shared sync, `bir_linker`), packs and loads it.
pub fn load_compiled(program: &Module, opts: &PipelineOptions, seed: u64) -> Result<Loaded, String> {
    let compiled = compile(program, opts).map_err(|e| format!("compile: {e}"))?;
    let codes = lncsim_model::codegen::codegen(&compiled.linked).map_err(|e| format!("codegen: {e}"))?;
    load_codes(&compiled.linked.name, compiled.linked.attrs.lnc_size, &codes, seed)
}
