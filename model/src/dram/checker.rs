//! The independent checker of an allocation of an abstract [`Problem`]
//! (DESIGN.md invariant 3). It shares no code with the interval tree, the
//! region computation or `search`: it recomputes the aligned sizes, the HWM
//! floor, the CC-buffer ceiling and interval intersection itself, from the
//! problem and the config alone; overlaps come from the checkers' own sweep
//! ([`super::sweep`]).
//!
//! Cost: O(n) for the per-location rules, O((n + s + k) log(n + s)) for the
//! overlap sweep over s live intervals with k overlapping pairs (see
//! [`super::sweep`]), k at most [`MAX_OVERLAPS`] (past it the sweep stops and
//! [`Violation::TooManyOverlaps`] says so); memory O(n + s + k).
//!
//! The page rule it checks is the seed's: a location of at most one page must
//! not straddle a page boundary; a larger one takes the raw gap start, which
//! leaves nothing to check.
//!
//! It returns every violation, never stopping at the first. [`Violation`] is
//! `#[non_exhaustive]`: the IR-level checker (instructions -> intervals, shared
//! location equalization) adds its own variants.

use super::config::AllocConfig;
use super::problem::Problem;

/// The most overlapping pairs [`check`] lists; past it, [`Violation::TooManyOverlaps`].
pub const MAX_OVERLAPS: usize = 10_000;

/// One broken rule. Locations are named by index and name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Violation {
    /// The placement has a different number of addresses than the problem has locations.
    #[error("{got} addresses for {expected} locations")]
    AddressCount {
        /// Number of locations.
        expected: usize,
        /// Number of addresses.
        got: usize,
    },
    /// A size, end address or the config is not representable in 64 bits.
    #[error("location {index} `{name}`: size or end address not representable")]
    Unrepresentable {
        /// Location index.
        index: usize,
        /// Location name.
        name: String,
    },
    /// The config's `--allreduce-buffer-size` is invalid, so the CC ceiling is unknown.
    #[error("bad --allreduce-buffer-size {mib}")]
    BadCcConfig {
        /// The value.
        mib: i64,
    },
    /// A collective operand names a location the problem does not have.
    #[error("collective operand {index} names location {location}; the problem has {locations}")]
    DanglingCcOperand {
        /// The operand's index.
        index: usize,
        /// The location it names.
        location: usize,
        /// How many locations the problem has.
        locations: usize,
    },
    /// A pinned location was moved.
    #[error("pinned location {index} `{name}` moved from {expected} to {got}")]
    PinnedMoved {
        /// Location index.
        index: usize,
        /// Location name.
        name: String,
        /// Its fixed address.
        expected: u64,
        /// The address it got.
        got: u64,
    },
    /// A movable location below the HWM floor.
    #[error("location {index} `{name}` at {address} is below the HWM floor {floor}")]
    BelowFloor {
        /// Location index.
        index: usize,
        /// Location name.
        name: String,
        /// Its address.
        address: u64,
        /// `find_start_addr()`.
        floor: u64,
    },
    /// A location ending above the region ceiling.
    #[error("location {index} `{name}` ends at {end}, above the region ceiling {ceiling}")]
    OutOfRegion {
        /// Location index.
        index: usize,
        /// Location name.
        name: String,
        /// One past its last byte.
        end: u64,
        /// The region ceiling.
        ceiling: u64,
    },
    /// A non-collective location straddling the CC-buffer ceiling.
    #[error("location {index} `{name}` [{address}, {end}) crosses the CC-buffer ceiling {cc_base}")]
    CrossesCcCeiling {
        /// Location index.
        index: usize,
        /// Location name.
        name: String,
        /// Its address.
        address: u64,
        /// One past its last byte.
        end: u64,
        /// The CC-buffer ceiling (base of the CC region).
        cc_base: u64,
    },
    /// A collective buffer below the CC region.
    #[error("collective buffer {index} `{name}` at {address} is below the CC region base {cc_base}")]
    CollectiveOutsideCcRegion {
        /// Location index.
        index: usize,
        /// Location name.
        name: String,
        /// Its address.
        address: u64,
        /// The CC region's base.
        cc_base: u64,
    },
    /// A sub-page location crossing a page boundary (seed's page-straddle rule).
    #[error("location {index} `{name}` [{address}, +{size}) straddles a {page}-byte page boundary")]
    PageStraddle {
        /// Location index.
        index: usize,
        /// Location name.
        name: String,
        /// Its address.
        address: u64,
        /// Its aligned size.
        size: u64,
        /// The page.
        page: u64,
    },
    /// An address that is not a multiple of the location's required multiple.
    #[error("location {index} `{name}` at {address} is not a multiple of {multiple}")]
    Misaligned {
        /// Location index.
        index: usize,
        /// Location name.
        name: String,
        /// Its address.
        address: u64,
        /// The required multiple.
        multiple: u64,
    },
    /// Two locations live at the same time with intersecting byte ranges.
    #[error("`{a_name}` [{a_lo}, {a_hi}) and `{b_name}` [{b_lo}, {b_hi}) overlap while both live at time {time}")]
    Overlap {
        /// First location's index.
        a: usize,
        /// First location's name.
        a_name: String,
        /// Its first byte.
        a_lo: u64,
        /// One past its last byte.
        a_hi: u64,
        /// Second location's index.
        b: usize,
        /// Second location's name.
        b_name: String,
        /// Its first byte.
        b_lo: u64,
        /// One past its last byte.
        b_hi: u64,
        /// A time both are live.
        time: u64,
    },
    /// More than `limit` overlapping pairs: the first `limit` are listed, the sweep stopped.
    #[error("more than {limit} overlapping pairs; the sweep stopped after listing {limit}")]
    TooManyOverlaps {
        /// [`MAX_OVERLAPS`].
        limit: usize,
    },
}

