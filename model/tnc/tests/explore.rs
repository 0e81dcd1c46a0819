//! Exhaustive interleavings of a few loaders over the pure state machine
//! (DESIGN.md invariant 4, without loom: every schedule of whole steps).
//!
//! The checker keeps its own account of who holds what and compares it with
//! the slot after every step; it shares no code with the state machine beyond
//! calling its public steps. A planted bug must make it report a deadlock.
#![allow(clippy::unwrap_used)]

use lncsim_tnc::{
    CREATOR_REF_COUNT, CacheState, CreatorToken, Enter, Holder, Resume, TncBug, TncPath, TncState, Uuid, WaitTicket,
};
use std::collections::BTreeSet;

#[derive(Clone, Copy)]
struct Spec {
    uuid: Uuid,
    /// When this loader becomes the CREATOR, its parse fails.
    creator_fails: bool,
}

#[derive(Debug)]
enum Next {
    Enter,
    Parse(CreatorToken),
    Resume(WaitTicket),
    Release(Holder),
    Done,
}

/// What a loader ended with: the cache's parse, its own, or its own failure.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Got {
    Cache(u32),
    Own(u32),
    CreatorFailed,
}

fn parse(uuid: Uuid) -> u32 {
    u32::from(uuid[15]) * 100 + 7
}

struct World {
    tnc: TncState<u32>,
    loaders: Vec<(Spec, Next, Option<Got>)>,
    paths: BTreeSet<TncPath>,
}

impl World {
    fn new(specs: &[Spec], bug: Option<TncBug>) -> Self {
        World {
            tnc: TncState::with_bug(bug),
            loaders: specs.iter().map(|s| (*s, Next::Enter, None)).collect(),
            paths: BTreeSet::new(),
        }
    }

    fn done(&self, i: usize) -> bool {
        matches!(self.loaders[i].1, Next::Done)
    }

    /// Runs loader `i`'s next step; false (and nothing changed) if it is blocked.
    fn step(&mut self, i: usize) -> bool {
        let spec = self.loaders[i].0;
        let next = std::mem::replace(&mut self.loaders[i].1, Next::Done);
        let (next, got) = match next {
            Next::Enter => {
                let before = self.tnc.snapshot();
                let e = self.tnc.enter(spec.uuid);
                self.paths.insert(e.path());
                match e {
                    Enter::Creator(t) => (Next::Parse(t), None),
                    Enter::Reuse(v, h) => (Next::Release(h), Some(Got::Cache(v))),
                    Enter::Wait(t) => (Next::Resume(t), None),
                    Enter::Independent(path) => {
                        assert_eq!(self.tnc.snapshot(), before, "a bypass changes nothing");
                        let other = before.uuid != spec.uuid;
                        assert_eq!(path == TncPath::OtherUuid, other);
                        assert_eq!(path == TncPath::SlotFailed, !other);
                        (Next::Done, Some(Got::Own(parse(spec.uuid))))
                    }
                }
            }
            Next::Parse(t) if spec.creator_fails => {
                self.tnc.fail(t).unwrap();
                (Next::Done, Some(Got::CreatorFailed))
            }
            Next::Parse(t) => {
                let h = self.tnc.complete(t, parse(spec.uuid)).unwrap();
                (Next::Release(h), Some(Got::Own(parse(spec.uuid))))
            }
            Next::Resume(t) => match self.tnc.resume(t).unwrap() {
                Resume::Blocked(t) => {
                    self.loaders[i].1 = Next::Resume(t);
                    return false;
                }
                r => {
                    self.paths.insert(r.path());
                    match r {
                        Resume::Reuse(v, h) => (Next::Release(h), Some(Got::Cache(v))),
                        _ => (Next::Done, Some(Got::Own(parse(spec.uuid)))),
                    }
                }
            },
            Next::Release(h) => {
                self.tnc.release(h).unwrap();
                (Next::Done, None)
            }
            Next::Done => unreachable!("a done loader is never stepped"),
        };
        self.loaders[i].1 = next;
        if got.is_some() {
            self.loaders[i].2 = got;
        }
        self.check_account();
        true
    }

