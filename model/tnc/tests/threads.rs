//! The thread-safe driver under real std threads (the loom build swaps the
//! primitives for loom's, which only run inside a loom model: hence not(loom)).
#![cfg(not(loom))]
#![allow(clippy::unwrap_used)]

use lncsim_tnc::{CREATOR_REF_COUNT, CacheState, Entry, Release, Role, TncCache, TncPath, Uuid};
use std::sync::Arc;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

/// Stands in for `neff_parse`: a value that names the NEFF.
fn parse(uuid: Uuid) -> Arc<u64> {
    Arc::new(u64::from(uuid[0]) * 1000 + u64::from(uuid[15]))
}

fn uuid(n: u8) -> Uuid {
    let mut u = [0; 16];
    u[0] = n;
    u[15] = n.wrapping_mul(3);
    u
}

fn assert_uninit(cache: &TncCache<Arc<u64>>) {
    let s = cache.snapshot();
    assert_eq!((s.cache_state, s.packed_ref_count), (CacheState::Uninit, 0));
    assert_eq!((s.pending_wait, s.wakeups_posted, s.cached), (0, 0, false));
}

/// One loader: enter, parse if it must, release at the end of its load (the S5 tail). `Err` is the
/// failed creator's own error.
fn load(cache: &TncCache<Arc<u64>>, id: Uuid, creator_fails: bool) -> (TncPath, Result<u64, ()>) {
    match cache.enter(id) {
        Entry::Creator(c) if creator_fails => {
            c.fail();
            (TncPath::FirstWorker, Err(()))
        }
        Entry::Creator(c) => {
            let mine = parse(id);
            let holder = c.complete(&mine);
            holder.release();
            (TncPath::FirstWorker, Ok(*mine))
        }
        Entry::Reuse { info, holder, path } => {
            holder.release();
            (path, Ok(*info))
        }
        Entry::Independent { path } => (path, Ok(*parse(id))),
    }
}

/// N threads of one UUID; the creator waits until all N hold a reference, so
/// the outcome is exact: one CREATOR, N-1 waiters.
fn all_wait_for_one_creator(n: usize, creator_fails: bool) -> Vec<(TncPath, Result<u64, ()>)> {
    let cache = TncCache::new();
    let id = uuid(7);
    let threads: Vec<_> = (0..n)
        .map(|_| {
            let cache = cache.clone();
            thread::spawn(move || match cache.enter(id) {
                Entry::Creator(c) => {
                    while cache.snapshot().ref_count() < n as u32 {
                        thread::yield_now();
                    }
                    assert_eq!(cache.snapshot().pending_wait, n as u32 - 1);
                    if creator_fails {
                        assert_eq!(c.fail(), Release::Held);
                        (TncPath::FirstWorker, Err(()))
                    } else {
                        let mine = parse(id);
                        c.complete(&mine).release();
                        (TncPath::FirstWorker, Ok(*mine))
                    }
                }
                Entry::Reuse { info, holder, path } => {
                    holder.release();
                    (path, Ok(*info))
                }
                Entry::Independent { path } => (path, Ok(*parse(id))),
            })
        })
        .collect();
    let out: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert_uninit(&cache);
    out
}

#[test]
fn many_threads_same_uuid_creator_succeeds() {
    let out = all_wait_for_one_creator(16, false);
    let creators = out.iter().filter(|(p, _)| *p == TncPath::FirstWorker).count();
    let reused = out.iter().filter(|(p, _)| *p == TncPath::UsingCacheAfterWait).count();
    assert_eq!((creators, reused), (1, 15));
    assert!(out.iter().all(|(_, r)| *r == Ok(*parse(uuid(7)))));
}

