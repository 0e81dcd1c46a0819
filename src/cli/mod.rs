//! Command-line parsing and dispatch: one file per subcommand.

use std::path::Path;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod alloc;
mod alloc_judge;
mod bench;
mod bench_alloc;
mod bench_flow;
mod bench_link;
mod bench_load;
mod bench_neff;
mod bench_sim;
mod compile;
mod files;
mod fmt;
mod gen_cmd;
mod interp;
mod junit;
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
/// Exit status: bad command-line usage (clap's own code, and ours for values clap cannot judge).
pub const EXIT_USAGE: u8 = 2;
/// Exit status: the request does not apply to this input (nothing was checked).
pub const EXIT_NOT_APPLICABLE: u8 = 3;
/// Exit status: interrupted by Ctrl-C (128 + SIGINT), after the partial report.
pub const EXIT_INTERRUPTED: u8 = 130;

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
    /// The NEFF container: pack a program into one, inspect one, unpack one.
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
    /// Bad command-line usage that clap cannot see (a value out of its range, options that conflict).
    #[error("{0}")]
    Usage(String),
    /// The request does not apply to this input: nothing was checked.
    #[error("{0}")]
    NotApplicable(String),
    /// Interrupted (Ctrl-C) after the partial report was printed.
    #[error("{0}")]
    Interrupted(String),
}

impl CliError {
    /// The process exit status for this error (README.md, "Exit codes").
    pub fn exit_code(&self) -> ExitCode {
        ExitCode::from(match self {
            CliError::BadInput(_) | CliError::CheckFailed(_) => EXIT_FAILED,
            CliError::Usage(_) => EXIT_USAGE,
            CliError::NotApplicable(_) => EXIT_NOT_APPLICABLE,
            CliError::Interrupted(_) => EXIT_INTERRUPTED,
        })
    }
}

/// The name of an input in messages: `<stdin>` for `-`.
pub fn shown(path: &Path) -> String {
    if files::is_stdio(path) { "<stdin>".to_owned() } else { path.display().to_string() }
}

/// The largest text input (a program, a module, a CSV), bytes: 512 MiB,
/// about 4M instructions of the text format, whose parse stays within a few
/// GB; the pipeline then refuses more than
/// `lncsim_model::pipeline::MAX_PROGRAM_INSTRUCTIONS` by count. Larger text
/// is refused before it is read whole.
pub const MAX_TEXT_BYTES: u64 = 512 << 20;

/// Reads a whole input file as UTF-8 text; `-` reads standard input. Text
/// that is not UTF-8 is refused with the line and column of its first bad byte;
/// text over [`MAX_TEXT_BYTES`] with one line naming the limit.
pub fn read_text(path: &Path) -> Result<String, CliError> {
    utf8_text(path, read_bytes_limited(path, MAX_TEXT_BYTES)?).map_err(CliError::BadInput)
}

/// [`read_bytes`], refusing more than `limit` bytes (read at most `limit + 1`).
pub fn read_bytes_limited(path: &Path, limit: u64) -> Result<Vec<u8>, CliError> {
    use std::io::Read;
    let too_big = || {
        CliError::BadInput(format!("{}: larger than {} MiB, the most lncsim reads as text", shown(path), limit >> 20))
    };
    let mut v = Vec::new();
    if files::is_stdio(path) {
        std::io::stdin()
            .take(limit.saturating_add(1))
            .read_to_end(&mut v)
            .map_err(|e| CliError::BadInput(format!("<stdin>: {e}")))?;
    } else {
        let meta = std::fs::metadata(path).map_err(|e| CliError::BadInput(format!("{}: {e}", path.display())))?;
        if meta.is_dir() {
            return Err(CliError::BadInput(format!("{}: is a directory, expected a file", path.display())));
        }
        if meta.len() > limit {
            return Err(too_big());
        }
        let f = std::fs::File::open(path).map_err(|e| CliError::BadInput(format!("{}: {e}", path.display())))?;
        f.take(limit.saturating_add(1))
            .read_to_end(&mut v)
            .map_err(|e| CliError::BadInput(format!("{}: {e}", path.display())))?;
    }
    if v.len() as u64 > limit {
        return Err(too_big());
    }
    Ok(v)
}

/// `bytes` as text, or `file:line:col: not UTF-8 text (byte 0x..)` at the first bad byte.
pub fn utf8_text(path: &Path, bytes: Vec<u8>) -> Result<String, String> {
    String::from_utf8(bytes).map_err(|e| {
        let bytes = e.as_bytes();
        let at = e.utf8_error().valid_up_to();
        let before = &bytes[..at];
        let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
        let line_start = before.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let col = String::from_utf8_lossy(&before[line_start..]).chars().count() + 1;
        let byte = bytes.get(at).copied().unwrap_or(0);
        format!("{}:{line}:{col}: not UTF-8 text (byte {byte:#04x})", shown(path))
    })
}

/// Reads a whole input file as bytes; `-` reads standard input.
pub fn read_bytes(path: &Path) -> Result<Vec<u8>, CliError> {
    use std::io::Read;
    if files::is_stdio(path) {
        let mut v = Vec::new();
        std::io::stdin().read_to_end(&mut v).map_err(|e| CliError::BadInput(format!("<stdin>: {e}")))?;
        return Ok(v);
    }
    if std::fs::metadata(path).is_ok_and(|m| m.is_dir()) {
        return Err(CliError::BadInput(format!("{}: is a directory, expected a file", path.display())));
    }
    std::fs::read(path).map_err(|e| CliError::BadInput(format!("{}: {e}", path.display())))
}

