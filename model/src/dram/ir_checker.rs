//! The independent checker of allocated per-core modules (DESIGN.md
//! invariants 1 and 3). It shares no code with the interval tree, the driver's
//! liveness, `search`, the region computation or the driver: it walks the
//! blocks itself ([`live`]), recomputes page rounding, each function's HWM
//! floor and region ceiling ([`ceiling`]: the allocator's recorded
//! `dram_region_ceiling` must equal it and is never used), the CC-buffer
//! ceiling and the slabs from the IR and four settings ([`IrCheckConfig`]),
//! and finds overlaps with the checkers' own sweep
//! ([`super::sweep`], which no allocator code uses).
//!
//! Rules, per module (per-core, in core order):
//! - every DRAM Internal/Spill/Shared location a function touches has an address;
//! - private (Internal/Spill) placements, each under the function that placed
//!   it (the first to touch it): at or above its floor (the end of the
//!   page-rounded footprint of every addressed non-shared DRAM location placed
//!   before it ran), below its region ceiling (the window, or in compact mode
//!   the floor plus its candidates' page-rounded sizes plus the CC size),
//!   collective operands inside the CC region `[max(floor, ceiling - ccLimit),
//!   ceiling)`, no other location straddling its base, no sub-page location
//!   crossing a 4 KiB page, every address on the page grid (its offset within
//!   a 4 KiB page 0, the floor's or the CC base's: seed 004, "Page / GCA
//!   Alignment": sizes are page multiples and gaps start at the floor or at a
//!   neighbour's end), and no two locations with a common live position
//!   sharing a byte of `[address, address + aligned size)`;
//! - owned shared locations (no remote target): inside their core's slab
//!   `[core * coreCap, (core + 1) * coreCap)`, with the same CC and page rules
//!   relative to the slab, and marked `is_shared_post_dram_alloc` (views too);
//! - across modules: no two owned shared locations share a byte (shared tensors
//!   never reuse addresses), and every view equals its target's (address,
//!   partition, bank).
//!
//! Overlaps are listed up to [`MAX_OVERLAPS`] pairs in all (private ones per
//! core first, then shared ones); past it the listing stops and
//! [`IrViolation::TooManyOverlaps`] says so, so a placement with every
//! buffer at one address costs O(n log n + MAX_OVERLAPS), not n² pairs.
//!
//! Assumption: no Internal/Spill/Shared location was addressed before
//! allocation (true of generated and split programs); a hand-placed one is
//! checked like an allocated one. A location of zero bytes overlaps nothing.
//! It returns every violation.
//!
//! **Liveness of a dead def** (seed 004, "The Interval-Tree Liveness Model":
//! intervals are emitted per def->use edge, and a location with no use is
//! still a candidate, dram_build.cpp:61): a write no read follows is live at
//! its own position only ([`live`]), so it may share bytes with anything not
//! live there, and it is placed and checked like any other location.
//! Unaddressed Input/Output/Weight locations are the loader's to place
//! (seed 004: the allocator places usage {7, 9} only) and are not checked
//! here; addressed ones set the floor.
//!
//! **Cost.** Per module O(i + L) for the floors and ceilings of its i
//! instructions and L locations ([`ceiling`]); per function O(t + L) for its t touches (the liveness walk),
//! O(s log s + k log k) for the overlap sweep over the s live segments of the
//! private locations with k overlapping pairs ([`super::sweep`]), O(i + L) for the
//! CC operands of i instructions (membership by location index); across modules O(S log S + k) for S owned
//! shared buffers (sorted by core and range, so names are compared only on
//! ties and for the k reported pairs), and O(V + L) expected for the V views'
//! target lookups over L locations (a table of the views' target names per
//! target module, inline [`NameKey`]s: exact, the hash only spreads the keys;
//! each target module's locations scanned once against it, and a view checked
//! without reading any other location). Memory linear in the program.

mod ceiling;
mod live;

use std::collections::BTreeMap;

