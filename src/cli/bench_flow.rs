//! `lncsim bench flow`: the whole flow of `lncsim run`, every check on, on
//! generated programs of N instructions per core (`lncsim gen --ops N`;
//! default 1k, 10k and 100k on 8 cores). Prints each stage's and check's
//! wall time (median of `--reps` runs) and peak RSS, the growth per 10x of
//! every stage, and the comparison with the targets (issue 11): at the
//! largest size, end to end <= 120 s and peak RSS <= 8 GiB (moonshot <= 30 s,
//! reported, not gated); growth per 10x <= 12x for every stage whose median
//! at the larger size is at least 50 ms (faster stages cannot matter to the
//! end-to-end target and their ratios are timer noise: printed, not judged).
//! Exits 1 on a miss, or when a run fails a check.
//!
//! The largest size runs `--reps` times; a smaller size, whose runs are
//! short, runs `--reps` times the size ratio, at most [`MAX_RUNS`] times, so
//! its median (the denominator of every growth figure) is not one noisy run
//! of a few milliseconds. The runs are taken in rounds, smaller sizes first in
//! each, and each size's runs are spread evenly over the rounds, so that a
//! slow spell of the shared machine lands on every size alike rather than on
//! one size's block of runs (a block-wise schedule let the machine's drift
//! between blocks show up as growth).
//!
//! Growth is judged on each stage's **on-CPU time** (this thread's
//! `CLOCK_THREAD_CPUTIME_ID`, read as each stage finishes, the bench's own
//! bookkeeping excluded) when the platform has it, else on wall time: the
//! machine is shared, and wall time counts other processes' slices. The
//! end-to-end target is judged on wall time, as a user waits it.
//!
//! Peak RSS per stage: `/proc/self/status` VmHWM read when the stage
//! finishes, reset to the current RSS (`/proc/self/clear_refs` = 5) when the
//! previous one finished; where the kernel refuses the reset, the running
//! peak of the process is reported and said so.

use std::process::ExitCode;
use std::time::Instant;

use clap::Args;
use cpu_time::ThreadTime;
use lncsim_model::program::{GenConfig, SizeClass};
use lncsim_sim::flow::{Progress, RunConfig, RunReport, Source, run_observed};

use super::CliError;

/// Arguments of `lncsim bench flow`.
#[derive(Debug, Args)]
pub struct BenchFlowArgs {
    /// Instructions per core of each program, comma-separated, ascending (each 1 to 200000).
    #[arg(long, value_delimiter = ',', default_values_t = [1_000u32, 10_000, 100_000],
          value_parser = clap::value_parser!(u32).range(1..=200_000))]
    pub sizes: Vec<u32>,
    /// Cores of every program.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub cores: u32,
    /// Runs of the largest size (a smaller one runs this times the size ratio, at most 15); the median of each stage is reported (1 to 15).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=15))]
    pub reps: u32,
    /// Seed of the programs and of the runs.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Largest tensor of the programs, in elements (1 to 4096).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=4096))]
    pub elems: u64,
}

/// End-to-end target at the largest size, seconds.
const TARGET_S: f64 = 120.0;
/// Moonshot end-to-end target, seconds (reported only).
const MOONSHOT_S: f64 = 30.0;
/// Peak RSS target, bytes.
const TARGET_RSS: u64 = 8 << 30;
/// Most runs of one size (a small size's runs are short, so it gets more).
const MAX_RUNS: u32 = 15;
/// Largest growth per 10x of any judged stage.
const TARGET_GROWTH: f64 = 12.0;
/// A stage is judged on its growth when its median at the larger size is at least this, ms.
const JUDGE_MS: f64 = 50.0;

/// The process's peak RSS in bytes (VmHWM), if the kernel reports it.
fn vm_hwm() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// Resets the peak RSS to the current RSS; false when the kernel refuses.
fn reset_hwm() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// One stage's (or check's) figures in one run.
#[derive(Clone, Debug)]
struct Item {
    name: String,
    /// Wall time, ms.
    ms: f64,
    /// On-CPU time of this thread, ms, when the platform has the clock.
    cpu_ms: Option<f64>,
    peak: Option<u64>,
}

