//! `lncsim load FILE.neff [--cores N] [--fail-alloc K] [--json]`: `nrt_load`
//! (seed 002) onto a fresh simulated device, reporting every stage, the
//! handles, each core's carve-out and variables, the shared region and the
//! relocated address of every shared variable on every core.
//!
//! The device has N physical cores grouped into vncs of the NEFF's
//! `lnc_size` (the runtime's `virtual_core_size`, as a user sets it for an
//! LNC NEFF). A READY load is then judged by the load checker
//! (`lncsim_model::load::checker`, independent of the loader): every var,
//! IO buffer, stream, ring and table against the NEFF and the device bytes,
//! every staged range inside its allocation, no overlaps; the report says
//! how many records were relocated and how many staged opaque (real ISA).
//! The checker's registered-load rules judge the IO maps, the shared region,
//! queues, semaphores and barrier groups too, and that every live allocation
//! is the load's. A failed load is followed by a leak check: any live
//! allocation, registered model or vnc claim left behind is listed.
//! Exit 0 when the model is READY and the checker passes, else 1 with the
//! runtime's status (or the checker's verdict, or the leftovers) on one line.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use lncsim_model::codegen::VarKind;
use lncsim_model::load::checker_registered::check_registered;
use lncsim_model::load::{CoreImage, Device, DlrModel, Isa, LoadTrace, Model, Runtime};
use lncsim_model::neff::{Neff, NeffHeader, ReadOptions};
use lncsim_sim::device::{FaultPlan, OpKind, SimDevice, keyed};
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
    /// Make the device refuse its K-th MEM_ALLOC_V2MT64 (0-based index; decimal or 0x hex), counting
    /// by physical core then call order, so the same K fails the same allocation whatever the threads do.
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
        dev.set_fault_plan(keyed_alloc_fault(&bytes, a.cores, lnc, k));
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
    // The checker reads the NEFF with the NEFF reader, not through the loader.
    let verdict: Option<Vec<String>> =
        loaded.as_ref().map(|(dlr, models)| match Neff::parse(&bytes, &ReadOptions::default()) {
            Ok(neff) => check_registered(rt.device(), &neff, dlr, models),
            Err(e) => vec![format!("the NEFF reader refuses the file the loader loaded: {e}")],
        });
    // After a failed load, nothing may be left behind.
    let leftovers: Option<Vec<String>> = result.is_err().then(|| leftovers(&rt));
    if a.json {
        let mut v = report_json(&a, lnc, &trace, result.as_ref().err(), loaded.as_ref());
        if let Some(bad) = &verdict {
            v["check"] = json!({"pass": bad.is_empty(), "violations": bad});
        }
        if let Some(left) = &leftovers {
            v["leftovers"] = json!(left);
        }
        let text = serde_json::to_string_pretty(&v).map_err(|e| CliError::BadInput(e.to_string()))?;
        println!("{text}");
    } else {
        println!("{header}");
        print_trace(&trace);
        if let Some((d, models)) = &loaded {
            print_loaded(d, models);
        }
        if let Some(bad) = &verdict {
            print_verdict(bad);
        }
        if let Some(left) = &leftovers {
            print_leftovers(left);
        }
    }
    match (result, verdict) {
        (Err(e), _) => match leftovers.as_deref() {
            Some([first, ..]) => Err(CliError::CheckFailed(format!(
                "{}: {e}; and the failed load left {} thing(s) behind; first: {first}",
                shown(&a.file),
                leftovers.as_ref().map_or(0, Vec::len)
            ))),
            _ => Err(CliError::CheckFailed(format!("{}: {e}", shown(&a.file)))),
        },
        (Ok(_), Some(bad)) if !bad.is_empty() => Err(CliError::CheckFailed(format!(
            "{}: READY, but the load checker found {} violation(s); first: {}",
            shown(&a.file),
            bad.len(),
            bad[0]
        ))),
        (Ok(_), _) => Ok(ExitCode::SUCCESS),
    }
}

