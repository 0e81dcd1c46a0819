//! `renumber_locations`, `select_impl` and the [`allocate`] entry point of the
//! allocation core (seed 004, "select and select_impl", "CC-Buffer Auto-Sizing").

use super::error::AllocError;
use super::interference::{Interference, PairScan, TreeInterference};
use super::problem::{AllocConfig, Order, Problem, Regions, regions};
use super::search::{AddrInterval, Fit, SearchParams, search};
use super::simplify::{simplify, size_order};

/// An Info record: what select_impl needs per location.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Info {
    /// `alignedSize` (Info[+0]).
    pub aligned_size: u64,
    /// Pre-placed at a fixed address (Info[+46]).
    pub pinned: bool,
    /// An operand of a collective op: placed in the CC-buffer region.
    pub collective: bool,
}

/// `renumber_locations`: validates every location and computes its Info record.
///
/// Rejects (typed) a zero alignment or address multiple, an aligned size or
/// pinned end that overflows, an interval with def after use, and a movable
/// location without intervals (seed: dram_build.cpp:61 asserts
/// `def_use_vec.size() > 0 || pinned`).
pub fn renumber_locations(problem: &Problem) -> Result<Vec<Info>, AllocError> {
    let collective = problem.collective_flags();
    let mut infos = Vec::with_capacity(problem.locations.len());
    for (i, l) in problem.locations.iter().enumerate() {
        let name = || l.name.clone();
        if l.alignment == 0 || l.address_multiple == 0 {
            return Err(AllocError::BadAlignment { name: name() });
        }
        let aligned_size = l
            .aligned_size()
            .ok_or_else(|| AllocError::SizeOverflow { name: name() })?;
        if let Some(a) = l.fixed_address {
            a.checked_add(aligned_size)
                .ok_or_else(|| AllocError::PinnedOverflow { name: name() })?;
        } else if l.intervals.is_empty() {
            return Err(AllocError::NoIntervals { name: name() });
        }
        if let Some(iv) = l.intervals.iter().find(|iv| iv.def > iv.last_use) {
            return Err(AllocError::BadInterval {
                name: name(),
                def: iv.def,
                last_use: iv.last_use,
            });
        }
        infos.push(Info {
            aligned_size,
            pinned: l.fixed_address.is_some(),
            collective: collective[i],
        });
    }
    for (index, op) in problem.cc_operands.iter().enumerate() {
        if op.location >= problem.locations.len() {
            return Err(AllocError::BadCcOperand {
                index,
                location: op.location,
            });
        }
    }
    Ok(infos)
}

/// The reported metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Metrics {
    /// "reserved space": the HWM of the pre-placed footprint (addMetric 31).
    pub reserved_space: u64,
    /// `find_start_addr()`: the floor of movable placements.
    pub start: u64,
    /// The CC-buffer ceiling: the general region is `[start, cc_base)`.
    pub cc_base: u64,
    /// The CC-buffer limit in bytes.
    pub cc_limit: u64,
    /// "Real CC buffer size" (FunctionAttribute 13): bytes of the CC region in use.
    pub real_cc_buffer_size: u64,
    /// "allreduce_dram_hwm": the highest end address in the CC region (0 if unused).
    pub allreduce_dram_hwm: u64,
    /// The highest end address over all locations (0 if none).
    pub peak: u64,
    /// Number of intervals in the tree.
    pub num_intervals: usize,
}

/// A successful allocation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allocation {
    /// The address of every location, by index (pinned ones keep theirs).
    pub addresses: Vec<u64>,
    /// Whether each location was placed in the CC-buffer region.
    pub in_cc_region: Vec<bool>,
    /// The elimination stack select_impl popped (back first).
    pub stack: Vec<u32>,
    /// The metrics.
    pub metrics: Metrics,
}

/// Allocates `problem` with the interval tree: validate, build the tree, order, `select_impl`.
pub fn allocate(problem: &Problem, config: &AllocConfig) -> Result<Allocation, AllocError> {
    let infos = renumber_locations(problem)?;
    let mut oracle = TreeInterference::new(problem)?;
    run(problem, config, &infos, &mut oracle)
}

/// The naive allocator: the same order and `search`, interference by scanning all pairs.
pub fn allocate_naive(problem: &Problem, config: &AllocConfig) -> Result<Allocation, AllocError> {
    let infos = renumber_locations(problem)?;
    run(problem, config, &infos, &mut PairScan::new(problem))
}

