//! A run's report: stages, checks with the invariants they guard, the
//! simulator's figures, and the command that replays the run.
//!
//! Each stage and check carries its wall time (`micros`, the time since the
//! previous stage or check finished). Times are only printed: the trace hash,
//! [`RunReport::to_json`] and the [`fmt::Display`] text leave them out, so
//! those stay deterministic; [`RunReport::to_json_timed`] and the lines of
//! [`Stage::line`] / [`Check::line`] with `times` carry them.

use std::fmt;
use std::time::Instant;

use serde_json::{Value, json};

use crate::SimReport;

/// One stage of the flow and how it went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stage {
    /// Stage name (`program`, `interpret`, `split + allocate`, `link`, ...).
    pub name: &'static str,
    /// What it did, or why it failed.
    pub outcome: Result<String, String>,
    /// Wall time in microseconds since the previous stage or check finished (0 when not timed).
    pub micros: u64,
}

/// ` (12.3 ms)`: a time suffix, or nothing without `times`.
fn time_suffix(micros: u64, times: bool) -> String {
    if times { format!("  ({:.1} ms)", micros as f64 / 1e3) } else { String::new() }
}

impl Stage {
    /// The stage's report line (`  ok    name  detail`), with its time when `times`.
    pub fn line(&self, times: bool) -> String {
        let t = time_suffix(self.micros, times);
        match &self.outcome {
            Ok(d) => format!("  ok    {:<16} {d}{t}", self.name),
            Err(e) => format!("  FAIL  {:<16} {e}{t}", self.name),
        }
    }
}

impl Check {
    /// The check's report line (`  pass  [1,3] name`), with its time when `times`.
    pub fn line(&self, times: bool) -> String {
        let inv: Vec<String> = self.invariants.iter().map(u8::to_string).collect();
        let t = time_suffix(self.micros, times);
        match &self.result {
            CheckResult::Pass => format!("  pass  [{}] {}{t}", inv.join(","), self.name),
            CheckResult::Fail(e) => format!("  FAIL  [{}] {}: {e}{t}", inv.join(","), self.name),
            CheckResult::NotExercised(e) => format!("  n/a   [{}] {}: not exercised: {e}{t}", inv.join(","), self.name),
        }
    }
}

/// A stage or check that just finished, as a run reports it while it goes.
#[derive(Clone, Copy, Debug)]
pub enum Progress<'a> {
    /// A stage finished.
    Stage(&'a Stage),
    /// A check finished.
    Check(&'a Check),
    /// A requested fault fired, or is known not to have (`not fired: ...`).
    Fault(&'a str),
}

/// A report being filled by a run: times each stage and check against the
/// previous one and tells `on` about it as soon as it is recorded.
pub(super) struct Rec<'a> {
    pub(super) report: RunReport,
    on: &'a mut dyn FnMut(Progress<'_>),
    lap: Instant,
}

impl<'a> Rec<'a> {
    pub(super) fn new(report: RunReport, on: &'a mut dyn FnMut(Progress<'_>)) -> Self {
        Rec { report, on, lap: Instant::now() }
    }

    fn lap(&mut self) -> u64 {
        let now = Instant::now();
        let us = now.duration_since(self.lap).as_micros();
        self.lap = now;
        u64::try_from(us).unwrap_or(u64::MAX)
    }

    /// Records a stage, timed, and reports it.
    pub(super) fn stage(&mut self, name: &'static str, outcome: Result<String, String>) {
        let micros = self.lap();
        self.report.stages.push(Stage { name, outcome, micros });
        if let Some(s) = self.report.stages.last() {
            (self.on)(Progress::Stage(s));
        }
    }

    /// Records a check that had nothing to check, timed, and reports it.
    pub(super) fn not_exercised(&mut self, name: &'static str, invariants: &[u8], why: String) {
        let micros = self.lap();
        self.report.not_exercised(name, invariants, why);
        if let Some(c) = self.report.checks.last_mut() {
            c.micros = micros;
            (self.on)(Progress::Check(c));
        }
    }

    /// Records a fault line and reports it.
    pub(super) fn fault(&mut self, line: String) {
        self.report.faults.push(line);
        if let Some(l) = self.report.faults.last() {
            (self.on)(Progress::Fault(l));
        }
    }

    /// Records a check of outputs against the reference `golden`: "not
    /// exercised" when the program writes no output (nothing was compared)
    /// and `outcome` found nothing, else as [`Rec::check`].
    pub(super) fn outputs_check(
        &mut self,
        name: &'static str,
        invariants: &[u8],
        golden: &lncsim_model::program::Values,
        outcome: Result<(), String>,
    ) {
        match outcome {
            Ok(()) if golden.is_empty() => {
                self.not_exercised(name, invariants, "the program writes no output: nothing to compare".into())
            }
            o => self.check(name, invariants, o),
        }
    }

    /// Records a check, timed, and reports it.
    pub(super) fn check(&mut self, name: &'static str, invariants: &[u8], outcome: Result<(), String>) {
        let micros = self.lap();
        self.report.check(name, invariants, outcome);
        if let Some(c) = self.report.checks.last_mut() {
            c.micros = micros;
            (self.on)(Progress::Check(c));
        }
    }
}

impl std::ops::Deref for Rec<'_> {
    type Target = RunReport;
    fn deref(&self) -> &RunReport {
        &self.report
    }
}

