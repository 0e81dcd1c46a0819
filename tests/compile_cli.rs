//! Integration tests of `lncsim compile` (the pipeline from the CLI).

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn lncsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lncsim")).args(args).output().unwrap()
}

fn demo() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/demo.bir").display().to_string()
}

fn tmp(name: &str, bytes: &[u8]) -> PathBuf {
    let p = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("compile_cli_{}_{name}", std::process::id()));
    std::fs::write(&p, bytes).unwrap();
    p
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn compile_prints_allocated_modules_and_metrics() {
    let o = lncsim(&["compile", &demo(), "--per-core"]);
    assert!(o.status.success(), "{}", err(&o));
    let s = out(&o);
    assert!(s.starts_with("# passes: split, coloring_allocator_dram, anti_dependency_analyzer_post_dram, "));
    assert_eq!(s.matches("# core ").count(), 2);
    // demo.bir's only compiler-placed tensor crosses cores: the private run exits early.
    assert!(s.contains("# coloring_allocator_dram main: early exit (No candidate, DRAM allocation successful)"), "{s}");
    assert!(s.contains("# coloring_allocator_dram_shared main: placed 1 (+0 remote views)"), "{s}");
    assert!(s.contains("dram_alloc_ok true"));
    assert!(s.contains("# coloring_allocator_dram_shared main: placed 0 (+1 remote views), base 0x100000"), "{s}");
    // Every module in the output parses, and every compiler-placed tensor has an address.
    let (cores, linked) = s.split_once("# linked\n").unwrap();
    for chunk in cores.split("# core ").skip(1) {
        let text: String = chunk.lines().skip(1).filter(|l| !l.starts_with('#')).collect::<Vec<_>>().join("\n");
        let m = lncsim_model::ir::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert!(m.memlocs.iter().all(|l| l.address.is_some()), "{text}");
    }
    // Then the linked module, also fully addressed.
    let m = lncsim_model::ir::parse(linked).unwrap_or_else(|e| panic!("{e}\n{linked}"));
    assert_eq!(m.name, "demo/sgLnk");
    assert!(m.memlocs.iter().all(|l| l.address.is_some()), "{linked}");
    // Without --per-core only the linked module is printed.
    let o = lncsim(&["compile", &demo()]);
    assert_eq!(out(&o).matches("\nmodule ").count(), 1);
}

#[test]
fn json_output_has_the_fixed_keys() {
    let o = lncsim(&["compile", &demo(), "--json", "--allreduce-buffer-size", "-1"]);
    assert!(o.status.success(), "{}", err(&o));
    let v: serde_json::Value = serde_json::from_str(&out(&o)).unwrap();
    assert_eq!(v["passes"].as_array().unwrap().len(), 7);
    assert!(v["linked"].as_str().unwrap().starts_with("module \"demo/sgLnk\" lnc 2"));
    assert_eq!(v["link"]["cores"], 2);
    assert_eq!(v["cores"].as_array().unwrap().len(), 2);
    assert_eq!(v["violations"], serde_json::json!([]));
    assert!(v["hbm"]["total"].as_u64().unwrap() > 0);
    let core0 = &v["cores"][0];
    assert_eq!(core0["core"], 0);
    assert_eq!(core0["dram"][0]["early_exit"], true);
    assert_eq!(core0["dram_shared"][0]["placed"], 1);
    assert_eq!(
        v["cores"][1]["dram_shared"][0]["messages"][0],
        "Skipping shared tensor allocations on core 1, marking as remoteLocalTarget instead"
    );
    assert!(core0["dram_shared"][0]["base"].as_u64().is_some());
    assert!(core0["module"].as_str().unwrap().starts_with("module demo lnc 2 core 0"));
    // Deterministic.
    let again = lncsim(&["compile", &demo(), "--json", "--allreduce-buffer-size", "-1"]);
    assert_eq!(o.stdout, again.stdout);
}

#[test]
fn disable_dram_allocation_removes_the_passes() {
    let o = lncsim(&["compile", &demo(), "--disable-dram-allocation"]);
    assert!(o.status.success(), "{}", err(&o));
    let s = out(&o);
    assert!(s.starts_with("# passes: split, sync_shared_allocations, link\n"), "{s}");
    assert!(s.contains("# IR check skipped"));
    assert!(!s.contains("dram_alloc_ok"));
    assert!(s.contains("module \"demo/sgLnk\""), "the linker takes unaddressed modules");
}

#[test]
fn bad_inputs_exit_1_and_bad_flags_exit_2() {
    let o = lncsim(&["compile", "/nonexistent/file.bir"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(err(&o).starts_with("lncsim: error: "));
    let o = lncsim(&["compile", &demo(), "--allreduce-buffer-size", "-2"]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    // A large program in a 1 MiB window: out of space, a typed one-line error.
    let g = lncsim(&["gen", "--seed", "1", "--cores", "2", "--size", "large"]);
    assert!(g.status.success());
    let f = tmp("large.bir", &g.stdout);
    let o = lncsim(&["compile", f.to_str().unwrap(), "--dram-region-mib", "1"]);
    assert_eq!(o.status.code(), Some(1));
    let e = err(&o);
    assert!(e.contains("out of DRAM space") && e.contains("coloring_allocator_dram"), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
}

#[test]
fn link_takes_the_allocator_flags() {
    let o = lncsim(&["link", &demo()]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(out(&o).contains("loc t dram shared i32[16] @0x0 shared_post_alloc\n"), "{}", out(&o));
    let o = lncsim(&["link", &demo(), "--disable-dram-allocation"]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(out(&o).contains("loc t dram shared i32[16]\n"), "{}", out(&o));
    let o = lncsim(&["link", &demo(), "--allreduce-buffer-size", "-1"]);
    assert!(o.status.success(), "{}", err(&o));
}
