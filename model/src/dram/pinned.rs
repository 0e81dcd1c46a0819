//! Whether a problem's pinned locations already collide: two locations with
//! a fixed address whose aligned byte ranges intersect while both are live.
//!
//! No placement can repair that (the allocator never moves a pinned
//! location), so a caller refuses such a problem as input before allocating,
//! naming the pair, instead of letting the checker blame the placement.
//!
//! How: one sweep over the pinned locations' merged live intervals in time
//! order (at one instant, intervals that end leave before those that start:
//! `[def, use]` is inclusive), keeping the live ones in a map by first byte.
//! Until the first collision the live ranges are disjoint, so an arriving
//! range can only meet its neighbours in the map: the one starting at or
//! before it and the one starting after it. Cost: O(p log p) for p pinned
//! intervals; memory O(p). Shares no code with the allocator or its checker.

use std::collections::BTreeMap;
use std::fmt;

use super::problem::{LiveInterval, Problem};

/// Two pinned locations that overlap while both live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinnedOverlap {
    /// The location already live, and its byte range `[start, end)`.
    pub first: (String, u64, u64),
    /// The location arriving on it, and its byte range.
    pub second: (String, u64, u64),
    /// The first time both are live.
    pub time: u64,
}

impl fmt::Display for PinnedOverlap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ((a, a0, a1), (b, b0, b1)) = (&self.first, &self.second);
        write!(f, "pinned `{a}` [{a0}, {a1}) and `{b}` [{b0}, {b1}) overlap while both live at time {}", self.time)
    }
}

/// The first collision of two pinned locations in time order, if any (see
/// the module doc). A pinned location of zero aligned size meets nothing; a
/// range past `u64::MAX` ends there; an aligned size that overflows is the
/// allocator's error to report, so such a location is left out here.
pub fn pinned_overlap(problem: &Problem) -> Option<PinnedOverlap> {
    // (time, 0 = leaves / 1 = arrives, location, start, end); a leave at `use + 1`.
    let mut events: Vec<(u128, u8, usize, u64, u64)> = Vec::new();
    for (i, l) in problem.locations.iter().enumerate() {
        let (Some(start), Some(size)) = (l.fixed_address, l.aligned_size()) else { continue };
        if size == 0 {
            continue;
        }
        let end = start.saturating_add(size);
        for m in merged(&l.intervals) {
            events.push((u128::from(m.def), 1, i, start, end));
            events.push((u128::from(m.last_use) + 1, 0, i, start, end));
        }
    }
    events.sort_unstable();
    // Live ranges by first byte: start -> (end, location).
    let mut live: BTreeMap<u64, (u64, usize)> = BTreeMap::new();
    for (time, kind, i, start, end) in events {
        if kind == 0 {
            live.remove(&start);
            continue;
        }
        let before = live.range(..=start).next_back().filter(|(_, (e, _))| *e > start);
        let after = live.range(start..).next().filter(|(s, _)| **s < end);
        if let Some((&s, &(e, j))) = before.or(after) {
            let name = |k: usize| problem.locations[k].name.clone();
            return Some(PinnedOverlap {
                first: (name(j), s, e),
                second: (name(i), start, end),
                time: u64::try_from(time).unwrap_or(u64::MAX),
            });
        }
        live.insert(start, (end, i));
    }
    None
}

/// `intervals` sorted and merged where they meet or touch (`[0, 3]` and `[4, 9]` are one).
fn merged(intervals: &[LiveInterval]) -> Vec<LiveInterval> {
    let mut v = intervals.to_vec();
    v.sort_unstable();
    let mut out: Vec<LiveInterval> = Vec::with_capacity(v.len());
    for i in v {
        match out.last_mut() {
            Some(m) if i.def <= m.last_use.saturating_add(1) => m.last_use = m.last_use.max(i.last_use),
            _ => out.push(i),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dram::problem::Location;

    fn pinned(name: &str, at: u64, size: u64, ivs: &[(u64, u64)]) -> Location {
        let ivs = ivs.iter().map(|&(d, u)| LiveInterval::new(d, u)).collect();
        Location::new(name, size, 1, ivs).pinned_at(at)
    }

    fn problem(locations: Vec<Location>) -> Problem {
        Problem { locations, cc_operands: Vec::new() }
    }

    #[test]
    fn two_pinned_ranges_live_together_are_reported_by_name_range_and_time() {
        let p = problem(vec![pinned("a", 0, 4, &[(0, 5)]), pinned("b", 2, 4, &[(3, 9)])]);
        let o = pinned_overlap(&p).expect("overlap");
        assert_eq!(o.to_string(), "pinned `a` [0, 4) and `b` [2, 6) overlap while both live at time 3");
        // The arriving range starting first, and one starting at the same byte.
        let p = problem(vec![pinned("a", 8, 4, &[(0, 5)]), pinned("b", 6, 4, &[(1, 2)])]);
        assert_eq!(pinned_overlap(&p).map(|o| (o.first.0, o.second.0)), Some(("a".into(), "b".into())));
        let p = problem(vec![pinned("a", 8, 4, &[(0, 5)]), pinned("b", 8, 1, &[(5, 5)])]);
        assert_eq!(pinned_overlap(&p).map(|o| o.time), Some(5));
    }

    #[test]
    fn adjacent_bytes_touching_times_movable_and_empty_locations_are_not_overlaps() {
        let p = problem(vec![
            pinned("a", 0, 4, &[(0, 5)]),
            pinned("b", 4, 4, &[(0, 5)]),                            // the next bytes
            pinned("c", 0, 4, &[(6, 9)]),                            // a's bytes once a is dead
            pinned("d", 0, 0, &[(0, 9)]),                            // no bytes
            Location::new("e", 4, 1, vec![LiveInterval::new(0, 9)]), // not pinned
            pinned("f", 8, 4, &[(0, 2), (2, 4), (7, 9)]),            // its own intervals meet
        ]);
        assert_eq!(pinned_overlap(&p), None);
        // A range arriving just below a live one (its end is the live one's start).
        let p = problem(vec![pinned("x", 4, 4, &[(0, 5)]), pinned("y", 0, 4, &[(1, 2)])]);
        assert_eq!(pinned_overlap(&p), None);
        // Another location on a location's bytes during that location's gap.
        let p = problem(vec![pinned("f", 100, 4, &[(0, 2), (7, 9)]), pinned("g", 100, 4, &[(4, 5)])]);
        assert_eq!(pinned_overlap(&p), None);
    }

    #[test]
    fn sizes_are_aligned_before_they_are_compared() {
        let mut a = pinned("a", 0, 3, &[(0, 1)]);
        a.alignment = 4096;
        let p = problem(vec![a, pinned("b", 4000, 1, &[(1, 1)])]);
        assert_eq!(pinned_overlap(&p).map(|o| o.first.2), Some(4096));
    }

    #[test]
    fn one_collision_deep_in_a_large_problem_is_found() {
        // 100,000 pinned locations, each on its own bytes or its own time,
        // then one at the end on the bytes of a live one.
        let mut ls: Vec<Location> =
            (0..100_000u64).map(|i| pinned(&format!("l{i}"), (i % 1000) * 16, 16, &[(i / 1000, i / 1000)])).collect();
        assert_eq!(pinned_overlap(&problem(ls.clone())), None);
        ls.push(pinned("late", 99 * 16 + 8, 16, &[(99, 99)]));
        let o = pinned_overlap(&problem(ls)).expect("overlap");
        assert_eq!((o.first.0.as_str(), o.second.0.as_str(), o.time), ("l99099", "late", 99));
    }
}
