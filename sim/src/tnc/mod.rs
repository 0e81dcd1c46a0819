//! The TNC scenario runner (issue 7, item 5; DESIGN.md "Determinism and
//! concurrency", invariant 4): K concurrent loaders of the same or different
//! NEFF UUIDs step the TNC parse cache's pure state machine
//! ([`lncsim_tnc::TncState`]) under the simulator's seeded scheduler, with
//! injected parse failures; [`check`] verifies that every loader finishes,
//! waiters of a failed creator proceed on their own, the slot returns to
//! UNINIT with ref count 0, and a different UUID never waits nor evicts.
//!
//! The wait semaphore is modelled by the state machine's wake-up count: a
//! blocked waiter is scheduled to retry `resume` only while wake-ups are
//! posted (a `sem_wait` returns only after a `sem_post`), so a lost wake-up
//! ([`lncsim_tnc::TncBug::NoWakeOnFailure`]) leaves waiters blocked with no
//! event left: a liveness failure.

pub mod check;
mod outcome;
mod scenario;

pub use check::TncViolation;
pub use outcome::LoaderOutcome;
pub use scenario::{LoaderSpec, TncReport, TncScenario};
