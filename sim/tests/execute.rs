#![allow(clippy::unwrap_used)]
//! Executing codegen output on the simulator gives the reference interpreter's outputs.

mod support;

use lncsim_model::marks::Recorder;
use lncsim_sim::{Outcome, SimConfig};
use support::*;

#[test]
fn hand_written_one_core_module_matches_the_interpreter() {
    let s = stage(&module(ONE_CORE), 3);
    for seed in 0..8 {
        let mut cfg = SimConfig::seeded(seed);
        if seed % 2 == 1 {
            cfg = cfg.with_jitter();
        }
        let (report, out) = s.run(cfg);
        assert!(report.passed(), "{report}");
        assert_eq!(out, s.golden, "seed {seed}");
        assert!(report.instructions >= 8, "{report}");
    }
}

#[test]
fn hand_written_handoff_across_two_cores_matches_the_interpreter() {
    let s = stage(&module(HANDOFF), 1);
    let rec = Recorder::start();
    let (report, out) = s.run(SimConfig::seeded(1));
    assert!(report.passed(), "{report}");
    assert_eq!(report.outcome, Outcome::Finished);
    assert_eq!(out, s.golden);
    assert!(rec.hits("sim.barrier.complete") >= 1);
    assert_eq!(report.hbm_bytes, 64);
}
