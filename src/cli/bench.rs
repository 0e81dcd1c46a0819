//! `lncsim bench ...`: benchmarks that print their figures and comparisons in one run.

use std::process::ExitCode;

use clap::Subcommand;

use super::{CliError, bench_load, bench_neff};

/// The `bench` subcommands (others, e.g. `alloc`, are added here).
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Full NEFF parse vs bare flate2 + tar inflate-and-walk of the same ~50 MB NEFF.
    Neff(bench_neff::BenchNeffArgs),
    /// nrt_load + nrt_unload of an 8-core NEFF (loads/s), and one 256-subgraph load (the fan-out limit).
    Load(bench_load::BenchLoadArgs),
}

/// Runs one benchmark.
pub fn run(c: BenchCommand) -> Result<ExitCode, CliError> {
    match c {
        BenchCommand::Neff(a) => bench_neff::run(a),
        BenchCommand::Load(a) => bench_load::run(a),
    }
}
