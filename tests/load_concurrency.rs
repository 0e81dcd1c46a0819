//! Concurrent loads (issue 6 item 6): many real threads loading the same and
//! different NEFFs all end READY and unloading them all leaves the device
//! empty; and the same machinery driven deterministically, the way the
//! simulator will: a stepped TNC state machine and staging machines of two
//! loads interleaved in a chosen order.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use lncsim_model::load::testkit::pack_generated;
use lncsim_model::load::tnc::{CacheState, Enter, Resume, TncState};
use lncsim_model::load::{Device, NeffLoadInfo, NrtModel, Runtime, StageStep, StepRefused};
use lncsim_model::marks::Recorder;
use lncsim_model::program::{GenConfig, SizeClass};
use lncsim_sim::device::{Fault, FaultPlan, SimDevice};
use std::sync::Arc;

fn neff(cores: u32, seed: u64) -> Vec<u8> {
    pack_generated(&GenConfig::new(seed, cores, SizeClass::Small)).unwrap()
}

#[test]
fn many_threads_loading_same_and_different_neffs_all_end_ready_and_unload_clean() {
    let neffs = [neff(2, 1), neff(2, 2), neff(2, 3)];
    let rt = Runtime::new(SimDevice::new(8, 2));
    for round in 0..5 {
        let models: Vec<(NrtModel, Vec<String>)> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..24)
                .map(|i| {
                    let (rt, bytes) = (&rt, &neffs[if i % 2 == 0 { 0 } else { i % 3 }]);
                    s.spawn(move || {
                        let (r, t) = rt.nrt_load_traced(bytes, -1, -1);
                        let roles: Vec<String> = t.find("tnc_enter").map(|e| e.detail.clone()).collect();
                        // Sharing, per load: a REUSE loader parsed nothing and
                        // released a TNC reference; a CREATOR parsed once and
                        // released one; an INDEPENDENT loader parsed once and
                        // freed its own parse.
                        let role = roles[0].split(':').next().unwrap().to_owned();
                        let parses = t.find("neff_parse").count();
                        let released = t.find("release_tmp_neff_cache").count();
                        let freed = t.find("free_neff_load_info").count();
                        let expected = match role.as_str() {
                            "REUSE" => (0, 1, 0),
                            "CREATOR" => (1, 1, 0),
                            "INDEPENDENT" => (1, 0, 1),
                            other => panic!("role {other}"),
                        };
                        let funcs: Vec<&str> = t.events.iter().map(|e| e.func).collect();
                        assert_eq!((parses, released, freed), expected, "{role}: {funcs:?}");
                        (r.unwrap(), roles)
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mut roles: BTreeMap<String, u32> = BTreeMap::new();
        for (i, (m, r)) in models.iter().enumerate() {
            let d = rt.dlr_model(m.h_nn).unwrap();
            assert_eq!(d.state.name(), "READY");
            assert_eq!(rt.core_images(m.h_nn).unwrap().len(), 2);
            // Every READY load passes the load checker, with 23 others live on the device.
            let bytes = &neffs[if i % 2 == 0 { 0 } else { i % 3 }];
            let parsed = lncsim_model::neff::Neff::parse(bytes, &lncsim_model::neff::ReadOptions::default()).unwrap();
            let bad = lncsim_model::load::checker::check_models(rt.device(), &parsed, &rt.models(m.h_nn).unwrap());
            assert!(bad.is_empty(), "{}", bad.join("\n"));
            for x in r {
                *roles.entry(x.split(':').next().unwrap().to_owned()).or_default() += 1;
            }
        }
        println!("round {round}: TNC roles {roles:?}");
        // Every load took exactly one role; the first to enter an UNINIT slot creates.
        assert_eq!(roles.values().sum::<u32>(), 24, "{roles:?}");
        assert!(roles.get("CREATOR").copied().unwrap_or(0) >= 1, "the first loader always creates: {roles:?}");
        assert_eq!(rt.registered().len(), 24);
        assert_eq!(rt.vnc_usage().iter().sum::<u32>(), 24);
        let mut handles: Vec<u32> = models.iter().map(|(m, _)| m.h_nn.0).collect();
        handles.sort();
        handles.dedup();
        assert_eq!(handles.len(), 24, "every load has its own H_NN");
        std::thread::scope(|s| {
            for (m, _) in &models {
                let rt = &rt;
                s.spawn(move || rt.nrt_unload(m).unwrap());
            }
        });
        assert_eq!(rt.device().live_allocations(), 0);
        assert!(rt.registered().is_empty() && rt.device_models().is_empty());
        assert!(rt.vnc_usage().iter().all(|&c| c == 0));
        assert_eq!(rt.tnc().snapshot().cache_state, CacheState::Uninit);
    }
}

#[test]
fn concurrent_loads_under_a_faulty_core_fail_cleanly_while_the_others_load() {
    let bytes = neff(2, 4);
    let rt = Runtime::new(SimDevice::new(8, 2));
    rt.device().set_fault_plan(FaultPlan::one(Fault::Tpb(5)));
    let results: Vec<_> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..4)
            .map(|v| {
                (
                    v,
                    s.spawn({
                        let (rt, b) = (&rt, &bytes);
                        move || rt.nrt_load(b, v, -1)
                    }),
                )
            })
            .collect();
        hs.into_iter().map(|(v, h)| (v, h.join().unwrap())).collect()
    });
    for (v, r) in &results {
        assert_eq!(r.is_err(), *v == 2, "vnc {v} (tpbs {}, {}): {r:?}", 2 * v, 2 * v + 1);
    }
    for (_, r) in results {
        if let Ok(m) = r {
            rt.nrt_unload(&m).unwrap();
        }
    }
    assert_eq!(rt.device().live_allocations(), 0);
    assert!(rt.vnc_usage().iter().all(|&c| c == 0));
}