impl Item {
    /// The time growth is judged on: on-CPU when known, else wall.
    fn judged_ms(&self) -> f64 {
        self.cpu_ms.unwrap_or(self.ms)
    }
}

/// One run: its items in order, its end-to-end time and its report.
struct Run {
    items: Vec<Item>,
    total_ms: f64,
    report: RunReport,
}

/// The short label of a stage or check.
fn label(p: &Progress<'_>) -> String {
    match p {
        Progress::Stage(s) => s.name.to_string(),
        Progress::Check(c) => {
            let short: String = c.name.chars().take(40).collect();
            format!("check: {short}")
        }
        Progress::Fault(_) => "fault".to_string(),
    }
}

fn one_run(cfg: &RunConfig, live: bool, resets: &mut bool) -> Run {
    let mut items = Vec::new();
    *resets &= reset_hwm();
    let t0 = Instant::now();
    let mut mark = ThreadTime::try_now().ok();
    let report = run_observed(cfg, &mut |p| {
        let now = ThreadTime::try_now().ok();
        let micros = match p {
            Progress::Stage(s) => s.micros,
            Progress::Check(c) => c.micros,
            // A fault line is not a stage: nothing to time (its CPU goes to the next stage).
            Progress::Fault(_) => return,
        };
        let cpu_ms = match (mark, now) {
            (Some(a), Some(b)) => Some(b.duration_since(a).as_secs_f64() * 1e3),
            _ => None,
        };
        let peak = vm_hwm();
        *resets &= reset_hwm();
        let item = Item { name: label(&p), ms: micros as f64 / 1e3, cpu_ms, peak };
        if live {
            print_item(&item);
        }
        items.push(item);
        // The bookkeeping above is not the next stage's.
        mark = ThreadTime::try_now().ok();
    });
    Run { items, total_ms: t0.elapsed().as_secs_f64() * 1e3, report }
}

/// One stage's line: wall ms, on-CPU ms, peak RSS.
fn print_item(item: &Item) {
    let cpu = item.cpu_ms.map_or_else(|| "?".to_string(), |c| format!("{c:.1}"));
    println!("    {:<48} {:>10.1} ms  {:>10} ms CPU  {:>8} MiB", item.name, item.ms, cpu, mib(item.peak));
}

