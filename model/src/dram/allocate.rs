//! The IR-level `DRAM_Allocator::allocate` driver (seed 004, "The allocate
//! Driver"), step by step over a per-core module:
//!
//! 1. **Candidate filter** (`candidate(loc)`, [`Space::holds`]): DRAM, usage
//!    Internal or Spill (seed: `usage in {7, 9}`), not yet addressed, and
//!    touched by the function. (The seed asserts on a candidate with no
//!    def/use, dram_build.cpp:61; a location no instruction touches needs no
//!    address, so we leave it out instead.) An unaddressed Input, Output or
//!    Weight is not a candidate: it is the user's or the runtime's to place
//!    (lncsim's loader binds it), so it stays unaddressed and adds nothing to
//!    the HWM; a def no use reaches is a candidate live at its own position
//!    only ([`super::liveness`]).
//! 2. **Early exit**: no candidate logs "No candidate, DRAM allocation
//!    successful", writes the same success attribute as the full path
//!    (`dram_alloc_ok`, FunctionAttribute key 11) and returns (mark
//!    `dram.early_exit`).
//! 3. **Pre-pass**: every already-addressed DRAM location of the private space
//!    (inputs, outputs, weights, hand-placed internals) goes into the HWM with
//!    4 KiB rounding ([`high_water_mark`]); the HWM is the "reserved space"
//!    metric (31) and, via `find_start_addr`, the floor.
//! 4. **Cost accounting**: spill bytes (candidates), aligned spill bytes and the
//!    other DRAM bytes of the space, into the report.
//! 5. **Liveness**: flat numbering and `[def, use]` intervals per def->use edge
//!    ([`super::liveness`]), collective operands for `cc_buffer_size`.
//! 6. **Placement**: the core [`allocate`] (interval tree, simplify, select_impl,
//!    `search`, CC-buffer ceiling with the retry, region ceiling).
//! 7. **Write-back**: addresses onto the module's locations, "DRAM allocation
//!    successful", `dram_alloc_ok = true`, `reserved_space` (metric 31) and
//!    `real_cc_buffer_size` (key 13) into [`crate::ir::FuncAttrs`].
//!
//! On any error the module is left untouched.
//!
//! **Region ceiling (our default).** The seed defers the per-core HBM window to
//! a page we do not have. Private addresses are offsets in the core's own
//! scratch region, so each core has the window `[0, region_ceiling)`;
//! [`DEFAULT_DRAM_REGION`] is 4 GiB: eight cores' windows plus eight 1 GiB
//! shared slabs fit the simulator's 96 GiB HBM. The CC-buffer region is the
//! top `--allreduce-buffer-size` MiB of the window ([`super::config::regions`]).

use super::config::{AllocConfig, DEFAULT_ALLREDUCE_BUFFER_SIZE_MIB, Order};
use super::error::AllocError;
use super::liveness::{IrProblem, build_problem_touched, touched};
use super::problem::{DRAM_PAGE, Problem, high_water_mark, round_up};
use super::select::{Allocation, Metrics, allocate};
use crate::ir::{MemLocId, MemType, MemoryLocation, Module, Usage};

/// Default per-core private DRAM window (region ceiling): 4 GiB.
pub const DEFAULT_DRAM_REGION: u64 = 4 << 30;
/// Default `coreCap`: MiB of the shared region per core slab (1 GiB).
pub const DEFAULT_SHARED_CORE_CAP_MIB: u64 = 1024;

/// The seed's log line of the early exit.
pub const MSG_NO_CANDIDATE: &str = "No candidate, DRAM allocation successful";
/// The seed's log line of a successful full run.
pub const MSG_SUCCESS: &str = "DRAM allocation successful";

/// The allocator's knobs at the IR level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DramOptions {
    /// The private region ceiling (bytes): the per-core DRAM window.
    pub region_ceiling: u64,
    /// `--allreduce-buffer-size` in MiB; -1 = auto-size by `cc_buffer_size`.
    pub allreduce_buffer_size_mib: i64,
    /// `coreCap`: MiB of the shared region per core slab.
    pub shared_core_cap_mib: u64,
    /// Place under a compact window instead of the whole `region_ceiling` (see [`compact_ceiling`]).
    pub compact: bool,
}