use crate::ir::{MemLocId, MemType, MemoryLocation, Module, RemoteLocalTarget, Usage};
use crate::program::name_key::{KeyMap, NameKey};
use ceiling::{PrivateRegions, is_private};
use live::{LiveSegments, live_segments};

/// The most overlapping pairs [`check_modules`] lists; past it, [`IrViolation::TooManyOverlaps`].
pub const MAX_OVERLAPS: usize = 10_000;

/// The three numbers the checker needs (from the pipeline's options).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IrCheckConfig {
    /// The private region ceiling in bytes.
    pub region_ceiling: u64,
    /// `--allreduce-buffer-size` in MiB (-1 = auto).
    pub allreduce_buffer_size_mib: i64,
    /// `coreCap`: MiB per core slab of the shared region.
    pub shared_core_cap_mib: u64,
    /// The private run placed under the compact window (`--compact-dram`), not the whole region.
    pub compact: bool,
}

/// One broken rule. `core` is the module's NeuronCoreId (else its index).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IrViolation {
    /// A touched compiler-placed location has no address.
    #[error("core {core}: `{loc}` is touched but has no address")]
    Unaddressed {
        /// Core.
        core: u32,
        /// Location.
        loc: String,
    },
    /// Two locations live at a common position share bytes.
    #[error(
        "core {core}: `{a}` [{a_lo:#x}, {a_hi:#x}) and `{b}` [{b_lo:#x}, {b_hi:#x}) overlap while both live at {time}"
    )]
    Overlap {
        /// Core.
        core: u32,
        /// First location.
        a: String,
        /// Its first byte.
        a_lo: u64,
        /// One past its last byte.
        a_hi: u64,
        /// Second location.
        b: String,
        /// Its first byte.
        b_lo: u64,
        /// One past its last byte.
        b_hi: u64,
        /// A position both are live at.
        time: u64,
    },
    /// A private placement below the floor.
    #[error("core {core}: `{loc}` at {address:#x} is below the HWM floor {floor:#x}")]
    BelowFloor {
        /// Core.
        core: u32,
        /// Location.
        loc: String,
        /// Its address.
        address: u64,
        /// The floor.
        floor: u64,
    },
    /// A placement outside its region (private window or the core's slab).
    #[error("core {core}: `{loc}` [{address:#x}, {end:#x}) is outside its region [{region_lo:#x}, {region_hi:#x})")]
    OutOfRegion {
        /// Core.
        core: u32,
        /// Location.
        loc: String,
        /// Its address.
        address: u64,
        /// One past its last (aligned) byte.
        end: u64,
        /// The region's first byte.
        region_lo: u64,
        /// The region's end.
        region_hi: u64,
    },
    /// A non-collective location straddling the CC-buffer ceiling.
    #[error("core {core}: `{loc}` [{address:#x}, {end:#x}) crosses the CC-buffer ceiling {cc_base:#x}")]
    CrossesCcCeiling {
        /// Core.
        core: u32,
        /// Location.
        loc: String,
        /// Its address.
        address: u64,
        /// One past its last byte.
        end: u64,
        /// The CC region's base.
        cc_base: u64,
    },
    /// A collective operand below the CC region.
    #[error("core {core}: collective operand `{loc}` at {address:#x} is below the CC region {cc_base:#x}")]
    CollectiveOutsideCcRegion {
        /// Core.
        core: u32,
        /// Location.
        loc: String,
        /// Its address.
        address: u64,
        /// The CC region's base.
        cc_base: u64,
    },
    /// A location of at most one page crossing a 4 KiB boundary.
    #[error("core {core}: `{loc}` at {address:#x} (+{size}) straddles a 4 KiB page")]
    PageStraddle {
        /// Core.
        core: u32,
        /// Location.
        loc: String,
        /// Its address.
        address: u64,
        /// Its aligned size.
        size: u64,
    },
    /// A placement off the 4 KiB page grid its region's placements lie on.
    #[error("core {core}: `{loc}` at {address:#x} is off the 4 KiB page grid (allowed offsets in a page: {allowed:?})")]
    Misaligned {
        /// Core.
        core: u32,
        /// Location.
        loc: String,
        /// Its address.
        address: u64,
        /// The offsets within a page a placement may have: 0, the floor's and the CC base's.
        allowed: Vec<u64>,
    },
    /// Two owned shared locations (of any cores) share bytes.
    #[error("shared `{a}` (core {a_core}) and `{b}` (core {b_core}) share bytes of the shared region")]
    SharedOverlap {
        /// First owner's core.
        a_core: u32,
        /// First location.
        a: String,
        /// Second owner's core.
        b_core: u32,
        /// Second location.
        b: String,
    },
    /// A shared location without the `is_shared_post_dram_alloc` mark.
    #[error("core {core}: shared `{loc}` is not marked is_shared_post_dram_alloc")]
    NotMarked {
        /// Core.
        core: u32,
        /// Location.
        loc: String,
    },
    /// A view whose target does not exist.
    #[error("core {core}: view `{view}` names `{target}` on core {target_core}, which does not exist")]
    MissingRemote {
        /// Core.
        core: u32,
        /// The view.
        view: String,
        /// The remote name.
        target: String,
        /// The remote core.
        target_core: u32,
    },
    /// A view that differs from its target in (address, partition, bank).
    #[error("core {core}: view `{view}` has {got:?}, its target `{target}` on core {target_core} has {want:?}")]
    SyncMismatch {
        /// Core.
        core: u32,
        /// The view.
        view: String,
        /// Its (address, partition, bank).
        got: (Option<u64>, u32, u32),
        /// The remote name.
        target: String,
        /// The remote core.
        target_core: u32,
        /// The target's (address, partition, bank).
        want: (Option<u64>, u32, u32),
    },
    /// More than `limit` overlapping pairs: the listing stopped there.
    #[error("more than {limit} overlapping pairs; the listing stops here")]
    TooManyOverlaps {
        /// [`MAX_OVERLAPS`].
        limit: usize,
    },
    /// A function's recorded `dram_region_ceiling` is not the one its IR gives.
    #[error("core {core}: function `{func}` records dram_region_ceiling {recorded:#x}, its IR gives {expected:#x}")]
    CeilingMismatch {
        /// Core.
        core: u32,
        /// The function.
        func: String,
        /// The recorded ceiling.
        recorded: u64,
        /// The ceiling recomputed from the IR and the configuration.
        expected: u64,
    },
    /// The configuration cannot be evaluated (bad CC size or slab overflow).
    #[error("bad checker configuration: {0}")]
    BadConfig(String),
}

