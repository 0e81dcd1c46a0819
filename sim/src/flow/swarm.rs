//! Swarm runs: every seed draws its own feature mix (cores, program size,
//! jitter, which faults, concurrent loaders) and runs the whole flow. Seeds
//! shard by range, so a job array can split the work; within one process
//! `jobs` worker threads share the range (each run is single-threaded and a
//! pure function of its seed, so results do not depend on the thread count).

use std::ops::Range;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use lncsim_model::program::SizeClass;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{LoadFault, PlantedBug, RunConfig, run};

/// What a swarm runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SwarmConfig {
    /// The seeds, `A..B`.
    pub seeds: Range<u64>,
    /// Worker threads (at least 1).
    pub jobs: usize,
    /// Most cores a seed may draw.
    pub cores_max: u32,
    /// Run every seed twice and compare the reports and trace hashes.
    pub check_determinism: bool,
    /// A bug planted in every run (to see that the swarm reports it).
    pub plant: Option<PlantedBug>,
}

/// The feature mix of `seed`: the same seed always draws the same mix.
pub fn mix(seed: u64, cores_max: u32) -> RunConfig {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5EED_5A2A);
    let cores = rng.random_range(1..=cores_max.clamp(1, 256));
    let size = if rng.random_range(0..10) == 0 { SizeClass::Medium } else { SizeClass::Small };
    let mut cfg = RunConfig::generated(seed, cores, size);
    cfg.jitter = rng.random_bool(0.5);
    cfg.faults.stall = rng.random_range(0..100) < 15;
    cfg.faults.dma_spikes = rng.random_range(0..100) < 15;
    cfg.faults.load = match rng.random_range(0..100) {
        0..10 => Some(LoadFault::Alloc(rng.random_range(0..12))),
        10..15 => Some(LoadFault::CopyIn(rng.random_range(0..12))),
        _ => None,
    };
    cfg.faults.loaders = if rng.random_range(0..4) == 0 { rng.random_range(2..=5) } else { 0 };
    cfg
}

/// One seed's outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeedOutcome {
    /// The seed.
    pub seed: u64,
    /// Its feature mix, in one line.
    pub mix: String,
    /// Every stage and check passed (and, when asked, the second run matched).
    pub passed: bool,
    /// The failures, one line each.
    pub failures: Vec<String>,
    /// The command that replays the seed.
    pub replay: Option<String>,
    /// The simulator's trace hash.
    pub trace_hash: Option<u64>,
    /// Simulated instructions.
    pub instructions: u64,
}

/// Every seed's outcome, in seed order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SwarmReport {
    /// Outcomes in seed order.
    pub outcomes: Vec<SeedOutcome>,
}

impl SwarmReport {
    /// The failing seeds.
    pub fn failed(&self) -> impl Iterator<Item = &SeedOutcome> {
        self.outcomes.iter().filter(|o| !o.passed)
    }
}

fn describe(cfg: &RunConfig) -> String {
    let (cores, size) = match &cfg.source {
        super::Source::Generated(g, s) => (g.cores, s.map_or("custom", super::size_name)),
        _ => (0, "file"),
    };
    let mut parts = vec![format!("{cores} cores"), size.to_string()];
    if cfg.jitter {
        parts.push("jitter".into());
    }
    if cfg.faults.stall {
        parts.push("stall".into());
    }
    if cfg.faults.dma_spikes {
        parts.push("dma".into());
    }
    if let Some(f) = cfg.faults.load {
        parts.push(format!("{f:?}").to_lowercase());
    }
    if cfg.faults.loaders > 0 {
        parts.push(format!("{} loaders", cfg.faults.loaders));
    }
    parts.join(", ")
}

/// Runs one seed (twice when `check_determinism`).
pub fn run_seed(seed: u64, cfg: &SwarmConfig) -> SeedOutcome {
    let mut rc = mix(seed, cfg.cores_max);
    rc.plant = cfg.plant;
    let report = run(&rc);
    let mut failures = report.failures();
    if cfg.check_determinism {
        let again = run(&rc);
        if again.trace_hash != report.trace_hash || again.failures() != failures {
            failures.push(format!(
                "determinism: trace hash {:?} then {:?}",
                report.trace_hash.map(|h| format!("{h:016x}")),
                again.trace_hash.map(|h| format!("{h:016x}"))
            ));
        }
    }
    SeedOutcome {
        seed,
        mix: describe(&rc),
        passed: failures.is_empty(),
        failures,
        replay: rc.replay(),
        trace_hash: report.trace_hash,
        instructions: report.sim.as_ref().map_or(0, |s| s.instructions),
    }
}

/// Runs every seed of `cfg.seeds` on `cfg.jobs` threads; `on_done` sees each outcome as it finishes.
pub fn swarm(cfg: &SwarmConfig, on_done: &(dyn Fn(&SeedOutcome) + Sync)) -> SwarmReport {
    let next = AtomicU64::new(cfg.seeds.start);
    let results: Mutex<Vec<SeedOutcome>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..cfg.jobs.max(1) {
            s.spawn(|| {
                loop {
                    let seed = next.fetch_add(1, Ordering::Relaxed);
                    if seed >= cfg.seeds.end {
                        break;
                    }
                    let o = run_seed(seed, cfg);
                    on_done(&o);
                    // A poisoned lock only means another worker panicked; keep its results.
                    results.lock().unwrap_or_else(|e| e.into_inner()).push(o);
                }
            });
        }
    });
    let mut outcomes = results.into_inner().unwrap_or_else(|e| e.into_inner());
    outcomes.sort_by_key(|o| o.seed);
    SwarmReport { outcomes }
}
