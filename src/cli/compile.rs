//! `lncsim compile FILE`: run a program through the compile pipeline (split,
//! DRAM allocation per core, the anti-dependency passes, the shared run,
//! `sync_shared_allocations`, link) and print the linked module with each
//! core's allocation metrics; the independent IR checker (on the per-core
//! modules) and the link checker (on the linked module) run on the result and
//! a violation fails the command (exit 1).
//!
//! Text output: `#` comment lines (passes, per-core metrics, HBM use, the
//! post-link report), then the linked module in the text format (with
//! `--per-core`, each allocated per-core module first). `--json` prints one
//! object with sorted keys: `passes`, `cores` (per core: `core`, `dram`,
//! `dram_shared`, `anti_deps`, `module`), `hbm`, `synced`, `link` (the
//! post-link report), `linked` (the module's text), `violations`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use lncsim_model::dram::{AllocReport, AntiDepReport, check_modules};
use lncsim_model::ir;
use lncsim_model::link::check_link;
use lncsim_model::pipeline::{PipelineOptions, compile};
use serde_json::{Value, json};

use super::files::check_output_dir;
use super::{CliError, read_module, shown};

/// Arguments of `lncsim compile`.
#[derive(Debug, Args)]
pub struct CompileArgs {
    /// The program in the text format (`-` reads standard input).
    pub file: PathBuf,
    /// Split for this many cores instead of the program's lnc_size.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=256), allow_negative_numbers = true)]
    pub cores: Option<u32>,
    /// Build the pipeline without the DRAM allocator passes (and their anti-dependency passes).
    #[arg(long)]
    pub disable_dram_allocation: bool,
    /// CC-buffer region per core in MiB; -1 (lncsim's default) sizes it from the collective
    /// operands; 500 is the compiler's default.
    #[arg(long, default_value_t = -1, allow_negative_numbers = true,
          value_parser = clap::value_parser!(i64).range(-1..=(1 << 24)))]
    pub allreduce_buffer_size: i64,
    /// Per-core private DRAM window (region ceiling) in MiB.
    #[arg(long, default_value_t = 4096, value_parser = clap::builder::RangedI64ValueParser::<u64>::new().range(1..=(1 << 24)), allow_negative_numbers = true)]
    pub dram_region_mib: u64,
    /// Shared-region slab per core (coreCap) in MiB; 0 (the default) computes the smallest slab that fits.
    #[arg(long, default_value_t = 0, value_parser = clap::builder::RangedI64ValueParser::<u64>::new().range(0..=(1 << 24)), allow_negative_numbers = true)]
    pub shared_core_cap_mib: u64,
    /// Place under the whole window, as the seed does, instead of a compact window inside it.
    #[arg(long)]
    pub dram_window_exact: bool,
    /// Also print every allocated per-core module before the linked one (text output).
    #[arg(long)]
    pub per_core: bool,
    /// Write the linker's sgLnk link directory (`<DIR>/<name>/nc<c>/sg<c>`, `<DIR>/<name>/sgLnk`) under DIR (created when missing).
    #[arg(long, value_name = "DIR")]
    pub link_dir: Option<PathBuf>,
    /// Print one JSON object (sorted keys) instead of text.
    #[arg(long)]
    pub json: bool,
}

fn alloc_json(r: &AllocReport) -> Value {
    let m = &r.metrics;
    json!({
        "function": r.function,
        "early_exit": r.early_exit,
        "placed": r.placed,
        "remote_views": r.remote_views,
        "spill_bytes": r.spill_bytes,
        "aligned_spill_bytes": r.aligned_spill_bytes,
        "base": r.base,
        "region_ceiling": r.region_ceiling,
        "reserved_space": m.reserved_space,
        "start": m.start,
        "cc_base": m.cc_base,
        "cc_limit": m.cc_limit,
        "real_cc_buffer_size": m.real_cc_buffer_size,
        "peak": m.peak,
        "intervals": m.num_intervals,
        "messages": r.messages,
    })
}

fn alloc_line(pass: &str, r: &AllocReport) -> String {
    let m = &r.metrics;
    if r.early_exit {
        return format!("# {pass} {}: early exit ({})", r.function, r.messages.join("; "));
    }
    format!(
        "# {pass} {}: placed {} (+{} remote views), base {:#x}, reserved_space {}, start {:#x}, peak {:#x}, cc_limit {}, real_cc_buffer_size {}, intervals {}",
        r.function,
        r.placed,
        r.remote_views,
        r.base,
        m.reserved_space,
        m.start,
        m.peak,
        m.cc_limit,
        m.real_cc_buffer_size,
        m.num_intervals
    )
}

