//! Properties of the IR-level DRAM allocator on generated programs (N = 1..8):
//! the independent IR checker passes after allocate + shared + sync, codegen
//! accepts every per-core module, allocation is deterministic, reuse is real,
//! the interleaving oracle still gives the interpreter's outputs, and the
//! seed's branches (page-straddle bump, CC-region retry, early exit, HWM
//! floor) each run.

#![allow(clippy::unwrap_used)]

mod common;

use lncsim_model::codegen::codegen;
use lncsim_model::dram::{AllocError, DramError, check_modules};
use lncsim_model::ir::{Module, Usage};
use lncsim_model::marks::Recorder;
use lncsim_model::pipeline::{Compiled, PipelineError, PipelineOptions, compile};
use lncsim_model::program::interleave::run_interleaved;
use lncsim_model::program::{GenConfig, SizeClass, generate, interpret, seeded_inputs};
use proptest::prelude::*;

/// Moves every pre-placed tensor up by `delta` bytes (an unaligned floor when
/// `delta % 4096 != 0`, so page-sized tensors above it need the straddle bump).
fn shift_preplaced(p: &mut Module, delta: u64) {
    for l in &mut p.memlocs {
        if let Some(a) = &mut l.address {
            *a += delta;
        }
    }
}

/// One past the page-rounded end of the pre-placed footprint.
fn preplaced_end(p: &Module) -> u64 {
    p.memlocs.iter().filter_map(|l| l.address.map(|a| a + l.byte_size().div_ceil(4096) * 4096)).max().unwrap_or(0)
}

fn mib() -> impl Strategy<Value = i64> {
    prop_oneof![Just(-1i64), Just(1), Just(500)]
}

fn delta() -> impl Strategy<Value = u64> {
    prop_oneof![Just(0u64), 1u64..4096]
}

fn assert_clean(c: &Compiled, opts: &PipelineOptions) -> Result<(), TestCaseError> {
    let compiled = &c.per_core;
    let v = check_modules(compiled, &opts.check_config(&c.report));
    prop_assert!(v.is_empty(), "IR checker: {:#?}", v);
    for m in compiled {
        prop_assert!(m.verify().is_ok(), "{:?}", m.verify());
        prop_assert!(codegen(m).is_ok(), "codegen: {:?}", codegen(m).err());
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn ir_checker_passes_and_codegen_accepts_every_core(
        cfg in common::gen_config(1..=8),
        delta in delta(),
        allreduce in mib(),
    ) {
        let mut p = generate(&cfg);
        shift_preplaced(&mut p, delta);
        let opts = PipelineOptions { allreduce_buffer_size_mib: allreduce, ..PipelineOptions::default() };
        let c = compile(&p, &opts).unwrap();
        assert_clean(&c, &opts)?;
        let views = c.per_core.iter().flat_map(|m| &m.memlocs).filter(|l| l.remote_local_target.is_some()).count();
        prop_assert_eq!(c.report.synced.len(), views);
    }

    #[test]
    fn tight_regions_either_fit_cleanly_or_report_out_of_space(
        cfg in common::gen_config(1..=8),
        pages in 1u64..48,
        allreduce in prop_oneof![Just(-1i64), Just(1)],
        cap_mib in 1u64..4,
    ) {
        let p = generate(&cfg);
        let opts = PipelineOptions {
            allreduce_buffer_size_mib: allreduce,
            dram_region_bytes: preplaced_end(&p) + pages * 4096,
            shared_core_cap_mib: cap_mib,
            ..PipelineOptions::default()
        };
        match compile(&p, &opts) {
            Ok(c) => assert_clean(&c, &opts)?,
            Err(PipelineError::Dram { err: DramError::Alloc { err: AllocError::OutOfSpace { size, largest_gap, .. }, .. }, .. }) => {
                prop_assert!(largest_gap < size);
            }
            Err(e) => prop_assert!(false, "unexpected error: {}", e),
        }
    }

    #[test]
    fn allocation_is_deterministic(cfg in common::gen_config(1..=8), allreduce in mib()) {
        let p = generate(&cfg);
        let opts = PipelineOptions { allreduce_buffer_size_mib: allreduce, ..PipelineOptions::default() };
        let a = compile(&p, &opts).unwrap();
        let b = compile(&p.clone(), &opts).unwrap();
        prop_assert_eq!(a, b);
    }

    #[test]
    fn allocated_synced_modules_still_give_the_interpreters_outputs(
        cfg in common::gen_config(1..=8),
        input_seed in any::<u64>(),
        schedules in proptest::collection::vec(any::<u64>(), 2),
    ) {
        let p = generate(&cfg);
        let inputs = seeded_inputs(&p, input_seed);
        let golden = interpret(&p, &inputs).unwrap();
        let c = compile(&p, &PipelineOptions::default()).unwrap();
        for s in schedules {
            let got = run_interleaved(&c.per_core, &inputs, s).unwrap();
            prop_assert_eq!(&got, &golden, "schedule seed {}", s);
        }
    }
}

/// Two private tensors of one core with intersecting byte ranges (the checker
/// passed, so their live intervals do not meet).
fn reuses(m: &Module) -> bool {
    let placed: Vec<(u64, u64)> = m
        .memlocs
        .iter()
        .filter(|l| matches!(l.usage, Usage::Internal | Usage::Spill))
        .filter_map(|l| l.address.map(|a| (a, a + l.byte_size().div_ceil(4096) * 4096)))
        .collect();
    placed.iter().enumerate().any(|(i, a)| placed[i + 1..].iter().any(|b| a.0 < b.1 && b.0 < a.1))
}

#[test]
fn non_interfering_tensors_do_share_addresses() {
    let mut found = 0;
    for seed in 0..32 {
        let cfg = GenConfig::new(seed, 1 + (seed % 4) as u32, SizeClass::Small);
        let c = compile(&generate(&cfg), &PipelineOptions::default()).unwrap();
        assert!(check_modules(&c.per_core, &PipelineOptions::default().check_config(&c.report)).is_empty());
        found += c.per_core.iter().filter(|m| reuses(m)).count();
    }
    assert!(found > 0, "no generated case reused an address");
}

#[test]
fn the_seeds_branches_each_run_on_generated_programs() {
    let r = Recorder::start();
    for seed in 0..16 {
        // Default options, N = 1: the shared run has nothing (early exit); HWM floor from the I/O.
        let p = generate(&GenConfig::new(seed, 1, SizeClass::Small));
        compile(&p, &PipelineOptions::default()).unwrap();
        // An unaligned floor: page-sized tensors just above it are bumped.
        let mut shifted = generate(&GenConfig::new(seed, 2, SizeClass::Small));
        shift_preplaced(&mut shifted, 100);
        compile(&shifted, &PipelineOptions::default()).unwrap();
        // A CC region as large as the window: every non-collective retries in it.
        let p = generate(&GenConfig::new(seed, 4, SizeClass::Small));
        let opts = PipelineOptions {
            allreduce_buffer_size_mib: 1,
            dram_region_bytes: preplaced_end(&p) + (1 << 20),
            ..PipelineOptions::default()
        };
        let c = compile(&p, &opts).unwrap();
        assert!(check_modules(&c.per_core, &opts.check_config(&c.report)).is_empty());
    }
    for mark in ["dram.early_exit", "dram.hwm_floor", "dram.page_straddle_bump", "dram.cc_region_retry"] {
        assert!(r.hits(mark) > 0, "mark {mark} never hit: {:?}", r.delta());
    }
    assert!(r.hits("dram.shared_remote_skip") > 0 && r.hits("dram.anti_deps_post_dram") > 0, "{:?}", r.delta());
}