/// Two loads of one NEFF interleaved on one thread, as the simulator drives
/// them: the TNC is a stepped `TncState`, the staging machines are stepped in
/// an interleaved order; the second loader waits on the creator and reuses its parse.
#[test]
fn two_loads_can_be_driven_step_by_step_with_a_stepped_tnc() {
    let bytes = neff(4, 5);
    let rt = Runtime::new(SimDevice::new(8, 4));
    let mut tnc: TncState<Arc<NeffLoadInfo>> = TncState::new();
    let rec = Recorder::start();
    let mut a = rt.nrt_load_begin(&bytes, 0, -1).unwrap();
    let mut b = rt.nrt_load_begin(&bytes, 1, -1).unwrap();
    let Enter::Creator(token) = tnc.enter(a.uuid()) else { panic!("a is the creator") };
    a.note_tnc(lncsim_model::load::tnc::TncPath::FirstWorker);
    let Enter::Wait(ticket) = tnc.enter(b.uuid()) else { panic!("b waits") };
    let Resume::Blocked(ticket) = tnc.resume(ticket).unwrap() else { panic!("no post yet") };
    let info = a.neff_parse().unwrap();
    let a_ref = tnc.complete(token, Arc::clone(&info)).unwrap();
    let Resume::Reuse(shared, b_ref) = tnc.resume(ticket).unwrap() else { panic!("b reuses") };
    b.note_tnc(lncsim_model::load::tnc::TncPath::UsingCacheAfterWait);
    assert!(Arc::ptr_eq(&info, &shared), "one parse for both loaders");
    let kg_a = a.parse_graph(&info).unwrap();
    let kg_b = b.parse_graph(&shared).unwrap();
    let mut fa = a.dlr_kelf_stage(kg_a).unwrap();
    let mut fb = b.dlr_kelf_stage(kg_b).unwrap();
    assert_ne!(fa.h_model(), fb.h_model());
    // Interleave: a3 b0 a0 b3 a2 b2 a1 b1, then the joins.
    for (x, i) in [(0, 3), (1, 0), (0, 0), (1, 3), (0, 2), (1, 2), (0, 1), (1, 1)] {
        let f = if x == 0 { &mut fa } else { &mut fb };
        f.step(StageStep::Stage(i)).unwrap();
    }
    assert_eq!(fa.step(StageStep::Stage(0)), Err(StepRefused(StageStep::Stage(0))), "a staged core is not restaged");
    assert_eq!(fa.step(StageStep::Rollback(0)), Err(StepRefused(StageStep::Rollback(0))));
    assert_eq!(fa.enabled(), vec![StageStep::Join]);
    fa.step(StageStep::Join).unwrap();
    fb.step(StageStep::Join).unwrap();
    assert!(fa.enabled().is_empty() && fb.enabled().is_empty());
    let (ka, ta) = fa.finish();
    let (kb, tb) = fb.finish();
    a.absorb(ta);
    b.absorb(tb);
    let ha = a.register(ka.unwrap()).unwrap();
    // Seed 002, the S5 tail: each reference is dropped after its register.
    assert_eq!(tnc.cache_state(), CacheState::Ready);
    tnc.release(a_ref).unwrap();
    let hb = b.register(kb.unwrap()).unwrap();
    assert_eq!(tnc.cache_state(), CacheState::Ready, "b still holds its reference");
    tnc.release(b_ref).unwrap();
    drop((info, shared));
    assert_eq!(tnc.cache_state(), CacheState::Uninit);
    let ma = a.into_nrt_model(ha).0.unwrap();
    let mb = b.into_nrt_model(hb).0.unwrap();
    assert_eq!((ma.vnc_idx, mb.vnc_idx), (0, 1));
    assert_eq!(rec.hits("tnc.resume.using_cache_after_wait"), 1);
    assert_eq!(rec.hits("load.s5.registered"), 2);
    assert_eq!(rt.core_images(mb.h_nn).unwrap().iter().map(|i| i.tpb).collect::<Vec<_>>(), vec![4, 5, 6, 7]);
    rt.nrt_unload(&ma).unwrap();
    rt.nrt_unload(&mb).unwrap();
    assert_eq!(rt.device().live_allocations(), 0);
    assert!(rt.vnc_usage().iter().all(|&c| c == 0));
}