fn anti_json(r: &AntiDepReport) -> Value {
    json!({ "function": r.function, "waw": r.waw, "war": r.war, "raw": r.raw, "steps": r.steps })
}

/// Compiles, checks and prints.
pub fn run(a: CompileArgs) -> Result<ExitCode, CliError> {
    if let Some(d) = &a.link_dir {
        check_output_dir("--link-dir", d)?;
    }
    let mut program = read_module(&a.file)?;
    if let Some(n) = a.cores {
        program.attrs.lnc_size = n;
    }
    let opts = PipelineOptions {
        disable_dram_allocation: a.disable_dram_allocation,
        allreduce_buffer_size_mib: a.allreduce_buffer_size,
        dram_region_bytes: a.dram_region_mib << 20,
        compact_dram: !a.dram_window_exact,
        shared_core_cap_mib: a.shared_core_cap_mib,
        link_dir: a.link_dir.clone(),
    };
    let compiled = compile(&program, &opts).map_err(|e| CliError::BadInput(format!("{}: {e}", shown(&a.file))))?;
    let mut violations: Vec<String> = if a.disable_dram_allocation {
        Vec::new()
    } else {
        check_modules(&compiled.per_core, &opts.check_config(&compiled.report))
            .iter()
            .map(|v| format!("IR checker: {v}"))
            .collect()
    };
    violations.extend(check_link(&compiled.per_core, &compiled.linked).iter().map(|v| format!("link checker: {v}")));
    let r = &compiled.report;
    let empty = Vec::new();
    let per = |v: &'_ [Vec<AllocReport>], c: usize| v.get(c).cloned().unwrap_or_default();
    if a.json {
        let cores: Vec<Value> = compiled
            .per_core
            .iter()
            .enumerate()
            .map(|(c, m)| {
                let anti: Vec<Value> = r
                    .anti_deps_post_dram
                    .get(c)
                    .unwrap_or(&empty)
                    .iter()
                    .chain(r.anti_deps_post_shared_dram.get(c).unwrap_or(&empty))
                    .map(anti_json)
                    .collect();
                json!({
                    "core": c,
                    "dram": per(&r.dram, c).iter().map(alloc_json).collect::<Vec<_>>(),
                    "dram_shared": per(&r.dram_shared, c).iter().map(alloc_json).collect::<Vec<_>>(),
                    "anti_deps": anti,
                    "module": ir::print(m),
                })
            })
            .collect();
        let v = json!({
            "passes": r.passes,
            "cores": cores,
            "hbm": { "private": r.hbm.private, "shared": r.hbm.shared, "total": r.hbm.total },
            "synced": r.synced.len(),
            "link": r.link,
            "linked": ir::print(&compiled.linked),
            "violations": violations,
        });
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
    } else {
        println!("# passes: {}", r.passes.join(", "));
        for (c, m) in compiled.per_core.iter().enumerate() {
            println!("# core {c} of {}", compiled.per_core.len());
            for rep in per(&r.dram, c) {
                println!("{}", alloc_line("coloring_allocator_dram", &rep));
            }
            for rep in per(&r.dram_shared, c) {
                println!("{}", alloc_line("coloring_allocator_dram_shared", &rep));
            }
            let added: usize = r.anti_deps_post_dram.get(c).unwrap_or(&empty).iter().map(|x| x.added()).sum();
            let added_shared: usize =
                r.anti_deps_post_shared_dram.get(c).unwrap_or(&empty).iter().map(|x| x.added()).sum();
            println!("# anti-dependency edges: {added} private, {added_shared} shared");
            if a.per_core {
                print!("{}", ir::print(m));
            }
        }
        println!(
            "# hbm: private {:?}, shared {} (counted once), total {}; {} views synced",
            r.hbm.private,
            r.hbm.shared,
            r.hbm.total,
            r.synced.len()
        );
        if a.disable_dram_allocation {
            println!("# IR check skipped: DRAM allocation disabled (codegen will refuse the unaddressed tensors)");
        }
        if let Some(l) = &r.link {
            print!("{l}");
        }
        print!("# linked\n{}", ir::print(&compiled.linked));
    }
    if let Some(first) = violations.first() {
        return Err(CliError::CheckFailed(format!("{first} ({} violations)", violations.len())));
    }
    Ok(ExitCode::SUCCESS)
}
