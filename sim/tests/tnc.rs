#![allow(clippy::unwrap_used)]
//! The TNC scenario runner: concurrent loaders under seeded schedules keep
//! the cache's liveness and safety; the planted lost wake-up is a liveness failure.

use lncsim_model::marks::Recorder;
use lncsim_sim::tnc::{LoaderSpec, TncScenario, TncViolation};
use lncsim_tnc::{CacheState, Role, TncBug, TncPath};

fn scenario() -> TncScenario {
    let l = |uuid: u8, arrive_ns: u64, parse_fails: bool| LoaderSpec { uuid: [uuid; 16], arrive_ns, parse_fails };
    // A creates and fails; B and C wait for A; D has another UUID and arrives while A parses.
    TncScenario {
        seed: 1,
        loaders: vec![l(1, 0, true), l(1, 100, false), l(1, 200, false), l(2, 300, false)],
        bug: None,
        steps_max: 10_000,
    }
}

#[test]
fn waiters_of_a_failed_creator_proceed_on_their_own() {
    let rec = Recorder::start();
    let r = scenario().run();
    assert!(r.passed(), "{r}");
    assert_eq!(r.loaders[0].paths, vec![TncPath::FirstWorker]);
    assert!(r.loaders[0].parse_failed);
    for w in &r.loaders[1..3] {
        assert_eq!(w.paths, vec![TncPath::Waiting, TncPath::CreationFailedDoMyOwn]);
        assert_eq!(w.role, Some(Role::Independent));
    }
    assert_eq!(r.loaders[3].paths, vec![TncPath::OtherUuid]);
    assert!(r.loaders.iter().all(|l| l.finished_at.is_some()));
    assert_eq!((r.final_state.cache_state, r.final_state.packed_ref_count), (CacheState::Uninit, 0));
    assert!(rec.hits("tnc.resume.creation_failed_do_my_own") >= 2);
    assert!(rec.hits("sim.tnc.creator_failed") == 1);
}

#[test]
fn the_planted_lost_wake_up_is_a_liveness_failure() {
    let rec = Recorder::start();
    let r = scenario().with_bug(TncBug::NoWakeOnFailure).run();
    assert!(rec.hits("sim.tnc.liveness_failure") > 0);
    let [TncViolation::Liveness { blocked, wakeups_posted }] = &r.violations[..] else { panic!("{r}") };
    let who: Vec<usize> = blocked.iter().map(|b| b.0).collect();
    assert_eq!(who, vec![1, 2]);
    assert_eq!(*wakeups_posted, 0);
    assert!(blocked.iter().all(|b| b.1 == Some(TncPath::Waiting)));
    assert!(r.violations[0].to_string().contains("TNC liveness failure: loader 1 (waiting for cache creation"));
}

#[test]
fn seeded_swarms_of_loaders_keep_every_invariant_and_the_bug_is_always_caught() {
    let mut failed_with_waiters = 0;
    for seed in 0..300u64 {
        let k = 2 + (seed % 6) as usize;
        let uuids = 1 + (seed % 3) as usize;
        let sc = TncScenario::random(seed, k, uuids, 300);
        let ok = sc.run();
        assert!(ok.passed(), "seed {seed}: {ok}");
        assert_eq!(ok.final_state.cache_state, CacheState::Uninit);
        // Different UUIDs never wait: every waiter waited for its own UUID's creator.
        for l in ok.loaders.iter().filter(|l| l.paths.first() == Some(&TncPath::Waiting)) {
            assert!(ok.creator_failed.contains_key(&l.generation));
        }
        let bad = sc.clone().with_bug(TncBug::NoWakeOnFailure).run();
        // The bug bites exactly when a creator failed while someone waited for it.
        let bites = ok
            .loaders
            .iter()
            .any(|l| l.paths.first() == Some(&TncPath::Waiting) && ok.creator_failed.get(&l.generation) == Some(&true));
        if bites {
            failed_with_waiters += 1;
            assert!(matches!(bad.violations.first(), Some(TncViolation::Liveness { .. })), "seed {seed}: {bad}");
        } else {
            assert!(bad.passed(), "seed {seed}: {bad}");
        }
        assert_eq!(sc.run().trace_hash, ok.trace_hash, "same seed, same schedule");
    }
    assert!(failed_with_waiters >= 20, "the sweep exercises the bug: {failed_with_waiters}");
}
