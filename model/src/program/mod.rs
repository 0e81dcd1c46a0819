//! Seeded program generator, reference interpreter, and the interleaving
//! executor of split modules (the oracle side of the bench).

pub mod generate;
pub mod interleave;
pub mod interp;
pub mod name_key;

pub use generate::{GenConfig, GenError, MAX_OPS_ELEMS, MAX_OPS_PER_CORE, MAX_OPS_TOTAL, SizeClass, generate};
pub use interp::{
    InterpError, Values, check_size, digest, interpret, interpret_verified, retain_written, seeded_input,
    seeded_inputs, seeded_inputs_checked,
};
