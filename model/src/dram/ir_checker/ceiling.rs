//! The private region of each function, recomputed from the IR instead of
//! read from the allocator's `dram_region_ceiling` record (seed 004, "The
//! allocate Driver" and "the HWM floor"; lncsim's compact window).
//!
//! Rule. `coloring_allocator_dram` runs the functions of a module in order; a
//! function places the DRAM Internal/Spill locations it touches that no
//! earlier function touched (its *candidates*). Its floor is one past the
//! high-water mark of what is already placed when it runs: every addressed
//! DRAM location of any usage but Shared that is not a candidate of it or of a
//! later function, each up to its page-rounded end (a zero-byte one has no
//! footprint). Its ceiling is the configured window; in compact mode it is
//! the floor plus the candidates' page-rounded sizes (at least one page each)
//! plus ccLimit, page-rounded, at least one page above the floor and never
//! above the window (the window when that sum overflows). A function with no
//! candidate places nothing and records nothing.
//!
//! Cost: O(i + L) for a module's i instructions and L locations (one pass
//! over each function's accesses for the first toucher, one over the
//! locations for the sizes), memory O(L + F) for F functions.

use super::{PAGE, page_up};
use crate::ir::{MemType, MemoryLocation, Module, Usage};

/// No function touches the location.
const NONE: u32 = u32::MAX;

/// Whether `l` is a private allocator candidate (DRAM Internal or Spill).
pub(super) fn is_private(l: &MemoryLocation) -> bool {
    l.mem_type == MemType::Dram && matches!(l.usage, Usage::Internal | Usage::Spill)
}

/// One module's private regions, per function (module order).
pub(super) struct PrivateRegions {
    /// Per location: the first function (index) touching it, [`NONE`] if none.
    first: Vec<u32>,
    /// Per function: its floor.
    floor: Vec<u64>,
    /// Per function: the sum of its candidates' sizes, each page-rounded and at least a page (`None`: overflow).
    sum: Vec<Option<u64>>,
}

impl PrivateRegions {
    /// The first toucher of every location, each function's floor and candidate sizes.
    pub(super) fn new(m: &Module) -> Self {
        let nf = m.functions.len();
        let mut first = vec![NONE; m.memlocs.len()];
        for (fi, f) in m.functions.iter().enumerate() {
            let fi = u32::try_from(fi).unwrap_or(NONE - 1);
            for a in f.insts.iter().flat_map(|i| i.read_slice().iter().chain(i.write_ref())) {
                if let Some(slot) = first.get_mut(a.loc.index())
                    && *slot == NONE
                {
                    *slot = fi;
                }
            }
        }
        // What each function adds to the high-water mark once it ran, and what is placed before any.
        let mut placed_by = vec![0u64; nf];
        let mut sum: Vec<Option<u64>> = vec![Some(0); nf];
        let mut base = 0u64;
        for (l, &fi) in m.memlocs.iter().zip(&first) {
            let candidate = is_private(l) && fi != NONE;
            if candidate && let Some(s) = sum.get_mut(fi as usize) {
                *s = s.and_then(|s| s.checked_add(page_up(l.byte_size().max(1))));
            }
            let footprint = page_up(l.byte_size());
            let Some(address) = l.address.filter(|_| footprint > 0) else { continue };
            if l.mem_type != MemType::Dram || l.usage == Usage::Shared {
                continue;
            }
            let end = address.saturating_add(footprint);
            match placed_by.get_mut(fi as usize).filter(|_| candidate) {
                Some(p) => *p = (*p).max(end),
                None => base = base.max(end),
            }
        }
        let mut floor = Vec::with_capacity(nf);
        let mut hwm = base;
        for p in placed_by {
            floor.push(hwm);
            hwm = hwm.max(p);
        }
        PrivateRegions { first, floor, sum }
    }

    /// Whether location index `i` is a candidate of function `fi` (touched first by it).
    pub(super) fn is_candidate_of(&self, i: usize, fi: usize) -> bool {
        self.first.get(i).is_some_and(|&f| f as usize == fi)
    }

    /// Function `fi`'s floor.
    pub(super) fn floor(&self, fi: usize) -> u64 {
        self.floor.get(fi).copied().unwrap_or(0)
    }

    /// Function `fi`'s ceiling under `window`, compact or not, with CC region size `cc_limit`.
    pub(super) fn ceiling(&self, fi: usize, window: u64, compact: bool, cc_limit: u64) -> u64 {
        if !compact {
            return window;
        }
        let floor = self.floor(fi);
        let tight = self
            .sum
            .get(fi)
            .copied()
            .flatten()
            .and_then(|s| floor.checked_add(s))
            .and_then(|v| v.checked_add(cc_limit))
            .and_then(|v| v.checked_next_multiple_of(PAGE));
        match tight {
            Some(t) => t.max(floor.saturating_add(PAGE)).min(window),
            None => window,
        }
    }
}
