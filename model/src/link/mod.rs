//! bir_linker (seed 000): N finished per-core modules merged into one.