const PAGE: u64 = 4096;

fn page_up(size: u64) -> u64 {
    size.div_ceil(PAGE).saturating_mul(PAGE)
}

fn is_dram(l: &MemoryLocation, usages: &[Usage]) -> bool {
    l.mem_type == MemType::Dram && usages.contains(&l.usage)
}

fn core_of(m: &Module, index: usize) -> u32 {
    m.attrs.neuron_core_id.unwrap_or(index as u32)
}

/// A touched, addressed location as the region and overlap rules read it, so
/// that they read no location again but for a reported one's name.
#[derive(Clone, Copy)]
struct Placed {
    id: MemLocId,
    /// Its address.
    lo: u64,
    /// Its page-rounded size.
    size: u64,
}

impl Placed {
    /// One past its last page-rounded byte.
    fn end(&self) -> u64 {
        self.lo.saturating_add(self.size)
    }
}

/// An owned shared buffer: (core, name, first byte, one past its last page-rounded byte).
type Owned<'a> = (u32, &'a str, u64, u64);

/// Checks N allocated, synced per-core modules (core order); returns every violation.
pub fn check_modules(modules: &[Module], cfg: &IrCheckConfig) -> Vec<IrViolation> {
    let mut out = Vec::new();
    let Some(cap) = cfg.shared_core_cap_mib.checked_mul(1 << 20) else {
        out.push(IrViolation::BadConfig(format!("coreCap {} MiB overflows", cfg.shared_core_cap_mib)));
        return out;
    };
    // Every owned shared buffer of every core: (core, name, lo, hi), names borrowed.
    let mut owned: Vec<Owned<'_>> = Vec::new();
    let targets = Targets::new(modules);
    // Overlapping pairs still to list before the listing stops.
    let mut budget = Some(MAX_OVERLAPS);
    for (index, m) in modules.iter().enumerate() {
        let core = core_of(m, index);
        let regions = PrivateRegions::new(m);
        let slab_lo = cap.saturating_mul(u64::from(core));
        let Some(slab_hi) = slab_lo.checked_add(cap) else {
            out.push(IrViolation::BadConfig(format!("slab of core {core} overflows")));
            continue;
        };
        for (fi, f) in m.functions.iter().enumerate() {
            let segs = live_segments(m, f);
            let touched: &[MemLocId] = segs.touched();
            // Private: every touched one (overlaps); own: those this function placed
            // (region rules), of which candidates: the addressed ones.
            let mut private = Vec::new();
            let mut own = Vec::new();
            let mut candidates = Vec::new();
            let mut shared = Vec::new();
            for &id in touched {
                let Some(l) = m.memlocs.get(id.index()) else { continue };
                let placed = Placed { id, lo: l.address.unwrap_or(0), size: page_up(l.byte_size()) };
                if is_private(l) && regions.is_candidate_of(id.index(), fi) {
                    candidates.push(id);
                }
                if is_dram(l, &[Usage::Internal, Usage::Spill, Usage::Shared]) && l.address.is_none() {
                    out.push(IrViolation::Unaddressed { core, loc: l.name.to_string() });
                    continue;
                }
                if is_dram(l, &[Usage::Shared]) {
                    if !l.is_shared_post_dram_alloc {
                        out.push(IrViolation::NotMarked { core, loc: l.name.to_string() });
                    }
                    if l.remote_local_target.is_none() {
                        shared.push(placed);
                    }
                } else if is_private(l) {
                    private.push(placed);
                    if regions.is_candidate_of(id.index(), fi) {
                        own.push(placed);
                    }
                }
            }
            // One pass over the instructions for both regions' collective operands.
            let cc = CcOperands::new(m, f, &candidates, &shared);
            let floor = regions.floor(fi);
            let ceiling = if candidates.is_empty() {
                // Nothing placed here, so nothing recorded: a record is only bounded by the window.
                match f.attrs.dram_region_ceiling {
                    Some(c) if c > cfg.region_ceiling => {
                        out.push(IrViolation::BadConfig(format!(
                            "core {core}: recorded dram_region_ceiling {c:#x} is above the window {:#x}",
                            cfg.region_ceiling
                        )));
                        cfg.region_ceiling
                    }
                    Some(c) => c,
                    None => cfg.region_ceiling,
                }
            } else {
                // The ceiling comes from the IR; the allocator's record must agree with it.
                let limit = cc_limit(cfg, cc.sum[0]).unwrap_or(0);
                let want = regions.ceiling(fi, cfg.region_ceiling, cfg.compact, limit);
                if let Some(recorded) = f.attrs.dram_region_ceiling.filter(|&c| c != want) {
                    out.push(IrViolation::CeilingMismatch { core, func: f.name.to_string(), recorded, expected: want });
                }
                want
            };
            let region = Region { core, floor, ceiling, region_lo: 0 };
            check_region(m, &own, &cc, PRIVATE, &region, cfg, &mut out);
            let region = Region { core, floor: slab_lo, ceiling: slab_hi, region_lo: slab_lo };
            check_region(m, &shared, &cc, SHARED, &region, cfg, &mut out);
            overlaps(m, core, &private, &segs, &mut budget, &mut out);
            for p in shared {
                owned.push((core, m.loc(p.id).name.as_str(), p.lo, p.end()));
            }
        }
        check_views(&targets, index, &mut out);
    }
    // Sorted by the integer fields first, so the sort rarely reads a name (a
    // heap pointer chase per comparison); equal tuples stay adjacent for dedup.
    owned.sort_unstable_by(|a, b| (a.0, a.2, a.3).cmp(&(b.0, b.2, b.3)).then_with(|| a.1.cmp(b.1)));
    // Integers first: a name is read only where the rest of the tuple is equal.
    owned.dedup_by(|a, b| (a.0, a.2, a.3) == (b.0, b.2, b.3) && a.1 == b.1);
    // The report lists the pairs in (core, name, lo, hi) order of both buffers.
    let limit = budget.unwrap_or(0);
    let found = if budget.is_some() { shared_overlaps(&owned, limit) } else { Vec::new() };
    let truncated = found.len() > limit;
    let mut pairs: Vec<(&Owned<'_>, &Owned<'_>)> = found
        .into_iter()
        .take(limit)
        .map(|(i, j)| if owned[i] < owned[j] { (&owned[i], &owned[j]) } else { (&owned[j], &owned[i]) })
        .collect();
    pairs.sort_unstable();
    for (a, b) in pairs {
        let (a_core, a_name, b_core, b_name) = (a.0, a.1.to_string(), b.0, b.1.to_string());
        out.push(IrViolation::SharedOverlap { a_core, a: a_name, b_core, b: b_name });
    }
    if truncated {
        out.push(IrViolation::TooManyOverlaps { limit: MAX_OVERLAPS });
    }
    out
}

