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
//! Exits 1 when a target is missed or a placement does not check clean.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use super::{CliError, EXIT_OK, read_text};
use clap::Args;
use lncsim_model::dram::{
    AllocConfig, Allocation, Oracle, Order, allocate, allocate_naive, allocate_using, check, csv,
    generate,
};

/// Arguments of `lncsim bench alloc`.
#[derive(Debug, Args)]
pub struct BenchAllocArgs {
    /// Largest generated problem, in intervals (sizes 1k, 10k, ... up to it).
    #[arg(long, default_value_t = 1_000_000)]
    pub max_intervals: usize,
    /// Average number of simultaneously live locations in generated problems.
    #[arg(long, default_value_t = 16)]
    pub live: u64,
    /// Repetitions per measurement (x100000/n below 100k intervals; at most 3 at 1M); the median is reported.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(1..))]
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
    if n >= 1_000_000 {
        reps.min(3)
    } else {
        reps * (100_000 / n as u64).max(1)
    }
}

fn median_ms<T>(reps: u64, mut f: impl FnMut() -> T) -> (f64, T) {
    let mut times = Vec::new();
    let mut last = None;
    for _ in 0..reps.max(1) {
        let t0 = Instant::now();
        let r = f();
        times.push(t0.elapsed().as_secs_f64() * 1e3);
        last = Some(r);
    }
    times.sort_by(f64::total_cmp);
    let m = times[times.len() / 2];
    match last {
        Some(r) => (m, r),
        None => (m, f()),
    }
}

/// The `shared/alloc-bench` directory above the build's workspace or the current directory.
fn find_bench_dir() -> Option<PathBuf> {
    let here = std::env::current_dir().ok();
    let starts = [Some(PathBuf::from(env!("CARGO_MANIFEST_DIR"))), here];
    starts
        .into_iter()
        .flatten()
        .flat_map(|s| s.ancestors().map(Path::to_path_buf).collect::<Vec<_>>())
        .map(|a| a.join("shared").join("alloc-bench"))
        .find(|d| d.is_dir())
}

/// Runs `lncsim bench alloc`.
pub fn run(args: &BenchAllocArgs) -> Result<ExitCode, CliError> {
    let mut missed = Vec::new();
    println!(
        "seed {}; generated DRAM problems, ~{} live locations, medians of {} x 100000/n runs (3 at 1M)",
        args.seed, args.live, args.reps
    );
    println!(
        "{:>10} {:>10} {:>14} {:>11} {:>14} {:>11}",
        "intervals", "locations", "seed ms", "growth/10x", "size ms", "growth/10x"
    );
    let mut prev: Option<(f64, f64)> = None;
    let mut n = 1000usize;
    while n <= args.max_intervals {
        let p = generate::bench_problem(args.seed, n, args.live);
        let reps = if n >= 1_000_000 {
            args.reps.min(3)
        } else {
            args.reps
        };
        let mut t = [0.0f64; 2];
        for (k, order) in [Order::Seed, Order::Size].into_iter().enumerate() {
            let c = generate::bench_config(order);
            let (ms, r) = median_ms(reps, || allocate(&p, &c));
            let a = r.map_err(|e| CliError::CheckFailed(format!("{n} intervals: {e}")))?;
            if n <= 10_000 && !check(&p, &c, &a.addresses).is_empty() {
                missed.push(format!(
                    "{n} intervals ({order:?}): placement does not check clean"
                ));
            }
            t[k] = ms;
        }
        let growth = |i: usize| {
            prev.map_or(String::from("-"), |p| {
                format!("{:.1}x", t[i] / [p.0, p.1][i])
            })
        };
        println!(
            "{n:>10} {:>10} {:>14.2} {:>11} {:>14.2} {:>11}",
            p.locations.len(),
            t[0],
            growth(0),
            t[1],
            growth(1)
        );
        if let Some((p0, p1)) = prev {
            for (name, g) in [("seed", t[0] / p0), ("size", t[1] / p1)] {
                if g >= 15.0 {
                    missed.push(format!(
                        "{name} order growth {g:.1}x at {n} intervals (target < 15x)"
                    ));
                }
            }
        }
        prev = Some((t[0], t[1]));
        n *= 10;
    }
    if args.max_intervals >= 10_000 {
        speedup_at_10k(args, &mut missed);
    }
    bench_files(args, &mut missed)?;
    if missed.is_empty() {
        println!("all targets met");
        return Ok(ExitCode::from(EXIT_OK));
    }
    for m in &missed {
        println!("MISSED: {m}");
    }
    Err(CliError::CheckFailed(format!(
        "{} benchmark targets missed",
        missed.len()
    )))
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
    let (tree_ms, tree) = median_ms(reps, || allocate(&p, &c));
    let (tree_nc_ms, tree_nc) = median_ms(reps, || allocate_using(&p, &c, Oracle::Tree, false));
    let (naive_ms, naive) = median_ms(args.reps.min(3), || {
        allocate_using(&p, &c, Oracle::PairScan, false)
    });
    let (naive_c_ms, naive_c) = median_ms(args.reps.min(3), || allocate_naive(&p, &c));
    let same = [&tree_nc, &naive, &naive_c]
        .iter()
        .all(|x| matches!((&tree, x), (Ok(a), Ok(b)) if a == b));
    let speedup = naive_ms / tree_ms;
    println!("10k intervals (seed order), medians:");
    println!("  interval tree + neighbour cache {tree_ms:>9.2} ms");
    println!("  interval tree, no cache         {tree_nc_ms:>9.2} ms");
    println!(
        "  naive all-pairs scans           {naive_ms:>9.2} ms  speed-up {speedup:.1}x (target >= 20x)"
    );
    println!(
        "  naive all-pairs + cache         {naive_c_ms:>9.2} ms  speed-up {:.1}x",
        naive_c_ms / tree_ms
    );
    println!("  same placement from all four: {same}");
    if speedup < 20.0 {
        missed.push(format!(
            "speed-up {speedup:.1}x over the naive allocator (target >= 20x)"
        ));
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
    println!(
        "MiniMalloc files in {} (--align 1, median of {} runs)",
        dir.display(),
        args.reps
    );
    println!(
        "{:<16} {:>7} {:>9} {:>10} {:>9} {:>10} {:>9} {:>6}",
        "file", "buffers", "LB", "seed p/LB", "seed ms", "size p/LB", "size ms", "valid"
    );
    for f in files {
        let shown = f.display().to_string();
        let name = f
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("?")
            .to_string();
        let parsed =
            csv::parse(&shown, &read_text(&f)?).map_err(|e| CliError::BadInput(e.to_string()))?;
        let p = parsed.to_problem(1);
        let lb = p
            .lower_bound()
            .map_err(|e| CliError::BadInput(format!("{shown}: {e}")))?;
        let mut cols = Vec::new();
        let mut valid = true;
        for order in [Order::Seed, Order::Size] {
            let c = AllocConfig::minimalloc(1, u64::MAX, order);
            let (ms, r) = median_ms(args.reps, || allocate(&p, &c));
            let a: Allocation = r.map_err(|e| CliError::CheckFailed(format!("{shown}: {e}")))?;
            valid &= check(&p, &c, &a.addresses).is_empty();
            let ratio = if lb == 0 {
                1.0
            } else {
                a.metrics.peak as f64 / lb as f64
            };
            cols.push((ratio, ms));
            if order == Order::Size && ms >= 50.0 {
                missed.push(format!(
                    "{name}: --order size took {ms:.2} ms (target < 50 ms)"
                ));
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
