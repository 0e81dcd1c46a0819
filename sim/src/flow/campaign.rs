//! A swarm campaign's summary: failures grouped by signature (check + kind)
//! with counts and one replay per group, and the coverage table: how many
//! seeds drew each feature, how often each requested fault fired, each
//! check's pass / fail / not-exercised counts, and seed-contract coverage
//! (every catalogued mark of the seeds' branches with its hit count, the
//! never-hit ones listed by seed section). Cost: linear in outcomes times
//! (checks + marks), with ordered maps (stable output).

use std::collections::BTreeMap;
use std::fmt;

use lncsim_model::marks::catalog::{SEED_MARKS, seed_section};
use serde_json::{Value, json};

use super::swarm::{SwarmReport, Verdict};

/// One group of failing seeds that share a signature.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FailureGroup {
    /// Check + kind.
    pub signature: String,
    /// How many seeds failed this way.
    pub seeds: u64,
    /// The smallest such seed.
    pub first_seed: u64,
    /// Its first failure line.
    pub example: String,
    /// The command that replays the smallest seed.
    pub replay: Option<String>,
}

/// How often a requested fault kind fired.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FaultCount {
    /// Seeds that requested it.
    pub requested: u64,
    /// Seeds where it fired at least once.
    pub fired: u64,
}

/// The whole summary.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Campaign {
    /// Seeds that finished.
    pub runs: u64,
    /// Seeds that failed.
    pub failed: u64,
    /// Failure groups, most seeds first, then by signature.
    pub groups: Vec<FailureGroup>,
    /// Seeds that drew each feature.
    pub features: BTreeMap<String, u64>,
    /// Requested vs fired, per fault kind (`stall`, `dma-spikes`, `load-alloc`, `load-copyin`).
    pub faults: BTreeMap<&'static str, FaultCount>,
    /// Per check: (pass, fail, not exercised) seed counts.
    pub checks: BTreeMap<&'static str, [u64; 3]>,
    /// Every catalogued seed-contract mark with its hit count over the campaign.
    pub seed_marks: Vec<(&'static str, u64)>,
}

/// The marks that say a requested fault fired, per fault kind.
const FAULT_MARKS: [(&str, &str); 4] = [
    ("stall", "sim.fault.stall"),
    ("dma-spikes", "sim.fault.dma_spike"),
    ("load-alloc", "flow.fault.load_fired"),
    ("load-copyin", "flow.fault.load_fired"),
];

impl Campaign {
    /// Summarises a swarm's finished seeds.
    pub fn of(report: &SwarmReport) -> Campaign {
        let mut c = Campaign { runs: report.outcomes.len() as u64, ..Campaign::default() };
        let mut groups: BTreeMap<&str, FailureGroup> = BTreeMap::new();
        let mut hits: BTreeMap<&'static str, u64> = SEED_MARKS.iter().map(|m| (*m, 0)).collect();
        for o in &report.outcomes {
            if !o.passed {
                c.failed += 1;
            }
            for (i, sig) in o.signatures.iter().enumerate() {
                let g = groups.entry(sig).or_insert_with(|| FailureGroup {
                    signature: sig.clone(),
                    seeds: 0,
                    first_seed: o.seed,
                    example: o.examples.get(i).cloned().unwrap_or_default(),
                    replay: o.replay.clone(),
                });
                g.seeds += 1;
            }
            for f in o.mix.features() {
                *c.features.entry(f).or_insert(0) += 1;
            }
            let requested = [
                ("stall", o.mix.stall),
                ("dma-spikes", o.mix.dma_spikes),
                ("load-alloc", o.mix.load_fault.is_some_and(|(k, _)| k == "alloc")),
                ("load-copyin", o.mix.load_fault.is_some_and(|(k, _)| k == "copyin")),
            ];
            for ((kind, asked), (_, mark)) in requested.into_iter().zip(FAULT_MARKS) {
                if asked {
                    let e = c.faults.entry(kind).or_default();
                    e.requested += 1;
                    if o.marks.get(mark).copied().unwrap_or(0) > 0 {
                        e.fired += 1;
                    }
                }
            }
            for (name, v) in &o.verdicts {
                let e = c.checks.entry(name).or_insert([0; 3]);
                e[match v {
                    Verdict::Pass => 0,
                    Verdict::Fail => 1,
                    Verdict::NotExercised => 2,
                }] += 1;
            }
            for (m, n) in &o.marks {
                if let Some(h) = hits.get_mut(m) {
                    *h += n;
                }
            }
        }
        c.groups = groups.into_values().collect();
        c.groups.sort_by(|a, b| b.seeds.cmp(&a.seeds).then_with(|| a.signature.cmp(&b.signature)));
        c.seed_marks = hits.into_iter().collect();
        c
    }

