//! Malformed NEFFs (DESIGN.md invariant 6): every bad manifest or stream the
//! loader itself checks gets `NRT_INVALID` with a one-line message naming
//! what is wrong, and leaves nothing behind; random corruption never panics.
#![allow(clippy::unwrap_used)]

mod common;
#[path = "common/load_check.rs"]
mod load_check;

use lncsim_model::codegen::record::{Opcode, Record};
use lncsim_model::load::testkit::pack_generated;
use lncsim_model::load::{Device, Runtime};
use lncsim_model::neff::{MemberTable, Neff, NeffWriter, NrtStatus, ReadOptions};
use lncsim_model::program::{GenConfig, SizeClass};
use lncsim_sim::device::SimDevice;
use proptest::prelude::*;
use serde_json::{Value, json};

fn base() -> Vec<u8> {
    pack_generated(&GenConfig::new(41, 2, SizeClass::Small)).unwrap()
}

/// Rewrites the NEFF with member `name` replaced by `f(bytes)`.
fn rewrite(bytes: &[u8], name: &str, f: impl FnOnce(Vec<u8>) -> Vec<u8>) -> Vec<u8> {
    let lnc = Neff::parse(bytes, &ReadOptions::default()).unwrap().header.lnc_size;
    rewrite_lnc(bytes, name, lnc, f)
}

/// [`rewrite`], writing the header for `lnc` cores.
fn rewrite_lnc(bytes: &[u8], name: &str, lnc: u32, f: impl FnOnce(Vec<u8>) -> Vec<u8>) -> Vec<u8> {
    let n = Neff::parse(bytes, &ReadOptions::default()).unwrap();
    let mut t = MemberTable::new();
    let mut f = Some(f);
    for m in n.members.iter() {
        let data = if m.name == name { (f.take().unwrap())(m.data.clone()) } else { m.data.clone() };
        t.insert(m.name.clone(), data).unwrap();
    }
    assert!(f.is_none(), "no member {name}");
    NeffWriter::new(&n.header.name_str(), lnc).write(&t).unwrap()
}

fn json_edit(bytes: &[u8], name: &str, f: impl FnOnce(&mut Value)) -> Vec<u8> {
    rewrite(bytes, name, |b| {
        let mut v: Value = serde_json::from_slice(&b).unwrap();
        f(&mut v);
        serde_json::to_vec(&v).unwrap()
    })
}

fn records_edit(bytes: &[u8], name: &str, f: impl FnOnce(&mut Vec<Record>)) -> Vec<u8> {
    rewrite(bytes, name, |b| {
        let mut r: Vec<Record> = b.chunks(64).map(|c| Record::decode(c).unwrap()).collect();
        f(&mut r);
        r.iter().flat_map(|x| x.encode()).collect()
    })
}

/// The name of the first var of `def` matching `pred`.
fn find_var(def: &Value, pred: impl Fn(&Value) -> bool) -> String {
    def["var"].as_object().unwrap().iter().find(|(_, v)| pred(v)).map(|(k, _)| k.clone()).unwrap()
}

fn is_type(t: &'static str) -> impl Fn(&Value) -> bool {
    move |v| v["type"] == t
}

fn backed_by(b: &'static str) -> impl Fn(&Value) -> bool {
    move |v| v["type"] == "virtual" && v["backing_variable"] == b
}

/// The engine stream of sg00 with a compute record, and that record's index.
fn compute_stream(bytes: &[u8]) -> (String, usize) {
    let n = Neff::parse(bytes, &ReadOptions::default()).unwrap();
    for e in &n.subgraphs[0].engines {
        let data = n.members.get(&e.instr_member).unwrap();
        if let Some(i) =
            data.chunks(64).position(|c| matches!(Record::decode(c).unwrap().opcode, Opcode::Add | Opcode::Mul))
        {
            return (e.instr_member.clone(), i);
        }
    }
    panic!("no compute record on sg00");
}

fn dma_stream(bytes: &[u8]) -> (String, usize) {
    let n = Neff::parse(bytes, &ReadOptions::default()).unwrap();
    for sg in &n.subgraphs {
        for e in &sg.engines {
            let data = n.members.get(&e.instr_member).unwrap();
            if let Some(i) = data.chunks(64).position(|c| Record::decode(c).unwrap().opcode == Opcode::Dma) {
                return (e.instr_member.clone(), i);
            }
        }
    }
    panic!("no DMA record");
}

