//! The end-to-end contract checkers of `lncsim run` (issue 12 section 4):
//! each sees one seed contract from the run's own artefacts (the per-core
//! modules, the linked module, the loaded images, the runtime's tables) and
//! shares no code with the component it judges. Beside them, the checks
//! the simulator makes while it runs (DESIGN.md "The invariants"): data races
//! by vector clocks (`race`), shadow ownership and clobbers by interval
//! (`shadow`, `ownership`, `intervals`), unequalized shared accesses
//! (`unequal`), deadlock diagnosis (`liveness`), and the violations they
//! report ([`violation`]).

pub mod barrier_ids;
pub mod equalized;
pub mod handles;
pub mod hbm;
pub(crate) mod intervals;
pub(crate) mod liveness;
pub mod neff_outputs;
pub(crate) mod ownership;
pub(crate) mod race;
pub(crate) mod shadow;
pub(crate) mod unequal;
pub mod violation;
