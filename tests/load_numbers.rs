//! Numbers from the file (issue 13 item 1): every size, offset, alignment
//! and id a NEFF carries is bounded and added with checked arithmetic before
//! it sizes or places anything. Each hostile value is an `NRT_INVALID` with
//! one line naming the subgraph (its def.json), the var and the field, and
//! leaves nothing behind. The NEFFs are built at test time, from the shared
//! real compiler NEFF (skipped with a message when it is absent, a failure
//! under `CI=true`) and from lncsim's own packer, and re-packed with a
//! correct hash (`load::fuzz::repack`), as a buggy compiler would emit them.
#![allow(clippy::unwrap_used)]

mod common;
#[path = "common/load_check.rs"]
mod load_check;

use std::sync::Mutex;

use lncsim_model::load::fuzz::repack;
use lncsim_model::load::graph::dlr_kelf_load;
use lncsim_model::load::registry::TdrvDb;
use lncsim_model::load::stage::{
    StageCtx, VirtualCore, kbl_model_add, vtpb_info_shared_free, vtpb_info_shared_init_vtpb,
};
use lncsim_model::load::testkit::pack_generated;
use lncsim_model::load::{Device, HModel, Runtime};
use lncsim_model::neff::manifest::Arch;
use lncsim_model::neff::neff_file::Manifests;
use lncsim_model::neff::{Neff, NrtStatus, ReadOptions, read_container};
use lncsim_model::program::{GenConfig, SizeClass};
use lncsim_sim::device::SimDevice;
use serde_json::{Value, json};

/// The wrapping offset: 2^64 - 0x23a8c0.
const WRAP: u64 = 0u64.wrapping_sub(0x23a8c0);

fn real() -> Option<Vec<u8>> {
    let dir = common::shared_dir("real-neff/matmul_small.neff")?;
    Some(std::fs::read(dir.join("real-neff/matmul_small.neff")).unwrap())
}

fn packed(cores: u32) -> Vec<u8> {
    pack_generated(&GenConfig::new(41, cores, SizeClass::Small)).unwrap()
}

/// `bytes` with `member`'s JSON edited by `f`, re-packed with a correct hash.
fn edit(bytes: &[u8], member: &str, f: impl FnOnce(&mut Value)) -> Vec<u8> {
    repack(bytes, |m, _| {
        let mut v: Value = serde_json::from_slice(m.get(member).unwrap()).unwrap();
        f(&mut v);
        assert!(m.set(member, serde_json::to_vec(&v).unwrap()));
    })
    .unwrap()
}

/// Loads `neff` on a fresh 2-core device: it must fail `NRT_INVALID` with
/// one line containing every needle, and leave nothing behind.
fn refused(neff: &[u8], needles: &[&str]) {
    let rt = Runtime::new(SimDevice::new(2, 2));
    let e = rt.nrt_load(neff, -1, -1).unwrap_err();
    assert_eq!(e.status, NrtStatus::Invalid, "{e}");
    let line = e.to_string();
    assert!(!line.contains('\n'), "{line}");
    for n in needles {
        assert!(line.contains(n), "expected {n:?} in {line}");
    }
    assert_eq!(rt.device().live_allocations(), 0, "{line}");
    assert!(rt.registered().is_empty() && rt.vnc_usage() == [0], "{line}");
}

/// The first var of `def` satisfying `pred`.
fn var_where(def: &Value, pred: impl Fn(&Value) -> bool) -> String {
    def["var"].as_object().unwrap().iter().find(|(_, v)| pred(v)).map(|(k, _)| k.clone()).unwrap()
}

