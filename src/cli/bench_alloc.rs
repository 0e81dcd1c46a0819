//! `lncsim bench alloc`: the DRAM allocator's speed and packing figures.
//!
//! 1. Generated DRAM problems of 1k, 10k, 100k and 1M intervals: median time of
//!    `allocate` (tree build + order + select_impl), growth per 10x (target < 15x).
//! 2. At 10k: the naive allocator (same order and `search`, interference by
//!    scanning all pairs) against the tree (target speed-up >= 20x); both must
//!    produce the same placement.
//! 3. Every MiniMalloc CSV with `--align 1`: peak/LB and median time of both
//!    orders (target: `--order size` under 50 ms per file), each placement checked.
//!
//! 4. The IR driver: `pipeline::compile` (split, per-core allocation,
//!    anti-dependency passes, shared run, sync) on generated programs of each
//!    size class with 8 cores, and the private-run driver alone; figures only,
//!    every result checked by the IR checker.
//!
//! Exits 1 when a target is missed or a placement does not check clean.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use super::{CliError, read_text};
use clap::Args;
use lncsim_model::dram::{
    AllocConfig, Allocation, Oracle, Order, allocate, allocate_naive, allocate_using, check, csv, generate,
};

/// Arguments of `lncsim bench alloc`.
#[derive(Debug, Args)]
pub struct BenchAllocArgs {
    /// Largest generated problem, in intervals (sizes 1k, 10k, ... up to it).
    #[arg(long, default_value_t = 1_000_000, value_parser = clap::builder::RangedI64ValueParser::<usize>::new().range(0..=10_000_000), allow_negative_numbers = true)]
    pub max_intervals: usize,
    /// Average number of simultaneously live locations in generated problems.
    #[arg(long, default_value_t = 16, value_parser = clap::builder::RangedI64ValueParser::<u64>::new().range(1..=1_000_000), allow_negative_numbers = true)]
    pub live: u64,
    /// Repetitions per measurement (x100000/n below 100k intervals; at most 3 at 1M); the median is reported.
    #[arg(long, default_value_t = 5, value_parser = clap::builder::RangedI64ValueParser::<u64>::new().range(1..=1000), allow_negative_numbers = true)]
    pub reps: u64,
    /// Seed of the generated problems.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Directory of MiniMalloc CSVs (default: `shared/alloc-bench` found above the workspace).
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

/// Repetitions for a problem of `n` intervals: more for small ones (their
/// times are short and noisy), at most 3 at a million.
fn reps_for(reps: u64, n: usize) -> u64 {
    if n >= 1_000_000 { reps.min(3) } else { reps * (100_000 / n as u64).max(1) }
}

/// This thread's on-CPU time in ns (`/proc/thread-self/schedstat`), if the kernel has it.
fn cpu_ns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// One measurement: the median wall time of a run, and the mean on-CPU time
/// of a run over the whole batch, in ms.
#[derive(Debug, Clone, Copy)]
struct Timing {
    wall: f64,
    cpu: Option<f64>,
}

impl Timing {
    /// The figure the targets are judged on: on-CPU time when known (the
    /// machine is shared, so wall time includes other processes' slices).
    fn ms(self) -> f64 {
        self.cpu.unwrap_or(self.wall)
    }
}

/// `reps` runs of `f` after one untimed warm-up run; the last result.
///
/// The kernel's on-CPU counter advances at scheduler ticks, so it is read
/// around the whole batch and reported (as a mean) only when the batch ran
/// for at least 100 ms.
fn measure<T>(reps: u64, mut f: impl FnMut() -> T) -> (Timing, T) {
    let mut last = f();
    let mut wall = Vec::new();
    let (b0, c0) = (Instant::now(), cpu_ns());
    for _ in 0..reps.max(1) {
        let t0 = Instant::now();
        last = f();
        wall.push(t0.elapsed().as_secs_f64() * 1e3);
    }
    let batch = b0.elapsed().as_secs_f64();
    let cpu = match (c0, cpu_ns()) {
        (Some(a), Some(b)) if batch >= 0.1 => Some(b.saturating_sub(a) as f64 / 1e6 / wall.len() as f64),
        _ => None,
    };
    wall.sort_by(f64::total_cmp);
    (Timing { wall: wall[wall.len() / 2], cpu }, last)
}

/// The `shared/alloc-bench` directory above the build's workspace or the current directory.
fn find_bench_dir() -> Option<PathBuf> {
    let here = std::env::current_dir().ok();
    let starts = [Some(PathBuf::from(env!("CARGO_MANIFEST_DIR"))), here];
    starts
        .into_iter()
        .flatten()
        .find_map(|s| lncsim_model::testdata::shared_dir(&s))
        .map(|d| d.join("alloc-bench"))
        .filter(|d| d.is_dir())
}

/// Runs `lncsim bench alloc`.
pub fn run(args: &BenchAllocArgs) -> Result<ExitCode, CliError> {
    let mut missed = Vec::new();
    println!(
        "seed {}; generated DRAM problems, ~{} live locations; medians of {} x 100000/n runs (3 at 1M)",
        args.seed, args.live, args.reps
    );
    println!("times per run: mean on-CPU ms (median wall ms); growth and speed-up use on-CPU time");
    println!(
        "{:>10} {:>10} {:>22} {:>8} {:>22} {:>8}",
        "intervals", "locations", "seed order", "growth", "size order", "growth"
    );
    let mut prev: Option<[Timing; 2]> = None;
    let mut n = 1000usize;
    while n <= args.max_intervals {
        let p = generate::bench_problem(args.seed, n, args.live);
        let reps = reps_for(args.reps, n);
        let mut t = [Timing { wall: 0.0, cpu: None }; 2];
        for (k, order) in [Order::Seed, Order::Size].into_iter().enumerate() {
            let c = generate::bench_config(order);
            let (tm, r) = measure(reps, || allocate(&p, &c));
            let a = r.map_err(|e| CliError::CheckFailed(format!("{n} intervals: {e}")))?;
            if n <= 10_000 && !check(&p, &c, &a.addresses).is_empty() {
                missed.push(format!("{n} intervals ({order:?}): placement does not check clean"));
            }
            t[k] = tm;
        }
        let show = |x: Timing| match x.cpu {
            Some(c) => format!("{c:.2} ({:.2})", x.wall),
            None => format!("- ({:.2})", x.wall),
        };
        let growth = |i: usize| prev.map(|p| t[i].ms() / p[i].ms());
        let g = |i: usize| growth(i).map_or(String::from("-"), |g| format!("{g:.1}x"));
        println!("{n:>10} {:>10} {:>22} {:>8} {:>22} {:>8}", p.locations.len(), show(t[0]), g(0), show(t[1]), g(1));
        for (i, name) in ["seed", "size"].into_iter().enumerate() {
            if let Some(gr) = growth(i).filter(|&gr| gr >= 15.0) {
                missed.push(format!("{name} order growth {gr:.1}x at {n} intervals (target < 15x)"));
            }
        }
        prev = Some(t);
        n *= 10;
    }
    if args.max_intervals >= 10_000 {
        speedup_at_10k(args, &mut missed);
    }
    bench_files(args, &mut missed)?;
    bench_ir_driver(args, &mut missed);
    if missed.is_empty() {
        println!("all targets met");
        return Ok(ExitCode::SUCCESS);
    }
    for m in &missed {
        println!("MISSED: {m}");
    }
    Err(CliError::CheckFailed(format!("{} benchmark targets missed", missed.len())))
}

/// The tree against the naive all-pairs allocator at 10k intervals.
///
/// "Naive" asks a scan over all locations every time simplify or select_impl
/// asks about interference (the target's baseline); "naive + cache" scans once
/// per location and keeps the lists, as the shipped tree allocator does.
fn speedup_at_10k(args: &BenchAllocArgs, missed: &mut Vec<String>) {
    let p = generate::bench_problem(args.seed, 10_000, args.live);
    let c = generate::bench_config(Order::Seed);
    let reps = reps_for(args.reps, 10_000);
    let (tree_t, tree) = measure(reps, || allocate(&p, &c));
    let (tree_nc_t, tree_nc) = measure(reps, || allocate_using(&p, &c, Oracle::Tree, false));
    let (naive_t, naive) = measure(args.reps.min(3), || allocate_using(&p, &c, Oracle::PairScan, false));
    let (naive_c_t, naive_c) = measure(args.reps.min(3), || allocate_naive(&p, &c));
    let same = [&tree_nc, &naive, &naive_c].iter().all(|x| matches!((&tree, x), (Ok(a), Ok(b)) if a == b));
    let speedup = naive_t.ms() / tree_t.ms();
    let line = |name: &str, t: Timing| format!("  {name:<32} {:>9.2} ms ({:.2} wall)", t.ms(), t.wall);
    println!("10k intervals (seed order), medians:");
    println!("{}", line("interval tree + neighbour cache", tree_t));
    println!("{}", line("interval tree, no cache", tree_nc_t));
    println!("{}  speed-up {speedup:.1}x (target >= 20x)", line("naive all-pairs scans", naive_t));
    println!("{}  speed-up {:.1}x", line("naive all-pairs + cache", naive_c_t), naive_c_t.ms() / tree_t.ms());
    println!("  same placement from all four: {same}");
    if speedup < 20.0 {
        missed.push(format!("speed-up {speedup:.1}x over the naive allocator (target >= 20x)"));
    }
    if !same {
        missed.push("the naive and tree allocators disagree".into());
    }
}

fn bench_files(args: &BenchAllocArgs, missed: &mut Vec<String>) -> Result<(), CliError> {
    let Some(dir) = args.dir.clone().or_else(find_bench_dir) else {
        println!("MiniMalloc files: skipped (no shared/alloc-bench directory found; pass --dir)");
        return Ok(());
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map_err(|e| CliError::BadInput(format!("{}: {e}", dir.display())))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "csv"))
        .collect();
    files.sort();
    println!("MiniMalloc files in {} (--align 1, median wall ms of {} runs)", dir.display(), args.reps);
    println!(
        "{:<16} {:>7} {:>9} {:>10} {:>9} {:>10} {:>9} {:>6}",
        "file", "buffers", "LB", "seed p/LB", "seed ms", "size p/LB", "size ms", "valid"
    );
    for f in files {
        let shown = f.display().to_string();
        let name = f.file_name().and_then(|n| n.to_str()).unwrap_or("?").to_string();
        let parsed = csv::parse(&shown, &read_text(&f)?).map_err(|e| CliError::BadInput(e.to_string()))?;
        let p = parsed.to_problem(1);
        let lb = p.lower_bound().map_err(|e| CliError::BadInput(format!("{shown}: {e}")))?;
        let mut cols = Vec::new();
        let mut valid = true;
        for order in [Order::Seed, Order::Size] {
            let c = AllocConfig::minimalloc(1, u64::MAX, order);
            let (tm, r) = measure(args.reps, || allocate(&p, &c));
            let ms = tm.wall;
            let a: Allocation = r.map_err(|e| CliError::CheckFailed(format!("{shown}: {e}")))?;
            valid &= check(&p, &c, &a.addresses).is_empty();
            let ratio = if lb == 0 { 1.0 } else { a.metrics.peak as f64 / lb as f64 };
            cols.push((ratio, ms));
            if order == Order::Size && ms >= 50.0 {
                missed.push(format!("{name}: --order size took {ms:.2} ms (target < 50 ms)"));
            }
        }
        if !valid {
            missed.push(format!("{name}: a placement does not check clean"));
        }
        println!(
            "{name:<16} {:>7} {lb:>9} {:>10.4} {:>9.3} {:>10.4} {:>9.3} {valid:>6}",
            p.locations.len(),
            cols[0].0,
            cols[0].1,
            cols[1].0,
            cols[1].1
        );
    }
    Ok(())
}

