//! `search` (seed 004, "First-Fit Placement — search"): the free list between
//! the sorted occupied byte ranges of a node's already-placed interfering
//! neighbours, first fit, and the 4 KiB page-straddle rule's two arms.

/// `DRAM_Allocator::Interval { u64 lo, u64 hi }`: the byte range `[lo, hi)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct AddrInterval {
    /// First byte.
    pub lo: u64,
    /// One past the last byte.
    pub hi: u64,
}

/// Which free gap `search` takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fit {
    /// The seed's first fit: the lowest gap where the node fits.
    First,
    /// Best fit (`--order size`): the smallest bounded gap where the node fits,
    /// lowest address on ties; the trailing gap up to the ceiling only when no
    /// bounded gap fits (TFLite's greedy-by-size "allocate at the end").
    Best,
}

/// One search: the floor, the ceiling, the page `align`, the address multiple and the fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchParams {
    /// `start`: where the free list begins (the HWM floor or the CC base).
    pub start: u64,
    /// The ceiling (`this+296`): the trailing gap ends here; no gap reaches past it.
    pub ceiling: u64,
    /// `align`: the page of the straddle rule (4096 for DRAM, >= 1).
    pub align: u64,
    /// The chosen address must be a multiple of this (1 in the seed).
    pub multiple: u64,
    /// First or best fit.
    pub fit: Fit,
}

/// The free list: gaps between the occupied ranges sorted by `lo`, clipped to `[start, ceiling)`.
///
/// Seed: `prevEnd = start; for [lo,hi]: if lo > prevEnd: push [prevEnd, lo];
/// prevEnd = max(prevEnd, hi); push [prevEnd, ceiling]`. We clip each gap at
/// the ceiling (an occupant above a lower ceiling, e.g. in the CC region, must
/// not open a gap past it) and drop the trailing gap when `prevEnd >= ceiling`.
/// The second value is whether the last gap is the trailing one.
pub fn free_list(occupied: &mut [AddrInterval], start: u64, ceiling: u64) -> (Vec<AddrInterval>, bool) {
    occupied.sort_unstable_by_key(|r| r.lo);
    let mut free = Vec::new();
    let mut trailing = false;
    for_each_gap(occupied, start, ceiling, &mut |g, t| {
        free.push(g);
        trailing = t;
        true
    });
    (free, trailing)
}

/// Calls `f(gap, is_trailing)` for each gap of the free list of `sorted`
/// (occupied ranges sorted by `lo`), lowest first, while `f` returns true.
fn for_each_gap(sorted: &[AddrInterval], start: u64, ceiling: u64, f: &mut dyn FnMut(AddrInterval, bool) -> bool) {
    let mut prev_end = start;
    for r in sorted {
        if prev_end >= ceiling {
            return;
        }
        let lo = r.lo.min(ceiling);
        if lo > prev_end && !f(AddrInterval { lo: prev_end, hi: lo }, false) {
            return;
        }
        prev_end = prev_end.max(r.hi);
    }
    if prev_end < ceiling {
        f(AddrInterval { lo: prev_end, hi: ceiling }, true);
    }
}

/// The seed's gap test and two-arm placement for one gap `[lo, hi)`.
///
/// Returns the address and whether the page-straddle bump arm chose it. With
/// `multiple == 1` this is exactly the seed: `if hi - lo >= size { endPage =
/// (lo + size - 1) / align; if lo/align == endPage || size > align -> lo; else
/// if hi - align*endPage >= size -> align*endPage }`. A `multiple > 1` first
/// rounds `lo` up to it and rejects a bumped address that is not a multiple.
pub fn place_in_gap(lo: u64, hi: u64, size: u64, align: u64, multiple: u64) -> Option<(u64, bool)> {
    let lo = if multiple > 1 { lo.checked_next_multiple_of(multiple)? } else { lo };
    if lo >= hi || hi - lo < size || size == 0 || align == 0 {
        return None;
    }
    let end_page = (lo + size - 1) / align;
    if lo / align == end_page || size > align {
        return Some((lo, false));
    }
    let bumped = align * end_page; // <= lo + size - 1 < hi: no overflow, no underflow
    if hi - bumped >= size && bumped.is_multiple_of(multiple.max(1)) {
        return Some((bumped, true));
    }
    None
}

/// `search`: the address for a node of `size` bytes, or `Err(largest free gap)`.
///
/// Sorts `occupied` by `lo` and walks the free list without materializing it.
/// A zero-size node (the seed's formula would underflow) takes the lowest
/// admissible address at or above `start`; it occupies no byte.
pub fn search(occupied: &mut [AddrInterval], size: u64, p: &SearchParams) -> Result<u64, u64> {
    occupied.sort_unstable_by_key(|r| r.lo);
    search_gaps(|f| for_each_gap(occupied, p.start, p.ceiling, f), size, p)
}

