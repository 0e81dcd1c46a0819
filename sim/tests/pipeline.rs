#![allow(clippy::unwrap_used)]
//! The whole flow: generated programs compiled by the real pipeline (split,
//! DRAM allocator with address reuse, anti-dependency edges, shared
//! allocation and sync, bir_linker), packed into a NEFF, loaded by the real
//! loader (`nrt_load`) on the simulated device, executed: the interpreter's
//! outputs and no violation, for N = 1..8, with and without jitter and faults.

mod support;

use lncsim_model::program::{GenConfig, SizeClass, generate};
use lncsim_sim::{FaultPlan, SimConfig};
use proptest::prelude::*;
use support::*;

#[test]
fn a_sweep_of_loaded_default_programs_passes() {
    let mut failures = Vec::new();
    for seed in 0..200u64 {
        let cores = 1 + (seed % 8) as u32;
        let r = LoadedRun::new(&generate(&GenConfig::new(seed, cores, SizeClass::Small)), seed);
        let mut cfg = SimConfig::seeded(seed);
        if seed % 2 == 1 {
            cfg = cfg.with_jitter();
            cfg.faults = FaultPlan::random(seed, cores, 20_000);
        }
        let (report, out) = r.run(cfg);
        if !report.passed() || out != r.golden {
            failures.push(format!("seed {seed} (outputs equal: {}): {report}", out == r.golden));
        }
    }
    assert!(failures.is_empty(), "{} failures; first:\n{}", failures.len(), failures[0]);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn loaded_programs_compute_the_interpreters_outputs(
        cfg in gen_config(1..=8),
        run_seed in any::<u64>(),
        jitter in any::<bool>(),
    ) {
        let r = LoadedRun::new(&generate(&cfg), run_seed);
        let sim = if jitter { SimConfig::seeded(run_seed).with_jitter() } else { SimConfig::seeded(run_seed) };
        let (report, out) = r.run(sim);
        prop_assert!(report.passed(), "{}", report);
        prop_assert_eq!(out, r.golden);
    }
}

#[test]
fn the_stager_and_the_loader_stage_the_same_program() {
    use lncsim_model::codegen::codegen;
    use lncsim_model::pipeline::{PipelineOptions, compile};
    use lncsim_sim::io::{read_outputs, write_inputs};
    use lncsim_sim::testkit::{MemDevice, load_codes, stage};
    for seed in 0..40u64 {
        let cores = 1 + (seed % 8) as u32;
        let program = generate(&GenConfig::new(seed, cores, SizeClass::Small));
        let linked = compile(&program, &PipelineOptions::default()).unwrap().linked;
        let codes = codegen(&linked).unwrap();
        let inputs = lncsim_model::program::seeded_inputs(&program, seed);
        let cfg = SimConfig::seeded(seed).with_jitter();
        let loaded = load_codes(&linked.name, cores, &codes, seed).unwrap();
        let dev = loaded.runtime.device();
        write_inputs(dev, &loaded.images, &inputs).unwrap();
        let a = lncsim_sim::simulate(dev, &loaded.images, cfg.clone()).unwrap();
        let out_a = read_outputs(dev, &loaded.images).unwrap();
        let mem = MemDevice::new(cores);
        let images = stage(&mem, &codes).unwrap();
        write_inputs(&mem, &images, &inputs).unwrap();
        let b = lncsim_sim::simulate(&mem, &images, cfg).unwrap();
        let out_b = read_outputs(&mem, &images).unwrap();
        assert!(a.passed() && b.passed(), "seed {seed}:\n{a}\n{b}");
        assert_eq!(out_a, out_b, "seed {seed}");
        assert_eq!(a.instructions, b.instructions, "seed {seed}: the same expanded records");
        assert_eq!(a.trace_hash, b.trace_hash, "seed {seed}: the same schedule");
        assert_eq!((a.hbm_bytes, a.compute_bytes), (b.hbm_bytes, b.compute_bytes));
    }
}

#[test]
fn dropping_the_allocators_anti_dependencies_is_caught_as_races() {
    use lncsim_model::codegen::codegen;
    use lncsim_model::ir::EdgeKind;
    use lncsim_model::pipeline::{PipelineOptions, compile};
    use lncsim_sim::io::{read_outputs, write_inputs};
    use lncsim_sim::testkit::load_codes;
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
        let loaded = load_codes(&linked.name, cores, &codegen(&linked).unwrap(), seed).unwrap();
        let dev = loaded.runtime.device();
        let inputs = lncsim_model::program::seeded_inputs(&program, seed);
        write_inputs(dev, &loaded.images, &inputs).unwrap();
        let report = lncsim_sim::simulate(dev, &loaded.images, SimConfig::seeded(seed).with_jitter()).unwrap();
        let races: Vec<_> = report.of_kind("race").collect();
        if !races.is_empty() {
            caught += 1;
        }
        for r in races {
            let lncsim_sim::Violation::Race { first, second, .. } = r else { unreachable!() };
            assert!((first.core, first.engine) != (second.core, second.engine), "{r}");
            assert!(first.var.is_some() && second.var.is_some(), "{r}");
        }
        let out = read_outputs(dev, &loaded.images).unwrap();
        if out != lncsim_model::program::interpret(&program, &inputs).unwrap() {
            wrong_outputs += 1;
            assert!(!report.passed(), "seed {seed}: a wrong output with a clean report");
        }
    }
    assert!(dropped_edges > 0, "the allocator reused addresses across engines");
    assert!(caught > 0, "no run with dropped anti-dependencies reported a race");
    eprintln!(
        "dropped {dropped_edges} anti-dependency edges; races in {caught} runs; wrong outputs in {wrong_outputs}"
    );
}
