//! The allocator's knobs and the region geometry (seed 004, "select and
//! select_impl", "CC-Buffer Auto-Sizing", "find_start_addr").

use super::error::AllocError;
use super::problem::{DRAM_PAGE, Problem, find_start_addr, round_up};

/// `--allreduce-buffer-size` default, in MiB (seed, "CC-Buffer Auto-Sizing").
pub const DEFAULT_ALLREDUCE_BUFFER_SIZE_MIB: i64 = 500;

/// Region ceiling used by [`AllocConfig::dram`]: a 16 GiB per-core HBM window.
///
/// The seed defers the window to its "dram-hbm-geometry" page, which we do not
/// have; 16 GiB is a documented stand-in that the IR driver may override.
pub const DEFAULT_DRAM_REGION_CEILING: u64 = 16 << 30;

/// The assignment order select_impl follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// The seed's simplify elimination stack with first-fit `search`.
    Seed,
    /// Decreasing aligned size with a best-fit gap choice (the XLA/TFLite heuristic).
    Size,
}

/// The allocator's knobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllocConfig {
    /// `search`'s `align` argument: the page of the straddle rule (4096 for DRAM).
    pub page: u64,
    /// The HWM of the pre-placed footprint (`this[123]`): reserved space and floor.
    pub hwm: u64,
    /// The region ceiling (`this[296]`, exclusive): no byte may be placed at or above it.
    pub region_ceiling: u64,
    /// `--allreduce-buffer-size` in MiB; -1 = auto-size by `cc_buffer_size`.
    pub allreduce_buffer_size_mib: i64,
    /// The assignment order.
    pub order: Order,
}

impl AllocConfig {
    /// The DRAM configuration: 4 KiB page, default CC buffer, the given HWM.
    pub fn dram(hwm: u64) -> Self {
        AllocConfig {
            page: DRAM_PAGE,
            hwm,
            region_ceiling: DEFAULT_DRAM_REGION_CEILING,
            allreduce_buffer_size_mib: DEFAULT_ALLREDUCE_BUFFER_SIZE_MIB,
            order: Order::Seed,
        }
    }

    /// A MiniMalloc-style configuration: page `align`, no HWM, no CC region.
    pub fn minimalloc(align: u64, ceiling: u64, order: Order) -> Self {
        AllocConfig { page: align, hwm: 0, region_ceiling: ceiling, allreduce_buffer_size_mib: 0, order }
    }
}

/// `cc_buffer_size`: sum over collective operands of the location's aligned size
/// plus the operand's access-pattern footprint (seed, "CC-Buffer Auto-Sizing").
pub fn cc_buffer_size(problem: &Problem) -> Result<u64, AllocError> {
    let mut total = 0u64;
    for (index, op) in problem.cc_operands.iter().enumerate() {
        let loc =
            problem.locations.get(op.location).ok_or(AllocError::BadCcOperand { index, location: op.location })?;
        let size = loc.aligned_size().ok_or_else(|| AllocError::SizeOverflow { name: loc.name.clone() })?;
        total = total.checked_add(size).and_then(|t| t.checked_add(op.ap_bytes)).ok_or(AllocError::CcSizeOverflow)?;
    }
    Ok(total)
}

/// The address regions select_impl searches (our layout choice; see [`regions`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Regions {
    /// `find_start_addr()`: the floor of every movable placement.
    pub start: u64,
    /// The CC-buffer ceiling: the general region is `[start, cc_base)`.
    pub cc_base: u64,
    /// The region ceiling: the CC-buffer region is `[cc_base, ceiling)`.
    pub ceiling: u64,
    /// The CC-buffer limit in bytes (`--allreduce-buffer-size` or the auto size).
    pub cc_limit: u64,
}

/// The region geometry (our concrete choice for the seed's "CC-buffer ceiling").
///
/// Seed ("select and select_impl", "CC-Buffer Auto-Sizing") says only that
/// select_impl "sets the CC-buffer ceiling", that collective buffers live in a
/// reserved region of `ccLimit` bytes, and that a placement which would exceed
/// the CC ceiling is retried in the CC region. We lay it out as:
///
/// ```text
///  0 ... pre-placed ... start | general region ........ | CC region (ccLimit) | ceiling
///                      hwm+1                       cc_base = ceiling - ccLimit
/// ```
///
/// `ccLimit = mib << 20`, or with `-1` the page-rounded (4 KiB, as the seed's
/// `roundUpPage`) [`cc_buffer_size`]. The CC region never reaches below
/// `start` (`cc_base = max(start, ceiling - ccLimit)`). Collective buffers are
/// searched only in the CC region; every other location first in the general
/// region, and only if it does not fit below the CC ceiling, in the CC region
/// (the retry, mark `dram.cc_region_retry`).
pub fn regions(config: &AllocConfig, problem: &Problem) -> Result<Regions, AllocError> {
    let mib = config.allreduce_buffer_size_mib;
    let cc_limit = match mib {
        -1 => round_up(cc_buffer_size(problem)?, DRAM_PAGE).ok_or(AllocError::CcSizeOverflow)?,
        m if m >= 0 => u64::try_from(m)
            .ok()
            .and_then(|m| m.checked_mul(1 << 20))
            .ok_or(AllocError::BadAllreduceBufferSize { mib })?,
        _ => return Err(AllocError::BadAllreduceBufferSize { mib }),
    };
    let start = find_start_addr(config.hwm);
    let ceiling = config.region_ceiling;
    let cc_base = ceiling.saturating_sub(cc_limit).max(start);
    Ok(Regions { start, cc_base, ceiling, cc_limit })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dram::problem::{CcOperand, LiveInterval, Location};

    #[test]
    fn cc_region_geometry_and_auto_size() {
        let iv = vec![LiveInterval::new(0, 1)];
        let p = Problem {
            locations: vec![Location::new("c", 5000, 4096, iv.clone()), Location::new("d", 10, 1, iv)],
            cc_operands: vec![CcOperand { location: 0, ap_bytes: 100 }, CcOperand { location: 1, ap_bytes: 0 }],
        };
        assert_eq!(cc_buffer_size(&p), Ok(8192 + 100 + 10));
        let mut c = AllocConfig::dram(0);
        c.allreduce_buffer_size_mib = -1;
        let r = regions(&c, &p).expect("regions");
        assert_eq!(r.cc_limit, 12288);
        assert_eq!(r.cc_base, DEFAULT_DRAM_REGION_CEILING - 12288);
        c.allreduce_buffer_size_mib = 500;
        assert_eq!(regions(&c, &p).expect("regions").cc_limit, 500 << 20);
        c.allreduce_buffer_size_mib = -2;
        assert_eq!(regions(&c, &p), Err(AllocError::BadAllreduceBufferSize { mib: -2 }));
        // A CC region larger than the room above the floor is clamped to the floor.
        let c = AllocConfig { region_ceiling: 1 << 20, ..AllocConfig::dram(4095) };
        let r = regions(&c, &p).expect("regions");
        assert_eq!((r.start, r.cc_base), (4096, 4096));
    }
}
