//! The IR checker's own liveness: positions from its own walk over the
//! blocks, live segments from a backward scan per location. Shares nothing
//! with the driver's forward def->use walk; both implement one definition:
//! a location is live at every instruction that touches it, and between a
//! read and the writes whose bytes it may see (back to the last full
//! overwrite before the read, or the first write). A write no read follows
//! is live at its own position only.
//!
//! Cost: O(t + L) for the function's t (instruction, location) touches and
//! the module's L locations: the touches are bucketed by location with one
//! counting sort (positions ascend within a bucket), and each bucket is
//! scanned once. No allocation per instruction.

use crate::ir::{Function, MemLocId, Module};

/// What one instruction does to one location.
#[derive(Debug, Clone, Copy, Default)]
struct Touch {
    reads: bool,
    writes: bool,
    /// The write covers every element.
    whole: bool,
}

/// The live segments of every location one function touches.
pub struct LiveSegments {
    /// The touched locations, ascending.
    touched: Vec<MemLocId>,
    /// `starts[k]..starts[k + 1]` indexes `segs` for `touched[k]`.
    starts: Vec<usize>,
    /// Inclusive segments `(from, to)`, ascending per location.
    segs: Vec<(u64, u64)>,
    /// Location index -> its position in `touched` (`u32::MAX`: untouched).
    slot: Vec<u32>,
}

impl LiveSegments {
    /// The touched locations, ascending.
    pub fn touched(&self) -> &[MemLocId] {
        &self.touched
    }

    /// The segments of `id` (empty if untouched).
    pub fn get(&self, id: MemLocId) -> &[(u64, u64)] {
        match self.slot.get(id.index()).copied() {
            Some(k) if k != u32::MAX => &self.segs[self.starts[k as usize]..self.starts[k as usize + 1]],
            _ => &[],
        }
    }
}

/// Inclusive live segments `(from, to)` of every location `f` touches, ascending.
/// An access to a location outside `m.memlocs` is ignored (it has no bytes to check).
pub fn live_segments(m: &Module, f: &Function) -> LiveSegments {
    let nl = m.memlocs.len();
    // Pass 1: one (location, position, touch) per distinct location an instruction touches.
    // Sized for the usual one or two reads and one write per instruction (grows past that).
    // Positions are u32 (12 bytes a touch here, 8 once sorted): a function
    // of 2^32 instructions cannot be held in memory, so they never saturate.
    let mut flat: Vec<(u32, u32, Touch)> = Vec::with_capacity(f.insts.len().saturating_mul(2));
    let mut pos = 0u32;
    for block in &f.blocks {
        for id in &block.insts {
            let Some(inst) = f.insts.get(id.index()) else { continue };
            let here = flat.len();
            for ap in inst.read_slice() {
                let Ok(loc) = u32::try_from(ap.loc.index()) else { continue };
                if ap.loc.index() >= nl {
                    continue;
                }
                match flat[here..].iter_mut().find(|e| e.0 == loc) {
                    Some(e) => e.2.reads = true,
                    None => flat.push((loc, pos, Touch { reads: true, ..Touch::default() })),
                }
            }
            if let Some(ap) = inst.write()
                && let Some(l) = m.memlocs.get(ap.loc.index())
                && let Ok(loc) = u32::try_from(ap.loc.index())
            {
                let whole = ap.offset == 0 && ap.len >= l.elem_count;
                let t = match flat[here..].iter_mut().position(|e| e.0 == loc) {
                    Some(k) => &mut flat[here + k].2,
                    None => {
                        flat.push((loc, pos, Touch::default()));
                        let last = flat.len() - 1;
                        &mut flat[last].2
                    }
                };
                t.writes = true;
                t.whole |= whole;
            }
            pos = pos.saturating_add(1);
        }
    }
    // Pass 2: a counting sort by location (stable: positions stay ascending).
    let mut count = vec![0usize; nl + 1];
    for e in &flat {
        count[e.0 as usize + 1] += 1;
    }
    for k in 1..count.len() {
        count[k] += count[k - 1];
    }
    let mut next = count.clone();
    let mut sorted: Vec<(u32, Touch)> = vec![(0, Touch::default()); flat.len()];
    for &(loc, p, t) in &flat {
        sorted[next[loc as usize]] = (p, t);
        next[loc as usize] += 1;
    }
    drop(next);
    drop(flat);
    // Pass 3: the backward scan per touched location.
    let mut out = LiveSegments { touched: Vec::new(), starts: vec![0], segs: Vec::new(), slot: vec![u32::MAX; nl] };
    for loc in 0..nl {
        let ev = &sorted[count[loc]..count[loc + 1]];
        if ev.is_empty() {
            continue;
        }
        out.slot[loc] = out.touched.len() as u32;
        out.touched.push(MemLocId::from_index(loc));
        segments_into(ev, &mut out.segs);
        out.starts.push(out.segs.len());
    }
    out
}

