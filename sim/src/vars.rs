//! The var table of every loaded core, flattened, with each var's ownership
//! identity: which tensor its bytes belong to, so the shadow ownership check
//! can tell "written through another tensor" from "the same tensor seen from
//! another core".
//!
//! Identity (a choice, DESIGN.md "Shared tensors"; the linker unifies a
//! shared tensor under one name on every core): inputs, outputs and weights
//! are one tensor per name across cores ("every core declaring an input or
//! output var of the same name points at the same buffer"); a tensor inside
//! the shared scratch (`Virtual` over `SharedScratch`) is one tensor per name
//! across cores; every other var is private to its core.
//!
//! Per-core modules that were not linked keep the splitter's view names: on
//! core `c`, a shared var `<t>_in<c>` ([`lncsim_model::split::view_name`]) is
//! the view of tensor `<t>` when another core has a shared var `<t>` (the
//! loader's `kelf_resolve_vtpb_remote_variables` resolves views the same way),
//! so it has `<t>`'s identity. After the linker the names are already one.

use std::collections::BTreeMap;

use std::collections::BTreeSet;

use lncsim_model::codegen::VarKind;
use lncsim_model::load::{CoreImage, VarImage};
use lncsim_model::split::view_name;

/// No owner / no var.
pub(crate) const NONE: u32 = u32::MAX;

/// One var of one core.
#[derive(Clone, Debug)]
pub(crate) struct VarEntry {
    /// Index of the core in the images.
    pub core_ix: u32,
    /// The var's name.
    pub name: String,
    /// Physical address.
    pub pa: u64,
    /// Size in bytes.
    pub size: u64,
    /// Ownership identity (see the module docs).
    pub owner: u32,
    /// True for a tensor inside the shared scratch.
    pub shared: bool,
    /// True for inputs, outputs and weights: contents defined before the run.
    pub preset: bool,
    /// True for a shared tensor or the shared scratch: equal on every core.
    pub equalized: bool,
}

/// Every var of every core; global var index = `base[core_ix] + var_id`.
#[derive(Debug, Default)]
pub(crate) struct VarTable {
    pub vars: Vec<VarEntry>,
    pub base: Vec<u32>,
    /// Owner id -> a printable key.
    pub owners: Vec<String>,
}

impl VarTable {
    /// Builds the table from the images.
    pub(crate) fn new(images: &[CoreImage]) -> VarTable {
        let mut t = VarTable::default();
        let mut owner_ids: BTreeMap<String, u32> = BTreeMap::new();
        // (core, name) of every shared tensor var.
        let shared_names: BTreeSet<(u32, &str)> = images
            .iter()
            .flat_map(|img| img.vars.iter().filter(|v| in_shared(img, v)).map(|v| (img.core, v.name.as_str())))
            .collect();
        let tensor_of = |core: u32, name: &str| -> String {
            let view = name.strip_suffix(view_name("", core).as_str());
            match view {
                Some(tn) if shared_names.iter().any(|&(c, n)| c != core && n == tn) => tn.to_string(),
                _ => name.to_string(),
            }
        };
        for (ci, img) in images.iter().enumerate() {
            t.base.push(t.vars.len() as u32);
            for v in &img.vars {
                let (key, shared, preset) = match &v.kind {
                    VarKind::Input | VarKind::Output => (format!("io:{}", v.name), false, true),
                    VarKind::File { .. } => (format!("file:{}", v.name), false, true),
                    VarKind::SharedScratch => ("shared-scratch".to_string(), false, false),
                    _ if in_shared(img, v) => (format!("shared:{}", tensor_of(img.core, &v.name)), true, false),
                    _ => (format!("core{}:{}", img.core, v.name), false, false),
                };
                let next = owner_ids.len() as u32;
                let owner = *owner_ids.entry(key.clone()).or_insert_with(|| {
                    t.owners.push(key);
                    next
                });
                t.vars.push(VarEntry {
                    core_ix: ci as u32,
                    name: v.name.clone(),
                    pa: v.pa,
                    size: v.size,
                    owner,
                    shared,
                    preset,
                    equalized: shared || matches!(v.kind, VarKind::SharedScratch),
                });
            }
        }
        t
    }

    /// The global index of var `var_id` of core `core_ix`, if it exists.
    pub(crate) fn global(&self, core_ix: usize, var_id: u32) -> Option<u32> {
        let base = *self.base.get(core_ix)?;
        let end = self.base.get(core_ix + 1).copied().unwrap_or(self.vars.len() as u32);
        let g = base.checked_add(var_id)?;
        (g < end).then_some(g)
    }

    /// The var at a global index.
    pub(crate) fn get(&self, g: u32) -> Option<&VarEntry> {
        self.vars.get(g as usize)
    }
}

/// True for a `Virtual` var over the image's shared scratch.
fn in_shared(img: &CoreImage, v: &VarImage) -> bool {
    match v.kind {
        VarKind::Virtual { backing, .. } => {
            matches!(img.vars.get(backing as usize).map(|b| &b.kind), Some(VarKind::SharedScratch))
        }
        _ => false,
    }
}