fn mib(b: Option<u64>) -> String {
    b.map_or_else(|| "?".into(), |b| format!("{:.0}", b as f64 / (1u64 << 20) as f64))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// The medians of one size's runs.
struct SizeFigures {
    size: u32,
    instructions: usize,
    items: Vec<Item>,
    /// Per item, the fastest and the slowest run's judged time, ms.
    spread: Vec<(f64, f64)>,
    total_ms: f64,
    peak: Option<u64>,
}

/// One size's program and the runs taken of it so far.
struct SizeRuns {
    size: u32,
    cfg: RunConfig,
    /// How many runs this size gets ([`runs_of`]).
    want: u32,
    runs: Vec<Run>,
}

/// The runs of a size: `reps` times how many times smaller it is than the
/// largest size (rounded up), at least `reps`, at most [`MAX_RUNS`].
fn runs_of(reps: u32, size: u32, largest: u32) -> u32 {
    let ratio = largest.div_ceil(size.max(1));
    reps.saturating_mul(ratio).clamp(reps, MAX_RUNS.max(reps))
}

/// Whether size `k`'s run in `round` gives valid peaks: no larger size ran
/// before it in this process (round 0, smallest first), or it is the largest.
fn peak_valid(round: u32, k: usize, largest: usize) -> bool {
    round == 0 || k == largest
}

/// Whether a size of `n` runs takes one in round `r` of `rounds`: its runs
/// spread evenly, the first in round 0 (`ceil((r + 1) n / R) > ceil(r n / R)`).
fn runs_in_round(r: u32, n: u32, rounds: u32) -> bool {
    let rounds = u64::from(rounds.max(1));
    let upto = |r: u32| (u64::from(r) * u64::from(n)).div_ceil(rounds);
    upto(r + 1) > upto(r)
}

/// The run configuration of one size's generated program.
fn size_config(a: &BenchFlowArgs, size: u32) -> Result<RunConfig, CliError> {
    let g = GenConfig::with_ops(a.seed, a.cores, size, a.elems).map_err(|e| CliError::BadInput(e.to_string()))?;
    Ok(RunConfig { source: Source::Generated(g, None), ..RunConfig::generated(a.seed, a.cores, SizeClass::Small) })
}

/// Takes one more run of `s` (stage lines printed live on its first run),
/// refusing a failed or non-deterministic one. `peak_valid`: false when a
/// larger size ran before it in this process, whose freed but still resident
/// heap would inflate this run's peaks; its peaks are then dropped.
fn take_run(a: &BenchFlowArgs, s: &mut SizeRuns, peak_valid: bool, resets: &mut bool) -> Result<(), CliError> {
    let rep = s.runs.len();
    if rep == 0 {
        println!("size {} x {} cores:", s.size, a.cores);
        if s.want > 1 {
            println!("  run 1 of {}, each stage as it finishes:", s.want);
        }
    }
    let mut r = one_run(&s.cfg, rep == 0, resets);
    if rep > 0 {
        println!("  size {}: run {} of {}: end to end {:.1} ms", s.size, rep + 1, s.want, r.total_ms);
    }
    if !r.report.passed() {
        return Err(CliError::CheckFailed(format!(
            "the {}-instruction run failed: {}; replay: {}",
            s.size,
            r.report.failures().join("; "),
            r.report.replay_text()
        )));
    }
    if s.runs.first().is_some_and(|f: &Run| f.report.trace_hash != r.report.trace_hash) {
        return Err(CliError::CheckFailed(format!("the {}-instruction run is not deterministic", s.size)));
    }
    if !peak_valid {
        r.items.iter_mut().for_each(|i| i.peak = None);
    }
    s.runs.push(r);
    Ok(())
}

/// The medians of one size's runs (peaks: the largest kept).
fn figures(a: &BenchFlowArgs, s: &SizeRuns) -> SizeFigures {
    let runs = &s.runs;
    let first = &runs[0];
    let items = (0..first.items.len())
        .map(|i| Item {
            name: first.items[i].name.clone(),
            ms: median(runs.iter().filter_map(|r| r.items.get(i)).map(|x| x.ms).collect()),
            cpu_ms: runs
                .iter()
                .map(|r| r.items.get(i).and_then(|x| x.cpu_ms))
                .collect::<Option<Vec<f64>>>()
                .map(median),
            peak: runs.iter().filter_map(|r| r.items.get(i)?.peak).max(),
        })
        .collect::<Vec<_>>();
    let spread = (0..first.items.len())
        .map(|i| {
            let t = runs.iter().filter_map(|r| r.items.get(i)).map(Item::judged_ms);
            t.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| (lo.min(x), hi.max(x)))
        })
        .collect();
    if runs.len() > 1 {
        println!("size {} x {} cores: median of {} runs (peak RSS: the largest):", s.size, a.cores, runs.len());
        items.iter().for_each(print_item);
    }
    let peak = items.iter().filter_map(|i| i.peak).max();
    let total_ms = median(runs.iter().map(|r| r.total_ms).collect());
    let instructions = first.report.instructions;
    println!(
        "  {instructions} instructions, end to end {:.1} ms (median of {}), peak RSS {} MiB",
        total_ms,
        runs.len(),
        mib(peak)
    );
    SizeFigures { size: s.size, instructions, items, spread, total_ms, peak }
}