/// Index pairs `(i, j)`, `i < j`, of `owned` (core, name, lo, hi) whose
/// nonempty ranges share a byte, sorted: a scan by first byte, O(S log S + k).
/// The scan stops once it holds more than `limit` pairs (then returns those,
/// more than `limit`, so the caller can tell), so k is at most `limit + 1`.
fn shared_overlaps(owned: &[(u32, &str, u64, u64)], limit: usize) -> Vec<(usize, usize)> {
    let mut by_lo: Vec<usize> = (0..owned.len()).collect();
    by_lo.sort_unstable_by_key(|&i| (owned[i].2, i));
    let mut pairs = Vec::new();
    for (k, &i) in by_lo.iter().enumerate() {
        let (lo, hi) = (owned[i].2, owned[i].3);
        if lo >= hi {
            continue;
        }
        // Every later item starts at or after `lo`; a nonempty one shares a byte iff it starts before `hi`.
        for &j in by_lo[k + 1..].iter().take_while(|&&j| owned[j].2 < hi) {
            if owned[j].2 < owned[j].3 {
                pairs.push((i.min(j), i.max(j)));
                if pairs.len() > limit {
                    pairs.sort_unstable();
                    return pairs;
                }
            }
        }
    }
    pairs.sort_unstable();
    pairs
}

