//! `lncsim alloc FILE.csv`: allocate a MiniMalloc problem with the DRAM
//! allocator core (interval tree, simplify or size order, `search`), check the
//! result with the independent checker, and report lower bound, peak and time.
//!
//! The capacity in the file name (`<name>.<capacity>.csv`) is reported (fits or
//! not); it is a ceiling only when `--capacity` is given. No HWM and no CC
//! region: MiniMalloc problems have neither. `--judge` checks the file's own
//! placement instead (`super::alloc_judge`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::{Args, ValueEnum};
use lncsim_model::dram::pinned::pinned_overlap;
use lncsim_model::dram::{AllocConfig, AllocError, Order, allocate, check, csv, svg};
use serde::Serialize;

use super::CliError;
use super::files::{check_output, write_file};

/// The assignment order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OrderArg {
    /// The seed's simplify elimination stack, first fit.
    Seed,
    /// Decreasing size, best fit (the XLA/TFLite heuristic).
    Size,
}

impl OrderArg {
    /// The model's order.
    pub fn order(self) -> Order {
        match self {
            OrderArg::Seed => Order::Seed,
            OrderArg::Size => Order::Size,
        }
    }

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            OrderArg::Seed => "seed",
            OrderArg::Size => "size",
        }
    }
}

/// Arguments of `lncsim alloc`.
#[derive(Debug, Args)]
pub struct AllocArgs {
    /// The MiniMalloc CSV problem (columns id, lower, upper, size; optional alignment, offset, gaps; MiniMalloc's synonyms).
    pub file: PathBuf,
    /// Page in bytes: sizes round up to it and sub-page buffers never straddle it (1 = off) [default: 4096; 1 with --judge].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub align: Option<u64>,
    /// Judge the placement in the file's `offset` column (another allocator's) with the independent checker instead of allocating.
    #[arg(long, conflicts_with = "out")]
    pub judge: bool,
    /// With --judge: skip lncsim's own placement of the problem (its peak is not shown).
    #[arg(long, requires = "judge")]
    pub no_compare: bool,
    /// Assignment order: `seed` (simplify stack, first fit) or `size` (decreasing size, best fit).
    #[arg(long, value_enum, default_value_t = OrderArg::Seed)]
    pub order: OrderArg,
    /// Address ceiling in bytes (decimal or 0x hex); without it the file name's capacity is only reported.
    #[arg(long, value_parser = super::parse_u64, allow_negative_numbers = true)]
    pub capacity: Option<u64>,
    /// Print one JSON object (fixed key order) instead of text.
    #[arg(long)]
    pub json: bool,
    /// Write the placement in MiniMalloc's output format (the input plus an `offset` column) to this file.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Write an SVG picture (time on x, address on y) to this file.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
}

/// The report, serialized in this field order.
#[derive(Debug, Serialize)]
struct Report {
    file: String,
    order: &'static str,
    align: u64,
    buffers: usize,
    lower_bound: u64,
    peak: u64,
    ratio: f64,
    capacity: Option<u64>,
    fits: Option<bool>,
    millis: f64,
    valid: bool,
    violations: usize,
}

/// Runs `lncsim alloc`.
pub fn run(args: &AllocArgs) -> Result<ExitCode, CliError> {
    let shown = args.file.display().to_string();
    if args.out.is_some() && args.out == args.svg {
        return Err(CliError::BadInput("--out and --svg name the same file".into()));
    }
    if let Some(p) = &args.out {
        check_output("--out", p)?;
    }
    if let Some(p) = &args.svg {
        check_output("--svg", p)?;
    }
    let text = String::from_utf8(super::read_bytes_limited(&args.file, super::MAX_TEXT_BYTES)?).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        CliError::BadInput(format!("{shown}: not UTF-8 text (invalid byte at offset {at})"))
    })?;
    let parsed = csv::parse(&shown, &text).map_err(|e| CliError::BadInput(e.to_string()))?;
    if args.judge {
        return super::alloc_judge::run(args, &parsed, args.align.unwrap_or(1));
    }
    let align = args.align.unwrap_or(4096);
    let problem = parsed.to_problem(align);
    // Given offsets pin their buffers; pins that collide (often only once the
    // sizes are rounded up to --align) leave no valid placement to look for.
    if let Some(o) = pinned_overlap(&problem) {
        return Err(CliError::BadInput(format!(
            "{shown}: {o} (the `offset` column pins buffers; sizes are rounded up to --align {align}): \
             no placement can be valid; judge the offsets with --judge, or drop the column to allocate"
        )));
    }
    let bad = |e: AllocError| CliError::BadInput(format!("{shown}: {e}"));
    let lower_bound = problem.lower_bound().map_err(bad)?;
    let name_capacity = args.file.file_name().and_then(|n| n.to_str()).and_then(csv::capacity_from_name);
    let config = AllocConfig::minimalloc(align, args.capacity.unwrap_or(u64::MAX), args.order.order());
    let t0 = Instant::now();
    let result = allocate(&problem, &config);
    let millis = t0.elapsed().as_secs_f64() * 1e3;
    let placed = match result {
        Ok(a) => a,
        Err(e @ AllocError::OutOfSpace { .. }) => {
            return Err(CliError::CheckFailed(format!("{shown}: {e}")));
        }
        Err(e) => return Err(bad(e)),
    };
    let violations = check(&problem, &config, &placed.addresses);
    let peak = placed.metrics.peak;
    let capacity = args.capacity.or(name_capacity);
    let report = Report {
        file: shown.clone(),
        order: args.order.name(),
        align,
        buffers: problem.locations.len(),
        lower_bound,
        peak,
        ratio: if lower_bound == 0 { 1.0 } else { peak as f64 / lower_bound as f64 },
        capacity,
        fits: capacity.map(|c| peak <= c),
        millis: (millis * 1e3).round() / 1e3,
        valid: violations.is_empty(),
        violations: violations.len(),
    };
    if let Some(out) = &args.out {
        write_file(out, parsed.write_placed(&placed.addresses).as_bytes())?;
    }
    if let Some(path) = &args.svg {
        write_file(path, svg::render(&problem, &placed.addresses, capacity).as_bytes())?;
    }
    if args.json {
        let line = serde_json::to_string(&report).map_err(|e| CliError::CheckFailed(e.to_string()))?;
        println!("{line}");
    } else {
        print_text(&report);
        for v in &violations {
            println!("violation: {v}");
        }
    }
    if let Some(v) = violations.first() {
        return Err(CliError::CheckFailed(format!(
            "{shown}: the checker found {} violations; first: {v}",
            violations.len()
        )));
    }
    Ok(ExitCode::SUCCESS)
}

fn print_text(r: &Report) {
    println!("file:        {}", r.file);
    println!("order:       {} (align {})", r.order, r.align);
    println!("buffers:     {}", r.buffers);
    println!("lower bound: {}", r.lower_bound);
    println!("peak:        {}", r.peak);
    println!("peak/LB:     {:.4}", r.ratio);
    match (r.capacity, r.fits) {
        (Some(c), Some(f)) => println!("capacity:    {c} ({})", if f { "fits" } else { "does not fit" }),
        _ => println!("capacity:    none"),
    }
    println!("time:        {:.3} ms", r.millis);
    println!("valid:       {}", r.valid);
}
