//! What a run is: the seed, the cost model, jitter, faults, the event budget
//! and which checks run. A run is a pure function of (device contents, core
//! images, this config).

use crate::engine::cost::CostModel;
use crate::engine::fault::FaultPlan;

/// Seeded schedule exploration: every latency gets a random extra of
/// `0..=latency * pct / 100 + floor_ns` nanoseconds, drawn from the run's RNG.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Jitter {
    /// Extra latency, at most this percent of the latency.
    pub pct: u32,
    /// Extra latency on top of the percentage (reorders even zero-cost records).
    pub floor_ns: u64,
}

impl Default for Jitter {
    fn default() -> Self {
        Jitter { pct: 200, floor_ns: 64 }
    }
}

/// Which memory checks run (all on by default).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Checks {
    /// The happens-before race detector.
    pub races: bool,
    /// Shadow ownership: out-of-var accesses and clobbers.
    pub ownership: bool,
    /// Address equalization of shared tensors.
    pub equalization: bool,
}

impl Default for Checks {
    fn default() -> Self {
        Checks { races: true, ownership: true, equalization: true }
    }
}

/// The configuration of one simulation run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimConfig {
    /// Drives every random choice (jitter, fault draws) through one ChaCha8 RNG.
    pub seed: u64,
    /// Latency jitter for schedule exploration; `None` runs the plain cost model.
    pub jitter: Option<Jitter>,
    /// The cost model.
    pub cost: CostModel,
    /// Injected faults.
    pub faults: FaultPlan,
    /// The run fails once it has processed more events than this.
    pub events_max: u64,
    /// Which checks run.
    pub checks: Checks,
    /// Record a trace for [`crate::Trace::write_chrome`] (costs memory; the trace hash is always computed).
    pub trace: bool,
    /// Violations kept in the report; later ones are only counted, except the first of each kind.
    pub max_violations: usize,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            seed: 0,
            jitter: None,
            cost: CostModel::default(),
            faults: FaultPlan::default(),
            events_max: 100_000_000,
            checks: Checks::default(),
            trace: false,
            max_violations: 64,
        }
    }
}

impl SimConfig {
    /// The default config with `seed`.
    pub fn seeded(seed: u64) -> Self {
        SimConfig { seed, ..SimConfig::default() }
    }

    /// This config with the default jitter on.
    pub fn with_jitter(mut self) -> Self {
        self.jitter = Some(Jitter::default());
        self
    }
}