/// The IR-level driver on generated programs (8 cores), figures only.
fn bench_ir_driver(args: &BenchAllocArgs, missed: &mut Vec<String>) {
    use lncsim_model::dram::{allocate_module, check_modules};
    use lncsim_model::pipeline::{PipelineOptions, compile};
    use lncsim_model::program::{GenConfig, SizeClass, generate};
    let opts = PipelineOptions::default();
    println!("IR driver, generated programs with 8 cores (median wall ms of {} runs)", args.reps);
    println!("{:<8} {:>6} {:>10} {:>12} {:>14}", "size", "insts", "locations", "compile ms", "dram alloc ms");
    for size in [SizeClass::Small, SizeClass::Medium, SizeClass::Large] {
        let p = generate(&GenConfig::new(args.seed, 8, size));
        let (t, r) = measure(args.reps, || compile(&p, &opts));
        let Ok(c) = r else {
            missed.push(format!("{size:?}: compile failed"));
            continue;
        };
        if !check_modules(&c.per_core, &opts.check_config(&c.report)).is_empty() {
            missed.push(format!("{size:?}: the IR checker rejects the compiled modules"));
        }
        let Ok(split) = lncsim_model::split::split(&p) else { continue };
        let (ta, _) = measure(args.reps, || {
            let mut ms = split.clone();
            ms.iter_mut().map(|m| allocate_module(m, &opts.dram())).collect::<Result<Vec<_>, _>>()
        });
        let insts: usize = p.functions.iter().map(|f| f.insts.len()).sum();
        println!("{:<8} {insts:>6} {:>10} {:>12.3} {:>14.3}", format!("{size:?}"), p.memlocs.len(), t.wall, ta.wall);
    }
}
