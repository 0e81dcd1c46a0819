//! Seed 002 to the letter, through `nrt_load` on the simulated device: the
//! TNC reference is held to the S5 tail (after register), the registry
//! refuses an occupied H_NN and the refused load leaves nothing behind, and
//! H_NN and H_MODEL come from two independent allocators.
#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use lncsim_model::load::testkit::pack_generated;
use lncsim_model::load::tnc::CacheState;
use lncsim_model::load::{Device, HModel, HNn, NrtModel, Runtime, Stage};
use lncsim_model::marks::Recorder;
use lncsim_model::neff::{NeffHeader, NrtStatus};
use lncsim_model::program::{GenConfig, SizeClass};
use lncsim_sim::device::{Fault, FaultPlan, SimDevice};

fn neff(cores: u32, seed: u64) -> Vec<u8> {
    pack_generated(&GenConfig::new(seed, cores, SizeClass::Small)).unwrap()
}

/// The TNC role a load's trace reports (`CREATOR: ...`, `REUSE: ...`).
fn role(t: &lncsim_model::load::LoadTrace) -> String {
    let e = t.find("tnc_enter").next().unwrap();
    e.detail.split(':').next().unwrap().to_owned()
}

/// While the staging fan-out runs (S4, after S2), the CREATOR still holds
/// its TNC reference: the slot is READY with this NEFF's UUID and one
/// reference. It is released only after the model is registered, and the
/// trace says so after `dlr_model_set`.
#[test]
fn the_tnc_reference_is_held_through_staging_and_released_after_register() {
    let bytes = neff(2, 11);
    let uuid = NeffHeader::parse(&bytes).unwrap().uuid;
    let rt = Runtime::new(SimDevice::new(2, 2));
    let mut seen = Vec::new();
    let (r, trace) = rt.nrt_load_stepped(&bytes, -1, -1, &mut |_| {
        let s = rt.tnc().snapshot();
        seen.push((s.cache_state, s.uuid, s.ref_count()));
        0
    });
    let m = r.unwrap();
    assert!(!seen.is_empty(), "the fan-out was stepped");
    assert!(seen.iter().all(|&x| x == (CacheState::Ready, uuid, 1)), "{seen:?}");
    assert_eq!(rt.tnc().snapshot().cache_state, CacheState::Uninit, "released at the S5 tail");
    let names: Vec<&str> = trace.events.iter().map(|e| e.func).collect();
    let reg = names.iter().position(|&n| n == "dlr_model_set").unwrap();
    let rel = names.iter().position(|&n| n == "release_tmp_neff_cache").unwrap();
    assert!(reg < rel, "{names:?}");
    assert!(trace.events[rel].detail.contains("last reference, slot UNINIT"), "{:?}", trace.events[rel]);
    rt.nrt_unload(&m).unwrap();
}

/// Because the reference is held to the S5 tail, a loader of the same NEFF
/// that arrives while the first one is staging reuses its parse (it would be
/// a second CREATOR if the reference were dropped after S2).
#[test]
fn a_loader_arriving_during_staging_reuses_the_cached_parse() {
    let bytes = neff(2, 12);
    let rt = Runtime::new(SimDevice::new(4, 2));
    let mut nested: Option<(NrtModel, String, usize)> = None;
    let (r, first) = rt.nrt_load_stepped(&bytes, 0, -1, &mut |_| {
        if nested.is_none() {
            let (m, t) = rt.nrt_load_traced(&bytes, 1, -1);
            nested = Some((m.unwrap(), role(&t), t.find("neff_parse").count()));
        }
        0
    });
    let m = r.unwrap();
    let (m2, role2, parses2) = nested.unwrap();
    assert_eq!(role(&first), "CREATOR");
    assert_eq!((role2.as_str(), parses2), ("REUSE", 0), "the second loader parsed nothing");
    assert_eq!(first.find("neff_parse").count(), 1);
    let last = first.find("release_tmp_neff_cache").next().unwrap();
    assert!(last.detail.contains("last reference"), "the reuser released first: {last:?}");
    assert_eq!(rt.core_images(m.h_nn).unwrap().len(), rt.core_images(m2.h_nn).unwrap().len());
    rt.nrt_unload(&m2).unwrap();
    rt.nrt_unload(&m).unwrap();
    assert_eq!(rt.device().live_allocations(), 0);
    assert_eq!(rt.tnc().snapshot().cache_state, CacheState::Uninit);
}

