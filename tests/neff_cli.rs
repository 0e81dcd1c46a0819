//! `lncsim neff inspect` / `unpack` end to end, on the real NEFF and on our own.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::Command;

use lncsim_model::neff::NeffWriter;
use lncsim_model::neff::synth::{SynthSpec, members};

fn lncsim(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_lncsim")).args(args).output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn real_neff() -> Option<PathBuf> {
    lncsim_model::testdata::require(&PathBuf::from(env!("CARGO_MANIFEST_DIR")), "real-neff/matmul_small.neff")
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lncsim-neff-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn inspect_json_on_the_real_neff_meets_the_acceptance() {
    let Some(p) = real_neff() else { return };
    let (code, out, err) = lncsim(&["neff", "inspect", p.to_str().unwrap(), "--json", "--verify-hash"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["header"]["lnc_size"], 2);
    assert_eq!(v["header"]["data_size"], 61440);
    assert_eq!(v["member_count"], 72);
    assert_eq!(v["kelf"]["target"], "cayman");
    assert_eq!(v["kelf"]["graphs"].as_array().unwrap().len(), 2);
    assert_eq!(v["hash"], "valid");
    assert_eq!(v["subgraphs"][1]["engines"][0]["instructions"], 12);
    let (code, text, _) = lncsim(&["neff", "inspect", p.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert!(text.contains("feature_bits     0x209c00") && text.contains("queue qSPDynamicHW"));
}

#[test]
fn inspect_reports_a_bad_hash_and_fails_only_when_asked() {
    let d = scratch("hash");
    let mut f = NeffWriter::new("h", 1)
        .write(&members(SynthSpec { subgraphs: 1, weights: 1, weight_elems: 4, instrs: 1 }, 3))
        .unwrap();
    f[0xAC] ^= 1; // the stored hash
    let p = d.join("bad.neff");
    std::fs::write(&p, &f).unwrap();
    let (code, out, _) = lncsim(&["neff", "inspect", p.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0);
    assert!(out.contains("\"hash\": \"invalid\""));
    let (code, _, err) = lncsim(&["neff", "inspect", p.to_str().unwrap(), "--verify-hash"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.starts_with("lncsim: error:") && err.contains("hash mismatch"));
    let (code, _, err) = lncsim(&["neff", "inspect", d.join("missing.neff").to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    std::fs::write(&p, b"short").unwrap();
    let (code, _, err) = lncsim(&["neff", "inspect", p.to_str().unwrap()]);
    assert_eq!((code, err.contains("NRT_INVALID(2)")), (1, true), "{err}");
}

#[test]
fn unpack_writes_every_member_and_never_through_a_symlink() {
    let d = scratch("unpack");
    let t = members(SynthSpec { subgraphs: 2, weights: 1, weight_elems: 4, instrs: 1 }, 5);
    let p = d.join("x.neff");
    std::fs::write(&p, NeffWriter::new("x", 2).write(&t).unwrap()).unwrap();
    let out = d.join("out");
    let (code, _, err) = lncsim(&["neff", "unpack", p.to_str().unwrap(), out.to_str().unwrap(), "--verify-hash"]);
    assert_eq!(code, 0, "{err}");
    for m in t.iter() {
        assert_eq!(std::fs::read(out.join(&m.name)).unwrap(), m.data, "{}", m.name);
    }
    // A directory that routes `sg00/` elsewhere: refused, nothing written there.
    let evil = d.join("evil");
    let elsewhere = d.join("elsewhere");
    std::fs::create_dir_all(&evil).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, evil.join("sg00")).unwrap();
    let (code, _, err) = lncsim(&["neff", "unpack", p.to_str().unwrap(), evil.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("symlink"), "{err}");
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn pack_then_inspect_verifies_and_the_same_seed_gives_the_same_bytes() {
    let dir = std::env::temp_dir().join(format!("lncsim-pack-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let program = dir.join("p.bir");
    let generated = std::process::Command::new(env!("CARGO_BIN_EXE_lncsim"))
        .args(["gen", "--seed", "5", "--cores", "4"])
        .output()
        .unwrap();
    std::fs::write(&program, &generated.stdout).unwrap();
    let pack = |seed: &str, out: &str| {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_lncsim"))
            .args(["neff", "pack", program.to_str().unwrap(), "--seed", seed, "-o"])
            .arg(dir.join(out))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        std::fs::read(dir.join(out)).unwrap()
    };
    let a = pack("9", "a.neff");
    assert_eq!(a, pack("9", "b.neff"), "same seed, same bytes");
    assert_ne!(a, pack("10", "c.neff"), "the seed reaches the UUID");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_lncsim"))
        .args(["neff", "inspect", "--verify-hash", "--json"])
        .arg(dir.join("a.neff"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["header"]["lnc_size"], 4);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Our own packed NEFF with one def.json var's `var_id` set to `id`, re-packed with a correct hash.
fn with_var_id(member: &str, id: u64) -> Vec<u8> {
    use lncsim_model::program::{GenConfig, SizeClass};
    let b = lncsim_model::load::testkit::pack_generated(&GenConfig::new(41, 2, SizeClass::Small)).unwrap();
    lncsim_model::load::fuzz::repack(&b, |m, _| {
        let mut v: serde_json::Value = serde_json::from_slice(m.get(member).unwrap()).unwrap();
        let name = v["var"].as_object().unwrap().keys().next().unwrap().clone();
        v["var"][&name]["var_id"] = serde_json::json!(id);
        assert!(m.set(member, serde_json::to_vec(&v).unwrap()));
    })
    .unwrap()
}

#[test]
fn inspect_reports_the_loaders_refusal_of_an_absurd_var_id() {
    let d = scratch("absurd-id");
    let bad = d.join("bad.neff");
    std::fs::write(&bad, with_var_id("sg01/def.json", 4_000_000_000)).unwrap();
    let (code, out, err) = lncsim(&["neff", "inspect", bad.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("nrt_load would refuse it: ") && err.contains("sg01/def.json"), "{err}");
    assert!(err.contains("field var_id: 4000000000 is absurd") && err.contains("NRT_INVALID"), "{err}");
    assert!(out.contains("subgraph sg01"), "the summary is still printed: {out}");
    // `lncsim load` refuses it with the same message.
    let (code, _, load_err) = lncsim(&["load", bad.to_str().unwrap()]);
    assert_eq!(code, 1);
    let msg = err.split("nrt_load would refuse it: ").nth(1).unwrap().split(" [").next().unwrap();
    assert!(load_err.contains(msg), "load said {load_err}, inspect said {msg}");
    // A sparse but bounded id is inspected and loaded alike.
    let ok = d.join("ok.neff");
    std::fs::write(&ok, with_var_id("sg01/def.json", 3000)).unwrap();
    let (code, _, err) = lncsim(&["neff", "inspect", ok.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0, "{err}");
    let _ = std::fs::remove_dir_all(&d);
}