    /// The never-hit seed-contract marks, grouped by seed section (sections in order).
    pub fn never_hit(&self) -> BTreeMap<&'static str, Vec<&'static str>> {
        let mut out: BTreeMap<&'static str, Vec<&'static str>> = BTreeMap::new();
        for (m, n) in &self.seed_marks {
            if *n == 0 {
                out.entry(seed_section(m).unwrap_or("unsorted")).or_default().push(m);
            }
        }
        out
    }

    /// The summary as JSON (stable key order).
    pub fn to_json(&self) -> Value {
        let groups: Vec<Value> = self
            .groups
            .iter()
            .map(|g| {
                json!({"signature": g.signature, "seeds": g.seeds, "first_seed": g.first_seed,
                       "example": g.example, "replay": g.replay})
            })
            .collect();
        let faults: BTreeMap<&str, Value> =
            self.faults.iter().map(|(k, f)| (*k, json!({"requested": f.requested, "fired": f.fired}))).collect();
        let checks: BTreeMap<&str, Value> =
            self.checks.iter().map(|(k, [p, f, n])| (*k, json!({"pass": p, "fail": f, "not_exercised": n}))).collect();
        let marks: BTreeMap<&str, u64> = self.seed_marks.iter().copied().collect();
        let hit = self.seed_marks.iter().filter(|(_, n)| *n > 0).count();
        json!({
            "groups": groups,
            "features": self.features,
            "faults": faults,
            "checks": checks,
            "seed_contract": {"marks": marks, "hit": hit, "total": self.seed_marks.len(), "never_hit": self.never_hit()},
        })
    }
}