/// Every size's runs, taken in rounds: as many rounds as the smallest size
/// has runs; a round runs, in ascending order, each size whose runs fall in
/// it ([`runs_in_round`]: spread evenly, every size in round 1). A slow spell
/// of the shared machine then falls on every size alike instead of on one
/// size's block of runs, so it does not bend the growth between sizes. Peaks
/// of a size come from runs no larger size ran before (round 1, and every
/// run of the largest size).
fn measure_all(a: &BenchFlowArgs, resets: &mut bool) -> Result<Vec<SizeFigures>, CliError> {
    let top = a.sizes.last().copied().unwrap_or(1);
    let mut sizes = a
        .sizes
        .iter()
        .map(|&size| {
            let want = runs_of(a.reps, size, top);
            Ok(SizeRuns { size, cfg: size_config(a, size)?, want, runs: Vec::new() })
        })
        .collect::<Result<Vec<_>, CliError>>()?;
    let largest = sizes.len().saturating_sub(1);
    let rounds = sizes.iter().map(|s| s.want).max().unwrap_or(0);
    for round in 0..rounds {
        if round == 1 {
            println!("rounds 2 to {rounds}: the sizes whose runs fall in the round, ascending");
        }
        for (k, s) in sizes.iter_mut().enumerate() {
            if runs_in_round(round, s.want, rounds) {
                take_run(a, s, peak_valid(round, k, largest), resets)?;
            }
        }
    }
    Ok(sizes.iter().map(|s| figures(a, s)).collect())
}

/// The growth of `b` over `a` scaled to a 10x step in size.
fn growth(a_ms: f64, b_ms: f64, a_size: u32, b_size: u32) -> f64 {
    let steps = (f64::from(b_size) / f64::from(a_size)).log10();
    let ratio = b_ms / a_ms.max(1e-3);
    if steps <= 0.0 { ratio } else { ratio.powf(1.0 / steps) }
}

/// The range of a stage's growth per 10x over its runs: from the smaller
/// size's slowest run against the larger size's fastest, to the smaller size's
/// fastest against the larger size's slowest. A miss whose low end is over the
/// target holds on every pairing of runs; one whose low end is not may be noise.
fn growth_range(a: (f64, f64), b: (f64, f64), a_size: u32, b_size: u32) -> (f64, f64) {
    (growth(a.1, b.0, a_size, b_size), growth(a.0, b.1, a_size, b_size))
}

/// The line that counts the growth misses and, of them, those whose low end
/// (`lows`, one per miss) is over the target; `None` without a miss.
fn miss_summary(lows: &[f64]) -> Option<String> {
    let robust = lows.iter().filter(|&&lo| lo > TARGET_GROWTH).count();
    (!lows.is_empty()).then(|| {
        format!(
            "growth misses: {}, of which {robust} hold on every pairing of runs (low end over {TARGET_GROWTH}x)",
            lows.len()
        )
    })
}

/// A stage's growth per 10x and its verdict: `not judged` under [`JUDGE_MS`]
/// at the larger size, else PASS or FAIL against [`TARGET_GROWTH`].
fn judge(a_ms: f64, b_ms: f64, a_size: u32, b_size: u32) -> (f64, &'static str) {
    let g = growth(a_ms, b_ms, a_size, b_size);
    let verdict = match (b_ms >= JUDGE_MS, g <= TARGET_GROWTH) {
        (false, _) => "not judged",
        (true, true) => "PASS",
        (true, false) => "FAIL",
    };
    (g, verdict)
}