impl std::ops::DerefMut for Rec<'_> {
    fn deref_mut(&mut self) -> &mut RunReport {
        &mut self.report
    }
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
    /// Wall time in microseconds since the previous stage or check finished (0 when not timed).
    pub micros: u64,
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

    /// Records a stage (untimed).
    pub fn stage(&mut self, name: &'static str, outcome: Result<String, String>) {
        self.stages.push(Stage { name, outcome, micros: 0 });
    }

    /// Records a check.
    pub fn check(&mut self, name: &'static str, invariants: &[u8], outcome: Result<(), String>) {
        let result = match outcome {
            Ok(()) => CheckResult::Pass,
            Err(e) => CheckResult::Fail(e),
        };
        self.checks.push(Check { name, invariants: invariants.to_vec(), result, micros: 0 });
    }

    /// Records a check that had nothing to check, with the reason.
    pub fn not_exercised(&mut self, name: &'static str, invariants: &[u8], why: String) {
        let result = CheckResult::NotExercised(why);
        self.checks.push(Check { name, invariants: invariants.to_vec(), result, micros: 0 });
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

    /// `PASS (10 checks)`, or what failed: `FAIL (2 of 10 checks failed)`,
    /// `FAIL (stage link failed; 0 of 3 checks failed)`.
    pub fn verdict(&self) -> String {
        let n = self.checks.len();
        let (_, failed, none) = self.check_counts();
        let unexercised = if none > 0 { format!(", {none} not exercised") } else { String::new() };
        if self.passed() {
            return format!("PASS ({n} checks{unexercised})");
        }
        if self.not_applicable() {
            return format!(
                "NOT APPLICABLE ({} of {n} checks passed{unexercised}; see the failed stage)",
                n - failed - none
            );
        }
        let stages: Vec<&str> = self.stages.iter().filter(|s| s.outcome.is_err()).map(|s| s.name).collect();
        match stages.as_slice() {
            [] => format!("FAIL ({failed} of {n} checks failed{unexercised})"),
            [one] => format!("FAIL (stage {one} failed; {failed} of {n} checks failed{unexercised})"),
            many => format!("FAIL (stages {} failed; {failed} of {n} checks failed{unexercised})", many.join(", ")),
        }
    }

    /// The report as JSON with each stage's and check's `millis` (wall time: not deterministic).
    pub fn to_json_timed(&self) -> Value {
        let mut v = self.to_json();
        let ms = |us: u64| Value::from((us as f64 / 1e3 * 1e3).round() / 1e3);
        if let Some(a) = v["stages"].as_array_mut() {
            for (j, s) in a.iter_mut().zip(&self.stages) {
                j["millis"] = ms(s.micros);
            }
        }
        if let Some(a) = v["checks"].as_array_mut() {
            for (j, c) in a.iter_mut().zip(&self.checks) {
                j["millis"] = ms(c.micros);
            }
        }
        v
    }

    /// The report as JSON (stable key order, no times: deterministic).
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
            "result": self.verdict(),
            "stages": stages,
            "checks": checks,
            "sim": sim,
            "trace_hash": self.trace_hash.map(|h| format!("{h:016x}")),
            "faults": self.faults,
            "replay": self.replay,
        })
    }
}

impl RunReport {
    /// The closing lines (`program`, `sim`, `result`, and `replay:` on a
    /// failure) that follow the stage and check lines.
    pub fn summary(&self, f: &mut dyn fmt::Write) -> fmt::Result {
        writeln!(f, "program  {} ({} cores, {} instructions)", self.program, self.cores, self.instructions)?;
        if let Some(s) = &self.sim {
            writeln!(
                f,
                "sim      {} ns simulated, {} instructions, {} events, {} B moved by DMA, HBM allocated {} B, trace {:016x}",
                s.time_ns, s.instructions, s.events, s.hbm_bytes, self.hbm_bytes, s.trace_hash
            )?;
        }
        writeln!(f, "result   {}", self.verdict())?;
        if !self.passed() && !self.not_applicable() {
            writeln!(f, "replay:  {}", self.replay_text())?;
        }
        Ok(())
    }

    /// True when the only failure says nothing was checked: a planted bug with no place to go, or a
    /// NEFF in the real (opaque) instruction set, which the simulator cannot execute.
    pub fn not_applicable(&self) -> bool {
        let f = self.failures();
        f.len() == 1
            && (f[0].starts_with("plant: cannot plant here")
                || f[0].starts_with(&format!("execute: {}", super::NOT_EXECUTABLE)))
    }

    /// The replay command, or why there is none.
    pub fn replay_text(&self) -> &str {
        self.replay.as_deref().unwrap_or("(no flags reproduce this config; see the program printed above)")
    }
}

impl fmt::Display for RunReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "seed {}", self.seed)?;
        writeln!(f, "program  {} ({} cores, {} instructions)", self.program, self.cores, self.instructions)?;
        for s in &self.stages {
            writeln!(f, "{}", s.line(false))?;
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
            writeln!(f, "{}", c.line(false))?;
        }
        writeln!(f, "result   {}", self.verdict())?;
        if !self.passed() && !self.not_applicable() {
            writeln!(f, "replay:  {}", self.replay_text())?;
        }
        Ok(())
    }
}
