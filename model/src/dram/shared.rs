//! Shared mode (seed 004, "Cross-LNC Shared-DRAM Partitioning"; DESIGN.md,
//! "Shared tensors"): the dram_shared run of the same allocator
//! (`from_space = Shared`), the `setIsSharedPostDRAMAlloc` mark, per-core slab
//! partitioning, `sync_shared_allocations`, and memory-pressure accounting
//! that counts shared bytes once.
//!
//! **Ownership.** The core that writes a cross-core tensor owns it (its copy
//! has no `remote_local_target`) and places it in its slab of the shared
//! region; every consumer's view carries `RemoteLocalTarget(name, producer)`
//! and is skipped on its core ("Skipping shared tensor allocations on core N,
//! marking as remoteLocalTarget instead", mark `dram.shared_remote_skip`);
//! [`sync_shared_allocations`] then copies the producer's (address, partition,
//! bank) onto the view. The seed skips the whole core when "sharing-on-core-1";
//! our split gives each core both owned tensors and views, so the skip is per
//! location.
//!
//! **Slabs.** Core `c` owns `[c * coreCap, (c + 1) * coreCap)` of the shared
//! region, `coreCap = shared_core_cap_mib << 20` (seed: `this[488] << 20`).
//! The run allocates in slab-relative coordinates (floor 0, ceiling `coreCap`,
//! the CC-buffer region at the top of the slab) and adds the slab base on
//! write-back, so the core allocator needs no slab knob.
//!
//! **Lifetimes (conservative choice).** Instruction numbering is per core, so a
//! producer's flat times say nothing about when a consumer on another core
//! reads. [`extend_shared_lifetimes`] makes every owned shared tensor live from
//! its first def to the end of the producer's function: all of them meet at
//! the last instruction, so shared tensors never reuse each other's addresses.

use super::allocate::{
    AllocReport, DramError, DramOptions, MSG_SUCCESS, Space, account, early_exit, in_mask, mask, place, unaddressed_in,
    write_back,
};
use super::config::{AllocConfig, Order};
use super::liveness::{IrProblem, build_problem_touched, touched};
use super::problem::{DRAM_PAGE, LiveInterval, high_water_mark, round_up};
use crate::ir::{MemLocId, MemoryLocation, Module, Usage};
use crate::namehash::NameMap;

/// `bir::MemoryLocation::setIsSharedPostDRAMAlloc(true)`: the only place that sets the mark.
pub fn set_is_shared_post_dram_alloc(loc: &mut MemoryLocation) {
    loc.is_shared_post_dram_alloc = true;
}

/// The log line of a core whose shared views are left to `sync_shared_allocations`.
pub fn skip_message(core: u32) -> String {
    format!("Skipping shared tensor allocations on core {core}, marking as remoteLocalTarget instead")
}

/// Core `core`'s slab `[base, base + cap)` of the shared region, in bytes.
pub fn slab(core: u32, cap_mib: u64) -> Result<(u64, u64), DramError> {
    let overflow = DramError::SlabOverflow { core, cap_mib };
    let cap = cap_mib.checked_mul(1 << 20).ok_or(overflow.clone())?;
    let base = cap.checked_mul(u64::from(core)).ok_or(overflow.clone())?;
    base.checked_add(cap).ok_or(overflow)?;
    Ok((base, cap))
}

/// The compact slab size (lncsim's choice, like [`super::compact_ceiling`] for
/// the private run): the largest, over cores, of what its owned shared tensors
/// need with no reuse plus its CC limit, rounded up to whole MiB (at least 1).
/// Every core's slab gets this size, so slab bases stay `core * coreCap`.
pub fn compact_core_cap_mib(modules: &[Module], opts: &DramOptions) -> Result<u64, DramError> {
    compact_core_cap_with_problems(modules, opts).map(|(cap, _)| cap)
}

/// The shared run's problems built while sizing the compact slab, by module
/// then function (`None`: nothing owned to place), for
/// [`allocate_shared_with`]: each is exactly what the shared run would build
/// for a module not changed since, so it is built once instead of twice.
pub type SharedProblems = Vec<Vec<Option<IrProblem>>>;

