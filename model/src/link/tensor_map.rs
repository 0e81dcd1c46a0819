//! The unified tensor map (seed 000 §5e): `copyTensorMapForFunc` per core,
//! merged by `buildMainTensorMap` and validated by `verifyTensorMap`.
//!
//! One entry per external tensor of the linked module (inputs, weights,
//! outputs), keyed by its name, with the seed's fields: `layer_name`,
//! `sim_format` (the numpy dtype name, e.g. `int32`), `sim_shape` (the element
//! count, one dimension), `tf_file` (`<name>.npy` for a weight with contents,
//! else empty), `sbuf_compatible` (the tensor lives in SBUF), plus `kind`
//! (`input`, `weight`, `output`) for the packager. `fixOutputKind` removes
//! outputs that stopped being external.

use std::collections::BTreeMap;

use serde::Serialize;

use super::allocs::AllocPlan;
use super::{BirLinker, LinkError};
use crate::ir::{DType, MemType, MemoryLocation, Usage};
use crate::marks;

/// One tensor-map entry (seed §5e fields, plus `kind`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TensorMapEntry {
    /// The tensor's name in the linked module.
    pub layer_name: String,
    /// numpy dtype name of one element.
    pub sim_format: String,
    /// Shape (one dimension: the element count).
    pub sim_shape: Vec<u64>,
    /// The weight file, relative to the sgLnk directory; empty for inputs and outputs.
    pub tf_file: String,
    /// True when the tensor lives in SBUF.
    pub sbuf_compatible: bool,
    /// `input`, `weight` or `output`.
    pub kind: String,
}

/// The unified tensor map, by name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TensorMap {
    /// Entries by `layer_name`.
    pub entries: BTreeMap<String, TensorMapEntry>,
}

impl TensorMap {
    /// The `tensor-map.json` text: `{"tensors": [...]}`, entries in name order.
    pub fn to_json(&self) -> String {
        #[derive(Serialize)]
        struct File<'a> {
            tensors: Vec<&'a TensorMapEntry>,
        }
        let file = File { tensors: self.entries.values().collect() };
        serde_json::to_string_pretty(&file).unwrap_or_default() + "\n"
    }
}

fn dtype_name(d: DType) -> &'static str {
    match d {
        DType::U8 => "uint8",
        DType::I16 => "int16",
        DType::I32 => "int32",
        DType::I64 => "int64",
    }
}

/// The entry of a linked external location, `None` for any other location.
pub fn entry_for(l: &MemoryLocation) -> Option<TensorMapEntry> {
    let kind = match (l.usage, &l.remote_local_target) {
        (Usage::Input, None) => "input",
        (Usage::Weight, None) => "weight",
        (Usage::Output, None) => "output",
        _ => return None,
    };
    let tf_file = if l.usage == Usage::Weight && l.init.is_some() { format!("{}.npy", l.name) } else { String::new() };
    Some(TensorMapEntry {
        layer_name: l.name.to_string(),
        sim_format: dtype_name(l.dtype).into(),
        sim_shape: vec![l.elem_count],
        tf_file,
        sbuf_compatible: l.mem_type == MemType::Sbuf,
        kind: kind.into(),
    })
}

/// `copyTensorMapForFunc`: core `d`'s external tensors into the unified map,
/// under their linked names. A name already present must have the same entry.
pub fn copy_tensor_map_for_func(l: &mut BirLinker<'_>, d: usize, plan: &AllocPlan) -> Result<(), LinkError> {
    let m = &l.modules[l.info.defs[d].module];
    for (i, loc) in m.memlocs.iter().enumerate() {
        let linked = &l.main.memlocs[plan.inst_map[d][i].index()];
        if loc.remote_local_target.is_some() {
            continue;
        }
        let Some(e) = entry_for(linked) else { continue };
        match l.tensor_map.entries.get(&e.layer_name) {
            Some(old) if *old != e => {
                return Err(LinkError::TensorMap(format!(
                    "core {} disagrees on `{}`",
                    l.info.defs[d].core, e.layer_name
                )));
            }
            Some(_) => {}
            None => {
                l.tensor_map.entries.insert(e.layer_name.clone(), e);
            }
        }
    }
    Ok(())
}

