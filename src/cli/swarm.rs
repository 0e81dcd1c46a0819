//! `lncsim swarm`: many seeds, each with its own feature mix, with a progress
//! bar, every failing seed's replay command and a summary table.

use std::ops::Range;
use std::process::ExitCode;
use std::time::Instant;

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use lncsim_sim::flow::PlantedBug;
use lncsim_sim::flow::swarm::{SwarmConfig, swarm};

use super::{CliError, parse_u64};

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
    /// Print the summary as one JSON object.
    #[arg(long)]
    pub json: bool,
}

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
            CliError::BadInput(format!("--plant: unknown bug `{n}` ({})", names.join(", ")))
        })?),
    };
    let cfg = SwarmConfig {
        seeds: a.seeds.clone(),
        jobs: a.jobs as usize,
        cores_max: a.cores_max,
        check_determinism: a.check_determinism,
        plant,
    };
    let total = a.seeds.end - a.seeds.start;
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} seeds  {msg}  {per_sec}  eta {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let failures = std::sync::atomic::AtomicU64::new(0);
    let started = Instant::now();
    let report = swarm(&cfg, &|o| {
        if !o.passed {
            let n = failures.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            bar.set_message(format!("{n} failing"));
        }
        bar.inc(1);
    });
    bar.finish_and_clear();
    let wall = started.elapsed();
    let failed: Vec<_> = report.failed().collect();
    let instructions: u64 = report.outcomes.iter().map(|o| o.instructions).sum();
    if a.json {
        let failing: Vec<serde_json::Value> = failed
            .iter()
            .map(|o| serde_json::json!({"seed": o.seed, "mix": o.mix, "failures": o.failures, "replay": o.replay}))
            .collect();
        println!(
            "{}",
            serde_json::json!({
                "seeds": format!("{}..{}", a.seeds.start, a.seeds.end),
                "runs": report.outcomes.len(),
                "failed": failed.len(),
                "simulated_instructions": instructions,
                "wall_ms": wall.as_millis() as u64,
                "failing": failing,
            })
        );
    } else {
        for o in &failed {
            println!("FAIL seed {} ({})", o.seed, o.mix);
            for f in &o.failures {
                println!("     {f}");
            }
            println!("     replay: {}", o.replay.as_deref().unwrap_or("(no replay command)"));
        }
        println!(
            "{:<10} {:>8} {:>8} {:>8} {:>16} {:>10}",
            "seeds", "runs", "passed", "failed", "instructions", "wall s"
        );
        println!(
            "{:<10} {:>8} {:>8} {:>8} {:>16} {:>10.1}",
            format!("{}..{}", a.seeds.start, a.seeds.end),
            report.outcomes.len(),
            report.outcomes.len() - failed.len(),
            failed.len(),
            instructions,
            wall.as_secs_f64()
        );
    }
    if failed.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        Err(CliError::CheckFailed(format!("{} of {} seeds failed", failed.len(), report.outcomes.len())))
    }
}
