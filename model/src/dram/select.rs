//! `select_impl` and the [`allocate`] entry point of the allocation core
//! (seed 004, "select and select_impl", "CC-Buffer Auto-Sizing").

use super::config::{AllocConfig, Order, Regions, regions};
use super::error::AllocError;
use super::interference::{Cached, DEFAULT_CACHE_BUDGET, Interference, PairScan, StackLists, TreeInterference};
use super::problem::Problem;
use super::renumber::{Info, Renumbered, renumber_locations};
use super::search::{AddrInterval, Fit, SearchParams, search};
use super::simplify::{simplify_with_lists, size_order};

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
    /// The address of every location, by problem index (pinned ones keep theirs).
    pub addresses: Vec<u64>,
    /// Whether each location (by problem index) was placed in the CC-buffer region.
    pub in_cc_region: Vec<bool>,
    /// The elimination stack select_impl popped (back first), as problem indices.
    pub stack: Vec<u32>,
    /// The metrics.
    pub metrics: Metrics,
}

/// Allocates `problem` with the interval tree: renumber, build the tree, order, `select_impl`.
pub fn allocate(problem: &Problem, config: &AllocConfig) -> Result<Allocation, AllocError> {
    allocate_using(problem, config, Oracle::Tree, true)
}

/// The naive allocator: the same order, cache and `search`; interference by scanning all pairs.
pub fn allocate_naive(problem: &Problem, config: &AllocConfig) -> Result<Allocation, AllocError> {
    allocate_using(problem, config, Oracle::PairScan, true)
}

/// Which interference oracle [`allocate_using`] asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Oracle {
    /// The interval tree (the seed's `getAllOverlaps`).
    Tree,
    /// A scan over every other location (the naive baseline).
    PairScan,
}

/// Allocates with the given oracle, behind the neighbour cache or asked afresh
/// every time (`cached == false`: three queries per location). All four
/// combinations give the same placement.
pub fn allocate_using(
    problem: &Problem,
    config: &AllocConfig,
    oracle: Oracle,
    cached: bool,
) -> Result<Allocation, AllocError> {
    let r = renumber_locations(problem)?;
    match (oracle, cached) {
        (Oracle::Tree, true) => {
            if super::clique::common_instant(&r).is_some() {
                return super::clique::run_clique(problem, config, &r);
            }
            let tree = TreeInterference::new(&r)?;
            run(problem, config, &r, &mut Cached::new(tree, r.len(), DEFAULT_CACHE_BUDGET))
        }
        (Oracle::Tree, false) => run(problem, config, &r, &mut TreeInterference::new(&r)?),
        (Oracle::PairScan, true) => {
            let scan = PairScan::new(&r);
            run(problem, config, &r, &mut Cached::new(scan, r.len(), DEFAULT_CACHE_BUDGET))
        }
        (Oracle::PairScan, false) => run(problem, config, &r, &mut PairScan::new(&r)),
    }
}

fn run(
    problem: &Problem,
    config: &AllocConfig,
    r: &Renumbered,
    oracle: &mut impl Interference,
) -> Result<Allocation, AllocError> {
    if config.page == 0 {
        return Err(AllocError::BadPage);
    }
    let regions = regions(config, problem)?;
    let pinned = r.pinned();
    let (stack, lists) = match config.order {
        Order::Seed => simplify_with_lists(&pinned, oracle, true),
        Order::Size => (size_stack(problem, r, &pinned), None),
    };
    let lists = lists.or_else(|| oracle.csr().and_then(|(s, l)| StackLists::gather(&stack, s, l)));
    let fit = match config.order {
        Order::Seed => Fit::First,
        Order::Size => Fit::Best,
    };
    let dense = select_impl(r, oracle, &stack, lists.as_ref(), &regions, config.page, fit);
    finish(problem, config, r, &regions, &stack, dense)
}

