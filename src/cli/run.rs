//! `lncsim run`: the whole flow on one program (or NEFF) with every check.
//!
//! Prints the seed first, then one line per stage, the simulator's figures
//! and every check with the invariants it guards; exits 1 on any failure and
//! prints the one command that replays the run. See `lncsim_sim::flow`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use lncsim_model::ir;
use lncsim_model::neff::NeffHeader;
use lncsim_sim::flow::shrink::shrink;
use lncsim_sim::flow::{DEFAULT_EVENTS_MAX, LoadFault, PlantedBug, RunConfig, Source, run as run_flow};

use super::gen_cmd::Size;
use super::{CliError, parse_u64, read_bytes};

/// Arguments of `lncsim run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// A program in the text format, or a NEFF packed by lncsim; without it, the seeded default program.
    pub file: Option<PathBuf>,
    /// The run seed (decimal or 0x hex): the generated program, inputs, staging order, jitter, faults.
    #[arg(long, default_value = "0", value_parser = parse_u64)]
    pub seed: u64,
    /// Number of cores of the generated program.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub cores: u32,
    /// Size of the generated program.
    #[arg(long, value_enum, default_value_t = Size::Small)]
    pub size: Size,
    /// Seeded latency jitter, to explore other schedules.
    #[arg(long)]
    pub jitter: bool,
    /// Faults to inject, comma-separated: `stall`, `dma`, `load-alloc=K`, `load-copyin=K`.
    #[arg(long, value_delimiter = ',', value_name = "FAULT")]
    pub faults: Vec<String>,
    /// Concurrent TNC-cache loaders stepped by the seeded scheduler (0 = none).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=64))]
    pub loaders: u32,
    /// Plant a bug on purpose: overlap-live-tensors, duplicate-barrier-id, unsynced-shared, drop-sem-signal, tnc-no-wake.
    #[arg(long, value_name = "NAME")]
    pub plant: Option<String>,
    /// The simulator's event budget: the run fails past it.
    #[arg(long, default_value_t = DEFAULT_EVENTS_MAX)]
    pub events_max: u64,
    /// Write a Chrome/Perfetto trace (JSON) of the simulation to this file.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// On failure, shrink the program (fewer cores, ops, elements, instructions) and print the smallest that still fails.
    #[arg(long)]
    pub shrink: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Parses `--faults` words into the run's faults.
fn faults(words: &[String], cfg: &mut RunConfig) -> Result<(), CliError> {
    for w in words.iter().map(|w| w.trim()).filter(|w| !w.is_empty()) {
        let k =
            |v: &str| v.parse::<u64>().map_err(|_| CliError::BadInput(format!("--faults {w}: `{v}` is not a number")));
        match w.split_once('=') {
            None if w == "stall" => cfg.faults.stall = true,
            None if w == "dma" => cfg.faults.dma_spikes = true,
            Some(("load-alloc", v)) => cfg.faults.load = Some(LoadFault::Alloc(k(v)?)),
            Some(("load-copyin", v)) => cfg.faults.load = Some(LoadFault::CopyIn(k(v)?)),
            _ => {
                return Err(CliError::BadInput(format!(
                    "--faults: unknown fault `{w}` (stall, dma, load-alloc=K, load-copyin=K)"
                )));
            }
        }
    }
    Ok(())
}

/// The run's config from the arguments.
fn config(a: &RunArgs) -> Result<RunConfig, CliError> {
    let mut cfg = RunConfig::generated(a.seed, a.cores, a.size.into());
    if let Some(path) = &a.file {
        let bytes = read_bytes(path)?;
        let name = path.display().to_string();
        cfg.source = if NeffHeader::parse(&bytes).is_ok() {
            Source::Neff { bytes, path: name }
        } else {
            let text = String::from_utf8(bytes)
                .map_err(|_| CliError::BadInput(format!("{name}: neither a NEFF nor a UTF-8 program")))?;
            let module = ir::parse(&text).map_err(|e| CliError::BadInput(format!("{name}:{e}")))?;
            Source::Program { module, path: name }
        };
    }
    cfg.jitter = a.jitter;
    faults(&a.faults, &mut cfg)?;
    cfg.faults.loaders = a.loaders;
    cfg.plant = match &a.plant {
        None => None,
        Some(n) => Some(PlantedBug::from_name(n).ok_or_else(|| {
            let names: Vec<&str> = PlantedBug::ALL.iter().map(|b| b.name()).collect();
            CliError::BadInput(format!("--plant: unknown bug `{n}` ({})", names.join(", ")))
        })?),
    };
    cfg.events_max = a.events_max;
    cfg.trace = a.trace.is_some();
    Ok(cfg)
}

/// Runs the flow and prints the report.
pub fn run(a: RunArgs) -> Result<ExitCode, CliError> {
    let cfg = config(&a)?;
    let report = run_flow(&cfg);
    if let (Some(path), Some(trace)) = (&a.trace, report.sim.as_ref().and_then(|s| s.trace.as_ref())) {
        let file = std::fs::File::create(path).map_err(|e| CliError::BadInput(format!("{}: {e}", path.display())))?;
        trace.write_chrome(file).map_err(|e| CliError::BadInput(format!("{}: {e}", path.display())))?;
    }
    if a.json {
        println!("{}", report.to_json());
    } else {
        print!("{report}");
        if let Some(path) = &a.trace {
            println!("trace    {}", path.display());
        }
    }
    if report.passed() {
        return Ok(ExitCode::SUCCESS);
    }
    if a.shrink {
        eprintln!("shrinking (up to 400 runs) ...");
        if let Some(s) = shrink(&cfg, 400) {
            let replay = s.config.replay().unwrap_or_default();
            println!("# smallest failing program ({} runs); save it as shrunk.bir and replay: {replay}", s.runs);
            print!("{}", ir::print(&s.program));
            print!("{}", s.report);
        }
    }
    Err(CliError::CheckFailed(format!("{} failure(s), listed above", report.failures().len())))
}