/// Parses a u64 written in decimal or as `0x` hex (clap value parser).
pub fn parse_u64(s: &str) -> Result<u64, String> {
    let (digits, radix) = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => (h, 16),
        None => (s, 10),
    };
    u64::from_str_radix(digits, radix).map_err(|e| match e.kind() {
        std::num::IntErrorKind::PosOverflow => format!("`{s}` is out of range (at most {})", u64::MAX),
        _ if s.starts_with('-') => format!("`{s}` is negative; expected 0 to {}", u64::MAX),
        _ => format!("`{s}` is not a number (decimal or 0x hex)"),
    })
}

/// Reads and parses a program in the text format; errors read `file:line:col: message`.
/// Reads and parses a module, then refuses what the device cannot run
/// (`FILE:LINE:COL: ...`, the first with a count) and prints its warnings
/// (cross-engine data hazards) to stderr, at most five and a count.
pub fn read_module(path: &Path) -> Result<lncsim_model::ir::Module, CliError> {
    let text = read_text(path)?;
    parse_program(&text, &shown(path))
}

/// [`read_module`] on text already read; `name` is the file's name in messages.
pub fn parse_program(text: &str, name: &str) -> Result<lncsim_model::ir::Module, CliError> {
    parse_program_mapped(text, name).map(|(m, _)| m)
}

/// [`parse_program`], also saying where each instruction was written.
pub fn parse_program_mapped(
    text: &str,
    name: &str,
) -> Result<(lncsim_model::ir::Module, lncsim_model::ir::SourceMap), CliError> {
    use lncsim_model::ir::device_check::{Severity, device_check};
    let (m, map) = lncsim_model::ir::parse_with_map(text).map_err(|e| CliError::BadInput(format!("{name}:{e}")))?;
    let findings = device_check(&m, Some(&map));
    let (errors, warnings): (Vec<_>, Vec<_>) = findings.iter().partition(|f| f.severity == Severity::Error);
    if let Some(first) = errors.first() {
        let more = if errors.len() > 1 { format!(" (and {} more)", errors.len() - 1) } else { String::new() };
        return Err(CliError::BadInput(format!("{name}:{first}{more}")));
    }
    for w in warnings.iter().take(5) {
        eprintln!("lncsim: warning: {name}:{w}");
    }
    if warnings.len() > 5 {
        eprintln!("lncsim: warning: {name}: {} more data hazard warning(s)", warnings.len() - 5);
    }
    Ok((m, map))
}

/// Reads and parses a module without the device check (the formatter's input).
pub fn read_module_unchecked(path: &Path) -> Result<lncsim_model::ir::Module, CliError> {
    let text = read_text(path)?;
    lncsim_model::ir::parse(&text).map_err(|e| CliError::BadInput(format!("{}:{e}", shown(path))))
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::{Cli, parse_u64};

    /// Every value parser matches its field's type: a mismatch only shows when
    /// a value is read, so parse every subcommand with values for its options.
    #[test]
    fn every_command_parses_with_values() {
        Cli::command().debug_assert();
        let lines = [
            "gen --seed 0x10 --cores 3 --size medium",
            "gen --seed 1 --cores 8 --ops 1000 --elems 16",
            "run --cores 8 --ops 100 --elems 0x10 --no-times",
            "bench flow --sizes 10,100 --cores 2 --reps 3 --seed 2 --elems 8",
            "fmt x --verify",
            "interp x --seed 5 --json",
            "split x --cores 2",
            "compile x --cores 2 --allreduce-buffer-size -1 --dram-region-mib 8 --shared-core-cap-mib 0 --link-dir d",
            "link x --cores 2 --allreduce-buffer-size 500 --link-dir d --json",
            "link --modules a b",
            "link --modules a b --linked l --json",
            "alloc x --align 1 --order size --capacity 0x100 --out o --svg s --json",
            "alloc x --judge --no-compare --align 4096 --capacity 0x100 --svg s --json",
            "neff pack x -o y --cores 2 --seed 3 --uncompressed --allreduce-buffer-size -1",
            "neff pack x -o y --level 9",
            "neff inspect x --json --verify-hash",
            "neff unpack x d --verify-hash",
            "load x --cores 4 --fail-alloc 2 --json",
            "run x --seed 1 --jitter --faults stall,dma --loaders 2 --plant p --events-max 9 --trace t --shrink --json",
            "run --cores 2 --size large",
            "swarm --seeds 0x0..0x10 --jobs 1 --cores-max 2 --check-determinism --plant p --json",
            "swarm --seeds 0..100 --shard 3/8 --time-budget 60 --junit j.xml",
            "bench alloc --max-intervals 1000 --live 4 --reps 2 --seed 1 --dir d",
            "bench link --runs 1 --quick",
            "bench neff --mib 1 --runs 1 --seed 1",
            "bench load --loads 1 --runs 1 --seed 1",
            "bench sim --cores 2 --ops 10 --elems 16 --runs 1 --seed 1 --jitter --no-checks",
        ];
        for line in lines {
            let args = std::iter::once("lncsim").chain(line.split_whitespace());
            if let Err(e) = Cli::try_parse_from(args) {
                panic!("{line}: {e}");
            }
        }
    }

    #[test]
    fn numbers_say_why_they_are_refused() {
        assert_eq!(parse_u64("0x10"), Ok(16));
        assert_eq!(parse_u64("0X10"), Ok(16));
        assert!(parse_u64("-1").unwrap_err().contains("negative"));
        assert!(parse_u64("18446744073709551616").unwrap_err().contains("out of range"));
        assert!(parse_u64("0x").unwrap_err().contains("not a number"));
        assert!(parse_u64("").unwrap_err().contains("not a number"));
    }
}
