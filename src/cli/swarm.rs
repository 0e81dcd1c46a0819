//! `lncsim swarm`: many seeds, each with its own feature mix, with a progress
//! bar; failures grouped by signature with one replay command per group, a
//! coverage table (features, faults fired, check verdicts, seed-contract
//! marks), JUnit for CI, shards and a time budget for campaigns, and Ctrl-C
//! that prints what the seeds so far found (exit 130).

use std::ops::Range;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use lncsim_sim::flow::PlantedBug;
use lncsim_sim::flow::campaign::Campaign;
use lncsim_sim::flow::swarm::{Shard, SwarmConfig, SwarmReport, swarm};

use super::{CliError, files, parse_u64};

/// Most seeds a campaign without `--time-budget` may ask for (about a month of one machine).
pub const MAX_SEEDS_WITHOUT_BUDGET: u64 = 1_000_000_000;

/// Arguments of `lncsim swarm`.
#[derive(Debug, Args)]
pub struct SwarmArgs {
    /// The seeds to run, `A..B` (B exclusive; decimal or 0x hex); shard a job array by range.
    #[arg(long, value_parser = parse_range, allow_hyphen_values = true)]
    pub seeds: Range<u64>,
    /// Worker threads, 1 to 256.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=256), allow_negative_numbers = true)]
    pub jobs: u32,
    /// Most cores a seed may draw, 1 to 256.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=256), allow_negative_numbers = true)]
    pub cores_max: u32,
    /// Run every seed twice and compare trace hashes and reports.
    #[arg(long)]
    pub check_determinism: bool,
    /// Plant a bug in every run (names as for `lncsim run --plant`), to see the swarm report it.
    #[arg(long, value_name = "NAME")]
    pub plant: Option<String>,
    /// Run only shard I of N (seeds A + I + kN), for a CI matrix or a job array: `--shard 3/8`.
    #[arg(long, value_parser = parse_shard, value_name = "I/N")]
    pub shard: Option<Shard>,
    /// Stop starting seeds after SECS seconds of wall time (the summary covers the seeds that ran).
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..=31_536_000))]
    pub time_budget: Option<u64>,
    /// Also write a JUnit XML file: one test case per seed, failures with their replay command.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Print the summary as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// Parses `I/N` with `I < N`.
fn parse_shard(s: &str) -> Result<Shard, String> {
    let (i, n) = s.split_once('/').ok_or_else(|| format!("`{s}` is not a shard I/N (e.g. 0/8)"))?;
    let index = parse_u64(i.trim())?;
    let count = parse_u64(n.trim())?;
    if count == 0 || index >= count {
        return Err(format!("shard {index}/{count}: I must be below N, and N at least 1"));
    }
    Ok(Shard { index, count })
}

/// Set by Ctrl-C; a second Ctrl-C exits at once.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Parses `A..B`.
fn parse_range(s: &str) -> Result<Range<u64>, String> {
    let (a, b) = s.split_once("..").ok_or_else(|| format!("`{s}` is not a range A..B"))?;
    let a = parse_u64(a.trim())?;
    let b = parse_u64(b.trim())?;
    if b <= a {
        return Err(format!("empty range {a}..{b}"));
    }
    Ok(a..b)
}

