//! Liveness (issue 7, item 4): when no event is left and engines still wait,
//! each waiting engine is named with what it waits for and who could still
//! signal it: for a semaphore, the engines of its core with a record left
//! (current one included) that increments it; for a barrier group, the
//! missing participants with an arrival at the group left in a stream. An
//! engine halted on an illegal record is listed as such: it would have
//! signalled, had it not halted.

use lncsim_model::codegen::record::Opcode;

use crate::engine::State;
use crate::sim::Simulation;
use crate::violation::{WaitFor, Waiter};

impl Simulation {
    /// Every engine left waiting, with its diagnosis (empty when none waits).
    pub(crate) fn deadlock_waiters(&self) -> Vec<Waiter> {
        let mut out = Vec::new();
        for (e, eng) in self.engines.iter().enumerate() {
            let waits_for = match eng.state {
                State::WaitSem { sem, value } => {
                    let count = self.sems[eng.core_ix as usize][usize::from(sem)].count;
                    WaitFor::Semaphore { sem, value, count }
                }
                State::WaitBarrier { group } => {
                    let arrived: Vec<u32> = self.barriers.pending(group).iter().map(|a| a.core).collect();
                    let parts = self.cores[eng.core_ix as usize].barrier_groups.get(&group);
                    let missing = parts.map(|p| p.iter().copied().filter(|c| !arrived.contains(c)).collect());
                    WaitFor::Barrier { group, arrived, missing: missing.unwrap_or_default() }
                }
                _ => continue,
            };
            let could_signal = match &waits_for {
                WaitFor::Semaphore { sem, .. } => self.signallers(eng.core_ix, *sem),
                WaitFor::Barrier { group, missing, .. } => self.arrivers(*group, missing),
            };
            out.push(Waiter { site: self.site(e, eng.pc, None), waits_for, could_signal });
        }
        out
    }

    /// Engines of core `core_ix` with a record left that increments `sem`.
    fn signallers(&self, core_ix: u32, sem: u8) -> Vec<String> {
        let mut out = Vec::new();
        for (e, eng) in self.engines.iter().enumerate().filter(|(_, x)| x.core_ix == core_ix) {
            if eng.state == State::Done {
                continue;
            }
            let left = &self.streams[e].instrs[(eng.pc as usize).min(self.streams[e].instrs.len())..];
            let n = left.iter().filter(|i| i.signal == Some(sem) || i.sem_signal == Some(sem)).count();
            if n > 0 {
                out.push(format!("{:?} at #{} ({}; {n} signal(s) left)", eng.engine, eng.pc, describe(eng.state)));
            }
        }
        out
    }

    /// Engines of the `missing` cores with an arrival at `group` left.
    fn arrivers(&self, group: u32, missing: &[u32]) -> Vec<String> {
        let mut out = Vec::new();
        for (e, eng) in self.engines.iter().enumerate() {
            let core = self.cores[eng.core_ix as usize].core;
            if !missing.contains(&core) || eng.state == State::Done {
                continue;
            }
            let left = &self.streams[e].instrs[(eng.pc as usize).min(self.streams[e].instrs.len())..];
            if left.iter().any(|i| i.op == Some(Opcode::Barrier) && i.barrier.1 == group) {
                out.push(format!("core {core} {:?} at #{} ({})", eng.engine, eng.pc, describe(eng.state)));
            }
        }
        out
    }
}

fn describe(s: State) -> String {
    match s {
        State::WaitSem { sem, value } => format!("itself waiting for sem {sem} >= {value}"),
        State::WaitBarrier { group } => format!("itself waiting at barrier group {group}"),
        State::Halted => "halted on an illegal record".to_string(),
        other => format!("{other:?}"),
    }
}
