//! nrt_load (seed 002) end to end on the simulated device: the staged layout
//! (checked by an independent checker, which is itself shown to fail on
//! broken loads), records and handles, the S0/S2/S4 guards with the
//! runtime's status codes and messages, unload, and the asymmetric edge.
#![allow(clippy::unwrap_used)]

#[path = "common/load_check.rs"]
mod load_check;

use lncsim_model::codegen::record::{FLAG_RELOCATED, Opcode, Record};
use lncsim_model::load::relocate::kbin_patch_device_ip_to_neff_ip;
use lncsim_model::load::testkit::pack_generated;
use lncsim_model::load::{Device, HModel, HNn, NrtModel, Runtime, RuntimeConfig, Stage};
use lncsim_model::marks::Recorder;
use lncsim_model::neff::manifest::Arch;
use lncsim_model::neff::{MemberTable, Neff, NeffWriter, NrtStatus, ReadOptions};
use lncsim_model::program::{GenConfig, SizeClass};
use lncsim_sim::device::{Fault, FaultPlan, SimDevice};
use load_check::check_load;

fn neff_for(cores: u32, seed: u64) -> Vec<u8> {
    pack_generated(&GenConfig::new(seed, cores, SizeClass::Small)).unwrap()
}

fn parsed(bytes: &[u8]) -> Neff {
    Neff::parse(bytes, &ReadOptions::default()).unwrap()
}

/// The runtime's tables are as a fresh runtime's.
fn assert_clean(rt: &Runtime<SimDevice>) {
    assert_eq!(rt.device().live_allocations(), 0, "device allocations left");
    assert!(rt.registered().is_empty(), "registry not empty");
    assert!(rt.device_models().is_empty(), "device db not empty");
    assert!(rt.vnc_usage().iter().all(|&c| c == 0), "vnc claims left: {:?}", rt.vnc_usage());
}

#[test]
fn packed_neffs_load_ready_with_the_layout_the_checker_expects_and_unload_clean() {
    for cores in [1u32, 2, 3, 4, 8] {
        let bytes = neff_for(cores, 11);
        let rt = Runtime::new(SimDevice::new(8, cores));
        let rec = Recorder::start();
        let m = rt.nrt_load(&bytes, -1, -1).unwrap();
        let d = rt.dlr_model(m.h_nn).unwrap();
        assert_eq!(d.state.value(), 4, "READY is the seed's 4");
        assert_eq!(d.kelf_model.sg_count, cores);
        let images = rt.core_images(m.h_nn).unwrap();
        let bad = check_load(rt.device(), &parsed(&bytes), &images);
        assert!(bad.is_empty(), "{cores} cores:\n{}", bad.join("\n"));
        assert_eq!(rec.hits("load.s5.registered"), 1);
        assert_eq!(rec.hits("tnc.enter.first_worker"), 1, "a lone loader creates the TNC entry");
        assert_eq!(
            rec.hits("load.s5.relocated"),
            u64::from(cores),
            "relocation runs on every core (marks cross threads)"
        );
        if cores > 1 {
            assert_eq!(rec.hits("load.s4.multi_tpb_fanout"), 1);
            assert!(rec.hits("load.s2.remote_var_resolved") > 0, "a generated LNC program shares tensors");
        } else {
            assert_eq!(rec.hits("load.s4.single_tpb"), 1);
        }
        // Inputs/outputs: one buffer per name, in the registry value's IO maps.
        for (name, r) in d.input_info.iter().chain(&d.output_info) {
            for img in &images {
                if let Some(v) = img.vars.iter().find(|v| v.name == *name) {
                    assert_eq!(v.pa, r.pa, "{name} on core {}", img.core);
                }
            }
        }
        rt.nrt_unload(&m).unwrap();
        assert_clean(&rt);
    }
}

