//! The load checker's rules on what a load hands out beyond the per-core
//! layout: the registry value ([`DlrModel`]: its bridge, IO maps and shared
//! region) and each image's queues, semaphores and barrier groups, and the
//! device holding nothing the load does not own. Part of the load checker
//! ([`super::checker`]): like it, it re-derives everything from the NEFF
//! (read with the NEFF reader) and the device, and shares no code with the
//! loader.
//!
//! Rules, on top of every rule of [`check_models`]:
//! - the registry value: READY, its bridge naming one model per subgraph
//!   (`sg_count`, the models' tpbs in order, their H_MODEL);
//! - `kelf_model.io`: exactly one buffer per input/output var name the
//!   subgraphs declare, of the declared type and size, a live allocation
//!   starting at its address, and every core's var of that name at it;
//! - `input_info` / `output_info`: exactly the `neff.json` inputs (`null`
//!   nodes) declared as `input` vars and the `__kelf` node's outputs declared
//!   as `output` vars, each the region of its IO buffer;
//! - `kelf_model.shared`: present exactly when a subgraph has a `vnc_shared`
//!   tmp-buf, as large as the largest, a live allocation starting at its
//!   address, every `vnc_shared` tmp-buf of every core at it;
//! - each image's queues in def.json's queue order (`queue_index` when every
//!   queue has one, else name order), its semaphore count
//!   (`runtime_semaphore_count`, 0 when absent) and its barrier groups
//!   (`barrier_groups`, none when absent) as def.json says;
//! - no leak: every live allocation of the device is a core's carve-out, an
//!   IO buffer or the shared region (the device holds this load alone, as
//!   `lncsim load` and `lncsim run` make it).
//!
//! Cost: that of [`check_models`], plus O(n log n) in vars, IO names,
//! queues, barrier groups and live allocations (ordered maps and sets).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::checker::{check_models, queue_indices};
use super::device::Device;
use super::records::{DlrModel, DlrState, Model, Region};
use crate::neff::manifest::VarType;
use crate::neff::{Neff, Subgraph};

