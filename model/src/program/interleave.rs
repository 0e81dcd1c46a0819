//! Executes the N split per-core modules in one seeded, barrier-respecting
//! interleaving, by names (no addresses): the oracle for "the split preserves
//! the program". A consumer's view of a cross-core tensor reads the
//! producer's buffer through its `RemoteLocalTarget`; a barrier is a
//! rendezvous of its group's participants. Independent of the simulator.

use std::collections::{BTreeMap, BTreeSet};

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::interp::{InterpError, Values, execute, initial_memory};
use crate::ir::*;

/// Why an interleaved run failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InterleaveError {
    /// A module could not be set up.
    #[error("core {core}: {err}")]
    Interp {
        /// The core.
        core: usize,
        /// The error.
        err: InterpError,
    },
    /// A remote view names a location that does not exist.
    #[error("core {core}: `{view}` names remote `{name}` on core {target}, which does not exist")]
    MissingRemote {
        /// The consumer core.
        core: usize,
        /// The view's name.
        view: String,
        /// The remote name.
        name: String,
        /// The remote core.
        target: u32,
    },
    /// Two arrivals at one barrier group disagree on the participants.
    #[error("barrier group {0}: participants differ between cores")]
    BarrierMismatch(u32),
    /// No core can run and some have not finished.
    #[error("deadlock: cores {0:?} wait at barriers that never complete")]
    Deadlock(Vec<usize>),
    /// Two cores write the same output.
    #[error("output `{0}` is written by more than one core")]
    DuplicateOutput(String),
}

enum CoreState {
    Ready,
    Waiting(u32),
    Done,
}

/// Runs `modules` (core order) on `inputs` in the interleaving chosen by `seed`;
/// returns the outputs gathered from every core.
pub fn run_interleaved(modules: &[Module], inputs: &Values, seed: u64) -> Result<Values, InterleaveError> {
    // One flat memory: every core's locations, views redirected to their targets.
    let mut mem = Vec::new();
    let mut base = Vec::new();
    for (core, m) in modules.iter().enumerate() {
        base.push(mem.len());
        if m.functions.len() != 1 {
            return Err(InterleaveError::Interp { core, err: InterpError::NoFunction });
        }
        m.verify().map_err(|e| InterleaveError::Interp { core, err: e.into() })?;
        mem.extend(initial_memory(m, inputs).map_err(|err| InterleaveError::Interp { core, err })?);
    }
    let mut slot_of: Vec<Vec<usize>> = Vec::new();
    for (core, m) in modules.iter().enumerate() {
        let mut slots = Vec::new();
        for (i, l) in m.memlocs.iter().enumerate() {
            let s = match &l.remote_local_target {
                None => base[core] + i,
                Some(r) => {
                    let target = modules.get(r.core as usize).and_then(|t| t.loc_by_name(&r.name));
                    let Some(t) = target else {
                        return Err(InterleaveError::MissingRemote {
                            core,
                            view: l.name.clone(),
                            name: r.name.clone(),
                            target: r.core,
                        });
                    };
                    base[r.core as usize] + t.index()
                }
            };
            slots.push(s);
        }
        slot_of.push(slots);
    }

    let orders: Vec<Vec<InstId>> = modules.iter().map(|m| m.functions[0].order().collect()).collect();
    let mut pc = vec![0usize; modules.len()];
    let mut state: Vec<CoreState> = modules.iter().map(|_| CoreState::Ready).collect();
    let mut arrived: BTreeMap<u32, (Vec<u32>, BTreeSet<usize>)> = BTreeMap::new();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    loop {
        let ready: Vec<usize> = (0..modules.len()).filter(|&c| matches!(state[c], CoreState::Ready)).collect();
        if ready.is_empty() {
            let waiting: Vec<usize> =
                (0..modules.len()).filter(|&c| matches!(state[c], CoreState::Waiting(_))).collect();
            if waiting.is_empty() {
                break;
            }
            return Err(InterleaveError::Deadlock(waiting));
        }
        let core = ready[rng.random_range(0..ready.len())];
        let Some(&id) = orders[core].get(pc[core]) else {
            state[core] = CoreState::Done;
            continue;
        };
        pc[core] += 1;
        let inst = &modules[core].functions[0].insts[id.index()];
        match &inst.op {
            Op::CoreBarrier(b) => {
                let entry = arrived.entry(b.group).or_insert_with(|| (b.participants.clone(), BTreeSet::new()));
                if entry.0 != b.participants {
                    return Err(InterleaveError::BarrierMismatch(b.group));
                }
                entry.1.insert(core);
                if entry.1.len() == entry.0.len() {
                    for st in &mut state {
                        if matches!(st, CoreState::Waiting(g) if *g == b.group) {
                            *st = CoreState::Ready;
                        }
                    }
                } else {
                    state[core] = CoreState::Waiting(b.group);
                }
            }
            Op::Return => state[core] = CoreState::Done,
            _ => execute(inst, &mut |ap: &AccessPattern| slot_of[core][ap.loc.index()], &mut mem),
        }
    }
    let mut out = Values::new();
    for (core, m) in modules.iter().enumerate() {
        for (i, l) in m.memlocs.iter().enumerate() {
            if l.usage == Usage::Output && out.insert(l.name.clone(), mem[base[core] + i].clone()).is_some() {
                return Err(InterleaveError::DuplicateOutput(l.name.clone()));
            }
        }
    }
    Ok(out)
}
