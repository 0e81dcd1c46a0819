//! `lncsim load FILE.neff [--cores N] [--fail-alloc K] [--json]`: `nrt_load`
//! (seed 002) onto a fresh simulated device, reporting every stage, the
//! handles, each core's carve-out and variables, the shared region and the
//! relocated address of every shared variable on every core.
//!
//! The device has N physical cores grouped into vncs of the NEFF's
//! `lnc_size` (the runtime's `virtual_core_size`, as a user sets it for an
//! LNC NEFF). Exit 0 when the model is READY, else 1 with the runtime's
//! status name, number and message on one line.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use lncsim_model::codegen::VarKind;
use lncsim_model::load::{CoreImage, DlrModel, Isa, LoadTrace, Model, Runtime};
use lncsim_model::neff::NeffHeader;
use lncsim_sim::device::{Fault, FaultPlan, SimDevice};
use serde_json::{Value, json};

use super::{CliError, parse_u64, read_bytes, shown};

/// Arguments of `lncsim load`.
#[derive(Debug, Args)]
pub struct LoadArgs {
    /// The NEFF file (`-` reads standard input).
    pub file: PathBuf,
    /// Physical NeuronCores of the simulated device.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=1024), allow_negative_numbers = true)]
    pub cores: u32,
    /// Make the device refuse its K-th MEM_ALLOC_V2MT64 (0-based index; decimal or 0x hex).
    #[arg(long, value_name = "K", value_parser = parse_u64, allow_negative_numbers = true)]
    pub fail_alloc: Option<u64>,
    /// Print one JSON object (sorted keys) instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Loads the NEFF and prints the report; the exit status says whether it is READY.
pub fn run(a: LoadArgs) -> Result<ExitCode, CliError> {
    let bytes = read_bytes(&a.file)?;
    let lnc = NeffHeader::parse(&bytes).map(|h| h.lnc_size.max(1)).unwrap_or(1);
    let dev = SimDevice::new(a.cores, lnc);
    if let Some(k) = a.fail_alloc {
        dev.set_fault_plan(FaultPlan::one(Fault::Alloc(k)));
    }
    let rt = Runtime::new(dev);
    let (result, trace) = rt.nrt_load_traced(&bytes, -1, -1);
    let loaded = match &result {
        Ok(m) => {
            let dlr = rt.dlr_model(m.h_nn);
            let models = rt.models(m.h_nn).map_err(|e| CliError::CheckFailed(format!("{}: {e}", shown(&a.file))))?;
            dlr.map(|d| (d, models))
        }
        Err(_) => None,
    };
    let header = format!("device   {} physical cores in vncs of {lnc} ({} vncs)", a.cores, rt.num_vncs());
    if a.json {
        let v = report_json(&a, lnc, &trace, result.as_ref().err(), loaded.as_ref());
        let text = serde_json::to_string_pretty(&v).map_err(|e| CliError::BadInput(e.to_string()))?;
        println!("{text}");
    } else {
        println!("{header}");
        print_trace(&trace);
        if let Some((d, models)) = &loaded {
            print_loaded(d, models);
        }
    }
    match result {
        Ok(_) => Ok(ExitCode::SUCCESS),
        Err(e) => Err(CliError::CheckFailed(format!("{}: {e}", shown(&a.file)))),
    }
}

fn print_trace(t: &LoadTrace) {
    for e in &t.events {
        let outcome = if e.ok { "ok" } else { "FAILED" };
        println!("{:<3} {:<24} {:<6} {}", e.stage.label(), e.func, outcome, e.detail);
    }
}

fn isa(i: Isa) -> &'static str {
    match i {
        Isa::Lncsim => "lncsim",
        Isa::Opaque => "opaque (real ISA, not relocated)",
    }
}

/// The shared variables of a core: the shared scratch and every virtual var inside it.
fn shared_vars(img: &CoreImage) -> Vec<(&str, u64)> {
    let is_shared = |id: u32| img.vars.get(id as usize).is_some_and(|b| b.kind == VarKind::SharedScratch);
    img.vars
        .iter()
        .filter(|v| {
            v.kind == VarKind::SharedScratch || matches!(v.kind, VarKind::Virtual { backing, .. } if is_shared(backing))
        })
        .map(|v| (v.name.as_str(), v.pa))
        .collect()
}