/// [`compact_core_cap_mib`] and the problems it built ([`SharedProblems`]).
/// Cost: one liveness walk per function, O(n + L + k log k) each.
pub fn compact_core_cap_with_problems(
    modules: &[Module],
    opts: &DramOptions,
) -> Result<(u64, SharedProblems), DramError> {
    let mut need = DRAM_PAGE;
    let mut problems = Vec::with_capacity(modules.len());
    for m in modules {
        let mut per_fn = Vec::with_capacity(m.functions.len());
        for fi in 0..m.functions.len() {
            let Some(ir) = owned_problem(m, fi, &touched(&m.functions[fi])) else {
                per_fn.push(None);
                continue;
            };
            let config = AllocConfig {
                page: DRAM_PAGE,
                hwm: 0,
                region_ceiling: u64::MAX,
                allreduce_buffer_size_mib: opts.allreduce_buffer_size_mib,
                order: Order::Seed,
            };
            let c = super::compact_ceiling(&config, &ir.problem, u64::MAX).map_err(|err| DramError::Alloc {
                func: m.functions[fi].name.clone(),
                space: Space::Shared,
                err,
            })?;
            need = need.max(c);
            per_fn.push(Some(ir));
        }
        problems.push(per_fn);
    }
    Ok((need.div_ceil(1 << 20), problems))
}

/// The shared run's problem of function `fi` (its owned, unaddressed shared
/// locations, lifetimes extended), or `None` when it owns none to place.
fn owned_problem(m: &Module, fi: usize, touched: &[MemLocId]) -> Option<IrProblem> {
    let owned: Vec<MemLocId> = unaddressed_in(m, touched, Space::Shared)
        .into_iter()
        .filter(|&id| m.loc(id).remote_local_target.is_none())
        .collect();
    if owned.is_empty() {
        return None;
    }
    let owned = mask(m, &owned);
    let mut ir = build_problem_touched(m, &m.functions[fi], touched, |id| in_mask(&owned, id));
    extend_shared_lifetimes(&mut ir);
    Some(ir)
}

/// Makes every location of `ir` live from its first def to the end of the function.
pub fn extend_shared_lifetimes(ir: &mut IrProblem) {
    let end = ir.num_insts.saturating_sub(1);
    for l in &mut ir.problem.locations {
        if let Some(first) = l.intervals.iter().map(|iv| iv.def).min() {
            l.intervals.push(LiveInterval::new(first, end.max(first)));
        }
    }
}

/// The dram_shared run over every function of `m`, in order.
pub fn allocate_shared(m: &mut Module, opts: &DramOptions) -> Result<Vec<AllocReport>, DramError> {
    (0..m.functions.len()).map(|fi| allocate_shared_function(m, fi, opts)).collect()
}

/// [`allocate_shared`] with the problems [`compact_core_cap_with_problems`]
/// built for `m` (by function), so they are not built again. `m` must not have
/// changed since they were built (the pipeline runs the two back to back).
pub fn allocate_shared_with(
    m: &mut Module,
    opts: &DramOptions,
    mut problems: Vec<Option<IrProblem>>,
) -> Result<Vec<AllocReport>, DramError> {
    (0..m.functions.len())
        .map(|fi| {
            let pre = problems.get_mut(fi).and_then(Option::take);
            allocate_shared_function_from(m, fi, opts, pre)
        })
        .collect()
}

/// `DRAM_Allocator::allocate(func)` in shared mode for function `fi` of `m`.
pub fn allocate_shared_function(m: &mut Module, fi: usize, opts: &DramOptions) -> Result<AllocReport, DramError> {
    allocate_shared_function_from(m, fi, opts, None)
}

