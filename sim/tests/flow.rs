//! The whole flow (`lncsim run` / `lncsim swarm`): generated race-free programs
//! pass every check, runs are deterministic, each planted bug is reported by the
//! check meant to catch it, a 200-seed swarm passes, and shrinking keeps the failure.
#![allow(clippy::unwrap_used)]

use lncsim_model::program::{GenConfig, SizeClass};
use lncsim_sim::flow::shrink::shrink;
use lncsim_sim::flow::swarm::{Shard, SwarmConfig, swarm};
use lncsim_sim::flow::{CheckResult, PlantedBug, Progress, RunConfig, Source, run, run_observed};
use proptest::prelude::*;
use std::sync::atomic::AtomicBool;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn generated_programs_pass_every_check(
        seed in any::<u64>(),
        cores in 1u32..=8,
        ops in 1u32..40,
        size_bits in 0u32..12,
        handoff_pct in 0u32..=100,
        allreduces in 0u32..3,
        jitter in any::<bool>(),
    ) {
        let g = GenConfig { seed, cores, ops, max_elems: 1 << size_bits, handoff_pct, allreduces, outputs: 2 };
        let cfg = RunConfig { source: Source::Generated(g, None), jitter, ..RunConfig::generated(seed, cores, SizeClass::Small) };
        let r = run(&cfg);
        prop_assert!(r.passed(), "{}", r);
        prop_assert!(r.checks.iter().any(|c| c.name == "simulated outputs equal the interpreter's"), "{}", r);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// `gen --ops N` programs (N per core) are race-free and interpreter-correct
    /// at small N, and their replay command names `--ops`.
    #[test]
    fn per_core_sized_programs_pass_every_check(
        seed in any::<u64>(),
        cores in 1u32..=8,
        ops in 2u32..=300,
        elems_bits in 0u32..8,
    ) {
        let g = GenConfig::with_ops(seed, cores, ops, 1 << elems_bits).unwrap();
        let cfg = RunConfig { source: Source::Generated(g, None), ..RunConfig::generated(seed, cores, SizeClass::Small) };
        let r = run(&cfg);
        prop_assert!(r.passed(), "{}", r);
        prop_assert_eq!(r.instructions as u64, u64::from(ops) * u64::from(cores));
        let want = format!("lncsim run --seed {seed} --cores {cores} --ops {ops} --elems {}", 1u64 << elems_bits);
        prop_assert_eq!(r.replay.as_deref(), Some(want.as_str()));
    }
}

/// One generated program of 10,000 instructions (2 cores x 5,000) through
/// every check of the flow.
#[test]
fn a_ten_thousand_instruction_program_passes_every_check() {
    let g = GenConfig::with_ops(7, 2, 5_000, 64).unwrap();
    let cfg = RunConfig { source: Source::Generated(g, None), ..RunConfig::generated(7, 2, SizeClass::Small) };
    let r = run(&cfg);
    assert!(r.passed(), "{r}");
    assert_eq!(r.instructions, 10_000);
    assert!(r.checks.iter().any(|c| c.name == "simulated outputs equal the interpreter's"));
}

/// Each stage and check is reported as it finishes, in the report's order,
/// with its time; the untimed JSON has no times, the timed one has them all.
#[test]
fn a_run_reports_each_stage_and_check_as_it_finishes() {
    let cfg = RunConfig::generated(3, 4, SizeClass::Small);
    let mut seen: Vec<(bool, String)> = Vec::new();
    let r = run_observed(&cfg, &mut |p| match p {
        Progress::Stage(s) => seen.push((true, s.name.to_string())),
        Progress::Check(c) => seen.push((false, c.name.to_string())),
        Progress::Fault(_) => {}
    });
    assert!(r.passed(), "{r}");
    let stages: Vec<&str> = seen.iter().filter(|(s, _)| *s).map(|(_, n)| n.as_str()).collect();
    let checks: Vec<&str> = seen.iter().filter(|(s, _)| !*s).map(|(_, n)| n.as_str()).collect();
    assert_eq!(stages, r.stages.iter().map(|s| s.name).collect::<Vec<_>>());
    assert_eq!(checks, r.checks.iter().map(|c| c.name).collect::<Vec<_>>());
    // The IR checker runs between `split + allocate` and `link`, and is reported there.
    let at = |n: &str| seen.iter().position(|(_, x)| x.starts_with(n)).unwrap();
    assert!(at("split + allocate") < at("IR checker") && at("IR checker") < at("link"));
    let untimed = r.to_json();
    assert!(untimed["stages"].as_array().unwrap().iter().all(|s| s.get("millis").is_none()));
    let timed = r.to_json_timed();
    assert!(timed["stages"].as_array().unwrap().iter().all(|s| s["millis"].as_f64().is_some()));
    assert!(timed["checks"].as_array().unwrap().iter().all(|c| c["millis"].as_f64().is_some()));
    assert!(r.stages.iter().map(|s| s.micros).sum::<u64>() > 0, "stages are timed");
    assert!(r.stages[0].line(true).ends_with(" ms)") && !r.stages[0].line(false).contains(" ms)"));
    assert_eq!(r.verdict(), format!("PASS ({} checks)", r.checks.len()));
}

