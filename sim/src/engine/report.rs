//! The run report: what ran, how long it took in simulated time, what moved,
//! every violation found, and the trace hash (same seed, same hash).

use std::fmt;

use lncsim_model::ir::Engine;

use crate::check::violation::Violation;
use crate::engine::queue::Time;
use crate::engine::trace::Trace;

/// How the run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every engine reached the end of its stream (or halted on an illegal record).
    Finished,
    /// Engines were left waiting with no event to wake them.
    Deadlock,
    /// The event budget ran out.
    EventBudget,
}

/// One engine's figures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineStats {
    /// The engine.
    pub engine: Engine,
    /// Records executed.
    pub instructions: u64,
    /// Time between issuing and completing records.
    pub busy_ns: Time,
    /// Time blocked on semaphores.
    pub sem_wait_ns: Time,
    /// Time from a barrier arrival to its completion.
    pub barrier_wait_ns: Time,
    /// Time held by a stall fault.
    pub stalled_ns: Time,
    /// When it reached the end of its stream.
    pub finished_at: Option<Time>,
    /// It halted on an illegal record.
    pub halted: bool,
}

/// One DMA queue's figures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueStats {
    /// The queue's name.
    pub name: String,
    /// Transfers made.
    pub transfers: u64,
    /// Bytes moved.
    pub bytes: u64,
    /// Time the queue was transferring.
    pub busy_ns: Time,
}

/// One core's figures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoreStats {
    /// The NeuronCoreId.
    pub core: u32,
    /// The physical core.
    pub tpb: u32,
    /// Engines in [`Engine::ALL`] order.
    pub engines: Vec<EngineStats>,
    /// DMA queues by index.
    pub queues: Vec<QueueStats>,
}

/// Everything a run produced.
#[derive(Clone, Debug)]
pub struct SimReport {
    /// The run's seed.
    pub seed: u64,
    /// How it ended.
    pub outcome: Outcome,
    /// Simulated time of the last event.
    pub time_ns: Time,
    /// Records executed on all engines.
    pub instructions: u64,
    /// Events processed.
    pub events: u64,
    /// Bytes DMA moved through HBM.
    pub hbm_bytes: u64,
    /// Bytes compute records read and wrote in HBM.
    pub compute_bytes: u64,
    /// Accesses through a shared tensor's var on a core other than the first
    /// declaring it, which the equalization check compared with the first's.
    pub shared_accesses: u64,
    /// Barrier arrivals executed on all engines.
    pub barrier_arrivals: u64,
    /// Memory accesses the shadow memory and the race detector looked at.
    pub shadowed_accesses: u64,
    /// Prior accesses by another engine or core that the race detector
    /// ordered an access against (0: the happens-before check judged nothing).
    pub race_comparisons: u64,
    /// Bytes of HBM the simulator mirrored (every var of every core).
    pub mirrored_bytes: u64,
    /// Per-core figures.
    pub cores: Vec<CoreStats>,
    /// Every violation found, up to `max_violations`, and past it the first of each kind.
    pub violations: Vec<Violation>,
    /// The simulated time each violation was found at (parallel to `violations`).
    pub violation_ns: Vec<Time>,
    /// Violations found beyond `max_violations`.
    pub violations_dropped: u64,
    /// Hash of the canonical event sequence.
    pub trace_hash: u64,
    /// The recorded trace, when the config asked for one.
    pub trace: Option<Trace>,
    /// The injected faults that fired, in firing order (the first
    /// [`crate::engine::fault::MAX_FIRED_LISTED`]).
    pub faults_fired: Vec<crate::engine::fault::FiredSimFault>,
    /// How many injected faults fired in all.
    pub faults_fired_total: u64,
}

impl SimReport {
    /// True when the run finished and found nothing.
    pub fn passed(&self) -> bool {
        self.outcome == Outcome::Finished && self.violations.is_empty() && self.violations_dropped == 0
    }

    /// The violations of one kind (see [`Violation::kind`]).
    pub fn of_kind<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a Violation> + 'a {
        self.violations.iter().filter(move |v| v.kind() == kind)
    }
}

impl fmt::Display for SimReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "sim seed {}: {:?} at {} ns, {} instructions, {} events, {} B by DMA, {} B by compute, trace hash {:016x}",
            self.seed,
            self.outcome,
            self.time_ns,
            self.instructions,
            self.events,
            self.hbm_bytes,
            self.compute_bytes,
            self.trace_hash
        )?;
        for c in &self.cores {
            let per: Vec<String> = c.engines.iter().map(|e| format!("{:?} {}", e.engine, e.instructions)).collect();
            writeln!(f, "  core {} (tpb {}): {}", c.core, c.tpb, per.join(", "))?;
        }
        for v in &self.violations {
            writeln!(f, "  {v}")?;
        }
        if self.violations_dropped > 0 {
            writeln!(f, "  ... and {} more violations", self.violations_dropped)?;
        }
        Ok(())
    }
}

impl SimReport {
    /// A stable JSON summary (object keys sorted): figures, per-core and
    /// per-engine stats, and every violation as `{kind, message}`.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::json;
        let cores: Vec<serde_json::Value> = self
            .cores
            .iter()
            .map(|c| {
                let engines: Vec<serde_json::Value> = c
                    .engines
                    .iter()
                    .map(|e| {
                        json!({
                            "engine": format!("{:?}", e.engine), "instructions": e.instructions,
                            "busy_ns": e.busy_ns, "sem_wait_ns": e.sem_wait_ns, "barrier_wait_ns": e.barrier_wait_ns,
                            "stalled_ns": e.stalled_ns, "finished_at": e.finished_at, "halted": e.halted,
                        })
                    })
                    .collect();
                let queues: Vec<serde_json::Value> = c
                    .queues
                    .iter()
                    .map(|q| json!({"name": q.name, "transfers": q.transfers, "bytes": q.bytes, "busy_ns": q.busy_ns}))
                    .collect();
                json!({"core": c.core, "tpb": c.tpb, "engines": engines, "queues": queues})
            })
            .collect();
        let violations: Vec<serde_json::Value> =
            self.violations.iter().map(|v| json!({"kind": v.kind(), "message": v.to_string()})).collect();
        json!({
            "seed": self.seed, "outcome": format!("{:?}", self.outcome), "passed": self.passed(),
            "time_ns": self.time_ns, "instructions": self.instructions, "events": self.events,
            "hbm_bytes": self.hbm_bytes, "compute_bytes": self.compute_bytes, "mirrored_bytes": self.mirrored_bytes,
            "trace_hash": format!("{:016x}", self.trace_hash), "cores": cores,
            "violations": violations, "violations_dropped": self.violations_dropped,
        })
    }
}
