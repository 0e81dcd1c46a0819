//! Shadow memory by address interval: the race detector's and the ownership
//! check's state of every byte, kept as disjoint intervals
//! ([`crate::check::intervals`]) and created by the accesses themselves.
//!
//! - `writes`: the last write of each byte: its tag (who, which record, at
//!   which clock) and the tensor it made the bytes belong to ([`crate::check::ownership`];
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
//! The state is kept per mirrored region ([`crate::engine::mirror`]):
//! every access lies inside one region (the mirror merges overlapping and
//! touching accesses), so no interval crosses a region and each access
//! searches only its own region's small maps, found by the index the
//! mirror resolved at build time (no search over the whole address space).
//!
//! - `masks`: per granule of `GRANULE` bytes of a region (counted from the
//!   region's start, so no granule spans two regions), which threads may
//!   hold a read overlapping it (bit `t % 64`; exact for up to 64 threads, a
//!   superset beyond), in one dense array. A write probes only the read maps
//!   of those threads instead of every thread's that read in the region,
//!   and clears the bits of the granules it leaves without reads.
//!
//! Cost: a write costs O(g) mask updates for the g granules it covers (at
//! most `len / GRANULE + 2`, fewer than the bytes the record moves) plus
//! O(log s) per thread that holds a read in those granules, plus O(log s) per
//! interval it removes; a read O(g) mask updates plus O(log T) to find its
//! thread's map plus O(log s) per read interval it replaces plus O(log s)
//! per last-write interval it checks, and each (last-write interval, thread)
//! pair is checked once unless the first check found something (s: the
//! intervals of the one region, usually a handful). Every access creates at
//! most three intervals, so n accesses cost O((n c + k) log n + b / GRANULE)
//! for k findings, c threads reading each granule (at most T, five per core;
//! one or two in practice) and b bytes accessed, in O(n + m / GRANULE + r)
//! memory for m mirrored bytes in r regions: linear in the program for a
//! fixed core count, independent of how accesses overlap. Building costs
//! O(r + p log r + q) for p preset ranges meeting regions q times.

use crate::check::intervals::Intervals;
use crate::check::ownership::clobbered;
use crate::check::race::{NO_THREAD, Tag, ordered};
use crate::check::violation::RaceKind;
use crate::engine::config::Checks;
use crate::engine::decode::MemRef;

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

/// Bytes per granule of the reader masks (a power of two).
const GRANULE_SHIFT: u32 = 8;

/// The granules `[first, last]` holding the bytes `[a, b)` (`a < b`) of a region.
fn granules(a: u64, b: u64) -> (u64, u64) {
    (a >> GRANULE_SHIFT, (b - 1) >> GRANULE_SHIFT)
}

/// One region's state.
#[derive(Debug, Default)]
struct Local {
    writes: Intervals<Written>,
    /// Per thread that holds a read here, sorted by thread.
    reads: Vec<(u16, Intervals<Read>)>,
}

/// The shadow state.
#[derive(Debug)]
pub(crate) struct Shadow {
    regions: Vec<Local>,
    /// Per region: its start address and the index of its first granule in `masks`.
    spans: Vec<(u64, usize)>,
    masks: Vec<u64>,
    shadowed: bool,
    checks: Checks,
    /// Scratch: the pieces of a read to check, and the races of one access.
    todo: Vec<(u64, u64)>,
    races: Vec<(RaceKind, Tag, u64)>,
    /// Prior accesses by another thread that an access was ordered against
    /// (the race detector's comparisons; 0: it judged nothing).
    pub(crate) compared: u64,
}

