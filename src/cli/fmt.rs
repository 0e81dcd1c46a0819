//! `lncsim fmt`: parse a program and print it in normal form.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use lncsim_model::ir;

use super::{CliError, read_module};

/// Arguments of `lncsim fmt`.
#[derive(Debug, Args)]
pub struct FmtArgs {
    /// The program (`-` reads standard input).
    pub file: PathBuf,
    /// Also run the IR verifier and fail on the first invalid construct.
    #[arg(long)]
    pub verify: bool,
}

/// Parses and prints.
pub fn run(a: FmtArgs) -> Result<ExitCode, CliError> {
    let m = read_module(&a.file)?;
    if a.verify {
        m.verify().map_err(|e| CliError::BadInput(format!("{}: {e}", a.file.display())))?;
    }
    print!("{}", ir::print(&m));
    Ok(ExitCode::SUCCESS)
}
