//! `dlr_kelf_stage` and its multi-tpb fan-out as one state machine with
//! explicit steps (DESIGN.md, "Determinism and concurrency"):
//!
//! - [`StageStep::Stage`]`(i)`: `kbl_model_add` of subgraph `i` on `vcore.tpbs[i]`;
//! - [`StageStep::Join`]: after every core ran, the seed's `first_err = first
//!   non-zero ret[i]` (lowest subgraph index);
//! - [`StageStep::Rollback`]`(j)`: on an error, `kbl_model_remove` of every
//!   sibling `j` that staged (all-or-nothing);
//! - then [`StageFanout::finish`]: the bridge ([`DlrKelfModel`]) on success,
//!   or the first error after freeing the per-load shared state.
//!
//! Two drivers: [`StageFanout::step`] in a caller-supplied order (the
//! simulator's seeded scheduler picks among [`StageFanout::enabled`]), and
//! [`StageFanout::run_threads`], one real thread per kbin (the only threads
//! of the model crate). Dropping an unfinished machine rolls everything back,
//! so an abandoned load leaks nothing.

use std::sync::{Mutex, PoisonError};

use super::device::Device;
use super::error::{LoadError, Stage};
use super::graph::{KelfNn, MAX_KBINS};
use super::records::{DlrKelfModel, HModel};
use super::registry::TdrvDb;
use super::stage::{
    CoreOutcome, SharedInfo, StageCtx, VirtualCore, kbl_model_add, kbl_model_remove, vtpb_info_shared_free,
    vtpb_info_shared_init_vtpb,
};
use super::trace::LoadTrace;
use crate::marks;
use crate::neff::NrtStatus;

/// One step of the staging machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum StageStep {
    /// Stage subgraph `i` (`kbl_model_add`).
    Stage(u32),
    /// Join: every core ran; pick the first error.
    Join,
    /// Roll back staged subgraph `j` (`kbl_model_remove`).
    Rollback(u32),
}

/// A step that is not enabled in the machine's current state (a driver bug).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("staging step {0:?} is not enabled")]
pub struct StepRefused(pub StageStep);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Core {
    NotRun,
    Staged,
    Failed,
    RolledBack,
}

/// The staging of one load (see the module docs).
#[derive(Debug)]
pub struct StageFanout<'r, D: Device + ?Sized> {
    dev: &'r D,
    db: &'r Mutex<TdrvDb>,
    kg: KelfNn<'r>,
    vcore: VirtualCore,
    shared: SharedInfo,
    km: DlrKelfModel,
    cores: Vec<Core>,
    errors: Vec<Option<LoadError>>,
    traces: Vec<LoadTrace>,
    /// Rollback events, printed after every core's own events (a rollback
    /// follows the failure that caused it, whichever thread ran first).
    rollbacks: LoadTrace,
    joined: Option<Option<LoadError>>,
    finished: bool,
}

/// `dlr_kelf_stage` up to the fan-out: the pnc check, the `nkbin == 1 ||
/// nkbin == vtpb_size` rule, then `vtpb_info_shared_init_vtpb`. `km` is the
/// bridge `calloc(0x48)` made, with its param, uuid and h_model filled.
pub fn dlr_kelf_stage<'r, D: Device + ?Sized>(
    dev: &'r D,
    db: &'r Mutex<TdrvDb>,
    kg: KelfNn<'r>,
    vcore: VirtualCore,
    mut km: DlrKelfModel,
) -> Result<StageFanout<'r, D>, LoadError> {
    let nkbin = kg.kbins.len();
    let available = vcore.tpbs.len();
    if available < nkbin {
        marks::hit("load.s4.insufficient_pncs");
        return Err(LoadError::invalid(
            Stage::S4Stage,
            format!("Insufficient number of pncs, required {nkbin}, available {available}"),
        ));
    }
    if !(nkbin == 1 || nkbin == vcore.core_size as usize) || nkbin > MAX_KBINS {
        marks::hit("load.s4.nkbin_rule");
        return Err(LoadError::invalid(
            Stage::S4Stage,
            format!("kg->nkbin == 1 || kg->nkbin == vtpb_size failed: nkbin {nkbin}, vtpb_size {}", vcore.core_size),
        ));
    }
    let tpb0 = vcore.tpbs.first().copied().unwrap_or(0);
    let shared = vtpb_info_shared_init_vtpb(dev, tpb0, &kg)?;
    km.sg_count = nkbin as u32;
    km.tpbs = vcore.tpbs[..nkbin].to_vec();
    km.vcore = vcore.idx;
    Ok(StageFanout {
        dev,
        db,
        cores: vec![Core::NotRun; nkbin],
        errors: vec![None; nkbin],
        traces: vec![LoadTrace::default(); nkbin],
        rollbacks: LoadTrace::default(),
        kg,
        vcore,
        shared,
        km,
        joined: None,
        finished: false,
    })
}