#[test]
fn the_real_neffs_wrapping_virtual_offset_is_refused_naming_sg_var_and_field() {
    let Some(b) = real() else { return };
    // The case: a `virtual` var in sg00 at backing_variable_off 2^64 - 0x23a8c0, in the
    // implicit scratchpad (which used to wrap the carve-out to 0xf000) and in the weight var.
    let implicit = edit(&b, "sg00/def.json", |d| {
        d["var"]["v_wrap"] = json!({"type": "virtual", "var_id": 6, "size": 0x1000, "backing_variable_off": WRAP});
    });
    refused(&implicit, &["sg00/def.json", "\"v_wrap\"", "backing_variable_off", "absurd"]);
    let backed = edit(&b, "sg00/def.json", |d| {
        d["var"]["v_wrap"] = json!({"type": "virtual", "var_id": 6, "size": 0x10,
            "backing_variable": "identity_82_sg0000", "backing_variable_off": WRAP});
    });
    refused(&backed, &["sg00/def.json", "\"v_wrap\"", "backing_variable_off"]);
    // Just under the cap, the offset still cannot leave its backing var.
    let outside = edit(&b, "sg00/def.json", |d| {
        d["var"]["v_out"] = json!({"type": "virtual", "var_id": 6, "size": 0x10,
            "backing_variable": "identity_82_sg0000", "backing_variable_off": 32768});
    });
    refused(&outside, &["sg00/def.json", "\"v_out\"", "exceeds \"identity_82_sg0000\""]);
}

#[test]
fn the_real_neffs_absurd_var_id_is_refused_without_allocating_it() {
    let Some(b) = real() else { return };
    let neff = edit(&b, "sg01/def.json", |d| d["var"]["x"]["var_id"] = json!(4_000_000_000u64));
    refused(&neff, &["sg01/def.json", "var \"x\" field var_id", "4000000000 is absurd"]);
    // A duplicate id is refused too (the reader refuses it; the var table would as well).
    let dup = edit(&b, "sg00/def.json", |d| d["var"]["y"]["var_id"] = json!(1));
    refused(&dup, &["sg00/def.json", "var_id 1 used by both"]);
}

#[test]
fn the_real_neffs_other_numbers_are_bounded() {
    let Some(b) = real() else { return };
    let size = edit(&b, "sg00/def.json", |d| d["var"]["x"]["size"] = json!(u64::MAX));
    refused(&size, &["sg00/def.json", "var \"x\" field size", "absurd"]);
    let align = edit(&b, "sg00/def.json", |d| d["var"]["identity_82_sg0000"]["alignment"] = json!(3));
    refused(&align, &["var \"identity_82_sg0000\" field alignment", "power of two"]);
    let huge_align = edit(&b, "sg00/def.json", |d| d["var"]["identity_82_sg0000"]["alignment"] = json!(1u64 << 63));
    refused(&huge_align, &["field alignment"]);
    // A real-ISA stream that is not whole 64-byte records would spill into the next piece.
    let ragged = repack(&b, |m, _| {
        let mut pe = m.get("sg00/PE.bin").unwrap().to_vec();
        pe.push(0);
        assert!(m.set("sg00/PE.bin", pe));
    })
    .unwrap();
    refused(&ragged, &["sg00/PE.bin", "not a whole number of 64-byte records"]);
}

#[test]
fn a_carve_out_that_would_pass_2_pow_48_is_refused_as_overflow() {
    let b = packed(1);
    let neff = edit(&b, "sg00/def.json", |d| {
        for i in 0..3 {
            d["var"][format!("big{i}")] = json!({"type": "tmp-buf", "var_id": 900 + i, "size": 1u64 << 47});
        }
    });
    refused(&neff, &["sg00/def.json", "the carve-out overflows"]);
}

#[test]
fn packed_neffs_wrapping_offsets_and_absurd_ids_are_refused() {
    let b = packed(2);
    let def = Neff::parse(&b, &ReadOptions::default()).unwrap().members.get("sg00/def.json").unwrap().to_vec();
    let def: Value = serde_json::from_slice(&def).unwrap();
    let view = var_where(&def, |v| v["type"] == "virtual" && v["backing_variable"] == "__scratch");
    let wrap = edit(&b, "sg00/def.json", |d| d["var"][&view]["backing_variable_off"] = json!(WRAP));
    refused(&wrap, &["sg00/def.json", &format!("{view:?}"), "backing_variable_off"]);
    let implicit = edit(&b, "sg00/def.json", |d| {
        d["var"]["v_wrap"] = json!({"type": "virtual", "var_id": 700, "size": 64, "backing_variable_off": WRAP});
    });
    refused(&implicit, &["sg00/def.json", "\"v_wrap\"", "backing_variable_off"]);
    let input = var_where(&def, |v| v["type"] == "input");
    let id = edit(&b, "sg00/def.json", |d| d["var"][&input]["var_id"] = json!(4_000_000_000u64));
    refused(&id, &["sg00/def.json", &format!("var {input:?} field var_id"), "absurd"]);
    // Past the density bound (64 per var + 4096) but far below u32::MAX: refused too.
    let n = def["var"].as_object().unwrap().len() as u64;
    let sparse = edit(&b, "sg00/def.json", |d| d["var"][&input]["var_id"] = json!(64 * n + 4096));
    refused(&sparse, &["field var_id", "absurd"]);
}

