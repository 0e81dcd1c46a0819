//! `lncsim gen`: print a seeded program in the text format.

use std::process::ExitCode;

use clap::{Args, ValueEnum};
use lncsim_model::ir;
use lncsim_model::program::{GenConfig, SizeClass, generate};

use super::{CliError, parse_u64};

/// Program size, as `--size` spells it.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Size {
    /// About 24 ops, tensors up to 4 Ki elements.
    Small,
    /// About 120 ops, tensors up to 64 Ki elements.
    Medium,
    /// About 600 ops, tensors up to 1 Mi elements.
    Large,
}

impl From<Size> for SizeClass {
    fn from(s: Size) -> Self {
        match s {
            Size::Small => SizeClass::Small,
            Size::Medium => SizeClass::Medium,
            Size::Large => SizeClass::Large,
        }
    }
}

/// Arguments of `lncsim gen`.
#[derive(Debug, Args)]
pub struct GenArgs {
    /// The seed that drives every choice (decimal or 0x hex).
    #[arg(long, default_value = "0", value_parser = parse_u64, allow_negative_numbers = true)]
    pub seed: u64,
    /// Number of cores (lnc_size), 1 to 256.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=256), allow_negative_numbers = true)]
    pub cores: u32,
    /// Program size.
    #[arg(long, value_enum, default_value_t = Size::Small)]
    pub size: Size,
}

/// Prints the program.
pub fn run(a: GenArgs) -> Result<ExitCode, CliError> {
    let p = generate(&GenConfig::new(a.seed, a.cores, a.size.into()));
    print!("{}", ir::print(&p));
    Ok(ExitCode::SUCCESS)
}