/// `kelf_model_add_thread_args_t`: one thread's arguments; the array of them
/// lives on the joiner's stack until every thread is joined.
struct ThreadArgs<'a, D: Device + ?Sized> {
    dev: &'a D,
    db: &'a Mutex<TdrvDb>,
    kbin: &'a super::kbin::Kbin<'a>,
    pcore: u32,
    ctx: StageCtx<'a>,
}

/// `dlr_kelf_stage_model_add_thread`: the trampoline, which also carries the
/// thread's coverage marks back to the joiner (marks are per thread).
fn dlr_kelf_stage_model_add_thread<D: Device + ?Sized>(
    a: &ThreadArgs<'_, D>,
) -> (CoreOutcome, std::collections::BTreeMap<&'static str, u64>) {
    let rec = marks::Recorder::start();
    let out = kbl_model_add(a.dev, a.db, a.kbin, a.pcore, &a.ctx);
    (out, rec.delta())
}

impl<'r, D: Device + ?Sized> StageFanout<'r, D> {
    /// Number of subgraphs.
    pub fn nkbin(&self) -> usize {
        self.cores.len()
    }

    /// The per-load shared state (shared region, IO buffers).
    pub fn shared(&self) -> &SharedInfo {
        &self.shared
    }

    /// The load's device-side key.
    pub fn h_model(&self) -> HModel {
        self.km.h_model
    }

    /// The steps that may run now, in index order; empty when [`StageFanout::finish`] has nothing left to do.
    pub fn enabled(&self) -> Vec<StageStep> {
        match &self.joined {
            None => {
                let v: Vec<StageStep> = (0..self.nkbin() as u32)
                    .filter(|&i| self.cores[i as usize] == Core::NotRun)
                    .map(StageStep::Stage)
                    .collect();
                if v.is_empty() { vec![StageStep::Join] } else { v }
            }
            Some(None) => Vec::new(),
            Some(Some(_)) => (0..self.nkbin() as u32)
                .filter(|&j| self.cores[j as usize] == Core::Staged)
                .map(StageStep::Rollback)
                .collect(),
        }
    }

    /// Runs one enabled step.
    pub fn step(&mut self, s: StageStep) -> Result<(), StepRefused> {
        if self.finished || !self.enabled().contains(&s) {
            return Err(StepRefused(s));
        }
        match s {
            StageStep::Stage(i) => {
                let out = self.stage(i);
                self.record(i, out);
            }
            StageStep::Join => self.join(),
            StageStep::Rollback(j) => self.rollback(j),
        }
        Ok(())
    }

    /// `dlr_kelf_stage_model_add`: stages subgraph `i` (no state change; see [`StageFanout::step`]).
    fn stage(&self, i: u32) -> CoreOutcome {
        let ctx = StageCtx { vcore: &self.vcore, h_model: self.km.h_model, shared: &self.shared };
        kbl_model_add(self.dev, self.db, &self.kg.kbins[i as usize], i, &ctx)
    }

    fn record(&mut self, i: u32, out: CoreOutcome) {
        let i = i as usize;
        self.traces[i] = out.trace;
        match out.result {
            Ok(()) => self.cores[i] = Core::Staged,
            Err(e) => {
                marks::hit("load.s4.kbl_model_add_failed");
                self.cores[i] = Core::Failed;
                self.errors[i] = Some(e);
            }
        }
    }

    fn join(&mut self) {
        let first = self.errors.iter().flatten().next().cloned();
        if first.is_some() && self.cores.contains(&Core::Staged) {
            marks::hit("load.s4.rollback");
        }
        self.joined = Some(first);
    }

    fn rollback(&mut self, j: u32) {
        let tpb = self.vcore.tpbs[j as usize];
        if let Err(e) = kbl_model_remove(self.dev, self.db, tpb, self.km.h_model) {
            self.rollbacks.fail("kbl_model_remove", &e);
        } else {
            self.rollbacks.ok(Stage::S4Stage, "kbl_model_remove", format!("rolled back sg{j:02} on tpb {tpb}"));
        }
        self.cores[j as usize] = Core::RolledBack;
    }

