//! `lncsim run`: the whole flow on one program (or NEFF) with every check.
//!
//! Prints the seed and the command that replays the run first (before any
//! work, so a killed run still told how to replay it), then one line per
//! stage and per check as each finishes, with its wall time, then the
//! simulator's figures and the result line counting the failures; exits 1 on
//! any failure and prints the replay command again. Times are wall-clock and
//! only printed: `--no-times` leaves them out (and `millis` out of `--json`),
//! so the output is byte-for-byte deterministic. See `lncsim_sim::flow`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use lncsim_model::ir;
use lncsim_model::neff::NeffHeader;
use lncsim_sim::flow::shrink::shrink;
use lncsim_sim::flow::{
    DEFAULT_EVENTS_MAX, LoadFault, PlantedBug, Progress, RunConfig, Source, SourceLines, run_observed,
};

use super::files::{check_output, write_with};
use super::gen_cmd::{DEFAULT_OPS_ELEMS, Size, gen_config};
use super::{CliError, parse_u64, shown, utf8_text};

/// Arguments of `lncsim run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// A program in the text format, a linked module (one function per core), a per-core module, or a NEFF
    /// packed by lncsim; without it, the seeded default program.
    #[arg(conflicts_with = "modules")]
    pub file: Option<PathBuf>,
    /// Per-core modules written by hand (text format, one per core, each with `core N` in its header):
    /// linked and simulated through the same checks (split skipped; allocation too when every location
    /// carries an address).
    #[arg(long, num_args = 1.., value_name = "FILE",
          conflicts_with_all = ["cores", "size", "ops", "shrink"])]
    pub modules: Vec<PathBuf>,
    /// The run seed (decimal or 0x hex): the generated program, inputs, staging order, jitter, faults.
    #[arg(long, default_value = "0", value_parser = parse_u64, allow_negative_numbers = true)]
    pub seed: u64,
    /// Number of cores of the generated program (not with FILE: a file names its own lnc_size).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=256),
          allow_negative_numbers = true, conflicts_with = "file")]
    pub cores: u32,
    /// Size of the generated program (not with FILE).
    #[arg(long, value_enum, default_value_t = Size::Small, conflicts_with_all = ["file", "ops"])]
    pub size: Size,
    /// Generate N instructions per core instead of a size class (as `lncsim gen --ops N`; not with FILE).
    #[arg(long, value_name = "N", conflicts_with = "file",
          value_parser = clap::value_parser!(u32).range(1..=i64::from(lncsim_model::program::MAX_OPS_PER_CORE)))]
    pub ops: Option<u32>,
    /// With --ops: the largest tensor, in elements (1 to 1048576).
    #[arg(long, default_value_t = DEFAULT_OPS_ELEMS, value_parser = parse_u64, requires = "ops")]
    pub elems: u64,
    /// Leave the wall times out of the report (text and --json), so it is deterministic.
    #[arg(long)]
    pub no_times: bool,
    /// Seeded latency jitter, to explore other schedules.
    #[arg(long)]
    pub jitter: bool,
    /// Faults to inject, comma-separated: `stall` (a core stalls), `dma` (DMA latency spikes), and at most
    /// one of `load-alloc=K` / `load-copyin=K` (a faulty nrt_load whose K-th device allocation / copy-in fails).
    #[arg(long, value_delimiter = ',', value_name = "FAULT")]
    pub faults: Vec<String>,
    /// Features that reach the seed contracts' end-to-end checks, comma-separated: `placed-shared` (seeded
    /// partition and bank on DRAM tensors), `unflagged-barriers` (barriers the linker must keep), `sem-pool`
    /// (every core uses the highest semaphore of the merged pool), `reloads` (the runtime loads again, once
    /// faulted at the asymmetric S0 edge and left registered), `partial-writes` (a third of the elementwise
    /// writes split in two halves, so destinations start past element 0).
    #[arg(long, value_delimiter = ',', value_name = "FEATURE")]
    pub features: Vec<String>,
    /// Concurrent TNC-cache loaders stepped by the seeded scheduler (0 = none).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=64), allow_negative_numbers = true)]
    pub loaders: u32,
    /// Plant a bug on purpose: overlap-live-tensors, duplicate-barrier-id, unsynced-shared, drop-sem-signal,
    /// tnc-no-wake, hbm-shared-per-core, sync-address-only, renumber-unflagged, keep-intermediate-output,
    /// single-core-sem-count, handle-rollback, drop-dst-offset (those that need a feature turn it on).
    #[arg(long, value_name = "NAME")]
    pub plant: Option<String>,
    /// The simulator's event budget: the run fails past it (decimal or 0x hex).
    #[arg(long, default_value_t = DEFAULT_EVENTS_MAX, value_parser = parse_u64, allow_negative_numbers = true)]
    pub events_max: u64,
    /// Write a Chrome/Perfetto trace (JSON) of the simulation to this file (when the simulation runs).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// On failure, shrink the program (fewer cores, ops, elements, instructions; up to 400 runs) and print the
    /// smallest that still fails (with --json: as `shrunk` in the object).
    #[arg(long)]
    pub shrink: bool,
    /// Print the report as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// Parses `--faults` words into the run's faults.