impl Default for DramOptions {
    fn default() -> Self {
        DramOptions {
            region_ceiling: DEFAULT_DRAM_REGION,
            allreduce_buffer_size_mib: DEFAULT_ALLREDUCE_BUFFER_SIZE_MIB,
            shared_core_cap_mib: DEFAULT_SHARED_CORE_CAP_MIB,
            compact: false,
        }
    }
}

/// The compact window (lncsim's choice; the seed's window comes from an HBM
/// geometry page we do not have): the smallest ceiling under which every
/// candidate fits even with no reuse at all, plus the CC-buffer region on top:
/// `find_start_addr(hwm) + sum(aligned sizes) + cc_limit`, page-rounded, never
/// above `window`. Placement then stays proportional to the program instead of
/// spreading up to the window's top (where the seed's CC region sits), which
/// keeps device carve-outs small. The ceiling used is recorded in
/// `FuncAttrs::dram_region_ceiling` so checkers read it instead of recomputing it.
pub fn compact_ceiling(config: &AllocConfig, problem: &Problem, window: u64) -> Result<u64, AllocError> {
    let start = super::problem::find_start_addr(config.hwm);
    let cc = super::config::regions(config, problem)?.cc_limit;
    let sum = problem
        .locations
        .iter()
        .try_fold(0u64, |acc, l| round_up(l.byte_size.max(1), l.alignment.max(1)).and_then(|s| acc.checked_add(s)))
        .ok_or(AllocError::CcSizeOverflow)?;
    let tight = start.checked_add(sum).and_then(|v| v.checked_add(cc)).and_then(|v| round_up(v, DRAM_PAGE));
    Ok(tight.map_or(window, |t| t.max(start + DRAM_PAGE).min(window)))
}

/// The address space a run places into (the seed's ctor `from_space`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Space {
    /// The per-core private region (`coloring_allocator_dram`).
    Private,
    /// The shared region (`coloring_allocator_dram_shared`, from_space = Shared).
    Shared,
}

impl Space {
    /// Whether the allocator places `l` in this space: DRAM with usage
    /// Internal or Spill (private) or Shared (shared run). Seed 004, "The
    /// allocate Driver": the candidate filter is `usage in {7, 9}`; inputs,
    /// outputs and weights are never the allocator's to place.
    pub fn holds(self, l: &MemoryLocation) -> bool {
        l.mem_type == MemType::Dram
            && match self {
                Space::Private => matches!(l.usage, Usage::Internal | Usage::Spill),
                Space::Shared => l.usage == Usage::Shared,
            }
    }

    /// Whether `l` lives in this address space at all (any usage but Shared
    /// for the private space): what the HWM pre-pass and the cost accounting
    /// read. An addressed input, output or weight raises the floor.
    pub fn contains(self, l: &MemoryLocation) -> bool {
        l.mem_type == MemType::Dram && ((l.usage == Usage::Shared) == (self == Space::Shared))
    }
}

/// Why the IR-level allocator failed. One line each.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DramError {
    /// The core allocator rejected the function's problem (e.g. out of space).
    #[error("function `{func}` ({space:?} DRAM): {err}")]
    Alloc {
        /// The function.
        func: String,
        /// The address space.
        space: Space,
        /// The core's error.
        err: AllocError,
    },
    /// The region ceiling is below one page.
    #[error("the DRAM region ceiling {0} is below one 4 KiB page")]
    BadRegion(u64),
    /// The shared slab of a core does not fit in 64 bits.
    #[error("shared slab of core {core} ({cap_mib} MiB per core) does not fit in 64 bits")]
    SlabOverflow {
        /// The core.
        core: u32,
        /// `coreCap` in MiB.
        cap_mib: u64,
    },
    /// The anti-dependency walk of a function passed its step limit.
    #[error(
        "function `{func}` ({space:?} DRAM): the anti-dependency walk passed its limit of {limit} steps \
         (reused bytes read and written by too many instructions); refused"
    )]
    AntiDepLimit {
        /// The function.
        func: String,
        /// The address space.
        space: Space,
        /// The step limit.
        limit: u64,
    },
}