    /// Drives every remaining step in index order, then returns the bridge
    /// (success) or the first error (every staged core rolled back and the
    /// shared state freed), with the per-core events in subgraph order.
    pub fn finish(mut self) -> (Result<DlrKelfModel, LoadError>, LoadTrace) {
        while let Some(&s) = self.enabled().first() {
            // An enabled step is never refused.
            let _ = self.step(s);
        }
        self.finished = true;
        let mut trace = LoadTrace::default();
        for t in std::mem::take(&mut self.traces) {
            trace.extend(t);
        }
        trace.extend(std::mem::take(&mut self.rollbacks));
        match self.joined.take().flatten() {
            None => {
                let mut km = self.km.clone();
                km.shared = self.shared.shared;
                km.io = std::mem::take(&mut self.shared.io);
                (Ok(km), trace)
            }
            Some(e) => {
                if let Err(free) = vtpb_info_shared_free(self.dev, &self.shared) {
                    trace.fail("vtpb_info_shared_free", &free);
                }
                (Err(e), trace)
            }
        }
    }

    /// The real-thread driver: `dlr_kelf_stage_model_add` inline for one
    /// kbin, else `dlr_kelf_stage_multi_tpb_model_add`: one thread per kbin
    /// (`std::thread::scope`), all joined, then [`StageFanout::finish`].
    pub fn run_threads(mut self) -> (Result<DlrKelfModel, LoadError>, LoadTrace) {
        let pending: Vec<u32> =
            self.enabled().iter().filter_map(|s| if let StageStep::Stage(i) = s { Some(*i) } else { None }).collect();
        if self.nkbin() == 1 {
            marks::hit("load.s4.single_tpb");
        } else if !pending.is_empty() {
            marks::hit("load.s4.multi_tpb_fanout");
            let ctx = StageCtx { vcore: &self.vcore, h_model: self.km.h_model, shared: &self.shared };
            let args: Vec<ThreadArgs<'_, D>> = pending
                .iter()
                .map(|&i| ThreadArgs { dev: self.dev, db: self.db, kbin: &self.kg.kbins[i as usize], pcore: i, ctx })
                .collect();
            let results: Vec<(u32, CoreOutcome, _)> = std::thread::scope(|s| {
                let handles: Vec<_> = args
                    .iter()
                    .map(|a| {
                        let b = std::thread::Builder::new().name(format!("kbl_model_add_{}", a.pcore));
                        (a.pcore, b.spawn_scoped(s, move || dlr_kelf_stage_model_add_thread(a)))
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|(i, h)| {
                        let failed = |why: String| {
                            let e = LoadError::new(NrtStatus::Resource, Stage::S4Stage, why);
                            let mut trace = LoadTrace::default();
                            trace.fail("pthread_create", &e);
                            (CoreOutcome { result: Err(e), trace }, Default::default())
                        };
                        let (out, m) = match h {
                            Ok(h) => {
                                h.join().unwrap_or_else(|_| failed(format!("staging thread of sg{i:02} panicked")))
                            }
                            Err(e) => failed(format!("pthread_create for sg{i:02} failed: {e}")),
                        };
                        (i, out, m)
                    })
                    .collect()
            });
            drop(args);
            for (i, out, m) in results {
                for (name, n) in m {
                    (0..n).for_each(|_| marks::hit(name));
                }
                self.record(i, out);
            }
        }
        self.finish()
    }

    /// Rolls back whatever is staged and frees the shared state (for an unfinished machine).
    fn abandon(&mut self) {
        self.joined.get_or_insert_with(|| {
            Some(LoadError::new(NrtStatus::Failure, Stage::S4Stage, "staging abandoned before it finished"))
        });
        let staged: Vec<u32> = (0..self.nkbin() as u32).filter(|&j| self.cores[j as usize] == Core::Staged).collect();
        for j in staged {
            self.rollback(j);
        }
        let _ = vtpb_info_shared_free(self.dev, &self.shared);
        self.finished = true;
    }
}

impl<D: Device + ?Sized> Drop for StageFanout<'_, D> {
    fn drop(&mut self) {
        if !self.finished {
            marks::hit("load.s4.abandoned");
            self.abandon();
        }
    }
}

/// Locks the db (a poisoned lock still holds a consistent map: no step panics under it).
pub fn lock_db(db: &Mutex<TdrvDb>) -> std::sync::MutexGuard<'_, TdrvDb> {
    db.lock().unwrap_or_else(PoisonError::into_inner)
}