#[test]
fn many_threads_same_uuid_creator_fails_and_waiters_do_their_own() {
    let out = all_wait_for_one_creator(16, true);
    let failed = out.iter().filter(|(_, r)| r.is_err()).count();
    let own = out.iter().filter(|(p, r)| *p == TncPath::CreationFailedDoMyOwn && *r == Ok(*parse(uuid(7)))).count();
    assert_eq!((failed, own), (1, 15));
}

#[test]
fn free_running_loaders_same_and_different_uuids() {
    let cache = TncCache::new();
    let threads: Vec<_> = (0..8u8)
        .map(|t| {
            let cache = cache.clone();
            thread::spawn(move || {
                let mut roles = [0usize; 3];
                for i in 0..300u32 {
                    // Half the threads share one NEFF; every 7th creation fails.
                    let id = if t % 2 == 0 { uuid(1) } else { uuid(10 + t) };
                    let fails = (i + u32::from(t)) % 7 == 0;
                    let (path, got) = load(&cache, id, fails);
                    match path.role().unwrap() {
                        Role::Creator => roles[0] += 1,
                        Role::Reuse => roles[1] += 1,
                        Role::Independent => roles[2] += 1,
                    }
                    assert!(got == Ok(*parse(id)) || (got.is_err() && fails));
                }
                roles
            })
        })
        .collect();
    let roles: Vec<[usize; 3]> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert_uninit(&cache);
    assert!(roles.iter().all(|r| r.iter().sum::<usize>() == 300));
    // An odd thread is the only loader of its NEFF and releases before it
    // loads again: it never finds its NEFF cached (a cache that ignored the
    // UUID would hand it another NEFF's slot).
    for (t, r) in roles.iter().enumerate().filter(|(t, _)| t % 2 == 1) {
        assert_eq!(r[1], 0, "thread {t} reused a parse of a NEFF nobody else loads: {r:?}");
    }
}

#[test]
fn a_different_uuid_never_waits_and_never_evicts() {
    let cache: TncCache<Arc<u64>> = TncCache::new();
    let Entry::Creator(creator) = cache.enter(uuid(1)) else { panic!("first loader is the creator") };
    // Another NEFF while PENDING: answered at once (a wait would time out here).
    let before = cache.snapshot();
    let (tx, rx) = mpsc::channel();
    let other = cache.clone();
    thread::spawn(move || tx.send(other.enter(uuid(2)).path()).unwrap());
    let path = rx.recv_timeout(Duration::from_secs(20)).unwrap();
    assert_eq!(path, TncPath::OtherUuid);
    assert_eq!(cache.snapshot(), before);
    assert_eq!(before.packed_ref_count, CREATOR_REF_COUNT);
    // And while READY.
    let holder = creator.complete(&parse(uuid(1)));
    let before = cache.snapshot();
    assert_eq!(cache.enter(uuid(2)).path(), TncPath::OtherUuid);
    assert_eq!(cache.snapshot(), before);
    assert_eq!(before.uuid, uuid(1));
    assert_eq!(holder.release(), Release::Freed);
    assert_uninit(&cache);
}

#[test]
fn dropped_guards_fail_and_release() {
    let cache: TncCache<Arc<u64>> = TncCache::new();
    let Entry::Creator(creator) = cache.enter(uuid(3)) else { panic!() };
    let waiter = {
        let cache = cache.clone();
        thread::spawn(move || cache.enter(uuid(3)).path())
    };
    while cache.snapshot().pending_wait == 0 {
        thread::yield_now();
    }
    drop(creator); // an early `?` return in the creator's loader
    assert_eq!(waiter.join().unwrap(), TncPath::CreationFailedDoMyOwn);
    assert_uninit(&cache);
    let Entry::Creator(creator) = cache.enter(uuid(3)) else { panic!() };
    let holder = creator.complete(&parse(uuid(3)));
    let Entry::Reuse { info, holder: h2, .. } = cache.enter(uuid(3)) else { panic!() };
    assert_eq!(*info, *parse(uuid(3)));
    drop(h2);
    drop(holder);
    assert_uninit(&cache);
}