fn faults(words: &[String], cfg: &mut RunConfig) -> Result<(), CliError> {
    for w in words.iter().map(|w| w.trim()).filter(|w| !w.is_empty()) {
        let k = |v: &str| parse_u64(v).map_err(|e| CliError::Usage(format!("--faults {w}: {e}")));
        let mut load = |f: LoadFault| match cfg.faults.load.replace(f) {
            None => Ok(()),
            Some(_) => Err(CliError::Usage(format!("--faults {w}: at most one load-alloc/load-copyin fault per run"))),
        };
        match w.split_once('=') {
            None if w == "stall" => cfg.faults.stall = true,
            None if w == "dma" => cfg.faults.dma_spikes = true,
            Some(("load-alloc", v)) => load(LoadFault::Alloc(k(v)?))?,
            Some(("load-copyin", v)) => load(LoadFault::CopyIn(k(v)?))?,
            _ => {
                return Err(CliError::Usage(format!(
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
    if a.ops.is_some() {
        cfg.source = Source::Generated(gen_config(a.seed, a.cores, a.size, a.ops, a.elems)?, None);
    }
    if let Some(path) = &a.file {
        // A NEFF is compressed: its file is below its 4 GiB unpacked limit; text has its own limit.
        let bytes = super::read_bytes_limited(path, 4 << 30)?;
        let name = shown(path);
        cfg.source = match NeffHeader::parse(&bytes) {
            Ok(_) => Source::Neff { bytes, path: name },
            Err(_) if bytes.len() as u64 > super::MAX_TEXT_BYTES => {
                return Err(CliError::BadInput(format!(
                    "{name}: larger than {} MiB, the most lncsim reads as text, and not a NEFF",
                    super::MAX_TEXT_BYTES >> 20
                )));
            }
            Err(neff) => {
                let text = utf8_text(path, bytes)
                    .map_err(|e| CliError::BadInput(format!("{e}; not a NEFF either ({neff})")))?;
                let (module, map) = super::parse_program_mapped(&text, &name)?;
                let lines = Some(SourceLines::of(&module, &map, &name));
                if module.attrs.neuron_core_id.is_some() {
                    Source::Modules { modules: vec![module], paths: vec![name], lines }
                } else if module.functions.iter().any(|f| f.attrs.neuron_core_id.is_some()) {
                    Source::Linked { module, path: name, lines }
                } else {
                    Source::Program { module, path: name, lines }
                }
            }
        };
    }
    if !a.modules.is_empty() {
        let mut lines = SourceLines::default();
        let mut modules = Vec::new();
        let mut paths = Vec::new();
        for path in &a.modules {
            let name = shown(path);
            let text = super::read_text(path)?;
            let (module, map) = super::parse_program_mapped(&text, &name)?;
            lines.add(&module, &map, &name);
            modules.push(module);
            paths.push(name);
        }
        cfg.source = Source::Modules { modules, paths, lines: Some(lines) };
    }
    cfg.jitter = a.jitter;
    faults(&a.faults, &mut cfg)?;
    cfg.faults.loaders = a.loaders;
    for w in a.features.iter().map(|w| w.trim()).filter(|w| !w.is_empty()) {
        if !cfg.features.set(w) {
            let names = lncsim_sim::flow::Features::NAMES.join(", ");
            return Err(CliError::Usage(format!("--features: unknown feature `{w}` ({names})")));
        }
    }
    cfg.plant = match &a.plant {
        None => None,
        Some(n) => Some(PlantedBug::from_name(n).ok_or_else(|| {
            let names: Vec<&str> = PlantedBug::ALL.iter().map(|b| b.name()).collect();
            CliError::Usage(format!("--plant: unknown bug `{n}` ({})", names.join(", ")))
        })?),
    };
    cfg.events_max = a.events_max;
    cfg.trace = a.trace.is_some();
    Ok(cfg)
}

/// Runs the flow and prints the report.
pub fn run(a: RunArgs) -> Result<ExitCode, CliError> {
    if let Some(path) = &a.trace {
        check_output("--trace", path)?;
    }
    let cfg = config(&a)?;
    let times = !a.no_times;
    if !a.json {
        println!("seed {}", cfg.seed);
        println!("replay:  {}", cfg.replay().as_deref().unwrap_or("(no flags reproduce this config)"));
    }
    let report = run_observed(&cfg, &mut |p| {
        if !a.json {
            match p {
                Progress::Stage(s) => println!("{}", s.line(times)),
                Progress::Check(c) => println!("{}", c.line(times)),
                Progress::Fault(l) => println!("fault    {l}"),
            }
        }
    });
    let not_applicable = report.not_applicable();
    let trace = report.sim.as_ref().and_then(|s| s.trace.as_ref().map(|t| (t, s)));
    if let (Some(path), Some((trace, sim))) = (&a.trace, trace) {
        write_with(path, |w| trace.write_chrome_marked(w, &sim.violations, &sim.violation_ns))?;
    }
    let trace_line = a.trace.as_ref().map(|p| match trace {
        Some(_) => p.display().to_string(),
        None => format!("{} not written: the simulation did not run", p.display()),
    });
    let mut json = if times { report.to_json_timed() } else { report.to_json() };
    if a.json {
        if let Some(t) = &trace_line {
            json["trace"] = t.as_str().into();
        }
    } else {
        let mut text = String::new();
        // Writing into a String cannot fail.
        let _ = report.summary(&mut text);
        print!("{text}");
        if let Some(t) = &trace_line {
            println!("trace    {t}");
        }
    }
    if report.passed() {
        if a.json {
            println!("{json}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    if not_applicable {
        // Neither a pass nor a failed check: exit 3.
        if a.json {
            println!("{json}");
        }
        return Err(CliError::NotApplicable(format!(
            "{}; not applicable, not a failed check",
            report.failures().join("; ")
        )));
    }
    if a.shrink {
        if !a.json {
            println!("# shrinking (up to 400 runs) ...");
        }
        let shrunk = shrink(&cfg, 400);
        if a.json {
            json["shrunk"] = shrunk.as_ref().map_or(serde_json::Value::Null, |s| {
                serde_json::json!({
                    "runs": s.runs,
                    "program": ir::print(&s.program),
                    "replay": s.config.replay(),
                    "report": s.report.to_json(),
                })
            });
        } else if let Some(s) = &shrunk {
            let replay = s.config.replay().unwrap_or_default();
            println!("# smallest failing program ({} runs); save it as shrunk.bir and replay: {replay}", s.runs);
            print!("{}", ir::print(&s.program));
            print!("{}", s.report);
        } else {
            println!("# no smaller failing program found");
        }
    }
    if a.json {
        println!("{json}");
    }
    let n = report.failures().len();
    Err(CliError::CheckFailed(format!(
        "{n} failure(s), listed {}: {}",
        if a.json { "in the report" } else { "above" },
        report.verdict()
    )))
}