/// What one run of the allocator on one function did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllocReport {
    /// The function.
    pub function: String,
    /// The core (module or function NeuronCoreId), if any.
    pub core: Option<u32>,
    /// The address space.
    pub space: Space,
    /// The early exit ran ("No candidate").
    pub early_exit: bool,
    /// Candidates placed by this run.
    pub placed: usize,
    /// Shared views skipped and marked remote (shared run only).
    pub remote_views: usize,
    /// Bytes of the candidates ("spill").
    pub spill_bytes: u64,
    /// Bytes of the candidates rounded to 4 KiB ("aligned spill").
    pub aligned_spill_bytes: u64,
    /// Bytes of the space's other DRAM locations ("dram").
    pub dram_bytes: u64,
    /// Base address of the run's region (the core's slab in the shared run; 0 otherwise).
    pub base: u64,
    /// The region ceiling relative to `base`.
    pub region_ceiling: u64,
    /// The core's metrics (relative to `base`); all zero on the early exit.
    pub metrics: Metrics,
    /// The seed's log lines, in order.
    pub messages: Vec<String>,
}

impl AllocReport {
    /// An empty report for `m`'s function `fi` in `space`.
    pub(crate) fn new(m: &Module, fi: usize, space: Space) -> Self {
        let f = &m.functions[fi];
        AllocReport {
            function: f.name.clone(),
            core: f.attrs.neuron_core_id.or(m.attrs.neuron_core_id),
            space,
            early_exit: false,
            placed: 0,
            remote_views: 0,
            spill_bytes: 0,
            aligned_spill_bytes: 0,
            dram_bytes: 0,
            base: 0,
            region_ceiling: 0,
            metrics: Metrics::default(),
            messages: Vec::new(),
        }
    }
}

/// The unaddressed locations of `space` among `touched` (the first scan), ascending.
pub(crate) fn unaddressed_in(m: &Module, touched: &[MemLocId], space: Space) -> Vec<MemLocId> {
    touched
        .iter()
        .copied()
        .filter(|&id| m.memlocs.get(id.index()).is_some_and(|l| space.holds(l) && l.address.is_none()))
        .collect()
}

/// `ids` as a membership mask over `m`'s locations (a dense `Vec<bool>` by
/// location index: O(1) probes, no per-entry allocation). O(L + |ids|).
pub(crate) fn mask(m: &Module, ids: &[MemLocId]) -> Vec<bool> {
    let mut mask = vec![false; m.memlocs.len()];
    for id in ids {
        if let Some(slot) = mask.get_mut(id.index()) {
            *slot = true;
        }
    }
    mask
}

/// Whether `id` is in `mask` (see [`mask`]).
pub(crate) fn in_mask(mask: &[bool], id: MemLocId) -> bool {
    mask.get(id.index()).copied().unwrap_or(false)
}

/// The early exit: "No candidate, DRAM allocation successful" and the success attribute.
pub(crate) fn early_exit(m: &mut Module, fi: usize, report: &mut AllocReport) {
    crate::marks::hit("dram.early_exit");
    report.early_exit = true;
    report.messages.push(MSG_NO_CANDIDATE.to_string());
    m.functions[fi].attrs.dram_alloc_ok = Some(true);
}