/// The CC region's size: the page-rounded CC sum (auto, -1) or the configured MiB (`Err`: a bad setting).
fn cc_limit(cfg: &IrCheckConfig, cc_sum: u64) -> Result<u64, ()> {
    match cfg.allreduce_buffer_size_mib {
        -1 => Ok(page_up(cc_sum)),
        mib if mib >= 0 => Ok((mib as u64).saturating_mul(1 << 20)),
        _ => Err(()),
    }
}

struct Region {
    core: u32,
    floor: u64,
    ceiling: u64,
    region_lo: u64,
}

/// Region bit of [`CcOperands::class`]: a private (Internal/Spill) location.
const PRIVATE: u8 = 1;
/// Region bit of [`CcOperands::class`]: an owned shared location.
const SHARED: u8 = 2;
/// Bit of [`CcOperands::class`]: an operand of a collective instruction.
const COLLECTIVE: u8 = 4;

/// One function's collective operands, found in one pass over its
/// instructions for both regions: per location index its region bit and
/// whether a collective touches it (one byte per location), and per region
/// the CC sum (each collective operand's page-rounded location size plus its
/// access bytes). O(i + L) for i instructions and L locations.
struct CcOperands {
    class: Vec<u8>,
    /// The CC sum of the private (`[0]`) and shared (`[1]`) region.
    sum: [u64; 2],
}

