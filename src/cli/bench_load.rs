//! `lncsim bench load`: `nrt_load` + `nrt_unload` of a packaged 8-core NEFF
//! `--loads` times (loads per second, median of `--runs`), with the real-thread
//! fan-out and with the stepped (single-thread) driver side by side; then one
//! load of a 256-subgraph NEFF (the fan-out limit: 256 threads), both ways.
//! Every run checks the device is empty after unloading. For scale, the
//! bare NEFF reader (`Neff::parse`, which S1 + S2 run once per load) is timed too.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Args;
use lncsim_model::load::testkit::pack_generated;
use lncsim_model::load::{Device, LoadError, NrtModel, Runtime};
use lncsim_model::neff::{Neff, ReadOptions};
use lncsim_model::program::{GenConfig, SizeClass};
use lncsim_sim::device::SimDevice;

use super::CliError;

/// Arguments of `lncsim bench load`.
#[derive(Debug, Args)]
pub struct BenchLoadArgs {
    /// Load + unload cycles per timed run.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..=1_000_000), allow_negative_numbers = true)]
    pub loads: u32,
    /// Timed runs of each variant (the median is reported).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000), allow_negative_numbers = true)]
    pub runs: u32,
    /// Seed of the generated programs.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

type Loader = fn(&Runtime<SimDevice>, &[u8]) -> Result<NrtModel, LoadError>;

fn threads(rt: &Runtime<SimDevice>, neff: &[u8]) -> Result<NrtModel, LoadError> {
    rt.nrt_load(neff, -1, -1)
}

fn stepped(rt: &Runtime<SimDevice>, neff: &[u8]) -> Result<NrtModel, LoadError> {
    rt.nrt_load_stepped(neff, -1, -1, &mut |_| 0).0
}

/// `n` load + unload cycles; the elapsed time.
fn cycles(rt: &Runtime<SimDevice>, neff: &[u8], n: u32, load: Loader) -> Result<Duration, CliError> {
    let fail = |e: LoadError| CliError::CheckFailed(format!("load failed: {e}"));
    let t = Instant::now();
    for _ in 0..n {
        let m = load(rt, neff).map_err(fail)?;
        rt.nrt_unload(&m).map_err(fail)?;
    }
    let d = t.elapsed();
    if rt.device().live_allocations() != 0 {
        return Err(CliError::CheckFailed("allocations left after unloading".into()));
    }
    Ok(d)
}

fn per_s(n: u32, d: Duration) -> f64 {
    f64::from(n) / d.as_secs_f64().max(1e-9)
}

/// Runs both benchmarks and prints their medians and ratios.
pub fn run(a: BenchLoadArgs) -> Result<ExitCode, CliError> {
    let build = |cores: u32| {
        let cfg = GenConfig::new(a.seed, cores, SizeClass::Small);
        pack_generated(&cfg).map_err(|e| CliError::CheckFailed(format!("building the {cores}-core NEFF: {e}")))
    };
    let runs = a.runs.max(1);
    let neff8 = build(8)?;
    let rt = Runtime::new(SimDevice::new(8, 8));
    cycles(&rt, &neff8, 50, threads)?;
    let (mut t_thr, mut t_step) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        t_thr.push(cycles(&rt, &neff8, a.loads, threads)?);
        t_step.push(cycles(&rt, &neff8, a.loads, stepped)?);
    }
    let (thr, step) = (median(t_thr), median(t_step));
    let mut t_parse = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        for _ in 0..a.loads {
            Neff::parse(&neff8, &ReadOptions::default()).map_err(|e| CliError::CheckFailed(e.to_string()))?;
        }
        t_parse.push(t.elapsed());
    }
    let parse = median(t_parse);
    println!("8-core NEFF ({} bytes): {} load+unload cycles per run, median of {runs} runs", neff8.len(), a.loads);
    println!(
        "  threads (one per kbin)  {:>9.0} loads/s  ({:.1} us/load)",
        per_s(a.loads, thr),
        thr.as_secs_f64() * 1e6 / f64::from(a.loads)
    );
    println!(
        "  stepped (one thread)    {:>9.0} loads/s  ({:.1} us/load)",
        per_s(a.loads, step),
        step.as_secs_f64() * 1e6 / f64::from(a.loads)
    );
    println!("  threads / stepped       {:>9.2}x", step.as_secs_f64() / thr.as_secs_f64().max(1e-9));
    println!(
        "  Neff::parse alone       {:>9.0} parses/s: the NEFF reader is {:.0}% of a threaded load",
        per_s(a.loads, parse),
        100.0 * parse.as_secs_f64() / thr.as_secs_f64().max(1e-9)
    );

    let neff256 = build(256)?;
    let rt = Runtime::new(SimDevice::new(256, 256));
    cycles(&rt, &neff256, 1, threads)?;
    let (mut t_thr, mut t_step) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        t_thr.push(cycles(&rt, &neff256, 1, threads)?);
        t_step.push(cycles(&rt, &neff256, 1, stepped)?);
    }
    let (thr, step) = (median(t_thr), median(t_step));
    let mut t_parse = Vec::new();
    for _ in 0..runs {
        let t = Instant::now();
        Neff::parse(&neff256, &ReadOptions::default()).map_err(|e| CliError::CheckFailed(e.to_string()))?;
        t_parse.push(t.elapsed());
    }
    let parse = median(t_parse);
    println!("256-subgraph NEFF ({} bytes): one load + unload, median of {runs} runs", neff256.len());
    println!("  threads (256)           {:>9.2} ms", thr.as_secs_f64() * 1e3);
    println!("  stepped (one thread)    {:>9.2} ms", step.as_secs_f64() * 1e3);
    println!("  threads / stepped       {:>9.2}x", step.as_secs_f64() / thr.as_secs_f64().max(1e-9));
    println!(
        "  Neff::parse alone       {:>9.2} ms: the NEFF reader is {:.0}% of the threaded load",
        parse.as_secs_f64() * 1e3,
        100.0 * parse.as_secs_f64() / thr.as_secs_f64().max(1e-9)
    );
    Ok(ExitCode::SUCCESS)
}
