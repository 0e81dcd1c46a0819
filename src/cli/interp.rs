//! `lncsim interp`: run the reference interpreter and print output digests.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use lncsim_model::program::{digest, interpret, seeded_inputs_checked};

use super::{CliError, parse_u64, read_module, shown};

/// Arguments of `lncsim interp`.
#[derive(Debug, Args)]
pub struct InterpArgs {
    /// The program (`-` reads standard input).
    pub file: PathBuf,
    /// Seed of the input values (decimal or 0x hex).
    #[arg(long, default_value = "0", value_parser = parse_u64, allow_negative_numbers = true)]
    pub seed: u64,
    /// Print JSON: `{"seed": s, "outputs": {name: {"elements": n, "digest": "0x.."}}}`.
    #[arg(long)]
    pub json: bool,
}

/// Interprets and prints one line per output: name, element count, FNV-1a digest.
pub fn run(a: InterpArgs) -> Result<ExitCode, CliError> {
    let m = read_module(&a.file)?;
    let bad = |e: lncsim_model::program::InterpError| CliError::BadInput(format!("{}: {e}", shown(&a.file)));
    let inputs = seeded_inputs_checked(&m, a.seed).map_err(bad)?;
    let out = interpret(&m, &inputs).map_err(bad)?;
    if a.json {
        let outputs: serde_json::Map<String, serde_json::Value> = out
            .iter()
            .map(|(k, v)| {
                (k.clone(), serde_json::json!({"elements": v.len(), "digest": format!("{:#018x}", digest(v))}))
            })
            .collect();
        println!("{}", serde_json::json!({ "seed": a.seed, "outputs": outputs }));
    } else {
        for (name, v) in &out {
            println!("{name} i32[{}] digest {:#018x}", v.len(), digest(v));
        }
    }
    Ok(ExitCode::SUCCESS)
}
