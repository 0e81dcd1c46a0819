//! What `lncsim run` reports about a program's sync bugs, in the program's
//! terms (issue 14, item 1): instructions by name and FILE:LINE, semaphores
//! by the program's own numbers, a deadlock as a bounded multi-line wait-for
//! graph with its root cause first, and every violation on the Perfetto trace.
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

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lncsim-run-diag-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A wait on the program's semaphore 0 that nobody signals (`w0`, line 9).
/// The DMA on `qSyncIO` gives the core its pool of two semaphores (it never
/// runs: it waits behind nothing, but the flow's return barrier does).
const SEM: &str = "\
module semdl lnc 1
queue qSyncIO dynamic owner sp sems 2 instances 0,1
loc x dram input i32[16] @0x0
loc out dram output i32[16] @0x2000
loc s dram internal i32[16]
func main
  args x, out
  block entry
    w0 = dve sem_wait 0 value 1 core 0
    a0 = dve add x[0..16], x[0..16] -> out[0..16] core 0 after w0
    d0 = sp dma x[0..16] -> s[0..16] queue qSyncIO core 0
";

/// The simulator's deadlock lines: from the barrier check's `deadlock:` line to the next check line.
fn deadlock_lines(s: &str) -> Vec<&str> {
    let mut it = s.lines().skip_while(|l| !l.contains("no deadlock: deadlock: "));
    let head = it.next().unwrap_or_else(|| panic!("no deadlock: {s}"));
    std::iter::once(head).chain(it.take_while(|l| l.starts_with("        "))).collect()
}