/// The result line counts the failed checks, and names a failed stage.
#[test]
fn the_verdict_counts_failures() {
    let mut cfg = RunConfig::generated(3, 4, SizeClass::Small);
    cfg.plant = Some(PlantedBug::UnsyncedShared);
    let r = run(&cfg);
    let failed = r.checks.iter().filter(|c| matches!(c.result, CheckResult::Fail(_))).count();
    assert!(failed >= 1);
    assert_eq!(r.verdict(), format!("FAIL ({failed} of {} checks failed)", r.checks.len()));
    let mut cfg = RunConfig::generated(0, 1, SizeClass::Small);
    cfg.plant = Some(PlantedBug::DuplicateBarrierId);
    let r = run(&cfg);
    // A bug with no place to plant checked nothing with it in: not applicable, not a failure.
    assert!(r.not_applicable());
    assert!(r.verdict().starts_with("NOT APPLICABLE ("), "{}", r.verdict());
}

#[test]
fn the_same_config_gives_the_same_report_and_trace_hash() {
    let mut cfg = RunConfig::generated(42, 4, SizeClass::Small);
    cfg.jitter = true;
    cfg.faults.stall = true;
    cfg.faults.dma_spikes = true;
    let (a, b) = (run(&cfg), run(&cfg));
    assert!(a.passed(), "{a}");
    assert_eq!(a.to_json(), b.to_json());
    assert!(a.trace_hash.is_some());
    cfg.seed = 43;
    assert_ne!(run(&cfg).trace_hash, a.trace_hash, "the seed reaches the schedule");
}

/// Each planted bug and the check that must report it.
#[test]
fn each_planted_bug_is_reported_by_the_check_that_should_catch_it() {
    let expect: [(PlantedBug, &str); 5] = [
        (PlantedBug::OverlapLiveTensors, "IR checker: live tensors disjoint, floors, ceilings, shared = views"),
        (PlantedBug::DuplicateBarrierId, "barriers: no slot collision, every group complete, no deadlock"),
        (PlantedBug::UnsyncedShared, "every core's access to a shared tensor hits one address"),
        (PlantedBug::DropSemSignal, "barriers: no slot collision, every group complete, no deadlock"),
        (PlantedBug::TncNoWake, "TNC cache: every loader finishes, slot back to UNINIT, ref count 0"),
    ];
    for (bug, check) in expect {
        let mut hits = 0;
        for seed in 0..8 {
            let mut cfg = RunConfig::generated(seed, 4, SizeClass::Small);
            cfg.plant = Some(bug);
            let r = run(&cfg);
            assert!(!r.passed(), "{bug} on seed {seed} went unnoticed:\n{r}");
            assert!(r.replay.as_deref().unwrap().contains(&format!("--plant {bug}")));
            if r.failed_checks().contains(&check) {
                hits += 1;
            }
        }
        assert_eq!(hits, 8, "{bug}: `{check}` reported it on {hits} of 8 seeds");
    }
    // The link checker also sees the duplicated id before anything runs.
    let mut cfg = RunConfig::generated(1, 4, SizeClass::Small);
    cfg.plant = Some(PlantedBug::DuplicateBarrierId);
    assert!(run(&cfg).failed_checks().contains(&"link checker: barrier ids unique and dense, shared tensors unified"));
    // A moved view of a shared tensor also corrupts what the program computes: the
    // output comparison reports it (seed 0: core 3 reads `t23` one page too low).
    let mut cfg = RunConfig::generated(0, 4, SizeClass::Small);
    cfg.plant = Some(PlantedBug::UnsyncedShared);
    let r = run(&cfg);
    let outputs = r.checks.iter().find(|c| c.name == "simulated outputs equal the interpreter's").unwrap();
    assert!(
        matches!(&outputs.result, lncsim_sim::flow::CheckResult::Fail(e) if e.starts_with("output `out1` differs")),
        "{r}"
    );
}

