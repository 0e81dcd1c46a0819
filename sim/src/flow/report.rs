//! A run's report: stages, checks with the invariants they guard, the
//! simulator's figures, and the command that replays the run.

use std::fmt;

use serde_json::{Value, json};

use crate::SimReport;

/// One stage of the flow and how it went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stage {
    /// Stage name (`program`, `interpret`, `split + allocate`, `link`, ...).
    pub name: &'static str,
    /// What it did, or why it failed.
    pub outcome: Result<String, String>,
}

/// A check's result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CheckResult {
    /// It ran and found nothing.
    Pass,
    /// It ran and found this.
    Fail(String),
    /// It had nothing to check (e.g. a requested fault that never fired); the text says why.
    /// Never counted as a pass, nor as a failure.
    NotExercised(String),
}

/// One independent check and the invariants (DESIGN.md, "The invariants") it guards.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Check {
    /// What it checks.
    pub name: &'static str,
    /// Invariant numbers 1..=6.
    pub invariants: Vec<u8>,
    /// Its result.
    pub result: CheckResult,
}

/// Everything one run did and found.
#[derive(Clone, Debug, Default)]
pub struct RunReport {
    /// The run seed.
    pub seed: u64,
    /// The command that replays the run, if one exists.
    pub replay: Option<String>,
    /// The program's (or NEFF's) name.
    pub program: String,
    /// Cores.
    pub cores: u32,
    /// IR instructions of the program (staged records, for a NEFF source).
    pub instructions: usize,
    /// HBM allocated by the load.
    pub hbm_bytes: u64,
    /// Stages in order.
    pub stages: Vec<Stage>,
    /// Checks in order.
    pub checks: Vec<Check>,
    /// The simulator's report, when execution ran.
    pub sim: Option<SimReport>,
    /// The simulator's trace hash, when execution ran.
    pub trace_hash: Option<u64>,
    /// Requested faults: each one that fired, and each that did not (`not fired: ...`).
    pub faults: Vec<String>,
}

impl RunReport {
    /// An empty report for a run of `seed`.
    pub fn new(seed: u64, replay: Option<String>) -> Self {
        RunReport { seed, replay, ..RunReport::default() }
    }

    /// Records a stage.
    pub fn stage(&mut self, name: &'static str, outcome: Result<String, String>) {
        self.stages.push(Stage { name, outcome });
    }

    /// Records a check.
    pub fn check(&mut self, name: &'static str, invariants: &[u8], outcome: Result<(), String>) {
        let result = match outcome {
            Ok(()) => CheckResult::Pass,
            Err(e) => CheckResult::Fail(e),
        };
        self.checks.push(Check { name, invariants: invariants.to_vec(), result });
    }

    /// Records a check that had nothing to check, with the reason.
    pub fn not_exercised(&mut self, name: &'static str, invariants: &[u8], why: String) {
        self.checks.push(Check { name, invariants: invariants.to_vec(), result: CheckResult::NotExercised(why) });
    }

    /// How many checks passed, failed and were not exercised.
    pub fn check_counts(&self) -> (usize, usize, usize) {
        let mut n = (0, 0, 0);
        for c in &self.checks {
            match c.result {
                CheckResult::Pass => n.0 += 1,
                CheckResult::Fail(_) => n.1 += 1,
                CheckResult::NotExercised(_) => n.2 += 1,
            }
        }
        n
    }

    /// True when every stage succeeded and every check passed.
    pub fn passed(&self) -> bool {
        self.stages.iter().all(|s| s.outcome.is_ok())
            && self.checks.iter().all(|c| !matches!(c.result, CheckResult::Fail(_)))
    }

    /// The failed stages and checks, one line each.
    pub fn failures(&self) -> Vec<String> {
        let stages = self.stages.iter().filter_map(|s| s.outcome.as_ref().err().map(|e| format!("{}: {e}", s.name)));
        let checks = self.checks.iter().filter_map(|c| match &c.result {
            CheckResult::Fail(e) => Some(format!("{}: {e}", c.name)),
            CheckResult::Pass | CheckResult::NotExercised(_) => None,
        });
        stages.chain(checks).collect()
    }

