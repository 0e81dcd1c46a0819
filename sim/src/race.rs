//! The happens-before race detector (issue 7, item 3a): one vector clock per
//! engine ("thread" = `core_ix * 5 + engine`), ticked when the engine issues
//! a record and joined at semaphore waits (with the clock the semaphore held
//! when it reached the value waited for) and at barrier completion (every
//! participant gets the join of all of them). Two accesses to overlapping
//! bytes, at least one a write, from different threads race unless the
//! earlier one's epoch is covered by the later thread's clock.
//!
//! Per shadow segment it keeps the last write and the reads since it, one per
//! thread (FastTrack's read set without the epoch fast path).

use crate::violation::RaceKind;

/// No thread.
pub(crate) const NO_THREAD: u16 = u16::MAX;

/// One access: who (thread), which operand slot of which record (site), and
/// the thread's own clock when it happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Tag {
    pub thread: u16,
    pub slot: u8,
    pub clock: u32,
    pub site: u32,
}

impl Tag {
    /// The absent access.
    pub(crate) const NONE: Tag = Tag { thread: NO_THREAD, slot: 0, clock: 0, site: 0 };
}

/// True when `prior` happens before an access by `thread` whose clock is `vc`.
fn ordered(prior: Tag, thread: u16, vc: &[u32]) -> bool {
    prior.thread == NO_THREAD || prior.thread == thread || prior.clock <= vc[usize::from(prior.thread)]
}

/// Race state of one shadow segment.
#[derive(Clone, Debug)]
pub(crate) struct RaceCell {
    pub write: Tag,
    pub reads: Vec<Tag>,
}

impl Default for RaceCell {
    fn default() -> Self {
        RaceCell { write: Tag::NONE, reads: Vec::new() }
    }
}

impl RaceCell {
    /// A write by `tag` with clock `vc`: reports each unordered prior access, then records it.
    pub(crate) fn write(&mut self, tag: Tag, vc: &[u32], found: &mut impl FnMut(RaceKind, Tag)) {
        if !ordered(self.write, tag.thread, vc) {
            found(RaceKind::WriteWrite, self.write);
        }
        for &r in &self.reads {
            if !ordered(r, tag.thread, vc) {
                found(RaceKind::ReadWrite, r);
            }
        }
        self.write = tag;
        self.reads.clear();
    }

    /// A read by `tag` with clock `vc`: reports an unordered prior write, then records it.
    pub(crate) fn read(&mut self, tag: Tag, vc: &[u32], found: &mut impl FnMut(RaceKind, Tag)) {
        if !ordered(self.write, tag.thread, vc) {
            found(RaceKind::WriteRead, self.write);
        }
        match self.reads.iter_mut().find(|r| r.thread == tag.thread) {
            Some(r) => *r = tag,
            None => self.reads.push(tag),
        }
    }
}

/// Every thread's vector clock, flat.
#[derive(Clone, Debug)]
pub(crate) struct Clocks {
    pub threads: usize,
    data: Vec<u32>,
}

impl Clocks {
    /// `threads` clocks, all zero.
    pub(crate) fn new(threads: usize) -> Clocks {
        Clocks { threads, data: vec![0; threads * threads] }
    }

    /// Thread `t`'s clock.
    pub(crate) fn vc(&self, t: usize) -> &[u32] {
        &self.data[t * self.threads..(t + 1) * self.threads]
    }

    /// Thread `t`'s clock, mutable.
    pub(crate) fn vc_mut(&mut self, t: usize) -> &mut [u32] {
        &mut self.data[t * self.threads..(t + 1) * self.threads]
    }

    /// Advances thread `t`'s own component; returns the new value.
    pub(crate) fn tick(&mut self, t: usize) -> u32 {
        let c = &mut self.data[t * self.threads + t];
        *c += 1;
        *c
    }

