//! Seeded program generator and reference interpreter.
