//! Test utilities (not part of the simulator): the real flow (pipeline,
//! NEFF, `nrt_load` on the simulated device: [`load_compiled`]), and, as a
//! differential check of the loader, a plain in-memory [`Device`] with a
//! minimal stager of its own (places vars, expands pseudo-instructions,
//! relocates operands, writes records and descriptors),
//! and a trivial address assignment for split per-core modules that stands in
//! for the allocator (and, when the real linker is not used, for the linker's
//! name unification and barrier renumbering), with switches that plant the
//! bugs the checkers must catch.
//!
//! [`Device`]: lncsim_model::load::Device

mod load;
mod mem_device;
mod patch;
mod place;
mod stage;

pub use load::{Loaded, load_codes, load_compiled, load_neff};
pub use mem_device::{MemDevice, MemSnapshot};
pub use patch::patch_record;
pub use place::{PlaceOptions, place, split_and_place};
pub use stage::{StageError, stage};

use lncsim_model::codegen::{CoreCode, codegen};
use lncsim_model::ir::Module;
use lncsim_model::link::{LinkOptions, link_with};
use lncsim_model::load::CoreImage;

/// Splits, places and compiles `program`, stages it on a fresh device with
/// one tpb per core, and returns the device and the core images.
pub fn build(program: &Module, opts: &PlaceOptions) -> Result<(MemDevice, Vec<CoreImage>), String> {
    let codes = compile(program, opts)?;
    let device = MemDevice::new(codes.len() as u32);
    let images = stage(&device, &codes).map_err(|e| format!("stage: {e}"))?;
    Ok((device, images))
}

/// Splits, places and compiles `program` to one `CoreCode` per core.
pub fn compile(program: &Module, opts: &PlaceOptions) -> Result<Vec<CoreCode>, String> {
    let modules = split_and_place(program, opts)?;
    let mut codes = Vec::new();
    for m in &modules {
        codes.extend(codegen(m).map_err(|e| format!("codegen: {e}"))?);
    }
    Ok(codes)
}

/// Splits and places `program` (for the linker), links it with the real
/// `bir_linker`, compiles the linked module, and stages it on a fresh device.
pub fn build_linked(program: &Module, opts: &PlaceOptions) -> Result<(MemDevice, Vec<CoreImage>), String> {
    let opts = PlaceOptions { keep_view_names: true, skip_barrier_renumbering: true, ..opts.clone() };
    let modules = split_and_place(program, &opts)?;
    let linked = link_with(&modules, &LinkOptions::default()).map_err(|e| format!("link: {e}"))?;
    let codes = codegen(&linked.module).map_err(|e| format!("codegen: {e}"))?;
    let device = MemDevice::new(codes.len() as u32);
    let images = stage(&device, &codes).map_err(|e| format!("stage: {e}"))?;
    Ok((device, images))
}

/// Compiles `program` with the real pipeline (`lncsim_model::pipeline`:
/// split, DRAM allocator, anti-dependencies, shared allocation and sync,
/// `bir_linker`), generates code for the linked module, and stages it.
pub fn build_compiled(
    program: &Module,
    opts: &lncsim_model::pipeline::PipelineOptions,
) -> Result<(MemDevice, Vec<CoreImage>), String> {
    let compiled = lncsim_model::pipeline::compile(program, opts).map_err(|e| format!("compile: {e}"))?;
    let codes = codegen(&compiled.linked).map_err(|e| format!("codegen: {e}"))?;
    let device = MemDevice::new(codes.len() as u32);
    let images = stage(&device, &codes).map_err(|e| format!("stage: {e}"))?;
    Ok((device, images))
}
