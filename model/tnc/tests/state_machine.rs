//! Every transition of the pure TNC state machine (seed 002, Stage 1), with
//! ref counts, wake-up counts and the return to UNINIT.
#![allow(clippy::unwrap_used)]

use lncsim_tnc::{
    CREATOR_PENDING, CREATOR_REF_COUNT, CacheState, CreatorToken, Enter, Holder, Release, Resume, Role, TncBug,
    TncPath, TncState, Uuid, WaitTicket,
};

const A: Uuid = [0xA; 16];
const B: Uuid = {
    let mut b = [0xA; 16];
    b[15] = 0xB; // differs from A in the last byte only: the compare is 128-bit exact
    b
};

fn creator(tnc: &mut TncState<u32>, uuid: Uuid) -> CreatorToken {
    match tnc.enter(uuid) {
        Enter::Creator(t) => t,
        other => panic!("expected CREATOR, got {other:?}"),
    }
}

fn waiter(tnc: &mut TncState<u32>, uuid: Uuid) -> WaitTicket {
    match tnc.enter(uuid) {
        Enter::Wait(t) => t,
        other => panic!("expected Wait, got {other:?}"),
    }
}

fn reuse(tnc: &mut TncState<u32>, uuid: Uuid) -> (u32, Holder) {
    match tnc.enter(uuid) {
        Enter::Reuse(v, h) => (v, h),
        other => panic!("expected REUSE, got {other:?}"),
    }
}

fn assert_uninit(tnc: &TncState<u32>) {
    let s = tnc.snapshot();
    assert_eq!(s.cache_state, CacheState::Uninit);
    assert_eq!(s.packed_ref_count, 0);
    assert_eq!(s.pending_wait, 0);
    assert_eq!(s.wakeups_posted, 0);
    assert_eq!(s.uuid, [0; 16]);
    assert!(!s.cached && tnc.cached().is_none());
}

#[test]
fn states_have_the_seeds_numbers() {
    let n: Vec<u8> = [CacheState::Uninit, CacheState::Pending, CacheState::Ready, CacheState::Failed]
        .iter()
        .map(|s| s.as_u8())
        .collect();
    assert_eq!(n, [0, 1, 2, 3]);
    assert_eq!(CREATOR_REF_COUNT, 0x1_0000_0001);
}

#[test]
fn uninit_enter_makes_the_creator_and_pending() {
    let mut tnc = TncState::<u32>::new();
    assert_uninit(&tnc);
    let e = tnc.enter(A);
    assert_eq!(e.path(), TncPath::FirstWorker);
    assert_eq!(e.path().role(), Some(Role::Creator));
    let s = tnc.snapshot();
    assert_eq!(s.cache_state, CacheState::Pending);
    assert_eq!(s.packed_ref_count, 0x1_0000_0001);
    assert_eq!(tnc.ref_count(), 1);
    assert_eq!((s.uuid, s.generation, s.pending_wait), (A, 1, 0));
    let Enter::Creator(token) = e else { panic!() };
    assert_eq!(token.generation(), 1);
    let _ = tnc.fail(token);
}

#[test]
fn complete_without_waiters_then_release_returns_to_uninit() {
    let mut tnc = TncState::<u32>::new();
    let c = creator(&mut tnc, A);
    let h = tnc.complete(c, 5).unwrap();
    let s = tnc.snapshot();
    assert_eq!(s.cache_state, CacheState::Ready);
    assert_eq!(s.packed_ref_count, 1, "complete clears the high half only");
    assert_eq!(s.wakeups_posted, 0);
    assert_eq!(tnc.cached(), Some(&5));
    assert_eq!(tnc.release(h), Ok(Release::Freed));
    assert_uninit(&tnc);
}

#[test]
fn ready_same_uuid_reuses_and_the_last_release_frees() {
    let mut tnc = TncState::<u32>::new();
    let c = creator(&mut tnc, A);
    let hc = tnc.complete(c, 9).unwrap();
    let (v1, h1) = reuse(&mut tnc, A);
    let (v2, h2) = reuse(&mut tnc, A);
    assert_eq!((v1, v2), (9, 9));
    assert_eq!(tnc.packed_ref_count(), 3);
    // The creator releases first: the slot stays READY for the others.
    assert_eq!(tnc.release(hc), Ok(Release::Held));
    assert_eq!(tnc.release(h2), Ok(Release::Held));
    assert_eq!(tnc.cache_state(), CacheState::Ready);
    assert_eq!(tnc.packed_ref_count(), 1);
    assert_eq!(tnc.release(h1), Ok(Release::Freed));
    assert_uninit(&tnc);
    // A new generation starts from scratch.
    let c = creator(&mut tnc, B);
    assert_eq!((tnc.generation(), tnc.uuid()), (2, B));
    assert_eq!(tnc.fail(c), Ok(Release::Freed));
}

