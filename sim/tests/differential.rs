#![allow(clippy::unwrap_used)]
//! Differential: generated programs, split and placed, compiled, staged and
//! simulated on N = 1..8 cores, with and without jitter and faults, give the
//! reference interpreter's outputs on the unsplit program, with no violation.

mod support;

use lncsim_model::program::generate;
use lncsim_sim::{FaultPlan, SimConfig};
use proptest::prelude::*;
use support::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn generated_programs_compute_the_interpreters_outputs(
        cfg in gen_config(1..=8),
        run_seed in any::<u64>(),
        jitter in any::<bool>(),
        faults in any::<bool>(),
    ) {
        let program = generate(&cfg);
        let s = stage(&program, run_seed);
        let mut sim = SimConfig::seeded(run_seed);
        if jitter {
            sim = sim.with_jitter();
        }
        if faults {
            sim.faults = FaultPlan::random(run_seed, cfg.cores, 20_000);
        }
        let (report, out) = s.run(sim);
        prop_assert!(report.passed(), "{}", report);
        prop_assert_eq!(out, s.golden);
    }
}

#[test]
fn jitter_changes_the_schedule_but_not_the_outputs() {
    let program = generate(&lncsim_model::program::GenConfig::new(5, 4, lncsim_model::program::SizeClass::Small));
    let s = stage(&program, 5);
    let hashes: std::collections::BTreeSet<u64> = (0..16)
        .map(|seed| {
            let (report, out) = s.run(SimConfig::seeded(seed).with_jitter());
            assert!(report.passed(), "{report}");
            assert_eq!(out, s.golden);
            report.trace_hash
        })
        .collect();
    assert!(hashes.len() > 8, "jitter explores schedules: {} distinct", hashes.len());
}

#[test]
fn a_sweep_of_default_programs_on_one_to_eight_cores_passes() {
    use lncsim_model::program::{GenConfig, SizeClass};
    let mut instructions = 0;
    for seed in 0..200u64 {
        let cores = 1 + (seed % 8) as u32;
        let program = generate(&GenConfig::new(seed, cores, SizeClass::Small));
        let s = stage(&program, seed);
        let mut cfg = SimConfig::seeded(seed);
        if seed % 2 == 1 {
            cfg = cfg.with_jitter();
        }
        cfg.faults = FaultPlan::random(seed, cores, 20_000);
        let (report, out) = s.run(cfg);
        assert!(report.passed(), "seed {seed}: {report}");
        assert_eq!(out, s.golden, "seed {seed}");
        instructions += report.instructions;
    }
    assert!(instructions > 200 * 24, "{instructions}");
}