/// Cost accounting (seed: "COST ACCOUNTING + metrics") over `space`.
pub(crate) fn account(m: &Module, space: Space, candidates: &[bool], report: &mut AllocReport) {
    for (i, l) in m.memlocs.iter().enumerate() {
        if !space.contains(l) {
            continue;
        }
        let size = l.byte_size();
        if candidates.get(i).copied().unwrap_or(false) {
            report.spill_bytes = report.spill_bytes.saturating_add(size);
            let aligned = round_up(size, DRAM_PAGE).unwrap_or(u64::MAX);
            report.aligned_spill_bytes = report.aligned_spill_bytes.saturating_add(aligned);
        } else {
            report.dram_bytes = report.dram_bytes.saturating_add(size);
        }
    }
}

/// Runs the core on `ir` and returns its allocation; errors name the function and space.
pub(crate) fn place(
    m: &Module,
    fi: usize,
    ir: &IrProblem,
    config: &AllocConfig,
    space: Space,
) -> Result<Allocation, DramError> {
    allocate(&ir.problem, config).map_err(|err| DramError::Alloc { func: m.functions[fi].name.clone(), space, err })
}

/// Writes `alloc` (offset by `base`) onto the module's locations.
pub(crate) fn write_back(m: &mut Module, ir: &IrProblem, alloc: &Allocation, base: u64) {
    for (i, &id) in ir.locs.iter().enumerate() {
        m.memlocs[id.index()].address = Some(base + alloc.addresses[i]);
    }
}

/// The private run over every function of `m`, in order (`coloring_allocator_dram`).
pub fn allocate_module(m: &mut Module, opts: &DramOptions) -> Result<Vec<AllocReport>, DramError> {
    (0..m.functions.len()).map(|fi| allocate_function(m, fi, opts)).collect()
}

/// `DRAM_Allocator::allocate(func)` in the private space for function `fi` of `m`.
pub fn allocate_function(m: &mut Module, fi: usize, opts: &DramOptions) -> Result<AllocReport, DramError> {
    if opts.region_ceiling < DRAM_PAGE {
        return Err(DramError::BadRegion(opts.region_ceiling));
    }
    let space = Space::Private;
    let mut report = AllocReport::new(m, fi, space);
    report.region_ceiling = opts.region_ceiling;
    // FIRST SCAN: is there anything to place?
    let touched = touched(&m.functions[fi]);
    let unaddressed = unaddressed_in(m, &touched, space);
    if unaddressed.is_empty() {
        early_exit(m, fi, &mut report);
        return Ok(report);
    }
    // PRE-PASS: the pre-placed footprint of the space into the HWM.
    let alloc_err = |err| DramError::Alloc { func: m.functions[fi].name.clone(), space, err };
    let hwm = high_water_mark(
        m.memlocs
            .iter()
            .filter(|l| space.contains(l))
            .filter_map(|l| l.address.map(|a| (l.name.as_str(), a, l.byte_size(), DRAM_PAGE))),
    )
    .map_err(alloc_err)?;
    let candidates = mask(m, &unaddressed);
    account(m, space, &candidates, &mut report);
    let ir = build_problem_touched(m, &m.functions[fi], &touched, |id| in_mask(&candidates, id));
    let mut config = AllocConfig {
        page: DRAM_PAGE,
        hwm,
        region_ceiling: opts.region_ceiling,
        allreduce_buffer_size_mib: opts.allreduce_buffer_size_mib,
        order: Order::Seed,
    };
    if opts.compact {
        config.region_ceiling = compact_ceiling(&config, &ir.problem, opts.region_ceiling).map_err(alloc_err)?;
        report.region_ceiling = config.region_ceiling;
    }
    let alloc = place(m, fi, &ir, &config, space)?;
    write_back(m, &ir, &alloc, 0);
    let attrs = &mut m.functions[fi].attrs;
    attrs.dram_alloc_ok = Some(true);
    attrs.dram_region_ceiling = Some(config.region_ceiling);
    attrs.reserved_space = Some(alloc.metrics.reserved_space);
    attrs.real_cc_buffer_size = Some(alloc.metrics.real_cc_buffer_size);
    report.placed = ir.locs.len();
    report.metrics = alloc.metrics;
    report.messages.push(MSG_SUCCESS.to_string());
    Ok(report)
}