impl Shadow {
    /// Fresh state for `threads` threads over the mirrored regions `(start, len)`
    /// (ascending, disjoint) with the preset owners `(start, end, owner)` (later ones win).
    pub(crate) fn new(threads: usize, regions: &[(u64, u64)], preset: &[(u64, u64, u32)], checks: Checks) -> Shadow {
        let shadowed = threads > 0 && (checks.races || checks.ownership);
        let mut sh = Shadow {
            regions: Vec::new(),
            spans: Vec::new(),
            masks: Vec::new(),
            shadowed,
            checks,
            todo: Vec::new(),
            races: Vec::new(),
            compared: 0,
        };
        if !shadowed {
            return sh;
        }
        sh.regions.resize_with(regions.len(), Local::default);
        sh.spans.reserve_exact(regions.len());
        let mut granules = 0usize;
        for &(start, len) in regions {
            sh.spans.push((start, granules));
            granules = granules.saturating_add(usize::try_from(len.div_ceil(1 << GRANULE_SHIFT)).unwrap_or(usize::MAX));
        }
        sh.masks = vec![0; granules];
        if checks.ownership {
            for &(a, e, owner) in preset {
                let first = regions.partition_point(|&(s, l)| s.saturating_add(l) <= a);
                for (k, &(s, l)) in regions.iter().enumerate().skip(first).take_while(|(_, r)| r.0 < e) {
                    let (lo, hi) = (a.max(s), e.min(s.saturating_add(l)));
                    sh.regions[k].writes.assign(lo, hi, Written { tag: Tag::NONE, owner });
                }
            }
        }
        sh
    }

    /// Intervals held (writes, reads): for tests of the memory bound.
    #[cfg(test)]
    fn intervals(&self) -> (usize, usize) {
        let w = self.regions.iter().map(|l| l.writes.len()).sum();
        let r = self.regions.iter().flat_map(|l| &l.reads).map(|(_, m)| m.len()).sum();
        (w, r)
    }

    /// The reader mask of granule `g` of region `r` (tests).
    #[cfg(test)]
    fn mask(&self, r: usize, g: usize) -> u64 {
        self.masks[self.spans[r].1 + g]
    }

    /// The region of a mapped access, its bytes `[a, b)`, the index of the
    /// region's first granule and the region's start; `None` when it is not
    /// shadowed (unmapped, empty, or placed past its region).
    fn place(&self, m: &MemRef) -> Option<(usize, u64, u64, usize, u64)> {
        let (r, off) = m.loc?;
        let &(_, gbase) = self.spans.get(r as usize)?;
        if m.len == 0 || !self.shadowed {
            return None;
        }
        let start = m.pa.checked_sub(off as u64)?;
        let last = gbase.checked_add(usize::try_from((off as u64).checked_add(m.len - 1)? >> GRANULE_SHIFT).ok()?)?;
        let end = self.spans.get(r as usize + 1).map_or(self.masks.len(), |x| x.1);
        (last < end).then_some((r as usize, m.pa, m.pa.checked_add(m.len)?, gbase, start))
    }

