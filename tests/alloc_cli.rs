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
fn colliding_pinned_offsets_are_refused_as_input_in_one_line_with_exit_1() {
    let input = tmp("overlap.csv", "id,lower,upper,size,offset\na,0,5,4,0\nb,3,9,4,2\n");
    let o = lncsim(&["alloc", input.to_str().expect("path"), "--align", "1"]);
    assert_eq!(o.status.code(), Some(1), "stdout: {}", stdout(&o));
    assert_eq!(stdout(&o), "", "nothing allocated");
    let e = stderr(&o);
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(
        e.starts_with("lncsim: error:")
            && e.contains("pinned `a` [0, 4) and `b` [2, 6) overlap while both live at time 3"),
        "{e}"
    );
    // The judge still reports the same placement as a violation of the other allocator.
    let o = lncsim(&["alloc", input.to_str().expect("path"), "--judge", "--no-compare"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("overlap"), "{}", stdout(&o));
}

#[test]
fn a_placement_written_at_align_1_is_refused_at_a_larger_align_but_reloads_at_align_1() {
    // b sits right after a: fine at align 1, but at align 4096 both round up to a page.
    let input = tmp("packed.csv", "id,lower,upper,size\na,0,5,100\nb,0,9,100\n");
    let placed =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("alloc_cli_{}_packed_out.csv", std::process::id()));
    let o = lncsim(&["alloc", input.to_str().expect("path"), "--align", "1", "--out", placed.to_str().expect("path")]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let again = lncsim(&["alloc", placed.to_str().expect("path"), "--align", "1"]);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    let paged = lncsim(&["alloc", placed.to_str().expect("path")]);
    assert_eq!(paged.status.code(), Some(1));
    assert!(stderr(&paged).contains("sizes are rounded up to --align 4096"), "{}", stderr(&paged));
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

/// `lncsim alloc FILE --judge` and the JSON verdict.
fn judge_json(file: &Path, extra: &[&str]) -> (Option<i32>, serde_json::Value, String) {
    let mut args = vec!["alloc", file.to_str().expect("path"), "--judge", "--json"];
    args.extend_from_slice(extra);
    let o = lncsim(&args);
    let v = serde_json::from_str(stdout(&o).trim()).unwrap_or_else(|e| panic!("{e}: {}", stdout(&o)));
    (o.status.code(), v, stderr(&o))
}

#[test]
fn judge_a_valid_placement_prints_its_peak_against_the_lower_bound_and_lncsims() {
    // MiniMalloc's old format (buffer, start, inclusive end), a gap, an alignment: valid, peak 12.
    let text =
        "buffer,start,end,size,alignment,gaps,offset\na,0,9,4,4,3-6,0\nb,4,6,4,1,,0\nc,0,9,4,4,,4\nd,0,2,4,1,,8\n";
    let f = tmp("judge_ok.16.csv", text);
    let o = lncsim(&["alloc", f.to_str().expect("path"), "--judge"]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let t = stdout(&o);
    assert!(t.contains("lower bound: 12\n"), "{t}");
    assert!(t.contains("peak:        12 (peak/LB 1.0000)\n"), "{t}");
    assert!(t.contains("lncsim peak: 12 (peak/LB 1.0000, order seed; equal)\n"), "{t}");
    assert!(t.contains("capacity:    16 (fits)\n") && t.contains("valid:       true\n"), "{t}");
    assert!(!t.contains("violation"), "{t}");
    // Without the gap, `a` and `b` share bytes 0..4 at time 4..6.
    let f = tmp("judge_nogap.csv", &text.replace("3-6", ""));
    let (code, v, e) = judge_json(&f, &["--no-compare"]);
    assert_eq!(code, Some(1), "{v}");
    assert_eq!(v["violations"], serde_json::json!(["`a` [0, 4) and `b` [0, 4) overlap while both live at time 4"]));
    assert_eq!((v["lncsim_peak"].clone(), v["capacity"].clone()), (serde_json::Value::Null, serde_json::Value::Null));
    assert_eq!(e.lines().count(), 1, "{e}");
}

#[test]
fn judge_reports_every_overlap_out_of_bounds_and_misalignment_by_name() {
    let text = "id,lower,upper,size,alignment,offset\n\
                a,0,5,4,1,0\nb,3,9,4,1,2\nc,0,9,3,8,12\nd,4,9,2,1,20\ne,0,1,4,1,0\n";
    let f = tmp("judge_bad.20.csv", text);
    let (code, v, e) = judge_json(&f, &[]);
    assert_eq!(code, Some(1), "{v}");
    let want = [
        "location 2 `c` at 12 is not a multiple of 8",
        "location 3 `d` ends at 22, above the region ceiling 20",
        "`a` [0, 4) and `b` [2, 6) overlap while both live at time 3",
        "`a` [0, 4) and `e` [0, 4) overlap while both live at time 0",
    ];
    assert_eq!(v["violations"], serde_json::json!(want));
    assert_eq!((v["peak"].clone(), v["lower_bound"].clone(), v["fits"].clone()), (22.into(), 13.into(), false.into()));
    // lncsim's own placement of the same problem (offsets ignored) is valid and lower.
    assert!(v["lncsim_peak"].as_u64().is_some_and(|p| (13..22).contains(&p)), "{v}");
    assert!(e.starts_with("lncsim: error: ") && e.contains("breaks 4 rule(s); first: location 2 `c`"), "{e}");
    // --capacity overrides the file name's capacity: 22 fits, the other three remain.
    let (_, v, _) = judge_json(&f, &["--capacity", "22"]);
    assert_eq!(v["violations"].as_array().map(Vec::len), Some(3), "{v}");
}

#[test]
fn judge_lncsims_own_placement_of_a_bench_file_round_trips() {
    // No alloc-bench file carries offsets: write lncsim's placement out and judge it
    // (B does not fit its 1 MiB name capacity in lncsim's placement: the judge says so).
    let Some(dir) = bench_dir() else { return };
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("alloc_cli_{}_B.1048576.csv", std::process::id()));
    let o = lncsim(&[
        "alloc",
        dir.join("B.1048576.csv").to_str().expect("path"),
        "--align",
        "1",
        "--json",
        "--out",
        out.to_str().expect("path"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let own: serde_json::Value = serde_json::from_str(stdout(&o).trim()).expect("JSON");
    let (code, v, _) = judge_json(&out, &["--no-compare"]);
    assert_eq!((code, v["fits"].clone()), (Some(1), false.into()));
    let over = v["violations"].as_array().expect("list");
    assert!(
        !over.is_empty()
            && over.iter().all(|x| x.as_str().is_some_and(|x| x.contains("above the region ceiling 1048576")))
    );
    let (code, v, e) = judge_json(&out, &["--capacity", "0x10000000"]);
    assert_eq!(code, Some(0), "{e}");
    assert_eq!(v["valid"], true);
    assert_eq!(v["violations"], serde_json::json!([]));
    assert_eq!((v["peak"].clone(), v["lncsim_peak"].clone()), (own["peak"].clone(), own["peak"].clone()));
    assert_eq!(v["lower_bound"], own["lower_bound"]);
    assert_eq!(v["fits"], true);
    // One buffer moved onto another's bytes: the checker names both.
    let text = std::fs::read_to_string(&out).expect("placed");
    let mut rows: Vec<Vec<String>> = text.lines().map(|l| l.split(',').map(String::from).collect()).collect();
    let (first_lo, first_hi) = (rows[1][1].parse::<u64>().expect("lower"), rows[1][2].parse::<u64>().expect("upper"));
    let victim = (2..rows.len())
        .find(|&r| {
            let (lo, hi) = (rows[r][1].parse::<u64>().expect("lower"), rows[r][2].parse::<u64>().expect("upper"));
            lo < first_hi && first_lo < hi
        })
        .expect("a buffer live with the first");
    rows[victim][4] = rows[1][4].clone();
    let moved: String = rows.iter().map(|r| r.join(",") + "\n").collect();
    std::fs::write(&out, moved).expect("write");
    let (code, v, _) = judge_json(&out, &["--no-compare", "--capacity", "0x10000000"]);
    assert_eq!(code, Some(1));
    let (a, b) = (format!("`{}` [", rows[1][0]), format!("`{}` [", rows[victim][0]));
    let named = v["violations"]
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|x| x.as_str())
        .any(|x| x.starts_with(&a) && x.contains(&format!(" and {b}")) && x.contains("overlap"));
    assert!(named, "{v}");
}

#[test]
fn judge_bad_inputs_are_one_line_exit_1_and_bad_usage_exit_2() {
    let cases = [
        ("nooff.csv", "id,lower,upper,size\na,0,1,1\n", "nooff.csv:1: missing column `offset`"),
        (
            "emptyoff.csv",
            "id,lower,upper,size,offset\na,0,1,1,0\nb,0,1,1,\n",
            "emptyoff.csv:3: buffer `b` has no offset",
        ),
        ("syn.csv", "id,lower,begin,upper,size,offset\n", "syn.csv:1: columns `lower` and `begin` both name `lower`"),
        (
            "win.csv",
            "id,lower,upper,size,gaps,offset\na,0,9,1,2-3@0:1,0\n",
            "win.csv:2: column `gaps`: `2-3@0:1` has a window",
        ),
    ];
    for (name, text, want) in cases {
        let f = tmp(name, text);
        let o = lncsim(&["alloc", f.to_str().expect("path"), "--judge"]);
        assert_eq!(o.status.code(), Some(1), "{name}");
        let e = stderr(&o);
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(e.starts_with("lncsim: error: ") && e.contains(want), "{e}");
        assert_eq!(stdout(&o), "", "{name}");
    }
    let f = tmp("usage.csv", "id,lower,upper,size,offset\na,0,1,1,0\n");
    let p = f.to_str().expect("path");
    assert_eq!(lncsim(&["alloc", p, "--no-compare"]).status.code(), Some(2));
    assert_eq!(lncsim(&["alloc", p, "--judge", "--out", "x.csv"]).status.code(), Some(2));
    assert_eq!(lncsim(&["alloc", p, "--judge", "--align", "0"]).status.code(), Some(2));
}
