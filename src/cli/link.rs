//! `lncsim link`: link per-core modules into one `<name>/sgLnk` module and print it.
//!
//! `lncsim link FILE [--cores N] [--disable-dram-allocation]
//! [--allreduce-buffer-size MIB]` runs a program through the per-core passes
//! of the compile pipeline (`pipeline::Pipeline::run_per_core`: split, DRAM
//! allocation, anti-dependency passes, shared run, sync) and links the result; `lncsim link --modules A.bir B.bir ...` links
//! per-core modules given as files. The output is the review summary (`#`
//! lines) and the linked module in the text format; `--json` prints
//! `{"report": ..., "module": "<text>"}` instead. The independent checker runs
//! on every link: a violation fails the command (exit 1).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use lncsim_model::ir;
use lncsim_model::link::{LinkOptions, check_link, link_with};
use lncsim_model::pipeline::{PipelineOptions, build_pipeline};

use super::files::check_output_dir;
use super::{CliError, read_module, shown};

/// Arguments of `lncsim link`.
#[derive(Debug, Args)]
pub struct LinkArgs {
    /// A program in the text format (`-` reads standard input): split, then link.
    #[arg(required_unless_present = "modules", conflicts_with = "modules")]
    pub file: Option<PathBuf>,
    /// Link these per-core modules (text format, one module per file) instead of a program.
    #[arg(long, num_args = 1..)]
    pub modules: Vec<PathBuf>,
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
    Ok(ExitCode::SUCCESS)
}
