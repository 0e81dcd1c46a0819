//! `lncsim run` and `lncsim swarm` from the command line.
#![allow(clippy::unwrap_used)]

mod common;

use std::process::Output;

fn lncsim(args: &[&str]) -> Output {
    common::lncsim().args(args).output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn run_prints_the_seed_first_and_a_passing_report() {
    let o = lncsim(&["run"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s = stdout(&o);
    assert!(s.starts_with("seed 0\n"), "{s}");
    assert!(s.contains("pass  [5] simulated outputs equal the interpreter's"), "{s}");
    assert!(s.contains("result   PASS (17 checks)"), "{s}");
    // The replay command comes second, before any work; each stage and check carries its time.
    assert_eq!(s.lines().nth(1), Some("replay:  lncsim run --seed 0 --cores 4 --size small"), "{s}");
    assert!(s.lines().filter(|l| l.starts_with("  ok") || l.starts_with("  pass")).all(|l| l.ends_with(" ms)")), "{s}");
    // --no-times: byte-for-byte deterministic, and otherwise the same lines.
    let a = stdout(&lncsim(&["run", "--no-times"]));
    assert_eq!(a, stdout(&lncsim(&["run", "--no-times"])), "same seed, same bytes");
    assert!(!a.contains(" ms)"), "{a}");
    let strip = |t: &str| -> Vec<String> {
        t.lines()
            .map(|l| l.rsplit_once("  (").filter(|(_, r)| r.ends_with(" ms)")).map_or(l, |(x, _)| x).to_owned())
            .collect()
    };
    assert_eq!(strip(&s), strip(&a));
}

/// The seed and the replay command are printed before any work, so a run
/// killed while it works still told how to replay it.
#[test]
fn a_killed_run_has_already_printed_its_seed_and_replay_command() {
    use std::io::BufRead;
    let mut child = common::lncsim()
        .args(["run", "--seed", "9", "--cores", "8", "--ops", "200000"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let (mut first, mut second) = (String::new(), String::new());
    out.read_line(&mut first).unwrap();
    out.read_line(&mut second).unwrap();
    child.kill().unwrap();
    let _ = child.wait();
    assert_eq!(first, "seed 9\n");
    assert_eq!(second, "replay:  lncsim run --seed 9 --cores 8 --ops 200000 --elems 64\n");
}

#[test]
fn json_stages_carry_millis_unless_no_times() {
    let v: serde_json::Value = serde_json::from_slice(&lncsim(&["run", "--json"]).stdout).unwrap();
    assert!(v["stages"].as_array().unwrap().iter().all(|s| s["millis"].as_f64().is_some()), "{v}");
    assert!(v["checks"].as_array().unwrap().iter().all(|s| s["millis"].as_f64().is_some()), "{v}");
    assert_eq!(v["result"], "PASS (17 checks)");
    let a = lncsim(&["run", "--json", "--no-times"]).stdout;
    let v: serde_json::Value = serde_json::from_slice(&a).unwrap();
    assert!(v["stages"].as_array().unwrap().iter().all(|s| s.get("millis").is_none()), "{v}");
    assert_eq!(a, lncsim(&["run", "--json", "--no-times"]).stdout, "deterministic without times");
}

#[test]
fn a_generated_program_of_n_instructions_per_core_runs_and_replays() {
    let o = lncsim(&["run", "--seed", "2", "--cores", "4", "--ops", "300", "--elems", "16", "--no-times"]);
    assert!(o.status.success(), "{}", stdout(&o));
    let s = stdout(&o);
    assert!(s.contains("(4 cores, 1200 instructions)"), "{s}");
    assert!(s.contains("replay:  lncsim run --seed 2 --cores 4 --ops 300 --elems 16"), "{s}");
    let g = stdout(&lncsim(&["gen", "--seed", "2", "--cores", "4", "--ops", "300", "--elems", "16"]));
    assert!(g.starts_with("module gen_s2_c4 lnc 4"), "{g}");
    assert_eq!(g, stdout(&lncsim(&["gen", "--seed", "2", "--cores", "4", "--ops", "300", "--elems", "16"])));
}

#[test]
fn sizes_past_the_generator_limits_are_refused_in_one_line() {
    // 8 x 600k is past the total limit: a typed refusal naming it, exit 1, before any work.
    for cmd in [&["gen", "--cores", "8", "--ops", "600000"][..], &["run", "--cores", "8", "--ops", "600000"]] {
        let o = lncsim(cmd);
        assert_eq!(o.status.code(), Some(1), "{cmd:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("more than the limit of 4000000"), "{err}");
        assert!(o.stdout.is_empty(), "{cmd:?}: nothing printed before the refusal");
    }
    // Past the per-core limit, or --elems without --ops: usage errors (exit 2).
    assert_eq!(lncsim(&["gen", "--ops", "2000001"]).status.code(), Some(2));
    assert_eq!(lncsim(&["gen", "--elems", "4"]).status.code(), Some(2));
    assert_eq!(lncsim(&["gen", "--ops", "10", "--size", "large"]).status.code(), Some(2));
    assert_eq!(lncsim(&["gen", "--ops", "10", "--elems", "0"]).status.code(), Some(1));
}

#[test]
fn the_result_line_counts_the_failed_checks() {
    let o = lncsim(&["run", "--seed", "3", "--plant", "unsynced-shared", "--no-times"]);
    let s = stdout(&o);
    let line = s.lines().find(|l| l.starts_with("result   ")).unwrap();
    let failed = s.lines().filter(|l| l.starts_with("  FAIL  [")).count();
    assert_eq!(line, format!("result   FAIL ({failed} of 17 checks failed)"), "{s}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&format!("FAIL ({failed} of 17 checks failed)")), "{err}");
}

/// `neff pack --level`: level 0 stores, level 9 is smallest; each loads and runs.
#[test]
fn neff_pack_takes_a_deflate_level() {
    let dir = std::env::temp_dir().join(format!("lncsim-level-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bir = dir.join("p.bir");
    std::fs::write(&bir, stdout(&lncsim(&["gen", "--seed", "4", "--cores", "2", "--size", "medium"]))).unwrap();
    let mut sizes = Vec::new();
    for level in ["0", "2", "9"] {
        let neff = dir.join(format!("p{level}.neff"));
        let o = lncsim(&["neff", "pack", bir.to_str().unwrap(), "-o", neff.to_str().unwrap(), "--level", level]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(stdout(&o).contains(&format!("gzip level {level}")), "{}", stdout(&o));
        sizes.push(std::fs::metadata(&neff).unwrap().len());
        let o = lncsim(&["run", neff.to_str().unwrap(), "--seed", "4"]);
        assert!(o.status.success(), "level {level}: {}", stdout(&o));
    }
    assert!(sizes[0] > sizes[1] && sizes[1] >= sizes[2], "{sizes:?}");
    let o = lncsim(&["neff", "pack", bir.to_str().unwrap(), "-o", "/dev/null", "--level", "10"]);
    assert_eq!(o.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(dir);
}

/// `bench flow` at tiny sizes: the figures, the growth table and the targets, in one run.
#[test]
fn bench_flow_prints_stages_growth_and_targets() {
    let o = lncsim(&["bench", "flow", "--sizes", "20,200", "--cores", "2", "--reps", "3"]);
    let s = stdout(&o);
    assert!(o.status.success(), "{s}{}", String::from_utf8_lossy(&o.stderr));
    for needle in [
        "size 20 x 2 cores:",
        "size 200 x 2 cores:",
        "400 instructions, end to end",
        "growth per 10x",
        "20 -> 200 instructions per core:",
        "split + allocate",
        "check: IR checker",
        "end to end",
        "(target <= 120 s): PASS",
        "(target <= 8192 MiB): PASS",
        "result PASS",
        "run 1 of 15, each stage as it finishes:",
        "run 1 of 3, each stage as it finishes:",
        "size 20: run 15 of 15: end to end",
        "size 200: run 3 of 3: end to end",
        "size 20 x 2 cores: median of 15 runs",
        "size 200 x 2 cores: median of 3 runs",
    ] {
        assert!(s.contains(needle), "no `{needle}` in:\n{s}");
    }
    assert!(!s.contains("growth misses"), "a passing run counts no miss:\n{s}");
    // The figures printed as the medians are the ones the growth is judged on.
    let medians = s.split("size 200 x 2 cores: median of 3 runs").nth(1).expect("the larger size's medians");
    let cpu_of = |line: &str| -> String {
        let ms: Vec<&str> = line.split_whitespace().collect();
        ms[ms.len() - 5].to_string()
    };
    let median_line = medians.lines().find(|l| l.trim_start().starts_with("split + allocate")).expect("a median line");
    let growth = s.split("20 -> 200 instructions per core:").nth(1).expect("the growth table");
    let growth_line = growth.lines().find(|l| l.trim_start().starts_with("split + allocate")).expect("a growth line");
    let judged = growth_line.split("->").nth(1).and_then(|r| r.split_whitespace().next()).expect("the larger figure");
    assert_eq!(cpu_of(median_line), judged, "median line `{median_line}` vs growth line `{growth_line}`");
    // Every growth line carries the range over the pairings of runs, around the medians' growth.
    for line in
        growth.lines().take_while(|l| !l.starts_with("targets")).filter(|l| l.contains(" -> ") && l.contains('['))
    {
        let num = |t: &str| t.trim_end_matches('x').parse::<f64>().unwrap_or_else(|e| panic!("`{t}` in `{line}`: {e}"));
        let g = num(line
            .split(']')
            .next()
            .and_then(|h| h.split('[').next())
            .and_then(|h| h.split_whitespace().last())
            .unwrap());
        let range = line.split('[').nth(1).and_then(|r| r.split(']').next()).expect("a range");
        let (lo, hi) = range.split_once("..").map(|(l, h)| (num(l.trim()), num(h.trim()))).expect("low .. high");
        assert!(lo <= g + 0.05 && g <= hi + 0.05, "growth outside its range: `{line}`");
    }
    assert!(growth.lines().filter(|l| l.contains('[')).count() >= 10, "no ranges in:\n{growth}");
    // The runs are taken in rounds, smaller sizes first; the larger size's 3 runs
    // are spread over the smaller one's 15 (rounds 1, 6 and 11).
    let at = |needle: &str| s.find(needle).unwrap_or_else(|| panic!("no `{needle}` in:\n{s}"));
    let order = [
        "size 20: run 6 of 15",
        "size 200: run 2 of 3",
        "size 20: run 7 of 15",
        "size 20: run 11 of 15",
        "size 200: run 3 of 3",
        "size 20: run 12 of 15",
    ];
    assert!(order.windows(2).all(|w| at(w[0]) < at(w[1])), "rounds out of order:\n{s}");
    // Round 2's header once, after round 1 and before round 2's first run; no "run 1" line after the live one.
    assert_eq!(s.matches("rounds 2 to 15:").count(), 1, "{s}");
    assert!(at("size 200 x 2 cores:") < at("rounds 2 to 15:") && at("rounds 2 to 15:") < at("size 20: run 2 of 15"));
    assert!(!s.contains("run 1 of 15: end to end") && !s.contains("run 1 of 3: end to end"), "{s}");
    // Every size's summary has a peak (round 1 ran no larger size before it).
    for line in s.lines().filter(|l| l.contains("instructions, end to end")) {
        assert!(!line.ends_with("peak RSS ? MiB"), "{line}");
    }
    // One run of one size: no run counter, no median block.
    let one = stdout(&lncsim(&["bench", "flow", "--sizes", "20", "--cores", "2", "--reps", "1"]));
    assert!(one.contains("size 20 x 2 cores:") && one.contains("(median of 1)"), "{one}");
    assert!(!one.contains("run 1 of") && !one.contains("median of 1 runs (peak") && !one.contains("rounds 2"), "{one}");
    assert_eq!(lncsim(&["bench", "flow", "--sizes", "200,20"]).status.code(), Some(1), "sizes must ascend");
    assert_eq!(lncsim(&["bench", "flow", "--sizes", "300000"]).status.code(), Some(2), "bounded sizes");
}

#[test]
fn a_planted_bug_fails_the_run_and_prints_the_replay_command() {
    let o = lncsim(&["run", "--seed", "3", "--plant", "unsynced-shared"]);
    assert_eq!(o.status.code(), Some(1));
    let s = stdout(&o);
    assert!(s.contains("FAIL  [1] every core's access to a shared tensor hits one address"), "{s}");
    assert!(s.contains("replay:  lncsim run --seed 3 --cores 4 --size small --plant unsynced-shared"), "{s}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn bad_arguments_get_one_line() {
    for (args, needle, code) in [
        (&["run", "--faults", "nope"][..], "lncsim: error: --faults: unknown fault `nope`", 2),
        (&["run", "--faults", "load-alloc=x"], "lncsim: error: --faults load-alloc=x: ", 2),
        (&["run", "--plant", "nope"], "lncsim: error: --plant: unknown bug `nope`", 2),
        (&["swarm", "--seeds", "0..2", "--plant", "nope"], "lncsim: error: --plant: unknown bug `nope`", 2),
        (&["run", "/nonexistent/file.bir"], "lncsim: error: /nonexistent/file.bir: ", 1),
    ] {
        let o = lncsim(args);
        assert_eq!(o.status.code(), Some(code), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with(needle), "{args:?}: {err}");
    }
    // A value clap refuses is a usage error (exit 2): clap's one error line, then its hint.
    let o = lncsim(&["swarm", "--seeds", "5..2"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.starts_with("error: invalid value '5..2' for '--seeds <SEEDS>': empty range 5..2\n"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn trace_is_chrome_json_and_json_reports_parse() {
    let path = std::env::temp_dir().join(format!("lncsim-trace-{}.json", std::process::id()));
    let o = lncsim(&["run", "--seed", "2", "--cores", "2", "--jitter", "--trace", path.to_str().unwrap(), "--json"]);
    assert!(o.status.success());
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(report["passed"], true);
    assert_eq!(report["seed"], 2);
    let trace: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let events = trace["traceEvents"].as_array().unwrap();
    assert!(events.iter().any(|e| e["ph"] == "X"), "no complete events");
    let _ = std::fs::remove_file(path);
}

#[test]
fn run_takes_a_program_file_and_a_packed_neff() {
    let dir = std::env::temp_dir().join(format!("lncsim-run-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bir = dir.join("p.bir");
    std::fs::write(&bir, stdout(&lncsim(&["gen", "--seed", "4", "--cores", "2"]))).unwrap();
    let o = lncsim(&["run", bir.to_str().unwrap(), "--seed", "4"]);
    assert!(o.status.success(), "{}", stdout(&o));
    let neff = dir.join("p.neff");
    assert!(lncsim(&["neff", "pack", bir.to_str().unwrap(), "-o", neff.to_str().unwrap()]).status.success());
    let o = lncsim(&["run", neff.to_str().unwrap(), "--seed", "4"]);
    assert!(o.status.success(), "{}", stdout(&o));
    assert!(stdout(&o).contains("ok    execute"));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn swarm_runs_a_seed_range_and_summarises() {
    let o = lncsim(&["swarm", "--seeds", "0..20", "--jobs", "2", "--check-determinism", "--json"]);
    assert!(o.status.success(), "{}", stdout(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!((v["runs"].as_u64(), v["failed"].as_u64()), (Some(20), Some(0)));
    let o = lncsim(&["swarm", "--seeds", "0..4", "--plant", "drop-sem-signal"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stdout(&o).contains("replay: lncsim run --seed 0 "), "{}", stdout(&o));
}

#[test]
fn a_bug_that_cannot_be_planted_is_not_applicable_exit_3_without_a_replay() {
    let dir = std::env::temp_dir().join(format!("lncsim-na-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let one = dir.join("one.bir");
    std::fs::write(&one, stdout(&lncsim(&["gen", "--seed", "1", "--cores", "1"]))).unwrap();
    let o = lncsim(&["run", one.to_str().unwrap(), "--plant", "unsynced-shared"]);
    assert_eq!(o.status.code(), Some(3), "{}", stdout(&o));
    // The replay line printed before work is the only one: no closing replay for a run that checked nothing.
    assert_eq!(stdout(&o).matches("replay:").count(), 1, "{}", stdout(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("lncsim: error: plant: cannot plant here")
            && err.contains("not applicable, not a failed check"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_real_compiler_neff_is_loaded_checked_and_reported_not_executable_exit_3() {
    let Some(dir) = common::shared_dir("real-neff/matmul_small.neff") else { return };
    let neff = dir.join("real-neff/matmul_small.neff");
    let o = lncsim(&["run", neff.to_str().unwrap(), "--no-times"]);
    assert_eq!(o.status.code(), Some(3), "{}", stdout(&o));
    let s = stdout(&o);
    assert!(s.contains("pass  [6] load layout: staged bytes inside their allocations"), "{s}");
    assert!(s.contains("FAIL  execute          not executable: opaque instruction set"), "{s}");
    assert!(s.contains("result   NOT APPLICABLE (2 of 2 checks passed; see the failed stage)"), "{s}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("not applicable, not a failed check"), "{err}");
}

/// Issue 12 section 4: each seed contract's end-to-end check fails through
/// `lncsim run` on the component broken the way the held-out bugs break it,
/// with its own message, and passes on the same run (and the feature the
/// plant needs) without the bug.
#[test]
fn each_contract_check_fails_on_its_planted_bug_and_passes_without_it() {
    for (plant, features, check, message, failed) in [
        (
            "hbm-shared-per-core",
            "",
            "FAIL  [3] HBM accounting (shared bytes once) equals the loaded tensors' footprint on the device: ",
            "(shared bytes counted more than once?)",
            1,
        ),
        (
            "sync-address-only",
            "placed-shared",
            "FAIL  [1] every core's copy of a shared tensor has one (address, partition, bank), the program's: core ",
            ", partition 0, bank 0) but its owner `",
            2,
        ),
        (
            "renumber-unflagged",
            "unflagged-barriers",
            "FAIL  [2] link: barriers flagged before linking renumbered in seed order, unflagged ones keep their ids: ",
            "an unflagged barrier keeps its id",
            2,
        ),
        (
            // Unreachable from a program (the split refuses a cross-core output): the old output
            // comparisons see this plant too, so no count of failures is asserted (0).
            "keep-intermediate-output",
            "",
            "FAIL  [5] the NEFF's outputs are the program's outputs: none extra, none missing: ",
            "the NEFF declares output `t2`, which is no output of the program",
            0,
        ),
        (
            "single-core-sem-count",
            "sem-pool",
            "FAIL  [5] execution: legal records, within the event budget: illegal instruction `",
            "SemSignal): semaphore 8 does not exist on the core; engine halted",
            3,
        ),
        (
            // A codegen that loses destination offsets: generated programs write
            // whole tensors from offset 0, so only split writes show it.
            "drop-dst-offset",
            "partial-writes",
            "FAIL  [5] simulated outputs equal the interpreter's: ",
            "differs first at element",
            1,
        ),
        (
            "handle-rollback",
            "reloads",
            "FAIL  [6] registry: no H_NN or H_MODEL handed out twice in a run (reloads around the asymmetric S0 edge): ",
            "H_NN 2 handed out twice: to load 2 (faulted at S0, left registered) and to load 3",
            1,
        ),
    ] {
        let o = lncsim(&["run", "--seed", "3", "--no-times", "--plant", plant]);
        assert_eq!(o.status.code(), Some(1), "{plant}: {}", stdout(&o));
        let s = stdout(&o);
        let line = s
            .lines()
            .find(|l| l.trim_start().starts_with(check))
            .unwrap_or_else(|| panic!("{plant}: no `{check}` in {s}"));
        assert!(line.contains(message), "{plant}: {line}");
        if failed > 0 {
            assert_eq!(s.lines().filter(|l| l.starts_with("  FAIL  [")).count(), failed, "{plant}: {s}");
        }
        let mut args = vec!["run", "--seed", "3", "--no-times"];
        if !features.is_empty() {
            args.extend(["--features", features]);
        }
        let o = lncsim(&args);
        assert!(o.status.success(), "{features}: {}", stdout(&o));
        let name = check.rsplit_once(": ").map_or(check, |(n, _)| n).replacen("FAIL", "pass", 1);
        assert!(stdout(&o).contains(&name), "{features}: {}", stdout(&o));
    }
    let o = lncsim(&["run", "--features", "nope"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.starts_with("lncsim: error: --features: unknown feature `nope` (placed-shared, "), "{err}");
    let o = lncsim(&["run", "--seed", "5", "--cores", "2", "--features", "reloads,placed-shared"]);
    assert!(o.status.success(), "{}", stdout(&o));
    let replay = "replay:  lncsim run --seed 5 --cores 2 --size small --features placed-shared,reloads";
    assert!(stdout(&o).contains(replay), "{}", stdout(&o));
}

/// `lncsim run --no-times` on `text` written to a scratch file: (exit code, stdout).
fn run_program_text(tag: &str, text: &str) -> (Option<i32>, String) {
    let dir = std::env::temp_dir().join(format!("lncsim-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(format!("{tag}.bir"));
    std::fs::write(&p, text).unwrap();
    let o = lncsim(&["run", p.to_str().unwrap(), "--no-times"]);
    let _ = std::fs::remove_dir_all(dir);
    (o.status.code(), stdout(&o))
}

/// A program that writes no output compares nothing: its output checks say so.
#[test]
fn output_checks_of_a_program_that_writes_no_output_are_not_exercised() {
    let text = "module noout lnc 1\nloc x dram input i32[16]\nloc t dram internal i32[16]\nloc out dram output i32[16]\n\n\
                func main\n  args x, out\n  block entry\n    i0 = act relu x[0..16] -> t[0..16] core 0\n";
    let (code, s) = run_program_text("noout", text);
    assert_eq!(code, Some(0), "{s}");
    for check in [
        "split modules in a seeded barrier order give the interpreter's outputs",
        "linked module in a seeded dependency-respecting order gives the interpreter's outputs",
        "simulated outputs equal the interpreter's",
    ] {
        let line = s.lines().find(|l| l.contains(check)).unwrap_or_else(|| panic!("no `{check}` in:\n{s}"));
        assert!(line.contains("not exercised: the program writes no output"), "{line}");
    }
}

/// A program with no compiler-placed DRAM location gives the IR checker nothing to check: it says so.
#[test]
fn the_ir_checker_on_a_program_with_only_inputs_and_outputs_is_not_exercised() {
    let text = "module io lnc 1\nloc x dram input i32[16]\nloc out dram output i32[16]\n\n\
                func main\n  args x, out\n  block entry\n    i0 = act relu x[0..16] -> out[0..16] core 0\n";
    let (code, s) = run_program_text("io", text);
    assert_eq!(code, Some(0), "{s}");
    let line = s.lines().find(|l| l.contains("IR checker:")).unwrap_or_else(|| panic!("no IR checker line in:\n{s}"));
    assert!(line.contains("not exercised: no module holds a compiler-placed"), "{line}");
    let line = s.lines().find(|l| l.contains("HBM accounting")).unwrap_or_else(|| panic!("no HBM line in:\n{s}"));
    assert!(line.contains("n/a") && line.contains("not exercised: no compiler-placed tensor was loaded"), "{line}");
    assert!(s.contains("pass  [5] simulated outputs equal the interpreter's"), "the outputs are compared: {s}");
}

/// An output the program writes only in part holds zeros elsewhere, as the
/// reference interpreter says: the host clears outputs and scratch before a
/// run (device memory reads as poison until written).
#[test]
fn a_partly_written_output_and_a_partly_written_internal_pass() {
    let text = "module part lnc 2\nloc x dram input i32[16]\nloc t dram internal i32[16]\nloc out dram output i32[16]\n\n\
                func main\n  args x, out\n  block entry\n    i0 = act relu x[0..8] -> t[0..8] core 0\n\
                \x20   i1 = dve relu t[0..16] -> out[4..20] core 1 after i0\n";
    let text =
        text.replace("out[4..20]", "out[0..16]").replace("loc out dram output i32[16]", "loc out dram output i32[32]");
    let (code, s) = run_program_text("part", &text);
    assert_eq!(code, Some(0), "{s}");
    assert!(s.contains("pass  [5] simulated outputs equal the interpreter's"), "{s}");
}

/// Checks that judged nothing say so: a one-engine program compares no
/// access with another engine's (happens-before), and a single TNC loader
/// never meets a busy slot; two loaders of one NEFF do, and pass.
#[test]
fn checks_that_judged_nothing_are_not_exercised() {
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/");
    let o = lncsim(&["run", &format!("{data}one_engine.bir"), "--loaders", "1", "--no-times"]);
    let s = stdout(&o);
    assert!(o.status.success(), "{s}");
    assert!(
        s.contains("n/a   [5] happens-before: no unsynchronised conflicting accesses: not exercised: no access met"),
        "{s}"
    );
    assert!(
        s.contains("n/a   [4] TNC cache: every loader finishes, slot back to UNINIT, ref count 0: not exercised"),
        "{s}"
    );
    // The demo's two engines meet on `t`; two loaders share one slot.
    let o = lncsim(&["run", &format!("{data}demo.bir"), "--loaders", "2", "--no-times"]);
    let s = stdout(&o);
    assert!(s.contains("pass  [5] happens-before"), "{s}");
    assert!(s.contains("pass  [4] TNC cache"), "{s}");
}
