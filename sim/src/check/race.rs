//! The happens-before race detector (issue 7, item 3a): one vector clock per
//! engine ("thread" = `core_ix * 5 + engine`), ticked when the engine issues
//! a record and joined at semaphore waits (with the clock the semaphore held
//! when it reached the value waited for) and at barrier completion (every
//! participant gets the join of all of them). Two accesses to overlapping
//! bytes, at least one a write, from different threads race unless the
//! earlier one's epoch is covered by the later thread's clock.
//!
//! The per-byte state (last write, reads since it per thread) lives in the
//! shadow memory ([`crate::check::shadow`]).
//!
//! Cost: a tick is O(1); a join (semaphore wait, barrier) is O(T) for T
//! threads; memory is T clocks of T words plus one snapshot per semaphore
//! value still awaited: O(T^2 + T w) for w pending waits.

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
pub(crate) fn ordered(prior: Tag, thread: u16, vc: &[u32]) -> bool {
    prior.thread == NO_THREAD || prior.thread == thread || prior.clock <= vc[usize::from(prior.thread)]
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

    #[test]
    fn an_access_is_ordered_after_its_own_thread_and_what_its_clock_covers() {
        let vc = [3, 1];
        assert!(ordered(Tag::NONE, 1, &vc));
        assert!(ordered(Tag { thread: 1, slot: 0, clock: 9, site: 0 }, 1, &vc), "program order");
        assert!(ordered(Tag { thread: 0, slot: 0, clock: 3, site: 0 }, 1, &vc));
        assert!(!ordered(Tag { thread: 0, slot: 0, clock: 4, site: 0 }, 1, &vc));
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
