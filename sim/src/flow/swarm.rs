//! Swarm runs: every seed draws its own feature mix (cores, program size,
//! jitter, which faults, concurrent loaders) and runs the whole flow. A
//! campaign splits across machines by `--shard I/N` (seed `A + I + kN`), and
//! within one process `jobs` worker threads share the shard (each run is
//! single-threaded and a pure function of its seed, so results do not depend
//! on the thread count). A stop flag (Ctrl-C, a time budget) ends a campaign
//! early: the seeds that finished are reported, nothing is lost.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use lncsim_model::marks::Recorder;
use lncsim_model::program::SizeClass;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

use super::report::CheckResult;
use super::signature::signatures_with_examples;
use super::{Features, LoadFault, PlantedBug, RunConfig, run};

/// One of `count` disjoint shards of a seed range: seeds `start + index + k * count`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// This shard, `0..count`.
    pub index: u64,
    /// How many shards the range is split into (at least 1).
    pub count: u64,
}

impl Shard {
    /// The whole range.
    pub const ALL: Shard = Shard { index: 0, count: 1 };

    /// The k-th seed of this shard of `range`, if any.
    pub fn nth(&self, range: &Range<u64>, k: u64) -> Option<u64> {
        let off = k.checked_mul(self.count.max(1))?.checked_add(self.index)?;
        let seed = range.start.checked_add(off)?;
        (seed < range.end).then_some(seed)
    }

    /// How many seeds of `range` this shard holds.
    pub fn len(&self, range: &Range<u64>) -> u64 {
        let n = range.end.saturating_sub(range.start);
        let c = self.count.max(1);
        if self.index >= n { 0 } else { (n - self.index).div_ceil(c) }
    }

    /// True when this shard of `range` holds no seed.
    pub fn is_empty(&self, range: &Range<u64>) -> bool {
        self.len(range) == 0
    }
}

/// What a swarm runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SwarmConfig {
    /// The seeds, `A..B`.
    pub seeds: Range<u64>,
    /// The part of `seeds` this process runs.
    pub shard: Shard,
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
    // The contract features draw from a stream of their own, so the draws above stay those of earlier swarms.
    let mut frng = ChaCha8Rng::seed_from_u64(seed ^ 0xFEA7_5EED);
    cfg.features.placed_shared = frng.random_range(0..100) < 40;
    cfg.features.unflagged_barriers = frng.random_range(0..100) < 40;
    cfg.features.reloads = frng.random_range(0..100) < 30;
    cfg.features.sem_pool = frng.random_range(0..100) < 40;
    cfg.features.partial_writes = frng.random_range(0..100) < 40;
    cfg
}

/// A seed's feature mix, as fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mix {
    /// Cores (0 for a file source).
    pub cores: u32,
    /// `small`, `medium`, `large`, `custom` or `file`.
    pub size: &'static str,
    /// Latency jitter.
    pub jitter: bool,
    /// A core stall was requested.
    pub stall: bool,
    /// DMA latency spikes were requested.
    pub dma_spikes: bool,
    /// A faulty load: `("alloc" | "copyin", k)`.
    pub load_fault: Option<(&'static str, u64)>,
    /// Concurrent TNC loaders (0 = none).
    pub loaders: u32,
    /// The contract features (placed shared tensors, unflagged barriers, reloads).
    pub features: Features,
}

impl Mix {
    /// The mix of a run config.
    pub fn of(cfg: &RunConfig) -> Mix {
        let (cores, size) = match &cfg.source {
            super::Source::Generated(g, s) => (g.cores, s.map_or("custom", super::size_name)),
            _ => (0, "file"),
        };
        Mix {
            cores,
            size,
            jitter: cfg.jitter,
            stall: cfg.faults.stall,
            dma_spikes: cfg.faults.dma_spikes,
            load_fault: cfg.faults.load.map(|f| match f {
                LoadFault::Alloc(k) => ("alloc", k),
                LoadFault::CopyIn(k) => ("copyin", k),
            }),
            loaders: cfg.faults.loaders,
            features: cfg.features,
        }
    }

    /// The features this mix drew, by name (for the coverage table).
    pub fn features(&self) -> Vec<String> {
        let mut f = vec![format!("cores={}", self.cores), format!("size={}", self.size)];
        for (on, name) in [(self.jitter, "jitter"), (self.stall, "stall"), (self.dma_spikes, "dma-spikes")] {
            if on {
                f.push(name.to_owned());
            }
        }
        if let Some((k, _)) = self.load_fault {
            f.push(format!("load-{k}"));
        }
        if self.loaders > 0 {
            f.push("tnc-loaders".to_owned());
        }
        f.extend(self.features.words().into_iter().map(str::to_owned));
        f
    }

    /// The mix as JSON fields.
    pub fn to_json(&self) -> Value {
        json!({
            "cores": self.cores,
            "size": self.size,
            "jitter": self.jitter,
            "stall": self.stall,
            "dma_spikes": self.dma_spikes,
            "load_fault": self.load_fault.map(|(k, n)| json!({"kind": k, "index": n})),
            "loaders": self.loaders,
            "features": self.features.words(),
        })
    }
}

impl std::fmt::Display for Mix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts = vec![format!("{} cores", self.cores), self.size.to_string()];
        if self.jitter {
            parts.push("jitter".into());
        }
        if self.stall {
            parts.push("stall".into());
        }
        if self.dma_spikes {
            parts.push("dma".into());
        }
        if let Some((k, n)) = self.load_fault {
            parts.push(format!("load-{k}={n}"));
        }
        if self.loaders > 0 {
            parts.push(format!("{} loaders", self.loaders));
        }
        parts.extend(self.features.words().into_iter().map(str::to_owned));
        write!(f, "{}", parts.join(", "))
    }
}