/// `buildMainTensorMap` with `verifyTensorMap`: the map and the linked
/// module's external locations correspond one to one. Every external
/// location (input, weight or output, not a view) has the entry its fields
/// give, and every entry names such a location (formerly only entries found
/// were compared with what `copyTensorMapForFunc` had computed from the same
/// location, which could not differ, and an external location without an
/// entry passed). Cost: O(L log L) for L locations.
pub fn build_main_tensor_map(l: &mut BirLinker<'_>) -> Result<(), LinkError> {
    let mut found = 0;
    for x in &l.main.memlocs {
        match (l.tensor_map.entries.get(x.name.as_str()), entry_for(x)) {
            (Some(e), Some(want)) if *e == want => found += 1,
            (Some(_), _) => {
                return Err(LinkError::TensorMap(format!("entry `{}` does not match the linked module", x.name)));
            }
            (None, Some(_)) => {
                return Err(LinkError::TensorMap(format!("external `{}` of the linked module has no entry", x.name)));
            }
            (None, None) => {}
        }
    }
    if found != l.tensor_map.entries.len() {
        return Err(LinkError::TensorMap("an entry names no external location of the linked module".into()));
    }
    marks::hit("link.tensor_map.built");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{MemoryLocation, Module};
    use crate::link::pipeline::per_core_modules;
    use crate::link::{LinkOptions, callgraph};
    use crate::program::{GenConfig, SizeClass, generate};

    /// A linker state right after `runCallGraph` (which ran `verifyTensorMap` once, passing).
    fn after_call_graph(
        modules: &[Module],
        opts: &LinkOptions,
        edit: impl FnOnce(&mut BirLinker<'_>),
    ) -> Result<(), LinkError> {
        let mut l = BirLinker::new(modules, opts).unwrap();
        callgraph::run_call_graph(&mut l).unwrap();
        edit(&mut l);
        build_main_tensor_map(&mut l)
    }

    #[test]
    fn verify_tensor_map_fails_on_a_missing_a_wrong_and_a_stray_entry() {
        let modules = per_core_modules(&generate(&GenConfig::new(3, 2, SizeClass::Small))).unwrap();
        let opts = LinkOptions::default();
        assert_eq!(after_call_graph(&modules, &opts, |_| {}), Ok(()));
        let err = |r: Result<(), LinkError>| match r {
            Err(LinkError::TensorMap(m)) => m,
            other => panic!("expected a tensor-map error, got {other:?}"),
        };
        // An external location the map does not know.
        let ghost = |l: &mut BirLinker<'_>| {
            let mut g: MemoryLocation = l.main.memlocs.iter().find(|x| entry_for(x).is_some()).unwrap().clone();
            g.name = "ghost".into();
            l.main.memlocs.push(g);
        };
        assert!(err(after_call_graph(&modules, &opts, ghost)).contains("`ghost` of the linked module has no entry"));
        // An entry whose shape is not its location's.
        let wrong = |l: &mut BirLinker<'_>| {
            let e = l.tensor_map.entries.values_mut().next().unwrap();
            e.sim_shape = vec![e.sim_shape[0] + 1];
        };
        assert!(err(after_call_graph(&modules, &opts, wrong)).contains("does not match the linked module"));
        // An entry naming nothing.
        let stray = |l: &mut BirLinker<'_>| {
            let mut e = l.tensor_map.entries.values().next().unwrap().clone();
            e.layer_name = "stray".into();
            l.tensor_map.entries.insert("stray".into(), e);
        };
        assert!(err(after_call_graph(&modules, &opts, stray)).contains("names no external location"));
    }
}
