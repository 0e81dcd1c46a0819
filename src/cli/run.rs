//! `lncsim run`: the whole flow on one program, with every check it can run.
//!
//! Today: generate (or read) -> verify -> interpret -> split -> run the split
//! modules in seeded barrier-respecting interleavings -> compare. Stages not
//! built yet are listed as such; the report never claims a check it did not run.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use lncsim_model::program::interleave::run_interleaved;
use lncsim_model::program::{GenConfig, generate, interpret, seeded_inputs};
use lncsim_model::split::split;

use super::gen_cmd::Size;
use super::{CliError, parse_u64, read_module};

/// Arguments of `lncsim run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// A program in the text format; without it, the seeded default program.
    pub file: Option<PathBuf>,
    /// The run seed (decimal or 0x hex): program, inputs and schedules.
    #[arg(long, default_value = "0", value_parser = parse_u64)]
    pub seed: u64,
    /// Number of cores of the generated program.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub cores: u32,
    /// Size of the generated program.
    #[arg(long, value_enum, default_value_t = Size::Small)]
    pub size: Size,
    /// Number of interleavings of the split modules to check.
    #[arg(long, default_value_t = 8)]
    pub schedules: u32,
}

/// Runs the flow and prints a one-screen report.
pub fn run(a: RunArgs) -> Result<ExitCode, CliError> {
    println!("seed {}", a.seed);
    let program = match &a.file {
        Some(f) => read_module(f)?,
        None => generate(&GenConfig::new(a.seed, a.cores, a.size.into())),
    };
    let replay = match &a.file {
        Some(f) => format!("lncsim run {} --seed {}", f.display(), a.seed),
        None => format!("lncsim run --seed {} --cores {} --size {:?}", a.seed, a.cores, a.size).to_lowercase(),
    };
    let bad = |e: String| CliError::BadInput(e);
    program.verify().map_err(|e| bad(format!("program: {e}")))?;
    let insts: usize = program.functions.iter().map(|f| f.insts.len()).sum();
    println!(
        "program  {} ({} cores, {} instructions, {} locations)",
        program.name,
        program.attrs.lnc_size,
        insts,
        program.memlocs.len()
    );
    let inputs = seeded_inputs(&program, a.seed);
    let golden = interpret(&program, &inputs).map_err(|e| bad(format!("interpret: {e}")))?;
    println!("interp   ok ({} outputs)", golden.len());
    let modules = split(&program).map_err(|e| bad(format!("split: {e}")))?;
    let views = modules.iter().flat_map(|m| &m.memlocs).filter(|l| l.remote_local_target.is_some()).count();
    println!("split    ok ({} modules, {} cross-core views)", modules.len(), views);
    let mut failed = Vec::new();
    for s in 0..a.schedules {
        let sched_seed = a.seed.wrapping_add(u64::from(s));
        match run_interleaved(&modules, &inputs, sched_seed) {
            Ok(out) if out == golden => {}
            Ok(_) => failed.push(format!("schedule {sched_seed}: outputs differ from the interpreter's")),
            Err(e) => failed.push(format!("schedule {sched_seed}: {e}")),
        }
    }
    let verdict = if failed.is_empty() { "pass" } else { "FAIL" };
    println!("check    split preserves outputs over {} interleavings: {verdict}", a.schedules);
    println!("not built yet: allocate, link, codegen, package, load, execute (no checks claimed for them)");
    if failed.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        for f in &failed {
            println!("  {f}");
        }
        println!("replay: {replay}");
        Err(CliError::CheckFailed(format!("{} of {} interleavings failed", failed.len(), a.schedules)))
    }
}