/// Every violation of a READY load given its registry value and its per-core
/// models, one line each (empty = right); see the module docs.
pub fn check_registered<D: Device + ?Sized>(dev: &D, neff: &Neff, dlr: &DlrModel, models: &[Model]) -> Vec<String> {
    let mut bad = check_models(dev, neff, models);
    let km = &dlr.kelf_model;
    if dlr.state != DlrState::READY {
        bad.push(format!("model {}: state {} is not READY", dlr.h_nn.0, dlr.state.value()));
    }
    let tpbs: Vec<u32> = models.iter().map(|m| m.tpb).collect();
    if km.sg_count as usize != neff.subgraphs.len() || km.tpbs != tpbs {
        bad.push(format!(
            "bridge: {} subgraphs on tpbs {:?}, but the NEFF has {} subgraphs staged on tpbs {tpbs:?}",
            km.sg_count,
            km.tpbs,
            neff.subgraphs.len()
        ));
    }
    for m in models.iter().filter(|m| m.h_model != km.h_model) {
        bad.push(format!("{}: H_MODEL {}, the bridge's is {}", m.sg_name, m.h_model.0, km.h_model.0));
    }
    // A region the device holds: a live allocation starting at its address, at least as large.
    let allocs: BTreeMap<u64, u64> = dev.allocations().into_iter().collect();
    let held = |r: Region| allocs.get(&r.pa).is_some_and(|&size| size >= r.size);
    // IO: (type, size) of every input/output var name, from def.json.
    let mut declared: BTreeMap<&str, (&VarType, u64)> = BTreeMap::new();
    for sg in &neff.subgraphs {
        for (name, v) in sg.def.var.iter().filter(|(_, v)| matches!(v.var_type, VarType::Input | VarType::Output)) {
            declared.entry(name.as_str()).or_insert((&v.var_type, v.size.unwrap_or(0)));
        }
    }
    for (name, &(t, size)) in &declared {
        match km.io.get(*name) {
            None => bad.push(format!("io {name}: declared {t} of {size} bytes, but the load has no buffer for it")),
            Some(b) => {
                if b.var_type != *t || b.region.size != size {
                    bad.push(format!(
                        "io {name}: buffer {} of {} bytes, declared {t} of {size} bytes",
                        b.var_type, b.region.size
                    ));
                }
                if !held(b.region) {
                    bad.push(format!(
                        "io {name}: buffer {:#x}+{:#x} is not a live allocation",
                        b.region.pa, b.region.size
                    ));
                }
            }
        }
    }
    for name in km.io.keys().filter(|n| !declared.contains_key(n.as_str())) {
        bad.push(format!("io {name}: a buffer for a name no subgraph declares"));
    }
    for (img, sg) in models.iter().map(|m| &m.image).zip(&neff.subgraphs) {
        for v in img.vars.iter().filter(|v| matches!(v.var_type, VarType::Input | VarType::Output)) {
            if let Some(b) = km.io.get(&v.name)
                && b.region.pa != v.pa
            {
                bad.push(format!("{} var {}: at {:#x}, its IO buffer at {:#x}", sg.name, v.name, v.pa, b.region.pa));
            }
        }
    }
    bad.extend(check_io_info(neff, dlr));
    bad.extend(check_shared(neff, dlr, models, &held));
    for (m, sg) in models.iter().zip(&neff.subgraphs) {
        bad.extend(check_image_tables(m, sg));
    }
    // No leak: every live allocation is the load's.
    let owned: BTreeSet<u64> = models
        .iter()
        .map(|m| m.carveout.pa)
        .chain(km.io.values().map(|b| b.region.pa))
        .chain(km.shared.map(|r| r.pa))
        .collect();
    for (&pa, &size) in allocs.iter().filter(|(pa, _)| !owned.contains(pa)) {
        bad.push(format!(
            "live allocation {pa:#x}+{size:#x} belongs to no carve-out, IO buffer or the shared region (leaked)"
        ));
    }
    bad
}

/// `input_info` / `output_info` against `neff.json` and the IO buffers.
fn check_io_info(neff: &Neff, dlr: &DlrModel) -> Vec<String> {
    let mut bad = Vec::new();
    let declared_as = |name: &str, t: &VarType| {
        neff.subgraphs.iter().any(|sg| sg.def.var.get(name).is_some_and(|v| v.var_type == *t))
    };
    let mut inputs: BTreeSet<&str> = BTreeSet::new();
    let mut outputs: BTreeSet<&str> = BTreeSet::new();
    for n in &neff.neff_json.nodes {
        if n.op == "null" {
            inputs.insert(n.name.as_str());
        } else if n.attrs.get("func_name").and_then(Value::as_str) == Some("__kelf") {
            let names = n.extra.get("output_names").and_then(Value::as_array).into_iter().flatten();
            outputs.extend(names.filter_map(Value::as_str));
        }
    }
    for (what, t, want, got) in [
        ("input_info", VarType::Input, &inputs, &dlr.input_info),
        ("output_info", VarType::Output, &outputs, &dlr.output_info),
    ] {
        let want: BTreeSet<&str> = want.iter().copied().filter(|n| declared_as(n, &t)).collect();
        for n in &want {
            match (got.get(*n), dlr.kelf_model.io.get(*n)) {
                (None, _) => bad.push(format!("{what}: neff.json's {t} {n} is missing")),
                (Some(r), Some(b)) if *r == b.region => {}
                (Some(r), b) => bad.push(format!(
                    "{what} {n}: {:#x}+{:#x} is not its IO buffer {}",
                    r.pa,
                    r.size,
                    b.map_or("(none)".to_owned(), |b| format!("{:#x}+{:#x}", b.region.pa, b.region.size))
                )),
            }
        }
        for n in got.keys().filter(|n| !want.contains(n.as_str())) {
            bad.push(format!("{what}: {n} is not a {t} neff.json names"));
        }
    }
    bad
}

