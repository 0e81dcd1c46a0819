#![allow(clippy::unwrap_used)]
//! Generated programs through the real compile pipeline (split, DRAM
//! allocator with address reuse, anti-dependency edges, shared allocation and
//! sync, bir_linker), codegen, staging and simulation: the interpreter's
//! outputs and no violation, for N = 1..8, with and without jitter.

mod support;

use lncsim_model::program::{GenConfig, SizeClass, generate};
use lncsim_sim::{FaultPlan, SimConfig};
use proptest::prelude::*;
use support::*;

#[test]
fn a_sweep_of_compiled_default_programs_passes() {
    let mut failures = Vec::new();
    for seed in 0..200u64 {
        let cores = 1 + (seed % 8) as u32;
        let s = stage_compiled(&generate(&GenConfig::new(seed, cores, SizeClass::Small)), seed);
        let mut cfg = SimConfig::seeded(seed);
        if seed % 2 == 1 {
            cfg = cfg.with_jitter();
            cfg.faults = FaultPlan::random(seed, cores, 20_000);
        }
        let (report, out) = s.run(cfg);
        if !report.passed() || out != s.golden {
            failures.push(format!("seed {seed} (outputs equal: {}): {report}", out == s.golden));
        }
    }
    assert!(failures.is_empty(), "{} failures; first:\n{}", failures.len(), failures[0]);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn compiled_programs_compute_the_interpreters_outputs(
        cfg in gen_config(1..=8),
        run_seed in any::<u64>(),
        jitter in any::<bool>(),
    ) {
        let program = generate(&cfg);
        let s = stage_compiled(&program, run_seed);
        let sim = if jitter { SimConfig::seeded(run_seed).with_jitter() } else { SimConfig::seeded(run_seed) };
        let (report, out) = s.run(sim);
        prop_assert!(report.passed(), "{}", report);
        prop_assert_eq!(out, s.golden);
    }
}

#[test]
fn dropping_the_allocators_anti_dependencies_is_caught_as_races() {
    use lncsim_model::codegen::codegen;
    use lncsim_model::ir::EdgeKind;
    use lncsim_model::pipeline::{PipelineOptions, compile};
    use lncsim_sim::io::{read_outputs, write_inputs};
    use lncsim_sim::testkit::{MemDevice, stage};
    let (mut dropped_edges, mut caught, mut wrong_outputs) = (0, 0, 0);
    for seed in 0..60u64 {
        let cores = 1 + (seed % 4) as u32;
        let program = generate(&GenConfig::new(seed, cores, SizeClass::Small));
        let mut linked = compile(&program, &PipelineOptions::default()).unwrap().linked;
        let mut n = 0;
        for f in &mut linked.functions {
            for i in &mut f.insts {
                let before = i.deps.len();
                i.deps.retain(|d| !matches!(d.kind, EdgeKind::War | EdgeKind::Waw));
                n += before - i.deps.len();
            }
        }
        if n == 0 {
            continue;
        }
        dropped_edges += n;
        let codes = codegen(&linked).unwrap();
        let device = MemDevice::new(codes.len() as u32);
        let images = stage(&device, &codes).unwrap();
        let inputs = lncsim_model::program::seeded_inputs(&program, seed);
        write_inputs(&device, &images, &inputs).unwrap();
        let report = lncsim_sim::simulate(&device, &images, SimConfig::seeded(seed).with_jitter()).unwrap();
        let races: Vec<_> = report.of_kind("race").collect();
        if !races.is_empty() {
            caught += 1;
        }
        for r in races {
            let lncsim_sim::Violation::Race { first, second, .. } = r else { unreachable!() };
            assert!((first.core, first.engine) != (second.core, second.engine), "{r}");
            assert!(first.var.is_some() && second.var.is_some(), "{r}");
        }
        let out = read_outputs(&device, &images).unwrap();
        if out != lncsim_model::program::interpret(&program, &inputs).unwrap() {
            wrong_outputs += 1;
            assert!(!report.passed(), "seed {seed}: a wrong output with a clean report");
        }
    }
    assert!(dropped_edges > 0, "the allocator reused addresses across engines");
    assert!(caught > 0, "{caught} of the runs with dropped anti-dependencies reported races");
    eprintln!(
        "dropped {dropped_edges} anti-dependency edges; races reported in {caught} runs; wrong outputs in {wrong_outputs}"
    );
}
