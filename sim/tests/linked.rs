#![allow(clippy::unwrap_used)]
//! Generated programs through split, placement, the real linker (`bir_linker`:
//! name unification, barrier renumbering, return barriers), codegen of the
//! linked module, staging and simulation give the interpreter's outputs.

mod support;

use lncsim_model::codegen::record::Opcode;
use lncsim_model::ir::Engine;
use lncsim_model::program::{GenConfig, SizeClass, generate};
use lncsim_sim::{FaultPlan, SimConfig, Violation};
use proptest::prelude::*;
use support::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn linked_programs_compute_the_interpreters_outputs(
        cfg in gen_config(1..=8),
        run_seed in any::<u64>(),
        jitter in any::<bool>(),
    ) {
        let program = generate(&cfg);
        let s = stage_linked(&program, run_seed);
        let mut sim = SimConfig::seeded(run_seed);
        if jitter {
            sim = sim.with_jitter();
            sim.faults = FaultPlan::random(run_seed, cfg.cores, 20_000);
        }
        let (report, out) = s.run(sim);
        prop_assert!(report.passed(), "{}", report);
        prop_assert_eq!(out, s.golden);
    }
}

#[test]
fn a_sweep_of_linked_default_programs_passes() {
    for seed in 0..100u64 {
        let cores = 1 + (seed % 8) as u32;
        let s = stage_linked(&generate(&GenConfig::new(seed, cores, SizeClass::Small)), seed);
        let (report, out) = s.run(SimConfig::seeded(seed).with_jitter());
        assert!(report.passed(), "seed {seed}: {report}");
        assert_eq!(out, s.golden, "seed {seed}");
    }
}

#[test]
fn a_barrier_id_duplicated_after_link_is_a_slot_collision() {
    let s = stage_linked(&module(HANDOFF), 1);
    // Give core 1's first arrival the slot core 0's first arrival holds.
    let slot_of = |core: usize| {
        let mut slot = None;
        lncsim_sim::testkit::patch_record(
            &s.device,
            &s.images[core],
            Engine::Sp,
            |r| r.opcode == Opcode::Barrier,
            |r| slot = Some(r.ops[0].a),
        )
        .unwrap();
        slot.unwrap()
    };
    let (s0, s1) = (slot_of(0), slot_of(1));
    assert_ne!(s0, s1, "the linker renumbered");
    patch_record(&s.device, &s.images[1], Engine::Sp, |r| r.opcode == Opcode::Barrier, |r| r.ops[0].a = s0);
    let (report, _) = s.run(SimConfig::seeded(0));
    assert!(
        report.of_kind("slot-collision").any(|v| matches!(v, Violation::SlotCollision { slot, .. } if *slot == s0)),
        "{report}"
    );
}