#[test]
fn each_malformed_input_is_nrt_invalid_with_its_message_and_leaks_nothing() {
    let b = base();
    let (stream, ip) = compute_stream(&b);
    let (dstream, dip) = dma_stream(&b);
    let djson = dstream.replace(".bin", ".json");
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "exceeds \"__scratch\"",
            json_edit(&b, "sg00/def.json", |d| {
                let v = find_var(d, backed_by("__scratch"));
                d["var"][&v]["backing_variable_off"] = json!(1u64 << 40);
            }),
        ),
        (
            "is not a scratch region",
            json_edit(&b, "sg00/def.json", |d| {
                let v = find_var(d, backed_by("__scratch"));
                let input = find_var(d, is_type("input"));
                d["var"][&v]["backing_variable"] = json!(input);
                d["var"][&v]["backing_variable_off"] = json!(0);
                d["var"][&v]["size"] = json!(1);
            }),
        ),
        (
            "is itself virtual",
            json_edit(&b, "sg00/def.json", |d| {
                let v = find_var(d, backed_by("__scratch"));
                let w = find_var(d, |x| backed_by("__scratch")(x) && x != &d["var"][&v]);
                d["var"][&v]["backing_variable"] = json!(w);
                d["var"][&v]["backing_variable_off"] = json!(0);
                d["var"][&v]["size"] = json!(0);
            }),
        ),
        (
            "out of range or repeated",
            json_edit(&b, "sg00/def.json", |d| {
                for q in d["dma_queue"].as_object_mut().unwrap().values_mut() {
                    q["queue_index"] = json!(7);
                }
            }),
        ),
        ("barrier_groups is not an object", json_edit(&b, "sg01/def.json", |d| d["barrier_groups"] = json!([1, 2]))),
        (
            "runtime_semaphore_count is not a u32",
            json_edit(&b, "sg00/def.json", |d| d["runtime_semaphore_count"] = json!("many")),
        ),
        (
            "bytes of data for size",
            json_edit(&b, "sg00/def.json", |d| {
                let w = find_var(d, is_type("file"));
                d["var"][&w]["size"] = json!(4);
            }),
        ),
        (
            "at most one is supported",
            json_edit(&b, "sg00/def.json", |d| {
                d["var"]["__shared2"] = json!({"type": "tmp-buf", "var_id": 999, "size": 64, "vnc_shared": true});
            }),
        ),
        (
            "does not match",
            json_edit(&b, "sg00/def.json", |d| {
                let v = find_var(d, |x| backed_by("__shared")(x));
                let off = d["var"][&v]["backing_variable_off"].as_u64().unwrap();
                d["var"][&v]["backing_variable_off"] = json!(off + 4);
            }),
        ),
        (
            "but input of",
            json_edit(&b, "sg01/def.json", |d| {
                let v = find_var(d, is_type("input"));
                let s = d["var"][&v]["size"].as_u64().unwrap();
                d["var"][&v]["size"] = json!(s + 4);
            }),
        ),
        (
            "which no subgraph declares",
            json_edit(&b, "neff.json", |d| {
                d["nodes"].as_array_mut().unwrap().insert(0, json!({"op": "null", "name": "ghost", "inputs": []}));
            }),
        ),
        ("0 subgraphs", json_edit(&b, "kelf-0.json", |d| d["graphs"] = json!([]))),
        ("not in HBM", {
            let with_sb =
                json_edit(&b, "sg00/def.json", |d| d["var"]["SB"] = json!({"type": "state-buffer", "var_id": 500}));
            records_edit(&with_sb, &stream, |r| r[ip].ops[1].a = 500)
        }),
        ("var_id 99 is not a variable", records_edit(&b, &stream, |r| r[ip].ops[2].a = 99)),
        ("exceeds var", records_edit(&b, &stream, |r| r[ip].ops[0].c = 1 << 30)),
        ("without a preceding PseudoAddN", records_edit(&b, &stream, |r| r[ip].opcode = Opcode::Ext)),
        ("DMA names descriptor 50", records_edit(&b, &dstream, |r| r[dip].ops[0].b = 50)),
        // A DMA record that disagrees with its descriptor's size or queue.
        ("bytes, but descriptor", records_edit(&b, &dstream, |r| r[dip].ops[0].c += 4)),
        ("bytes, but descriptor", records_edit(&b, &dstream, |r| r[dip].ops[0].a += 1)),
        (
            "unknown opcode",
            rewrite(&b, &stream, |mut d| {
                d[ip * 64] = 0xee;
                d
            }),
        ),
        ("is not inside HBM var", json_edit(&b, &djson, |e| e["dma"][0]["from_off"] = json!(1u64 << 40))),
    ];
    let rt = Runtime::new(SimDevice::new(2, 2));
    for (want, neff) in cases {
        let e = rt.nrt_load(&neff, -1, -1).unwrap_err();
        assert_eq!(e.status, NrtStatus::Invalid, "{want}: {e}");
        assert!(e.message.contains(want), "expected {want:?} in {e}");
        assert!(!e.to_string().contains('\n'));
        assert_eq!(rt.device().live_allocations(), 0, "{want}");
        assert!(rt.registered().is_empty() && rt.vnc_usage() == [0], "{want}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn corrupted_members_never_panic_and_never_leak(member in 0usize..1000, flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8)) {
        let b = base();
        let n = Neff::parse(&b, &ReadOptions::default()).unwrap();
        let names: Vec<String> = n.members.iter().map(|m| m.name.clone()).collect();
        let name = &names[member % names.len()];
        let neff = rewrite(&b, name, |mut d| {
            for (at, x) in &flips {
                if !d.is_empty() {
                    let i = at % d.len();
                    d[i] ^= x | 1;
                }
            }
            d
        });
        let rt = Runtime::new(SimDevice::new(2, 2));
        if let Ok(m) = rt.nrt_load(&neff, -1, -1) {
            // A corrupted NEFF that legitimately loads must pass the load checker.
            let parsed = Neff::parse(&neff, &ReadOptions::default()).unwrap();
            let bad = load_check::check_models(rt.device(), &parsed, &rt.models(m.h_nn).unwrap());
            prop_assert!(bad.is_empty(), "READY but: {}", bad.join("; "));
            rt.nrt_unload(&m).unwrap();
        }
        prop_assert_eq!(rt.device().live_allocations(), 0);
        prop_assert!(rt.registered().is_empty());
        prop_assert_eq!(rt.vnc_usage(), vec![0]);
    }
}