/// The shared region: there exactly when a subgraph has a `vnc_shared`
/// tmp-buf, as large as the largest, live, every such tmp-buf at it.
fn check_shared(neff: &Neff, dlr: &DlrModel, models: &[Model], held: &dyn Fn(Region) -> bool) -> Vec<String> {
    let mut bad = Vec::new();
    let shared = |sg: &'_ Subgraph| {
        sg.def
            .var
            .iter()
            .filter(|(_, v)| v.var_type == VarType::TmpBuf && v.extra.get("vnc_shared") == Some(&Value::Bool(true)))
            .map(|(n, v)| (n.clone(), v.size.unwrap_or(0)))
            .collect::<Vec<_>>()
    };
    let want = neff.subgraphs.iter().flat_map(shared).map(|(_, s)| s).max();
    match (want, dlr.kelf_model.shared) {
        (None, None) => {}
        (Some(size), Some(r)) => {
            if r.size != size {
                bad.push(format!("the shared region is {:#x} bytes, the largest vnc_shared tmp-buf {size:#x}", r.size));
            }
            if !held(r) {
                bad.push(format!("the shared region {:#x}+{:#x} is not a live allocation", r.pa, r.size));
            }
            for (m, sg) in models.iter().zip(&neff.subgraphs) {
                for (name, _) in shared(sg) {
                    let id = sg.def.var[&name].var_id;
                    if let Some(v) = m.image.vars.get(id as usize).filter(|v| v.pa != r.pa) {
                        bad.push(format!("{} var {name}: at {:#x}, the shared region at {:#x}", sg.name, v.pa, r.pa));
                    }
                }
            }
        }
        (Some(size), None) => bad.push(format!("no shared region, but a vnc_shared tmp-buf of {size:#x} bytes")),
        (None, Some(r)) => bad.push(format!("a shared region {:#x}+{:#x}, but no vnc_shared tmp-buf", r.pa, r.size)),
    }
    bad
}

/// One image's queues, semaphore count and barrier groups against its def.json.
fn check_image_tables(m: &Model, sg: &Subgraph) -> Vec<String> {
    let mut bad = Vec::new();
    let img = &m.image;
    let index = queue_indices(&sg.def);
    let mut want: Vec<Option<&str>> = vec![None; index.len()];
    for (name, &i) in &index {
        if let Some(slot) = want.get_mut(i as usize) {
            *slot = Some(name.as_str());
        }
    }
    let want: Vec<&str> = want.into_iter().map(Option::unwrap_or_default).collect();
    if img.queues.iter().map(String::as_str).ne(want.iter().copied()) {
        bad.push(format!("{}: queues {:?}, def.json's order is {want:?}", sg.name, img.queues));
    }
    let semaphores = sg.def.extra.get("runtime_semaphore_count").map_or(Some(0), Value::as_u64);
    if semaphores != Some(u64::from(img.semaphores)) {
        bad.push(format!("{}: {} semaphores, def.json says {semaphores:?}", sg.name, img.semaphores));
    }
    let groups: Option<BTreeMap<u32, Vec<u32>>> = match sg.def.extra.get("barrier_groups") {
        None => Some(BTreeMap::new()),
        Some(v) => v.as_object().and_then(|o| {
            o.iter()
                .map(|(k, p)| {
                    let members = p.as_array()?.iter().map(|x| x.as_u64().and_then(|n| u32::try_from(n).ok()));
                    Some((k.parse().ok()?, members.collect::<Option<Vec<u32>>>()?))
                })
                .collect()
        }),
    };
    if groups.as_ref() != Some(&img.barrier_groups) {
        bad.push(format!("{}: barrier groups {:?}, def.json says {groups:?}", sg.name, img.barrier_groups));
    }
    bad
}