/// [`search`] over gaps that `walk` produces: `walk(f)` calls `f(gap,
/// is_trailing)` for each gap of `[p.start, p.ceiling)`, lowest first, while
/// `f` returns true. [`search`] walks a sorted occupied list;
/// [`super::clique`] walks a merged union kept across placements.
pub fn search_gaps(
    walk: impl FnOnce(&mut dyn FnMut(AddrInterval, bool) -> bool),
    size: u64,
    p: &SearchParams,
) -> Result<u64, u64> {
    let mut largest = 0u64;
    let mut best: Option<(bool, u64, u64, bool)> = None; // (is_trailing, gap size, address, bumped)
    walk(&mut |g: AddrInterval, trailing: bool| {
        largest = largest.max(g.hi - g.lo);
        if size == 0 {
            return true;
        }
        let Some((addr, bumped)) = place_in_gap(g.lo, g.hi, size, p.align, p.multiple) else {
            return true; // advance to the next gap
        };
        let key = (trailing, g.hi - g.lo, addr, bumped);
        match p.fit {
            Fit::First => {
                best = Some(key);
                false
            }
            Fit::Best => {
                if best.is_none_or(|b| (key.0, key.1, key.2) < (b.0, b.1, b.2)) {
                    best = Some(key);
                }
                true
            }
        }
    });
    if size == 0 {
        return match p.start.checked_next_multiple_of(p.multiple.max(1)) {
            Some(a) if a <= p.ceiling => Ok(a),
            _ => Err(largest),
        };
    }
    match best {
        Some((_, _, addr, bumped)) => {
            if bumped {
                crate::marks::hit("dram.page_straddle_bump");
            }
            Ok(addr)
        }
        None => Err(largest),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::marks::Recorder;

    fn r(lo: u64, hi: u64) -> AddrInterval {
        AddrInterval { lo, hi }
    }

    fn params(start: u64, ceiling: u64, fit: Fit) -> SearchParams {
        SearchParams { start, ceiling, align: 4096, multiple: 1, fit }
    }

    #[test]
    fn free_list_merges_overlapping_occupants_and_clips() {
        let mut occ = vec![r(8192, 12288), r(0, 4096), r(2048, 6000), r(20000, 30000)];
        let (free, trailing) = free_list(&mut occ, 0, 25000);
        assert_eq!(free, vec![r(6000, 8192), r(12288, 20000)]);
        assert!(!trailing);
        let (free, trailing) = free_list(&mut occ, 0, 40000);
        assert_eq!(free.last(), Some(&r(30000, 40000)));
        assert!(trailing);
        // Occupants below start are ignored.
        let (free, _) = free_list(&mut occ, 13000, 14000);
        assert_eq!(free, vec![r(13000, 14000)]);
    }

    #[test]
    fn first_fit_takes_the_lowest_gap() {
        let mut occ = vec![r(0, 4096), r(8192, 16384)];
        assert_eq!(search(&mut occ, 4096, &params(0, 1 << 20, Fit::First)), Ok(4096));
        assert_eq!(search(&mut occ, 8192, &params(0, 1 << 20, Fit::First)), Ok(16384));
    }

    #[test]
    fn sub_page_allocation_inside_one_page_takes_the_raw_gap_start() {
        let rec = Recorder::start();
        let mut occ = vec![r(0, 100)];
        assert_eq!(search(&mut occ, 200, &params(0, 1 << 20, Fit::First)), Ok(100));
        assert_eq!(rec.hits("dram.page_straddle_bump"), 0);
    }

    #[test]
    fn sub_page_allocation_that_would_straddle_is_bumped_to_the_page() {
        let rec = Recorder::start();
        let mut occ = vec![r(0, 4000)];
        // 4000 + 200 crosses 4096: bumped to 4096.
        assert_eq!(search(&mut occ, 200, &params(0, 1 << 20, Fit::First)), Ok(4096));
        assert_eq!(rec.hits("dram.page_straddle_bump"), 1);
        // A page-sized allocation at an unaligned start is bumped as well (size == align).
        let mut occ = vec![r(0, 100)];
        assert_eq!(search(&mut occ, 4096, &params(0, 1 << 20, Fit::First)), Ok(4096));
        assert_eq!(rec.hits("dram.page_straddle_bump"), 2);
    }

    #[test]
    fn big_allocation_takes_the_raw_unaligned_gap_start() {
        // size > align: raw gap start even when unaligned (seed QUIRK).
        let mut occ = vec![r(0, 100)];
        assert_eq!(search(&mut occ, 8192, &params(0, 1 << 20, Fit::First)), Ok(100));
    }

    #[test]
    fn bump_that_does_not_fit_the_gap_advances_to_the_next_gap() {
        // Gap [4000, 4300): 200 bytes fit in size but straddle; bumped 4096+200 = 4296 fits.
        let mut occ = vec![r(0, 4000), r(4300, 9000)];
        assert_eq!(search(&mut occ, 200, &params(0, 1 << 20, Fit::First)), Ok(4096));
        // Gap [4000, 4250): bumped 4096+200 > 4250: next gap.
        let mut occ = vec![r(0, 4000), r(4250, 9000)];
        assert_eq!(search(&mut occ, 200, &params(0, 1 << 20, Fit::First)), Ok(9000));
    }

    #[test]
    fn best_fit_takes_the_smallest_bounded_gap() {
        let mut occ = vec![r(0, 10), r(30, 40), r(45, 50)];
        let p = SearchParams { align: 1, ..params(0, 1000, Fit::Best) };
        assert_eq!(search(&mut occ, 5, &p), Ok(40));
        assert_eq!(search(&mut occ, 6, &p), Ok(10));
        assert_eq!(search(&mut occ, 100, &p), Ok(50));
        let p = SearchParams { fit: Fit::First, ..p };
        assert_eq!(search(&mut occ, 5, &p), Ok(10));
    }

    #[test]
    fn nothing_fits_reports_the_largest_gap() {
        let mut occ = vec![r(0, 10), r(30, 40)];
        assert_eq!(search(&mut occ, 50, &params(0, 60, Fit::First)), Err(20));
        assert_eq!(search(&mut occ, 1, &params(70, 60, Fit::First)), Err(0));
    }

    #[test]
    fn address_multiple_and_zero_size() {
        let mut occ = vec![r(0, 10)];
        let p = SearchParams { align: 1, multiple: 8, ..params(0, 100, Fit::First) };
        assert_eq!(search(&mut occ, 4, &p), Ok(16));
        assert_eq!(search(&mut occ, 0, &p), Ok(0));
        assert_eq!(search(&mut occ, 0, &SearchParams { start: 3, ..p }), Ok(8));
    }
}
