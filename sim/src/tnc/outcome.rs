//! What one loader of a TNC scenario did: the observation the scenario runner
//! records and the checks judge (kept apart from both, so neither imports the other).

use lncsim_tnc::{Role, TncPath, Uuid};

use crate::engine::queue::Time;

/// What one loader did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoaderOutcome {
    /// Its UUID.
    pub uuid: Uuid,
    /// The seed branches it took, in order.
    pub paths: Vec<TncPath>,
    /// Its final role (`None` while it still waits).
    pub role: Option<Role>,
    /// Its own parse failed.
    pub parse_failed: bool,
    /// The slot generation it entered (for a waiter: the creator it waited for).
    pub generation: u64,
    /// When it finished; `None` if it never did.
    pub finished_at: Option<Time>,
}