    /// The checker's own account of references against the slot's count.
    fn check_account(&self) {
        let expected: u64 = self
            .loaders
            .iter()
            .map(|(_, next, _)| match next {
                Next::Parse(_) => CREATOR_REF_COUNT,
                Next::Resume(_) | Next::Release(_) => 1,
                Next::Enter | Next::Done => 0,
            })
            .sum();
        let s = self.tnc.snapshot();
        assert_eq!(s.packed_ref_count, expected, "ref count vs holders");
        assert_eq!(s.cache_state == CacheState::Uninit, expected == 0);
        assert_eq!(s.cached, s.cache_state == CacheState::Ready);
        if s.cache_state == CacheState::Uninit {
            assert_eq!((s.pending_wait, s.wakeups_posted), (0, 0), "a freed slot owes no wake-ups");
        }
    }
}

#[derive(Default)]
struct Stats {
    schedules: u64,
    deadlocks: u64,
    paths: BTreeSet<TncPath>,
}

fn replay(specs: &[Spec], bug: Option<TncBug>, schedule: &[usize]) -> World {
    let mut w = World::new(specs, bug);
    for &i in schedule {
        assert!(w.step(i), "replay is deterministic");
    }
    w
}

fn explore(specs: &[Spec], bug: Option<TncBug>, prefix: &mut Vec<usize>, stats: &mut Stats) {
    let mut progressed = false;
    for i in 0..specs.len() {
        let mut w = replay(specs, bug, prefix);
        if w.done(i) || !w.step(i) {
            continue;
        }
        progressed = true;
        prefix.push(i);
        explore(specs, bug, prefix, stats);
        prefix.pop();
    }
    if progressed {
        return;
    }
    let w = replay(specs, bug, prefix);
    stats.paths.extend(w.paths.iter().copied());
    if !(0..specs.len()).all(|i| w.done(i)) {
        stats.deadlocks += 1;
        return;
    }
    stats.schedules += 1;
    let s = w.tnc.snapshot();
    assert_eq!((s.cache_state, s.packed_ref_count), (CacheState::Uninit, 0));
    assert_eq!((s.pending_wait, s.wakeups_posted), (0, 0));
    for (spec, _, got) in &w.loaders {
        match got.expect("every loader gets a parse result") {
            Got::Cache(v) | Got::Own(v) => assert_eq!(v, parse(spec.uuid)),
            Got::CreatorFailed => assert!(spec.creator_fails),
        }
    }
}

fn run(specs: &[Spec], bug: Option<TncBug>) -> Stats {
    let mut stats = Stats::default();
    explore(specs, bug, &mut Vec::new(), &mut stats);
    stats
}

const A: Uuid = [1; 16];
const B: Uuid = [2; 16];

fn ok(uuid: Uuid) -> Spec {
    Spec { uuid, creator_fails: false }
}

fn failing(uuid: Uuid) -> Spec {
    Spec { uuid, creator_fails: true }
}

#[test]
fn three_loaders_same_uuid_creator_succeeds() {
    let stats = run(&[ok(A), ok(A), ok(A)], None);
    assert_eq!(stats.deadlocks, 0);
    assert!(stats.schedules > 100, "{} schedules", stats.schedules);
    for p in [TncPath::UsingCache, TncPath::UsingCacheAfterWait] {
        assert!(stats.paths.contains(&p), "{p:?} never reached");
    }
}

#[test]
fn three_loaders_same_uuid_every_creator_fails() {
    let stats = run(&[failing(A), failing(A), failing(A)], None);
    assert_eq!(stats.deadlocks, 0);
    for p in [TncPath::CreationFailedDoMyOwn, TncPath::SlotFailed] {
        assert!(stats.paths.contains(&p), "{p:?} never reached");
    }
}

#[test]
fn four_mixed_loaders_reach_every_path_and_never_deadlock() {
    let stats = run(&[failing(A), ok(A), ok(A), ok(B)], None);
    assert_eq!(stats.deadlocks, 0);
    let all: BTreeSet<TncPath> = [
        TncPath::FirstWorker,
        TncPath::UsingCache,
        TncPath::Waiting,
        TncPath::UsingCacheAfterWait,
        TncPath::CreationFailedDoMyOwn,
        TncPath::OtherUuid,
        TncPath::SlotFailed,
    ]
    .into();
    assert_eq!(stats.paths, all);
    println!("4 mixed loaders: {} complete schedules", stats.schedules);
}

#[test]
fn the_checker_reports_the_planted_lost_wakeup() {
    let stats = run(&[failing(A), failing(A)], Some(TncBug::NoWakeOnFailure));
    assert!(stats.deadlocks > 0, "the planted bug must deadlock some schedule");
    let clean = run(&[failing(A), failing(A)], None);
    assert_eq!(clean.deadlocks, 0);
}