#[test]
fn a_plant_with_no_place_is_a_failed_stage_not_a_pass() {
    let mut cfg = RunConfig::generated(0, 1, SizeClass::Small);
    cfg.plant = Some(PlantedBug::DuplicateBarrierId);
    let r = run(&cfg);
    assert!(!r.passed());
    assert!(r.stages.iter().any(|s| s.name == "plant" && s.outcome.as_ref().is_err_and(|e| e.contains("two cores"))));
}

#[test]
fn a_swarm_over_200_seeds_passes() {
    let cfg =
        SwarmConfig { seeds: 0..200, shard: Shard::ALL, jobs: 2, cores_max: 8, check_determinism: false, plant: None };
    let report = swarm(&cfg, &AtomicBool::new(false), &|_| {});
    assert!(!report.stopped);
    assert_eq!(report.outcomes.len(), 200);
    let failed: Vec<String> = report.failed().map(|o| format!("seed {}: {:?}", o.seed, o.failures)).collect();
    assert!(failed.is_empty(), "{failed:#?}");
    // The mixes really vary: several core counts, jitter, faults and loaders all occur.
    let mixes: Vec<String> = report.outcomes.iter().map(|o| o.mix.to_string()).collect();
    for feature in ["jitter", "stall", "dma", "alloc", "loaders", "8 cores", "1 cores", "medium"] {
        assert!(mixes.iter().any(|m| m.contains(feature)), "no seed drew `{feature}`");
    }
    // Every requested simulator fault lands on the program and fires.
    let c = lncsim_sim::flow::campaign::Campaign::of(&report);
    for kind in ["stall", "dma-spikes"] {
        let f = c.faults[kind];
        assert!(f.requested > 5, "{kind}: {f:?}");
        assert_eq!(f.fired, f.requested, "{kind}: {f:?}");
    }
}

#[test]
fn a_swarm_reports_a_planted_bug_on_every_seed_with_its_replay_command() {
    let cfg = SwarmConfig {
        seeds: 0..12,
        shard: Shard::ALL,
        jobs: 2,
        cores_max: 4,
        check_determinism: true,
        plant: Some(PlantedBug::TncNoWake),
    };
    let report = swarm(&cfg, &AtomicBool::new(false), &|_| {});
    assert_eq!(report.failed().count(), 12);
    for o in report.failed() {
        assert!(o.replay.as_deref().unwrap().starts_with(&format!("lncsim run --seed {} ", o.seed)));
        assert!(!o.failures.iter().any(|f| f.starts_with("determinism")), "{o:?}");
    }
}

#[test]
fn shrinking_keeps_the_failure_and_makes_the_program_smaller() {
    let mut cfg = RunConfig::generated(5, 4, SizeClass::Small);
    cfg.plant = Some(PlantedBug::OverlapLiveTensors);
    let s = shrink(&cfg, 400).unwrap();
    assert!(!s.report.passed());
    assert!(s.report.failed_checks().contains(&"IR checker: live tensors disjoint, floors, ceilings, shared = views"));
    let original = lncsim_model::program::generate(&GenConfig::new(5, 4, SizeClass::Small));
    assert!(
        s.program.functions[0].insts.len() < original.functions[0].insts.len() / 2,
        "{}",
        lncsim_model::ir::print(&s.program)
    );
    assert!(s.program.attrs.lnc_size <= 4);
    // The shrunk failure is the original one: no signature (check + kind) it did not have.
    let before = lncsim_sim::flow::signature::signatures(&run(&cfg));
    for sig in lncsim_sim::flow::signature::signatures(&s.report) {
        assert!(before.contains(&sig), "{sig} is new; the original failed with {before:?}");
    }
    // A passing run has nothing to shrink.
    assert!(shrink(&RunConfig::generated(5, 4, SizeClass::Small), 10).is_none());
}