/// Runs the swarm.
pub fn run(a: SwarmArgs) -> Result<ExitCode, CliError> {
    let plant = match &a.plant {
        None => None,
        Some(n) => Some(PlantedBug::from_name(n).ok_or_else(|| {
            let names: Vec<&str> = PlantedBug::ALL.iter().map(|b| b.name()).collect();
            CliError::Usage(format!("--plant: unknown bug `{n}` ({})", names.join(", ")))
        })?),
    };
    let shard = a.shard.unwrap_or(Shard::ALL);
    let total = shard.len(&a.seeds);
    if total == 0 {
        return Err(CliError::Usage(format!(
            "--shard {}/{} of {}..{} holds no seed",
            shard.index, shard.count, a.seeds.start, a.seeds.end
        )));
    }
    if total > MAX_SEEDS_WITHOUT_BUDGET && a.time_budget.is_none() {
        return Err(CliError::Usage(format!(
            "{total} seeds would run for years; give --time-budget SECS or at most {MAX_SEEDS_WITHOUT_BUDGET} seeds"
        )));
    }
    if let Some(j) = &a.junit {
        files::check_output("--junit", j)?;
    }
    let cfg = SwarmConfig {
        seeds: a.seeds.clone(),
        shard,
        jobs: a.jobs as usize,
        cores_max: a.cores_max,
        check_determinism: a.check_determinism,
        plant,
    };
    let suite = format!("seeds {}..{} shard {}/{}", a.seeds.start, a.seeds.end, shard.index, shard.count);
    eprintln!(
        "swarm: {suite}: {total} seeds on {} jobs; determinism {}; {}Ctrl-C stops and prints the summary",
        a.jobs,
        if a.check_determinism { "checked (every seed runs twice)" } else { "not checked" },
        a.time_budget.map_or(String::new(), |b| format!("time budget {b} s; "))
    );
    // A handler may already be installed (tests run `run` in one process): then Ctrl-C keeps its default.
    let _ = ctrlc::set_handler(|| {
        if INTERRUPTED.swap(true, Ordering::SeqCst) {
            std::process::exit(i32::from(super::EXIT_INTERRUPTED));
        }
    });
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} seeds done  {msg}  {per_sec}  eta {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_message("0 failed");
    let failures = AtomicU64::new(0);
    let started = Instant::now();
    let budget = a.time_budget.map(Duration::from_secs);
    let stop = AtomicBool::new(false);
    let out_of_time = AtomicBool::new(false);
    let report = swarm(&cfg, &stop, &|o| {
        let failed =
            if o.passed { failures.load(Ordering::Relaxed) } else { failures.fetch_add(1, Ordering::Relaxed) + 1 };
        bar.inc(1);
        bar.set_message(format!("{failed} failed"));
        if INTERRUPTED.load(Ordering::Relaxed) {
            stop.store(true, Ordering::Relaxed);
        }
        if budget.is_some_and(|b| started.elapsed() >= b) {
            out_of_time.store(true, Ordering::Relaxed);
            stop.store(true, Ordering::Relaxed);
        }
    });
    bar.finish_and_clear();
    let interrupted = INTERRUPTED.load(Ordering::Relaxed) && report.stopped;
    let wall = started.elapsed();
    let campaign = Campaign::of(&report);
    if let Some(j) = &a.junit {
        files::write_file(j, super::junit::junit(&report, &suite).as_bytes())?;
    }
    let stop_note = if interrupted {
        Some(format!("interrupted: {} of {total} seeds ran", report.outcomes.len()))
    } else if out_of_time.load(Ordering::Relaxed) && report.stopped {
        Some(format!(
            "time budget of {} s reached: {} of {total} seeds ran",
            a.time_budget.unwrap_or(0),
            report.outcomes.len()
        ))
    } else {
        None
    };
    if a.json {
        println!("{}", json_summary(&a, shard, &report, &campaign, wall, stop_note.as_deref()));
    } else {
        print_summary(&a, &suite, &report, &campaign, wall, stop_note.as_deref());
    }
    let failed = campaign.failed;
    if interrupted {
        return Err(CliError::Interrupted(format!(
            "interrupted after {} of {total} seeds ({failed} failed)",
            report.outcomes.len()
        )));
    }
    if failed == 0 {
        Ok(ExitCode::SUCCESS)
    } else {
        Err(CliError::CheckFailed(format!(
            "{failed} of {} seeds failed ({} signatures)",
            report.outcomes.len(),
            campaign.groups.len()
        )))
    }
}

/// The summary as one JSON object (stable key order).
fn json_summary(
    a: &SwarmArgs,
    shard: Shard,
    report: &SwarmReport,
    campaign: &Campaign,
    wall: Duration,
    stop_note: Option<&str>,
) -> serde_json::Value {
    let failing: Vec<serde_json::Value> = report
        .failed()
        .map(|o| {
            serde_json::json!({"seed": o.seed, "mix": o.mix.to_json(), "signatures": o.signatures,
                               "failures": o.failures, "replay": o.replay})
        })
        .collect();
    let instructions: u64 = report.outcomes.iter().map(|o| o.instructions).sum();
    serde_json::json!({
        "seeds": format!("{}..{}", a.seeds.start, a.seeds.end),
        "shard": {"index": shard.index, "count": shard.count},
        "runs": report.outcomes.len(),
        "failed": campaign.failed,
        "stopped": stop_note,
        "determinism_checked": a.check_determinism,
        "simulated_instructions": instructions,
        "wall_ms": wall.as_millis() as u64,
        "failing": failing,
        "summary": campaign.to_json(),
    })
}

/// The summary as text: groups, the coverage table, the totals line.
fn print_summary(
    a: &SwarmArgs,
    suite: &str,
    report: &SwarmReport,
    campaign: &Campaign,
    wall: Duration,
    stop_note: Option<&str>,
) {
    if let Some(note) = stop_note {
        println!("{note}");
    }
    print!("{campaign}");
    let failing: Vec<String> = report.failed().take(20).map(|o| o.seed.to_string()).collect();
    if !failing.is_empty() {
        let more = campaign.failed.saturating_sub(failing.len() as u64);
        let tail = if more > 0 { format!(" and {more} more") } else { String::new() };
        println!("failing seeds: {}{tail}", failing.join(", "));
    }
    if a.check_determinism {
        let mismatches =
            report.outcomes.iter().filter(|o| o.signatures.iter().any(|s| s.starts_with("determinism"))).count();
        println!("determinism: checked (every seed ran twice): {mismatches} mismatch(es)");
    } else {
        println!("determinism: not checked (--check-determinism runs every seed twice)");
    }
    let instructions: u64 = report.outcomes.iter().map(|o| o.instructions).sum();
    println!("{:<28} {:>8} {:>8} {:>8} {:>16} {:>10}", "seeds", "runs", "passed", "failed", "instructions", "wall s");
    println!(
        "{:<28} {:>8} {:>8} {:>8} {:>16} {:>10.1}",
        suite.trim_start_matches("seeds "),
        report.outcomes.len(),
        report.outcomes.len() as u64 - campaign.failed,
        campaign.failed,
        instructions,
        wall.as_secs_f64()
    );
}
