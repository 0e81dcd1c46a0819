//! Shadow memory by address interval: the race detector's and the ownership
//! check's state of every byte, kept as disjoint intervals
//! ([`crate::intervals`]) and created by the accesses themselves.
//!
//! - `writes`: the last write of each byte: its tag (who, which record, at
//!   which clock) and the tensor it made the bytes belong to ([`crate::ownership`];
//!   preset vars own their bytes before the run with no writer).
//! - `reads[t]`: per thread, its latest read of each byte since that byte was
//!   last written (FastTrack's read set, one map per thread), with the owner
//!   it read through and whether that read found every covering last write
//!   ordered before it and owned by that owner (`clean`).
//!
//! A write checks the last writes and every thread's reads under it (races),
//! then replaces them by itself. A read checks the last writes under it
//! (races, clobbers) only where its own thread has no clean read through the
//! same owner since those bytes were written: such a read already found them
//! ordered (clocks only grow) and owned alike (nothing wrote them since), so
//! the findings are those of checking every byte. Findings per access: one
//! race per prior access (the lowest address), one clobber (the lowest).
//!
//! Cost: a write costs O(T log s) probes (T threads, five per core) plus
//! O(log s) per interval it removes; a read O(log s) per read interval it
//! replaces plus O(log s) per last-write interval it checks, and each
//! (last-write interval, thread) pair is checked once unless the first check
//! found something. Every access creates at most three intervals, so n
//! accesses cost O((n T + k) log n) for k findings, in O(n) memory: linear in
//! the program for a fixed core count, independent of how accesses overlap
//! (the former per-segment cells cost the sum of segments covered, quadratic
//! when many accesses fall on one large tensor).

use crate::config::Checks;
use crate::decode::MemRef;
use crate::intervals::Intervals;
use crate::ownership::clobbered;
use crate::race::{Tag, ordered};
use crate::violation::RaceKind;

/// What an access found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Finding {
    /// An unordered conflicting prior access.
    Race { kind: RaceKind, prior: Tag, addr: u64 },
    /// A read of bytes owned by another tensor.
    Clobber { owner: u32, writer: Tag, addr: u64 },
}

/// The last write of some bytes.
#[derive(Clone, Copy, Debug)]
struct Written {
    tag: Tag,
    owner: u32,
}

/// A thread's latest read of some bytes since they were written.
#[derive(Clone, Copy, Debug)]
struct Read {
    tag: Tag,
    owner: u32,
    clean: bool,
}

/// The shadow state.
#[derive(Debug)]
pub(crate) struct Shadow {
    writes: Intervals<Written>,
    reads: Vec<Intervals<Read>>,
    checks: Checks,
    /// Scratch: the pieces of a read to check, and the races of one access.
    todo: Vec<(u64, u64)>,
    races: Vec<(RaceKind, Tag, u64)>,
}

impl Shadow {
    /// Fresh state for `threads` threads with the preset owners `(start, end, owner)` (later ones win).
    pub(crate) fn new(threads: usize, preset: &[(u64, u64, u32)], checks: Checks) -> Shadow {
        let mut writes = Intervals::default();
        if checks.ownership {
            for &(a, e, owner) in preset {
                writes.assign(a, e, Written { tag: Tag::NONE, owner });
            }
        }
        let reads = if checks.races || checks.ownership { vec![Intervals::default(); threads] } else { Vec::new() };
        Shadow { writes, reads, checks, todo: Vec::new(), races: Vec::new() }
    }

    /// Intervals held (writes, reads): for tests of the memory bound.
    #[cfg(test)]
    fn intervals(&self) -> (usize, usize) {
        (self.writes.len(), self.reads.iter().map(Intervals::len).sum())
    }

