//! Command-line parsing and dispatch: one file per subcommand.

use std::path::Path;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod alloc;
mod bench;
mod bench_alloc;
mod bench_link;
mod bench_load;
mod bench_neff;
mod bench_sim;
mod compile;
mod fmt;
mod gen_cmd;
mod interp;
mod link;
mod load;
mod neff;
mod neff_inspect;
mod neff_pack;
mod neff_unpack;
mod run;
mod split;
mod swarm;

/// Exit status: a check failed, or the input was rejected (README.md, "Exit codes").
pub const EXIT_FAILED: u8 = 1;
/// Exit status: bad command-line usage (clap's own code, listed for the README).
#[allow(dead_code)]
pub const EXIT_USAGE: u8 = 2;

/// lncsim: a deterministic simulation and fuzzing test-bench for the multi-core
/// (LNC) flow of the AWS Neuron toolchain.
#[derive(Debug, Parser)]
#[command(name = "lncsim", version, about, long_about = None, arg_required_else_help = true)]
pub struct Cli {
    /// The subcommand to run.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print a seeded program in the text format.
    Gen(gen_cmd::GenArgs),
    /// Parse a program and print it in normal form (a formatter).
    Fmt(fmt::FmtArgs),
    /// Run the reference interpreter on seeded inputs and print output digests.
    Interp(interp::InterpArgs),
    /// Split a program into per-core modules and print them.
    Split(split::SplitArgs),
    /// Compile a program: split, allocate DRAM per core, equalize shared tensors; print the modules.
    Compile(compile::CompileArgs),
    /// Run the whole flow on one program and check every invariant.
    Run(run::RunArgs),
    /// Run many seeds, each with its own feature mix, and report every failing seed.
    Swarm(swarm::SwarmArgs),
    /// The NEFF container: inspect, unpack (and later pack).
    #[command(subcommand)]
    Neff(neff::NeffCommand),
    /// Load a NEFF onto a fresh simulated device (nrt_load, S0-S5) and report every stage.
    Load(load::LoadArgs),
    /// Benchmarks that print their figures and target comparisons.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// Allocate a MiniMalloc CSV problem with the DRAM allocator and check it.
    Alloc(alloc::AllocArgs),
    /// Link per-core modules (or a split program) into one `<name>/sgLnk` module and print it.
    Link(link::LinkArgs),
}

/// A command's failure: one line for the user and an exit status.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// The input was rejected: a parse error, a bad file, a bad value.
    #[error("{0}")]
    BadInput(String),
    /// A check failed: the message says which.
    #[error("{0}")]
    CheckFailed(String),
}

impl CliError {
    /// The process exit status for this error (README.md, "Exit codes").
    pub fn exit_code(&self) -> ExitCode {
        ExitCode::from(match self {
            CliError::BadInput(_) | CliError::CheckFailed(_) => EXIT_FAILED,
        })
    }
}

/// Reads a whole input file as UTF-8 text; `-` reads standard input.
pub fn read_text(path: &Path) -> Result<String, CliError> {
    use std::io::Read;
    if path == Path::new("-") {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s).map_err(|e| CliError::BadInput(format!("<stdin>: {e}")))?;
        return Ok(s);
    }
    std::fs::read_to_string(path).map_err(|e| CliError::BadInput(format!("{}: {e}", path.display())))
}

/// Reads a whole input file as bytes; `-` reads standard input.
pub fn read_bytes(path: &Path) -> Result<Vec<u8>, CliError> {
    use std::io::Read;
    if path == Path::new("-") {
        let mut v = Vec::new();
        std::io::stdin().read_to_end(&mut v).map_err(|e| CliError::BadInput(format!("<stdin>: {e}")))?;
        return Ok(v);
    }
    std::fs::read(path).map_err(|e| CliError::BadInput(format!("{}: {e}", path.display())))
}

/// Writes `bytes` to `path`, reporting a failure as one line.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<(), CliError> {
    std::fs::write(path, bytes).map_err(|e| CliError::BadInput(format!("{}: {e}", path.display())))
}

/// Parses a u64 written in decimal or as `0x` hex (clap value parser).
pub fn parse_u64(s: &str) -> Result<u64, String> {
    let r = match s.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16),
        None => s.parse(),
    };
    r.map_err(|_| format!("`{s}` is not a number (decimal or 0x hex)"))
}

/// Reads and parses a program in the text format; errors read `file:line:col: message`.
pub fn read_module(path: &Path) -> Result<lncsim_model::ir::Module, CliError> {
    let text = read_text(path)?;
    lncsim_model::ir::parse(&text).map_err(|e| CliError::BadInput(format!("{}:{e}", path.display())))
}

/// Runs the chosen subcommand.
pub fn dispatch(cli: Cli) -> Result<ExitCode, CliError> {
    match cli.command {
        Command::Gen(a) => gen_cmd::run(a),
        Command::Fmt(a) => fmt::run(a),
        Command::Interp(a) => interp::run(a),
        Command::Split(a) => split::run(a),
        Command::Compile(a) => compile::run(a),
        Command::Run(a) => run::run(a),
        Command::Swarm(a) => swarm::run(a),
        Command::Neff(c) => neff::run(c),
        Command::Load(a) => load::run(a),
        Command::Bench(c) => bench::run(c),
        Command::Alloc(a) => alloc::run(&a),
        Command::Link(a) => link::run(a),
    }
}
