//! The simulation: built once from a device and the core images, then run.

use std::collections::BTreeSet;
use std::sync::Arc;

use lncsim_model::codegen::record::Opcode;
use lncsim_model::load::{CoreImage, Device};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::SimError;
use crate::check::race::{Clocks, VcPool};
use crate::check::shadow::{Finding, Shadow};
use crate::check::unequal::unequal_vars;
use crate::check::violation::{Site, Violation};
use crate::engine::barrier::{BarrierIssue, Barriers};
use crate::engine::config::SimConfig;
use crate::engine::mirror::Hbm;
use crate::engine::processor::EngineRt;
use crate::engine::program::{CoreInfo, Program, Stream};
use crate::engine::queue::{EventQueue, Time};
use crate::engine::report::{CoreStats, Outcome, QueueStats, SimReport};
use crate::engine::semaphore::Semaphore;
use crate::engine::trace::{Trace, TraceCore, TraceHasher};
use crate::engine::vars::{NONE, VarTable};

/// Most cores one simulation runs (vector clocks are `5 * cores` wide).
pub const MAX_CORES: usize = 256;

/// A simulation of every loaded core on one shared HBM.
#[derive(Debug)]
pub struct Simulation {
    pub(crate) cfg: SimConfig,
    /// Shared so the run loop can hold the streams while mutating the rest.
    pub(crate) streams: Arc<Vec<Stream>>,
    pub(crate) vars: VarTable,
    pub(crate) hbm: Hbm,
    pub(crate) cores: Vec<CoreInfo>,
    pub(crate) engines: Vec<EngineRt>,
    /// Global site id of each engine's first record.
    pub(crate) site_base: Vec<u32>,
    pub(crate) queue: EventQueue,
    pub(crate) now: Time,
    pub(crate) rng: ChaCha8Rng,
    pub(crate) clocks: Clocks,
    pub(crate) pool: VcPool,
    pub(crate) sems: Vec<Vec<Semaphore>>,
    pub(crate) barriers: Barriers,
    pub(crate) shadow: Shadow,
    /// Per core, per queue: when the queue is free.
    pub(crate) qfree: Vec<Vec<Time>>,
    pub(crate) qstats: Vec<Vec<QueueStats>>,
    pub(crate) violations: Vec<Violation>,
    /// When each violation was found (parallel to `violations`).
    pub(crate) violation_ns: Vec<Time>,
    pub(crate) dropped: u64,
    /// The kinds of violation kept so far (a dozen at most).
    pub(crate) kinds_kept: Vec<&'static str>,
    pub(crate) seen_races: BTreeSet<(u32, u8, u32, u8)>,
    pub(crate) seen_clobbers: BTreeSet<(u32, u8)>,
    pub(crate) findings: Vec<Finding>,
    pub(crate) issues: Vec<BarrierIssue>,
    pub(crate) woken: Vec<u32>,
    pub(crate) buf: Vec<u8>,
    /// Scratch vector clock (barrier joins).
    pub(crate) vc_tmp: Vec<u32>,
    pub(crate) events: u64,
    pub(crate) instructions: u64,
    pub(crate) hbm_bytes: u64,
    pub(crate) compute_bytes: u64,
    /// Accesses the equalization check compared (see `MemRef::compared`).
    pub(crate) shared_accesses: u64,
    /// Barrier arrivals executed.
    pub(crate) barrier_arrivals: u64,
    /// Memory accesses the shadow memory (and the race detector) looked at.
    pub(crate) shadowed_accesses: u64,
    pub(crate) hash: TraceHasher,
    pub(crate) trace: Option<Trace>,
    pub(crate) outcome: Option<Outcome>,
    /// The fault plan's run-time state (triggered windows, the fired log).
    pub(crate) fault_state: crate::engine::fault::FaultState,
}