    /// A read by `tag` (thread clock `vc`) of the bytes of `m` (unmapped accesses are not shadowed).
    pub(crate) fn read(&mut self, m: &MemRef, tag: Tag, vc: &[u32], out: &mut Vec<Finding>) {
        let t = usize::from(tag.thread);
        if m.loc.is_none() || m.len == 0 || t >= self.reads.len() {
            return;
        }
        let (a, b) = (m.pa, m.pa.saturating_add(m.len));
        let mut todo = std::mem::take(&mut self.todo);
        todo.clear();
        let mut cur = a;
        for (s, e, r) in self.reads[t].overlapping(a, b) {
            let (s, e) = (s.max(a), e.min(b));
            if s > cur {
                todo.push((cur, s));
            }
            if !(r.clean && r.owner == m.owner) {
                todo.push((s, e));
            }
            cur = e;
        }
        if cur < b {
            todo.push((cur, b));
        }
        let mut clobber = false;
        self.races.clear();
        for &(pa, pb) in &todo {
            for (s, _, w) in self.writes.overlapping(pa, pb) {
                let addr = s.max(pa);
                if self.checks.races && !ordered(w.tag, tag.thread, vc) {
                    self.races.push((RaceKind::WriteRead, w.tag, addr));
                }
                if self.checks.ownership && !clobber && clobbered(w.owner, m.owner) {
                    clobber = true;
                    out.push(Finding::Clobber { owner: w.owner, writer: w.tag, addr });
                }
            }
        }
        self.todo = todo;
        let clean = !clobber && self.races.is_empty();
        self.flush_races(out);
        self.reads[t].assign(a, b, Read { tag, owner: m.owner, clean });
    }

    /// A write by `tag` (thread clock `vc`) of the bytes of `m` (unmapped accesses are not shadowed).
    pub(crate) fn write(&mut self, m: &MemRef, tag: Tag, vc: &[u32], out: &mut Vec<Finding>) {
        if m.loc.is_none() || m.len == 0 || !(self.checks.races || self.checks.ownership) {
            return;
        }
        let (a, b) = (m.pa, m.pa.saturating_add(m.len));
        self.races.clear();
        if self.checks.races {
            for (s, _, w) in self.writes.overlapping(a, b) {
                if !ordered(w.tag, tag.thread, vc) {
                    self.races.push((RaceKind::WriteWrite, w.tag, s.max(a)));
                }
            }
        }
        for reads in &mut self.reads {
            let mut any = false;
            for (s, _, r) in reads.overlapping(a, b) {
                any = true;
                if self.checks.races && !ordered(r.tag, tag.thread, vc) {
                    self.races.push((RaceKind::ReadWrite, r.tag, s.max(a)));
                }
            }
            if any {
                reads.remove(a, b);
            }
        }
        self.flush_races(out);
        self.writes.assign(a, b, Written { tag, owner: m.owner });
    }

