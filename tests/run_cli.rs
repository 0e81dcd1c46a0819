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
    assert!(s.contains("result   PASS"), "{s}");
    assert_eq!(s, stdout(&lncsim(&["run"])), "same seed, same bytes");
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
    assert!(!stdout(&o).contains("replay:"), "{}", stdout(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("lncsim: error: plant: cannot plant here") && err.contains("nothing was checked"), "{err}");
    let _ = std::fs::remove_dir_all(dir);
}
