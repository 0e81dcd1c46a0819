//! `lncsim bench link`: the linker's speed on synthetic per-core modules.
//!
//! Two shapes (issue 4, "Speed"): 8 cores x 100k instructions and 256 cores
//! x 1k instructions, each next to the same shape with 10x fewer instructions
//! per core. Prints the median link time, the time per instruction, and the
//! growth ratio for the 10x larger input against the target (< 13x: linear).
//! The checker's time is printed too, for information.
//!
//! Synthetic modules: per core a chain of compute ops over private tensors
//! (names unique per core but for one in 64, declared by every core: a
//! collision the linker renames),
//! DMA copies on two queues, an input and a weight every core reads (unified
//! by the linker), and a handoff to the next core every 64 instructions (a
//! shared tensor, the consumer's remote view, one barrier group each).

use std::process::ExitCode;
use std::time::Instant;

use clap::Args;
use lncsim_model::ir::*;
use lncsim_model::link::{check_link, link};

use super::CliError;

/// Arguments of `lncsim bench link`.
#[derive(Debug, Args)]
pub struct BenchLinkArgs {
    /// Timed runs of the large size (the small one runs 3x as often; medians are reported).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=50), allow_negative_numbers = true)]
    pub runs: u32,
    /// Divide every size by 100 (a smoke run: its times are too short to judge growth, so it is printed, not judged).
    #[arg(long)]
    pub quick: bool,
}

/// The shortest large-size link time whose growth is judged (as `bench flow` judges stages of 50 ms and more).
const JUDGE_SECS: f64 = 0.05;

/// Handoff period, in instructions.
const HANDOFF_EVERY: usize = 64;

fn ap(loc: MemLocId, len: u64) -> AccessPattern {
    AccessPattern { loc, offset: 0, len }
}

/// One synthetic core module with about `n` instructions.
fn core_module(cores: u32, core: u32, n: usize) -> Module {
    let mut m = Module {
        name: "bench".into(),
        attrs: ModuleAttrs { lnc_size: cores, neuron_core_id: Some(core) },
        ..Module::default()
    };
    for (name, owner, sems, instances) in [("qSyncIO", Engine::Sp, 2, vec![0, 1]), ("qPool", Engine::Pool, 1, vec![0])]
    {
        m.queues.push(DmaQueue { name: name.into(), qtype: QueueType::Dynamic, owner, semaphores: sems, instances });
    }
    let x = m.add_loc(MemoryLocation::dram("x", Usage::Input, 16));
    let mut w = MemoryLocation::dram("w", Usage::Weight, 16);
    w.init = Some(7);
    let w = m.add_loc(w);
    let mut f = Function::new("main");
    let mut prev: Option<(MemLocId, InstId)> = None;
    let (next, prevc) = ((core + 1) % cores, (core + cores - 1) % cores);
    let mut j = 0u32;
    while f.insts.len() < n {
        let k = f.insts.len();
        if cores > 1 && k % HANDOFF_EVERY == HANDOFF_EVERY - 1 && k + 4 < n {
            // Produce s<core>_<j> for the next core; consume the previous core's.
            let s = m.add_loc(MemoryLocation::dram(format!("s{core}_{j}"), Usage::Shared, 16));
            let src = prev.map_or(x, |p| p.0);
            let mut i = Inst::new(
                format!("h{j}"),
                Engine::Act,
                Op::Compute { kind: ComputeKind::Relu, srcs: smallvec![ap(src, 16)], dst: ap(s, 16) },
            );
            i.deps = prev.map(|p| Dep { inst: p.1, kind: EdgeKind::Data }).into_iter().collect();
            let h = f.push_inst(BlockId(0), i);
            let mut parts = vec![core, next];
            parts.sort_unstable();
            parts.dedup();
            let mut give = Inst::new(
                format!("cbo{j}"),
                Engine::Sp,
                Op::CoreBarrier(CoreBarrier { group: j * cores + core, participants: parts, id: 2 * j, flagged: true }),
            );
            give.deps = smallvec![Dep { inst: h, kind: EdgeKind::Control }];
            f.push_inst(BlockId(0), give);
            let mut parts = vec![prevc, core];
            parts.sort_unstable();
            parts.dedup();
            let take = Inst::new(
                format!("cbi{j}"),
                Engine::Sp,
                Op::CoreBarrier(CoreBarrier {
                    group: j * cores + prevc,
                    participants: parts,
                    id: 2 * j + 1,
                    flagged: true,
                }),
            );
            let cb = f.push_inst(BlockId(0), take);
            let mut view = MemoryLocation::dram(format!("s{prevc}_{j}_in{core}"), Usage::Shared, 16);
            view.remote_local_target = Some(RemoteLocalTarget { name: format!("s{prevc}_{j}").into(), core: prevc });
            let v = m.add_loc(view);
            let t = m.add_loc(MemoryLocation::dram(format!("c{core}_t{k}"), Usage::Internal, 16));
            let mut i = Inst::new(
                format!("u{j}"),
                Engine::Dve,
                Op::Compute { kind: ComputeKind::Add, srcs: smallvec![ap(v, 16), ap(w, 16)], dst: ap(t, 16) },
            );
            i.deps = smallvec![Dep { inst: cb, kind: EdgeKind::Control }];
            prev = Some((t, f.push_inst(BlockId(0), i)));
            j += 1;
            continue;
        }
        // Private names are per core (as the splitter makes them), except
        // every 64th, which every core declares: a name collision to resolve.
        let name = if k % 64 == 5 { format!("scratch{k}") } else { format!("c{core}_t{k}") };
        let t = m.add_loc(MemoryLocation::dram(name, Usage::Internal, 16));
        let src = prev.map_or(x, |p| p.0);
        let mut i = if k % 8 == 3 {
            let mut d = Inst::new(format!("i{k}"), Engine::Sp, Op::DmaCopy { src: ap(src, 16), dst: ap(t, 16) });
            d.queue = Some(QueueId((k % 16 / 8) as u32));
            d
        } else {
            Inst::new(
                format!("i{k}"),
                Engine::Dve,
                Op::Compute { kind: ComputeKind::Add, srcs: smallvec![ap(src, 16), ap(x, 16)], dst: ap(t, 16) },
            )
        };
        i.deps = prev.map(|p| Dep { inst: p.1, kind: EdgeKind::Data }).into_iter().collect();
        prev = Some((t, f.push_inst(BlockId(0), i)));
    }
    m.functions.push(f);
    m
}