impl Simulation {
    /// Fetches and decodes every core's streams and DMA rings from `device`,
    /// mirrors every var, and prepares the run described by `config`.
    pub fn new(device: &dyn Device, images: &[CoreImage], config: SimConfig) -> Result<Simulation, SimError> {
        let p = Program::build(device, images, &config.cost)?;
        let threads = p.streams.len();
        let vc_threads = if config.checks.races { threads } else { 0 };
        if images.len() > MAX_CORES {
            return Err(SimError::BadImage(format!(
                "{} cores; the simulator handles at most {MAX_CORES}",
                images.len()
            )));
        }
        let engines = p.streams.iter().map(|s| EngineRt::new(s.core_ix, s.engine)).collect();
        let mut site_base = Vec::with_capacity(threads);
        let mut next = 0u32;
        for s in &p.streams {
            site_base.push(next);
            next = next.saturating_add(s.instrs.len() as u32);
        }
        let sems = p.sems.iter().map(|core| core.iter().map(Semaphore::new).collect()).collect();
        let qfree = p.cores.iter().map(|c| vec![0; c.queues.len()]).collect();
        let qstats = p
            .cores
            .iter()
            .map(|c| {
                c.queues.iter().map(|n| QueueStats { name: n.clone(), transfers: 0, bytes: 0, busy_ns: 0 }).collect()
            })
            .collect();
        let trace = config.trace.then(|| Trace {
            cores: p.cores.iter().map(|c| TraceCore { core: c.core, tpb: c.tpb, queues: c.queues.clone() }).collect(),
            events: Vec::new(),
        });
        let mut violations = Vec::new();
        if config.checks.equalization {
            violations = unequal_vars(&p.vars, |ix| p.cores.get(ix as usize).map_or(ix, |c| c.core));
            if !violations.is_empty() {
                lncsim_model::marks::hit("sim.equalize.unequal_var");
            }
        }
        let shadow = Shadow::new(threads, &p.hbm.spans(), &p.preset, config.checks);
        let fault_state = crate::engine::fault::FaultState::new(&config.faults, p.cores.len());
        Ok(Simulation {
            rng: ChaCha8Rng::seed_from_u64(config.seed),
            cfg: config,
            streams: Arc::new(p.streams),
            vars: p.vars,
            hbm: p.hbm,
            cores: p.cores,
            engines,
            site_base,
            queue: EventQueue::new(),
            now: 0,
            clocks: Clocks::new(vc_threads),
            pool: VcPool::new(vc_threads),
            sems,
            barriers: Barriers::default(),
            shadow,
            qfree,
            qstats,
            violation_ns: vec![0; violations.len()],
            violations,
            dropped: 0,
            kinds_kept: Vec::new(),
            seen_races: BTreeSet::new(),
            seen_clobbers: BTreeSet::new(),
            findings: Vec::new(),
            issues: Vec::new(),
            woken: Vec::new(),
            buf: Vec::new(),
            vc_tmp: Vec::new(),
            events: 0,
            instructions: 0,
            hbm_bytes: 0,
            compute_bytes: 0,
            shared_accesses: 0,
            barrier_arrivals: 0,
            shadowed_accesses: 0,
            hash: TraceHasher::new(),
            trace,
            outcome: None,
            fault_state,
        })
    }

    /// Replaces the fault plan before the run starts (a plan placed on the
    /// program's real records: see [`Simulation::records_per_core`]); after
    /// the run has started it changes nothing and returns false.
    pub fn set_faults(&mut self, plan: crate::FaultPlan) -> bool {
        if self.events > 0 || self.outcome.is_some() {
            return false;
        }
        self.fault_state = crate::engine::fault::FaultState::new(&plan, self.cores.len());
        self.cfg.faults = plan;
        true
    }

    /// Records staged per core index.
    pub fn records_per_core(&self) -> Vec<u64> {
        let mut n = vec![0u64; self.cores.len()];
        for s in self.streams.iter() {
            n[s.core_ix as usize] += s.instrs.len() as u64;
        }
        n
    }

    /// DMA records staged on all engines (what a run transfers at most).
    pub fn dma_records(&self) -> u64 {
        self.streams.iter().flat_map(|s| &s.instrs).filter(|i| i.op == Some(Opcode::Dma)).count() as u64
    }

    /// Number of records staged on all engines (what a run executes at most).
    pub fn records(&self) -> u64 {
        self.streams.iter().map(|s| s.instrs.len() as u64).sum()
    }

    /// Number of engines (five per core).
    pub fn engines(&self) -> usize {
        self.engines.len()
    }

