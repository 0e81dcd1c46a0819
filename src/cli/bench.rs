//! `lncsim bench <what>`: speed benchmarks that print their figures next to
//! their targets in one run (medians and ratios). Each benchmark lives in its
//! own file (`bench_<what>.rs`); this file only groups them.

use std::process::ExitCode;

use clap::{Args, Subcommand};

use super::CliError;
use super::bench_link::{self, BenchLinkArgs};

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
    /// The linker: 8 cores x 100k and 256 cores x 1k instructions, each against 10x fewer.
    Link(BenchLinkArgs),
}

/// Runs `lncsim bench`.
pub fn run(args: &BenchArgs) -> Result<ExitCode, CliError> {
    match &args.what {
        BenchCommand::Link(a) => bench_link::run(a),
    }
}
