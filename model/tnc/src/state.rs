//! The TNC slot as a pure state machine (seed 002, Stage 1, "The TNC state
//! machine"): a plain struct, no locks, no threads, one method per step.
//!
//! Steps: [`TncState::enter`] (the seed's `tnc_enter` under `tnc_lock`) gives a
//! role or [`Enter::Wait`]; a waiter later calls [`TncState::resume`] (the
//! seed's `sem_wait` and the check after it), which stays
//! [`Resume::Blocked`] until a wake-up is posted; the CREATOR calls
//! [`TncState::complete`] (`complete_cache_creation`) or [`TncState::fail`]
//! (`complete_cache_creation_on_failure`), each of which posts one wake-up per
//! pending waiter (the seed's `sem_post` loop; the posts are the semaphore's
//! count, [`TncState::wakeups_posted`]); every holder calls
//! [`TncState::release`] once. A driver that runs each step under one lock
//! (see [`crate::TncCache`]) or a simulator that steps loaders one at a time
//! in a seeded order both get the seed's semantics.
//!
//! Reference counting (the seed packs it into one u64, `0x100000001` at
//! creation). Chosen packing, documented here and tested:
//! - low 32 bits: loaders holding a reference: the CREATOR, every REUSE
//!   loader, and every waiter from its `enter` until it is resumed;
//! - high 32 bits: 1 while the CREATOR's parse is outstanding (exactly while
//!   the slot is PENDING), cleared by `complete` or `fail`.
//!
//! `complete` clears the high half; the CREATOR keeps its low-half reference
//! and releases it at its S5 tail (after register) like any REUSE loader. `fail` clears the high
//! half and drops the CREATOR's reference at once (the seed: the creator
//! "releases the slot"; its load ends with its own parse error). A waiter
//! resumed after failure drops its reference inside `resume` and comes back
//! INDEPENDENT holding none, so INDEPENDENT loaders never hold one. Whenever
//! the packed count reaches 0 the slot returns to UNINIT: the cached result is
//! dropped and the UUID cleared to zeros.
//!
//! ```
//! use lncsim_tnc::{CacheState, Enter, Resume, TncState};
//! let mut tnc = TncState::<u32>::new();
//! let Enter::Creator(creator) = tnc.enter([7; 16]) else { panic!() };
//! let Enter::Wait(ticket) = tnc.enter([7; 16]) else { panic!() };
//! let Resume::Blocked(ticket) = tnc.resume(ticket)? else { panic!() };
//! let mine = tnc.complete(creator, 42)?;
//! let Resume::Reuse(parsed, theirs) = tnc.resume(ticket)? else { panic!() };
//! assert_eq!(parsed, 42);
//! tnc.release(mine)?;
//! tnc.release(theirs)?;
//! assert_eq!((tnc.cache_state(), tnc.packed_ref_count()), (CacheState::Uninit, 0));
//! # Ok::<(), lncsim_tnc::TncError>(())
//! ```

use crate::error::TncError;
use crate::types::{CacheState, TncBug, TncPath, TncSnapshot, Uuid};

/// The high half of the packed count: set while the CREATOR's parse is outstanding.
pub const CREATOR_PENDING: u64 = 1 << 32;
/// One holder's reference in the low half of the packed count.
pub const ONE_REF: u64 = 1;
/// The packed count right after `enter` made a CREATOR (the seed's `0x100000001`).
pub const CREATOR_REF_COUNT: u64 = CREATOR_PENDING | ONE_REF;

/// The CREATOR's obligation: pass it to `complete` or `fail` exactly once.
#[derive(Debug, PartialEq, Eq)]
#[must_use = "a CREATOR must complete or fail, or its waiters never wake"]
pub struct CreatorToken {
    generation: u64,
}

/// One reference held on a READY slot: pass it to `release` exactly once.
#[derive(Debug, PartialEq, Eq)]
#[must_use = "a holder must release its reference, or the slot never returns to UNINIT"]
pub struct Holder {
    generation: u64,
}

/// A waiter's place (it holds a reference): pass it to `resume` until it resolves.
#[derive(Debug, PartialEq, Eq)]
#[must_use = "a waiter must be resumed, or its reference is never released"]
pub struct WaitTicket {
    generation: u64,
}

macro_rules! token_generation {
    ($($t:ty),*) => {$(
        impl $t {
            /// The slot generation (count of UNINIT -> PENDING transitions) this token belongs to.
            pub fn generation(&self) -> u64 {
                self.generation
            }
        }
    )*};
}
token_generation!(CreatorToken, Holder, WaitTicket);