impl CcOperands {
    fn new(m: &Module, f: &crate::ir::Function, private: &[MemLocId], shared: &[Placed]) -> Self {
        let mut class = vec![0u8; m.memlocs.len()];
        let ids = private.iter().map(|&id| (id, PRIVATE)).chain(shared.iter().map(|p| (p.id, SHARED)));
        for (id, bit) in ids {
            if let Some(c) = class.get_mut(id.index()) {
                *c |= bit;
            }
        }
        let mut sum = [0u64; 2];
        for inst in f.insts.iter().filter(|i| i.collective) {
            for ap in inst.read_slice().iter().chain(inst.write_ref()) {
                let Some(c) = class.get_mut(ap.loc.index()) else { continue };
                for (k, bit) in [PRIVATE, SHARED].into_iter().enumerate() {
                    if *c & bit != 0 {
                        *c |= COLLECTIVE;
                        let l = m.loc(ap.loc);
                        let ap_bytes = ap.len.saturating_mul(u64::from(l.dtype.size()));
                        sum[k] = sum[k].saturating_add(page_up(l.byte_size())).saturating_add(ap_bytes);
                    }
                }
            }
        }
        CcOperands { class, sum }
    }

    /// True when a collective touches location `id` and it is in the region of `bit`.
    fn collective(&self, id: MemLocId, bit: u8) -> bool {
        self.class.get(id.index()).is_some_and(|&c| c & bit != 0 && c & COLLECTIVE != 0)
    }
}

/// Floor, region, CC, page and page-grid rules for the placed locations `ids` of one
/// region (`bit`: [`PRIVATE`] or [`SHARED`]): O(|ids|).
fn check_region(
    m: &Module,
    ids: &[Placed],
    cc: &CcOperands,
    bit: u8,
    r: &Region,
    cfg: &IrCheckConfig,
    out: &mut Vec<IrViolation>,
) {
    let core = r.core;
    let cc_sum = cc.sum[usize::from(bit == SHARED)];
    let Ok(limit) = cc_limit(cfg, cc_sum) else {
        out.push(IrViolation::BadConfig(format!("--allreduce-buffer-size {}", cfg.allreduce_buffer_size_mib)));
        return;
    };
    let cc_base = r.ceiling.saturating_sub(limit).max(r.floor);
    // The page grid: search's gaps start at the floor, at the CC base or at a placed
    // neighbour's end (a multiple of 4096 bytes past a gap start), and a sub-page bump
    // lands on a page: so a placement's offset within its page is 0, the floor's or the CC base's.
    let mut allowed = vec![0, r.floor % PAGE, cc_base % PAGE];
    allowed.sort_unstable();
    allowed.dedup();
    for &Placed { id, lo: address, size } in ids {
        let end = address.saturating_add(size);
        let name = || m.loc(id).name.to_string();
        if address >= r.region_lo && address < r.floor {
            out.push(IrViolation::BelowFloor { core, loc: name(), address, floor: r.floor });
        }
        if address < r.region_lo || end > r.ceiling {
            let (region_lo, region_hi) = (r.region_lo, r.ceiling);
            out.push(IrViolation::OutOfRegion { core, loc: name(), address, end, region_lo, region_hi });
        }
        if cc.collective(id, bit) {
            if address < cc_base {
                out.push(IrViolation::CollectiveOutsideCcRegion { core, loc: name(), address, cc_base });
            }
        } else if address < cc_base && end > cc_base {
            out.push(IrViolation::CrossesCcCeiling { core, loc: name(), address, end, cc_base });
        }
        if size > 0 && size <= PAGE && address / PAGE != (end - 1) / PAGE {
            out.push(IrViolation::PageStraddle { core, loc: name(), address, size });
        }
        if !allowed.contains(&(address % PAGE)) {
            out.push(IrViolation::Misaligned { core, loc: name(), address, allowed: allowed.clone() });
        }
    }
}