/// Checks `addresses` (one per location) against every rule; returns every violation.
pub fn check(problem: &Problem, config: &AllocConfig, addresses: &[u64]) -> Vec<Violation> {
    let locs = &problem.locations;
    let mut out = Vec::new();
    if addresses.len() != locs.len() {
        out.push(Violation::AddressCount { expected: locs.len(), got: addresses.len() });
        return out;
    }
    // Independent recomputation of sizes, floor and CC ceiling.
    let size_of = |i: usize| -> Option<u64> {
        let l = &locs[i];
        let a = l.alignment;
        if a == 0 {
            return None;
        }
        l.byte_size.div_ceil(a).checked_mul(a)
    };
    let floor = if config.hwm == 0 { 0 } else { config.hwm.saturating_add(1) };
    let mut collective = vec![false; locs.len()];
    let mut cc_total: Option<u64> = Some(0);
    for (index, op) in problem.cc_operands.iter().enumerate() {
        if op.location < locs.len() {
            collective[op.location] = true;
            cc_total = cc_total.and_then(|t| t.checked_add(size_of(op.location)?)?.checked_add(op.ap_bytes));
        } else {
            out.push(Violation::DanglingCcOperand { index, location: op.location, locations: locs.len() });
        }
    }
    let mib = config.allreduce_buffer_size_mib;
    let cc_limit = match mib {
        -1 => cc_total.and_then(|t| t.div_ceil(4096).checked_mul(4096)),
        m if m >= 0 => (m as u64).checked_mul(1 << 20),
        _ => None,
    };
    let ceiling = config.region_ceiling;
    let cc_base = match cc_limit {
        Some(limit) => Some(floor.max(ceiling.saturating_sub(limit))),
        None => {
            out.push(Violation::BadCcConfig { mib });
            None
        }
    };
    let page = config.page;
    let mut ranges: Vec<Option<(u64, u64)>> = Vec::with_capacity(locs.len());
    for (index, l) in locs.iter().enumerate() {
        let address = addresses[index];
        let name = || l.name.clone();
        let Some(size) = size_of(index) else {
            out.push(Violation::Unrepresentable { index, name: name() });
            ranges.push(None);
            continue;
        };
        let Some(end) = address.checked_add(size) else {
            out.push(Violation::Unrepresentable { index, name: name() });
            ranges.push(None);
            continue;
        };
        ranges.push(Some((address, end)));
        if end > ceiling {
            out.push(Violation::OutOfRegion { index, name: name(), end, ceiling });
        }
        if let Some(expected) = l.fixed_address {
            if expected != address {
                out.push(Violation::PinnedMoved { index, name: name(), expected, got: address });
            }
            continue;
        }
        if address < floor {
            out.push(Violation::BelowFloor { index, name: name(), address, floor });
        }
        if let Some(cc_base) = cc_base {
            if collective[index] && address < cc_base {
                out.push(Violation::CollectiveOutsideCcRegion { index, name: name(), address, cc_base });
            } else if !collective[index] && cc_base < ceiling && address < cc_base && end > cc_base {
                // (With an empty CC region the ceiling is the region's: OutOfRegion already says it.)
                out.push(Violation::CrossesCcCeiling { index, name: name(), address, end, cc_base });
            }
        }
        let multiple = l.address_multiple;
        if multiple == 0 || !address.is_multiple_of(multiple) {
            out.push(Violation::Misaligned { index, name: name(), address, multiple });
        }
        if page > 0 && size > 0 && size <= page && address / page != (address + size - 1) / page {
            out.push(Violation::PageStraddle { index, name: name(), address, size, page });
        }
    }
    // The overlap sweep over the representable, nonempty ranges.
    let spans: Vec<(u64, u64)> = ranges.iter().map(|r| r.unwrap_or((0, 0))).collect();
    let segs: Vec<(usize, u64, u64)> =
        locs.iter().enumerate().flat_map(|(i, l)| l.intervals.iter().map(move |x| (i, x.def, x.last_use))).collect();
    let found = super::sweep::overlapping_pairs(&spans, segs, MAX_OVERLAPS);
    for (a, b, time) in found.pairs {
        let ((a_lo, a_hi), (b_lo, b_hi)) = (spans[a], spans[b]);
        out.push(Violation::Overlap {
            a,
            a_name: locs[a].name.clone(),
            a_lo,
            a_hi,
            b,
            b_name: locs[b].name.clone(),
            b_lo,
            b_hi,
            time,
        });
    }
    if found.truncated {
        out.push(Violation::TooManyOverlaps { limit: MAX_OVERLAPS });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dram::config::Order;
    use crate::dram::problem::{LiveInterval, Location};

    /// `n` one-page buffers, `k` live over [k, k + 1], placed round-robin on 3 pages (valid).
    fn ring(n: usize) -> (Problem, Vec<u64>) {
        let locations = (0..n)
            .map(|k| Location::new(format!("b{k}"), 4096, 1, vec![LiveInterval::new(k as u64, k as u64 + 1)]))
            .collect();
        let addresses = (0..n).map(|k| (k as u64 % 3) * 4096).collect();
        (Problem { locations, cc_operands: Vec::new() }, addresses)
    }

    #[test]
    fn an_overlap_planted_at_buffer_99990_of_100k_is_the_only_violation() {
        let config = AllocConfig::minimalloc(1, u64::MAX, Order::Seed);
        let (problem, mut addresses) = ring(100_000);
        assert_eq!(check(&problem, &config, &addresses), vec![]);
        // b99990 (live 99990..=99991) moved by one byte onto b99989's page (live 99989..=99990).
        addresses[99_990] = addresses[99_989] + 4095;
        let v = check(&problem, &config, &addresses);
        let want = Violation::Overlap {
            a: 99_989,
            a_name: "b99989".into(),
            a_lo: addresses[99_989],
            a_hi: addresses[99_989] + 4096,
            b: 99_990,
            b_name: "b99990".into(),
            b_lo: addresses[99_989] + 4095,
            b_hi: addresses[99_989] + 8191,
            time: 99_990,
        };
        assert_eq!(v, vec![want]);
    }

    #[test]
    fn with_no_cc_region_a_buffer_over_the_ceiling_is_only_out_of_region() {
        let config = AllocConfig::minimalloc(1, 100, Order::Seed);
        let problem =
            Problem { locations: vec![Location::new("x", 20, 1, vec![LiveInterval::new(0, 1)])], cc_operands: vec![] };
        let want = Violation::OutOfRegion { index: 0, name: "x".into(), end: 110, ceiling: 100 };
        assert_eq!(check(&problem, &config, &[90]), vec![want]);
        assert_eq!(check(&problem, &config, &[80]), vec![]);
    }

    #[test]
    fn a_placement_with_every_buffer_at_zero_stops_at_the_overlap_limit() {
        let config = AllocConfig::minimalloc(1, u64::MAX, Order::Seed);
        let (problem, _) = ring(200);
        // All live at time 100 too: widen every interval to [0, 200].
        let mut problem = problem;
        for l in &mut problem.locations {
            l.intervals = vec![LiveInterval::new(0, 200)];
        }
        let v = check(&problem, &config, &[0; 200]);
        assert_eq!(v.len(), MAX_OVERLAPS + 1);
        assert_eq!(v.last(), Some(&Violation::TooManyOverlaps { limit: MAX_OVERLAPS }));
        assert!(v[..MAX_OVERLAPS].iter().all(|x| matches!(x, Violation::Overlap { .. })));
    }
}
