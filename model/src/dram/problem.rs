//! The abstract allocation problem the DRAM allocator core solves (seed 004,
//! "The allocate Driver", "Page / GCA Alignment", "find_start_addr", "CC-Buffer
//! Auto-Sizing").
//!
//! A [`Problem`] is what `renumber_locations` + `build_interval_tree` see: one
//! [`Location`] per Info record, each with a byte size, the alignment `A` from
//! [`get_alignment_size`], one or more inclusive `[def, use]` live intervals, and
//! an optional pre-placed (pinned) address. The IR driver builds it from a
//! `bir::Function`; the MiniMalloc CSV reader builds it from a file. The knobs
//! are in [`super::config`].

use super::error::AllocError;

/// A flat instruction index (seed: `inst[+76]`), the time coordinate of liveness.
pub type Time = u64;

/// The seed's DRAM page: `getAlignmentSize` returns a hard 0x1000 for DRAM.
pub const DRAM_PAGE: u64 = 4096;

/// `--dram-page-size` default (seed QUIRK: it is the SBUF GCA granule).
pub const DEFAULT_DRAM_PAGE_SIZE: u64 = 512;

/// One inclusive live interval `[def, last_use]` (seed STEP D: `lo = def flat#`,
/// `hi = use flat#`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LiveInterval {
    /// Flat index of the defining instruction (the interval's `lo`).
    pub def: Time,
    /// Flat index of the using instruction (the interval's `hi`, inclusive).
    pub last_use: Time,
}

impl LiveInterval {
    /// The interval `[def, last_use]`.
    pub fn new(def: Time, last_use: Time) -> Self {
        LiveInterval { def, last_use }
    }
}

/// A memory type, the switch in `getAlignmentSize` (seed, "Page / GCA Alignment").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryType {
    /// DRAM (`memType == 8`): alignment is a hard 4096.
    Dram,
    /// SBUF or PSUM (`memType == 0x10`): the access-pattern GCA path.
    SbufPsum,
    /// Any other memory type: alignment 1.
    Other,
}

/// The pass options `getAlignmentSize` receives (only the knob the seed names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PassOptions {
    /// `--dram-page-size` (default 512): despite its name, the SBUF GCA granule.
    pub dram_page_size: u64,
}

impl Default for PassOptions {
    fn default() -> Self {
        PassOptions { dram_page_size: DEFAULT_DRAM_PAGE_SIZE }
    }
}

/// `getAlignmentSize(loc, opts)`: 4096 for DRAM whatever `--dram-page-size` says.
///
/// Seed QUIRK ("Page / GCA Alignment"): the DRAM arm is an unconditional
/// `mov $0x1000`; `opts` is ignored for DRAM. The SBUF/PSUM arm's access-pattern
/// GCA reduction is out of scope here (no DRAM location takes it); we return the
/// granule the seed says it is thresholded by, `opts.dram_page_size`.
pub fn get_alignment_size(mem: MemoryType, opts: &PassOptions) -> u64 {
    match mem {
        MemoryType::Dram => DRAM_PAGE,
        MemoryType::SbufPsum => opts.dram_page_size.max(1),
        MemoryType::Other => 1,
    }
}

/// The seed's `roundUp(size, A)` = `size + A - size % A` when `size % A != 0`.
///
/// `None` when `a == 0` or the result overflows `u64`.
pub fn round_up(size: u64, a: u64) -> Option<u64> {
    if a == 0 {
        return None;
    }
    match size % a {
        0 => Some(size),
        r => size.checked_add(a - r),
    }
}

/// One DRAM location (an Info record of `renumber_locations`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The location's name (used in errors and reports).
    pub name: String,
    /// `elemCount * elemSize`, in bytes.
    pub byte_size: u64,
    /// `A = getAlignmentSize(loc)`: the size is rounded up to a multiple of it.
    pub alignment: u64,
    /// The `[def, use]` intervals; a location used across blocks has several.
    pub intervals: Vec<LiveInterval>,
    /// A pre-placed address (inputs, outputs, weights, MiniMalloc `offset`): pinned.
    pub fixed_address: Option<u64>,
    /// The chosen address must be a multiple of this (MiniMalloc `alignment`; 1 = any).
    pub address_multiple: u64,
}

impl Location {
    /// A movable location with one alignment, its intervals and no address constraint.
    pub fn new(name: impl Into<String>, byte_size: u64, alignment: u64, intervals: Vec<LiveInterval>) -> Self {
        Location { name: name.into(), byte_size, alignment, intervals, fixed_address: None, address_multiple: 1 }
    }

    /// The same location, pinned at `address`.
    pub fn pinned_at(mut self, address: u64) -> Self {
        self.fixed_address = Some(address);
        self
    }

    /// `alignedSize = roundUp(byte_size, A)` (seed: computed at `renumber_locations`).
    pub fn aligned_size(&self) -> Option<u64> {
        round_up(self.byte_size, self.alignment)
    }
}

/// One operand of a collective op: the location it reads and its access-pattern footprint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CcOperand {
    /// Index of the operand's location in [`Problem::locations`].
    pub location: usize,
    /// `apSize(op)`: the access pattern's footprint in bytes.
    pub ap_bytes: u64,
}

/// The whole problem: locations and the collective ops' operands.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Problem {
    /// The Info records, indexed densely (`renumber_locations`).
    pub locations: Vec<Location>,
    /// Every operand of every collective op, in instruction order.
    pub cc_operands: Vec<CcOperand>,
}

impl Problem {
    /// Whether location `i` is a collective buffer (an operand of some collective op).
    pub fn collective_flags(&self) -> Vec<bool> {
        let mut flags = vec![false; self.locations.len()];
        for op in &self.cc_operands {
            if let Some(f) = flags.get_mut(op.location) {
                *f = true;
            }
        }
        flags
    }

