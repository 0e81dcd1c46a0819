#![allow(clippy::unwrap_used)]
//! Faults move time only: correct programs keep their outputs, missing
//! synchronisation is exposed.

mod support;

use lncsim_model::codegen::record::Opcode;
use lncsim_model::ir::Engine;
use lncsim_model::marks::Recorder;
use lncsim_model::program::{GenConfig, SizeClass, generate};
use lncsim_sim::{DmaSpikes, FaultPlan, SimConfig, StallFault};
use support::*;

fn stall(core: u32, at_ns: u64, duration_ns: u64) -> FaultPlan {
    FaultPlan { stalls: vec![StallFault { core, at_ns, duration_ns }], ..FaultPlan::default() }
}

#[test]
fn stalls_and_dma_spikes_keep_correct_outputs() {
    let program = generate(&GenConfig::new(11, 4, SizeClass::Small));
    let s = stage(&program, 11);
    let (base, _) = s.run(SimConfig::seeded(0));
    for core in 0..4 {
        let mut cfg = SimConfig::seeded(u64::from(core));
        cfg.faults = stall(core, base.time_ns / 3, base.time_ns * 2);
        cfg.faults.dma_spikes = Some(DmaSpikes { permille: 500, extra_ns: 5_000 });
        let rec = Recorder::start();
        let (report, out) = s.run(cfg);
        assert!(rec.hits("sim.fault.stall") > 0, "core {core}");
        assert!(rec.hits("sim.fault.dma_spike") > 0);
        assert!(report.passed(), "{report}");
        assert_eq!(out, s.golden);
        assert!(report.time_ns > base.time_ns, "faults cost time");
        let stalled: u64 = report.cores[core as usize].engines.iter().map(|e| e.stalled_ns).sum();
        assert!(stalled > 0);
    }
}

#[test]
fn a_stalled_producer_exposes_a_consumer_that_skips_its_barrier() {
    let s = stage(&module(HANDOFF), 1);
    // Core 1 no longer waits at the barrier before copying `t` out.
    patch_record(&s.device, &s.images[1], Engine::Sp, |r| r.opcode == Opcode::Barrier, |r| r.opcode = Opcode::SemWait);
    // Without a fault the copy happens to come late enough: same outputs, but a race.
    let (report, out) = s.run(SimConfig::seeded(0));
    assert_eq!(out, s.golden);
    assert!(report.of_kind("race").next().is_some(), "{report}");
    // Stall the producer: the consumer copies `t` before it is computed.
    let cfg = SimConfig { faults: stall(0, 0, 50_000), ..SimConfig::seeded(0) };
    let (report, out) = s.run(cfg);
    assert_ne!(out, s.golden, "{report}");
    assert!(report.of_kind("race").next().is_some(), "{report}");
    // Core 0 waits at a barrier nobody else arrives at.
    assert!(report.of_kind("deadlock").next().is_some(), "{report}");
}
