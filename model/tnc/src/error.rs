//! The one error a step of [`crate::TncState`] can return.
//!
//! Written by hand rather than with `thiserror` so the crate has no
//! dependency outside loom (a `--cfg loom` build recompiles every dependency).

use crate::types::CacheState;
use std::fmt;

/// A step was given a token that does not fit the slot: a token of another
/// [`crate::TncState`], or of a generation of this one that has ended. Tokens
/// cannot be copied, so with a single state machine this never happens.
///
/// Detection is by (generation, state): a token of another slot that happens
/// to be in the same generation and a fitting state is not told apart (slots
/// carry no identity, to stay deterministic and free of global state).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TncError {
    /// The step that was refused (`complete`, `fail`, `resume`, `release`).
    pub step: &'static str,
    /// The generation the token was minted in.
    pub token_generation: u64,
    /// The slot's generation when the step was tried.
    pub slot_generation: u64,
    /// The slot's state when the step was tried.
    pub state: CacheState,
}

impl fmt::Display for TncError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "tnc {}: token of generation {} does not fit the slot (generation {}, state {:?})",
            self.step, self.token_generation, self.slot_generation, self.state
        )
    }
}

impl std::error::Error for TncError {}
