//! lncsim-tnc: the runtime's TNC parse cache (seed 002, Stage 1) as an explicit
//! state machine, with the std / loom shim (the only place that names either).
//!
//! - [`TncState`]: the pure state machine, one method per step, no locks; the
//!   simulator steps it with its seeded scheduler.
//! - [`TncCache`]: the thread-safe driver over [`TncState`] (the seed's
//!   `tnc_lock` and `wait_sem`), used by real loader threads and by loom.

mod cache;
mod error;
mod state;
mod sync;
mod types;

pub use cache::{CreatorGuard, Entry, HolderGuard, TncCache};
pub use error::TncError;
pub use state::{
    CREATOR_PENDING, CREATOR_REF_COUNT, CreatorToken, Enter, Holder, ONE_REF, Release, Resume, TncState, WaitTicket,
};
pub use types::{CacheState, Role, TncBug, TncPath, TncSnapshot, Uuid};