/// Runs every size, prints the table, the growth and the target comparison.
pub fn run(a: &BenchFlowArgs) -> Result<ExitCode, CliError> {
    if a.sizes.windows(2).any(|w| w[0] >= w[1]) {
        return Err(CliError::BadInput("--sizes must be strictly ascending".into()));
    }
    println!(
        "bench flow: lncsim run, every check on, {} cores, sizes {:?} instructions per core, tensors <= {} elements, \
         seed {}, median of {} runs of the largest size (a smaller one: up to {MAX_RUNS}, by the size ratio), taken in rounds",
        a.cores, a.sizes, a.elems, a.seed, a.reps
    );
    let mut resets = true;
    let figs = measure_all(a, &mut resets)?;
    if !resets {
        println!("note: /proc/self/clear_refs refused the reset: peaks are the process's running peak");
    }
    let mut misses = Vec::new();
    let clock = if figs.iter().all(|f| f.items.iter().all(|i| i.cpu_ms.is_some())) {
        "on-CPU"
    } else {
        "wall (no thread CPU clock here)"
    };
    println!(
        "growth per 10x of {clock} time (judged: stages of >= {JUDGE_MS} ms at the larger size; target <= {TARGET_GROWTH}x); \
         [low .. high]: the growth over every pairing of runs (a miss whose low end is over the target is not noise)"
    );
    let mut miss_lows = Vec::new();
    for w in figs.windows(2) {
        let (x, y) = (&w[0], &w[1]);
        println!("  {} -> {} instructions per core:", x.size, y.size);
        for (i, it) in y.items.iter().enumerate() {
            let Some(prev) = x.items.get(i).filter(|p| p.name == it.name) else { continue };
            let (g, verdict) = judge(prev.judged_ms(), it.judged_ms(), x.size, y.size);
            let none = (f64::NAN, f64::NAN);
            let (lo, hi) = growth_range(
                x.spread.get(i).copied().unwrap_or(none),
                y.spread.get(i).copied().unwrap_or(none),
                x.size,
                y.size,
            );
            println!(
                "    {:<48} {:>10.1} -> {:>10.1} ms  {:>7.2}x  [{lo:>5.1} .. {hi:>5.1}]  {verdict}",
                it.name,
                prev.judged_ms(),
                it.judged_ms(),
                g
            );
            if verdict == "FAIL" {
                miss_lows.push(lo);
                misses.push(format!(
                    "{} grows {g:.2}x per 10x ({} -> {}; {lo:.1}x to {hi:.1}x over the runs)",
                    it.name, x.size, y.size
                ));
            }
        }
        let g = growth(x.total_ms, y.total_ms, x.size, y.size);
        println!("    {:<48} {:>10.1} -> {:>10.1} ms  {:>7.2}x", "end to end", x.total_ms, y.total_ms, g);
    }
    if let Some(line) = miss_summary(&miss_lows) {
        println!("{line}");
    }
    let Some(last) = figs.last() else { return Err(CliError::BadInput("no sizes".into())) };
    let secs = last.total_ms / 1e3;
    println!(
        "targets at {} cores x {} instructions per core ({} instructions):",
        a.cores, last.size, last.instructions
    );
    let pass = |ok: bool| if ok { "PASS" } else { "FAIL" };
    println!("  end to end {secs:.2} s (target <= {TARGET_S} s): {}", pass(secs <= TARGET_S));
    println!(
        "  end to end {secs:.2} s (moonshot <= {MOONSHOT_S} s): {}",
        if secs <= MOONSHOT_S { "met" } else { "not met" }
    );
    if secs > TARGET_S {
        misses.push(format!("end to end {secs:.2} s > {TARGET_S} s"));
    }
    match last.peak {
        Some(p) => {
            println!("  peak RSS {} MiB (target <= {} MiB): {}", mib(Some(p)), TARGET_RSS >> 20, pass(p <= TARGET_RSS));
            if p > TARGET_RSS {
                misses.push(format!("peak RSS {} MiB > {} MiB", mib(Some(p)), TARGET_RSS >> 20));
            }
        }
        None => misses.push("peak RSS unknown (no /proc/self/status VmHWM)".into()),
    }
    if misses.is_empty() {
        println!("result PASS");
        Ok(ExitCode::SUCCESS)
    } else {
        println!("result FAIL ({} misses)", misses.len());
        Err(CliError::CheckFailed(format!("bench flow missed: {}", misses.join("; "))))
    }
}

#[cfg(test)]
mod tests {
    use super::{growth_range, judge, median, miss_summary, peak_valid, runs_in_round, runs_of};

    #[test]
    fn peaks_count_from_the_first_round_and_from_every_run_of_the_largest_size() {
        assert!(peak_valid(0, 0, 2) && peak_valid(0, 1, 2) && peak_valid(0, 2, 2));
        assert!(peak_valid(1, 2, 2) && peak_valid(7, 2, 2), "the largest size: nothing larger ran before it");
        assert!(!peak_valid(1, 0, 2) && !peak_valid(1, 1, 2), "after round 0 a larger size's heap is resident");
    }