/// [`allocate_shared_function`], with its problem already built (`pre`) or not.
fn allocate_shared_function_from(
    m: &mut Module,
    fi: usize,
    opts: &DramOptions,
    pre: Option<IrProblem>,
) -> Result<AllocReport, DramError> {
    let space = Space::Shared;
    let mut report = AllocReport::new(m, fi, space);
    let core = report.core.unwrap_or(0);
    let (base, cap) = slab(core, opts.shared_core_cap_mib)?;
    if cap < DRAM_PAGE {
        return Err(DramError::BadRegion(cap));
    }
    report.base = base;
    report.region_ceiling = cap;
    // FIRST SCAN: unaddressed shared locations, owned or views.
    let touched = touched(&m.functions[fi]);
    let unaddressed = unaddressed_in(m, &touched, space);
    if unaddressed.is_empty() {
        early_exit(m, fi, &mut report);
        return Ok(report);
    }
    // SHARED MARKING: every shared location the function touches (views too: sync reads the mark).
    for &id in &touched {
        if let Some(l) = m.memlocs.get_mut(id.index())
            && space.holds(l)
        {
            set_is_shared_post_dram_alloc(l);
        }
    }
    let (views, owned): (Vec<MemLocId>, Vec<MemLocId>) =
        unaddressed.into_iter().partition(|&id| m.loc(id).remote_local_target.is_some());
    if !views.is_empty() {
        crate::marks::hit("dram.shared_remote_skip");
        report.remote_views = views.len();
        report.messages.push(skip_message(core));
    }
    if owned.is_empty() {
        m.functions[fi].attrs.dram_alloc_ok = Some(true);
        return Ok(report);
    }
    // PRE-PASS: owned shared tensors already placed in this slab, slab-relative.
    let in_slab = |l: &MemoryLocation| -> Option<u64> {
        let a = l.address?;
        (l.remote_local_target.is_none() && a >= base && a - base < cap).then(|| a - base)
    };
    let hwm = high_water_mark(
        m.memlocs
            .iter()
            .filter(|l| space.holds(l))
            .filter_map(|l| in_slab(l).map(|a| (l.name.as_str(), a, l.byte_size(), DRAM_PAGE))),
    )
    .map_err(|err| DramError::Alloc { func: m.functions[fi].name.clone(), space, err })?;
    let owned = mask(m, &owned);
    account(m, space, &owned, &mut report);
    let ir = match pre {
        Some(ir) => ir,
        None => {
            let mut ir = build_problem_touched(m, &m.functions[fi], &touched, |id| in_mask(&owned, id));
            extend_shared_lifetimes(&mut ir);
            ir
        }
    };
    let config = AllocConfig {
        page: DRAM_PAGE,
        hwm,
        region_ceiling: cap,
        allreduce_buffer_size_mib: opts.allreduce_buffer_size_mib,
        order: Order::Seed,
    };
    let alloc = place(m, fi, &ir, &config, space)?;
    write_back(m, &ir, &alloc, base);
    m.functions[fi].attrs.dram_alloc_ok = Some(true);
    report.placed = ir.locs.len();
    report.metrics = alloc.metrics;
    report.messages.push(MSG_SUCCESS.to_string());
    Ok(report)
}

/// Why `sync_shared_allocations` failed (the seed's assertions, as typed errors).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SyncError {
    /// No module is core `target` (`modules[remote.coreIdx]` does not exist).
    #[error("core {core}: view `{view}` names core {target}, which is not among the modules")]
    MissingCore {
        /// The view's core (module index).
        core: usize,
        /// The view.
        view: String,
        /// The remote core.
        target: u32,
    },
    /// The remote module has no location of that name (`remote_mloc != nullptr`).
    #[error(
        "core {core}: view `{view}` names `{name}` on core {target}, which does not exist (remote_mloc != nullptr)"
    )]
    MissingTarget {
        /// The view's core (module index).
        core: usize,
        /// The view.
        view: String,
        /// The remote name.
        name: String,
        /// The remote core.
        target: u32,
    },
    /// A marked, unaddressed shared location has no remote target (`memloc.getRemoteLocalTarget().has_value()`).
    #[error(
        "core {core}: `{view}` is a marked shared location with no address and no remote target (memloc.getRemoteLocalTarget().has_value())"
    )]
    NoRemoteTarget {
        /// The location's core (module index).
        core: usize,
        /// The location.
        view: String,
    },
    /// The producer's location has no address (`remote_mloc->isAllocated()`).
    #[error(
        "core {core}: view `{view}` names `{name}` on core {target}, which is not allocated (remote_mloc->isAllocated())"
    )]
    UnallocatedTarget {
        /// The view's core (module index).
        core: usize,
        /// The view.
        view: String,
        /// The remote name.
        name: String,
        /// The remote core.
        target: u32,
    },
}

/// One equalization: the view, and the (address, partition, bank) it received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Synced {
    /// The view's core (module index).
    pub core: usize,
    /// The view.
    pub view: String,
    /// "Assigned memloc <name> to address <addr> based on its remote local target".
    pub address: u64,
    /// The partition copied.
    pub partition: u32,
    /// The bank copied.
    pub bank: u32,
}

