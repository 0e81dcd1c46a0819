//! The independent checker of allocated per-core modules (DESIGN.md
//! invariants 1 and 3). It shares no code with the interval tree, the driver's
//! liveness, `search`, the region computation or the driver: it walks the
//! blocks itself ([`live`]), recomputes page rounding, the HWM floor, the
//! CC-buffer ceiling and the slabs from the IR and three numbers
//! ([`IrCheckConfig`]), and scans every pair by brute force.
//!
//! Rules, per module (per-core, in core order):
//! - every DRAM Internal/Spill/Shared location a function touches has an address;
//! - private (Internal/Spill) placements: at or above the floor (the end of the
//!   page-rounded Input/Output/Weight footprint), below the region ceiling,
//!   collective operands inside the CC region `[max(floor, ceiling - ccLimit),
//!   ceiling)`, no other location straddling its base, no sub-page location
//!   crossing a 4 KiB page, and no two locations with a common live position
//!   sharing a byte of `[address, address + aligned size)`;
//! - owned shared locations (no remote target): inside their core's slab
//!   `[core * coreCap, (core + 1) * coreCap)`, with the same CC and page rules
//!   relative to the slab, and marked `is_shared_post_dram_alloc` (views too);
//! - across modules: no two owned shared locations share a byte (shared tensors
//!   never reuse addresses), and every view equals its target's (address,
//!   partition, bank).
//!
//! Assumption: no Internal/Spill/Shared location was addressed before
//! allocation (true of generated and split programs); a hand-placed one is
//! checked like an allocated one. It returns every violation.

mod live;

use std::collections::BTreeSet;

use crate::ir::{MemLocId, MemType, MemoryLocation, Module, Usage};
use live::{first_common, live_segments};

/// The three numbers the checker needs (from the pipeline's options).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IrCheckConfig {
    /// The private region ceiling in bytes.
    pub region_ceiling: u64,
    /// `--allreduce-buffer-size` in MiB (-1 = auto).
    pub allreduce_buffer_size_mib: i64,
    /// `coreCap`: MiB per core slab of the shared region.
    pub shared_core_cap_mib: u64,
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

/// Checks N allocated, synced per-core modules (core order); returns every violation.
pub fn check_modules(modules: &[Module], cfg: &IrCheckConfig) -> Vec<IrViolation> {
    let mut out = Vec::new();
    let Some(cap) = cfg.shared_core_cap_mib.checked_mul(1 << 20) else {
        out.push(IrViolation::BadConfig(format!("coreCap {} MiB overflows", cfg.shared_core_cap_mib)));
        return out;
    };
    // Every owned shared buffer of every core: (core, name, lo, hi).
    let mut owned: Vec<(u32, String, u64, u64)> = Vec::new();
    for (index, m) in modules.iter().enumerate() {
        let core = core_of(m, index);
        let floor = m
            .memlocs
            .iter()
            .filter(|l| is_dram(l, &[Usage::Input, Usage::Output, Usage::Weight]))
            .filter_map(|l| l.address.map(|a| a.saturating_add(page_up(l.byte_size()))))
            .max()
            .unwrap_or(0);
        let slab_lo = cap.saturating_mul(u64::from(core));
        let Some(slab_hi) = slab_lo.checked_add(cap) else {
            out.push(IrViolation::BadConfig(format!("slab of core {core} overflows")));
            continue;
        };
        for f in &m.functions {
            let segs = live_segments(m, f);
            let touched: Vec<MemLocId> = segs.keys().copied().collect();
            let mut private = Vec::new();
            let mut shared = Vec::new();
            for &id in &touched {
                let Some(l) = m.memlocs.get(id.index()) else { continue };
                if is_dram(l, &[Usage::Internal, Usage::Spill, Usage::Shared]) && l.address.is_none() {
                    out.push(IrViolation::Unaddressed { core, loc: l.name.clone() });
                    continue;
                }
                if is_dram(l, &[Usage::Shared]) {
                    if !l.is_shared_post_dram_alloc {
                        out.push(IrViolation::NotMarked { core, loc: l.name.clone() });
                    }
                    if l.remote_local_target.is_none() {
                        shared.push(id);
                    }
                } else if is_dram(l, &[Usage::Internal, Usage::Spill]) {
                    private.push(id);
                }
            }
            // A compact run records the window it placed under; it must lie inside the configured one.
            let ceiling = match f.attrs.dram_region_ceiling {
                Some(c) if c > cfg.region_ceiling => {
                    out.push(IrViolation::BadConfig(format!(
                        "core {core}: recorded dram_region_ceiling {c:#x} is above the window {:#x}",
                        cfg.region_ceiling
                    )));
                    cfg.region_ceiling
                }
                Some(c) => c,
                None => cfg.region_ceiling,
            };
            let region = Region { core, floor, ceiling, region_lo: 0 };
            check_region(m, f, &private, &region, cfg, &mut out);
            let region = Region { core, floor: slab_lo, ceiling: slab_hi, region_lo: slab_lo };
            check_region(m, f, &shared, &region, cfg, &mut out);
            for (&a, i) in private.iter().zip(0..) {
                for &b in &private[i + 1..] {
                    overlap(m, core, a, b, &segs[&a], &segs[&b], &mut out);
                }
            }
            for id in shared {
                let l = m.loc(id);
                let lo = l.address.unwrap_or(0);
                owned.push((core, l.name.clone(), lo, lo.saturating_add(page_up(l.byte_size()))));
            }
        }
        check_views(modules, index, &mut out);
    }
    owned.sort();
    owned.dedup();
    for (i, a) in owned.iter().enumerate() {
        for b in &owned[i + 1..] {
            if a.2 < b.3 && b.2 < a.3 {
                let (a_core, a_name, b_core, b_name) = (a.0, a.1.clone(), b.0, b.1.clone());
                out.push(IrViolation::SharedOverlap { a_core, a: a_name, b_core, b: b_name });
            }
        }
    }
    out
}