#[test]
fn an_abandoned_staging_or_pending_load_leaks_nothing() {
    let bytes = neff(4, 6);
    let rt = Runtime::new(SimDevice::new(4, 4));
    let rec = Recorder::start();
    {
        let mut p = rt.nrt_load_begin(&bytes, -1, -1).unwrap();
        let info = p.neff_parse().unwrap();
        let kg = p.parse_graph(&info).unwrap();
        let mut f = p.dlr_kelf_stage(kg).unwrap();
        f.step(StageStep::Stage(2)).unwrap();
        f.step(StageStep::Stage(0)).unwrap();
        assert_eq!(rt.device_models().len(), 2);
        assert_eq!(rt.vnc_usage(), vec![1]);
    }
    assert_eq!(rec.hits("load.s4.abandoned"), 1);
    assert_eq!(rt.device().live_allocations(), 0);
    assert!(rt.device_models().is_empty());
    assert_eq!(rt.vnc_usage(), vec![0], "dropping the pending load released the claim");
    assert!(rt.registered().is_empty());
}

/// Each core allocates from its own HBM slice, so the layout a load stages does
/// not depend on how its staging threads interleave: the real-thread fan-out
/// and stepped drivers in any order give the same images, byte for byte.
#[test]
fn the_staged_layout_is_the_same_for_every_driver_and_order() {
    let bytes = neff(8, 9);
    let stage = |how: u64| {
        let rt = Runtime::new(SimDevice::new(8, 8));
        let m = if how == 0 {
            rt.nrt_load(&bytes, -1, -1).unwrap()
        } else {
            let mut x = how;
            let mut pick = |steps: &[StageStep]| {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (x >> 33) as usize % steps.len()
            };
            rt.nrt_load_stepped(&bytes, -1, -1, &mut pick).0.unwrap()
        };
        let images = rt.core_images(m.h_nn).unwrap();
        let bytes: Vec<Vec<u8>> = images
            .iter()
            .flat_map(|i| &i.engines)
            .map(|s| rt.device().copy_out(s.pa, s.records * 64).unwrap())
            .collect();
        (images, bytes, rt.device().allocations())
    };
    let reference = stage(0);
    for how in [0, 0, 0, 1, 2, 3, 4] {
        assert_eq!(stage(how), reference, "driver/order {how}");
    }
}
