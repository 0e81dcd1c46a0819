//! Fault-injection properties of nrt_load (issue 6 item 6; DESIGN.md
//! invariant 6): for generated programs packed as NEFFs (N = 1..8 cores), a
//! fault-free load does `n` device operations (`mem_alloc` + `copy_in`); a
//! fault injected at operation `k` fails the load for every `k < n`, with the
//! status of the faulted operation, and leaves zero live allocations, the
//! registry and device db unchanged, the vnc claim released and the TNC slot
//! UNINIT; for `k >= n` the load succeeds. Every fault is tried with the
//! real-thread fan-out and with the stepped driver in a seeded order.
#![allow(clippy::unwrap_used)]

mod common;
#[path = "common/load_check.rs"]
mod load_check;

use lncsim_model::load::testkit::pack_generated;
use lncsim_model::load::tnc::CacheState;
use lncsim_model::load::{Device, LoadError, NrtModel, Runtime, StageStep};
use lncsim_model::marks::Recorder;
use lncsim_model::neff::NrtStatus;
use lncsim_sim::device::{Fault, FaultPlan, OpKind, SimDevice};
use proptest::prelude::*;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn expected(kind: OpKind) -> NrtStatus {
    match kind {
        OpKind::MemAlloc => NrtStatus::Resource,
        OpKind::CopyIn => NrtStatus::HwError,
    }
}

/// Loads with the real-thread fan-out, or stepped in an order drawn from `order_seed`.
fn load(rt: &Runtime<SimDevice>, bytes: &[u8], threads: bool, order_seed: u64) -> Result<NrtModel, LoadError> {
    if threads {
        return rt.nrt_load(bytes, -1, -1);
    }
    let mut rng = ChaCha8Rng::seed_from_u64(order_seed);
    rt.nrt_load_stepped(bytes, -1, -1, &mut |steps: &[StageStep]| rng.random_range(0..steps.len())).0
}

fn clean(rt: &Runtime<SimDevice>) -> Result<(), TestCaseError> {
    prop_assert_eq!(rt.device().live_allocations(), 0);
    prop_assert!(rt.registered().is_empty());
    prop_assert!(rt.device_models().is_empty());
    prop_assert!(rt.vnc_usage().iter().all(|&c| c == 0), "vnc claims {:?}", rt.vnc_usage());
    let s = rt.tnc().snapshot();
    prop_assert_eq!((s.cache_state, s.packed_ref_count), (CacheState::Uninit, 0));
    Ok(())
}

/// A READY load passes the load checker.
fn ready_passes_the_checker(rt: &Runtime<SimDevice>, bytes: &[u8], m: &NrtModel) -> Result<(), TestCaseError> {
    let neff = lncsim_model::neff::Neff::parse(bytes, &lncsim_model::neff::ReadOptions::default()).unwrap();
    let bad = load_check::check_models(rt.device(), &neff, &rt.models(m.h_nn).unwrap());
    prop_assert!(bad.is_empty(), "READY but: {}", bad.join("; "));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn a_fault_at_any_device_operation_fails_the_load_and_leaves_nothing(
        cfg in common::gen_config(1..=8),
        order_seed in any::<u64>(),
    ) {
        let bytes = pack_generated(&cfg).unwrap();
        let rt = Runtime::new(SimDevice::new(8, cfg.cores));
        let m = rt.nrt_load(&bytes, -1, -1).unwrap();
        let n = rt.device().counts().faultable();
        rt.nrt_unload(&m).unwrap();
        clean(&rt)?;
        prop_assert!(n > u64::from(cfg.cores), "one shared/IO allocation and a carve-out per core at least: {} ops", n);
        let rec = Recorder::start();
        // Every k is loaded both ways: with the real-thread fan-out and stepped.
        // Marks are per thread, so the coverage asserted below comes from the
        // stepped loads alone (they run on this thread); the threaded loads
        // are judged by their outcome and by what they leave behind.
        for k in 0..n + 2 {
            for threads in [true, false] {
                rt.device().reset_counts();
                rt.device().set_fault_plan(FaultPlan::one(Fault::Op(k)));
                match load(&rt, &bytes, threads, order_seed ^ k) {
                    Ok(m) => {
                        prop_assert!(k >= n, "fault at op {} of {} did not fail the load (threads {})", k, n, threads);
                        ready_passes_the_checker(&rt, &bytes, &m)?;
                        prop_assert!(rt.device().fired().is_empty());
                        prop_assert_eq!(rt.device().counts().faultable(), n, "the op count is deterministic");
                        rt.nrt_unload(&m).unwrap();
                    }
                    Err(e) => {
                        prop_assert!(k < n, "op {} of {} (threads {}): {}", k, n, threads, e);
                        let fired = rt.device().fired();
                        prop_assert_eq!(fired.len(), 1);
                        prop_assert_eq!(e.status, expected(fired[0].kind), "{}", e);
                    }
                }
                clean(&rt)?;
            }
        }
        prop_assert!(rec.hits("load.s4.shared_init_failed") > 0, "op 0 is a per-load IO/shared allocation");
        prop_assert!(rec.hits("load.s4.model_free") > 0, "a faulted copy-in frees its core's carve-out");
        prop_assert!(rec.hits("load.s4.kbl_model_add_failed") > 0);
        if cfg.cores > 1 {
            prop_assert!(rec.hits("load.s4.rollback") > 0, "a fault on a later core rolls back staged siblings");
        }
    }

    #[test]
    fn seeded_fault_plans_fail_exactly_the_loads_they_touch(
        cfg in common::gen_config(1..=8),
        plan_seed in any::<u64>(),
    ) {
        let bytes = pack_generated(&cfg).unwrap();
        let rt = Runtime::new(SimDevice::new(8, cfg.cores));
        let m = rt.nrt_load(&bytes, -1, -1).unwrap();
        let c = rt.device().counts();
        rt.nrt_unload(&m).unwrap();
        let plan = FaultPlan::seeded(plan_seed, c.faultable() + 2, 8);
        let hits = match plan.faults[0] {
            Fault::Op(k) => k < c.faultable(),
            Fault::Alloc(k) => k < c.mem_alloc,
            Fault::CopyIn(k) => k < c.copy_in,
            Fault::Tpb(t) => t < cfg.cores,
            Fault::AllocAt { .. } | Fault::CopyInAt { .. } => unreachable!("seeded plans draw global triggers"),
        };
        rt.device().reset_counts();
        rt.device().set_fault_plan(plan.clone());
        match rt.nrt_load(&bytes, -1, -1) {
            Ok(m) => {
                prop_assert!(!hits, "{:?} should have failed the load", plan);
                ready_passes_the_checker(&rt, &bytes, &m)?;
                rt.nrt_unload(&m).unwrap();
            }
            Err(e) => {
                prop_assert!(hits, "{:?} failed a load it does not touch: {}", plan, e);
                let fired = rt.device().fired();
                prop_assert!(!fired.is_empty());
                prop_assert_eq!(e.status, expected(fired[0].kind));
            }
        }
        clean(&rt)?;
    }
}