    /// Writes the HBM the run modified back to `device` (so outputs can be read through it).
    pub fn write_back(&self, device: &dyn Device) -> Result<(), SimError> {
        self.hbm.write_back(device)
    }

    /// Names one record for a report; `slot` picks the access whose var is named.
    pub(crate) fn site(&self, e: usize, pc: u32, slot: Option<u8>) -> Site {
        let eng = &self.engines[e];
        let ins = self.streams.get(e).and_then(|s| s.instrs.get(pc as usize));
        let var = slot
            .and_then(|k| ins.and_then(|i| i.mems().get(usize::from(k))))
            .filter(|m| m.var != NONE)
            .and_then(|m| self.vars.name(m.var))
            .map(str::to_string);
        Site {
            core: self.cores[eng.core_ix as usize].core,
            engine: eng.engine,
            pc,
            debug_id: ins.map_or(0, |i| i.debug_id),
            opcode: ins.and_then(|i| i.op),
            var,
            inst: None,
            origin: None,
        }
    }

    /// The engine and record index of a global site id.
    pub(crate) fn locate_site(&self, site: u32) -> (usize, u32) {
        let e = self.site_base.partition_point(|&b| b <= site).saturating_sub(1);
        // Several empty streams share a base: take the last engine whose stream holds the site.
        let e = (0..=e).rev().find(|&k| site - self.site_base[k] < self.streams[k].instrs.len() as u32).unwrap_or(e);
        (e, site - self.site_base[e])
    }

    /// Records a violation, or counts it past the limit.
    pub(crate) fn report_violation(&mut self, v: Violation) {
        // Past the cap, the first of each kind is still kept, so a flood of one
        // kind cannot hide another from the check of its family.
        let first_of_kind = !self.kinds_kept.contains(&v.kind());
        if first_of_kind {
            self.kinds_kept.push(v.kind());
        }
        if self.violations.len() < self.cfg.max_violations || first_of_kind {
            self.violations.push(v);
            self.violation_ns.push(self.now);
        } else {
            self.dropped += 1;
        }
    }

    /// The report of the run so far.
    pub(crate) fn report(&self) -> SimReport {
        let cores = self
            .cores
            .iter()
            .enumerate()
            .map(|(ci, c)| CoreStats {
                core: c.core,
                tpb: c.tpb,
                engines: self.engines.iter().filter(|e| e.core_ix as usize == ci).map(|e| e.stats.clone()).collect(),
                queues: self.qstats[ci].clone(),
            })
            .collect();
        SimReport {
            seed: self.cfg.seed,
            outcome: self.outcome.unwrap_or(Outcome::Finished),
            time_ns: self.now,
            instructions: self.instructions,
            events: self.events,
            hbm_bytes: self.hbm_bytes,
            compute_bytes: self.compute_bytes,
            shared_accesses: self.shared_accesses,
            barrier_arrivals: self.barrier_arrivals,
            shadowed_accesses: self.shadowed_accesses,
            race_comparisons: self.shadow.compared,
            mirrored_bytes: self.hbm.bytes(),
            cores,
            violations: self.violations.clone(),
            violation_ns: self.violation_ns.clone(),
            violations_dropped: self.dropped,
            trace_hash: self.hash.finish(),
            trace: self.trace.clone(),
            faults_fired: self.fault_state.fired.clone(),
            faults_fired_total: self.fault_state.fired_total,
        }
    }
}

/// Builds a simulation, runs it and writes the HBM back to `device`.
pub fn simulate(device: &dyn Device, images: &[CoreImage], config: SimConfig) -> Result<SimReport, SimError> {
    let mut sim = Simulation::new(device, images, config)?;
    let report = sim.run();
    sim.write_back(device)?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::MemDevice;

    #[test]
    fn a_simulation_can_move_to_another_thread_and_an_empty_one_finishes() {
        fn send<T: Send>() {}
        send::<Simulation>();
        send::<SimReport>();
        let mut sim = Simulation::new(&MemDevice::new(1), &[], SimConfig::default()).unwrap();
        let r = sim.run();
        assert_eq!((r.outcome, r.instructions, r.events), (Outcome::Finished, 0, 0));
        assert!(r.passed());
        assert_eq!(sim.run().trace_hash, r.trace_hash, "a second run returns the same report");
    }
}