/// Real threads: one CREATOR holds the slot (it is staging) until every
/// other loader of the same NEFF has finished; each of them must have
/// reused the cached parse: one parse for all, N - 1 REUSE roles.
#[test]
fn threaded_loaders_of_one_neff_share_one_parse() {
    const N: usize = 8;
    let bytes = neff(2, 13);
    let rt = Runtime::new(SimDevice::new(2 * N as u32, 2));
    let done = AtomicUsize::new(0);
    let (first, others) = std::thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::channel();
        let (rt, bytes, done) = (&rt, &bytes, &done);
        let first = s.spawn(move || {
            let mut signalled = false;
            rt.nrt_load_stepped(bytes, 0, -1, &mut |_| {
                if !signalled {
                    signalled = true;
                    tx.send(()).unwrap();
                    let t = Instant::now();
                    while done.load(Ordering::SeqCst) < N - 1 {
                        assert!(t.elapsed() < Duration::from_secs(120), "the other loaders did not finish");
                        std::thread::yield_now();
                    }
                }
                0
            })
        });
        rx.recv().unwrap();
        let others: Vec<_> = (1..N)
            .map(|v| {
                s.spawn(move || {
                    let r = rt.nrt_load_traced(bytes, v as i32, -1);
                    done.fetch_add(1, Ordering::SeqCst);
                    r
                })
            })
            .collect();
        let others: Vec<_> = others.into_iter().map(|h| h.join().unwrap()).collect();
        (first.join().unwrap(), others)
    });
    assert_eq!(role(&first.1), "CREATOR");
    let parses: usize =
        others.iter().map(|(_, t)| t.find("neff_parse").count()).sum::<usize>() + first.1.find("neff_parse").count();
    assert_eq!(parses, 1, "one parse for {N} loaders");
    for (r, t) in &others {
        assert_eq!(role(t), "REUSE", "{t:?}");
        assert_eq!(rt.core_images(r.as_ref().unwrap().h_nn).unwrap().len(), 2);
    }
    let mut all: Vec<NrtModel> = others.into_iter().map(|(r, _)| r.unwrap()).collect();
    all.push(first.0.unwrap());
    for m in &all {
        rt.nrt_unload(m).unwrap();
    }
    assert_eq!(rt.device().live_allocations(), 0);
    assert_eq!(rt.tnc().snapshot().cache_state, CacheState::Uninit);
}

/// A load whose staging fails after its TNC enter drops its reference on the
/// error edge: the slot is UNINIT afterwards.
#[test]
fn a_failed_load_releases_its_tnc_reference() {
    let bytes = neff(2, 14);
    let rt = Runtime::new(SimDevice::new(2, 2));
    rt.device().set_fault_plan(FaultPlan::one(Fault::Tpb(1)));
    let e = rt.nrt_load(&bytes, -1, -1).unwrap_err();
    assert_eq!(e.stage, Stage::S4Stage, "{e}");
    let s = rt.tnc().snapshot();
    assert_eq!((s.cache_state, s.packed_ref_count), (CacheState::Uninit, 0));
}