#[test]
fn a_staging_failure_on_one_core_rolls_back_its_siblings() {
    let cfg = lncsim_model::program::GenConfig::new(3, 4, lncsim_model::program::SizeClass::Small);
    let bytes = pack_generated(&cfg).unwrap();
    let rt = Runtime::new(SimDevice::new(4, 4));
    rt.device().set_fault_plan(FaultPlan::one(Fault::Tpb(3)));
    let rec = Recorder::start();
    // Always the first enabled step: cores 0, 1, 2 stage, core 3 fails, then the rollbacks.
    let mut seen = Vec::new();
    let mut order = |steps: &[StageStep]| {
        seen.push(steps[0]);
        0
    };
    let (r, trace) = rt.nrt_load_stepped(&bytes, -1, -1, &mut order);
    let want: Vec<StageStep> =
        (0..4).map(StageStep::Stage).chain([StageStep::Join]).chain((0..3).map(StageStep::Rollback)).collect();
    assert_eq!(seen, want);
    let e = r.unwrap_err();
    assert_eq!(e.stage, lncsim_model::load::Stage::S4Stage);
    assert_eq!(rec.hits("load.s4.rollback"), 1);
    assert_eq!(trace.find("kbl_model_remove").count(), 3, "every staged sibling is removed");
    assert_eq!(rt.device().live_allocations(), 0);
    assert!(rt.device_models().is_empty());
}

/// Keyed faults (`AllocAt` / `CopyInAt`, per physical core) hit the same
/// operation in every thread interleaving: 100 loads with the real-thread
/// fan-out per trigger give one trace, one error and one fired fault; every
/// rollback follows the failure that caused it.
#[test]
fn keyed_faults_with_threads_give_the_same_outcome_in_100_runs() {
    use lncsim_sim::device::keyed;
    let bytes =
        pack_generated(&lncsim_model::program::GenConfig::new(9, 4, lncsim_model::program::SizeClass::Small)).unwrap();
    let rt = Runtime::new(SimDevice::new(4, 4));
    rt.device().start_log();
    let m = rt.nrt_load(&bytes, -1, -1).unwrap();
    let log = rt.device().take_log();
    rt.nrt_unload(&m).unwrap();
    let allocs = log.iter().filter(|(k, _)| *k == OpKind::MemAlloc).count() as u64;
    let mut triggers: Vec<Fault> = (0..allocs).map(|k| keyed(OpKind::MemAlloc, k, &log).unwrap()).collect();
    triggers.extend([0, 7, 20].iter().filter_map(|&k| keyed(OpKind::CopyIn, k, &log)));
    assert_eq!(keyed(OpKind::MemAlloc, allocs, &log), None);
    for fault in triggers {
        let mut first = None;
        for i in 0..100 {
            // A fresh runtime per run: the handles (H_MODEL) count loads per runtime.
            let rt = Runtime::new(SimDevice::new(4, 4));
            rt.device().set_fault_plan(FaultPlan::one(fault));
            let (r, trace) = rt.nrt_load_traced(&bytes, -1, -1);
            let e = r.unwrap_err();
            let fired = rt.device().fired();
            assert_eq!(fired.len(), 1, "{fault:?}");
            let lines: Vec<String> =
                trace.events.iter().map(|e| format!("{} {} {} {}", e.stage, e.func, e.ok, e.detail)).collect();
            let failed = trace.events.iter().position(|e| !e.ok).unwrap();
            assert!(trace.events[..failed].iter().all(|e| e.func != "kbl_model_remove"), "{lines:#?}");
            let got = (e, lines, fired[0].tpb);
            match &first {
                None => first = Some(got),
                Some(f) => assert_eq!(&got, f, "run {i} of {fault:?}"),
            }
            assert_eq!(rt.device().live_allocations(), 0);
        }
    }
}
