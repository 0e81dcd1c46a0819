//! `lncsim bench <what>`: speed benchmarks that print their figures next to
//! their targets in one run (medians and ratios). Each benchmark lives in its
//! own file (`bench_<what>.rs`); this file only groups them.

use std::process::ExitCode;

use clap::Subcommand;

use super::{CliError, bench_alloc, bench_flow, bench_link, bench_load, bench_neff, bench_sim};

/// The benchmarks.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// The DRAM allocator: generated problems of 1k..1M intervals, the naive
    /// all-pairs baseline at 10k, and every MiniMalloc file in both orders.
    Alloc(bench_alloc::BenchAllocArgs),
    /// The linker: 8 cores x 100k and 256 cores x 1k instructions, each against 10x fewer.
    Link(bench_link::BenchLinkArgs),
    /// Full NEFF parse vs bare flate2 + tar inflate-and-walk of the same ~50 MB NEFF.
    Neff(bench_neff::BenchNeffArgs),
    /// nrt_load + nrt_unload of an 8-core NEFF (loads/s), and one 256-subgraph load (the fan-out limit).
    Load(bench_load::BenchLoadArgs),
    /// The simulator: simulated instructions/s and events/s on a generated
    /// workload, and the overhead against a bare event loop of the same events.
    Sim(bench_sim::BenchSimArgs),
    /// The whole flow of `lncsim run`, every check on, at 1k, 10k and 100k
    /// instructions per core on 8 cores: per-stage time, peak RSS and growth.
    Flow(bench_flow::BenchFlowArgs),
}

/// Runs one benchmark.
pub fn run(c: BenchCommand) -> Result<ExitCode, CliError> {
    match c {
        BenchCommand::Alloc(a) => bench_alloc::run(&a),
        BenchCommand::Link(a) => bench_link::run(&a),
        BenchCommand::Neff(a) => bench_neff::run(a),
        BenchCommand::Load(a) => bench_load::run(a),
        BenchCommand::Sim(a) => bench_sim::run(&a),
        BenchCommand::Flow(a) => bench_flow::run(&a),
    }
}