/// `SyncSharedAllocations::run(vector<Module>&)` (seed 004,
/// "sync_shared_allocations — address equalization"): every core's view of a
/// shared tensor gets the producer's (address, partition, bank).
///
/// The seed's loop, step by step, and what lncsim does at each:
///
/// 1. `if numCores == 1: return`: the core count is the modules' `lnc_size`
///    attribute (the first module's, `module+0x1a4`), not how many modules were
///    passed (mark `dram.sync_single_core`).
/// 2. `if loc[168]!=0 || usageClass != 7: continue`: an already-addressed
///    location is left alone (a second run changes nothing), and so is every
///    location outside the shared run's candidate class (lncsim's
///    `Usage::Shared` in DRAM; inputs, outputs, weights and private tensors are
///    never touched even when marked).
/// 3. `if !isSharedPostDRAMAlloc(): continue`: unmarked locations are skipped
///    (with `--disable-dram-allocation` nothing is marked: a no-op).
/// 4. `assert opt.has_value()`: an unaddressed, marked shared location without
///    a `remote_local_target` is [`SyncError::NoRemoteTarget`], not skipped.
/// 5. `rmloc = modules[coreIdx]...getMemoryLocationByName(remote_name)`,
///    `assert rmloc != nullptr`: [`SyncError::MissingCore`] /
///    [`SyncError::MissingTarget`]. The module is the one whose NeuronCoreId
///    is the remote core, else the one at that index (they agree for the
///    split's modules).
/// 6. The copy. **Deviation, by construction of lncsim's split** (DESIGN.md,
///    "Shared tensors"): the seed's link runs from the allocated copy to the
///    skipped core's copy, one to one, so it writes `loc`'s triple onto
///    `rmloc`; lncsim's split links each consumer's *view* to the one
///    producer copy (many views, one owner), and the owner is what its core's
///    shared run placed. So the triple flows the other way, owner to view, and
///    the seed's `assert rmloc->isAllocated()` becomes "the owner is
///    allocated" ([`SyncError::UnallocatedTarget`]), checked before the copy.
///    The owner is never modified.
///
/// All updates are computed first: on error no module is changed; the error
/// is the first one in (module, location) order. Cost: O(L + V) expected for
/// L locations over all modules and V views: the views' target names go into
/// one small table per target module ([`NameMap`], looked up only), then each
/// target module's locations are scanned once against it (the last location
/// of a name wins, as a full name index would give), with no table of all L
/// names.
pub fn sync_shared_allocations(modules: &mut [Module]) -> Result<Vec<Synced>, SyncError> {
    if modules.first().is_none_or(|m| m.attrs.lnc_size <= 1) {
        crate::marks::hit("dram.sync_single_core");
        return Ok(Vec::new());
    }
    let mut by_core = std::collections::BTreeMap::new();
    for (i, m) in modules.iter().enumerate() {
        if let Some(c) = m.attrs.neuron_core_id {
            by_core.entry(c).or_insert(i);
        }
    }
    // The views to equalize, in order: (core, location, target module, target name,
    // target core); the scan stops at the first error that needs no name lookup.
    let mut wants: Vec<(usize, usize, usize, &str, u32)> = Vec::new();
    let mut early: Option<SyncError> = None;
    'scan: for (core, m) in modules.iter().enumerate() {
        for (li, l) in m.memlocs.iter().enumerate() {
            if l.address.is_some() || !Space::Shared.holds(l) || !l.is_shared_post_dram_alloc {
                continue;
            }
            let Some(r) = l.remote_local_target.as_ref() else {
                early = Some(SyncError::NoRemoteTarget { core, view: l.name.to_string() });
                break 'scan;
            };
            let ti = by_core
                .get(&r.core)
                .copied()
                .or_else(|| ((r.core as usize) < modules.len()).then_some(r.core as usize));
            let Some(ti) = ti else {
                early = Some(SyncError::MissingCore { core, view: l.name.to_string(), target: r.core });
                break 'scan;
            };
            wants.push((core, li, ti, r.name.as_str(), r.core));
        }
    }
    // Target name -> slot, per target module; slot -> the target's location index.
    // Sized first (a rehash would read every stored name again).
    let mut wanted = vec![0usize; modules.len()];
    for &(_, _, ti, _, _) in &wants {
        wanted[ti] += 1;
    }
    let mut tables: Vec<NameMap<'_, usize>> =
        wanted.iter().map(|&n| NameMap::with_capacity_and_hasher(n, Default::default())).collect();
    let mut found: Vec<Option<usize>> = Vec::new();
    let mut slots: Vec<usize> = Vec::with_capacity(wants.len());
    for &(_, _, ti, name, _) in &wants {
        let s = *tables[ti].entry(name).or_insert_with(|| {
            found.push(None);
            found.len() - 1
        });
        slots.push(s);
    }
    for (ti, t) in tables.iter().enumerate() {
        if t.is_empty() {
            continue;
        }
        for (i, l) in modules[ti].memlocs.iter().enumerate() {
            if let Some(&s) = t.get(l.name.as_str()) {
                found[s] = Some(i);
            }
        }
    }
    let mut updates: Vec<(usize, usize, Synced)> = Vec::with_capacity(wants.len());
    for (&(core, li, ti, name, target), &s) in wants.iter().zip(&slots) {
        let view = || modules[core].memlocs[li].name.to_string();
        let rl = found[s].map(|i| &modules[ti].memlocs[i]).ok_or_else(|| SyncError::MissingTarget {
            core,
            view: view(),
            name: name.to_owned(),
            target,
        })?;
        let address = rl.address.ok_or_else(|| SyncError::UnallocatedTarget {
            core,
            view: view(),
            name: name.to_owned(),
            target,
        })?;
        let s = Synced { core, view: view(), address, partition: rl.partition, bank: rl.bank };
        updates.push((core, li, s));
    }
    if let Some(e) = early {
        return Err(e);
    }
    drop(tables);
    drop(wants);
    for (core, li, s) in &updates {
        let l = &mut modules[*core].memlocs[*li];
        l.address = Some(s.address);
        l.partition = s.partition;
        l.bank = s.bank;
    }
    Ok(updates.into_iter().map(|(_, _, s)| s).collect())
}

