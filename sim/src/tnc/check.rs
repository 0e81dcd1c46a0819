//! The TNC liveness and safety checks over what a scenario observed
//! (DESIGN.md invariant 4), independent of the runner's stepping logic:
//! - on every `enter`: a loader whose UUID differs from a busy slot's never
//!   waits and never changes the slot (no eviction); waiting happens only on a
//!   PENDING slot of the same UUID;
//! - after the run: every loader finished; every waiter whose CREATOR failed
//!   proceeded on its own ("cache creation failed, do my own"); every waiter
//!   whose CREATOR succeeded reused the cache; the slot is UNINIT with packed
//!   ref count 0 and no wake-ups owed.

use std::collections::BTreeMap;
use std::fmt;

use lncsim_tnc::{CacheState, TncPath, TncSnapshot, Uuid};

use super::outcome::LoaderOutcome;

/// A TNC check that failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TncViolation {
    /// Loaders that never finished (blocked waiters: a lost wake-up).
    Liveness {
        /// (loader index, its last path, the generation it waited for).
        blocked: Vec<(usize, Option<TncPath>, u64)>,
        /// Wake-ups posted and not consumed at the end.
        wakeups_posted: u32,
    },
    /// A loader of another UUID than the busy slot's was made to wait.
    OtherUuidWaited(usize),
    /// A loader of another UUID changed the slot.
    OtherUuidEvicted(usize),
    /// A loader waited on a slot that was not PENDING with its UUID.
    WaitWithoutPending(usize),
    /// A waiter did not take the branch its CREATOR's outcome calls for.
    WaiterPath {
        /// The waiter.
        loader: usize,
        /// Whether its CREATOR failed.
        creator_failed: bool,
        /// The branch it took after waiting.
        path: Option<TncPath>,
    },
    /// After every loader finished the slot is not back to UNINIT with ref count 0.
    SlotNotReturned(TncSnapshot),
    /// The state machine refused a step.
    StepRefused(String),
    /// The run was cut off.
    StepBudget(u64),
}

impl fmt::Display for TncViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TncViolation::Liveness { blocked, wakeups_posted } => {
                let b: Vec<String> = blocked
                    .iter()
                    .map(|(i, p, g)| {
                        format!("loader {i} ({}, generation {g})", p.map_or("not entered", |p| p.message()))
                    })
                    .collect();
                write!(f, "TNC liveness failure: {} never finish, {wakeups_posted} wake-ups posted", b.join(", "))
            }
            TncViolation::OtherUuidWaited(i) => write!(f, "loader {i} waits on a slot holding another UUID"),
            TncViolation::OtherUuidEvicted(i) => write!(f, "loader {i} of another UUID changed the busy slot"),
            TncViolation::WaitWithoutPending(i) => {
                write!(f, "loader {i} waits although the slot is not PENDING with its UUID")
            }
            TncViolation::WaiterPath { loader, creator_failed, path } => write!(
                f,
                "waiter {loader}: creator {} but it took `{}`",
                if *creator_failed { "failed" } else { "succeeded" },
                path.map_or("nothing", |p| p.message())
            ),
            TncViolation::SlotNotReturned(s) => write!(
                f,
                "slot not returned: state {:?}, packed ref count {:#x}, pending waits {}, wake-ups {}",
                s.cache_state, s.packed_ref_count, s.pending_wait, s.wakeups_posted
            ),
            TncViolation::StepRefused(e) => write!(f, "step refused: {e}"),
            TncViolation::StepBudget(n) => write!(f, "TNC scenario cut off after {n} steps"),
        }
    }
}

/// Checks one `enter` by loader `i` with `uuid` that took `path`, given the slot before and after.
pub fn on_enter(i: usize, uuid: Uuid, path: TncPath, before: &TncSnapshot, after: &TncSnapshot) -> Vec<TncViolation> {
    let mut out = Vec::new();
    let busy_other = before.cache_state != CacheState::Uninit && before.uuid != uuid;
    if busy_other {
        if path == TncPath::Waiting {
            out.push(TncViolation::OtherUuidWaited(i));
        }
        let key = |s: &TncSnapshot| (s.cache_state, s.uuid, s.packed_ref_count, s.pending_wait, s.generation);
        if key(before) != key(after) {
            out.push(TncViolation::OtherUuidEvicted(i));
        }
    }
    if path == TncPath::Waiting && !(before.cache_state == CacheState::Pending && before.uuid == uuid) {
        out.push(TncViolation::WaitWithoutPending(i));
    }
    out
}