    /// Sets thread `t`'s clock.
    pub(crate) fn set(&mut self, t: usize, from: &[u32]) {
        self.data[t * self.threads..(t + 1) * self.threads].copy_from_slice(from);
    }
}

/// `into = max(into, from)` componentwise.
pub(crate) fn join(into: &mut [u32], from: &[u32]) {
    for (a, &b) in into.iter_mut().zip(from) {
        *a = (*a).max(b);
    }
}

/// Reusable vector-clock snapshots (semaphore values waited for).
#[derive(Clone, Debug)]
pub(crate) struct VcPool {
    threads: usize,
    data: Vec<u32>,
    free: Vec<u32>,
}

impl VcPool {
    /// An empty pool of `threads`-wide clocks.
    pub(crate) fn new(threads: usize) -> VcPool {
        VcPool { threads, data: Vec::new(), free: Vec::new() }
    }

    /// Stores a copy of `vc`; returns its slot.
    pub(crate) fn store(&mut self, vc: &[u32]) -> u32 {
        match self.free.pop() {
            Some(s) => {
                self.get_mut(s).copy_from_slice(vc);
                s
            }
            None => {
                self.data.extend_from_slice(vc);
                (self.data.len() / self.threads.max(1) - 1) as u32
            }
        }
    }

    /// The clock in slot `s`.
    pub(crate) fn get(&self, s: u32) -> &[u32] {
        let s = s as usize * self.threads;
        &self.data[s..s + self.threads]
    }

    fn get_mut(&mut self, s: u32) -> &mut [u32] {
        let s = s as usize * self.threads;
        &mut self.data[s..s + self.threads]
    }

    /// Returns slot `s` to the pool.
    pub(crate) fn release(&mut self, s: u32) {
        self.free.push(s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tag(thread: u16, clock: u32, site: u32) -> Tag {
        Tag { thread, slot: 0, clock, site }
    }

    #[test]
    fn unordered_conflicts_are_reported_and_ordered_ones_are_not() {
        let mut cell = RaceCell::default();
        let mut found = Vec::new();
        // Thread 0 writes at clock 1.
        cell.write(tag(0, 1, 10), &[1, 0], &mut |k, t| found.push((k, t.site)));
        // Thread 1 reads without having seen thread 0: write-read race.
        cell.read(tag(1, 1, 11), &[0, 1], &mut |k, t| found.push((k, t.site)));
        assert_eq!(found, vec![(RaceKind::WriteRead, 10)]);
        found.clear();
        // Thread 0 writes again, not having seen thread 1's read: read-write race.
        cell.write(tag(0, 2, 12), &[2, 0], &mut |k, t| found.push((k, t.site)));
        assert_eq!(found, vec![(RaceKind::ReadWrite, 11)]);
        found.clear();
        // Thread 1 after joining thread 0's clock 2: ordered.
        cell.write(tag(1, 2, 13), &[2, 2], &mut |k, t| found.push((k, t.site)));
        assert!(found.is_empty());
        // Thread 0 without seeing it: write-write race.
        cell.write(tag(0, 3, 14), &[3, 1], &mut |k, t| found.push((k, t.site)));
        assert_eq!(found, vec![(RaceKind::WriteWrite, 13)]);
    }

    #[test]
    fn clocks_tick_join_and_pool_slots_are_reused() {
        let mut c = Clocks::new(3);
        assert_eq!(c.tick(1), 1);
        join(c.vc_mut(0), &[0, 5, 2]);
        assert_eq!(c.vc(0), &[0, 5, 2]);
        let mut p = VcPool::new(3);
        let a = p.store(&[1, 2, 3]);
        let b = p.store(&[4, 5, 6]);
        assert_eq!(p.get(a), &[1, 2, 3]);
        p.release(a);
        let c2 = p.store(&[7, 8, 9]);
        assert_eq!(c2, a);
        assert_eq!(p.get(b), &[4, 5, 6]);
        assert_eq!(p.get(c2), &[7, 8, 9]);
    }
}
