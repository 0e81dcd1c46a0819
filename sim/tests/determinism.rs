#![allow(clippy::unwrap_used)]
//! A run is a pure function of (device contents, images, config): same seed,
//! same trace hash and report; the trace opens as a Chrome trace.

mod support;

use std::collections::BTreeMap;

use lncsim_model::program::{GenConfig, SizeClass, generate};
use lncsim_sim::{FaultPlan, SimConfig};
use serde_json::Value;
use support::*;

fn cfg(seed: u64) -> SimConfig {
    let mut c = SimConfig::seeded(seed).with_jitter();
    c.faults = FaultPlan::random(seed, 4, 10_000);
    c
}

#[test]
fn same_seed_same_trace_hash_even_on_a_fresh_stage() {
    let program = generate(&GenConfig::new(21, 4, SizeClass::Small));
    let a = stage(&program, 21);
    let b = stage(&program, 21);
    let mut hashes = std::collections::BTreeSet::new();
    for seed in 0..8 {
        let (ra, oa) = a.run(cfg(seed));
        let (rb, ob) = b.run(cfg(seed));
        assert_eq!(ra.trace_hash, rb.trace_hash, "seed {seed}");
        assert_eq!((ra.time_ns, ra.events, ra.instructions), (rb.time_ns, rb.events, rb.instructions));
        assert_eq!(ra.violations, rb.violations);
        assert_eq!(oa, ob);
        hashes.insert(ra.trace_hash);
    }
    assert!(hashes.len() >= 6, "different seeds explore different schedules");
}

#[test]
fn the_chrome_trace_has_a_process_per_core_a_thread_per_engine_and_queue_and_barrier_flows() {
    let s = stage(&module(HANDOFF), 1);
    let (report, _) = s.run(SimConfig { trace: true, ..SimConfig::seeded(0) });
    let trace = report.trace.as_ref().unwrap();
    let mut bytes = Vec::new();
    trace.write_chrome(&mut bytes).unwrap();
    let v: Value = serde_json::from_slice(&bytes).unwrap();
    let events = v["traceEvents"].as_array().unwrap();
    let meta = |name: &str| -> BTreeMap<(u64, u64), String> {
        events
            .iter()
            .filter(|e| e["ph"] == "M" && e["name"] == name)
            .map(|e| {
                (
                    (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap_or(0)),
                    e["args"]["name"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    let procs = meta("process_name");
    assert_eq!(procs.values().cloned().collect::<Vec<_>>(), vec!["core 0 (tpb 0)", "core 1 (tpb 1)"]);
    let threads = meta("thread_name");
    for pid in [1, 2] {
        for (tid, name) in ["Pe", "Act", "Dve", "Pool", "Sp"].iter().enumerate() {
            assert_eq!(threads[&(pid, tid as u64)], *name);
        }
    }
    assert_eq!(threads[&(2, 16)], "dma qSyncIO");
    let spans: Vec<&Value> = events.iter().filter(|e| e["ph"] == "X").collect();
    assert!(spans.len() >= 5);
    for e in &spans {
        let key = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
        assert!(threads.contains_key(&key), "span on an unnamed track: {e}");
        assert!(e["ts"].as_f64().unwrap() >= 0.0 && e["dur"].as_f64().unwrap() >= 0.0);
    }
    assert!(spans.iter().any(|e| e["cat"] == "dma" && e["tid"] == 16 && e["args"]["bytes"] == 64));
    assert!(spans.iter().any(|e| e["name"] == "Add" && e["pid"] == 1 && e["tid"] == 2));
    let starts: Vec<&Value> = events.iter().filter(|e| e["ph"] == "s").collect();
    let ends: Vec<&Value> = events.iter().filter(|e| e["ph"] == "f").collect();
    assert_eq!(starts.len(), 1, "two participants: one flow");
    assert_eq!(ends.len(), 1);
    assert_eq!(starts[0]["id"], ends[0]["id"]);
    assert_eq!(ends[0]["bp"], "e");
    assert_ne!(starts[0]["pid"], ends[0]["pid"], "the flow crosses cores");
    assert_eq!(v["displayTimeUnit"], "ns");
}

#[test]
fn the_json_report_is_stable_and_complete() {
    let s = stage(&module(HANDOFF), 1);
    let (a, _) = s.run(SimConfig::seeded(3));
    let (b, _) = s.run(SimConfig::seeded(3));
    let (ja, jb) = (a.to_json().to_string(), b.to_json().to_string());
    assert_eq!(ja, jb);
    let v: Value = serde_json::from_str(&ja).unwrap();
    assert_eq!(v["passed"], true);
    assert_eq!(v["cores"].as_array().unwrap().len(), 2);
    assert_eq!(v["cores"][1]["queues"][0]["bytes"], 64);
    assert_eq!(v["trace_hash"], format!("{:016x}", a.trace_hash));
    assert_eq!(v["instructions"], a.instructions);
}
