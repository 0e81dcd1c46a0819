//! The DRAM allocator (seed 004): interval tree, first fit, shared-DRAM equalization.
//!
//! This module holds the IR-independent core. An IR-level driver builds a
//! [`Problem`] from a function (one [`Location`] per candidate, its
//! `[def, use]` intervals, pre-placed addresses as pins, collective operands as
//! [`CcOperand`]s), computes the HWM with [`high_water_mark`], and calls
//! [`allocate`] with an [`AllocConfig`]; the addresses come back in
//! [`Allocation::addresses`], and [`checker::check`] verifies them
//! independently. The MiniMalloc CSV tool ([`csv`], `lncsim alloc`) drives the
//! same core.
//!
//! The pieces, in the seed's order: [`interval_tree`] (`makeTree`, `makeMax`,
//! `getAllOverlaps`), [`interference`] (`build_interval_tree`), [`simplify`]
//! (the elimination stack), [`search`] (first fit + page-straddle rule),
//! [`renumber`] (`renumber_locations`, dense Info ids), [`select`]
//! (`select_impl`, the CC-region retry).
//!
//! The IR level: [`liveness`] (flat numbering, `[def, use]` intervals of a
//! function), [`allocate`] (the `allocate` driver over a per-core module),
//! [`shared`] (the dram_shared run, slabs, `sync_shared_allocations`, memory
//! pressure), [`anti_deps`] (the post-DRAM anti-dependency passes) and
//! [`ir_checker`] (the independent checker of allocated modules).

pub mod allocate;
pub mod anti_deps;
pub mod checker;
pub mod clique;
pub mod config;
pub mod csv;
pub mod error;
pub mod fuzz;
pub mod generate;
pub mod interference;
pub mod interval_tree;
pub mod ir_checker;
pub mod liveness;
pub mod pinned;
pub mod problem;
pub mod renumber;
pub mod search;
pub mod select;
pub mod shared;
pub mod simplify;
pub mod svg;
mod sweep;

pub use allocate::{
    AllocReport, DEFAULT_DRAM_REGION, DEFAULT_SHARED_CORE_CAP_MIB, DramError, DramOptions, Space, allocate_module,
    compact_ceiling,
};
pub use anti_deps::{
    AntiDepReport, MAX_WALK_STEPS, anti_dependency_analyzer_post_dram, anti_dependency_analyzer_post_shared_dram,
    reuse_worst_case,
};
pub use checker::{Violation, check};
pub use config::{AllocConfig, Order, Regions, cc_buffer_size, regions};
pub use error::AllocError;
pub use ir_checker::{IrCheckConfig, IrViolation, check_modules};
pub use problem::{
    CcOperand, DRAM_PAGE, LiveInterval, Location, MemoryType, PassOptions, Problem, Time, find_start_addr,
    get_alignment_size, high_water_mark,
};
pub use renumber::{Info, Renumbered, renumber_locations};
pub use select::{Allocation, Metrics, Oracle, allocate, allocate_naive, allocate_using};
pub use shared::{
    HbmUsage, SyncError, allocate_shared, allocate_shared_with, compact_core_cap_mib, compact_core_cap_with_problems,
    hbm_usage, set_is_shared_post_dram_alloc, sync_shared_allocations,
};