#[test]
fn the_checker_reports_a_wrong_operand_descriptor_weight_and_address() {
    let bytes = neff_for(4, 3);
    let neff = parsed(&bytes);
    let rt = Runtime::new(SimDevice::new(4, 4));
    let m = rt.nrt_load(&bytes, -1, -1).unwrap();
    let images = rt.core_images(m.h_nn).unwrap();
    assert!(check_load(rt.device(), &neff, &images).is_empty());
    // A relocated operand pointing 4 bytes off.
    let (img, s, ip) = images
        .iter()
        .flat_map(|i| i.engines.iter().map(move |s| (i, s)))
        .find_map(|(i, s)| {
            (0..s.records).find_map(|ip| {
                let r = Record::decode(&rt.device().copy_out(s.pa + ip * 64, 64).unwrap()).unwrap();
                (r.flags & FLAG_RELOCATED != 0 && r.opcode != Opcode::Add).then_some((i, s, ip))
            })
        })
        .or_else(|| {
            images.iter().flat_map(|i| i.engines.iter().map(move |s| (i, s, 0))).find(|(_, s, _)| s.records > 0)
        })
        .unwrap();
    let pa = s.pa + ip * 64 + 24;
    let orig = rt.device().copy_out(pa, 4).unwrap();
    let mut b = orig.clone();
    b[0] = b[0].wrapping_add(4);
    rt.device().write(pa, &b).unwrap();
    let bad = check_load(rt.device(), &neff, &images);
    let at = format!("sg{:02} {} ip {ip} slot 0: ", img.core, s.engine.key());
    assert!(
        bad.iter().any(|l| l.starts_with(&at) && l.contains("is not var")),
        "an operand moved by 4 bytes in core {} was not reported as `{at}... is not var`: {bad:?}",
        img.core
    );
    rt.device().write(pa, &orig).unwrap();
    assert!(check_load(rt.device(), &neff, &images).is_empty());
    // A var whose image address is wrong: every virtual var over it is reported.
    let mut broken = images.clone();
    let v = broken[0].vars.iter_mut().find(|v| v.size > 0).unwrap();
    v.pa += 64;
    let name = v.name.clone();
    let bad = check_load(rt.device(), &neff, &broken);
    assert!(
        bad.iter().any(|l| l.contains(&format!(" is not {name} + "))),
        "a moved `{name}` was not reported: {bad:?}"
    );
    // Debug info naming a var the operand does not touch.
    let mut broken = images.clone();
    let (img, s) = broken
        .iter_mut()
        .flat_map(|i| {
            let vars = i.vars.clone();
            i.engines.iter_mut().map(move |s| (vars.clone(), s))
        })
        .find(|(_, s)| s.operand_vars.iter().any(|v| v[0].is_some()))
        .unwrap();
    let ip = s.operand_vars.iter().position(|v| v[0].is_some()).unwrap();
    let r = Record::decode(&rt.device().copy_out(s.pa + ip as u64 * 64, 64).unwrap()).unwrap();
    let other = img.iter().position(|v| v.size > 0 && !(v.pa..v.pa + v.size).contains(&r.ops[0].pa())).unwrap();
    s.operand_vars[ip][0] = Some(other as u32);
    let bad = check_load(rt.device(), &neff, &broken);
    assert!(bad.iter().any(|l| l.contains("is not inside")), "{bad:?}");
    // A descriptor and a weight byte corrupted.
    let ring = images.iter().flat_map(|i| &i.engines).find(|s| s.descriptors > 0).unwrap();
    rt.device().write(ring.ring_pa, &[0xff]).unwrap();
    let bad = check_load(rt.device(), &neff, &images);
    assert!(bad.iter().any(|l| l.contains("dma[0]")), "{bad:?}");
    let w = images.iter().flat_map(|i| &i.vars).find(|v| v.var_type.as_str() == "file" && v.size > 0).unwrap();
    let byte = rt.device().copy_out(w.pa, 1).unwrap()[0];
    rt.device().write(w.pa, &[byte ^ 1]).unwrap();
    let bad = check_load(rt.device(), &neff, &images);
    assert!(bad.iter().any(|l| l.contains("device bytes differ")), "{bad:?}");
    rt.nrt_unload(&m).unwrap();
}

