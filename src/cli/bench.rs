//! `lncsim bench <what>`: speed benchmarks that print their figures next to
//! their targets in one run (medians and ratios). Each benchmark lives in its
//! own file (`bench_<what>.rs`); this file only groups them.

use std::process::ExitCode;

use clap::{Args, Subcommand};

use super::CliError;
use super::bench_alloc::{self, BenchAllocArgs};

/// Arguments of `lncsim bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Which benchmark to run.
    #[command(subcommand)]
    pub what: BenchCommand,
}

/// The benchmarks.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// The DRAM allocator: generated problems of 1k..1M intervals, the naive
    /// all-pairs baseline at 10k, and every MiniMalloc file in both orders.
    Alloc(BenchAllocArgs),
}

/// Runs `lncsim bench`.
pub fn run(args: &BenchArgs) -> Result<ExitCode, CliError> {
    match &args.what {
        BenchCommand::Alloc(a) => bench_alloc::run(a),
    }
}
