//! The end-to-end contract checkers of `lncsim run` (issue 12 section 4):
//! each sees one seed contract from the run's own artefacts (the per-core
//! modules, the linked module, the loaded images, the runtime's tables) and
//! shares no code with the component it judges.

pub mod barrier_ids;
pub mod equalized;
pub mod handles;
pub mod hbm;
pub mod neff_outputs;