#[test]
fn a_deadlock_is_a_wait_for_graph_root_cause_first_in_the_programs_terms() {
    let d = dir("sem");
    std::fs::write(d.join("sem.bir"), SEM).unwrap();
    let o = lncsim(&d, &["run", "--no-times", "sem.bir"]);
    let s = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{s}");
    // The linked-order oracle, which waits for semaphores too, finds the same deadlock.
    assert!(
        s.contains("FAIL  [2,5] linked module in a seeded dependency-respecting order gives the interpreter's outputs: deadlock: cores [0] wait"),
        "{s}"
    );
    let lines = deadlock_lines(&s);
    assert_eq!(lines.len(), 3, "a header and one line per waiter: {lines:#?}");
    assert!(
        lines[0].ends_with(
            "no deadlock: deadlock: 2 engine(s) wait, 1 with nobody left to signal them (root causes first)"
        ),
        "{}",
        lines[0]
    );
    // Root cause first: the program's own `sem_wait 0` (not record semaphore 5), by name and line.
    assert_eq!(
        lines[1],
        "        `w0` at sem.bir:9 (core 0 dve #0, SemWait) waits for semaphore 0 >= 1 (is 0); nobody left could signal it"
    );
    // Then who waits on it: an instruction the flow inserted, waiting for DVE's dependency signal.
    assert!(lines[2].starts_with("        `cb_return_call_def_0_instance_0` (inserted by split/link; core 0 sp #2, Barrier) waits for dve's dependency signal >= 1 (is 0); could signal: `w0` at sem.bir:9"), "{}", lines[2]);
    assert!(!s.contains("sem 5") && !s.contains(" | "), "{s}");
    // The output nobody could finish names its writer.
    assert!(
        s.contains("FAIL  [5] simulated outputs equal the interpreter's: output `out` differs first at element 0; written by `a0` at sem.bir:10 (core 0 dve)"),
        "{s}"
    );
    // The signature a swarm groups by is still `deadlock`.
    let o = lncsim(&d, &["run", "--no-times", "sem.bir", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["passed"], false);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_deadlock_of_many_waiters_prints_twenty_lines_then_a_count() {
    let d = dir("many");
    // 5 cores x 5 engines, each waiting on a semaphore nobody signals: 25 waiters.
    // A DMA on `qSyncIO` per core (after the waits: it never runs) gives each core its semaphore pool.
    let mut p = String::from(
        "module many lnc 5\nqueue qSyncIO dynamic owner sp sems 2 instances 0,1\n\
         loc x dram input i32[4] @0x0\nloc out dram output i32[4] @0x100\n",
    );
    for c in 0..5 {
        p.push_str(&format!("loc s{c} dram internal i32[4]\n"));
    }
    p.push_str("func main\n  args x, out\n  block entry\n");
    for c in 0..5 {
        for e in ["pe", "act", "dve", "pool", "sp"] {
            p.push_str(&format!("    w_{e}_{c} = {e} sem_wait 1 value 1 core {c}\n"));
        }
    }
    p.push_str("    a = dve add x[0..4], x[0..4] -> out[0..4] core 0 after w_dve_0\n");
    for c in 0..5 {
        p.push_str(&format!("    d{c} = sp dma x[0..4] -> s{c}[0..4] queue qSyncIO core {c}\n"));
    }
    std::fs::write(d.join("many.bir"), &p).unwrap();
    let o = lncsim(&d, &["run", "--no-times", "many.bir"]);
    let s = stdout(&o);
    assert_eq!(o.status.code(), Some(1), "{s}");
    let lines = deadlock_lines(&s);
    assert!(lines[0].contains("deadlock: "), "{lines:#?}");
    let waiters = &lines[1..];
    assert_eq!(waiters.len(), 21, "20 waiters and the count: {lines:#?}");
    assert!(waiters[..20].iter().all(|l| l.contains("waits for")), "{lines:#?}");
    let head = lines[0].rsplit_once("deadlock: ").unwrap().1;
    let n: usize = head.split(' ').next().unwrap().parse().unwrap();
    assert!(n > 20, "{}", lines[0]);
    assert_eq!(waiters[20], format!("        ... and {} more", n - 20));
    // Every root (nobody can signal it) comes before any waiter somebody could still signal.
    let first_non_root = waiters.iter().position(|l| l.contains("could signal:")).unwrap_or(20);
    assert!(waiters[first_non_root..20].iter().all(|l| l.contains("could signal:")), "{lines:#?}");
    assert!(waiters[0].contains("`w_") && waiters[0].contains("at many.bir:"), "{}", waiters[0]);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn every_violation_is_an_instant_event_on_its_track_in_the_trace() {
    let d = dir("trace");
    std::fs::write(d.join("sem.bir"), SEM).unwrap();
    let o = lncsim(&d, &["run", "--no-times", "sem.bir", "--trace", "t.json"]);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(d.join("t.json")).unwrap()).unwrap();
    let marks: Vec<&serde_json::Value> =
        v["traceEvents"].as_array().unwrap().iter().filter(|e| e["cat"] == "violation").collect();
    // One per waiter, each on its engine's track of core index 0 (pid 1): dve (2) and sp (4).
    let mut tracks: Vec<(u64, u64)> =
        marks.iter().map(|m| (m["pid"].as_u64().unwrap(), m["tid"].as_u64().unwrap())).collect();
    tracks.sort();
    assert_eq!(tracks, vec![(1, 2), (1, 4)], "{marks:?}");
    for m in &marks {
        assert_eq!((&m["ph"], &m["s"], &m["name"]), (&"i".into(), &"t".into(), &"deadlock".into()), "{m}");
        assert!(m["ts"].is_number(), "{m}");
    }
    let dve = marks.iter().find(|m| m["tid"] == 2).unwrap();
    assert!(dve["args"]["violation"].as_str().unwrap().contains("`w0` at sem.bir:9"), "{dve}");
    // The semaphore wait span is named by the program's semaphore too.
    let waits: Vec<&str> = v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "wait")
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert!(waits.iter().all(|w| !w.contains("sem 5")), "{waits:?}");
    // A finding of the whole run (the event budget) is a global instant.
    let o = lncsim(&d, &["run", "--no-times", "sem.bir", "--events-max", "1", "--trace", "b.json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(d.join("b.json")).unwrap()).unwrap();
    let budget: Vec<&serde_json::Value> =
        v["traceEvents"].as_array().unwrap().iter().filter(|e| e["name"] == "event-budget").collect();
    assert_eq!(budget.len(), 1, "{}", stdout(&o));
    assert_eq!((&budget[0]["ph"], &budget[0]["s"], &budget[0]["cat"]), (&"i".into(), &"g".into(), &"violation".into()));
    std::fs::remove_dir_all(&d).unwrap();
}
