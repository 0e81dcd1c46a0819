//! `lncsim link`: link per-core modules into one `<name>/sgLnk` module and print it.
//!
//! `lncsim link FILE [--cores N] [--disable-dram-allocation]
//! [--allreduce-buffer-size MIB]` runs a program through the per-core passes
//! of the compile pipeline (`pipeline::Pipeline::run_per_core`: split, DRAM
//! allocation, anti-dependency passes, shared run, sync) and links the result; `lncsim link --modules A.bir B.bir ...` links
//! per-core modules given as files. The output is the review summary (`#`
//! lines) and the linked module in the text format; `--json` prints
//! `{"report": ..., "module": "<text>"}` instead. The independent checker
//! and the barrier renumbering order check (below) run on every link: a
//! violation fails the command (exit 1).
//!
//! `lncsim link --modules A.bir B.bir ... --linked L.bir` links nothing: it
//! judges `L.bir`, a linked module written by another linker (or edited by
//! hand), against the per-core inputs with the independent link checker
//! (`link::checker::check_link`, no code shared with the linker) and the
//! barrier renumbering order of seed 000 §7 (`check_barrier_ids`: the
//! inputs' flags say which barriers take the next slot, in function then
//! instruction order; its findings print as `Renumbering: ...`), prints
//! every violation and exits 1 on any. The tensor map is not in the text
//! format, so it is not judged here (`check_linked` judges lncsim's own).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use lncsim_model::ir;
use lncsim_model::link::{LinkOptions, check_link, link_with};
use lncsim_model::pipeline::{PipelineOptions, build_pipeline};
use lncsim_sim::check::barrier_ids::check_barrier_ids;

use super::files::check_output_dir;
use super::{CliError, read_module, read_module_unchecked, shown};

/// Arguments of `lncsim link`.
#[derive(Debug, Args)]
pub struct LinkArgs {
    /// A program in the text format (`-` reads standard input): split, then link.
    #[arg(required_unless_present = "modules", conflicts_with = "modules")]
    pub file: Option<PathBuf>,
    /// Link these per-core modules (text format, one module per file) instead of a program.
    #[arg(long, num_args = 1..)]
    pub modules: Vec<PathBuf>,
    /// Judge this linked module (another linker's output) against --modules with the link checker and the
    /// seed's barrier renumbering order instead of linking.
    #[arg(long, value_name = "FILE", requires = "modules", conflicts_with_all = ["file", "link_dir"])]
    pub linked: Option<PathBuf>,
    /// Split the program for this many cores instead of its lnc_size.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=256), conflicts_with = "modules", allow_negative_numbers = true)]
    pub cores: Option<u32>,
    /// Build the per-core pipeline without the DRAM allocator passes (tensors stay unaddressed).
    #[arg(long, conflicts_with = "modules")]
    pub disable_dram_allocation: bool,
    /// CC-buffer region per core in MiB; -1 (lncsim's default) sizes it from the collective
    /// operands; 500 is the compiler's default.
    #[arg(long, default_value_t = -1, allow_negative_numbers = true, conflicts_with = "modules",
          value_parser = clap::value_parser!(i64).range(-1..=(1 << 24)))]
    pub allreduce_buffer_size: i64,
    /// Print `{"report": ..., "module": "<text>"}` as JSON instead of the text dump.
    #[arg(long)]
    pub json: bool,
    /// Write the sgLnk link directory (`<DIR>/<name>/nc<c>/sg<c>`, `<DIR>/<name>/sgLnk`) under DIR (created when missing).
    #[arg(long, value_name = "DIR")]
    pub link_dir: Option<PathBuf>,
}

/// Links and prints.
pub fn run(a: LinkArgs) -> Result<ExitCode, CliError> {
    if let Some(d) = &a.link_dir {
        check_output_dir("--link-dir", d)?;
    }
    let modules = match &a.file {
        Some(f) => {
            let mut p = read_module(f)?;
            if let Some(n) = a.cores {
                p.attrs.lnc_size = n;
            }
            let opts = PipelineOptions {
                disable_dram_allocation: a.disable_dram_allocation,
                allreduce_buffer_size_mib: a.allreduce_buffer_size,
                ..PipelineOptions::default()
            };
            let run = build_pipeline(&opts).run_per_core(&p);
            run.map_err(|e| CliError::BadInput(format!("{}: {e}", shown(f))))?.0
        }
        None => a.modules.iter().map(|f| read_module(f)).collect::<Result<Vec<_>, _>>()?,
    };
    if let Some(l) = &a.linked {
        return judge(&modules, l, a.json);
    }
    let opts = LinkOptions { link_dir: a.link_dir.clone() };
    let linked = link_with(&modules, &opts).map_err(|e| CliError::BadInput(format!("link: {e}")))?;
    let text = ir::print(&linked.module);
    if a.json {
        let v = serde_json::json!({ "report": linked.report, "module": text });
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
    } else {
        print!("{}\n{text}", linked.report);
    }
    let violations = check_link(&modules, &linked.module);
    if let Some(first) = violations.first() {
        return Err(CliError::CheckFailed(format!("link checker: {first} ({} violations)", violations.len())));
    }
    if let Err(v) = check_barrier_ids(&modules, &linked.module) {
        let first = v.first().map(String::as_str).unwrap_or_default();
        return Err(CliError::CheckFailed(format!("barrier renumbering: {first} ({} violations)", v.len())));
    }
    Ok(ExitCode::SUCCESS)
}

/// `--linked L.bir`: the link checker's verdict on a given linked module.
/// The linked file is parsed without the device check: the checker's own
/// `verify` and rules judge it. Cost: the checker's, O((n + e + L) log (n + L)),
/// plus O(B log B) for the B barriers of the renumbering order.
fn judge(modules: &[ir::Module], linked: &std::path::Path, json: bool) -> Result<ExitCode, CliError> {
    let name = shown(linked);
    let module = read_module_unchecked(linked)?;
    let mut violations: Vec<String> = check_link(modules, &module).iter().map(|v| v.to_string()).collect();
    // The renumbering order (seed 000 §7), which the checker leaves open: the
    // per-core inputs say which barriers were flagged before linking.
    if let Err(v) = check_barrier_ids(modules, &module) {
        violations.extend(v.into_iter().map(|e| format!("Renumbering: {e}")));
    }
    if json {
        let found = &violations;
        let v = serde_json::json!({
            "linked": name, "modules": modules.len(), "valid": violations.is_empty(), "violations": found,
        });
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
    } else {
        println!("link check: {name} against {} per-core module(s)", modules.len());
        for v in &violations {
            println!("violation: {v}");
        }
        println!(
            "verdict: {} ({} violation(s))",
            if violations.is_empty() { "pass" } else { "FAIL" },
            violations.len()
        );
    }
    match violations.first() {
        Some(first) => {
            Err(CliError::CheckFailed(format!("{name}: link checker: {first} ({} violations)", violations.len())))
        }
        None => Ok(ExitCode::SUCCESS),
    }
}