#[test]
fn a_sparse_but_bounded_var_id_loads_and_passes_the_checker() {
    let b = packed(2);
    let neff = edit(&b, "sg01/def.json", |d| d["var"]["sb_far"] = json!({"type": "state-buffer", "var_id": 3000}));
    let rt = Runtime::new(SimDevice::new(2, 2));
    let m = rt.nrt_load(&neff, -1, -1).unwrap();
    let models = rt.models(m.h_nn).unwrap();
    assert_eq!(models[1].image.vars[3000].name, "sb_far");
    let parsed = Neff::parse(&neff, &ReadOptions::default()).unwrap();
    let bad = load_check::check_models(rt.device(), &parsed, &models);
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    rt.nrt_unload(&m).unwrap();
    assert_eq!(rt.device().live_allocations(), 0);
}

/// A KBIN whose layout points a piece past its carve-out (what a wrapped
/// offset used to produce) is refused at staging with the piece named, and
/// nothing is written anywhere: not into the carve-out, not into the IO buffers.
#[test]
fn a_staged_range_outside_its_carve_out_is_refused_before_any_copy() {
    let b = packed(1);
    let container = read_container(&b, &ReadOptions::default()).unwrap();
    let manifests = Manifests::parse(&container).unwrap();
    let kg = dlr_kelf_load(&container.members, &manifests, Arch::V3, 1).unwrap();
    let dev = SimDevice::new(1, 1);
    let db = Mutex::new(TdrvDb::default());
    let shared = vtpb_info_shared_init_vtpb(&dev, 0, &kg).unwrap();
    let vcore = VirtualCore { idx: 0, tpbs: vec![0], core_size: 1 };
    let ctx = StageCtx { vcore: &vcore, h_model: HModel(1), shared: &shared };
    let before = dev.counts().copy_in;
    for (what, f) in [
        (
            "stream",
            Box::new(|k: &mut lncsim_model::load::kbin::Kbin| {
                let e = k.engines.iter_mut().find(|e| e.device_records > 0).unwrap();
                e.stream_off = k.carveout_size - 64;
            }) as Box<dyn Fn(&mut lncsim_model::load::kbin::Kbin)>,
        ),
        (
            "DMA ring",
            Box::new(|k: &mut lncsim_model::load::kbin::Kbin| {
                let e = k.engines.iter_mut().find(|e| !e.dma.is_empty()).unwrap();
                e.ring_off = u64::MAX - 8;
            }),
        ),
        (
            "var",
            Box::new(|k: &mut lncsim_model::load::kbin::Kbin| {
                let v = k.vars.values_mut().find(|v| v.data.is_some()).unwrap();
                v.place = lncsim_model::load::kbin::Place::Carveout(k.carveout_size);
            }),
        ),
    ] {
        let mut kbin = kg.kbins[0].clone();
        f(&mut kbin);
        let out = kbl_model_add(&dev, &db, &kbin, 0, &ctx);
        let e = out.result.unwrap_err();
        assert_eq!(e.status, NrtStatus::Invalid, "{what}: {e}");
        assert!(e.message.contains("is outside its allocation") && e.message.contains(what), "{what}: {e}");
        assert_eq!(dev.counts().copy_in, before, "{what}: nothing copied");
        assert_eq!(dev.live_allocations(), shared.regions().len(), "{what}: the carve-out was freed");
    }
    vtpb_info_shared_free(&dev, &shared).unwrap();
    assert_eq!(dev.live_allocations(), 0);
}