/// The fan-out limit: a kelf of 256 graphs (each with its own copy of sg00's
/// definition and members, in `gNNN/`: two graphs may not share one
/// definition) stages with 256 threads; 257 are refused in S2.
#[test]
fn the_fan_out_takes_256_subgraphs_and_refuses_257() {
    let one = pack_generated(&GenConfig::new(43, 1, SizeClass::Small)).unwrap();
    let graphs = |n: usize| {
        let src = Neff::parse(&one, &ReadOptions::default()).unwrap();
        let mut t = MemberTable::new();
        for m in src.members.iter() {
            match m.name.strip_prefix("sg00/") {
                Some(rest) => (0..n).for_each(|i| t.insert(format!("g{i:03}/{rest}"), m.data.clone()).unwrap()),
                None if m.name == "kelf-0.json" => {
                    let mut k: Value = serde_json::from_slice(&m.data).unwrap();
                    k["graphs"] = (0..n)
                        .map(|i| json!({"definition": format!("g{i:03}/def.json"), "name": format!("g{i:03}")}))
                        .collect();
                    t.insert(m.name.clone(), serde_json::to_vec(&k).unwrap()).unwrap();
                }
                None => t.insert(m.name.clone(), m.data.clone()).unwrap(),
            }
        }
        NeffWriter::new(&src.header.name_str(), 256).write(&t).unwrap()
    };
    let rt = Runtime::new(SimDevice::new(256, 256));
    let m = rt.nrt_load(&graphs(256), -1, -1).unwrap();
    let models = rt.models(m.h_nn).unwrap();
    let parsed = Neff::parse(&graphs(256), &ReadOptions::default()).unwrap();
    assert_eq!(load_check::check_models(rt.device(), &parsed, &models), Vec::<String>::new());
    assert_eq!(models.len(), 256);
    assert_eq!(models.iter().map(|m| m.tpb).collect::<Vec<_>>(), (0..256).collect::<Vec<_>>());
    rt.nrt_unload(&m).unwrap();
    assert_eq!(rt.device().live_allocations(), 0);
    let e = rt.nrt_load(&graphs(257), -1, -1).unwrap_err();
    assert_eq!(e.status, NrtStatus::Invalid);
    assert!(e.message.contains("257 subgraphs; 1..=256"), "{e}");
}
