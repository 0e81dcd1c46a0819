//! Truncated, corrupted and hostile NEFFs through `neff inspect`, `neff
//! unpack`, `load` and `run`; `unpack` into bad places.

use lncsim_model::neff::{MemberTable, Neff, NeffWriter, ReadOptions};
use serde_json::Value;

use super::{assert_rejected, file, good_program, rejected, run, scratch};

/// A NEFF packed from the generated two-core program (uncompressed when asked).
fn good_neff(dir: &std::path::Path, uncompressed: bool) -> Vec<u8> {
    let bir = file(dir, "good.bir", &good_program());
    let out = dir.join("good.neff");
    let mut args = vec!["neff", "pack", &bir, "-o", out.to_str().unwrap()];
    if uncompressed {
        args.push("--uncompressed");
    }
    assert_eq!(run(&args).code, Some(0));
    std::fs::read(out).unwrap()
}

/// The NEFF with every subgraph's `def.json` var `var` resized to `size` bytes.
fn resize_var(bytes: &[u8], var: &str, size: u64) -> Vec<u8> {
    let n = Neff::parse(bytes, &ReadOptions::default()).unwrap();
    let mut t = MemberTable::new();
    for m in n.members.iter() {
        let mut data = m.data.clone();
        if m.name.ends_with("/def.json") {
            let mut v: Value = serde_json::from_slice(&data).unwrap();
            if let Some(x) = v["var"].get_mut(var) {
                x["size"] = size.into();
            }
            data = serde_json::to_vec(&v).unwrap();
        }
        t.insert(m.name.clone(), data).unwrap();
    }
    NeffWriter::new(&n.header.name_str(), n.header.lnc_size).write(&t).unwrap()
}

#[test]
fn truncated_and_corrupted_neffs_are_one_line_everywhere() {
    let d = scratch("neff_corrupt");
    let good = good_neff(&d, false);
    let plain = good_neff(&d, true);
    let mut cases: Vec<(String, Vec<u8>)> = vec![
        ("t100".into(), good[..100].to_vec()),
        ("t1024".into(), good[..1024].to_vec()),
        ("t5000".into(), good[..5000].to_vec()),
        ("tplain".into(), plain[..plain.len() / 2].to_vec()),
    ];
    let mut magic = good.clone();
    magic[..8].copy_from_slice(b"XXXXXXXX");
    cases.push(("magic".into(), magic));
    // Seeded byte flips past the header, in the gzip stream and in the plain tar.
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for (src, tag) in [(&good, "gz"), (&plain, "tar")] {
        for i in 0..12 {
            let mut b = src.clone();
            for _ in 0..1 + i % 4 {
                let at = 1024 + (next() % (b.len() as u64 - 1024)) as usize;
                b[at] ^= (next() % 255 + 1) as u8;
            }
            cases.push((format!("{tag}{i}"), b));
        }
    }
    let unpack = d.join("out");
    for (name, bytes) in &cases {
        let p = file(&d, &format!("{name}.neff"), bytes);
        for args in [vec!["neff", "inspect", &p], vec!["load", &p], vec!["run", &p]] {
            let o = run(&args);
            if o.code != Some(0) {
                assert_rejected(&args.join(" "), &o, "");
            }
        }
        let o = run(&["neff", "unpack", &p, unpack.to_str().unwrap()]);
        if o.code == Some(0) {
            std::fs::remove_dir_all(&unpack).unwrap();
        } else {
            assert_rejected(&format!("unpack {name}"), &o, &format!("{name}.neff"));
            assert!(!unpack.exists(), "{name}: a failed unpack leaves no directory");
        }
    }
    rejected(&["neff", "inspect", &file(&d, "t100.neff", &good[..100])], "NEFF too small: 100 bytes");
    rejected(&["load", &file(&d, "t5000.neff", &good[..5000])], "t5000.neff: NRT_INVALID(2): invalid NEFF data_size");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn hostile_var_sizes_are_typed_failures_not_allocation_aborts() {
    let d = scratch("neff_sizes");
    let good = good_neff(&d, false);
    // 16 GiB inputs: more than tpb 0's slice of the HBM, so the device refuses the allocation before any byte is kept.
    let big_in = file(&d, "in.neff", &resize_var(&good, "x0", 16 << 30));
    rejected(&["load", &big_in], "in.neff: NRT_RESOURCE(4): MEM_ALLOC_V2MT64 failed on tpb 0: 17179869184 bytes");
    let o = rejected(&["run", &big_in], "1 failure(s)");
    assert!(o.stdout.contains("FAIL  load             NRT_RESOURCE(4)"), "{}", o.stdout);
    // 1 GiB of one output: loads, then refused before its values are read back.
    let out_var = {
        let n = Neff::parse(&good, &ReadOptions::default()).unwrap();
        let def: Value = serde_json::from_slice(n.members.get("sg00/def.json").unwrap()).unwrap();
        def["var"].as_object().unwrap().iter().find(|(_, v)| v["type"] == "output").unwrap().0.clone()
    };
    let big_out = file(&d, "out.neff", &resize_var(&good, &out_var, 1 << 30));
    let o = rejected(&["run", &big_out], "1 failure(s)");
    assert!(o.stdout.contains("FAIL  execute          the NEFF's outputs hold"), "{}", o.stdout);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn unpack_refuses_bad_places_before_writing_anything() {
    let d = scratch("unpack");
    let neff = file(&d, "x.neff", &good_neff(&d, false));
    // Into a file path: refused, the file untouched.
    let f = file(&d, "plain.txt", b"keep");
    rejected(&["neff", "unpack", &neff, &f], "plain.txt: exists and is not a directory");
    rejected(&["neff", "unpack", &neff, &format!("{f}/sub")], "plain.txt: exists and is not a directory");
    assert_eq!(std::fs::read(&f).unwrap(), b"keep");
    // A file where a subgraph directory must go: refused before any member is written.
    let blocked = d.join("blocked");
    std::fs::create_dir(&blocked).unwrap();
    std::fs::write(blocked.join("sg01"), b"x").unwrap();
    rejected(&["neff", "unpack", &neff, blocked.to_str().unwrap()], "sg01 exists and is not a directory");
    assert_eq!(std::fs::read_dir(&blocked).unwrap().count(), 1, "nothing else written");
    // A symlink on the way: refused, nothing written through it or beside it.
    let evil = d.join("evil");
    std::fs::create_dir(&evil).unwrap();
    std::os::unix::fs::symlink(&d, evil.join("sg00")).unwrap();
    rejected(&["neff", "unpack", &neff, evil.to_str().unwrap()], "refusing to write through symlink");
    assert_eq!(std::fs::read_dir(&evil).unwrap().count(), 1);
    // A new nested directory: created, every member written.
    let nested = d.join("a/b/c");
    let o = run(&["neff", "unpack", &neff, nested.to_str().unwrap()]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert!(nested.join("sg01/def.json").is_file());
    std::fs::remove_dir_all(&d).unwrap();
}
