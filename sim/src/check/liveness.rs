//! Liveness (issue 7, item 4): when no event is left and engines still wait,
//! each waiting engine is named with what it waits for and who could still
//! signal it: for a semaphore, the engines of its core with a record left
//! (current one included) that increments it; for a barrier group, the
//! missing participants with an arrival at the group left in a stream. An
//! engine halted on an illegal record is listed as such: it would have
//! signalled, had it not halted.
//!
//! Cost: one pass over the records left on every engine, counting signals
//! per (engine, semaphore) and collecting barrier groups per engine in
//! ordered maps: O(r log r) for r records left, then O(log r + E) per
//! waiting engine (E engines) and O(p log p) per barrier group of p
//! participants, in O(r) memory. It runs once, after the event loop.

use std::collections::{BTreeMap, BTreeSet};

use lncsim_model::codegen::record::Opcode;

use crate::check::violation::{Doing, Signaller, WaitFor, Waiter};
use crate::engine::processor::State;
use crate::engine::sim::Simulation;

/// What each engine has left to do: signals per semaphore, barrier groups it will arrive at.
struct Left {
    signals: BTreeMap<(usize, u8), u64>,
    arrivals: BTreeSet<(u32, usize)>,
}

impl Simulation {
    /// Every engine left waiting, with its diagnosis (empty when none waits).
    pub(crate) fn deadlock_waiters(&self) -> Vec<Waiter> {
        let waiting = |s: State| matches!(s, State::WaitSem { .. } | State::WaitBarrier { .. });
        if !self.engines.iter().any(|e| waiting(e.state)) {
            return Vec::new();
        }
        let left = self.left();
        let mut out = Vec::new();
        for (e, eng) in self.engines.iter().enumerate() {
            let waits_for = match eng.state {
                State::WaitSem { sem, value } => {
                    let count = self.sems[eng.core_ix as usize][usize::from(sem)].count;
                    WaitFor::Semaphore { sem, value, count }
                }
                State::WaitBarrier { group } => {
                    let arrived: Vec<u32> = self.barriers.pending(group).iter().map(|a| a.core).collect();
                    let seen: BTreeSet<u32> = arrived.iter().copied().collect();
                    let parts = self.cores[eng.core_ix as usize].barrier_groups.get(&group);
                    let missing = parts.map(|p| p.iter().copied().filter(|c| !seen.contains(c)).collect());
                    WaitFor::Barrier { group, arrived, missing: missing.unwrap_or_default() }
                }
                _ => continue,
            };
            let could_signal = match &waits_for {
                WaitFor::Semaphore { sem, .. } => self.signallers(&left, eng.core_ix, *sem),
                WaitFor::Barrier { group, missing, .. } => self.arrivers(&left, *group, missing),
            };
            out.push(Waiter { site: self.site(e, eng.pc, None), waits_for, could_signal });
        }
        out
    }

    /// One pass over every engine's records left (current one included).
    fn left(&self) -> Left {
        let mut l = Left { signals: BTreeMap::new(), arrivals: BTreeSet::new() };
        for (e, eng) in self.engines.iter().enumerate() {
            if eng.state == State::Done {
                continue;
            }
            let instrs = &self.streams[e].instrs;
            for i in &instrs[(eng.pc as usize).min(instrs.len())..] {
                for s in [i.signal, i.sem_signal].into_iter().flatten() {
                    *l.signals.entry((e, s)).or_insert(0) += 1;
                }
                if i.op == Some(Opcode::Barrier) {
                    l.arrivals.insert((i.barrier.1, e));
                }
            }
        }
        l
    }

    /// Engines of core `core_ix` with a record left that increments `sem`.
    fn signallers(&self, left: &Left, core_ix: u32, sem: u8) -> Vec<Signaller> {
        let mut out = Vec::new();
        for (e, eng) in self.engines.iter().enumerate().filter(|(_, x)| x.core_ix == core_ix) {
            if let Some(&n) = left.signals.get(&(e, sem)) {
                out.push(Signaller {
                    site: self.site(e, eng.pc, None),
                    doing: describe(eng.state),
                    signals_left: Some(n),
                });
            }
        }
        out
    }

    /// Engines of the `missing` cores with an arrival at `group` left.
    fn arrivers(&self, left: &Left, group: u32, missing: &[u32]) -> Vec<Signaller> {
        let missing: BTreeSet<u32> = missing.iter().copied().collect();
        let mut out = Vec::new();
        for &(_, e) in left.arrivals.range((group, 0)..=(group, usize::MAX)) {
            let eng = &self.engines[e];
            let core = self.cores[eng.core_ix as usize].core;
            if missing.contains(&core) {
                out.push(Signaller {
                    site: self.site(e, eng.pc, None),
                    doing: describe(eng.state),
                    signals_left: None,
                });
            }
        }
        out
    }
}

fn describe(s: State) -> Doing {
    match s {
        State::WaitSem { sem, value } => Doing::WaitSem { sem, value },
        State::WaitBarrier { group } => Doing::WaitBarrier { group },
        State::Halted => Doing::Halted,
        other => Doing::Other(format!("{other:?}")),
    }
}
