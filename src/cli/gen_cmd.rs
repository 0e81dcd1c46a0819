//! `lncsim gen`: print a seeded program in the text format, of a size class
//! (`--size`) or of N instructions per core (`--ops N`, tensors of at most
//! `--elems` elements; refused past the generator's stated limits).

use std::process::ExitCode;

use clap::{Args, ValueEnum};
use lncsim_model::ir;
use lncsim_model::program::{GenConfig, MAX_OPS_PER_CORE, SizeClass, generate};

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
    #[arg(long, value_enum, default_value_t = Size::Small, conflicts_with = "ops")]
    pub size: Size,
    /// Instructions per core instead of a size class (exactly N x cores in all; at most 2,000,000 per core
    /// and 4,000,000 in all).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_OPS_PER_CORE)))]
    pub ops: Option<u32>,
    /// With --ops: the largest tensor, in elements (1 to 1048576).
    #[arg(long, default_value_t = DEFAULT_OPS_ELEMS, value_parser = parse_u64, requires = "ops")]
    pub elems: u64,
}

/// The default largest tensor of an `--ops` program: many small tensors.
pub const DEFAULT_OPS_ELEMS: u64 = 64;

/// The generator config of `--ops N` (or of the size class without it); a typed refusal past the limits.
pub fn gen_config(seed: u64, cores: u32, size: Size, ops: Option<u32>, elems: u64) -> Result<GenConfig, CliError> {
    match ops {
        None => Ok(GenConfig::new(seed, cores, size.into())),
        Some(n) => GenConfig::with_ops(seed, cores, n, elems).map_err(|e| CliError::BadInput(e.to_string())),
    }
}

/// Prints the program.
pub fn run(a: GenArgs) -> Result<ExitCode, CliError> {
    let p = generate(&gen_config(a.seed, a.cores, a.size, a.ops, a.elems)?);
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    use std::io::Write;
    let written = out.write_all(ir::print(&p).as_bytes()).and_then(|()| out.flush());
    match written {
        Ok(()) => Ok(ExitCode::SUCCESS),
        // `lncsim gen | head`: exit quietly with the SIGPIPE status, as every command does (README).
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(141),
        Err(e) => Err(CliError::BadInput(format!("<stdout>: {e}"))),
    }
}
