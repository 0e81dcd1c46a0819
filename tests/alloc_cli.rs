//! Integration tests of `lncsim alloc` (MiniMalloc CSV problems).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn lncsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_lncsim")).args(args).output().expect("run lncsim")
}

fn tmp(name: &str, text: &str) -> PathBuf {
    let p = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("alloc_cli_{}_{name}", std::process::id()));
    std::fs::write(&p, text).expect("write temp file");
    p
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `../shared/alloc-bench` (or `$LNCSIM_SHARED/alloc-bench`), or None (a failure under CI=true).
fn bench_dir() -> Option<PathBuf> {
    lncsim_model::testdata::require(Path::new(env!("CARGO_MANIFEST_DIR")), "alloc-bench")
}

const SMALL: &str = "id,lower,upper,size\nb1,0,3,4\nb2,3,9,4\nb3,0,9,4\nb4,9,21,4\nb5,0,21,4\n";

#[test]
fn acceptance_a_with_align_1_prints_the_json_report() {
    let Some(dir) = bench_dir() else { return };
    let file = dir.join("A.1048576.csv");
    let o = lncsim(&["alloc", file.to_str().expect("utf-8 path"), "--align", "1", "--json"]);
    assert!(o.status.success(), "stderr: {}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).expect("valid JSON");
    assert_eq!(v["valid"], true);
    assert_eq!(v["lower_bound"], 1048576);
    assert_eq!(v["buffers"], 154);
    assert!(v["peak"].as_u64().expect("peak") >= 1048576);
    assert!(v["millis"].as_f64().is_some());
    assert_eq!(v["capacity"], 1048576);
    assert_eq!(v["fits"], v["peak"].as_u64() <= Some(1048576));
}

#[test]
fn every_bench_file_allocates_valid_in_both_orders() {
    let Some(dir) = bench_dir() else { return };
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("read dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "csv"))
        .collect();
    files.sort();
    assert!(files.len() >= 7);
    for f in &files {
        for order in ["seed", "size"] {
            let o = lncsim(&["alloc", f.to_str().expect("path"), "--align", "1", "--order", order, "--json"]);
            assert!(o.status.success(), "{}: {}", f.display(), stderr(&o));
            let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).expect("JSON");
            assert_eq!(v["valid"], true, "{}", f.display());
            assert!(v["peak"].as_u64() >= v["lower_bound"].as_u64());
        }
    }
}

#[test]
fn text_report_out_file_and_svg() {
    let input = tmp("small.12.csv", SMALL);
    let out = input.with_extension("placed.csv");
    let svg = input.with_extension("svg");
    let o = lncsim(&[
        "alloc",
        input.to_str().expect("path"),
        "--align",
        "1",
        "--order",
        "size",
        "--out",
        out.to_str().expect("path"),
        "--svg",
        svg.to_str().expect("path"),
    ]);
    assert!(o.status.success(), "stderr: {}", stderr(&o));
    let text = stdout(&o);
    assert!(text.contains("lower bound: 12"), "{text}");
    assert!(text.contains("peak:        12"), "{text}");
    assert!(text.contains("valid:       true"), "{text}");
    let placed = std::fs::read_to_string(&out).expect("placed csv");
    assert!(placed.starts_with("id,lower,upper,size,offset\nb1,0,3,4,"), "{placed}");
    assert_eq!(placed.lines().count(), 6);
    let picture = std::fs::read_to_string(&svg).expect("svg");
    assert!(picture.starts_with("<svg") && picture.matches("<rect ").count() >= 5 + 2);
    // The placed file pins every buffer; allocating it again re-checks the placement.
    let o = lncsim(&["alloc", out.to_str().expect("path"), "--align", "1", "--json"]);
    assert!(o.status.success(), "stderr: {}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).expect("JSON");
    assert_eq!((v["valid"].clone(), v["peak"].clone()), (serde_json::json!(true), serde_json::json!(12)));
}

#[test]
fn an_overlapping_placed_file_fails_the_check_with_exit_1() {
    let input = tmp("overlap.csv", "id,lower,upper,size,offset\na,0,5,4,0\nb,3,9,4,2\n");
    let o = lncsim(&["alloc", input.to_str().expect("path"), "--align", "1"]);
    assert_eq!(o.status.code(), Some(1), "stdout: {}", stdout(&o));
    assert!(stdout(&o).contains("violation: `a` [0, 4) and `b` [2, 6) overlap while both live at time 3"));
    assert!(stderr(&o).starts_with("lncsim: error:") && stderr(&o).contains("1 violations"));
}

#[test]
fn bad_csv_is_one_line_with_file_and_line_and_exit_3() {
    let cases = [
        ("neg.csv", "id,lower,upper,size\na,0,1,1\nb,0,2,-5\n", ":3: column `size`: negative value -5"),
        ("nocol.csv", "id,lower,upper\na,0,1\n", ":1: missing column `size`"),
        ("empty.csv", "id,lower,upper,size\na,4,4,1\n", ":2: empty lifespan: upper 4 <= lower 4"),
        ("nan.csv", "id,lower,upper,size\na,0,x,1\n", ":2: column `upper`: `x` is not a number"),
    ];
    for (name, text, want) in cases {
        let f = tmp(name, text);
        let o = lncsim(&["alloc", f.to_str().expect("path")]);
        assert_eq!(o.status.code(), Some(1), "{name}");
        let e = stderr(&o);
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(e.starts_with("lncsim: error: ") && e.contains(&format!("{name}{want}")), "{e}");
    }
    let o = lncsim(&["alloc", "/nonexistent/x.csv"]);
    assert_eq!(o.status.code(), Some(1));
    let bin = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("alloc_cli_{}_bin.csv", std::process::id()));
    std::fs::write(&bin, b"id,lower,upper,size\n\xff\n").expect("write");
    let o = lncsim(&["alloc", bin.to_str().expect("path")]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("not UTF-8 text (invalid byte at offset 20)"), "{}", stderr(&o));
}

#[test]
fn capacity_is_a_ceiling_only_when_given() {
    let input = tmp("cap.8.csv", SMALL);
    let o = lncsim(&["alloc", input.to_str().expect("path"), "--align", "1", "--json"]);
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).expect("JSON");
    assert_eq!((v["capacity"].clone(), v["fits"].clone()), (serde_json::json!(8), serde_json::json!(false)));
    let o = lncsim(&["alloc", input.to_str().expect("path"), "--align", "1", "--capacity", "8"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("out of DRAM space"), "{}", stderr(&o));
    let o = lncsim(&["alloc", input.to_str().expect("path"), "--align", "1", "--capacity", "12", "--order", "size"]);
    assert!(o.status.success(), "{}", stderr(&o));
    // --align 0 is a usage error.
    assert_eq!(lncsim(&["alloc", input.to_str().expect("path"), "--align", "0"]).status.code(), Some(2));
}