fn modules(cores: u32, per_core: usize) -> Vec<Module> {
    (0..cores).map(|c| core_module(cores, c, per_core)).collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Times one link of `ms` in seconds; the result is dropped outside the timing.
fn time_link(ms: &[Module]) -> Result<(f64, Module), CliError> {
    let t0 = Instant::now();
    let l = link(ms).map_err(|e| CliError::CheckFailed(format!("synthetic link failed: {e}")))?;
    Ok((t0.elapsed().as_secs_f64(), l))
}

/// Seconds `Module::verify` takes over `ms` (the input validation every link starts with).
fn time_verify(ms: &[Module]) -> f64 {
    let t0 = Instant::now();
    let ok = ms.iter().all(|m| m.verify().is_ok());
    std::hint::black_box(ok);
    t0.elapsed().as_secs_f64()
}

/// One size's figures: instructions, median link seconds, median input-verify seconds.
struct Figures {
    insts: usize,
    link: f64,
    verify: f64,
}

/// One shape at two sizes. Small and large runs alternate, so a change in
/// machine load hits both alike; the small one runs 3x as often.
fn measure(cores: u32, small: usize, big: usize, runs: u32) -> Result<[Figures; 2], CliError> {
    let (ms, mb) = (modules(cores, small), modules(cores, big));
    let count = |v: &[Module]| v.iter().map(|m| m.functions[0].insts.len()).sum::<usize>();
    let (mut ts, mut tb, mut vs, mut vb) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    // Results stay alive until the end, so every run allocates fresh memory as
    // a one-shot compile would, instead of recycling the previous run's
    // scattered free chunks.
    let mut keep = Vec::new();
    for _ in 0..runs {
        for _ in 0..3 {
            let (t, l) = time_link(&ms)?;
            ts.push(t);
            keep.push(l);
            vs.push(time_verify(&ms));
        }
        let (t, l) = time_link(&mb)?;
        tb.push(t);
        keep.push(l);
        vb.push(time_verify(&mb));
    }
    drop(keep);
    Ok([
        Figures { insts: count(&ms), link: median(ts), verify: median(vs) },
        Figures { insts: count(&mb), link: median(tb), verify: median(vb) },
    ])
}

/// Seconds the checker takes on the large input.
fn time_check(cores: u32, big: usize) -> Result<f64, CliError> {
    let mb = modules(cores, big);
    let (_, l) = time_link(&mb)?;
    let t0 = Instant::now();
    let v = check_link(&mb, &l);
    let t = t0.elapsed().as_secs_f64();
    match v.first() {
        Some(first) => Err(CliError::CheckFailed(format!("synthetic link fails the checker: {first}"))),
        None => Ok(t),
    }
}

/// Runs the benchmark; fails when a 10x larger input takes 13x the time or more (judged when the larger takes 50 ms or more).
pub fn run(a: &BenchLinkArgs) -> Result<ExitCode, CliError> {
    let scale = if a.quick { 100 } else { 1 };
    println!(
        "bench link: medians of {} (large) and {} (small) alternating runs; target: 10x the instructions in < 13x the time",
        a.runs,
        3 * a.runs
    );
    let mut failed = Vec::new();
    for (cores, big) in [(8u32, 100_000usize), (256, 1_000)] {
        let big = (big / scale).max(10);
        let small = (big / 10).max(1);
        let [fs, fb] = measure(cores, small, big, a.runs)?;
        let cb = time_check(cores, big)?;
        for (f, per) in [(&fs, small), (&fb, big)] {
            println!(
                "  {cores:>3} cores x {per:>6} insts ({:>7} total): link {:>9.3} ms, {:>7.1} ns/inst \
                 (of which input Module::verify {:>8.3} ms)",
                f.insts,
                f.link * 1e3,
                f.link * 1e9 / f.insts as f64,
                f.verify * 1e3
            );
        }
        let ratio = fb.link / fs.link;
        let own = (fb.link - fb.verify) / (fs.link - fs.verify).max(1e-9);
        // Under JUDGE_SECS the ratio is timer noise (`--quick`): printed, not judged.
        let judged = fb.link >= JUDGE_SECS;
        let ok = !judged || ratio < 13.0;
        println!(
            "  {cores:>3} cores: 10x input -> {ratio:.2}x time ({}); without input verification {own:.2}x; \
             verification alone {:.2}x; checker on the large one: {:.3} ms",
            if !judged {
                "not judged: under 50 ms"
            } else if ok {
                "linear: pass"
            } else {
                "FAIL"
            },
            fb.verify / fs.verify.max(1e-9),
            cb * 1e3
        );
        if !ok {
            failed.push(format!("{cores} cores: {ratio:.2}x"));
        }
    }
    if failed.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        Err(CliError::CheckFailed(format!("link time grows faster than linear: {}", failed.join(", "))))
    }
}
