//! `lncsim bench sim`: simulated instructions per second and events per
//! second of the simulator, against a bare event loop doing only the queue
//! operations for the same number of events (the overhead ratio).
//!
//! The default workload: a generated program of 2,500 ops on 4 cores with
//! tensors of at most 16 elements (so the figure measures the simulator, not
//! the arithmetic), every check on, compiled by the real pipeline (split,
//! DRAM allocator with address reuse, anti-dependencies, shared sync,
//! `bir_linker`), packed into a NEFF and loaded by `nrt_load` on the
//! simulated device. Target
//! (issue 7): at least 1 million simulated instructions per second on one
//! thread; exits 1 when it is missed. For comparison it also runs `lncsim
//! run`'s default program (4 cores, size small: tensors up to 4 Ki
//! elements), without a target.
//! Building a simulation (fetch, decode, mirror) is timed apart from running it.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Args;
use lncsim_model::ir::Module;
use lncsim_model::program::{GenConfig, SizeClass, generate, seeded_inputs};
use lncsim_sim::io::{clear_outputs_and_scratch, write_inputs};
use lncsim_sim::testkit::load_compiled;
use lncsim_sim::{Checks, SimConfig, SimReport, Simulation, bare_event_loop};

use super::CliError;

/// Arguments of `lncsim bench sim`.
#[derive(Debug, Args)]
pub struct BenchSimArgs {
    /// Cores of the generated workload.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=64), allow_negative_numbers = true)]
    pub cores: u32,
    /// Ops of the generated workload (the generator's cost grows fast past a few thousand).
    #[arg(long, default_value_t = 2_500, value_parser = clap::value_parser!(u32).range(1..=100_000), allow_negative_numbers = true)]
    pub ops: u32,
    /// Largest tensor of the workload, in i32 elements.
    #[arg(long, default_value_t = 16, value_parser = clap::value_parser!(u64).range(1..=(1 << 20)))]
    pub elems: u64,
    /// Timed runs of each workload (the median is reported).
    #[arg(long, default_value_t = 21, value_parser = clap::value_parser!(u32).range(1..=1000), allow_negative_numbers = true)]
    pub runs: u32,
    /// Seed of the workload and of the runs.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Run with schedule jitter.
    #[arg(long)]
    pub jitter: bool,
    /// Run with every memory check off (races, ownership, equalization).
    #[arg(long)]
    pub no_checks: bool,
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn per_s(n: u64, d: Duration) -> f64 {
    n as f64 / d.as_secs_f64().max(1e-9)
}

/// This thread's on-CPU time in ns (`/proc/thread-self/schedstat`), if the kernel has it.
fn cpu_ns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// Medians of one workload.
struct Figures {
    records: u64,
    report: SimReport,
    build: Duration,
    run: Duration,
    /// On-CPU time / wall time of the build+run batch (1.0: the bench had a core to itself).
    cpu_share: Option<f64>,
    bare: Duration,
}

/// Stages `program`, then `runs` times builds a simulation and runs it (timed
/// apart), and runs the bare event loop for the same number of events.
fn measure(program: &Module, a: &BenchSimArgs) -> Result<Figures, CliError> {
    let loaded = load_compiled(program, &Default::default(), a.seed).map_err(CliError::BadInput)?;
    let (device, images) = (loaded.runtime.device(), &loaded.images);
    clear_outputs_and_scratch(device, images)
        .and_then(|()| write_inputs(device, images, &seeded_inputs(program, a.seed)))
        .map_err(|e| CliError::BadInput(e.to_string()))?;
    let mut cfg = SimConfig::seeded(a.seed);
    if a.jitter {
        cfg = cfg.with_jitter();
    }
    if a.no_checks {
        cfg.checks = Checks { races: false, ownership: false, equalization: false };
    }
    // Each run right after its build (warm, as in a real flow). The batch's
    // on-CPU time over its wall time says how much other load took the core.
    let (mut t_build, mut t_run, mut t_bare) = (Vec::new(), Vec::new(), Vec::new());
    let mut reports = Vec::new();
    let (mut engines, mut records) = (0, 0);
    let (c0, w0) = (cpu_ns(), Instant::now());
    for _ in 0..a.runs {
        let s = Instant::now();
        let mut sim = Simulation::new(device, images, cfg.clone()).map_err(|e| CliError::BadInput(e.to_string()))?;
        t_build.push(s.elapsed());
        let s = Instant::now();
        reports.push(sim.run());
        t_run.push(s.elapsed());
        (engines, records) = (sim.engines() as u32, sim.records());
    }
    // schedstat advances in scheduler ticks: a share of a short batch means nothing.
    let wall = w0.elapsed();
    let cpu_share = c0
        .zip(cpu_ns())
        .filter(|_| wall >= Duration::from_millis(50))
        .map(|(x, y)| y.saturating_sub(x) as f64 / wall.as_nanos().max(1) as f64);
    let Some(report) = reports.pop() else { return Err(CliError::BadInput("no runs".into())) };
    if !report.passed() || reports.iter().any(|r| r.trace_hash != report.trace_hash) {
        return Err(CliError::CheckFailed(format!("the workload run failed or was not deterministic: {report}")));
    }
    for _ in 0..a.runs {
        let s = Instant::now();
        std::hint::black_box(bare_event_loop(engines, report.events));
        t_bare.push(s.elapsed());
    }
    Ok(Figures { records, report, build: median(t_build), run: median(t_run), cpu_share, bare: median(t_bare) })
}

fn print(name: &str, f: &Figures) -> f64 {
    let r = &f.report;
    let ips = per_s(r.instructions, f.run);
    println!(
        "{name}: {} records, {} instructions, {} events, {} ns simulated",
        f.records, r.instructions, r.events, r.time_ns
    );
    println!("  build (fetch, decode, mirror)  {:>8.3} ms", f.build.as_secs_f64() * 1e3);
    println!(
        "  run                            {:>8.3} ms  {:>6.2} M instructions/s  {:>6.2} M events/s",
        f.run.as_secs_f64() * 1e3,
        ips / 1e6,
        per_s(r.events, f.run) / 1e6
    );
    if let Some(c) = f.cpu_share {
        println!("  on-CPU share of the batch's wall time: {:.2} (below 1: other load took the core)", c);
    }
    println!(
        "  bare event loop, same events   {:>8.3} ms  {:>6.2} M events/s",
        f.bare.as_secs_f64() * 1e3,
        per_s(r.events, f.bare) / 1e6
    );
    println!("  overhead run / bare loop = {:.1}x", f.run.as_secs_f64() / f.bare.as_secs_f64().max(1e-9));
    ips
}

/// Builds the workloads, times them, prints medians, ratios and the target check.
pub fn run(a: &BenchSimArgs) -> Result<ExitCode, CliError> {
    let t0 = Instant::now();
    let bench = generate(&GenConfig {
        seed: a.seed,
        cores: a.cores,
        ops: a.ops,
        max_elems: a.elems.max(1),
        handoff_pct: 30,
        allreduces: a.ops / 500,
        outputs: 3,
    });
    let default = generate(&GenConfig::new(a.seed, 4, SizeClass::Small));
    println!(
        "median of {} runs, one thread, checks {}{}; workloads generated in {:.2} s",
        a.runs,
        if a.no_checks { "off" } else { "on" },
        if a.jitter { ", jitter" } else { "" },
        t0.elapsed().as_secs_f64()
    );
    let f = measure(&bench, a)?;
    let ips = print(&format!("bench workload ({} cores, {} ops, tensors <= {} elements)", a.cores, a.ops, a.elems), &f);
    let d = measure(&default, a)?;
    print("`lncsim run` default program (4 cores, small: tensors <= 4096 elements)", &d);
    println!(
        "bench workload instructions/s = {:.2} M (target >= 1.00 M): {}",
        ips / 1e6,
        if ips >= 1e6 { "PASS" } else { "FAIL" }
    );
    if ips < 1e6 {
        return Err(CliError::CheckFailed(format!("{:.2} M simulated instructions/s (target >= 1.00 M)", ips / 1e6)));
    }
    Ok(ExitCode::SUCCESS)
}
