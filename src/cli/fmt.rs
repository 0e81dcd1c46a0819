//! `lncsim fmt`: parse a program and print it in normal form.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use lncsim_model::ir;

use super::{CliError, read_module, shown};

/// Arguments of `lncsim fmt`.
#[derive(Debug, Args)]
pub struct FmtArgs {
    /// The program (`-` reads standard input).
    pub file: PathBuf,
    /// Also run the IR verifier and fail (exit 1) on an invalid construct (the first is named, with a count).
    #[arg(long)]
    pub verify: bool,
}

/// Parses and prints.
pub fn run(a: FmtArgs) -> Result<ExitCode, CliError> {
    let m = read_module(&a.file)?;
    if a.verify {
        m.verify().map_err(|e| CliError::BadInput(format!("{}: {e}", shown(&a.file))))?;
    }
    print!("{}", ir::print(&m));
    Ok(ExitCode::SUCCESS)
}