/// The `--order size` stack of `problem` (oracle-free). O(n log n).
pub(super) fn size_stack(problem: &Problem, r: &Renumbered, pinned: &[bool]) -> Vec<u32> {
    let sizes: Vec<u64> = r.infos.iter().map(|i| i.aligned_size).collect();
    let span = |ivs: &mut dyn Iterator<Item = (u64, u64)>| {
        ivs.fold(0u64, |s, (def, last_use)| s.saturating_add(last_use.saturating_sub(def).saturating_add(1)))
    };
    let spans: Vec<u64> = if r.ranked() {
        // Spans in problem times: in problem order, then by dense id.
        let by_location: Vec<u64> = problem
            .locations
            .iter()
            .map(|loc| span(&mut loc.intervals.iter().map(|iv| (iv.def, iv.last_use))))
            .collect();
        r.infos.iter().map(|i| by_location[i.location as usize]).collect()
    } else {
        // The flat times are the problem's: one sequential pass by dense id.
        (0..r.len())
            .map(|id| span(&mut r.intervals_of(id).iter().map(|iv| (u64::from(iv.def), u64::from(iv.last_use)))))
            .collect()
    };
    size_order(pinned, &sizes, &spans)
}

/// The allocation from select_impl's result: addresses back from dense ids to
/// problem indices, and the metrics. O(n).
pub(super) fn finish(
    problem: &Problem,
    config: &AllocConfig,
    r: &Renumbered,
    regions: &Regions,
    stack: &[u32],
    dense: Result<DensePlacement, (usize, u64, u64)>,
) -> Result<Allocation, AllocError> {
    let dense = dense.map_err(|(id, size, largest_gap)| AllocError::OutOfSpace {
        name: problem.locations[r.infos[id].location as usize].name.clone(),
        size,
        largest_gap,
    })?;
    // Back from dense ids to problem indices.
    let n = r.len();
    let mut addresses = vec![0u64; n];
    let mut in_cc_region = vec![false; n];
    for (id, info) in r.infos.iter().enumerate() {
        addresses[info.location as usize] = dense.addresses[id];
        in_cc_region[info.location as usize] = dense.in_cc[id];
    }
    let end = |id: usize| dense.addresses[id] + r.infos[id].aligned_size;
    let peak = (0..n).map(end).max().unwrap_or(0);
    let allreduce_dram_hwm = (0..n).filter(|&i| dense.in_cc[i]).map(end).max().unwrap_or(0);
    Ok(Allocation {
        addresses,
        in_cc_region,
        stack: stack.iter().map(|&id| r.infos[id as usize].location).collect(),
        metrics: Metrics {
            reserved_space: config.hwm,
            start: regions.start,
            cc_base: regions.cc_base,
            cc_limit: regions.cc_limit,
            real_cc_buffer_size: allreduce_dram_hwm.saturating_sub(regions.cc_base),
            allreduce_dram_hwm,
            peak,
            num_intervals: r.num_intervals(),
        },
    })
}

/// Where one node goes, given `find` (a search in one region's params): a
/// collective buffer in the CC region; any other node in `[start, cc_base)`
/// and, failing that, in the CC region (mark `dram.cc_region_retry`).
/// `Ok((address, in_cc))` or `Err(largest free gap)`. Shared by
/// [`select_impl`] and the clique path, which differ only in how they search.
pub(super) fn place_node(
    info: &super::renumber::Info,
    regions: &Regions,
    page: u64,
    fit: Fit,
    mut find: impl FnMut(&SearchParams) -> Result<u64, u64>,
) -> Result<(u64, bool), u64> {
    let general = SearchParams {
        start: regions.start,
        ceiling: regions.cc_base,
        align: page,
        multiple: info.address_multiple,
        fit,
    };
    let cc = SearchParams { start: regions.cc_base, ceiling: regions.ceiling, ..general };
    if info.collective {
        return find(&cc).map(|a| (a, true));
    }
    match find(&general) {
        Ok(a) => Ok((a, false)),
        Err(g1) if regions.cc_base < regions.ceiling => {
            crate::marks::hit("dram.cc_region_retry");
            find(&cc).map(|a| (a, true)).map_err(|g2| g1.max(g2))
        }
        Err(g1) => Err(g1),
    }
}

/// select_impl's result by dense id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DensePlacement {
    /// Address per dense id.
    pub addresses: Vec<u64>,
    /// Whether each dense id was placed in the CC-buffer region.
    pub in_cc: Vec<bool>,
}

