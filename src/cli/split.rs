//! `lncsim split`: split a program into per-core modules and print them.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use lncsim_model::ir;
use lncsim_model::split::split;

use super::{CliError, read_module, shown};

/// Arguments of `lncsim split`.
#[derive(Debug, Args)]
pub struct SplitArgs {
    /// The program (`-` reads standard input).
    pub file: PathBuf,
    /// Split for this many cores instead of the program's lnc_size (every op's core must be below it).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=256), allow_negative_numbers = true)]
    pub cores: Option<u32>,
}

/// Splits and prints each module after a `# core N of M` comment line.
pub fn run(a: SplitArgs) -> Result<ExitCode, CliError> {
    let mut m = read_module(&a.file)?;
    if let Some(n) = a.cores {
        m.attrs.lnc_size = n;
    }
    let modules = split(&m).map_err(|e| CliError::BadInput(format!("{}: {e}", shown(&a.file))))?;
    for (c, m) in modules.iter().enumerate() {
        println!("# core {c} of {}", modules.len());
        print!("{}", ir::print(m));
    }
    Ok(ExitCode::SUCCESS)
}