    #[test]
    fn a_smaller_size_gets_more_runs_up_to_the_cap_and_spread_over_the_rounds() {
        assert_eq!(runs_of(3, 100_000, 100_000), 3);
        assert_eq!(runs_of(3, 50_000, 100_000), 6);
        assert_eq!(runs_of(3, 30_000, 100_000), 12, "the ratio rounds up (4)");
        assert_eq!(runs_of(3, 10_000, 100_000), 15, "capped");
        assert_eq!(runs_of(15, 1_000, 100_000), 15);
        assert_eq!(runs_of(1, 1, 200_000), 15);
        // Three runs over fifteen rounds: rounds 0, 5 and 10.
        let rounds: Vec<u32> = (0..15).filter(|&r| runs_in_round(r, 3, 15)).collect();
        assert_eq!(rounds, [0, 5, 10]);
        assert!((0..15).all(|r| runs_in_round(r, 15, 15)));
        assert_eq!((0..15).filter(|&r| runs_in_round(r, 6, 15)).count(), 6);
        assert_eq!((0..7).filter(|&r| runs_in_round(r, 7, 7)).count(), 7);
    }

    #[test]
    fn growth_is_scaled_to_a_10x_step_and_judged_only_above_the_floor() {
        let (g, v) = judge(100.0, 1000.0, 1_000, 10_000);
        assert!((g - 10.0).abs() < 1e-9 && v == "PASS");
        let (g, v) = judge(100.0, 1300.0, 1_000, 10_000);
        assert!((g - 13.0).abs() < 1e-9 && v == "FAIL", "{g} {v}");
        // 100x in size, 144x in time: 12x per 10x, on the line.
        let (g, v) = judge(10.0, 1440.0, 1_000, 100_000);
        assert!((g - 12.0).abs() < 1e-9 && v == "PASS", "{g} {v}");
        // Quadratic over 100x: 100x per 10x.
        assert_eq!(judge(10.0, 100_000.0, 1_000, 100_000).1, "FAIL");
        // Under the floor at the larger size: printed, not judged.
        assert_eq!(judge(0.1, 40.0, 1_000, 10_000).1, "not judged");
    }

    #[test]
    fn growth_range_pairs_the_slowest_with_the_fastest_run() {
        // Smaller size 90..110 ms, larger 1100..1400 ms: 10x..15.56x per 10x.
        let (lo, hi) = growth_range((90.0, 110.0), (1100.0, 1400.0), 1_000, 10_000);
        assert!((lo - 10.0).abs() < 1e-9, "{lo}");
        assert!((hi - 1400.0 / 90.0).abs() < 1e-9, "{hi}");
        // One run each: the range is the point.
        let (lo, hi) = growth_range((100.0, 100.0), (1300.0, 1300.0), 1_000, 10_000);
        assert!((lo - 13.0).abs() < 1e-9 && (hi - 13.0).abs() < 1e-9);
        // Scaled to a 10x step over 100x in size, as the growth is.
        let (lo, _) = growth_range((10.0, 10.0), (1440.0, 2000.0), 1_000, 100_000);
        assert!((lo - 12.0).abs() < 1e-9, "{lo}");
    }

    #[test]
    fn the_miss_summary_counts_the_misses_over_the_target_at_their_low_end() {
        assert_eq!(miss_summary(&[]), None);
        let line = miss_summary(&[12.5, 12.0, 11.0]).expect("three misses");
        assert_eq!(line, "growth misses: 3, of which 1 hold on every pairing of runs (low end over 12x)");
        let line = miss_summary(&[13.0, 14.0, 12.0]).expect("three misses");
        assert_eq!(line, "growth misses: 3, of which 2 hold on every pairing of runs (low end over 12x)");
    }

    #[test]
    fn median_of_an_odd_and_an_even_count() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0]), 4.0);
        assert_eq!(median(vec![]), 0.0);
    }
}
