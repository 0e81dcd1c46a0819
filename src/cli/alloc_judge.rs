//! `lncsim alloc FILE.csv --judge`: judge another allocator's placement (the
//! `offset` column, as MiniMalloc's converter writes it) with the independent
//! checker (`dram::checker`, no code shared with the allocator), and compare
//! its peak with the lower bound and with lncsim's own placement of the same
//! problem (offsets ignored).
//!
//! The ceiling is `--capacity`, else the file name's capacity
//! (`<name>.<capacity>.csv`, MiniMalloc's benchmark convention), else none: a
//! buffer ending above it is out of bounds. Sizes round up to `--align`
//! (default 1 here: MiniMalloc's sizes are exact) and a sub-`--align` buffer
//! must not straddle an `--align` boundary (with `--align 1`, no rule).
//!
//! Cost: O(n log n + k log n) for the check of n buffers with k overlapping
//! pairs (the checker's sweep, at most `MAX_OVERLAPS` pairs listed), plus
//! lncsim's own allocation of the problem (skipped by `--no-compare`).

use std::process::ExitCode;
use std::time::Instant;

use lncsim_model::dram::{AllocConfig, Problem, allocate, check, csv, svg};
use serde::Serialize;

use super::alloc::AllocArgs;
use super::files::write_file;
use super::{CliError, shown};

/// The verdict, serialized in this field order.
#[derive(Debug, Serialize)]
struct Verdict {
    file: String,
    align: u64,
    buffers: usize,
    lower_bound: u64,
    peak: u64,
    ratio: f64,
    lncsim_order: &'static str,
    lncsim_peak: Option<u64>,
    lncsim_ratio: Option<f64>,
    capacity: Option<u64>,
    fits: Option<bool>,
    check_millis: f64,
    valid: bool,
    violations: Vec<String>,
}

fn ratio(peak: u64, lower_bound: u64) -> f64 {
    if lower_bound == 0 { 1.0 } else { peak as f64 / lower_bound as f64 }
}

/// The placement's peak: the highest end, `offset + size` rounded up to `align`
/// (computed here, not by the checker; an unrepresentable end counts as `u64::MAX`).
fn placement_peak(problem: &Problem, offsets: &[u64], align: u64) -> u64 {
    problem
        .locations
        .iter()
        .zip(offsets)
        .map(|(l, &o)| {
            l.byte_size.div_ceil(align).checked_mul(align).and_then(|s| o.checked_add(s)).unwrap_or(u64::MAX)
        })
        .max()
        .unwrap_or(0)
}

/// Runs `lncsim alloc FILE --judge` on the parsed file.
pub fn run(args: &AllocArgs, parsed: &csv::CsvProblem, align: u64) -> Result<ExitCode, CliError> {
    let name = shown(&args.file);
    let offsets = parsed.offsets(&name).map_err(|e| CliError::BadInput(e.to_string()))?;
    let problem = parsed.to_unpinned_problem(align);
    let lower_bound = problem.lower_bound().map_err(|e| CliError::BadInput(format!("{name}: {e}")))?;
    let file_name = args.file.file_name().and_then(|n| n.to_str());
    let capacity = args.capacity.or(file_name.and_then(csv::capacity_from_name));
    let config = AllocConfig::minimalloc(align, capacity.unwrap_or(u64::MAX), args.order.order());
    let t0 = Instant::now();
    let violations = check(&problem, &config, &offsets);
    let check_millis = t0.elapsed().as_secs_f64() * 1e3;
    let peak = placement_peak(&problem, &offsets, align);
    let lncsim_peak = if args.no_compare {
        None
    } else {
        let own = AllocConfig::minimalloc(align, u64::MAX, args.order.order());
        allocate(&problem, &own).ok().map(|a| a.metrics.peak)
    };
    let verdict = Verdict {
        file: name.clone(),
        align,
        buffers: problem.locations.len(),
        lower_bound,
        peak,
        ratio: ratio(peak, lower_bound),
        lncsim_order: args.order.name(),
        lncsim_peak,
        lncsim_ratio: lncsim_peak.map(|p| ratio(p, lower_bound)),
        capacity,
        fits: capacity.map(|c| peak <= c),
        check_millis: (check_millis * 1e3).round() / 1e3,
        valid: violations.is_empty(),
        violations: violations.iter().map(|v| v.to_string()).collect(),
    };
    if let Some(path) = &args.svg {
        write_file(path, svg::render(&problem, &offsets, capacity).as_bytes())?;
    }
    if args.json {
        let line = serde_json::to_string(&verdict).map_err(|e| CliError::CheckFailed(e.to_string()))?;
        println!("{line}");
    } else {
        print_text(&verdict, args.no_compare);
    }
    match violations.first() {
        Some(v) => {
            Err(CliError::CheckFailed(format!("{name}: the placement breaks {} rule(s); first: {v}", violations.len())))
        }
        None => Ok(ExitCode::SUCCESS),
    }
}

fn print_text(v: &Verdict, no_compare: bool) {
    println!("file:        {} (placement judged, align {})", v.file, v.align);
    println!("buffers:     {}", v.buffers);
    println!("lower bound: {}", v.lower_bound);
    println!("peak:        {} (peak/LB {:.4})", v.peak, v.ratio);
    match (v.lncsim_peak, v.lncsim_ratio) {
        (Some(p), Some(r)) => {
            let cmp = match p.cmp(&v.peak) {
                std::cmp::Ordering::Less => "lncsim lower",
                std::cmp::Ordering::Equal => "equal",
                std::cmp::Ordering::Greater => "judged lower",
            };
            println!("lncsim peak: {p} (peak/LB {r:.4}, order {}; {cmp})", v.lncsim_order);
        }
        _ if no_compare => println!("lncsim peak: not computed (--no-compare)"),
        _ => println!("lncsim peak: none (lncsim's allocator could not place the problem)"),
    }
    match (v.capacity, v.fits) {
        (Some(c), Some(f)) => println!("capacity:    {c} ({})", if f { "fits" } else { "does not fit" }),
        _ => println!("capacity:    none"),
    }
    println!("check time:  {:.3} ms", v.check_millis);
    println!("valid:       {}", v.valid);
    for x in &v.violations {
        println!("violation: {x}");
    }
}