/// Every pair of `private` (ascending ids) sharing bytes while both live, in
/// pair order, up to `budget` (`None`: the listing already stopped); past it,
/// [`IrViolation::TooManyOverlaps`] and `budget` becomes `None`.
fn overlaps(
    m: &Module,
    core: u32,
    private: &[Placed],
    segs: &LiveSegments,
    budget: &mut Option<usize>,
    out: &mut Vec<IrViolation>,
) {
    let Some(limit) = *budget else { return };
    let ranges: Vec<(u64, u64)> = private.iter().map(|p| (p.lo, p.end())).collect();
    let lists: Vec<(usize, u64, u64)> =
        private.iter().enumerate().flat_map(|(i, p)| segs.get(p.id).iter().map(move |&(f, t)| (i, f, t))).collect();
    let found = super::sweep::overlapping_pairs(&ranges, lists, limit);
    let listed = found.pairs.len().min(limit);
    for &(i, j, time) in &found.pairs[..listed] {
        let ((a_lo, a_hi), (b_lo, b_hi)) = (ranges[i], ranges[j]);
        let (a, b) = (m.loc(private[i].id).name.to_string(), m.loc(private[j].id).name.to_string());
        out.push(IrViolation::Overlap { core, a, a_lo, a_hi, b, b_lo, b_hi, time });
    }
    *budget = if found.truncated {
        out.push(IrViolation::TooManyOverlaps { limit: MAX_OVERLAPS });
        None
    } else {
        Some(limit - listed)
    };
}

/// A location's (address, partition, bank): what a view must share with its target.
type Placement = (Option<u64>, u32, u32);

/// The views' target lookup, resolved up front for every view of every
/// module: the first module of each core, and in it the first location of the
/// name (as a linear search would find it). One pass over every module's
/// locations lists the views (each with its remote target's name and core);
/// their target names go into one table per target module ([`KeyMap`] of
/// inline [`NameKey`]s: a hit reads no other module's strings; looked up only,
/// never iterated), then each target module's locations are scanned once
/// against it: O(V + L) expected for V views and L locations, with no table of
/// all L names, and two reads of the locations in all.
struct Targets<'a> {
    modules: &'a [Module],
    /// Per view (module order, then location order): the view and its target's name and core.
    views: Vec<(&'a MemoryLocation, &'a RemoteLocalTarget)>,
    /// Per view: its target's (address, partition, bank), if found (read in
    /// the target scan, so checking a view reads no other module).
    found: Vec<Option<Placement>>,
    /// `first[i]..first[i + 1]` indexes `views` and `found` for module `i`'s views.
    first: Vec<usize>,
}

