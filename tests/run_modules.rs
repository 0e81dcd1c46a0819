//! `lncsim run --modules A.bir B.bir ...` (hand-written per-core modules) and
//! `lncsim run linked.bir` (a linked module) through the run's checks, with
//! findings named by instruction and FILE:LINE (issue 14, items 1 and 2).
#![allow(clippy::unwrap_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

fn lncsim(dir: &Path, args: &[&str]) -> Output {
    common::lncsim().current_dir(dir).args(args).output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A fresh directory for one test's fixtures.
fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lncsim-run-modules-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Core 0: produces the shared tensor `t`, then meets core 1 at barrier group 0 (line 11).
const PROD: &str = "\
# core 0: produces t, then meets core 1 at barrier group 0
module pair lnc 2 core 0
loc x dram input i32[16] @0x0
loc w dram weight i32[16] @0x1000 init 0xbeef
loc t dram shared i32[16] @0x0 shared_post_alloc

func main
  args x
  block entry
    prod0 = dve add x[0..16], w[0..16] -> t[0..16] core 0
    sync0 = sp barrier group 0 cores 0,1 id 0 flagged core 0 after prod0:ctl
";

/// Core 1, correct: meets core 0 at the barrier, then reads `t` through its view.
const CONS_OK: &str = "\
# core 1: waits for core 0 at barrier group 0, then reads t
module pair lnc 2 core 1
loc t_in1 dram shared i32[16] @0x0 shared_post_alloc remote t core 0
loc out dram output i32[16] @0x2000

func main
  args out
  block entry
    sync1 = sp barrier group 0 cores 0,1 id 0 flagged core 1
    cons0 = sp dma t_in1[0..16] -> out[0..16] core 1 after sync1:ctl
";

/// Core 1 with its side of the barrier missing: reads `t` unsynchronised.
const CONS_NO_BARRIER: &str = "\
# core 1: reads t WITHOUT meeting core 0 at the barrier
module pair lnc 2 core 1
loc t_in1 dram shared i32[16] @0x0 shared_post_alloc remote t core 0
loc out dram output i32[16] @0x2000

func main
  args out
  block entry
    cons0 = sp dma t_in1[0..16] -> out[0..16] core 1
";

/// Core 1 meets the barrier, but reads `t` on another engine with no order after it (line 10).
const CONS_UNORDERED: &str = "\
# core 1: meets core 0, but the read on act is not ordered after the barrier
module pair lnc 2 core 1
loc t_in1 dram shared i32[16] @0x0 shared_post_alloc remote t core 0
loc out dram output i32[16] @0x2000

func main
  args out
  block entry
    sync1 = sp barrier group 0 cores 0,1 id 0 flagged core 1
    cons0 = act dma t_in1[0..16] -> out[0..16] core 1
";

fn fixtures(d: &Path) {
    for (name, text) in
        [("prod.bir", PROD), ("cons.bir", CONS_OK), ("nobarrier.bir", CONS_NO_BARRIER), ("race.bir", CONS_UNORDERED)]
    {
        std::fs::write(d.join(name), text).unwrap();
    }
}

#[test]
fn a_correct_hand_written_pair_passes_and_says_which_check_did_not_run() {
    let d = dir("ok");
    fixtures(&d);
    let o = lncsim(&d, &["run", "--no-times", "--modules", "prod.bir", "cons.bir"]);
    let s = stdout(&o);
    assert!(o.status.success(), "{s}{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(s.lines().nth(1), Some("replay:  lncsim run --seed 0 --modules prod.bir cons.bir"), "{s}");
    assert!(
        s.contains("ok    program          2 per-core modules written by hand (cores 0, 1; 4 instructions)"),
        "{s}"
    );
    // The IR checker did not run (lncsim did not allocate these modules): n/a, not pass.
    assert!(s.contains("n/a   [1,3] IR checker: live tensors disjoint, floors, ceilings, shared = views: not exercised: every location carries a hand-written address"), "{s}");
    assert!(!s.contains("pass  [1,3]"), "{s}");
    for line in [
        "pass  [5] per-core modules run in a seeded barrier order (the reference outputs)",
        "pass  [1,2] link checker: barrier ids unique and dense, shared tensors unified",
        // Seed 000 §7's renumbering order, as the program flow checks it.
        "pass  [2] link: barriers flagged before linking renumbered in seed order, unflagged ones keep their ids",
        "pass  [2,5] linked module in a seeded dependency-respecting order gives the per-core run's outputs",
        "pass  [5] happens-before: no unsynchronised conflicting accesses",
        "pass  [5] simulated outputs equal the reference run's",
    ] {
        assert!(s.contains(line), "missing `{line}`: {s}");
    }
    assert!(s.contains("result   PASS (14 checks, 1 not exercised)"), "{s}");
    std::fs::remove_dir_all(&d).unwrap();
}

/// The done-when: a hand-written two-core pair with a missing barrier
/// on one side runs through `run --modules` and is reported with the
/// instruction's name and line.
#[test]
fn a_missing_barrier_on_one_side_is_reported_with_the_instructions_name_and_line() {
    let d = dir("nobarrier");
    fixtures(&d);
    let o = lncsim(&d, &["run", "--no-times", "--modules", "prod.bir", "nobarrier.bir"]);
    let s = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{s}");
    // The barrier left alone, by its name and where it was written.
    assert!(
        s.contains(
            "FAIL  link             barrier group 0: participant core 1 never arrives; \
             the group's arrivals: `sync0` at prod.bir:11 (core 0)"
        ),
        "{s}"
    );
    assert!(
        s.contains("FAIL  [5] per-core modules run in a seeded barrier order (the reference outputs): deadlock"),
        "{s}"
    );
    assert!(s.contains("result   FAIL (stage link failed; 1 of 2 checks failed, 1 not exercised)"), "{s}");
    assert!(s.trim_end().ends_with("replay:  lncsim run --seed 0 --modules prod.bir nobarrier.bir"), "{s}");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn an_unordered_read_in_a_hand_written_pair_is_a_race_named_by_both_instructions_and_lines() {
    let d = dir("race");
    fixtures(&d);
    let o = lncsim(&d, &["run", "--no-times", "--modules", "prod.bir", "race.bir"]);
    let s = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{s}");
    let race = s.lines().find(|l| l.contains("FAIL  [5] happens-before")).unwrap_or_else(|| panic!("{s}"));
    assert!(race.contains("`prod0` at prod.bir:10 (core 0 dve #0, Add, var `t`)"), "{race}");
    assert!(race.contains("`cons0` at race.bir:10 (core 1 act #0, Dma, var `t`)"), "{race}");
    assert!(!race.contains("debug"), "no debug ids once named: {race}");
    // A wrong output names the instruction that writes it.
    assert!(
        s.contains("output `out` differs first at element 0; written by `cons0` at race.bir:10 (core 1 act)"),
        "{s}"
    );
    // The same run is the same bytes.
    assert_eq!(s, stdout(&lncsim(&d, &["run", "--no-times", "--modules", "prod.bir", "race.bir"])));
    // The race is an instant event on core 1's act track (pid = core index + 1, tid = engine index).
    let o = lncsim(&d, &["run", "--no-times", "--modules", "prod.bir", "race.bir", "--trace", "t.json"]);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(d.join("t.json")).unwrap()).unwrap();
    let marks: Vec<&serde_json::Value> =
        v["traceEvents"].as_array().unwrap().iter().filter(|e| e["cat"] == "violation").collect();
    assert_eq!(marks.len(), 1, "{marks:?}");
    let m = marks[0];
    assert_eq!((&m["ph"], &m["s"], &m["name"]), (&"i".into(), &"t".into(), &"race".into()), "{m}");
    assert_eq!((m["pid"].as_u64(), m["tid"].as_u64()), (Some(2), Some(1)), "core 1, act: {m}");
    assert!(m["args"]["violation"].as_str().unwrap().contains("`cons0` at race.bir:10"), "{m}");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_linked_module_runs_with_the_link_checks_not_applicable_and_its_race_named_by_line() {
    let d = dir("linked");
    fixtures(&d);
    // Link the correct pair with lncsim, then run the linked text.
    let o = lncsim(&d, &["link", "--modules", "prod.bir", "cons.bir"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = stdout(&o);
    let module = &text[text.find("\nmodule ").unwrap() + 1..];
    std::fs::write(d.join("linked.bir"), module).unwrap();
    let o = lncsim(&d, &["run", "--no-times", "linked.bir"]);
    let s = stdout(&o);
    assert!(o.status.success(), "{s}");
    assert!(s.contains("ok    program          linked module pair/sgLnk (3 functions, 2 per core;"), "{s}");
    assert!(
        s.contains("n/a   [1,2] link checker: barrier ids unique and dense, shared tensors unified: not exercised"),
        "{s}"
    );
    assert!(
        s.contains("n/a   [2] link: barriers flagged before linking renumbered in seed order, unflagged ones keep their ids: not exercised"),
        "{s}"
    );
    assert!(s.contains("pass  [5] simulated outputs equal the reference run's"), "{s}");
    assert!(s.contains("result   PASS (13 checks, 3 not exercised)"), "{s}");
    // Break it: the consumer's read moves to another engine and no longer waits for the barrier.
    let broken = module.replace(" after sync1:ctl", "").replace("cons0 = sp dma", "cons0 = act dma");
    assert_ne!(broken, module);
    std::fs::write(d.join("broken.bir"), &broken).unwrap();
    let line = broken.lines().position(|l| l.trim_start().starts_with("cons0 =")).unwrap() + 1;
    let o = lncsim(&d, &["run", "--no-times", "broken.bir"]);
    let s = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{s}");
    let race = s.lines().find(|l| l.contains("FAIL  [5] happens-before")).unwrap_or_else(|| panic!("{s}"));
    assert!(race.contains(&format!("`cons0` at broken.bir:{line} (core 1 act #0, Dma")), "{race}");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn modules_are_refused_in_one_line_when_they_are_not_per_core_or_a_plant_is_asked() {
    let d = dir("refused");
    fixtures(&d);
    // --modules with generator flags is bad usage.
    let o = lncsim(&d, &["run", "--modules", "prod.bir", "cons.bir", "--cores", "2"]);
    assert_eq!(o.status.code(), Some(2));
    // One module per core of its lnc, each a per-core module: else the program stage fails in one line.
    std::fs::write(d.join("demo.bir"), DEMO).unwrap();
    for (files, want) in [
        (&["prod.bir", "prod.bir"][..], "FAIL  program          core 0 is given twice"),
        (&["prod.bir"][..], "FAIL  program          lnc 2 needs one module per core; none is given for core 1"),
        (&["prod.bir", "demo.bir"][..], "FAIL  program          module `demo` has no `core N` in its header"),
    ] {
        let mut args = vec!["run", "--no-times", "--modules"];
        args.extend(files);
        let o = lncsim(&d, &args);
        assert_eq!(o.status.code(), Some(1), "{files:?}");
        assert!(stdout(&o).contains(want), "{files:?}: {}", stdout(&o));
        assert!(!stdout(&o).contains("  pass"), "nothing ran: {}", stdout(&o));
    }
    // A plant needs a program to split: not applicable, exit 3.
    let o = lncsim(&d, &["run", "--no-times", "--modules", "prod.bir", "cons.bir", "--plant", "drop-sem-signal"]);
    assert_eq!(o.status.code(), Some(3), "{}", stdout(&o));
    assert!(stdout(&o).contains("cannot plant here: --plant works on a program, not on hand-written modules"));
    std::fs::remove_dir_all(&d).unwrap();
}

/// The docs' example program (docs/text-format.md): `t` crosses from core 0 to core 1.
const DEMO: &str = "\
module demo lnc 2
queue qSyncIO dynamic owner sp sems 2 instances 0,1
loc x dram input i32[16] @0x0
loc w dram weight i32[16] @0x1000 init 0xbeef
loc t dram internal i32[16]
loc out dram output i32[16] @0x2000

func main
  args x, out
  block entry
    i0 = dve add x[0..16], w[0..16] -> t[0..16] core 0
    i1 = sp dma t[0..16] -> out[0..16] queue qSyncIO core 1 after i0
";

#[test]
fn unplaced_per_core_modules_are_allocated_and_checked_and_run_like_their_program() {
    let d = dir("unplaced");
    std::fs::write(d.join("demo.bir"), DEMO).unwrap();
    // `lncsim split` prints the per-core modules (no addresses for `t` yet): save one per file.
    let split = stdout(&lncsim(&d, &["split", "demo.bir"]));
    let mut files = Vec::new();
    for part in split.split("# core ").filter(|p| !p.trim().is_empty()) {
        let (head, body) = part.split_once('\n').unwrap();
        let name = format!("c{}.bir", head.split(' ').next().unwrap());
        std::fs::write(d.join(&name), body).unwrap();
        files.push(name);
    }
    assert_eq!(files, ["c0.bir", "c1.bir"]);
    let o = lncsim(&d, &["run", "--no-times", "--modules", "c0.bir", "c1.bir"]);
    let s = stdout(&o);
    assert!(o.status.success(), "{s}");
    assert!(s.contains("ok    allocate         split skipped; HBM 4096 B (shared counted once)"), "{s}");
    assert!(s.contains("pass  [1,3] IR checker: live tensors disjoint, floors, ceilings, shared = views"), "{s}");
    assert!(s.contains("pass  [2] link: barriers flagged before linking renumbered in seed order"), "{s}");
    assert!(s.contains("result   PASS (14 checks)"), "{s}");
    // The same modules, the same NEFF, the same simulation as the program they were split from.
    let hash = |t: &str| t.lines().find(|l| l.starts_with("sim ")).map(|l| l.rsplit(' ').next().unwrap().to_owned());
    let program = stdout(&lncsim(&d, &["run", "--no-times", "demo.bir"]));
    assert_eq!(hash(&s), hash(&program), "{s}\n{program}");
    assert!(hash(&s).is_some());
    std::fs::remove_dir_all(&d).unwrap();
}