fn print_loaded(d: &DlrModel, models: &[Model]) {
    let km = &d.kelf_model;
    println!("state    {}  h_nn {}  h_model {}  vnc {}", d.state.name(), d.h_nn.0, km.h_model.0, d.vnc_idx);
    match km.shared {
        Some(r) => println!("shared   region {:#x} +{:#x}", r.pa, r.size),
        None => println!("shared   region none"),
    }
    for (name, t) in &km.io {
        println!("io       {:<7} {:<20} {:#x} +{:#x}", t.var_type.as_str(), name, t.region.pa, t.region.size);
    }
    for m in models {
        let img = &m.image;
        println!(
            "core {} ({}) tpb {}  carve-out {:#x} +{:#x}  isa {}  {} kbin_patch_info",
            img.core,
            m.sg_name,
            img.tpb,
            m.carveout.pa,
            m.carveout.size,
            isa(img.isa),
            m.kbin_patch_info.len()
        );
        for (id, v) in img.vars.iter().enumerate() {
            if v.size == 0 && v.pa == 0 {
                println!("  var {id:>3} {:<24} {:<12} (not in HBM)", v.name, v.var_type.as_str());
            } else {
                println!("  var {id:>3} {:<24} {:<12} {:#x} +{:#x}", v.name, v.var_type.as_str(), v.pa, v.size);
            }
        }
        for s in &img.engines {
            println!(
                "  {:<10} {:>5} records at {:#x}, {} descriptors at {:#x}",
                s.engine.file_stem(),
                s.records,
                s.pa,
                s.descriptors,
                s.ring_pa
            );
        }
    }
    let mut by_pa: BTreeMap<u64, Vec<String>> = BTreeMap::new();
    for m in models {
        for (name, pa) in shared_vars(&m.image) {
            by_pa.entry(pa).or_default().push(format!("{}:{name}", m.sg_name));
        }
    }
    if !by_pa.is_empty() {
        println!("shared variables by relocated address (every core's view of a tensor at one address)");
        for (pa, names) in &by_pa {
            println!("  {pa:#x}  {}", names.join("  "));
        }
    }
}

fn report_json(
    a: &LoadArgs,
    lnc: u32,
    trace: &LoadTrace,
    err: Option<&lncsim_model::load::LoadError>,
    loaded: Option<&(DlrModel, Vec<Model>)>,
) -> Value {
    let stages: Vec<Value> = trace
        .events
        .iter()
        .map(|e| json!({"stage": e.stage.label(), "func": e.func, "ok": e.ok, "detail": e.detail}))
        .collect();
    let status = err.map(|e| json!({"name": e.status.name(), "code": e.status.code(), "message": e.message}));
    let mut v = json!({
        "file": a.file.display().to_string(),
        "cores": a.cores,
        "lnc_size": lnc,
        "state": if loaded.is_some() { "READY" } else { "FAILED" },
        "status": status,
        "stages": stages,
        "h_nn": null,
        "h_model": null,
    });
    if let Some((d, models)) = loaded {
        let km = &d.kelf_model;
        v["h_nn"] = json!(d.h_nn.0);
        v["h_model"] = json!(km.h_model.0);
        v["vnc"] = json!(d.vnc_idx);
        v["shared_region"] = km.shared.map_or(Value::Null, |r| json!({"pa": r.pa, "size": r.size}));
        v["io"] = km
            .io
            .iter()
            .map(|(n, t)| (n.clone(), json!({"type": t.var_type.as_str(), "pa": t.region.pa, "size": t.region.size})))
            .collect::<serde_json::Map<_, _>>()
            .into();
        v["subgraphs"] = models
            .iter()
            .map(|m| {
                let img = &m.image;
                let vars: Vec<Value> = img
                    .vars
                    .iter()
                    .enumerate()
                    .map(|(id, v)| json!({"var_id": id, "name": v.name, "type": v.var_type.as_str(), "pa": v.pa, "size": v.size}))
                    .collect();
                let shared: serde_json::Map<String, Value> =
                    shared_vars(img).into_iter().map(|(n, pa)| (n.to_owned(), json!(pa))).collect();
                json!({
                    "core": img.core,
                    "name": m.sg_name,
                    "tpb": img.tpb,
                    "carveout": {"pa": m.carveout.pa, "size": m.carveout.size},
                    "isa": if img.isa == Isa::Lncsim { "lncsim" } else { "opaque" },
                    "kbin_patch_info": m.kbin_patch_info.len(),
                    "vars": vars,
                    "shared_vars": shared,
                    "engines": img.engines.iter().map(|s| json!({
                        "engine": s.engine.key(), "pa": s.pa, "records": s.records,
                        "ring_pa": s.ring_pa, "descriptors": s.descriptors,
                    })).collect::<Vec<_>>(),
                })
            })
            .collect::<Vec<_>>()
            .into();
    }
    v
}
