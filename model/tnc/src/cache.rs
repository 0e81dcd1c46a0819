//! The thread-safe driver: [`TncState`] behind the seed's `tnc_lock`, with its
//! `wait_sem` modelled as the state's wake-up count plus a condition variable.
//!
//! Every step runs under the one mutex. A waiter loops on
//! [`TncState::resume`]: while it is [`Resume::Blocked`] (no wake-up posted)
//! it sleeps on the condition variable, which `complete` and `fail` notify
//! after posting. Because the post count lives in the locked state, a post
//! made before the waiter sleeps is never lost (a semaphore's semantics); the
//! only way to lose a wake-up is not to post it, which is exactly the planted
//! [`TncBug::NoWakeOnFailure`].
//!
//! Misuse is hard by construction: the CREATOR gets a [`CreatorGuard`] whose
//! `complete` / `fail` consume it, holders get a [`HolderGuard`] whose
//! `release` consumes it. Dropping a guard without calling them does the safe
//! thing: a dropped [`CreatorGuard`] fails (so its waiters wake and proceed on
//! their own), a dropped [`HolderGuard`] releases, so an early `?` return in a
//! loader neither deadlocks nor leaks the slot.

use crate::error::TncError;
use crate::state::{CreatorToken, Enter, Holder, Release, Resume, TncState};
use crate::sync::{Arc, Condvar, Mutex, MutexGuard};
use crate::types::{Role, TncBug, TncPath, TncSnapshot, Uuid};
use std::fmt;

/// The TNC of one (simulated) process: cheap to clone, all clones share the slot.
pub struct TncCache<T> {
    inner: Arc<Inner<T>>,
}

struct Inner<T> {
    state: Mutex<TncState<T>>,
    wake: Condvar,
}

impl<T> Clone for TncCache<T> {
    fn clone(&self) -> Self {
        TncCache { inner: Arc::clone(&self.inner) }
    }
}

impl<T> fmt::Debug for TncCache<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TncCache").finish_non_exhaustive()
    }
}

impl<T> Default for TncCache<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// A guard's token always belongs to its own cache's current generation (the
/// slot cannot leave that generation while the token exists), so a step on it
/// cannot be refused; a refusal would be a bug in this crate.
fn own_token<R>(step: Result<R, TncError>) -> R {
    step.expect("tnc: a guard's token always fits its own slot")
}

impl<T> TncCache<T> {
    /// An UNINIT cache with no planted bug.
    pub fn new() -> Self {
        Self::with_bug(None)
    }

    /// An UNINIT cache, with `bug` planted when it is `Some`.
    pub fn with_bug(bug: Option<TncBug>) -> Self {
        TncCache { inner: Arc::new(Inner { state: Mutex::new(TncState::with_bug(bug)), wake: Condvar::new() }) }
    }

    /// The slot's observable fields, read under the lock.
    pub fn snapshot(&self) -> TncSnapshot {
        self.lock().snapshot()
    }

    /// Takes `tnc_lock`. No step panics while holding it, so a poisoned lock
    /// (a panic elsewhere in the holder's thread) still holds a consistent
    /// state and is used as is.
    fn lock(&self) -> MutexGuard<'_, TncState<T>> {
        self.inner.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Wakes every sleeping waiter if the last step posted wake-ups.
    fn notify_if_posted(&self, state: &TncState<T>) {
        if state.wakeups_posted() > 0 {
            self.inner.wake.notify_all();
        }
    }
}

impl<T: Clone> TncCache<T> {
    /// `tnc_enter`: returns the role; blocks while the slot is PENDING with
    /// the same UUID, until the CREATOR completes or fails.
    pub fn enter(&self, uuid: Uuid) -> Entry<T> {
        let mut state = self.lock();
        let mut ticket = match state.enter(uuid) {
            Enter::Creator(token) => {
                return Entry::Creator(CreatorGuard { cache: self.clone(), token: Some(token) });
            }
            Enter::Reuse(info, holder) => {
                return Entry::Reuse { info, holder: self.holder_guard(holder), path: TncPath::UsingCache };
            }
            Enter::Independent(path) => return Entry::Independent { path },
            Enter::Wait(ticket) => ticket,
        };
        loop {
            match own_token(state.resume(ticket)) {
                Resume::Blocked(back) => {
                    ticket = back;
                    state = self.inner.wake.wait(state).unwrap_or_else(std::sync::PoisonError::into_inner);
                }
                Resume::Reuse(info, holder) => {
                    return Entry::Reuse {
                        info,
                        holder: self.holder_guard(holder),
                        path: TncPath::UsingCacheAfterWait,
                    };
                }
                Resume::Independent(_) => {
                    return Entry::Independent { path: TncPath::CreationFailedDoMyOwn };
                }
            }
        }
    }

