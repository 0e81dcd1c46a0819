//! Seeded generators of allocation problems: large ones for the benchmark and
//! small, feature-rich ones (pins, unaligned floors, sub-page sizes, CC
//! buffers, tight ceilings) for the property tests and the fuzz seed corpus.
//! One u64 seed drives everything through ChaCha8.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::config::{AllocConfig, Order, cc_buffer_size};
use super::problem::{CcOperand, DRAM_PAGE, LiveInterval, Location, Problem, find_start_addr, round_up};

/// A benchmark problem with `n_intervals` intervals (about 10% of the locations
/// have two), about `live` locations live at any time, DRAM sizes of 1..=64
/// pages, and one collective buffer per 1000 locations.
pub fn bench_problem(seed: u64, n_intervals: usize, live: u64) -> Problem {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mean_len = 32u64;
    let horizon = ((n_intervals as u64) * mean_len / live.max(1)).max(1);
    let mut locations = Vec::new();
    let mut cc_operands = Vec::new();
    let mut emitted = 0usize;
    while emitted < n_intervals {
        let k = if rng.random_range(0..10) == 0 && emitted + 2 <= n_intervals { 2 } else { 1 };
        let mut intervals = Vec::with_capacity(k);
        for _ in 0..k {
            let def = rng.random_range(0..horizon);
            let len = rng.random_range(0..2 * mean_len);
            intervals.push(LiveInterval::new(def, def + len));
        }
        emitted += k;
        let byte_size = rng.random_range(1..=64 * DRAM_PAGE);
        let i = locations.len();
        locations.push(Location::new(format!("t{i}"), byte_size, DRAM_PAGE, intervals));
        if i % 1000 == 999 {
            cc_operands.push(CcOperand { location: i, ap_bytes: 0 });
        }
    }
    Problem { locations, cc_operands }
}

/// The benchmark's DRAM configuration: 1 MiB of pre-placed footprint, 1 TiB ceiling.
pub fn bench_config(order: Order) -> AllocConfig {
    AllocConfig { region_ceiling: 1 << 40, order, ..AllocConfig::dram((1 << 20) - 1) }
}

/// A small random case exercising every branch of the allocator core.
///
/// Up to 24 locations with 1..=3 intervals in a short horizon (so reuse and
/// interference both happen); a page of 4096, 256 or 64; sizes aligned to the
/// page or not at all (sub-page sizes reach the straddle rule); pins placed
/// disjointly at possibly unaligned addresses; the HWM from the pins, zero, or
/// arbitrary; collective operands with `--allreduce-buffer-size` -1, 0 or 1 MiB;
/// and a region ceiling that is ample or tight (out-of-space, CC retry) but
/// never below a pin (so every generated input is valid).
pub fn random_case(seed: u64) -> (Problem, AllocConfig) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let page = [4096u64, 4096, 256, 64][rng.random_range(0..4)];
    let n = rng.random_range(1..=24usize);
    let horizon = rng.random_range(4..=40u64);
    let mut locations = Vec::with_capacity(n);
    let mut pin_cursor = rng.random_range(0..2 * page);
    for i in 0..n {
        let (alignment, byte_size) = if rng.random_bool(0.5) {
            (page, rng.random_range(0..=4 * page))
        } else {
            (1, rng.random_range(0..=2 * page))
        };
        let k = rng.random_range(1..=3usize);
        let intervals = (0..k)
            .map(|_| {
                let def = rng.random_range(0..horizon);
                LiveInterval::new(def, def + rng.random_range(0..=horizon / 3))
            })
            .collect();
        let mut loc = Location::new(format!("l{i}"), byte_size, alignment, intervals);
        if rng.random_bool(0.15) {
            let size = round_up(byte_size, alignment).unwrap_or(0);
            loc = loc.pinned_at(pin_cursor);
            pin_cursor += size + rng.random_range(0..page);
        } else if rng.random_bool(0.1) {
            loc.address_multiple = [2u64, 8, 64][rng.random_range(0..3)];
        }
        locations.push(loc);
    }
    let mut cc_operands = Vec::new();
    for (i, l) in locations.iter().enumerate() {
        if l.fixed_address.is_none() && rng.random_bool(0.15) {
            cc_operands.push(CcOperand { location: i, ap_bytes: rng.random_range(0..page) });
        }
    }
    let problem = Problem { locations, cc_operands };
    let hwm = match rng.random_range(0..3) {
        0 => problem.preplaced_hwm().unwrap_or(0),
        1 => 0,
        _ => rng.random_range(0..8 * page),
    };
    let mib = [-1i64, 0, 1][rng.random_range(0..3)];
    let cc_limit = match mib {
        -1 => round_up(cc_buffer_size(&problem).unwrap_or(0), DRAM_PAGE).unwrap_or(0),
        m => (m as u64) << 20,
    };
    let total: u64 = problem.locations.iter().map(|l| l.aligned_size().unwrap_or(0)).sum();
    let start = find_start_addr(hwm);
    let general = if rng.random_bool(0.5) { total + 4 * page } else { rng.random_range(0..=total / 2 + page) };
    let config = AllocConfig {
        page,
        hwm,
        region_ceiling: (start + general + cc_limit).max(pin_cursor),
        allreduce_buffer_size_mib: mib,
        order: if rng.random_bool(0.7) { Order::Seed } else { Order::Size },
    };
    (problem, config)
}