/// A check's verdict in one seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    /// It ran and found nothing.
    Pass,
    /// It ran and found something.
    Fail,
    /// It had nothing to check.
    NotExercised,
}

/// One seed's outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeedOutcome {
    /// The seed.
    pub seed: u64,
    /// Its feature mix.
    pub mix: Mix,
    /// Every stage and check passed (and, when asked, the second run matched).
    pub passed: bool,
    /// The failures, one line each.
    pub failures: Vec<String>,
    /// The failures' signatures (check + kind), each once.
    pub signatures: Vec<String>,
    /// Per signature (same index), the first failure line that has it.
    pub examples: Vec<String>,
    /// Each check's verdict, in report order.
    pub verdicts: Vec<(&'static str, Verdict)>,
    /// The coverage marks the run hit, with counts.
    pub marks: BTreeMap<&'static str, u64>,
    /// The command that replays the seed.
    pub replay: Option<String>,
    /// The simulator's trace hash.
    pub trace_hash: Option<u64>,
    /// Simulated instructions.
    pub instructions: u64,
}

/// Every finished seed's outcome, in seed order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SwarmReport {
    /// Outcomes in seed order.
    pub outcomes: Vec<SeedOutcome>,
    /// The campaign was stopped (Ctrl-C, time budget) before every seed ran.
    pub stopped: bool,
}

impl SwarmReport {
    /// The failing seeds.
    pub fn failed(&self) -> impl Iterator<Item = &SeedOutcome> {
        self.outcomes.iter().filter(|o| !o.passed)
    }
}

/// Runs one seed (twice when `check_determinism`).
pub fn run_seed(seed: u64, cfg: &SwarmConfig) -> SeedOutcome {
    let mut rc = mix(seed, cfg.cores_max);
    rc.plant = cfg.plant;
    let rec = Recorder::start();
    let report = run(&rc);
    let marks = rec.delta();
    let mut failures = report.failures();
    let (mut sigs, mut examples): (Vec<String>, Vec<String>) = signatures_with_examples(&report).into_iter().unzip();
    if cfg.check_determinism {
        let again = run(&rc);
        if again.trace_hash != report.trace_hash || again.failures() != failures {
            let line = format!(
                "determinism: trace hash {:?} then {:?}",
                report.trace_hash.map(|h| format!("{h:016x}")),
                again.trace_hash.map(|h| format!("{h:016x}"))
            );
            failures.push(line.clone());
            sigs.push("determinism / trace hash or report differs".to_owned());
            examples.push(line);
        }
    }
    let verdicts = report
        .checks
        .iter()
        .map(|c| {
            let v = match c.result {
                CheckResult::Pass => Verdict::Pass,
                CheckResult::Fail(_) => Verdict::Fail,
                CheckResult::NotExercised(_) => Verdict::NotExercised,
            };
            (c.name, v)
        })
        .collect();
    SeedOutcome {
        seed,
        mix: Mix::of(&rc),
        passed: failures.is_empty(),
        failures,
        signatures: sigs,
        examples,
        verdicts,
        marks,
        replay: rc.replay(),
        trace_hash: report.trace_hash,
        instructions: report.sim.as_ref().map_or(0, |s| s.instructions),
    }
}

/// Runs this shard of `cfg.seeds` on `cfg.jobs` threads until done or until
/// `stop` is set; `on_done` sees each outcome as it finishes.
pub fn swarm(cfg: &SwarmConfig, stop: &AtomicBool, on_done: &(dyn Fn(&SeedOutcome) + Sync)) -> SwarmReport {
    let next = AtomicU64::new(0);
    let results: Mutex<Vec<SeedOutcome>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..cfg.jobs.max(1) {
            s.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    let Some(seed) = cfg.shard.nth(&cfg.seeds, k) else { break };
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
    let stopped = (outcomes.len() as u64) < cfg.shard.len(&cfg.seeds);
    SwarmReport { outcomes, stopped }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mixes_draw_every_contract_feature_and_replay_it() {
        let mixes: Vec<RunConfig> = (0..60).map(|s| mix(s, 8)).collect();
        for (name, on) in [
            ("placed-shared", mixes.iter().filter(|c| c.features.placed_shared).count()),
            ("unflagged-barriers", mixes.iter().filter(|c| c.features.unflagged_barriers).count()),
            ("reloads", mixes.iter().filter(|c| c.features.reloads).count()),
            ("sem-pool", mixes.iter().filter(|c| c.features.sem_pool).count()),
        ] {
            assert!((5..55).contains(&on), "{name} drawn in {on} of 60 seeds");
        }
        let c = mixes.iter().find(|c| c.features.reloads).expect("a seed with reloads");
        assert!(c.replay().expect("a generated run replays").contains(" --features "), "{:?}", c.replay());
        assert!(Mix::of(c).features().contains(&"reloads".to_owned()));
    }

    #[test]
    fn shards_partition_the_range() {
        let range = 10..27;
        let mut seen = Vec::new();
        for index in 0..4 {
            let sh = Shard { index, count: 4 };
            let seeds: Vec<u64> = (0..).map_while(|k| sh.nth(&range, k)).collect();
            assert_eq!(seeds.len() as u64, sh.len(&range));
            seen.extend(seeds);
        }
        seen.sort();
        assert_eq!(seen, (10..27).collect::<Vec<_>>());
        assert_eq!(Shard { index: 5, count: 8 }.len(&(0..3)), 0);
        assert_eq!(Shard::ALL.len(&(0..u64::MAX)), u64::MAX);
        assert_eq!(Shard { index: 1, count: 2 }.nth(&(0..u64::MAX), u64::MAX), None);
    }
}
