//! Semaphores per core, as codegen emits them: a record waits for
//! `sem >= value`; a signal increments by one. For the race detector each
//! semaphore accumulates its signallers' vector clocks and snapshots the
//! clock at every value some wait asks for (known from the fetched records),
//! so a wait for value `v` acquires exactly the signals up to the one that
//! reached `v`, not later ones it happened to find (no false ordering).

use crate::check::race::{VcPool, join};
use crate::engine::program::SemPlan;
use crate::engine::vars::NONE;

/// One semaphore.
#[derive(Debug)]
pub(crate) struct Semaphore {
    pub count: u32,
    /// Engines blocked on it (global engine indices).
    pub waiters: Vec<u32>,
    /// Join of the signallers' clocks (allocated at the first tracked signal).
    acc: Vec<u32>,
    wanted: Vec<u32>,
    remaining: Vec<u32>,
    snaps: Vec<u32>,
    cursor: usize,
}

impl Semaphore {
    /// A zero semaphore waited for as `plan` says.
    pub(crate) fn new(plan: &SemPlan) -> Semaphore {
        let n = plan.wanted.len();
        let cursor = plan.wanted.partition_point(|&v| v == 0);
        Semaphore {
            count: 0,
            waiters: Vec::new(),
            acc: Vec::new(),
            wanted: plan.wanted.clone(),
            remaining: plan.waits.clone(),
            snaps: vec![NONE; n],
            cursor,
        }
    }

    /// Increments by one on behalf of a signaller whose clock is `vc` (empty: no tracking).
    pub(crate) fn signal(&mut self, vc: &[u32], pool: &mut VcPool) {
        self.count = self.count.saturating_add(1);
        if vc.is_empty() {
            return;
        }
        if self.acc.len() != vc.len() {
            self.acc.resize(vc.len(), 0);
        }
        join(&mut self.acc, vc);
        while self.cursor < self.wanted.len() && self.wanted[self.cursor] <= self.count {
            if self.wanted[self.cursor] == self.count {
                self.snaps[self.cursor] = pool.store(&self.acc);
            }
            self.cursor += 1;
        }
    }

    /// A satisfied wait in `slot`: joins the clock the semaphore had at the
    /// value waited for into `into`, and frees the snapshot after its last wait.
    pub(crate) fn acquire(&mut self, slot: u32, into: &mut [u32], pool: &mut VcPool) {
        let s = slot as usize;
        let Some(&snap) = self.snaps.get(s) else { return };
        if snap == NONE {
            return;
        }
        join(into, pool.get(snap));
        self.remaining[s] = self.remaining[s].saturating_sub(1);
        if self.remaining[s] == 0 {
            pool.release(snap);
            self.snaps[s] = NONE;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_acquires_the_clock_at_its_value_not_later_signals() {
        let plan = SemPlan { wanted: vec![1, 3], waits: vec![1, 1] };
        let mut pool = VcPool::new(2);
        let mut s = Semaphore::new(&plan);
        s.signal(&[1, 0], &mut pool);
        s.signal(&[2, 0], &mut pool);
        s.signal(&[3, 0], &mut pool);
        assert_eq!(s.count, 3);
        let mut vc = [0, 1];
        s.acquire(0, &mut vc, &mut pool);
        assert_eq!(vc, [1, 1], "value 1 was reached with clock 1, not 3");
        s.acquire(1, &mut vc, &mut pool);
        assert_eq!(vc, [3, 1]);
        // Both snapshots freed after their only wait.
        assert_eq!(pool.store(&[9, 9]), 1);
    }
}