#[test]
fn pending_same_uuid_waits_and_is_woken_by_complete() {
    let mut tnc = TncState::<u32>::new();
    let c = creator(&mut tnc, A);
    let w1 = waiter(&mut tnc, A);
    let w2 = waiter(&mut tnc, A);
    assert_eq!(tnc.packed_ref_count(), CREATOR_PENDING | 3);
    assert_eq!(tnc.pending_wait(), 2);
    // No wake-up yet: resume stays blocked and changes nothing.
    let before = tnc.snapshot();
    let w1 = match tnc.resume(w1).unwrap() {
        Resume::Blocked(t) => t,
        other => panic!("{other:?}"),
    };
    assert_eq!(tnc.snapshot(), before);
    let hc = tnc.complete(c, 11).unwrap();
    assert_eq!(tnc.wakeups_posted(), 2, "one sem_post per waiter");
    assert_eq!(tnc.pending_wait(), 0);
    assert_eq!(tnc.packed_ref_count(), 3);
    let r1 = tnc.resume(w1).unwrap();
    assert_eq!(r1.path(), TncPath::UsingCacheAfterWait);
    let Resume::Reuse(v1, h1) = r1 else { panic!() };
    let Resume::Reuse(v2, h2) = tnc.resume(w2).unwrap() else { panic!() };
    assert_eq!((v1, v2, tnc.wakeups_posted()), (11, 11, 0));
    assert_eq!(tnc.packed_ref_count(), 3, "REUSE after wait keeps the reference");
    for h in [h1, hc] {
        assert_eq!(tnc.release(h), Ok(Release::Held));
    }
    assert_eq!(tnc.release(h2), Ok(Release::Freed));
    assert_uninit(&tnc);
}

#[test]
fn fail_wakes_every_waiter_and_they_proceed_independent() {
    let mut tnc = TncState::<u32>::new();
    let c = creator(&mut tnc, A);
    let w1 = waiter(&mut tnc, A);
    let w2 = waiter(&mut tnc, A);
    assert_eq!(tnc.fail(c), Ok(Release::Held));
    let s = tnc.snapshot();
    assert_eq!(s.cache_state, CacheState::Failed);
    assert_eq!(s.packed_ref_count, 2, "the creator's reference is gone");
    assert_eq!((s.wakeups_posted, s.pending_wait), (2, 0));
    // A newcomer of the same UUID bypasses a FAILED slot, holding nothing.
    let e = tnc.enter(A);
    assert_eq!(e, Enter::Independent(TncPath::SlotFailed));
    assert_eq!(e.path().role(), Some(Role::Independent));
    assert_eq!(tnc.snapshot(), s);
    let r1 = tnc.resume(w1).unwrap();
    assert_eq!(r1.path(), TncPath::CreationFailedDoMyOwn);
    assert_eq!(r1, Resume::Independent(Release::Held));
    assert_eq!(tnc.packed_ref_count(), 1, "the woken waiter released its reference");
    assert_eq!(tnc.resume(w2).unwrap(), Resume::Independent(Release::Freed));
    assert_uninit(&tnc);
}

#[test]
fn fail_without_waiters_frees_at_once() {
    let mut tnc = TncState::<u32>::new();
    let c = creator(&mut tnc, A);
    assert_eq!(tnc.fail(c), Ok(Release::Freed));
    assert_uninit(&tnc);
    assert_eq!(tnc.generation(), 1);
}

#[test]
fn a_different_uuid_never_waits_and_never_evicts() {
    let mut tnc = TncState::<u32>::new();
    let check_bypass = |tnc: &mut TncState<u32>| {
        let before = tnc.snapshot();
        assert_eq!(tnc.enter(B), Enter::Independent(TncPath::OtherUuid));
        assert_eq!(tnc.snapshot(), before, "no reference taken, nothing evicted");
    };
    let c = creator(&mut tnc, A);
    let w = waiter(&mut tnc, A);
    check_bypass(&mut tnc); // PENDING
    let hc = tnc.complete(c, 1).unwrap();
    check_bypass(&mut tnc); // READY
    assert_eq!(tnc.cached(), Some(&1));
    let Resume::Reuse(_, hw) = tnc.resume(w).unwrap() else { panic!() };
    tnc.release(hc).unwrap();
    tnc.release(hw).unwrap();
    let c = creator(&mut tnc, A);
    let w = waiter(&mut tnc, A);
    tnc.fail(c).unwrap();
    check_bypass(&mut tnc); // FAILED
    assert_eq!(tnc.resume(w).unwrap(), Resume::Independent(Release::Freed));
    // UNINIT: any UUID becomes the creator.
    let c = creator(&mut tnc, B);
    tnc.fail(c).unwrap();
}

