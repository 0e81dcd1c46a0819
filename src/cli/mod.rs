//! Command-line parsing and dispatch: one file per subcommand.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub mod alloc;
pub mod bench;
pub mod bench_alloc;

/// Exit status: success.
pub const EXIT_OK: u8 = 0;
/// Exit status: a check failed, or the run found a bug.
pub const EXIT_CHECK_FAILED: u8 = 1;
/// Exit status: bad command-line usage (clap's own code).
pub const EXIT_USAGE: u8 = 2;
/// Exit status: the input was rejected (parse error, bad CSV, bad NEFF, missing file).
pub const EXIT_BAD_INPUT: u8 = 3;

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
    /// Allocate a MiniMalloc CSV problem with the DRAM allocator and check it.
    Alloc(alloc::AllocArgs),
    /// Run a speed benchmark and print its figures against its targets.
    Bench(bench::BenchArgs),
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
    /// Bad usage that clap could not catch (conflicting values).
    #[error("{0}")]
    Usage(String),
}

impl CliError {
    /// The process exit status for this error (README.md, "Exit codes").
    pub fn exit_code(&self) -> ExitCode {
        ExitCode::from(match self {
            CliError::BadInput(_) => EXIT_BAD_INPUT,
            CliError::CheckFailed(_) => EXIT_CHECK_FAILED,
            CliError::Usage(_) => EXIT_USAGE,
        })
    }
}

/// Reads a whole input file as UTF-8 text; `-` reads standard input.
pub fn read_text(path: &Path) -> Result<String, CliError> {
    use std::io::Read;
    if path == Path::new("-") {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .map_err(|e| CliError::BadInput(format!("<stdin>: {e}")))?;
        return Ok(s);
    }
    std::fs::read_to_string(path)
        .map_err(|e| CliError::BadInput(format!("{}: {e}", path.display())))
}

/// Reads a whole input file as bytes; `-` reads standard input.
pub fn read_bytes(path: &Path) -> Result<Vec<u8>, CliError> {
    use std::io::Read;
    if path == Path::new("-") {
        let mut v = Vec::new();
        std::io::stdin()
            .read_to_end(&mut v)
            .map_err(|e| CliError::BadInput(format!("<stdin>: {e}")))?;
        return Ok(v);
    }
    std::fs::read(path).map_err(|e| CliError::BadInput(format!("{}: {e}", path.display())))
}

/// Writes `bytes` to `path`, reporting a failure as one line.
pub fn write_file(path: &PathBuf, bytes: &[u8]) -> Result<(), CliError> {
    std::fs::write(path, bytes).map_err(|e| CliError::BadInput(format!("{}: {e}", path.display())))
}

/// Runs the chosen subcommand.
pub fn dispatch(cli: Cli) -> Result<ExitCode, CliError> {
    match &cli.command {
        Command::Alloc(a) => alloc::run(a),
        Command::Bench(b) => bench::run(b),
    }
}