fn run(
    problem: &Problem,
    config: &AllocConfig,
    infos: &[Info],
    oracle: &mut impl Interference,
) -> Result<Allocation, AllocError> {
    if config.page == 0 {
        return Err(AllocError::BadPage);
    }
    let r = regions(config, problem)?;
    let pinned: Vec<bool> = infos.iter().map(|i| i.pinned).collect();
    let stack = match config.order {
        Order::Seed => simplify(&pinned, oracle),
        Order::Size => {
            let sizes: Vec<u64> = infos.iter().map(|i| i.aligned_size).collect();
            let spans: Vec<u64> = problem
                .locations
                .iter()
                .map(|l| l.intervals.iter().map(|iv| iv.last_use - iv.def + 1).sum())
                .collect();
            size_order(&pinned, &sizes, &spans)
        }
    };
    let fit = match config.order {
        Order::Seed => Fit::First,
        Order::Size => Fit::Best,
    };
    let mut a = select_impl(problem, infos, oracle, &stack, &r, config.page, fit)?;
    a.metrics.reserved_space = config.hwm;
    a.metrics.num_intervals = problem.locations.iter().map(|l| l.intervals.len()).sum();
    a.stack = stack;
    Ok(a)
}

/// `select_impl`: pop `stack` back-to-front, place each node by `search` among
/// its already-placed interfering neighbours, retrying in the CC region.
///
/// See [`regions`] for the layout: a collective buffer is searched in
/// `[cc_base, ceiling)`; any other node in `[start, cc_base)` and, if it does
/// not fit below the CC-buffer ceiling, again in `[cc_base, ceiling)` (mark
/// `dram.cc_region_retry`). Nothing fits: [`AllocError::OutOfSpace`].
pub fn select_impl(
    problem: &Problem,
    infos: &[Info],
    oracle: &mut impl Interference,
    stack: &[u32],
    r: &Regions,
    page: u64,
    fit: Fit,
) -> Result<Allocation, AllocError> {
    let n = infos.len();
    let mut addresses = vec![0u64; n];
    let mut placed = vec![false; n];
    for (i, l) in problem.locations.iter().enumerate() {
        if let Some(a) = l.fixed_address {
            addresses[i] = a;
            placed[i] = true;
        }
    }
    let mut in_cc = vec![false; n];
    let mut nb = Vec::new();
    let mut occupied: Vec<AddrInterval> = Vec::new();
    for &v in stack.iter().rev() {
        let vi = v as usize;
        let info = infos[vi];
        oracle.neighbours(v, &mut nb);
        occupied.clear();
        for &u in &nb {
            let (ui, size) = (u as usize, infos[u as usize].aligned_size);
            if placed[ui] && size > 0 {
                occupied.push(AddrInterval {
                    lo: addresses[ui],
                    hi: addresses[ui] + size,
                });
            }
        }
        let general = SearchParams {
            start: r.start,
            ceiling: r.cc_base,
            align: page,
            multiple: problem.locations[vi].address_multiple,
            fit,
        };
        let cc = SearchParams {
            start: r.cc_base,
            ceiling: r.ceiling,
            ..general
        };
        let result = if info.collective {
            search(&mut occupied, info.aligned_size, &cc).map(|a| (a, true))
        } else {
            match search(&mut occupied, info.aligned_size, &general) {
                Ok(a) => Ok((a, false)),
                Err(g1) if r.cc_base < r.ceiling => {
                    crate::marks::hit("dram.cc_region_retry");
                    search(&mut occupied, info.aligned_size, &cc)
                        .map(|a| (a, true))
                        .map_err(|g2| g1.max(g2))
                }
                Err(g1) => Err(g1),
            }
        };
        match result {
            Ok((a, cc_placed)) => {
                addresses[vi] = a;
                placed[vi] = true;
                in_cc[vi] = cc_placed;
            }
            Err(largest_gap) => {
                return Err(AllocError::OutOfSpace {
                    name: problem.locations[vi].name.clone(),
                    size: info.aligned_size,
                    largest_gap,
                });
            }
        }
    }
    let end = |i: usize| addresses[i] + infos[i].aligned_size;
    let peak = (0..n).map(end).max().unwrap_or(0);
    let allreduce_dram_hwm = (0..n).filter(|&i| in_cc[i]).map(end).max().unwrap_or(0);
    let metrics = Metrics {
        start: r.start,
        cc_base: r.cc_base,
        cc_limit: r.cc_limit,
        real_cc_buffer_size: allreduce_dram_hwm.saturating_sub(r.cc_base),
        allreduce_dram_hwm,
        peak,
        ..Metrics::default()
    };
    Ok(Allocation {
        addresses,
        in_cc_region: in_cc,
        stack: Vec::new(),
        metrics,
    })
}