impl<'a> Targets<'a> {
    fn new(modules: &'a [Module]) -> Self {
        let mut by_core = BTreeMap::new();
        for (i, t) in modules.iter().enumerate() {
            by_core.entry(core_of(t, i)).or_insert(i);
        }
        // Every view, and per view its target's module.
        let mut views: Vec<(&'a MemoryLocation, &'a RemoteLocalTarget)> = Vec::new();
        let mut first = Vec::with_capacity(modules.len() + 1);
        for m in modules {
            first.push(views.len());
            views.extend(m.memlocs.iter().filter_map(|l| l.remote_local_target.as_ref().map(|r| (l, r))));
        }
        first.push(views.len());
        let target_of: Vec<Option<usize>> = views.iter().map(|(_, r)| by_core.get(&r.core).copied()).collect();
        // Sized first (a rehash would read every stored name again).
        let mut wanted = vec![0usize; modules.len()];
        for &ti in target_of.iter().flatten() {
            wanted[ti] += 1;
        }
        let mut tables: Vec<KeyMap<'a, usize>> =
            wanted.iter().map(|&n| KeyMap::with_capacity_and_hasher(n, Default::default())).collect();
        let mut slot_loc: Vec<Option<Placement>> = Vec::new();
        let view_slot: Vec<Option<usize>> = views
            .iter()
            .zip(&target_of)
            .map(|(&(_, r), target)| {
                target.map(|ti| {
                    *tables[ti].entry(NameKey::new(&r.name)).or_insert_with(|| {
                        slot_loc.push(None);
                        slot_loc.len() - 1
                    })
                })
            })
            .collect();
        for (t, table) in modules.iter().zip(&tables) {
            if table.is_empty() {
                continue;
            }
            for x in &t.memlocs {
                if let Some(&s) = table.get(&NameKey::new(&x.name))
                    && slot_loc[s].is_none()
                {
                    slot_loc[s] = Some((x.address, x.partition, x.bank));
                }
            }
        }
        let found = view_slot.into_iter().map(|s| s.and_then(|s| slot_loc[s])).collect();
        Targets { modules, views, found, first }
    }
}

/// Every view of module `index` equals its target's (address, partition,
/// bank). O(views of the module): it reads no other location.
fn check_views(targets: &Targets<'_>, index: usize, out: &mut Vec<IrViolation>) {
    let m = &targets.modules[index];
    let core = core_of(m, index);
    let (from, to) = (targets.first[index], targets.first[index + 1]);
    for (&(l, r), &target) in targets.views[from..to].iter().zip(&targets.found[from..to]) {
        let Some(t) = target else {
            let (view, target, target_core) = (l.name.to_string(), r.name.to_string(), r.core);
            out.push(IrViolation::MissingRemote { core, view, target, target_core });
            continue;
        };
        let (got, want) = ((l.address, l.partition, l.bank), t);
        if got != want {
            let (view, target, target_core) = (l.name.to_string(), r.name.to_string(), r.core);
            out.push(IrViolation::SyncMismatch { core, view, got, target, target_core, want });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::shared_overlaps;

    #[test]
    fn shared_overlaps_stop_past_the_limit() {
        // Four buffers on one range: six pairs; a limit of 2 stops at the third.
        let owned: Vec<(u32, &str, u64, u64)> = (0..4).map(|k| (0, "s", 0, 4096 + k)).collect();
        assert_eq!(shared_overlaps(&owned, usize::MAX).len(), 6);
        assert_eq!(shared_overlaps(&owned, 6).len(), 6, "at the limit: all, nothing past it");
        assert_eq!(shared_overlaps(&owned, 2).len(), 3, "one past the limit tells the caller it stopped");
        assert_eq!(shared_overlaps(&owned, 0).len(), 1);
    }

    #[test]
    fn shared_overlaps_finds_exactly_the_planted_pair_among_100k() {
        let names: Vec<String> = (0..100_000u64).map(|k| format!("s{k}")).collect();
        let mut owned: Vec<(u32, &str, u64, u64)> =
            (0..100_000u64).map(|k| ((k % 8) as u32, names[k as usize].as_str(), k * 4096, (k + 1) * 4096)).collect();
        assert_eq!(shared_overlaps(&owned, usize::MAX), vec![]);
        // s99990 moved one byte down into s99989's page.
        owned[99_990].2 -= 1;
        assert_eq!(shared_overlaps(&owned, usize::MAX), vec![(99_989, 99_990)]);
        // A wide buffer covering three pages meets all three, in index order.
        owned[5].3 = 8 * 4096;
        assert_eq!(shared_overlaps(&owned, usize::MAX), vec![(5, 6), (5, 7), (99_989, 99_990)]);
        // Empty ranges meet nothing.
        owned[7] = (0, "empty", 7 * 4096, 7 * 4096);
        assert_eq!(shared_overlaps(&owned, usize::MAX), vec![(5, 6), (99_989, 99_990)]);
    }
}
