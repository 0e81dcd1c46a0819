//! `lncsim swarm` as a CI job uses it: JUnit, shards, a time budget, Ctrl-C,
//! failures grouped by signature, the coverage table, exit codes.
#![allow(clippy::unwrap_used)]

mod common;

use std::process::{Output, Stdio};
use std::time::Duration;

fn lncsim(args: &[&str]) -> Output {
    common::lncsim().args(args).output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn temp(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("lncsim-swarm-{}-{name}", std::process::id()))
}

#[test]
fn junit_has_one_case_per_seed_and_a_parser_reads_it() {
    let path = temp("junit.xml");
    let o = lncsim(&["swarm", "--seeds", "0..200", "--jobs", "2", "--junit", path.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stdout(&o));
    let xml = std::fs::read_to_string(&path).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let cases: Vec<_> = doc.descendants().filter(|n| n.has_tag_name("testcase")).collect();
    assert_eq!(cases.len(), 200);
    assert!(cases.iter().all(|c| c.attribute("classname") == Some("lncsim.swarm")));
    assert!(cases[17].attribute("name").unwrap().starts_with("seed 17 ("));
    let suite = doc.descendants().find(|n| n.has_tag_name("testsuite")).unwrap();
    assert_eq!(suite.attribute("tests"), Some("200"));
    assert_eq!(suite.attribute("failures"), Some("0"));
    let _ = std::fs::remove_file(path);
}

#[test]
fn a_failing_seed_carries_its_failure_and_replay_in_junit() {
    let path = temp("junit-fail.xml");
    let o = lncsim(&["swarm", "--seeds", "0..3", "--plant", "drop-sem-signal", "--junit", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let xml = std::fs::read_to_string(&path).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let failures: Vec<_> = doc.descendants().filter(|n| n.has_tag_name("failure")).collect();
    assert_eq!(failures.len(), 3, "{xml}");
    let text = failures[0].text().unwrap();
    assert!(text.contains("replay: lncsim run --seed 0 "), "{text}");
    assert!(failures[0].attribute("message").unwrap().starts_with("barriers / deadlock"), "{xml}");
    let _ = std::fs::remove_file(path);
}

#[test]
fn identical_failures_are_one_group_with_one_replay() {
    let o = lncsim(&["swarm", "--seeds", "0..6", "--plant", "drop-sem-signal"]);
    assert_eq!(o.status.code(), Some(1));
    let s = stdout(&o);
    assert!(s.contains("failures by signature"), "{s}");
    assert!(s.contains("     6 seeds  barriers / deadlock"), "{s}");
    let groups: usize = s
        .lines()
        .find_map(|l| l.strip_prefix("failures by signature ("))
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(s.matches("replay: ").count(), groups, "one replay per group: {s}");
    assert!(!s.contains("replay: lncsim run --seed 1 "), "one replay per group: {s}");
    assert!(s.contains("failing seeds: 0, 1, 2, 3, 4, 5"), "{s}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("lncsim: error: 6 of 6 seeds failed"), "{err}");
}

#[test]
fn shards_split_a_range_and_json_mixes_are_structured() {
    let o = lncsim(&["swarm", "--seeds", "10..30", "--shard", "1/4", "--json"]);
    assert!(o.status.success(), "{}", stdout(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["runs"], 5);
    assert_eq!(v["shard"]["index"], 1);
    assert_eq!(v["determinism_checked"], false);
    let s = &v["summary"];
    let cores: u64 = s["features"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, _)| k.starts_with("cores="))
        .map(|(_, n)| n.as_u64().unwrap())
        .sum();
    assert_eq!(cores, 5, "every seed drew a core count: {s}");
    assert!(s["seed_contract"]["total"].as_u64().unwrap() > 50);
    assert!(s["seed_contract"]["hit"].as_u64().unwrap() > 10);
    let o = lncsim(&["swarm", "--seeds", "10..30", "--shard", "1/4", "--plant", "drop-sem-signal", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let seeds: Vec<u64> = v["failing"].as_array().unwrap().iter().map(|f| f["seed"].as_u64().unwrap()).collect();
    assert_eq!(seeds, vec![11, 15, 19, 23, 27]);
    let mix = &v["failing"][0]["mix"];
    assert!(mix["cores"].is_u64() && mix["jitter"].is_boolean() && mix["size"].is_string(), "{mix}");
}

#[test]
fn the_summary_has_the_coverage_table_and_says_whether_determinism_was_checked() {
    let o = lncsim(&["swarm", "--seeds", "0..12", "--check-determinism"]);
    assert!(o.status.success(), "{}", stdout(&o));
    let s = stdout(&o);
    for needle in [
        "coverage: features drawn (seeds of 12)",
        "coverage: faults (requested -> fired)",
        "coverage: checks (pass / fail / not exercised)",
        "coverage: seed contract (",
        "never hit in 000 §",
        "determinism: checked (every seed ran twice): 0 mismatch(es)",
    ] {
        assert!(s.contains(needle), "{needle}: {s}");
    }
    let o = lncsim(&["swarm", "--seeds", "0..2"]);
    assert!(stdout(&o).contains("determinism: not checked"));
}

#[test]
fn bad_campaigns_are_usage_errors() {
    for (args, needle) in [
        (&["swarm", "--seeds", "0..18446744073709551615"][..], "seeds would run for years"),
        (&["swarm", "--seeds", "0..3", "--shard", "5/8"], "holds no seed"),
    ] {
        let o = lncsim(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(needle), "{err}");
    }
    let o = lncsim(&["swarm", "--seeds", "0..3", "--shard", "8/8"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn a_time_budget_stops_a_long_campaign_and_reports_what_ran() {
    let o = lncsim(&["swarm", "--seeds", "0..18446744073709551615", "--time-budget", "1", "--jobs", "1", "--json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let runs = v["runs"].as_u64().unwrap();
    assert!(runs >= 1, "{v}");
    assert_eq!(v["stopped"], format!("time budget of 1 s reached: {runs} of 18446744073709551615 seeds ran"));
}

#[cfg(unix)]
#[test]
fn ctrl_c_prints_the_partial_summary_and_exits_130() {
    let child = common::lncsim()
        .args(["swarm", "--seeds", "0..1000000", "--jobs", "1", "--plant", "drop-sem-signal"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(2500));
    let killed = std::process::Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(killed.success());
    let o = child.wait_with_output().unwrap();
    let s = stdout(&o);
    assert_eq!(o.status.code(), Some(130), "{s}");
    assert!(s.starts_with("interrupted: "), "{s}");
    assert!(s.contains("seeds  barriers / deadlock"), "the failures so far are kept: {s}");
    assert!(s.contains("replay: lncsim run --seed 0 "), "{s}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("lncsim: error: interrupted after "), "{err}");
}

/// Issue 12 section 4: the swarm's mixes draw the features that reach each
/// seed contract's end-to-end check, and the coverage table counts each of
/// those checks exercised (passed) on a clean toolchain.
#[test]
fn the_coverage_table_counts_every_contract_check_exercised() {
    let o = lncsim(&["swarm", "--seeds", "0..16", "--cores-max", "4", "--json"]);
    assert!(o.status.success(), "{}", stdout(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let s = &v["summary"];
    for f in ["placed-shared", "unflagged-barriers", "sem-pool", "reloads"] {
        assert!(s["features"][f].as_u64().unwrap_or(0) >= 2, "feature {f}: {}", s["features"]);
    }
    for check in [
        "every core's copy of a shared tensor has one (address, partition, bank), the program's",
        "link: barriers flagged before linking renumbered in seed order, unflagged ones keep their ids",
        "HBM accounting (shared bytes once) equals the loaded tensors' footprint on the device",
        "registry: no H_NN or H_MODEL handed out twice in a run (reloads around the asymmetric S0 edge)",
    ] {
        let c = &s["checks"][check];
        assert!(c["pass"].as_u64().unwrap_or(0) >= 2, "{check}: {c}");
        assert_eq!(c["fail"], 0, "{check}: {c}");
    }
}