    /// Appends the access's races, one per prior access (its lowest address), by address.
    fn flush_races(&mut self, out: &mut Vec<Finding>) {
        if self.races.is_empty() {
            return;
        }
        self.races.sort_by_key(|&(_, p, addr)| (p.site, p.slot, addr));
        self.races.dedup_by_key(|&mut (_, p, _)| (p.site, p.slot));
        self.races.sort_by_key(|&(_, p, addr)| (addr, p.site, p.slot));
        out.extend(self.races.drain(..).map(|(kind, prior, addr)| Finding::Race { kind, prior, addr }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vars::NONE;

    fn tag(thread: u16, clock: u32, site: u32) -> Tag {
        Tag { thread, slot: 0, clock, site }
    }

    fn mem(pa: u64, len: u64, owner: u32) -> MemRef {
        MemRef { pa, len, owner, loc: Some((0, 0)), ..MemRef::default() }
    }

    fn races(out: &[Finding]) -> Vec<(RaceKind, u32, u64)> {
        out.iter()
            .filter_map(|f| match *f {
                Finding::Race { kind, prior, addr } => Some((kind, prior.site, addr)),
                Finding::Clobber { .. } => None,
            })
            .collect()
    }

    #[test]
    fn unordered_conflicts_are_reported_once_per_prior_and_ordered_ones_are_not() {
        let mut sh = Shadow::new(2, &[], Checks::default());
        let mut out = Vec::new();
        // Thread 0 writes [0, 100) at clock 1.
        sh.write(&mem(0, 100, NONE), tag(0, 1, 10), &[1, 0], &mut out);
        // Thread 1 reads [50, 150) without having seen it: one write-read race at 50.
        sh.read(&mem(50, 100, NONE), tag(1, 1, 11), &[0, 1], &mut out);
        assert_eq!(races(&out), vec![(RaceKind::WriteRead, 10, 50)]);
        out.clear();
        // Thread 0 writes again over [0, 200), not having seen the read: read-write race at 50.
        sh.write(&mem(0, 200, NONE), tag(0, 2, 12), &[2, 0], &mut out);
        assert_eq!(races(&out), vec![(RaceKind::ReadWrite, 11, 50)]);
        out.clear();
        // Thread 1 after joining thread 0's clock 2: ordered.
        sh.write(&mem(10, 20, NONE), tag(1, 2, 13), &[2, 2], &mut out);
        sh.read(&mem(0, 200, NONE), tag(1, 3, 14), &[2, 3], &mut out);
        assert!(out.is_empty(), "{out:?}");
        // Thread 0 without seeing either: read-write with 14 (at 0), write-write with 13 (at 10);
        // its own write 12 is ordered by program order.
        sh.write(&mem(0, 50, NONE), tag(0, 3, 15), &[3, 1], &mut out);
        assert_eq!(races(&out), vec![(RaceKind::ReadWrite, 14, 0), (RaceKind::WriteWrite, 13, 10)]);
    }

    #[test]
    fn a_clean_read_is_not_rechecked_but_a_racy_or_other_owner_read_is() {
        let mut sh = Shadow::new(2, &[(0, 100, 7)], Checks::default());
        let mut out = Vec::new();
        // Thread 0's unordered write of [40, 60), then thread 1 reads [0, 100) twice: both reads race.
        sh.write(&mem(40, 20, 7), tag(0, 1, 1), &[1, 0], &mut out);
        sh.read(&mem(0, 100, 7), tag(1, 1, 2), &[0, 1], &mut out);
        sh.read(&mem(0, 100, 7), tag(1, 2, 3), &[0, 2], &mut out);
        assert_eq!(races(&out), vec![(RaceKind::WriteRead, 1, 40), (RaceKind::WriteRead, 1, 40)]);
        out.clear();
        // Ordered now, then read through owner 7 (clean) and through owner 8: a clobber at 0 (preset bytes).
        sh.read(&mem(0, 100, 7), tag(1, 3, 4), &[1, 3], &mut out);
        assert!(out.is_empty());
        sh.read(&mem(0, 100, 8), tag(1, 4, 5), &[1, 4], &mut out);
        assert_eq!(out, vec![Finding::Clobber { owner: 7, writer: Tag::NONE, addr: 0 }]);
        out.clear();
        // Thread 0 writes [50, 60) through owner 8: thread 1 reading through 7 finds it clobbered at 50.
        sh.write(&mem(50, 10, 8), tag(0, 2, 6), &[2, 4], &mut out);
        sh.read(&mem(0, 100, 7), tag(1, 5, 7), &[2, 5], &mut out);
        assert_eq!(out, vec![Finding::Clobber { owner: 8, writer: tag(0, 2, 6), addr: 50 }]);
    }

    #[test]
    fn many_reads_of_one_large_tensor_keep_few_intervals() {
        let mut sh = Shadow::new(2, &[(0, 1 << 20, 1)], Checks::default());
        let mut out = Vec::new();
        for k in 0..10_000u64 {
            let a = (k * 7919) % ((1 << 20) - 4096);
            sh.read(&mem(a, 4096, 1), tag((k % 2) as u16, k as u32 + 1, k as u32), &[0, 0], &mut out);
        }
        assert!(out.is_empty());
        let (w, r) = sh.intervals();
        assert_eq!(w, 1);
        assert!(r <= 2 * 10_000 + 2, "{r} read intervals");
    }
}
