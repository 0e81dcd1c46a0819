//! The TNC's small value types: the UUID key, the four cache states, the three
//! roles, the seed's named paths (log messages and coverage-mark names) and the
//! planted-bug setting.

/// A NEFF UUID as the TNC compares it: 128 bits, compared exactly (seed 002,
/// Stage 1: "the UUID is compared as a 128-bit value").
pub type Uuid = [u8; 16];

/// The slot's state; the discriminants are the seed's `cache_state` values
/// (UNINIT/PENDING/READY/FAILED == 0/1/2/3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum CacheState {
    /// No NEFF cached, no reference held: the next loader becomes the CREATOR.
    Uninit = 0,
    /// A CREATOR is parsing; loaders of the same UUID wait for it.
    Pending = 1,
    /// The parse result is cached; loaders of the same UUID REUSE it.
    Ready = 2,
    /// The CREATOR failed; waiters proceed INDEPENDENT, newcomers bypass.
    Failed = 3,
}

impl CacheState {
    /// The seed's numeric value of this state (0..=3).
    pub fn as_u8(self) -> u8 {
        self as u8
    }
}

/// What a loader does with the cache (seed 002, Stage 1, `tnc_enter`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    /// First worker: parses and fills the slot; holds one reference.
    Creator,
    /// Uses the cached parse result; holds one reference.
    Reuse,
    /// Parses on its own; holds no reference.
    Independent,
}

/// Which branch of `tnc_enter` a loader took, named after the seed's log
/// messages; each has a stable coverage-mark name (see [`TncPath::mark`]).
///
/// The seed's `default` branch ("uuid mismatch or slot busy") is split into
/// [`TncPath::OtherUuid`] and [`TncPath::SlotFailed`] so a test can tell them
/// apart; both log "proceeding independently".
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TncPath {
    /// UNINIT: "first worker, creating cache" (role CREATOR).
    FirstWorker,
    /// READY, same UUID: "using cache" (role REUSE).
    UsingCache,
    /// PENDING, same UUID: "waiting for cache creation" (must wait).
    Waiting,
    /// Woken, slot READY: "using cache after wait" (role REUSE).
    UsingCacheAfterWait,
    /// Woken, slot not READY: "cache creation failed, do my own" (INDEPENDENT).
    CreationFailedDoMyOwn,
    /// PENDING/READY/FAILED with another UUID: "proceeding independently".
    OtherUuid,
    /// FAILED with the same UUID: "proceeding independently".
    SlotFailed,
}

impl TncPath {
    /// The role this path gives, or `None` for [`TncPath::Waiting`].
    pub fn role(self) -> Option<Role> {
        match self {
            TncPath::FirstWorker => Some(Role::Creator),
            TncPath::UsingCache | TncPath::UsingCacheAfterWait => Some(Role::Reuse),
            TncPath::CreationFailedDoMyOwn | TncPath::OtherUuid | TncPath::SlotFailed => Some(Role::Independent),
            TncPath::Waiting => None,
        }
    }

    /// The seed's log message for this path.
    pub fn message(self) -> &'static str {
        match self {
            TncPath::FirstWorker => "first worker, creating cache",
            TncPath::UsingCache => "using cache",
            TncPath::Waiting => "waiting for cache creation",
            TncPath::UsingCacheAfterWait => "using cache after wait",
            TncPath::CreationFailedDoMyOwn => "cache creation failed, do my own",
            TncPath::OtherUuid | TncPath::SlotFailed => "proceeding independently",
        }
    }

    /// The coverage-mark name a caller records for this path
    /// (`lncsim_model::marks::hit(path.mark())`; this crate does not depend on
    /// the model, so it names marks but does not record them).
    pub fn mark(self) -> &'static str {
        match self {
            TncPath::FirstWorker => "tnc.enter.first_worker",
            TncPath::UsingCache => "tnc.enter.using_cache",
            TncPath::Waiting => "tnc.enter.waiting",
            TncPath::UsingCacheAfterWait => "tnc.resume.using_cache_after_wait",
            TncPath::CreationFailedDoMyOwn => "tnc.resume.creation_failed_do_my_own",
            TncPath::OtherUuid => "tnc.enter.other_uuid",
            TncPath::SlotFailed => "tnc.enter.slot_failed",
        }
    }
}

/// A deliberately planted bug, selected at run time (off by default) so the
/// simulator and the loom suite can show that their checks catch it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TncBug {
    /// `fail` skips the seed's `sem_post` per waiter: every waiter of a failed
    /// creator stays blocked forever (a lost wake-up, i.e. a deadlock).
    NoWakeOnFailure,
}

/// A copy of the slot's observable fields at one instant (for checks and traces).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TncSnapshot {
    /// The seed's `cache_state`.
    pub cache_state: CacheState,
    /// The UUID in the slot (all zeros when UNINIT).
    pub uuid: Uuid,
    /// The packed count (see [`crate::TncState`] for the packing).
    pub packed_ref_count: u64,
    /// Waiters not yet posted a wake-up.
    pub pending_wait: u32,
    /// Wake-ups posted and not yet consumed (the semaphore's count).
    pub wakeups_posted: u32,
    /// How many times the slot went UNINIT -> PENDING.
    pub generation: u64,
    /// Whether a parse result is cached (exactly when READY).
    pub cached: bool,
}

impl TncSnapshot {
    /// The low half of the packed count: loaders holding a reference.
    pub fn ref_count(&self) -> u32 {
        (self.packed_ref_count & 0xFFFF_FFFF) as u32
    }
}
