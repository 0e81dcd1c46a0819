//! The per-core flow that feeds the linker (DESIGN.md, "The flow"): one
//! function, so every caller (CLI, properties, fuzz, benchmarks) links what
//! the same pipeline produced.
//!
//! Today it only splits: the DRAM allocator (per core, then the dram_shared
//! mode and `sync_shared_allocations`) is added here when it is merged. The
//! linker and its checker work with addresses unset (`None` on both sides of
//! every handoff) as well as set.

use super::{LinkError, LinkOptions, Linked, link_with};
use crate::ir::Module;
use crate::split::{SplitError, split};

/// Why the pipeline failed. One line each.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PipelineError {
    /// The program could not be split.
    #[error("split: {0}")]
    Split(#[from] SplitError),
    /// The per-core modules could not be linked.
    #[error("link: {0}")]
    Link(#[from] LinkError),
}

/// The finished per-core modules of `program`, in core order (today: `split`).
pub fn per_core_modules(program: &Module) -> Result<Vec<Module>, PipelineError> {
    Ok(split(program)?)
}

/// `per_core_modules` then `link_with`: the per-core modules and the link.
pub fn link_program(program: &Module, opts: &LinkOptions) -> Result<(Vec<Module>, Linked), PipelineError> {
    let modules = per_core_modules(program)?;
    let linked = link_with(&modules, opts)?;
    Ok((modules, linked))
}
