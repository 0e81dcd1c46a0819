//! The IR checker's own liveness: positions from its own walk over the
//! blocks, live segments from a backward scan per location. Shares nothing
//! with the driver's forward def->use walk; both implement one definition:
//! a location is live at every instruction that touches it, and between a
//! read and the writes whose bytes it may see (back to the last full
//! overwrite before the read, or the first write). A write no read follows
//! is live at its own position only.
//!
//! Cost: O(t log t) for the function's t (instruction, location) touches.

use std::collections::BTreeMap;

use crate::ir::{Function, MemLocId, Module};

/// What one instruction does to one location.
#[derive(Debug, Clone, Copy, Default)]
struct Touch {
    reads: bool,
    writes: bool,
    /// The write covers every element.
    whole: bool,
}

/// Inclusive live segments `(from, to)` of every location `f` touches, ascending.
pub fn live_segments(m: &Module, f: &Function) -> BTreeMap<MemLocId, Vec<(u64, u64)>> {
    let mut touches: BTreeMap<MemLocId, Vec<(u64, Touch)>> = BTreeMap::new();
    let mut pos = 0u64;
    for block in &f.blocks {
        for id in &block.insts {
            let Some(inst) = f.insts.get(id.index()) else { continue };
            let mut here: BTreeMap<MemLocId, Touch> = BTreeMap::new();
            for ap in inst.reads() {
                here.entry(ap.loc).or_default().reads = true;
            }
            if let Some(ap) = inst.write() {
                let count = m.memlocs.get(ap.loc.index()).map_or(u64::MAX, |l| l.elem_count);
                let t = here.entry(ap.loc).or_default();
                t.writes = true;
                t.whole |= ap.offset == 0 && ap.len >= count;
            }
            for (loc, t) in here {
                touches.entry(loc).or_default().push((pos, t));
            }
            pos += 1;
        }
    }
    touches.into_iter().map(|(loc, ev)| (loc, segments(&ev))).collect()
}

/// The backward scan over one location's touches (ascending positions).
fn segments(ev: &[(u64, Touch)]) -> Vec<(u64, u64)> {
    let first_write = ev.iter().find(|(_, t)| t.writes).map(|&(p, _)| p);
    let mut out = Vec::new();
    // Some(top) while the location is live just above the current position.
    let mut open: Option<u64> = None;
    for &(p, t) in ev.iter().rev() {
        let top = open.unwrap_or(p);
        let written_below = first_write.is_some_and(|w| w < p);
        let live_below = written_below && (t.reads || (open.is_some() && !(t.writes && t.whole)));
        if live_below {
            open = Some(top);
        } else {
            out.push((p, top));
            open = None;
        }
    }
    if let (Some(top), Some(&(p, _))) = (open, ev.first()) {
        out.push((p, top));
    }
    out.reverse();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(reads: bool, writes: bool, whole: bool) -> Touch {
        Touch { reads, writes, whole }
    }

    #[test]
    fn backward_scan_cases() {
        // Write at 0, reads at 2 and 5: one segment.
        assert_eq!(
            segments(&[(0, t(false, true, true)), (2, t(true, false, false)), (5, t(true, false, false))]),
            vec![(0, 5)]
        );
        // A whole overwrite at 3 with no read between: a dead def and a new segment.
        assert_eq!(
            segments(&[(0, t(false, true, true)), (3, t(false, true, true)), (4, t(true, false, false))]),
            vec![(0, 0), (3, 4)]
        );
        // A partial overwrite keeps the earlier write live.
        assert_eq!(
            segments(&[(0, t(false, true, true)), (3, t(false, true, false)), (4, t(true, false, false))]),
            vec![(0, 4)]
        );
        // A read before any write is live only at its own position.
        assert_eq!(segments(&[(1, t(true, false, false)), (2, t(false, true, true))]), vec![(1, 1), (2, 2)]);
    }
}
