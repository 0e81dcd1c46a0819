//! The std / loom shim: the only file of this crate that names either.
//!
//! `--cfg loom` swaps in loom's model-checked primitives; otherwise std's.
//! The driver ([`crate::TncCache`]) builds the seed's `tnc_lock` (a mutex) and
//! its `wait_sem` (a counting semaphore: the count lives in the locked
//! [`crate::TncState`], a condition variable wakes blocked waiters) from these.

#[cfg(loom)]
pub(crate) use loom::sync::{Arc, Condvar, Mutex, MutexGuard};

#[cfg(not(loom))]
pub(crate) use std::sync::{Arc, Condvar, Mutex, MutexGuard};
