//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;

use lncsim_model::program::GenConfig;
use proptest::prelude::*;

/// The shared data directory (`../shared` of the workspace root, or `$LNCSIM_SHARED`),
/// if it holds `what`.
///
/// Tests that need it skip with a printed reason when it is absent, except
/// under `CI=true`, where absent data is a failure (DESIGN.md, "Shared data in tests").
pub fn shared_dir(what: &str) -> Option<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    lncsim_model::testdata::require(&root, what)?;
    lncsim_model::testdata::shared_dir(&root)
}

/// A proptest strategy over generator configurations: cores in `cores`,
/// every other parameter drawn too, so a failure shrinks to a small program.
pub fn gen_config(cores: std::ops::RangeInclusive<u32>) -> impl Strategy<Value = GenConfig> {
    (any::<u64>(), cores, 1u32..40, 0u32..14, 0u32..=100, 0u32..3, 1u32..4).prop_map(
        |(seed, cores, ops, size_bits, handoff_pct, allreduces, outputs)| GenConfig {
            seed,
            cores,
            ops,
            max_elems: 1u64 << size_bits,
            handoff_pct,
            allreduces,
            outputs,
        },
    )
}

/// The path of the built `lncsim` binary.
pub fn lncsim() -> std::process::Command {
    std::process::Command::new(env!("CARGO_BIN_EXE_lncsim"))
}
