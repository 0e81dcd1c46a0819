//! The per-core flow that feeds the linker (DESIGN.md, "The flow"): one
//! function, so every caller (CLI, properties, fuzz, benchmarks) links what
//! the same pipeline produced.
//!
//! The flow itself is [`crate::pipeline`]: split, the DRAM allocator per core
//! (private region, anti-dependency passes, the dram_shared run) and
//! `sync_shared_allocations`, with default [`PipelineOptions`]. The linker and
//! its checker work with addresses unset (`--disable-dram-allocation`) as well
//! as set.

use super::{LinkOptions, Linked, link_with};
use crate::ir::Module;
pub use crate::pipeline::PipelineError;
use crate::pipeline::{PipelineOptions, build_pipeline};

/// The finished per-core modules of `program`, in core order (every pass before `link`).
pub fn per_core_modules(program: &Module) -> Result<Vec<Module>, PipelineError> {
    Ok(build_pipeline(&PipelineOptions::default()).run_per_core(program)?.0)
}

/// `per_core_modules` then `link_with`: the per-core modules and the link.
pub fn link_program(program: &Module, opts: &LinkOptions) -> Result<(Vec<Module>, Linked), PipelineError> {
    let modules = per_core_modules(program)?;
    let linked = link_with(&modules, opts)?;
    Ok((modules, linked))
}