#[test]
fn h_nn_and_h_model_come_from_two_independent_allocators() {
    let a = neff_for(2, 1);
    let b = neff_for(2, 2);
    let rt = Runtime::new(SimDevice::new(4, 2));
    let m1 = rt.nrt_load(&a, -1, -1).unwrap();
    let h1 = rt.dlr_model(m1.h_nn).unwrap().kelf_model.h_model;
    assert_eq!((m1.h_nn, h1), (HNn(1), HModel(1)));
    // A load failing in S4 used an H_MODEL but no H_NN; one failing in S0 used neither.
    rt.device().set_fault_plan(FaultPlan::one(Fault::Tpb(2)));
    assert_eq!(rt.nrt_load(&b, 1, -1).unwrap_err().stage, Stage::S4Stage);
    rt.device().set_fault_plan(FaultPlan::none());
    let mut bad = b.clone();
    let n = bad.len();
    bad.truncate(n - 10_240 + 20);
    // A truncated file fails the header's data-size check in S0, before any handle is drawn.
    assert_eq!(rt.nrt_load(&bad, -1, -1).unwrap_err().stage, Stage::S0Guard);
    let m2 = rt.nrt_load(&b, -1, -1).unwrap();
    let h2 = rt.dlr_model(m2.h_nn).unwrap().kelf_model.h_model;
    assert_eq!((m2.h_nn, h2), (HNn(2), HModel(3)), "the spaces advance independently");
    // The only way from an H_NN to a per-core model is through the bridge.
    let keys = rt.device_models();
    assert!(keys.iter().all(|&(_, h)| h == h1 || h == h2));
    assert!(!keys.iter().any(|&(_, h)| h == HModel(2)), "the failed load's H_MODEL left nothing");
    let models = rt.models(m2.h_nn).unwrap();
    assert!(models.iter().all(|m| m.h_model == h2));
    assert_eq!(models.iter().map(|m| m.tpb).collect::<Vec<_>>(), vec![2, 3], "vnc 1 = tpbs 2, 3");
    rt.nrt_unload(&m1).unwrap();
    rt.nrt_unload(&m2).unwrap();
    assert_clean(&rt);
}

#[test]
fn s0_guards_return_the_runtime_status_and_release_the_claim() {
    let bytes = neff_for(2, 5);
    let rt = Runtime::new(SimDevice::new(4, 2));
    let rec = Recorder::start();
    for nc_count in [0, 1, 3, 8, -2] {
        let e = rt.nrt_load(&bytes, -1, nc_count).unwrap_err();
        assert_eq!((e.status, e.message.as_str()), (NrtStatus::Invalid, "vnc_count is deprecated. only use -1."));
    }
    assert_eq!(rec.hits("load.s0.vnc_count_deprecated"), 5);
    let m = rt.nrt_load(&bytes, -1, 2).unwrap();
    rt.nrt_unload(&m).unwrap();
    let e = rt.nrt_load(&bytes, 2, -1).unwrap_err();
    assert_eq!(e.status, NrtStatus::LoadNotEnoughNc);
    assert_eq!(e.status.code(), 9);
    assert_eq!(rt.nrt_load(&bytes, -7, -1).unwrap_err().status, NrtStatus::Invalid);
    let e = rt.nrt_load(&bytes[..1000], -1, -1).unwrap_err();
    assert_eq!((e.status, e.stage), (NrtStatus::Invalid, Stage::S0Guard));
    assert_eq!(rec.hits("load.s0.bad_header"), 1);
    assert_clean(&rt);
    // A failure after the claim releases it (nrt_vnc_usage_dec on the error path).
    rt.device().reset_counts();
    rt.device().set_fault_plan(FaultPlan::one(Fault::Alloc(0)));
    let e = rt.nrt_load(&bytes, 1, -1).unwrap_err();
    assert_eq!((e.status, e.status.code()), (NrtStatus::Resource, 4));
    assert!(rec.hits("load.s0.vnc_usage_dec") >= 1);
    assert_clean(&rt);
    rt.nrt_close();
    assert_eq!(rt.nrt_load(&bytes, -1, -1).unwrap_err().status, NrtStatus::Closed);
}