    /// A read by `tag` (thread clock `vc`) of the bytes of `m` (unmapped accesses are not shadowed).
    pub(crate) fn read(&mut self, m: &MemRef, tag: Tag, vc: &[u32], out: &mut Vec<Finding>) {
        let Some((r, a, b, gbase, start)) = self.place(m) else { return };
        let t = tag.thread;
        let local = &mut self.regions[r];
        let ti = match local.reads.binary_search_by_key(&t, |x| x.0) {
            Ok(i) => i,
            Err(i) => {
                local.reads.insert(i, (t, Intervals::default()));
                i
            }
        };
        let mut todo = std::mem::take(&mut self.todo);
        todo.clear();
        let mut cur = a;
        for (s, e, rd) in local.reads[ti].1.overlapping(a, b) {
            let (s, e) = (s.max(a), e.min(b));
            if s > cur {
                todo.push((cur, s));
            }
            if !(rd.clean && rd.owner == m.owner) {
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
            for (s, _, w) in local.writes.overlapping(pa, pb) {
                let addr = s.max(pa);
                if self.checks.races {
                    self.compared += u64::from(other(w.tag, tag.thread));
                    if !ordered(w.tag, tag.thread, vc) {
                        self.races.push((RaceKind::WriteRead, w.tag, addr));
                    }
                }
                if self.checks.ownership && !clobber && clobbered(w.owner, m.owner) {
                    clobber = true;
                    out.push(Finding::Clobber { owner: w.owner, writer: w.tag, addr });
                }
            }
        }
        self.todo = todo;
        let clean = !clobber && self.races.is_empty();
        local.reads[ti].1.assign(a, b, Read { tag, owner: m.owner, clean });
        let (g0, g1) = granules(a - start, b - start);
        for g in &mut self.masks[gbase + g0 as usize..=gbase + g1 as usize] {
            *g |= 1 << (t % 64);
        }
        self.flush_races(out);
    }

    /// A write by `tag` (thread clock `vc`) of the bytes of `m` (unmapped accesses are not shadowed).
    pub(crate) fn write(&mut self, m: &MemRef, tag: Tag, vc: &[u32], out: &mut Vec<Finding>) {
        let Some((r, a, b, gbase, start)) = self.place(m) else { return };
        let local = &mut self.regions[r];
        self.races.clear();
        if self.checks.races {
            for (s, _, w) in local.writes.overlapping(a, b) {
                self.compared += u64::from(other(w.tag, tag.thread));
                if !ordered(w.tag, tag.thread, vc) {
                    self.races.push((RaceKind::WriteWrite, w.tag, s.max(a)));
                }
            }
        }
        // The threads that may hold reads under [a, b): those of its granules' masks.
        let (g0, g1) = granules(a - start, b - start);
        let masks = &mut self.masks[gbase + g0 as usize..=gbase + g1 as usize];
        let mask = masks.iter().fold(0u64, |x, &m| x | m);
        if mask != 0 {
            // Scan each candidate over the whole granules, so the edge granules learn
            // whether any read outside [a, b) is left in them.
            let ga = start + (g0 << GRANULE_SHIFT);
            let gb = (start + (g1 << GRANULE_SHIFT)).saturating_add(1 << GRANULE_SHIFT);
            let (mut keep0, mut keep1) = (0u64, 0u64);
            for (t, reads) in &mut local.reads {
                let bit = 1u64 << (*t % 64);
                if mask & bit == 0 {
                    continue;
                }
                let mut any = false;
                for (s, e, rd) in reads.overlapping(ga, gb) {
                    if s < b && e > a {
                        any = true;
                        if self.checks.races {
                            self.compared += u64::from(other(rd.tag, tag.thread));
                            if !ordered(rd.tag, tag.thread, vc) {
                                self.races.push((RaceKind::ReadWrite, rd.tag, s.max(a)));
                            }
                        }
                    }
                    // What is left of it after the write, inside the edge granules.
                    if s.max(ga) < e.min(a) {
                        keep0 |= bit;
                    }
                    if s.max(b) < e.min(gb) {
                        keep1 |= bit;
                    }
                }
                if any {
                    reads.remove(a, b);
                }
            }
            local.reads.retain(|(_, m)| !m.is_empty());
            // Reads left outside [a, b) can only be in the edge granules.
            let last = masks.len() - 1;
            for (k, g) in masks.iter_mut().enumerate() {
                let left = (if k == 0 { keep0 } else { 0 }) | (if k == last { keep1 } else { 0 });
                *g &= left;
            }
        }
        local.writes.assign(a, b, Written { tag, owner: m.owner });
        self.flush_races(out);
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

/// Whether `prior` is an access by a thread other than `thread`.
fn other(prior: Tag, thread: u16) -> bool {
    prior.thread != NO_THREAD && prior.thread != thread
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::race::join;
    use crate::engine::vars::NONE;

    fn tag(thread: u16, clock: u32, site: u32) -> Tag {
        Tag { thread, slot: 0, clock, site }
    }

    /// An access inside the one region `[0, 1 << 24)` of [`one`].
    fn mem(pa: u64, len: u64, owner: u32) -> MemRef {
        MemRef { pa, len, owner, loc: Some((0, pa as usize)), ..MemRef::default() }
    }

    /// Shadow state over the one region `[0, 1 << 24)`.
    fn one(threads: usize, preset: &[(u64, u64, u32)]) -> Shadow {
        Shadow::new(threads, &[(0, 1 << 24)], preset, Checks::default())
    }

    fn races(out: &[Finding]) -> Vec<(RaceKind, u32, u64)> {
        out.iter()
            .filter_map(|f| match *f {
                Finding::Race { kind, prior, addr } => Some((kind, prior.site, addr)),
                Finding::Clobber { .. } => None,
            })
            .collect()
    }

    /// `compared` counts the prior accesses of other threads an access was
    /// judged against, whether ordered or racing, and never a thread's own.
    #[test]
    fn comparisons_count_other_threads_priors_only() {
        let mut sh = one(2, &[]);
        let mut out = Vec::new();
        sh.write(&mem(0, 100, NONE), tag(0, 1, 10), &[1, 0], &mut out);
        sh.read(&mem(0, 100, NONE), tag(0, 2, 11), &[2, 0], &mut out);
        sh.write(&mem(0, 100, NONE), tag(0, 3, 12), &[3, 0], &mut out);
        assert_eq!(sh.compared, 0, "one thread alone compares nothing");
        // Thread 1, ordered after thread 0's write: one write compared for its read.
        sh.read(&mem(0, 10, NONE), tag(1, 1, 13), &[3, 1], &mut out);
        assert_eq!(sh.compared, 1);
        // Thread 0 writes over thread 1's read, unordered: one read compared, one race.
        sh.write(&mem(0, 10, NONE), tag(0, 4, 14), &[4, 0], &mut out);
        assert_eq!(sh.compared, 2);
        assert_eq!(races(&out), vec![(RaceKind::ReadWrite, 13, 0)]);
        // Thread 1 writes over thread 0's write, ordered: one more.
        sh.write(&mem(0, 10, NONE), tag(1, 2, 15), &[4, 2], &mut out);
        assert_eq!(sh.compared, 3);
    }

    #[test]
    fn unordered_conflicts_are_reported_once_per_prior_and_ordered_ones_are_not() {
        let mut sh = one(2, &[]);
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
        let mut sh = one(2, &[(0, 100, 7)]);
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

    /// Every byte's state, checked byte by byte: the oracle of the shadow's findings.
    struct Bytes {
        writes: Vec<(Tag, u32)>,
        reads: Vec<Vec<Option<Tag>>>,
    }

    impl Bytes {
        fn access(&mut self, write: bool, m: &MemRef, tag: Tag, vc: &[u32]) -> Vec<Finding> {
            let mut races: Vec<(RaceKind, Tag, u64)> = Vec::new();
            let mut clobber = None;
            for x in m.pa..m.pa + m.len {
                let (w, owner) = self.writes[x as usize];
                if !ordered(w, tag.thread, vc) {
                    races.push((if write { RaceKind::WriteWrite } else { RaceKind::WriteRead }, w, x));
                }
                if write {
                    for t in 0..self.reads.len() {
                        if let Some(r) = self.reads[t][x as usize].take()
                            && !ordered(r, tag.thread, vc)
                        {
                            races.push((RaceKind::ReadWrite, r, x));
                        }
                    }
                    self.writes[x as usize] = (tag, m.owner);
                } else {
                    if clobber.is_none() && clobbered(owner, m.owner) {
                        clobber = Some(Finding::Clobber { owner, writer: w, addr: x });
                    }
                    self.reads[usize::from(tag.thread)][x as usize] = Some(tag);
                }
            }
            let mut first: Vec<(RaceKind, Tag, u64)> = Vec::new();
            for r in races {
                if !first.iter().any(|f| (f.1.site, f.1.slot) == (r.1.site, r.1.slot)) {
                    first.push(r);
                }
            }
            first.sort_by_key(|&(_, p, addr)| (addr, p.site, p.slot));
            clobber
                .into_iter()
                .chain(first.into_iter().map(|(kind, prior, addr)| Finding::Race { kind, prior, addr }))
                .collect()
        }
    }

    #[test]
    fn findings_equal_a_byte_by_byte_check_with_threads_sharing_reader_bits() {
        use rand::{RngExt, SeedableRng};
        // 70 threads: threads t and t + 64 share a reader bit. Two regions, the
        // second starting off a granule edge, and a gap between them.
        const THREADS: usize = 70;
        const BYTES: u64 = 6 << GRANULE_SHIFT;
        let regions = [(0, (3 << GRANULE_SHIFT) + 13), ((4 << GRANULE_SHIFT) - 100, (2 << GRANULE_SHIFT) + 100)];
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let mut found = 0;
        for _ in 0..60 {
            let preset = [(0, BYTES / 2, 1), (BYTES / 3, BYTES, 2)];
            let mut sh = Shadow::new(THREADS, &regions, &preset, Checks::default());
            let mut writes = vec![(Tag::NONE, NONE); BYTES as usize];
            for &(a, e, o) in &preset {
                writes[a as usize..e as usize].fill((Tag::NONE, o));
            }
            let mut bytes = Bytes { writes, reads: vec![vec![None; BYTES as usize]; THREADS] };
            let mut clocks = vec![vec![0u32; THREADS]; THREADS];
            let hot = [0usize, 1, 64, 65, 69];
            for site in 0..400u32 {
                let t = if rng.random_bool(0.7) {
                    hot[rng.random_range(0..hot.len())]
                } else {
                    rng.random_range(0..THREADS)
                };
                // Monotone clocks: a tick, sometimes a join of another thread's clock.
                clocks[t][t] += 1;
                if rng.random_bool(0.3) {
                    let u = hot[rng.random_range(0..hot.len())];
                    let from = clocks[u].clone();
                    join(&mut clocks[t], &from);
                }
                let vc = clocks[t].clone();
                let r = rng.random_range(0..2usize);
                let (start, size) = regions[r];
                let a = start + rng.random_range(0..size - 1);
                let len = if rng.random_bool(0.8) { rng.random_range(1..=64) } else { rng.random_range(1..=600) };
                let len = len.min(start + size - a);
                let owner = [NONE, 1, 2][rng.random_range(0..3)];
                let m = MemRef { pa: a, len, owner, loc: Some((r as u32, (a - start) as usize)), ..MemRef::default() };
                let write = rng.random_bool(0.4);
                let tag = Tag { thread: t as u16, slot: 0, clock: vc[t], site };
                let mut out = Vec::new();
                if write {
                    sh.write(&m, tag, &vc, &mut out);
                } else {
                    sh.read(&m, tag, &vc, &mut out);
                }
                let want = bytes.access(write, &m, tag, &vc);
                assert_eq!(
                    out,
                    want,
                    "access {site}: {} of [{a}, {}) by thread {t}",
                    if write { "write" } else { "read" },
                    a + len
                );
                found += out.len();
            }
            // The masks hold a bit only where a read is left (exact below 64 threads, here a superset).
            for (r, &(start, size)) in regions.iter().enumerate() {
                for g in 0..size.div_ceil(1 << GRANULE_SHIFT) {
                    let (ga, gb) = (start + (g << GRANULE_SHIFT), start + ((g + 1) << GRANULE_SHIFT));
                    let left = sh.regions[r]
                        .reads
                        .iter()
                        .filter(|(_, m)| m.overlapping(ga, gb).next().is_some())
                        .fold(0u64, |m, &(t, _)| m | 1 << (t % 64));
                    assert_eq!(sh.mask(r, g as usize), left, "region {r} granule {g}");
                }
            }
        }
        assert!(found > 1000, "the sequences find races and clobbers: {found}");
    }

    #[test]
    fn an_access_placed_past_its_region_or_unmapped_is_not_shadowed() {
        let mut sh = Shadow::new(2, &[(0, 300), (1000, 10)], &[], Checks::default());
        let mut out = Vec::new();
        let past = MemRef { pa: 1005, len: 300, loc: Some((1, 5)), ..MemRef::default() };
        sh.write(&past, tag(0, 1, 1), &[1, 0], &mut out);
        let lost = MemRef { pa: 0, len: 4, loc: Some((2, 0)), ..MemRef::default() };
        sh.write(&lost, tag(0, 2, 2), &[2, 0], &mut out);
        sh.write(&MemRef { loc: None, ..mem(0, 4, NONE) }, tag(0, 3, 3), &[3, 0], &mut out);
        assert_eq!(sh.intervals(), (0, 0));
        // A write in region 1 and an unordered read of it race; region 0 is untouched.
        sh.write(&MemRef { pa: 1002, len: 4, loc: Some((1, 2)), ..MemRef::default() }, tag(0, 4, 4), &[4, 0], &mut out);
        sh.read(&MemRef { pa: 1000, len: 10, loc: Some((1, 0)), ..MemRef::default() }, tag(1, 1, 5), &[0, 1], &mut out);
        assert_eq!(races(&out), vec![(RaceKind::WriteRead, 4, 1002)]);
        assert_eq!(sh.regions[0].writes.len(), 0);
    }

    #[test]
    fn an_access_ending_at_its_regions_last_byte_is_shadowed() {
        // The region's length is a whole number of granules, so its last byte
        // sits in its last granule: an access ending there is inside it.
        let mut sh = one(2, &[]);
        let mut out = Vec::new();
        let end = 1u64 << 24;
        sh.write(&mem(end - 16, 16, 1), tag(0, 1, 1), &[1, 0], &mut out);
        sh.write(&mem(end - 1, 1, 2), tag(1, 1, 2), &[0, 1], &mut out);
        assert_eq!(races(&out), vec![(RaceKind::WriteWrite, 1, end - 1)]);
        sh.read(&mem(end - 16, 16, 1), tag(0, 2, 3), &[2, 0], &mut out);
        assert_eq!(races(&out).len(), 2, "the read races with the other thread's write: {out:?}");
    }

    #[test]
    fn a_zero_length_access_is_not_shadowed() {
        let mut sh = one(2, &[(0, 64, 1)]);
        let mut out = Vec::new();
        sh.write(&mem(8, 0, 2), tag(0, 1, 1), &[1, 0], &mut out);
        sh.read(&mem(8, 0, 3), tag(1, 1, 2), &[0, 1], &mut out);
        sh.write(&mem(0, 0, 2), tag(1, 2, 3), &[0, 2], &mut out);
        assert!(out.is_empty(), "{out:?}");
        assert_eq!(sh.intervals(), (1, 0), "only the preset is held");
    }

    #[test]
    fn presets_are_clipped_to_the_regions_they_meet() {
        let sh = Shadow::new(1, &[(10, 10), (40, 10), (90, 5)], &[(0, 45, 1), (15, 100, 2)], Checks::default());
        let w =
            |r: usize| sh.regions[r].writes.overlapping(0, 200).map(|(s, e, w)| (s, e, w.owner)).collect::<Vec<_>>();
        assert_eq!(w(0), vec![(10, 15, 1), (15, 20, 2)]);
        assert_eq!(w(1), vec![(40, 50, 2)]);
        assert_eq!(w(2), vec![(90, 95, 2)]);
    }

    #[test]
    fn many_reads_of_one_large_tensor_keep_few_intervals() {
        let mut sh = one(2, &[(0, 1 << 20, 1)]);
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
