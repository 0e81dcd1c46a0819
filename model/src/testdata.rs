//! Where the shared test data lives (`../shared/`: the seeds, the real NEFF,
//! the MiniMalloc benchmark files). Tests, benchmarks and the CLI's benchmark
//! commands find it here, in this order:
//!
//! 1. the directory named by the `LNCSIM_SHARED` environment variable
//!    (`.ci/run` sets it when it runs in a clone outside the workspace);
//! 2. the first ancestor of `start` (a crate's `CARGO_MANIFEST_DIR`, or the
//!    current directory) that has a `shared/` directory (DESIGN.md, "Shared
//!    data in tests").
//!
//! Callers skip with a printed reason when the data is absent, except under
//! `CI=true`, where absent data is a failure.

use std::path::{Path, PathBuf};

/// The environment variable that names the shared data directory.
pub const ENV: &str = "LNCSIM_SHARED";

/// The shared data directory, if it can be found from `start`.
pub fn shared_dir(start: &Path) -> Option<PathBuf> {
    if let Some(d) = std::env::var_os(ENV).map(PathBuf::from).filter(|d| d.is_dir()) {
        return Some(d);
    }
    start.ancestors().map(|a| a.join("shared")).find(|d| d.is_dir())
}

/// `shared/<rel>` if it exists; otherwise `None` after printing why, or a panic under `CI=true`.
pub fn require(start: &Path, rel: &str) -> Option<PathBuf> {
    let found = shared_dir(start).map(|d| d.join(rel)).filter(|p| p.exists());
    if found.is_none() {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true");
        assert!(!ci, "CI=true but shared data `{rel}` is absent (set {ENV} or keep ../shared next to the workspace)");
        eprintln!("SKIP: shared data `{rel}` not found from {} (set {ENV})", start.display());
    }
    found
}
