//! `renumber_locations` (seed 004, "The allocate Driver"): validate every
//! location and give it a dense Info id.
//!
//! Our choice for the dense order (the seed only says "dense Info[] ids"): by
//! first def time, then by problem index. Interfering locations are then close
//! in id space, so every id-indexed array (degrees, buckets, addresses, the
//! neighbour de-dup stamps) is touched with good locality; at a million
//! intervals this is the difference between cache hits and a miss per
//! neighbour. Tie-breaks that say "lowest index" mean the lowest dense id, i.e.
//! the earliest first def.
//!
//! The tree's time coordinate is the seed's 32-bit flat index (24-byte nodes).
//! Problems whose times exceed `u32::MAX` (a MiniMalloc file may) are mapped to
//! the ranks of their distinct endpoints: an order-preserving map, so which
//! intervals intersect does not change.

use super::error::AllocError;
use super::interval_tree::FlatTime;
use super::problem::Problem;

/// One `[def, use]` interval in flat (tree) coordinates, inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct FlatInterval {
    /// The def's flat index.
    pub def: FlatTime,
    /// The use's flat index.
    pub last_use: FlatTime,
}

/// An Info record: what select_impl needs per location.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Info {
    /// `alignedSize` (Info[+0]).
    pub aligned_size: u64,
    /// The pre-placed address of a pinned location (Info[+46] pinned).
    pub fixed_address: Option<u64>,
    /// An operand of a collective op: placed in the CC-buffer region.
    pub collective: bool,
    /// The chosen address must be a multiple of this.
    pub address_multiple: u64,
    /// The location's index in [`Problem::locations`].
    pub location: u32,
}

/// The renumbered problem: Info records and their intervals (flat) by dense id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Renumbered {
    /// One Info per dense id.
    pub infos: Vec<Info>,
    starts: Vec<usize>,
    intervals: Vec<FlatInterval>,
    ranked: bool,
}

impl Renumbered {
    /// The intervals of dense id `id`.
    pub fn intervals_of(&self, id: usize) -> &[FlatInterval] {
        &self.intervals[self.starts[id]..self.starts[id + 1]]
    }

    /// Number of locations.
    pub fn len(&self) -> usize {
        self.infos.len()
    }

    /// Whether there is no location.
    pub fn is_empty(&self) -> bool {
        self.infos.is_empty()
    }

    /// Total number of intervals.
    pub fn num_intervals(&self) -> usize {
        self.intervals.len()
    }

    /// Whether the flat times are ranks of the problem's times (some time
    /// exceeds `u32::MAX`); if not, they are the problem's times themselves.
    pub fn ranked(&self) -> bool {
        self.ranked
    }

    /// Whether each dense id is pinned.
    pub fn pinned(&self) -> Vec<bool> {
        self.infos.iter().map(|i| i.fixed_address.is_some()).collect()
    }
}