/// HBM the allocator placed over N per-core modules, shared bytes counted once.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HbmUsage {
    /// Per module: bytes of the private region that some Internal/Spill location occupies.
    pub private: Vec<u64>,
    /// Bytes of the shared region that some shared location (owner or view) occupies, once.
    pub shared: u64,
    /// `sum(private) + shared`.
    pub total: u64,
}

/// Length of the union of half-open byte ranges.
fn union_len(mut ranges: Vec<(u64, u64)>) -> u64 {
    ranges.sort_unstable();
    let (mut total, mut end) = (0u64, 0u64);
    for (lo, hi) in ranges {
        let lo = lo.max(end);
        if hi > lo {
            total = total.saturating_add(hi - lo);
            end = hi;
        }
    }
    total
}

/// The aligned byte range of an addressed DRAM location.
fn aligned_range(l: &MemoryLocation) -> Option<(u64, u64)> {
    let a = l.address?;
    Some((a, a.saturating_add(round_up(l.byte_size(), DRAM_PAGE).unwrap_or(u64::MAX))))
}

/// Memory pressure over `modules` (seed QUIRK: `getMemPressure` excludes
/// `isSharedPostDRAMAlloc` bytes from per-core accounting): each core's private
/// footprint, plus the shared region's footprint counted once however many
/// cores hold a view of a buffer. Footprints are unions of `[address, address
/// + aligned size)`, so reuse is not counted twice either.
pub fn hbm_usage(modules: &[Module]) -> HbmUsage {
    let private: Vec<u64> = modules
        .iter()
        .map(|m| {
            let placed = m
                .memlocs
                .iter()
                .filter(|l| Space::Private.holds(l) && matches!(l.usage, Usage::Internal | Usage::Spill));
            union_len(placed.filter_map(aligned_range).collect())
        })
        .collect();
    let shared = union_len(
        modules
            .iter()
            .flat_map(|m| &m.memlocs)
            .filter(|l| Space::Shared.holds(l) || l.is_shared_post_dram_alloc)
            .filter_map(aligned_range)
            .collect(),
    );
    let total = private.iter().fold(shared, |t, &p| t.saturating_add(p));
    HbmUsage { private, shared, total }
}