/// `--fail-alloc K` as a per-core trigger: a fault-free load on a scratch
/// device logs each core's allocations (a core's own sequence does not
/// depend on thread timing), and [`keyed`] picks the K-th in (core, call)
/// order. Past the load's allocations, no fault.
fn keyed_alloc_fault(bytes: &[u8], cores: u32, lnc: u32, k: u64) -> FaultPlan {
    let scratch = Runtime::new(SimDevice::new(cores, lnc));
    scratch.device().start_log();
    if let Ok(m) = scratch.nrt_load(bytes, -1, -1) {
        // A scratch runtime: an unload error changes nothing the user sees.
        let _ = scratch.nrt_unload(&m);
    }
    let log = scratch.device().take_log();
    keyed(OpKind::MemAlloc, k, &log).map_or_else(FaultPlan::none, FaultPlan::one)
}

/// What a failed load left behind on `rt`: every live allocation, registered
/// model, device-db model and vnc claim, one line each (empty = nothing).
fn leftovers<D: Device>(rt: &Runtime<D>) -> Vec<String> {
    let mut left: Vec<String> =
        rt.device().allocations().iter().map(|(pa, size)| format!("live allocation {pa:#x}+{size:#x}")).collect();
    left.extend(rt.registered().iter().map(|h| format!("model H_NN {} registered", h.0)));
    left.extend(
        rt.device_models().iter().map(|(tpb, h)| format!("model H_MODEL {} on tpb {tpb} in the device db", h.0)),
    );
    left.extend(
        rt.vnc_usage().iter().enumerate().filter(|(_, c)| **c > 0).map(|(v, c)| format!("vnc {v} claimed {c} time(s)")),
    );
    left
}

fn print_leftovers(left: &[String]) {
    if left.is_empty() {
        println!("leftovers none: no live allocation, no model registered, no vnc claimed after the failed load");
    } else {
        println!("leftovers LEAK: the failed load left {} thing(s) behind", left.len());
        for l in left {
            println!("  {l}");
        }
    }
}

fn print_verdict(bad: &[String]) {
    if bad.is_empty() {
        println!(
            "check    pass: every var, IO buffer, stream, ring and table staged as the NEFF says, inside its allocation, no overlaps; IO maps, queues, semaphores and barrier groups as the NEFF says; nothing leaked"
        );
    } else {
        println!("check    FAILED: {} violation(s)", bad.len());
        for l in bad {
            println!("  {l}");
        }
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
    let relocated: u64 = models.iter().map(|m| m.relocated_records).sum();
    let opaque: u64 = models.iter().map(|m| m.opaque_records).sum();
    println!("records  {relocated} relocated (var-id -> PA), {opaque} staged opaque (real ISA, not relocated)");
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
        for (id, v) in img.vars.iter().enumerate().filter(|(_, v)| !v.name.is_empty()) {
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
        v["records_relocated"] = json!(models.iter().map(|m| m.relocated_records).sum::<u64>());
        v["records_opaque"] = json!(models.iter().map(|m| m.opaque_records).sum::<u64>());
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
                    .filter(|(_, v)| !v.name.is_empty())
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
                    "records_relocated": m.relocated_records,
                    "records_opaque": m.opaque_records,
                    "tables": m.tables.iter().map(|t| json!({"member": t.member, "pa": t.pa, "size": t.len})).collect::<Vec<_>>(),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leftovers_list_what_a_failed_load_left_behind() {
        let rt = Runtime::new(SimDevice::new(2, 1));
        assert_eq!(leftovers(&rt), Vec::<String>::new());
        // A planted leak: an allocation nobody freed.
        let pa = rt.device().mem_alloc(1, 100, 64).unwrap();
        assert_eq!(leftovers(&rt), vec![format!("live allocation {pa:#x}+0x64")]);
    }
}