    /// The names of the failed checks.
    pub fn failed_checks(&self) -> Vec<&'static str> {
        self.checks.iter().filter(|c| matches!(c.result, CheckResult::Fail(_))).map(|c| c.name).collect()
    }

    /// The report as JSON (stable key order).
    pub fn to_json(&self) -> Value {
        let stages: Vec<Value> = self
            .stages
            .iter()
            .map(|s| match &s.outcome {
                Ok(d) => json!({"stage": s.name, "ok": true, "detail": d}),
                Err(e) => json!({"stage": s.name, "ok": false, "detail": e}),
            })
            .collect();
        let checks: Vec<Value> = self
            .checks
            .iter()
            .map(|c| match &c.result {
                CheckResult::Pass => json!({"check": c.name, "invariants": c.invariants, "passed": true}),
                CheckResult::Fail(e) => {
                    json!({"check": c.name, "invariants": c.invariants, "passed": false, "detail": e})
                }
                CheckResult::NotExercised(e) => json!({
                    "check": c.name, "invariants": c.invariants, "passed": false, "not_exercised": true, "detail": e
                }),
            })
            .collect();
        let sim = self.sim.as_ref().map(|s| {
            json!({
                "outcome": format!("{:?}", s.outcome),
                "time_ns": s.time_ns,
                "instructions": s.instructions,
                "events": s.events,
                "hbm_dma_bytes": s.hbm_bytes,
            })
        });
        json!({
            "seed": self.seed,
            "program": self.program,
            "cores": self.cores,
            "instructions": self.instructions,
            "hbm_bytes": self.hbm_bytes,
            "passed": self.passed(),
            "stages": stages,
            "checks": checks,
            "sim": sim,
            "trace_hash": self.trace_hash.map(|h| format!("{h:016x}")),
            "faults": self.faults,
            "replay": self.replay,
        })
    }
}

impl fmt::Display for RunReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "seed {}", self.seed)?;
        writeln!(f, "program  {} ({} cores, {} instructions)", self.program, self.cores, self.instructions)?;
        for s in &self.stages {
            match &s.outcome {
                Ok(d) => writeln!(f, "  ok    {:<16} {d}", s.name)?,
                Err(e) => writeln!(f, "  FAIL  {:<16} {e}", s.name)?,
            }
        }
        if let Some(s) = &self.sim {
            writeln!(
                f,
                "sim      {} ns simulated, {} instructions, {} events, {} B moved by DMA, HBM allocated {} B, trace {:016x}",
                s.time_ns, s.instructions, s.events, s.hbm_bytes, self.hbm_bytes, s.trace_hash
            )?;
        }
        for line in &self.faults {
            writeln!(f, "fault    {line}")?;
        }
        writeln!(f, "checks")?;
        for c in &self.checks {
            let inv: Vec<String> = c.invariants.iter().map(u8::to_string).collect();
            match &c.result {
                CheckResult::Pass => writeln!(f, "  pass  [{}] {}", inv.join(","), c.name)?,
                CheckResult::Fail(e) => writeln!(f, "  FAIL  [{}] {}: {e}", inv.join(","), c.name)?,
                CheckResult::NotExercised(e) => {
                    writeln!(f, "  n/a   [{}] {}: not exercised: {e}", inv.join(","), c.name)?
                }
            }
        }
        let verdict = if self.passed() { "PASS" } else { "FAIL" };
        let (pass, fail, none) = self.check_counts();
        let stages_failed = self.stages.iter().filter(|s| s.outcome.is_err()).count();
        let mut parts = vec![format!("{pass} passed"), format!("{fail} failed")];
        if none > 0 {
            parts.push(format!("{none} not exercised"));
        }
        if stages_failed > 0 {
            parts.push(format!("{stages_failed} stage(s) failed"));
        }
        writeln!(f, "result   {verdict} ({} checks: {})", self.checks.len(), parts.join(", "))?;
        if !self.passed() {
            match &self.replay {
                Some(cmd) => writeln!(f, "replay:  {cmd}")?,
                None if self.failures().iter().any(|l| l.starts_with("plant: cannot plant here")) => {}
                None => writeln!(f, "replay:  (no flags reproduce this config; see the program printed above)")?,
            }
        }
        Ok(())
    }
}