#[test]
fn planted_bug_no_wake_on_failure_strands_the_waiters() {
    let mut tnc = TncState::<u32>::with_bug(Some(TncBug::NoWakeOnFailure));
    assert_eq!(tnc.bug(), Some(TncBug::NoWakeOnFailure));
    let c = creator(&mut tnc, A);
    let mut w = waiter(&mut tnc, A);
    assert_eq!(tnc.fail(c), Ok(Release::Held));
    assert_eq!(tnc.wakeups_posted(), 0, "the bug skips the sem_post");
    for _ in 0..3 {
        w = match tnc.resume(w).unwrap() {
            Resume::Blocked(t) => t,
            other => panic!("the bug should strand the waiter, got {other:?}"),
        };
    }
    assert_eq!(tnc.cache_state(), CacheState::Failed);
    assert_eq!((tnc.ref_count(), tnc.pending_wait()), (1, 1));
}

#[test]
fn the_planted_bug_is_harmless_on_success() {
    let mut tnc = TncState::<u32>::with_bug(Some(TncBug::NoWakeOnFailure));
    let c = creator(&mut tnc, A);
    let w = waiter(&mut tnc, A);
    let hc = tnc.complete(c, 3).unwrap();
    let Resume::Reuse(3, hw) = tnc.resume(w).unwrap() else { panic!() };
    tnc.release(hc).unwrap();
    tnc.release(hw).unwrap();
    assert_uninit(&tnc);
}

#[test]
fn tokens_of_another_slot_are_refused_with_a_typed_error() {
    // Another generation: a creator token of slot `a` (generation 1) on a fresh slot.
    let mut a = TncState::<u32>::new();
    let ca = creator(&mut a, A);
    let mut fresh = TncState::<u32>::new();
    let err = fresh.complete(ca, 1).unwrap_err();
    assert_eq!((err.step, err.token_generation), ("complete", 1));
    assert_eq!((err.slot_generation, err.state), (0, CacheState::Uninit));
    assert!(err.to_string().starts_with("tnc complete: token of generation 1 does not fit"));
    assert_uninit(&fresh);
    let wa = waiter(&mut a, A);
    let err = fresh.resume(wa).unwrap_err();
    assert_eq!(err.step, "resume");
    // Same generation, wrong state: a READY slot's holder on a PENDING slot.
    let mut c = TncState::<u32>::new();
    let cc = creator(&mut c, A);
    let hc = c.complete(cc, 1).unwrap();
    let mut b = TncState::<u32>::new();
    let cb = creator(&mut b, A);
    let err = b.release(hc).unwrap_err();
    assert_eq!((err.step, err.state), ("release", CacheState::Pending));
    // A complete on a READY slot is refused, and a refused step changes nothing.
    let before = c.snapshot();
    let err = c.complete(creator(&mut fresh, B), 2).unwrap_err();
    assert_eq!((err.step, err.state), ("complete", CacheState::Ready));
    assert_eq!(c.snapshot(), before);
    let before = b.snapshot();
    let mut d = TncState::<u32>::new();
    let cd = creator(&mut d, B);
    let hd = d.complete(cd, 2).unwrap();
    assert_eq!(b.release(hd).unwrap_err().step, "release");
    assert_eq!(b.snapshot(), before);
    assert_eq!(b.fail(cb), Ok(Release::Freed));
}

#[test]
fn paths_name_the_seeds_messages_and_distinct_marks() {
    let all = [
        TncPath::FirstWorker,
        TncPath::UsingCache,
        TncPath::Waiting,
        TncPath::UsingCacheAfterWait,
        TncPath::CreationFailedDoMyOwn,
        TncPath::OtherUuid,
        TncPath::SlotFailed,
    ];
    let marks: std::collections::BTreeSet<_> = all.iter().map(|p| p.mark()).collect();
    assert_eq!(marks.len(), all.len());
    assert!(marks.iter().all(|m| m.starts_with("tnc.")));
    assert_eq!(TncPath::Waiting.role(), None);
    assert_eq!(TncPath::UsingCacheAfterWait.role(), Some(Role::Reuse));
    assert_eq!(TncPath::CreationFailedDoMyOwn.message(), "cache creation failed, do my own");
    assert_eq!(TncPath::OtherUuid.message(), TncPath::SlotFailed.message());
}
