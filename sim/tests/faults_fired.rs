//! Requested faults say whether they fired: a fault that cannot fire is "not
//! exercised", never a pass, and a requested stall lands where it changes
//! the schedule (issue 12, section 1).
#![allow(clippy::unwrap_used)]

use lncsim_model::program::SizeClass;
use lncsim_sim::flow::{CheckResult, LoadFault, RunConfig, run};

const FAULTY_LOAD: &str = "a faulty load fails cleanly: nothing allocated, registered or claimed";
const SIM_FAULTS: &str = "requested simulator faults fired (stall, DMA spikes)";

fn result<'a>(r: &'a lncsim_sim::flow::RunReport, name: &str) -> &'a CheckResult {
    &r.checks.iter().find(|c| c.name == name).unwrap().result
}

#[test]
fn a_load_fault_beyond_every_allocation_is_not_exercised() {
    let mut cfg = RunConfig::generated(0, 4, SizeClass::Small);
    cfg.faults.load = Some(LoadFault::Alloc(999_999));
    let r = run(&cfg);
    assert!(
        matches!(result(&r, FAULTY_LOAD), CheckResult::NotExercised(w) if w.starts_with("load-alloc=999999 never fired: the load made ")),
        "{r}"
    );
    assert!(r.passed(), "not exercised is not a failure: {r}");
    assert!(r.faults.iter().any(|f| f.starts_with("not fired: load-alloc=999999")), "{:?}", r.faults);
    assert!(r.to_string().contains("not exercised: load-alloc=999999 never fired"));
    assert!(r.to_string().contains("1 not exercised"));
}

#[test]
fn a_load_fault_that_fires_is_listed_and_checked() {
    let mut cfg = RunConfig::generated(0, 4, SizeClass::Small);
    cfg.faults.load = Some(LoadFault::Alloc(2));
    let r = run(&cfg);
    assert_eq!(result(&r, FAULTY_LOAD), &CheckResult::Pass, "{r}");
    assert!(r.faults.iter().any(|f| f.starts_with("load-alloc=2 fired: ")), "{:?}", r.faults);
}

#[test]
fn requested_stalls_and_spikes_fire_and_change_the_schedule_on_most_seeds() {
    let mut changed = 0;
    for seed in 0..20 {
        let base = run(&RunConfig::generated(seed, 4, SizeClass::Small));
        let mut cfg = RunConfig::generated(seed, 4, SizeClass::Small);
        cfg.faults.stall = true;
        cfg.faults.dma_spikes = true;
        let r = run(&cfg);
        assert!(r.passed(), "faults move time only: {r}");
        assert_eq!(result(&r, SIM_FAULTS), &CheckResult::Pass, "seed {seed}: {r}");
        assert!(r.faults.iter().any(|f| f.starts_with("stall of core ")), "seed {seed}: {:?}", r.faults);
        assert!(r.faults.iter().any(|f| f.starts_with("DMA spike of +")), "seed {seed}: {:?}", r.faults);
        if r.trace_hash != base.trace_hash {
            changed += 1;
        }
    }
    assert!(changed >= 18, "the faults changed the schedule on only {changed} of 20 seeds");
}

#[test]
fn without_requested_faults_there_is_no_fault_verdict() {
    let r = run(&RunConfig::generated(1, 2, SizeClass::Small));
    assert!(r.checks.iter().all(|c| c.name != SIM_FAULTS && c.name != FAULTY_LOAD));
    assert!(r.faults.is_empty());
}

const SHARED: &str = "every core's access to a shared tensor hits one address";
const BARRIERS: &str = "barriers: no slot collision, every group complete, no deadlock";

#[test]
fn the_run_time_equalization_check_says_when_it_compared_nothing() {
    // One core: no other core's view of a shared tensor (its completion barrier still runs).
    let r = run(&RunConfig::generated(0, 1, SizeClass::Small));
    assert!(r.passed(), "{r}");
    assert!(
        matches!(result(&r, SHARED), CheckResult::NotExercised(w) if w.contains("no access went through another core's var")),
        "{r}"
    );
    assert_eq!(result(&r, BARRIERS), &CheckResult::Pass, "{r}");
    // Four cores with handoffs: both compared something, and passed.
    let r = run(&RunConfig::generated(0, 4, SizeClass::Small));
    assert_eq!(result(&r, SHARED), &CheckResult::Pass, "{r}");
    assert_eq!(result(&r, BARRIERS), &CheckResult::Pass, "{r}");
}