fn without(bytes: &[u8], member: &str) -> Vec<u8> {
    let n = parsed(bytes);
    let mut t = MemberTable::new();
    for m in n.members.iter().filter(|m| m.name != member) {
        t.insert(m.name.clone(), m.data.clone()).unwrap();
    }
    let mut w = NeffWriter::new(&n.header.name_str(), n.header.lnc_size);
    w.header.uuid = n.header.uuid;
    w.write(&t).unwrap()
}

#[test]
fn s2_refuses_a_neff_without_neff_json_and_a_foreign_arch() {
    let bytes = neff_for(2, 6);
    let rt = Runtime::new(SimDevice::new(2, 2));
    let rec = Recorder::start();
    let e = rt.nrt_load(&without(&bytes, "neff.json"), -1, -1).unwrap_err();
    assert_eq!(e.message, format!("Invalid NN: {}, neff.json is missing", parsed(&bytes).header.name_str()));
    assert_eq!((e.status, e.stage), (NrtStatus::Invalid, Stage::S2Graph));
    assert_eq!(rec.hits("load.s2.neff_json_missing"), 1);
    let v2 = Runtime::with_config(SimDevice::new(2, 2), RuntimeConfig { arch: Arch::V2, ..RuntimeConfig::default() });
    let e = v2.nrt_load(&bytes, -1, -1).unwrap_err();
    assert!(e.message.starts_with("NEFF_ARCH_INCOMPAT"), "{e}");
    assert_eq!(rec.hits("load.s2.arch_gate"), 1);
    assert_clean(&rt);
    assert_clean(&v2);
}

#[test]
fn the_pnc_count_and_the_nkbin_rule_are_enforced() {
    let four = neff_for(4, 7);
    let two = neff_for(2, 7);
    let rec = Recorder::start();
    // 4 subgraphs, a vnc of size 4 with only 2 physical cores present.
    let rt = Runtime::new(SimDevice::new(2, 4));
    let e = rt.nrt_load(&four, -1, -1).unwrap_err();
    assert_eq!(
        (e.status, e.message.as_str()),
        (NrtStatus::Invalid, "Insufficient number of pncs, required 4, available 2")
    );
    assert_eq!(rec.hits("load.s4.insufficient_pncs"), 1);
    assert_clean(&rt);
    // 2 subgraphs on vncs of 4: neither 1 nor vtpb_size.
    let rt = Runtime::new(SimDevice::new(8, 4));
    let e = rt.nrt_load(&two, -1, -1).unwrap_err();
    assert_eq!((e.status, e.stage), (NrtStatus::Invalid, Stage::S4Stage));
    assert!(e.message.contains("nkbin 2, vtpb_size 4"), "{e}");
    assert_clean(&rt);
    // 4 subgraphs on vncs of 2: two logical cores, refused in S2.
    let rt = Runtime::new(SimDevice::new(8, 2));
    let e = rt.nrt_load(&four, -1, -1).unwrap_err();
    assert_eq!((e.status, e.stage), (NrtStatus::Invalid, Stage::S2Graph));
    assert_eq!(rec.hits("load.s2.logical_cores"), 1);
    assert_clean(&rt);
}

