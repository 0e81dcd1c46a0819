//! The pipeline builder and the `--disable-dram-allocation` gate (seed 004,
//! "The disable_dram_allocation Gate"): the gate removes passes when the
//! pipeline is built; the allocator itself has no such check.

#![allow(clippy::unwrap_used)]

use lncsim_model::codegen::{CodegenError, codegen};
use lncsim_model::dram::{AllocError, DramError, IrViolation, check_modules};
use lncsim_model::ir::{Usage, parse};
use lncsim_model::marks::Recorder;
use lncsim_model::pipeline::{Pass, PipelineError, PipelineOptions, build_pipeline, compile};
use lncsim_model::program::{GenConfig, SizeClass, generate};

fn disabled() -> PipelineOptions {
    PipelineOptions { disable_dram_allocation: true, ..PipelineOptions::default() }
}

#[test]
fn the_builder_lists_the_passes_in_order() {
    let p = build_pipeline(&PipelineOptions::default());
    assert_eq!(
        p.passes(),
        &[
            Pass::Split,
            Pass::DramAlloc,
            Pass::AntiDepsPostDram,
            Pass::DramShared,
            Pass::SyncSharedAllocations,
            Pass::AntiDepsPostSharedDram,
            Pass::Link,
        ]
    );
    assert_eq!(
        p.names(),
        vec![
            "split",
            "coloring_allocator_dram",
            "anti_dependency_analyzer_post_dram",
            "coloring_allocator_dram_shared",
            "sync_shared_allocations",
            "anti_dependency_analyzer_post_shared_dram",
            "link",
        ]
    );
}

#[test]
fn the_gate_removes_the_allocator_and_its_paired_passes_at_build_time() {
    let p = build_pipeline(&disabled());
    assert_eq!(p.passes(), &[Pass::Split, Pass::SyncSharedAllocations, Pass::Link]);
    let program = generate(&GenConfig::new(7, 4, SizeClass::Small));
    let r = Recorder::start();
    let c = compile(&program, &disabled()).unwrap();
    assert_eq!(c.report.passes, vec!["split", "sync_shared_allocations", "link"]);
    assert_eq!(c.linked.name, format!("{}/sgLnk", program.name));
    // The allocator never ran: not even its early exit, no attribute, no anti-dependency report.
    assert_eq!(r.hits("dram.early_exit"), 0);
    assert_eq!(r.hits("dram.hwm_floor"), 0);
    assert!(c.report.dram.is_empty() && c.report.dram_shared.is_empty());
    assert!(c.report.anti_deps_post_dram.is_empty() && c.report.synced.is_empty());
    for m in &c.per_core {
        assert_eq!(m.functions[0].attrs.dram_alloc_ok, None);
        let unaddressed = m
            .memlocs
            .iter()
            .filter(|l| matches!(l.usage, Usage::Internal | Usage::Shared) && l.address.is_none())
            .count();
        assert!(unaddressed > 0);
        assert!(m.memlocs.iter().all(|l| !l.is_shared_post_dram_alloc));
    }
    // Downstream, codegen refuses the unaddressed tensors with its typed error.
    let refused = c.per_core.iter().filter(|m| matches!(codegen(m), Err(CodegenError::Unallocated(_)))).count();
    assert!(refused > 0);
    // The IR checker sees them too.
    let v = check_modules(&c.per_core, &disabled().check_config(&c.report));
    assert!(!v.is_empty() && v.iter().all(|x| matches!(x, IrViolation::Unaddressed { .. })), "{v:#?}");
    // Enabled: the same program goes through codegen on every core.
    let c = compile(&program, &PipelineOptions::default()).unwrap();
    assert_eq!(c.report.passes.len(), 7);
    // The linked module holds the allocated addresses, and codegen takes it too.
    assert!(lncsim_model::link::check_link(&c.per_core, &c.linked).is_empty());
    let cores = codegen(&c.linked).unwrap();
    assert_eq!(cores.len(), 4);
    for m in &c.per_core {
        assert_eq!(m.functions[0].attrs.dram_alloc_ok, Some(true));
        codegen(m).unwrap();
    }
    assert!(check_modules(&c.per_core, &PipelineOptions::default().check_config(&c.report)).is_empty());
}

#[test]
fn allocator_errors_name_the_pass_and_core() {
    let program = generate(&GenConfig::new(3, 2, SizeClass::Small));
    let tiny =
        PipelineOptions { dram_region_bytes: 0x10000, allreduce_buffer_size_mib: 0, ..PipelineOptions::default() };
    match compile(&program, &tiny).unwrap_err() {
        PipelineError::Dram { pass, err: DramError::Alloc { err: AllocError::OutOfSpace { .. }, .. }, .. } => {
            assert_eq!(pass, "coloring_allocator_dram");
        }
        other => panic!("{other}"),
    }
    let bad = PipelineOptions { allreduce_buffer_size_mib: -3, ..PipelineOptions::default() };
    let e = compile(&program, &bad).unwrap_err();
    assert!(e.to_string().contains("--allreduce-buffer-size -3"), "{e}");
    let not_a_program = parse("module m lnc 2 core 0\n").unwrap();
    assert!(matches!(compile(&not_a_program, &PipelineOptions::default()), Err(PipelineError::Split(_))));
}

#[test]
fn compile_is_deterministic_and_reports_hbm() {
    let program = generate(&GenConfig::new(11, 8, SizeClass::Medium));
    let a = compile(&program, &PipelineOptions::default()).unwrap();
    let b = compile(&program, &PipelineOptions::default()).unwrap();
    assert_eq!(a, b);
    assert_eq!(a.per_core.len(), 8);
    assert!(a.report.hbm.shared > 0);
    assert_eq!(a.report.hbm.total, a.report.hbm.private.iter().sum::<u64>() + a.report.hbm.shared);
}

/// A program past the limit is refused by number before any pass allocates
/// for it; one at the limit passes the size check.
#[test]
fn a_program_past_the_limit_is_refused_before_any_pass() {
    use lncsim_model::pipeline::{MAX_PROGRAM_INSTRUCTIONS, PipelineError, check_size};
    use lncsim_model::program::{GenConfig, generate};
    let n = MAX_PROGRAM_INSTRUCTIONS as u32;
    // Spread over two cores (each within gen's per-core limit).
    let mut at = generate(&GenConfig::with_ops(1, 2, n / 2, 1).unwrap());
    assert_eq!(at.functions[0].insts.len() as u64, MAX_PROGRAM_INSTRUCTIONS);
    assert_eq!(check_size(&at), Ok(()));
    let extra = at.functions[0].insts[0].clone();
    at.functions[0].insts.push(extra);
    let e = compile(&at, &PipelineOptions::default()).unwrap_err();
    assert_eq!(e, PipelineError::TooLarge { instructions: u64::from(n) + 1 });
    assert_eq!(
        e.to_string(),
        "the program has 2000001 instructions; the pipeline handles at most 2000000 (all cores together)"
    );
}