/// The outcome of [`TncState::enter`].
#[derive(Debug, PartialEq, Eq)]
pub enum Enter<T> {
    /// UNINIT: the caller is the CREATOR; the slot is now PENDING.
    Creator(CreatorToken),
    /// READY with the same UUID: the cached result and one reference.
    Reuse(T, Holder),
    /// PENDING with the same UUID: the caller holds a reference and must wait.
    Wait(WaitTicket),
    /// Any other case ([`TncPath::OtherUuid`] or [`TncPath::SlotFailed`]):
    /// no reference held, the slot untouched.
    Independent(TncPath),
}

impl<T> Enter<T> {
    /// The seed branch this outcome took.
    pub fn path(&self) -> TncPath {
        match self {
            Enter::Creator(_) => TncPath::FirstWorker,
            Enter::Reuse(..) => TncPath::UsingCache,
            Enter::Wait(_) => TncPath::Waiting,
            Enter::Independent(path) => *path,
        }
    }
}

/// The outcome of [`TncState::resume`].
#[derive(Debug, PartialEq, Eq)]
pub enum Resume<T> {
    /// No wake-up posted yet (the seed's `sem_wait` would block): the ticket back.
    Blocked(WaitTicket),
    /// "using cache after wait": the cached result; the reference is kept.
    Reuse(T, Holder),
    /// "cache creation failed, do my own": the waiter's reference was released.
    Independent(Release),
}

impl<T> Resume<T> {
    /// The seed branch this outcome took ([`TncPath::Waiting`] while blocked).
    pub fn path(&self) -> TncPath {
        match self {
            Resume::Blocked(_) => TncPath::Waiting,
            Resume::Reuse(..) => TncPath::UsingCacheAfterWait,
            Resume::Independent(_) => TncPath::CreationFailedDoMyOwn,
        }
    }
}

/// What dropping a reference did to the slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Release {
    /// Other references remain; the slot keeps its state.
    Held,
    /// That was the last reference: the slot is UNINIT again.
    Freed,
}

/// The slot's content; the parse result exists exactly when READY.
#[derive(Debug)]
enum Slot<T> {
    Uninit,
    Pending,
    Ready(T),
    Failed,
}

/// The one TNC slot of a (simulated) process, as a pure state machine.
#[derive(Debug)]
pub struct TncState<T> {
    slot: Slot<T>,
    uuid: Uuid,
    ref_count: u64,
    pending_wait: u32,
    wakeups_posted: u32,
    generation: u64,
    bug: Option<TncBug>,
}

impl<T> Default for TncState<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> TncState<T> {
    /// An UNINIT slot with no planted bug.
    pub fn new() -> Self {
        Self::with_bug(None)
    }

    /// An UNINIT slot, with `bug` planted when it is `Some`.
    pub fn with_bug(bug: Option<TncBug>) -> Self {
        TncState {
            slot: Slot::Uninit,
            uuid: [0; 16],
            ref_count: 0,
            pending_wait: 0,
            wakeups_posted: 0,
            generation: 0,
            bug,
        }
    }

    /// The seed's `cache_state`.
    pub fn cache_state(&self) -> CacheState {
        match self.slot {
            Slot::Uninit => CacheState::Uninit,
            Slot::Pending => CacheState::Pending,
            Slot::Ready(_) => CacheState::Ready,
            Slot::Failed => CacheState::Failed,
        }
    }

    /// The UUID of the NEFF in the slot (all zeros when UNINIT).
    pub fn uuid(&self) -> Uuid {
        self.uuid
    }

    /// The packed count: `CREATOR_PENDING` while PENDING, plus one per holder.
    pub fn packed_ref_count(&self) -> u64 {
        self.ref_count
    }

    /// The low half of the packed count: how many loaders hold a reference.
    pub fn ref_count(&self) -> u32 {
        (self.ref_count & 0xFFFF_FFFF) as u32
    }

    /// Waiters that entered while PENDING and have not been posted a wake-up yet.
    pub fn pending_wait(&self) -> u32 {
        self.pending_wait
    }

    /// The wake-up semaphore's count: posts made and not yet consumed by `resume`.
    pub fn wakeups_posted(&self) -> u32 {
        self.wakeups_posted
    }

    /// The cached parse result (present exactly when READY).
    pub fn cached(&self) -> Option<&T> {
        match &self.slot {
            Slot::Ready(info) => Some(info),
            _ => None,
        }
    }

    /// How many times the slot went UNINIT -> PENDING (a new CREATOR).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The planted bug, if any.
    pub fn bug(&self) -> Option<TncBug> {
        self.bug
    }

