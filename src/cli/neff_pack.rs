//! `lncsim neff pack`: split, allocate, link, codegen and package a program into a NEFF.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use lncsim_model::dram::check_modules;
use lncsim_model::link::check_link;
use lncsim_model::neff::pack::DEFAULT_LEVEL;
use lncsim_model::neff::{Compression, PackOptions, pack};
use lncsim_model::pipeline::{PipelineOptions, compile};

use super::files::{check_output, is_stdio, write_file};
use super::{CliError, parse_u64, read_module, shown};

/// Arguments of `lncsim neff pack`.
#[derive(Debug, Args)]
pub struct PackArgs {
    /// The program in the text format (`-` reads standard input).
    pub file: PathBuf,
    /// Split for this many cores instead of the program's lnc_size.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=256), allow_negative_numbers = true)]
    pub cores: Option<u32>,
    /// Folded into the NEFF's UUID (decimal or 0x hex): the same seed gives the same bytes.
    #[arg(long, default_value = "0", value_parser = parse_u64, allow_negative_numbers = true)]
    pub seed: u64,
    /// Write a plain (uncompressed) ustar payload, as `neuron-packager optimize` does.
    #[arg(long)]
    pub uncompressed: bool,
    /// The gzip (deflate) level: 0 (stored) to 9 (smallest, slowest); the default is chosen for speed.
    #[arg(long, default_value_t = DEFAULT_LEVEL, value_parser = clap::value_parser!(u32).range(0..=9),
          conflicts_with = "uncompressed")]
    pub level: u32,
    /// CC-buffer region per core in MiB; -1 (the default) sizes it from the collective operands.
    #[arg(long, default_value_t = -1, allow_negative_numbers = true,
          value_parser = clap::value_parser!(i64).range(-1..=(1 << 24)))]
    pub allreduce_buffer_size: i64,
    /// The NEFF file to write, all or nothing (`-` writes it to standard output and the summary to stderr).
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
}

/// Compiles, checks, packages and writes the NEFF; prints one summary line.
pub fn run(a: PackArgs) -> Result<ExitCode, CliError> {
    if !is_stdio(&a.output) {
        check_output("--output", &a.output)?;
    }
    let mut program = read_module(&a.file)?;
    if let Some(n) = a.cores {
        program.attrs.lnc_size = n;
    }
    let opts = PipelineOptions { allreduce_buffer_size_mib: a.allreduce_buffer_size, ..PipelineOptions::default() };
    let bad = |e: String| CliError::BadInput(format!("{}: {e}", shown(&a.file)));
    let compiled = compile(&program, &opts).map_err(|e| bad(e.to_string()))?;
    let ir = check_modules(&compiled.per_core, &opts.check_config(&compiled.report));
    let link = check_link(&compiled.per_core, &compiled.linked);
    if let Some(v) = ir.first() {
        return Err(CliError::CheckFailed(format!("IR checker: {v} ({} violations)", ir.len())));
    }
    if let Some(v) = link.first() {
        return Err(CliError::CheckFailed(format!("link checker: {v} ({} violations)", link.len())));
    }
    let compression = if a.uncompressed { Compression::None } else { Compression::Gzip };
    let bytes = pack(&compiled.linked, &PackOptions { seed: a.seed, compression, level: a.level })
        .map_err(|e| bad(e.to_string()))?;
    let summary = format!(
        "{}: {} bytes, {} subgraphs, lnc_size {}, seed {}, {}",
        a.output.display(),
        bytes.len(),
        compiled.per_core.len(),
        compiled.linked.attrs.lnc_size,
        a.seed,
        if a.uncompressed { "uncompressed".to_string() } else { format!("gzip level {}", a.level) }
    );
    if is_stdio(&a.output) {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        match out.write_all(&bytes).and_then(|()| out.flush()) {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(141),
            r => r.map_err(|e| CliError::BadInput(format!("<stdout>: {e}")))?,
        }
        eprintln!("{summary}");
    } else {
        write_file(&a.output, &bytes)?;
        println!("{summary}");
    }
    Ok(ExitCode::SUCCESS)
}