/// `select_impl`: pop `stack` back-to-front, place each node by `search` among
/// its already-placed interfering neighbours, retrying in the CC region.
///
/// See [`regions`] for the layout: a collective buffer is searched in
/// `[cc_base, ceiling)`; any other node in `[start, cc_base)` and, if it does
/// not fit below the CC-buffer ceiling, again in `[cc_base, ceiling)` (mark
/// `dram.cc_region_retry`). When nothing fits: `Err((dense id, aligned size,
/// largest free gap))`, which [`allocate`] turns into [`AllocError::OutOfSpace`].
///
/// The neighbours come from `lists` by stack position (read back to front,
/// sequentially) when given, else from `oracle`. Memory access: the pop-order
/// Info copy and `lists` are sequential; the only random probes are the
/// neighbours' byte ranges by dense id (16 bytes each, near the node's id).
/// Cost: O(n + m) plus `search` (a sort of each occupied list).
pub fn select_impl(
    r: &Renumbered,
    oracle: &mut impl Interference,
    stack: &[u32],
    lists: Option<&StackLists>,
    regions: &Regions,
    page: u64,
    fit: Fit,
) -> Result<DensePlacement, (usize, u64, u64)> {
    let n = r.len();
    // The byte range each placed location occupies, by dense id; empty (lo ==
    // hi) while unplaced. `lo` is also the address (a zero-size node's too).
    let mut range = vec![AddrInterval { lo: 0, hi: 0 }; n];
    for (id, info) in r.infos.iter().enumerate() {
        if let Some(a) = info.fixed_address {
            range[id] = AddrInterval { lo: a, hi: a + info.aligned_size };
        }
    }
    // The nodes' Info records in pop order, gathered by one tight pass (its
    // independent loads overlap; inside the loop each would be a miss).
    let popped: Vec<Info> = stack.iter().rev().map(|&v| r.infos[v as usize]).collect();
    let mut in_cc_popped = Vec::with_capacity(popped.len());
    let mut occupied: Vec<AddrInterval> = Vec::new();
    for (k, (&v, info)) in stack.iter().rev().zip(&popped).enumerate() {
        let vi = v as usize;
        let nb = match lists {
            Some(l) => l.list(stack.len() - 1 - k),
            None => oracle.neighbours(v),
        };
        occupied.clear();
        occupied.extend(nb.iter().map(|&u| range[u as usize]).filter(|g| g.hi > g.lo));
        let result = place_node(info, regions, page, fit, |p| search(&mut occupied, info.aligned_size, p));
        let (a, cc_placed) = result.map_err(|gap| (vi, info.aligned_size, gap))?;
        range[vi] = AddrInterval { lo: a, hi: a + info.aligned_size };
        in_cc_popped.push(cc_placed);
    }
    let addresses: Vec<u64> = range.iter().map(|g| g.lo).collect();
    let mut in_cc = vec![false; n];
    for (&v, &c) in stack.iter().rev().zip(&in_cc_popped) {
        in_cc[v as usize] = c;
    }
    Ok(DensePlacement { addresses, in_cc })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dram::problem::{LiveInterval, Location};

    #[test]
    fn size_order_spans_are_in_problem_times_even_when_ranked() {
        // Equal sizes: the longer span pops first. `a` (index 1) lives 11 problem
        // steps, `b` (index 0) 6; as ranks both span 2 and the lower index (`b`) would win.
        for base in [20u64, u64::from(u32::MAX) + 10] {
            let p = Problem {
                locations: vec![
                    Location::new("b", 8, 1, vec![LiveInterval::new(base, base + 5)]),
                    Location::new("a", 8, 1, vec![LiveInterval::new(0, 10)]),
                ],
                cc_operands: vec![],
            };
            let r = renumber_locations(&p).expect("renumber");
            assert_eq!(r.ranked(), base > 20);
            // Dense ids by first def: a = 0, b = 1; the stack pops its back first.
            assert_eq!(size_stack(&p, &r, &r.pinned()), vec![1, 0], "base {base}");
        }
    }
}