    fn holder_guard(&self, holder: Holder) -> HolderGuard<T> {
        HolderGuard { cache: self.clone(), holder: Some(holder) }
    }
}

/// The role [`TncCache::enter`] gave a loader.
#[derive(Debug)]
pub enum Entry<T> {
    /// "first worker, creating cache": parse, then `complete` or `fail`.
    Creator(CreatorGuard<T>),
    /// The cached parse result and one reference, to release at the S5 tail (after register).
    Reuse {
        /// The cached parse result.
        info: T,
        /// The reference to release at the S5 tail (after register).
        holder: HolderGuard<T>,
        /// [`TncPath::UsingCache`] or [`TncPath::UsingCacheAfterWait`].
        path: TncPath,
    },
    /// Parse on your own; no reference held.
    Independent {
        /// [`TncPath::OtherUuid`], [`TncPath::SlotFailed`] or
        /// [`TncPath::CreationFailedDoMyOwn`].
        path: TncPath,
    },
}

impl<T> Entry<T> {
    /// The role taken.
    pub fn role(&self) -> Role {
        match self {
            Entry::Creator(_) => Role::Creator,
            Entry::Reuse { .. } => Role::Reuse,
            Entry::Independent { .. } => Role::Independent,
        }
    }

    /// The seed branch taken (the last one, for a loader that waited).
    pub fn path(&self) -> TncPath {
        match self {
            Entry::Creator(_) => TncPath::FirstWorker,
            Entry::Reuse { path, .. } | Entry::Independent { path } => *path,
        }
    }
}

/// The CREATOR's obligation; dropping it unconsumed fails the creation.
#[derive(Debug)]
#[must_use = "dropping a CreatorGuard fails the cache creation"]
pub struct CreatorGuard<T> {
    cache: TncCache<T>,
    token: Option<CreatorToken>,
}

impl<T: Clone> CreatorGuard<T> {
    /// `complete_cache_creation`: caches a clone of `info` (READY), wakes
    /// every waiter, and returns the CREATOR's reference.
    pub fn complete(mut self, info: &T) -> HolderGuard<T> {
        let cache = self.cache.clone();
        let mut state = cache.lock();
        let holder = self.token.take().map(|token| own_token(state.complete(token, info.clone())));
        cache.notify_if_posted(&state);
        HolderGuard { cache: self.cache.clone(), holder }
    }
}

impl<T> CreatorGuard<T> {
    /// `complete_cache_creation_on_failure`: FAILED, wakes every waiter (they
    /// proceed INDEPENDENT), releases the CREATOR's reference.
    pub fn fail(mut self) -> Release {
        self.fail_inner()
    }

    fn fail_inner(&mut self) -> Release {
        let Some(token) = self.token.take() else {
            return Release::Held;
        };
        let mut state = self.cache.lock();
        let released = own_token(state.fail(token));
        self.cache.notify_if_posted(&state);
        released
    }
}

impl<T> Drop for CreatorGuard<T> {
    fn drop(&mut self) {
        self.fail_inner();
    }
}

/// One reference on the READY slot; release it at the S5 tail, after register (dropping releases too).
#[derive(Debug)]
#[must_use = "dropping a HolderGuard releases the reference at once"]
pub struct HolderGuard<T> {
    cache: TncCache<T>,
    holder: Option<Holder>,
}

impl<T> HolderGuard<T> {
    /// Drops the reference; the last one returns the slot to UNINIT.
    pub fn release(mut self) -> Release {
        self.release_inner()
    }

    fn release_inner(&mut self) -> Release {
        let Some(holder) = self.holder.take() else {
            return Release::Held;
        };
        own_token(self.cache.lock().release(holder))
    }
}

impl<T> Drop for HolderGuard<T> {
    fn drop(&mut self) {
        self.release_inner();
    }
}