struct Region {
    core: u32,
    floor: u64,
    ceiling: u64,
    region_lo: u64,
}

/// Floor, region, CC and page rules for the placed locations `ids` of one region.
fn check_region(
    m: &Module,
    f: &crate::ir::Function,
    ids: &[MemLocId],
    r: &Region,
    cfg: &IrCheckConfig,
    out: &mut Vec<IrViolation>,
) {
    let core = r.core;
    let mine: BTreeSet<MemLocId> = ids.iter().copied().collect();
    let mut collective = BTreeSet::new();
    let mut cc_sum: u64 = 0;
    for inst in f.insts.iter().filter(|i| i.collective) {
        for ap in inst.reads().into_iter().chain(inst.write()) {
            if mine.contains(&ap.loc) {
                let l = m.loc(ap.loc);
                collective.insert(ap.loc);
                let ap_bytes = ap.len.saturating_mul(u64::from(l.dtype.size()));
                cc_sum = cc_sum.saturating_add(page_up(l.byte_size())).saturating_add(ap_bytes);
            }
        }
    }
    let limit = match cfg.allreduce_buffer_size_mib {
        -1 => page_up(cc_sum),
        mib if mib >= 0 => (mib as u64).saturating_mul(1 << 20),
        mib => {
            out.push(IrViolation::BadConfig(format!("--allreduce-buffer-size {mib}")));
            return;
        }
    };
    let cc_base = r.ceiling.saturating_sub(limit).max(r.floor);
    for &id in ids {
        let l = m.loc(id);
        let address = l.address.unwrap_or(0);
        let size = page_up(l.byte_size());
        let end = address.saturating_add(size);
        let name = || l.name.clone();
        if address >= r.region_lo && address < r.floor {
            out.push(IrViolation::BelowFloor { core, loc: name(), address, floor: r.floor });
        }
        if address < r.region_lo || end > r.ceiling {
            let (region_lo, region_hi) = (r.region_lo, r.ceiling);
            out.push(IrViolation::OutOfRegion { core, loc: name(), address, end, region_lo, region_hi });
        }
        if collective.contains(&id) {
            if address < cc_base {
                out.push(IrViolation::CollectiveOutsideCcRegion { core, loc: name(), address, cc_base });
            }
        } else if address < cc_base && end > cc_base {
            out.push(IrViolation::CrossesCcCeiling { core, loc: name(), address, end, cc_base });
        }
        if size > 0 && size <= PAGE && address / PAGE != (end - 1) / PAGE {
            out.push(IrViolation::PageStraddle { core, loc: name(), address, size });
        }
    }
}

fn overlap(
    m: &Module,
    core: u32,
    a: MemLocId,
    b: MemLocId,
    sa: &[(u64, u64)],
    sb: &[(u64, u64)],
    out: &mut Vec<IrViolation>,
) {
    let (la, lb) = (m.loc(a), m.loc(b));
    let a_lo = la.address.unwrap_or(0);
    let b_lo = lb.address.unwrap_or(0);
    let a_hi = a_lo.saturating_add(page_up(la.byte_size()));
    let b_hi = b_lo.saturating_add(page_up(lb.byte_size()));
    if a_lo >= b_hi || b_lo >= a_hi {
        return;
    }
    if let Some(time) = first_common(sa, sb) {
        let (a, b) = (la.name.clone(), lb.name.clone());
        out.push(IrViolation::Overlap { core, a, a_lo, a_hi, b, b_lo, b_hi, time });
    }
}

/// Every view of module `index` equals its target's (address, partition, bank).
fn check_views(modules: &[Module], index: usize, out: &mut Vec<IrViolation>) {
    let m = &modules[index];
    let core = core_of(m, index);
    for l in &m.memlocs {
        let Some(r) = &l.remote_local_target else { continue };
        let target_module = modules.iter().enumerate().find(|(i, t)| core_of(t, *i) == r.core).map(|(_, t)| t);
        let target = target_module.and_then(|t| t.memlocs.iter().find(|x| x.name == r.name));
        let Some(t) = target else {
            let (view, target, target_core) = (l.name.clone(), r.name.clone(), r.core);
            out.push(IrViolation::MissingRemote { core, view, target, target_core });
            continue;
        };
        let got = (l.address, l.partition, l.bank);
        let want = (t.address, t.partition, t.bank);
        if got != want {
            let (view, target, target_core) = (l.name.clone(), r.name.clone(), r.core);
            out.push(IrViolation::SyncMismatch { core, view, got, target, target_core, want });
        }
    }
}