/// `renumber_locations`: validates every location and computes its Info record.
///
/// Rejects (typed) a zero alignment or address multiple, an aligned size or
/// pinned end that overflows, an interval with def after use, a movable
/// location without intervals (seed: dram_build.cpp:61 asserts
/// `def_use_vec.size() > 0 || pinned`), a collective operand naming no
/// location, and more locations or intervals than 32-bit ids hold.
pub fn renumber_locations(problem: &Problem) -> Result<Renumbered, AllocError> {
    let locs = &problem.locations;
    let total: usize = locs.iter().map(|l| l.intervals.len()).sum();
    if locs.len() >= u32::MAX as usize {
        return Err(AllocError::TooMany { count: locs.len() });
    }
    if total >= (u32::MAX / 2) as usize {
        return Err(AllocError::TooMany { count: total });
    }
    let mut collective = vec![false; locs.len()];
    for (index, op) in problem.cc_operands.iter().enumerate() {
        match collective.get_mut(op.location) {
            Some(c) => *c = true,
            None => {
                return Err(AllocError::BadCcOperand { index, location: op.location });
            }
        }
    }
    // One pass in problem order validates each location and copies what the
    // dense order needs into compact arrays (its Info, its intervals end to
    // end); the dense order is then gathered from them, not from the
    // locations and their per-location interval Vecs.
    let mut order: Vec<(u64, u32)> = Vec::with_capacity(locs.len());
    let mut by_index: Vec<Info> = Vec::with_capacity(locs.len());
    let mut raw: Vec<(u64, u64)> = Vec::with_capacity(total);
    let mut raw_start: Vec<u32> = Vec::with_capacity(locs.len() + 1);
    let mut max_time = 0u64;
    for (i, l) in locs.iter().enumerate() {
        let name = || l.name.clone();
        if l.alignment == 0 || l.address_multiple == 0 {
            return Err(AllocError::BadAlignment { name: name() });
        }
        let aligned = l.aligned_size().ok_or_else(|| AllocError::SizeOverflow { name: name() })?;
        if let Some(a) = l.fixed_address {
            a.checked_add(aligned).ok_or_else(|| AllocError::PinnedOverflow { name: name() })?;
        } else if l.intervals.is_empty() {
            return Err(AllocError::NoIntervals { name: name() });
        }
        // `total < u32::MAX / 2`, checked above.
        raw_start.push(raw.len() as u32);
        let mut first = u64::MAX;
        for iv in &l.intervals {
            if iv.def > iv.last_use {
                return Err(AllocError::BadInterval { name: name(), def: iv.def, last_use: iv.last_use });
            }
            first = first.min(iv.def);
            max_time = max_time.max(iv.last_use);
            raw.push((iv.def, iv.last_use));
        }
        order.push((first, i as u32));
        by_index.push(Info {
            aligned_size: aligned,
            fixed_address: l.fixed_address,
            collective: collective[i],
            address_multiple: l.address_multiple,
            location: i as u32,
        });
    }
    raw_start.push(raw.len() as u32);
    order.sort_unstable();
    let ranks: Option<Vec<u64>> = (max_time > u64::from(FlatTime::MAX)).then(|| {
        let mut t: Vec<u64> = raw.iter().flat_map(|&(d, u)| [d, u]).collect();
        t.sort_unstable();
        t.dedup();
        t
    });
    // Ranks < 2 * total < u32::MAX, checked above.
    let flat = |t: u64| -> FlatTime {
        match &ranks {
            Some(r) => r.partition_point(|&x| x < t) as FlatTime,
            None => t as FlatTime,
        }
    };
    let mut infos = Vec::with_capacity(locs.len());
    let mut starts = Vec::with_capacity(locs.len() + 1);
    let mut intervals = Vec::with_capacity(total);
    for &(_, i) in &order {
        let i = i as usize;
        starts.push(intervals.len());
        let ivs = &raw[raw_start[i] as usize..raw_start[i + 1] as usize];
        intervals.extend(ivs.iter().map(|&(d, u)| FlatInterval { def: flat(d), last_use: flat(u) }));
        infos.push(by_index[i]);
    }
    starts.push(intervals.len());
    let ranked = ranks.is_some();
    Ok(Renumbered { infos, starts, intervals, ranked })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dram::problem::{CcOperand, LiveInterval, Location};

    fn f(def: FlatTime, last_use: FlatTime) -> FlatInterval {
        FlatInterval { def, last_use }
    }

    #[test]
    fn dense_ids_follow_first_def_then_index() {
        let iv = |a, b| LiveInterval::new(a, b);
        let p = Problem {
            locations: vec![
                Location::new("late", 1, 1, vec![iv(9, 9)]),
                Location::new("pin", 1, 1, vec![]).pinned_at(0),
                Location::new("early", 1, 1, vec![iv(5, 6), iv(0, 1)]),
                Location::new("tie", 1, 1, vec![iv(0, 3)]),
            ],
            cc_operands: vec![CcOperand { location: 3, ap_bytes: 0 }],
        };
        let r = renumber_locations(&p).expect("renumber");
        let order: Vec<u32> = r.infos.iter().map(|i| i.location).collect();
        assert_eq!(order, vec![2, 3, 0, 1]);
        assert_eq!(r.intervals_of(0), &[f(5, 6), f(0, 1)]);
        assert_eq!(r.intervals_of(3), &[]);
        assert!(r.infos[1].collective && !r.infos[0].collective);
        assert_eq!(r.pinned(), vec![false, false, false, true]);
        assert_eq!(r.num_intervals(), 4);
    }

    #[test]
    fn huge_times_map_to_ranks_preserving_intersection() {
        let big = u64::from(u32::MAX) + 10;
        let p = Problem {
            locations: vec![
                Location::new("a", 1, 1, vec![LiveInterval::new(3, big)]),
                Location::new("b", 1, 1, vec![LiveInterval::new(big, big + 5)]),
                Location::new("c", 1, 1, vec![LiveInterval::new(big + 6, u64::MAX)]),
            ],
            cc_operands: vec![],
        };
        let r = renumber_locations(&p).expect("renumber");
        assert_eq!(r.intervals_of(0), &[f(0, 1)]);
        assert_eq!(r.intervals_of(1), &[f(1, 2)]);
        assert_eq!(r.intervals_of(2), &[f(3, 4)]);
    }
}