    /// All observable fields at once.
    pub fn snapshot(&self) -> TncSnapshot {
        TncSnapshot {
            cache_state: self.cache_state(),
            uuid: self.uuid,
            packed_ref_count: self.ref_count,
            pending_wait: self.pending_wait,
            wakeups_posted: self.wakeups_posted,
            generation: self.generation,
            cached: self.cached().is_some(),
        }
    }

    /// `tnc_enter`: take a role, or a ticket to wait with (see [`Enter`]).
    pub fn enter(&mut self, uuid: Uuid) -> Enter<T>
    where
        T: Clone,
    {
        let same = self.uuid == uuid;
        match &self.slot {
            Slot::Uninit => {
                self.generation += 1;
                self.ref_count = CREATOR_REF_COUNT;
                self.uuid = uuid;
                self.slot = Slot::Pending;
                Enter::Creator(CreatorToken { generation: self.generation })
            }
            Slot::Ready(info) if same => {
                let info = info.clone();
                self.ref_count += ONE_REF;
                Enter::Reuse(info, self.holder())
            }
            Slot::Pending if same => {
                self.ref_count += ONE_REF;
                self.pending_wait += 1;
                Enter::Wait(WaitTicket { generation: self.generation })
            }
            Slot::Failed if same => Enter::Independent(TncPath::SlotFailed),
            Slot::Pending | Slot::Ready(_) | Slot::Failed => Enter::Independent(TncPath::OtherUuid),
        }
    }

    /// The waiter's `sem_wait` and the check after it: blocked while no
    /// wake-up is posted; else consumes one and returns REUSE if READY, or
    /// INDEPENDENT (releasing the waiter's reference) if not.
    pub fn resume(&mut self, ticket: WaitTicket) -> Result<Resume<T>, TncError>
    where
        T: Clone,
    {
        self.check("resume", ticket.generation, |s| matches!(s, Slot::Pending | Slot::Ready(_) | Slot::Failed))?;
        if self.wakeups_posted == 0 || matches!(self.slot, Slot::Pending) {
            return Ok(Resume::Blocked(ticket));
        }
        self.wakeups_posted -= 1;
        match &self.slot {
            Slot::Ready(info) => {
                let info = info.clone();
                Ok(Resume::Reuse(info, self.holder()))
            }
            _ => Ok(Resume::Independent(self.drop_ref(ONE_REF))),
        }
    }

    /// `complete_cache_creation`: READY with `info`, one wake-up posted per
    /// waiter; the CREATOR keeps its reference, returned as a [`Holder`].
    pub fn complete(&mut self, creator: CreatorToken, info: T) -> Result<Holder, TncError> {
        self.check("complete", creator.generation, |s| matches!(s, Slot::Pending))?;
        self.slot = Slot::Ready(info);
        self.ref_count -= CREATOR_PENDING;
        self.post_wakeups();
        Ok(self.holder())
    }

    /// `complete_cache_creation_on_failure`: FAILED, one wake-up posted per
    /// waiter (skipped under [`TncBug::NoWakeOnFailure`]), and the CREATOR's
    /// reference released.
    pub fn fail(&mut self, creator: CreatorToken) -> Result<Release, TncError> {
        self.check("fail", creator.generation, |s| matches!(s, Slot::Pending))?;
        self.slot = Slot::Failed;
        if self.bug != Some(TncBug::NoWakeOnFailure) {
            self.post_wakeups();
        }
        Ok(self.drop_ref(CREATOR_PENDING | ONE_REF))
    }

    /// Drops a holder's reference (at its S5 tail, after register); the last one frees the slot.
    pub fn release(&mut self, holder: Holder) -> Result<Release, TncError> {
        self.check("release", holder.generation, |s| matches!(s, Slot::Ready(_)))?;
        Ok(self.drop_ref(ONE_REF))
    }

    fn holder(&self) -> Holder {
        Holder { generation: self.generation }
    }

    fn post_wakeups(&mut self) {
        self.wakeups_posted += self.pending_wait;
        self.pending_wait = 0;
    }

    fn drop_ref(&mut self, amount: u64) -> Release {
        self.ref_count -= amount;
        if self.ref_count != 0 {
            return Release::Held;
        }
        self.slot = Slot::Uninit;
        self.uuid = [0; 16];
        Release::Freed
    }

    fn check(
        &self,
        step: &'static str,
        token_generation: u64,
        state_ok: impl Fn(&Slot<T>) -> bool,
    ) -> Result<(), TncError> {
        if token_generation == self.generation && state_ok(&self.slot) {
            return Ok(());
        }
        Err(TncError { step, token_generation, slot_generation: self.generation, state: self.cache_state() })
    }
}
