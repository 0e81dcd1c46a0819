//! Loadable NEFFs for tests and benchmarks: a program is split, its DRAM
//! locations placed by a trivial bump allocator ([`place_by_hand`]: no
//! reuse, so no liveness analysis is needed), compiled per core and packaged
//! with [`pack_code`]. A simpler path than `pipeline::compile` (no DRAM
//! allocator, no linker), kept so the loader's tests and `lncsim bench load`
//! do not depend on the allocator or the linker; the NEFF layout is the same.
//! The real flow (pipeline, NEFF, `nrt_load`) is `lncsim_sim::testkit::load_compiled`.

use std::collections::BTreeMap;

use crate::codegen::{CodegenError, CoreCode, codegen};
use crate::ir::{Module, Usage};
use crate::neff::pack::{PackError, PackOptions, pack_code};
use crate::program::{GenConfig, generate};
use crate::split::{SplitError, split};

/// Why a test NEFF could not be built.
#[derive(Debug, thiserror::Error)]
pub enum TestkitError {
    /// The splitter refused the program.
    #[error("split: {0}")]
    Split(#[from] SplitError),
    /// Codegen refused a core.
    #[error("codegen: {0}")]
    Codegen(#[from] CodegenError),
    /// The packager refused the code.
    #[error("pack: {0}")]
    Pack(#[from] PackError),
}

/// Alignment of hand-placed tensors.
const ALIGN: u64 = 64;

/// Gives every unplaced private tensor (`internal`, `spill`) a fresh address
/// in its core's scratch region, and every shared tensor one offset in the
/// shared region, the same for the producer's location and every consumer's
/// view (keyed by the producer's name, as `sync_shared_allocations` would).
pub fn place_by_hand(cores: &mut [Module]) {
    let mut shared: BTreeMap<String, u64> = BTreeMap::new();
    let mut shared_end = 0u64;
    for m in cores.iter_mut() {
        let mut private_end = 0u64;
        for l in m.memlocs.iter_mut().filter(|l| l.address.is_none()) {
            let size = l.byte_size().max(1);
            match l.usage {
                Usage::Internal | Usage::Spill => {
                    l.address = Some(private_end);
                    private_end = (private_end + size).next_multiple_of(ALIGN);
                }
                Usage::Shared => {
                    let key = l.remote_local_target.as_ref().map_or_else(|| l.name.to_string(), |r| r.name.to_string());
                    let off = *shared.entry(key).or_insert_with(|| {
                        let off = shared_end;
                        shared_end = (shared_end + size).next_multiple_of(ALIGN);
                        off
                    });
                    l.address = Some(off);
                    l.is_shared_post_dram_alloc = true;
                }
                Usage::Input | Usage::Output | Usage::Weight => {}
            }
        }
    }
}

/// The per-core code of `program`: split, [`place_by_hand`], codegen.
pub fn compile_by_hand(program: &Module) -> Result<Vec<CoreCode>, TestkitError> {
    let mut cores = split(program)?;
    place_by_hand(&mut cores);
    let mut codes = Vec::new();
    for m in &cores {
        codes.extend(codegen(m)?);
    }
    Ok(codes)
}

/// `program` as a NEFF (gzip, UUID from `seed` and the content).
pub fn pack_program(program: &Module, seed: u64) -> Result<Vec<u8>, TestkitError> {
    let codes = compile_by_hand(program)?;
    let opts = PackOptions { seed, ..PackOptions::default() };
    Ok(pack_code(&program.name, program.attrs.lnc_size, &codes, &opts)?)
}

/// The generated program of `cfg` as a NEFF.
pub fn pack_generated(cfg: &GenConfig) -> Result<Vec<u8>, TestkitError> {
    pack_program(&generate(cfg), cfg.seed)
}