impl fmt::Display for Campaign {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.groups.is_empty() {
            writeln!(f, "failures by signature ({} groups)", self.groups.len())?;
            for g in &self.groups {
                writeln!(f, "  {:>6} seeds  {}", g.seeds, g.signature)?;
                // One line: a deadlock's example is its header (its waiters follow on lines of their own).
                let mut example: String = g.example.lines().next().unwrap_or("").chars().take(160).collect();
                if example.len() < g.example.len() {
                    example.push_str(" ...");
                }
                writeln!(f, "          e.g. seed {}: {example}", g.first_seed)?;
                writeln!(f, "          replay: {}", g.replay.as_deref().unwrap_or("(no replay command)"))?;
            }
        }
        writeln!(f, "coverage: features drawn (seeds of {})", self.runs)?;
        for (k, n) in &self.features {
            writeln!(f, "  {n:>8}  {k}")?;
        }
        writeln!(f, "coverage: faults (requested -> fired)")?;
        if self.faults.is_empty() {
            writeln!(f, "  (no seed requested a fault)")?;
        }
        for (k, c) in &self.faults {
            let note = if c.fired < c.requested { "  (some requested faults never fired)" } else { "" };
            writeln!(f, "  {:>8} -> {:<8} {k}{note}", c.requested, c.fired)?;
        }
        writeln!(f, "coverage: checks (pass / fail / not exercised)")?;
        for (k, [p, fl, n]) in &self.checks {
            writeln!(f, "  {p:>6} / {fl:>4} / {n:>4}  {k}")?;
        }
        let hit = self.seed_marks.iter().filter(|(_, n)| *n > 0).count();
        writeln!(f, "coverage: seed contract ({hit} of {} marks hit)", self.seed_marks.len())?;
        for (section, marks) in self.never_hit() {
            writeln!(f, "  never hit in {section}: {}", marks.join(", "))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::swarm::{Mix, SeedOutcome};
    use super::*;

    fn outcome(seed: u64, sigs: &[&str], marks: &[(&'static str, u64)], stall: bool) -> SeedOutcome {
        SeedOutcome {
            seed,
            mix: Mix {
                cores: 2,
                size: "small",
                jitter: false,
                stall,
                dma_spikes: false,
                load_fault: None,
                loaders: 0,
                features: Default::default(),
            },
            passed: sigs.is_empty(),
            failures: sigs.iter().map(|s| format!("{s}: detail")).collect(),
            signatures: sigs.iter().map(|s| s.to_string()).collect(),
            examples: sigs.iter().map(|s| format!("{s}: detail")).collect(),
            verdicts: vec![
                ("c", if sigs.is_empty() { Verdict::Pass } else { Verdict::Fail }),
                ("n", Verdict::NotExercised),
            ],
            marks: marks.iter().copied().collect(),
            replay: Some(format!("lncsim run --seed {seed}")),
            trace_hash: None,
            instructions: 0,
        }
    }

    #[test]
    fn groups_count_seeds_and_keep_the_smallest_replay() {
        let r = SwarmReport {
            outcomes: vec![
                outcome(3, &["a / x"], &[], false),
                outcome(5, &["a / x", "b / y"], &[], false),
                outcome(7, &[], &[], false),
                outcome(9, &["b / y"], &[], false),
                outcome(11, &["a / x"], &[], false),
            ],
            stopped: false,
        };
        let c = Campaign::of(&r);
        assert_eq!((c.runs, c.failed), (5, 4));
        let g: Vec<(&str, u64, u64)> = c.groups.iter().map(|g| (g.signature.as_str(), g.seeds, g.first_seed)).collect();
        assert_eq!(g, vec![("a / x", 3, 3), ("b / y", 2, 5)]);
        assert_eq!(c.groups[1].replay.as_deref(), Some("lncsim run --seed 5"));
        assert_eq!(c.checks["c"], [1, 4, 0]);
        assert_eq!(c.checks["n"], [0, 0, 5]);
    }

    #[test]
    fn a_groups_example_is_the_first_seeds_own_line_for_that_signature() {
        // Seed 4 fails `a` twice, then `b`: `b`'s example is its `b` line, not the second `a` line.
        let mut o = outcome(4, &["a / x", "b / y"], &[], false);
        o.failures = vec!["a: first".into(), "a: second".into(), "b: third".into()];
        o.examples = vec!["a: first".into(), "b: third".into()];
        let r = SwarmReport { outcomes: vec![o, outcome(6, &["b / y"], &[], false)], stopped: false };
        let c = Campaign::of(&r);
        let ex: Vec<(&str, u64, &str)> =
            c.groups.iter().map(|g| (g.signature.as_str(), g.first_seed, g.example.as_str())).collect();
        assert_eq!(ex, vec![("b / y", 4, "b: third"), ("a / x", 4, "a: first")]);
    }

    #[test]
    fn faults_count_requested_and_fired_and_marks_cover_the_catalogue() {
        let r = SwarmReport {
            outcomes: vec![
                outcome(1, &[], &[("sim.fault.stall", 4), ("load.s5.registered", 2)], true),
                outcome(2, &[], &[("load.s5.registered", 1)], true),
                outcome(3, &[], &[], false),
            ],
            stopped: false,
        };
        let c = Campaign::of(&r);
        assert_eq!(c.faults["stall"], FaultCount { requested: 2, fired: 1 });
        assert_eq!(c.features["stall"], 2);
        assert_eq!(c.seed_marks.len(), SEED_MARKS.len());
        assert!(c.seed_marks.contains(&("load.s5.registered", 3)));
        let never = c.never_hit();
        assert!(never["002 Stage 5 - Relocate and Register"].contains(&"load.s5.relocated"));
        assert!(!never["002 Stage 5 - Relocate and Register"].contains(&"load.s5.registered"));
        let text = c.to_string();
        assert!(text.contains("2 -> 1        stall  (some requested faults never fired)"), "{text}");
        assert!(text.contains(&format!("coverage: seed contract (1 of {} marks hit)", SEED_MARKS.len())));
    }
}