/// The backward scan over one location's touches (ascending positions).
#[cfg(test)]
fn segments(ev: &[(u32, Touch)]) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    segments_into(ev, &mut out);
    out
}

/// [`segments`], appended to `all` (ascending; no allocation per location).
fn segments_into(ev: &[(u32, Touch)], all: &mut Vec<(u64, u64)>) {
    let first_write = ev.iter().find(|(_, t)| t.writes).map(|&(p, _)| u64::from(p));
    let from = all.len();
    let out = all;
    // Some(top) while the location is live just above the current position.
    let mut open: Option<u64> = None;
    for &(p, t) in ev.iter().rev() {
        let p = u64::from(p);
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
        out.push((u64::from(p), top));
    }
    out[from..].reverse();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::parse;

    /// Pass 1 (the touches) through whole modules: each location's segments.
    /// - `a`: its only read is an instruction's second source (pos 1);
    /// - `c`: a partial write at offset 0 (pos 3) keeps the first write live;
    /// - `d`: a whole overwrite (pos 5) ends the first def's segment;
    /// - `e`: first written in place as the second source of its own writer (pos 7);
    /// - `u`: never touched, so it has no segments.
    #[test]
    fn touches_of_whole_instructions() {
        let m = parse(
            "module k lnc 1
loc x dram input i32[8] @0x0
loc a dram internal i32[8]
loc b dram internal i32[8]
loc c dram internal i32[8]
loc d dram internal i32[8]
loc e dram internal i32[8]
loc u dram internal i32[8]
loc y dram output i32[8] @0x1000
func main
  block entry
    i0 = act relu x[0..8] -> a[0..8]
    i1 = dve add x[0..8], a[0..8] -> b[0..8]
    i2 = act relu x[0..8] -> c[0..8]
    i3 = act relu x[0..4] -> c[0..4]
    i4 = act relu x[0..8] -> d[0..8]
    i5 = act relu c[0..8] -> d[0..8]
    i6 = act relu d[0..8] -> y[0..8]
    i7 = dve add x[0..8], e[0..8] -> e[0..8]
    i8 = dve add e[0..8], b[0..8] -> y[0..8]
",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let live = live_segments(&m, &m.functions[0]);
        let segs = |name: &str| live.get(m.loc_by_name(name).unwrap_or_else(|| panic!("{name}"))).to_vec();
        assert_eq!(segs("a"), vec![(0, 1)]);
        assert_eq!(segs("b"), vec![(1, 8)]);
        assert_eq!(segs("c"), vec![(2, 5)]);
        assert_eq!(segs("d"), vec![(4, 4), (5, 6)]);
        assert_eq!(segs("e"), vec![(7, 8)]);
        assert_eq!(segs("u"), Vec::<(u64, u64)>::new());
        assert_eq!(segs("x"), [0, 1, 2, 3, 4, 7].map(|p| (p, p)).to_vec());
        assert!(!live.touched().contains(&m.loc_by_name("u").unwrap_or_else(|| panic!("u"))));
    }

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
        // The first write reads in place: what it and the read before it read
        // was never written, so nothing is live between them; its segment starts at it.
        assert_eq!(
            segments(&[(1, t(true, false, false)), (3, t(true, true, true)), (5, t(true, false, false))]),
            vec![(1, 1), (3, 5)]
        );
    }
}