#[test]
fn unload_guards_ref_count_and_handles() {
    let bytes = neff_for(2, 8);
    let rt = Runtime::new(SimDevice::new(2, 2));
    let m = rt.nrt_load(&bytes, -1, -1).unwrap();
    let exec = rt.kmgr_model_acquire(m.h_nn).unwrap();
    let e = rt.nrt_unload(&m).unwrap_err();
    assert_eq!(e.status, NrtStatus::Failure);
    assert_eq!(rt.vnc_usage(), vec![1], "a refused unload keeps the claim");
    drop(exec);
    rt.nrt_unload(&m).unwrap();
    assert_eq!(rt.nrt_unload(&m).unwrap_err().status, NrtStatus::InvalidHandle);
    let ghost = NrtModel { h_nn: HNn(99), ..m };
    assert_eq!(rt.nrt_unload(&ghost).unwrap_err().status, NrtStatus::InvalidHandle);
    assert_clean(&rt);
}

#[test]
fn the_asymmetric_edge_leaves_the_model_registered_and_releases_the_claim() {
    let bytes = neff_for(2, 9);
    let rt = Runtime::new(SimDevice::new(2, 2));
    let rec = Recorder::start();
    rt.fail_next_nrt_model_alloc();
    let e = rt.nrt_load(&bytes, -1, -1).unwrap_err();
    assert_eq!((e.status, e.stage), (NrtStatus::FailHostMemAlloc, Stage::S0Guard));
    assert_eq!(rec.hits("load.s0.nrt_model_alloc_failed_after_register"), 1);
    // The documented exception to "nothing left registered": S5 registered, S0 did not unload.
    let left = rt.registered();
    assert_eq!(left, vec![HNn(1)]);
    assert_eq!(rt.dlr_model(HNn(1)).unwrap().state.name(), "READY");
    assert!(rt.device().live_allocations() > 0);
    assert_eq!(rt.vnc_usage(), vec![0], "the claim is released");
    // kmgr_unload_nn (no vnc claim involved) cleans it up.
    rt.kmgr_unload_nn(HNn(1)).unwrap();
    assert_clean(&rt);
    // The fault point is one-shot.
    let m = rt.nrt_load(&bytes, -1, -1).unwrap();
    rt.nrt_unload(&m).unwrap();
}

#[test]
fn pseudo_adds_expand_with_kbin_patch_info_that_maps_back() {
    let rec = Recorder::start();
    let bytes = neff_for(4, 7);
    let neff = parsed(&bytes);
    let rt = Runtime::new(SimDevice::new(4, 4));
    let m = rt.nrt_load(&bytes, -1, -1).unwrap();
    let models = rt.models(m.h_nn).unwrap();
    let patches: Vec<_> = models.iter().flat_map(|m| m.kbin_patch_info.iter().map(move |p| (m, *p))).collect();
    assert!(!patches.is_empty(), "a 4-core all-reduce adds more than 3 partials");
    assert!(rec.hits("load.s5.kbin_patch_append") > 0);
    for (model, p) in patches {
        let sg = &neff.subgraphs[model.sg as usize];
        let es = sg.engines.iter().find(|e| e.engine == p.engine).unwrap();
        let file = neff.members.get(&es.instr_member).unwrap();
        let at = |ip: u64| Record::decode(&file[ip as usize * 64..]).unwrap();
        assert_eq!(at(p.neff_ip).opcode, Opcode::PseudoAddN);
        assert_eq!(p.slots, 1 + u64::from(at(p.neff_ip).imm));
        let mine: Vec<_> = model.kbin_patch_info.iter().filter(|q| q.engine == p.engine).copied().collect();
        for d in p.device_ip..p.device_ip + p.expanded {
            assert_eq!(kbin_patch_device_ip_to_neff_ip(&mine, d), p.neff_ip);
        }
        let after = kbin_patch_device_ip_to_neff_ip(&mine, p.device_ip + p.expanded);
        assert_eq!(after, p.neff_ip + p.slots, "the record after an expansion maps past the pseudo's slots");
    }
    rt.nrt_unload(&m).unwrap();
}