/// The registry refuses an occupied H_NN: the refused load is a typed
/// `NRT_FAILURE` at S5, its cores are unstaged, its buffers freed and its vnc
/// claim released, and the model already under that H_NN is untouched.
#[test]
fn an_occupied_h_nn_is_refused_and_the_refused_load_leaves_nothing() {
    let bytes = neff(2, 15);
    let rt = Runtime::new(SimDevice::new(4, 2));
    let rec = Recorder::start();
    let a = rt.nrt_load(&bytes, 0, -1).unwrap();
    assert_eq!(a.h_nn, HNn(1));
    let before = (rt.device().allocations(), rt.device_models(), rt.dlr_model(a.h_nn));
    rt.set_next_h_nn(1);
    let (r, trace) = rt.nrt_load_traced(&bytes, 1, -1);
    let e = r.unwrap_err();
    assert_eq!((e.status, e.stage), (NrtStatus::Failure, Stage::S5Register), "{e}");
    assert!(e.message.contains("H_NN 1 is already registered"), "{e}");
    assert!(trace.find("dlr_model_set").all(|ev| !ev.ok));
    assert_eq!(rec.hits("load.s5.h_nn_occupied"), 1);
    assert_eq!((rt.device().allocations(), rt.device_models(), rt.dlr_model(a.h_nn)), before);
    assert_eq!(rt.vnc_usage(), vec![1, 0]);
    assert_eq!(rt.registered(), vec![HNn(1)]);
    assert_eq!(rt.tnc().snapshot().cache_state, CacheState::Uninit);
    let b = rt.nrt_load(&bytes, 1, -1).unwrap();
    assert_eq!(b.h_nn, HNn(2));
    rt.nrt_unload(&a).unwrap();
    rt.nrt_unload(&b).unwrap();
    assert_eq!(rt.device().live_allocations(), 0);
}

/// H_NN and H_MODEL are two allocators: a load that fails in staging has
/// consumed an H_MODEL but no H_NN, so the next READY load's H_NN is the next
/// registry id while its H_MODEL skips one. A loader that keyed both with one
/// counter (or took the H_NN from the H_MODEL) would give the second model
/// H_NN 3 here.
#[test]
fn the_two_allocators_are_independent() {
    let bytes = neff(2, 16);
    let rt = Runtime::new(SimDevice::new(6, 2));
    rt.device().set_fault_plan(FaultPlan::one(Fault::Tpb(2)));
    let a = rt.nrt_load(&bytes, 0, -1).unwrap();
    assert!(rt.nrt_load(&bytes, 1, -1).is_err(), "vnc 1 holds the faulty tpb 2");
    let b = rt.nrt_load(&bytes, 2, -1).unwrap();
    let key = |m: &NrtModel| (m.h_nn, rt.dlr_model(m.h_nn).unwrap().kelf_model.h_model);
    assert_eq!(key(&a), (HNn(1), HModel(1)));
    assert_eq!(key(&b), (HNn(2), HModel(3)));
    // The asymmetric S0 edge: registered (an H_NN and an H_MODEL consumed), no nrt_model_t.
    rt.fail_next_nrt_model_alloc();
    assert!(rt.nrt_load(&bytes, 0, -1).unwrap_err().message.contains("stays registered"));
    assert_eq!(rt.registered(), vec![HNn(1), HNn(2), HNn(3)]);
    assert_eq!(rt.dlr_model(HNn(3)).unwrap().kelf_model.h_model, HModel(4));
    rt.kmgr_unload_nn(HNn(3)).unwrap();
    rt.nrt_unload(&a).unwrap();
    rt.nrt_unload(&b).unwrap();
    let c = rt.nrt_load(&bytes, 0, -1).unwrap();
    assert_eq!(key(&c), (HNn(4), HModel(5)), "neither allocator reuses a freed id");
}

/// Every READY model is registered in state 4, and only READY models unload.
#[test]
fn loaded_models_are_ready_in_state_4() {
    let bytes = neff(2, 17);
    let rt = Runtime::new(SimDevice::new(2, 2));
    let m = rt.nrt_load(&bytes, -1, -1).unwrap();
    let d = rt.dlr_model(m.h_nn).unwrap();
    assert_eq!((d.state.value(), d.state.name(), d.ref_count), (4, "READY", 0));
    assert_eq!(d.uuid, m.uuid);
    let held = rt.kmgr_model_acquire(m.h_nn).unwrap();
    assert!(rt.nrt_unload(&m).unwrap_err().message.contains("executions in flight"));
    drop(held);
    rt.nrt_unload(&m).unwrap();
}
