//! `lncsim fmt`: parse a program and print it in normal form.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use lncsim_model::ir;

use super::{CliError, parse_program, read_module_unchecked, read_text, shown};

/// Arguments of `lncsim fmt`.
#[derive(Debug, Args)]
pub struct FmtArgs {
    /// The program (`-` reads standard input).
    pub file: PathBuf,
    /// Also run the IR verifier and the device check, and fail (exit 1) on an invalid construct or one
    /// the device cannot run (the first is named, FILE:LINE:COL, with a count); warn about data hazards.
    #[arg(long)]
    pub verify: bool,
}

/// Parses and prints.
pub fn run(a: FmtArgs) -> Result<ExitCode, CliError> {
    let m =
        if a.verify { parse_program(&read_text(&a.file)?, &shown(&a.file))? } else { read_module_unchecked(&a.file)? };
    if a.verify {
        m.verify().map_err(|e| CliError::BadInput(format!("{}: {e}", shown(&a.file))))?;
    }
    print!("{}", ir::print(&m));
    Ok(ExitCode::SUCCESS)
}