/// Checks the end of a run.
pub fn after_run(
    loaders: &[LoaderOutcome],
    end: &TncSnapshot,
    creator_failed: &BTreeMap<u64, bool>,
) -> Vec<TncViolation> {
    let mut out = Vec::new();
    let blocked: Vec<(usize, Option<TncPath>, u64)> = loaders
        .iter()
        .enumerate()
        .filter(|(_, l)| l.finished_at.is_none())
        .map(|(i, l)| (i, l.paths.last().copied(), l.generation))
        .collect();
    if !blocked.is_empty() {
        lncsim_model::marks::hit("sim.tnc.liveness_failure");
        out.push(TncViolation::Liveness { blocked, wakeups_posted: end.wakeups_posted });
    }
    for (i, l) in loaders.iter().enumerate() {
        if l.paths.first() != Some(&TncPath::Waiting) || l.finished_at.is_none() {
            continue;
        }
        let failed = creator_failed.get(&l.generation).copied().unwrap_or(false);
        let want = if failed { TncPath::CreationFailedDoMyOwn } else { TncPath::UsingCacheAfterWait };
        let path = l.paths.get(1).copied();
        if path != Some(want) {
            out.push(TncViolation::WaiterPath { loader: i, creator_failed: failed, path });
        }
    }
    let all_done = loaders.iter().all(|l| l.finished_at.is_some());
    let clean = end.cache_state == CacheState::Uninit
        && end.packed_ref_count == 0
        && end.pending_wait == 0
        && end.wakeups_posted == 0;
    if all_done && !clean {
        out.push(TncViolation::SlotNotReturned(*end));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use lncsim_tnc::Role;

    fn snap(cache_state: CacheState, uuid: u8, packed_ref_count: u64) -> TncSnapshot {
        TncSnapshot {
            cache_state,
            uuid: [uuid; 16],
            packed_ref_count,
            pending_wait: 0,
            wakeups_posted: 0,
            generation: 1,
            cached: cache_state == CacheState::Ready,
        }
    }

    fn loader(paths: Vec<TncPath>, generation: u64, finished: bool) -> LoaderOutcome {
        LoaderOutcome {
            uuid: [1; 16],
            role: paths.last().and_then(|p| p.role()),
            paths,
            parse_failed: false,
            generation,
            finished_at: finished.then_some(10),
        }
    }

    #[test]
    fn broken_enters_are_reported() {
        let pending = snap(CacheState::Pending, 1, 0x1_0000_0001);
        // Another UUID made to wait, and the slot changed under it.
        let mut after = pending;
        after.packed_ref_count += 1;
        let v = on_enter(3, [2; 16], TncPath::Waiting, &pending, &after);
        assert!(v.contains(&TncViolation::OtherUuidWaited(3)));
        assert!(v.contains(&TncViolation::OtherUuidEvicted(3)));
        assert!(v.contains(&TncViolation::WaitWithoutPending(3)));
        // The same UUID waiting on a PENDING slot is fine.
        assert!(on_enter(4, [1; 16], TncPath::Waiting, &pending, &after).is_empty());
        // Another UUID proceeding independently without touching the slot is fine.
        assert!(on_enter(5, [2; 16], TncPath::OtherUuid, &pending, &pending).is_empty());
    }

    #[test]
    fn broken_ends_are_reported() {
        let failed: BTreeMap<u64, bool> = [(1, true), (2, false)].into_iter().collect();
        let clean = snap(CacheState::Uninit, 0, 0);
        let ok = vec![
            loader(vec![TncPath::FirstWorker], 1, true),
            loader(vec![TncPath::Waiting, TncPath::CreationFailedDoMyOwn], 1, true),
        ];
        assert!(after_run(&ok, &clean, &failed).is_empty());
        // A waiter of a failed creator that claims to reuse the cache.
        let wrong = vec![loader(vec![TncPath::Waiting, TncPath::UsingCacheAfterWait], 1, true)];
        assert_eq!(
            after_run(&wrong, &clean, &failed),
            vec![TncViolation::WaiterPath {
                loader: 0,
                creator_failed: true,
                path: Some(TncPath::UsingCacheAfterWait)
            }]
        );
        // A slot left READY with a reference.
        let held = snap(CacheState::Ready, 1, 1);
        assert_eq!(after_run(&ok, &held, &failed), vec![TncViolation::SlotNotReturned(held)]);
        // A waiter that never finished.
        let stuck = vec![loader(vec![TncPath::Waiting], 2, false)];
        let v = after_run(&stuck, &clean, &failed);
        assert!(matches!(&v[..], [TncViolation::Liveness { blocked, .. }] if blocked[0].0 == 0));
        assert_eq!(stuck[0].role, None::<Role>);
    }
}