    /// The HWM of the pinned locations' footprint (see [`high_water_mark`]).
    pub fn preplaced_hwm(&self) -> Result<u64, AllocError> {
        high_water_mark(
            self.locations
                .iter()
                .filter_map(|l| l.fixed_address.map(|a| (l.name.as_str(), a, l.byte_size, l.alignment))),
        )
    }

    /// Max over time of the summed aligned sizes of the live locations (the lower bound).
    pub fn lower_bound(&self) -> Result<u64, AllocError> {
        let mut events: Vec<(Time, bool, u64)> = Vec::new(); // (time, is_end, size)
        for l in &self.locations {
            let size = l.aligned_size().ok_or_else(|| AllocError::SizeOverflow { name: l.name.clone() })?;
            let mut iv = std::borrow::Cow::Borrowed(&l.intervals[..]);
            if !iv.is_sorted() {
                iv.to_mut().sort_unstable();
            }
            let mut merged: Vec<LiveInterval> = Vec::with_capacity(iv.len());
            for &i in iv.iter() {
                match merged.last_mut() {
                    Some(m) if i.def <= m.last_use.saturating_add(1) => m.last_use = m.last_use.max(i.last_use),
                    _ => merged.push(i),
                }
            }
            for m in merged {
                events.push((m.def, false, size));
                if let Some(end) = m.last_use.checked_add(1) {
                    events.push((end, true, size));
                }
            }
        }
        events.sort_unstable_by_key(|&(t, is_end, _)| (t, !is_end));
        let (mut live, mut best) = (0u64, 0u64);
        for (_, is_end, size) in events {
            if is_end {
                live -= size;
            } else {
                live = live.saturating_add(size);
                best = best.max(live);
            }
        }
        Ok(best)
    }
}

/// The HWM over pre-placed footprints `(name, address, byte_size, A)`.
///
/// Seed ("MULTI-CORE PRE-PASS"): `size = roundUp(size, A)`,
/// `hwm = max(hwm, addr + size - 1)`. A zero-size footprint is skipped (the
/// seed's `addr + size - 1` would underflow at address 0; it occupies nothing).
pub fn high_water_mark<'a>(footprints: impl IntoIterator<Item = (&'a str, u64, u64, u64)>) -> Result<u64, AllocError> {
    let mut hwm = 0u64;
    for (name, addr, size, a) in footprints {
        let aligned = round_up(size, a).ok_or_else(|| AllocError::SizeOverflow { name: name.to_string() })?;
        if aligned == 0 {
            continue;
        }
        let last =
            addr.checked_add(aligned - 1).ok_or_else(|| AllocError::PinnedOverflow { name: name.to_string() })?;
        hwm = hwm.max(last);
    }
    Ok(hwm)
}

/// `find_start_addr`: 0 when the HWM is 0, else HWM + 1 (seed, "the HWM floor").
///
/// Saturates at `u64::MAX` (then nothing fits and allocation reports it).
pub fn find_start_addr(hwm: u64) -> u64 {
    if hwm == 0 {
        return 0;
    }
    crate::marks::hit("dram.hwm_floor");
    hwm.saturating_add(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::marks::Recorder;

    #[test]
    fn dram_alignment_ignores_dram_page_size() {
        for dps in [1, 512, 4096, 65536] {
            let o = PassOptions { dram_page_size: dps };
            assert_eq!(get_alignment_size(MemoryType::Dram, &o), 4096);
            assert_eq!(get_alignment_size(MemoryType::SbufPsum, &o), dps);
        }
        assert_eq!(get_alignment_size(MemoryType::Other, &PassOptions::default()), 1);
    }

    #[test]
    fn round_up_matches_the_seed_formula() {
        assert_eq!(round_up(0, 4096), Some(0));
        assert_eq!(round_up(1, 4096), Some(4096));
        assert_eq!(round_up(4096, 4096), Some(4096));
        assert_eq!(round_up(4097, 4096), Some(8192));
        assert_eq!(round_up(5, 0), None);
        assert_eq!(round_up(u64::MAX, 4096), None);
    }

    #[test]
    fn find_start_addr_is_hwm_plus_one_or_zero() {
        let r = Recorder::start();
        assert_eq!(find_start_addr(0), 0);
        assert_eq!(r.hits("dram.hwm_floor"), 0);
        assert_eq!(find_start_addr(8191), 8192);
        assert_eq!(r.hits("dram.hwm_floor"), 1);
        assert_eq!(find_start_addr(u64::MAX), u64::MAX);
    }

    #[test]
    fn hwm_rounds_pre_placed_sizes_to_the_page() {
        let h = high_water_mark([("a", 0, 100, 4096), ("b", 8192, 4096, 4096), ("z", 0, 0, 4096)]);
        assert_eq!(h, Ok(12287));
        assert_eq!(find_start_addr(12287), 12288);
        assert!(matches!(high_water_mark([("x", u64::MAX - 10, 100, 1)]), Err(AllocError::PinnedOverflow { .. })));
    }

    #[test]
    fn lower_bound_counts_live_bytes_once_per_location() {
        let p = Problem {
            locations: vec![
                Location::new("a", 4, 1, vec![LiveInterval::new(0, 2), LiveInterval::new(1, 5)]),
                Location::new("b", 4, 1, vec![LiveInterval::new(3, 9)]),
                Location::new("c", 4, 1, vec![LiveInterval::new(6, 9)]),
            ],
            cc_operands: vec![],
        };
        assert_eq!(p.lower_bound(), Ok(8));
    }
}
