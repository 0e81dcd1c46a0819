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

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use lncsim_model::codegen::VarKind;
use lncsim_model::load::{CoreImage, VarImage};
use lncsim_model::namehash::NameHasher;
use lncsim_model::split::view_name;

/// A hash map keyed by names, hashed by the model's [`NameHasher`] (a folded
/// multiply: a plain multiply such as Fx leaves the bucket bits a function of a
/// name's first bytes only; the maps are looked up, never iterated).
type NameMap<K, V> = HashMap<K, V, BuildHasherDefault<NameHasher>>;

/// No owner / no var.
pub(crate) const NONE: u32 = u32::MAX;

/// One var of one core.
#[derive(Clone, Debug)]
pub(crate) struct VarEntry {
    /// Index of the core in the images.
    pub core_ix: u32,
    /// The var's name: its byte range in [`VarTable::names`] (no heap object per var).
    name: (usize, usize),
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

/// What an ownership identity is (its printable key is made on demand).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum OwnerKind {
    /// An input or output: `io:<name>`.
    Io,
    /// A weights file: `file:<name>`.
    File,
    /// The shared scratch itself: `shared-scratch`.
    SharedScratch,
    /// A tensor inside the shared scratch: `shared:<tensor>`.
    Shared,
    /// A var private to its core: `core<c>:<name>`.
    Core,
}

/// One ownership identity: its kind, the core (for private vars), and the
/// first var that has it with the length of its name's tensor part.
#[derive(Clone, Copy, Debug)]
struct Owner {
    kind: OwnerKind,
    core: u32,
    var: u32,
    len: u32,
}

/// Every var of every core; global var index = `base[core_ix] + var_id`.
#[derive(Debug, Default)]
pub(crate) struct VarTable {
    pub vars: Vec<VarEntry>,
    pub base: Vec<u32>,
    /// Every var's name, one after another (see [`VarTable::name`]).
    names: String,
    /// Owner id -> its identity.
    owners: Vec<Owner>,
}

impl VarTable {
    /// Builds the table from the images. Cost: O(v) hash lookups for v vars
    /// (looked up only, never iterated: owner ids follow the vars' order).
    /// A private identity (`core<c>:<name>`) never recurs on another core, so
    /// those are kept in one core's map, cleared for the next core: the table
    /// probed is one core's vars, not every core's.
    pub(crate) fn new(images: &[CoreImage]) -> VarTable {
        let total: usize = images.iter().map(|i| i.vars.len()).sum();
        let most = images.iter().map(|i| i.vars.len()).max().unwrap_or(0);
        let name_bytes: usize = images.iter().flat_map(|i| &i.vars).map(|v| v.name.len()).sum();
        let mut t = VarTable {
            vars: Vec::with_capacity(total),
            base: Vec::with_capacity(images.len()),
            names: String::with_capacity(name_bytes),
            owners: Vec::new(),
        };
        // Identities that may span cores (IO, weights, shared tensors), and this core's private ones.
        // Sized once for every var that is not private (no rehash while filling).
        let spanning = images.iter().flat_map(|i| i.vars.iter().map(move |v| (i, v)));
        let spanning = spanning
            .filter(|(i, v)| {
                matches!(v.kind, VarKind::Input | VarKind::Output | VarKind::File { .. } | VarKind::SharedScratch)
                    || in_shared(i, v)
            })
            .count();
        let mut owner_ids: NameMap<(OwnerKind, u32, &str), u32> =
            NameMap::with_capacity_and_hasher(spanning, Default::default());
        let mut private_ids: NameMap<(u32, &str), u32> = NameMap::with_capacity_and_hasher(most, Default::default());
        // Clearing per image needs every image on its own core (as the loader stages them).
        let mut cores: Vec<u32> = images.iter().map(|i| i.core).collect();
        cores.sort_unstable();
        cores.dedup();
        let distinct = cores.len() == images.len();
        // Name of every shared tensor var -> the lowest and highest core declaring it.
        let shared = images.iter().map(|i| i.vars.iter().filter(|v| in_shared(i, v)).count()).sum();
        let mut shared_names: NameMap<&str, (u32, u32)> = NameMap::with_capacity_and_hasher(shared, Default::default());
        for img in images {
            for v in img.vars.iter().filter(|v| in_shared(img, v)) {
                let e = shared_names.entry(v.name.as_str()).or_insert((img.core, img.core));
                *e = (e.0.min(img.core), e.1.max(img.core));
            }
        }
        for (ci, img) in images.iter().enumerate() {
            if distinct {
                private_ids.clear();
            }
            t.base.push(t.vars.len() as u32);
            let suffix = view_name("", img.core);
            // The tensor a shared var of this core belongs to: `<t>` for a view `<t>_in<core>` when another core has `<t>`.
            let tensor_of = |name: &'_ str| -> usize {
                match name.strip_suffix(suffix.as_str()) {
                    Some(tn) if shared_names.get(tn).is_some_and(|&(lo, hi)| lo != img.core || hi != img.core) => {
                        tn.len()
                    }
                    _ => name.len(),
                }
            };
            for v in &img.vars {
                let (kind, core, len, shared, preset) = match &v.kind {
                    VarKind::Input | VarKind::Output => (OwnerKind::Io, 0, v.name.len(), false, true),
                    VarKind::File { .. } => (OwnerKind::File, 0, v.name.len(), false, true),
                    VarKind::SharedScratch => (OwnerKind::SharedScratch, 0, 0, false, false),
                    _ if in_shared(img, v) => (OwnerKind::Shared, 0, tensor_of(&v.name), true, false),
                    _ => (OwnerKind::Core, img.core, v.name.len(), false, false),
                };
                let g = t.vars.len() as u32;
                let next = t.owners.len() as u32;
                let key = &v.name[..len];
                let owner = if kind == OwnerKind::Core {
                    *private_ids.entry((core, key)).or_insert_with(|| {
                        t.owners.push(Owner { kind, core, var: g, len: len as u32 });
                        next
                    })
                } else {
                    *owner_ids.entry((kind, core, key)).or_insert_with(|| {
                        t.owners.push(Owner { kind, core, var: g, len: len as u32 });
                        next
                    })
                };
                let at = t.names.len();
                t.names.push_str(&v.name);
                t.vars.push(VarEntry {
                    core_ix: ci as u32,
                    name: (at, t.names.len()),
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

    /// The printable key of ownership identity `owner` (e.g. `core0:t3`, `io:x`).
    pub(crate) fn owner_key(&self, owner: u32) -> Option<String> {
        let o = self.owners.get(owner as usize)?;
        let name = self.name(o.var).and_then(|n| n.get(..o.len as usize)).unwrap_or_default();
        Some(match o.kind {
            OwnerKind::Io => format!("io:{name}"),
            OwnerKind::File => format!("file:{name}"),
            OwnerKind::SharedScratch => "shared-scratch".to_string(),
            OwnerKind::Shared => format!("shared:{name}"),
            OwnerKind::Core => format!("core{}:{name}", o.core),
        })
    }

    /// Number of ownership identities (owner ids are `0..owner_count()`).
    pub(crate) fn owner_count(&self) -> usize {
        self.owners.len()
    }

    /// The global index of var `var_id` of core `core_ix`, if it exists.
    pub(crate) fn global(&self, core_ix: usize, var_id: u32) -> Option<u32> {
        let base = *self.base.get(core_ix)?;
        let end = self.base.get(core_ix + 1).copied().unwrap_or(self.vars.len() as u32);
        let g = base.checked_add(var_id)?;
        (g < end).then_some(g)
    }

    /// The name of the var at a global index.
    pub(crate) fn name(&self, g: u32) -> Option<&str> {
        let (a, b) = self.vars.get(g as usize)?.name;
        self.names.get(a..b)
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    #[test]
    fn the_name_hash_tells_names_apart_by_every_byte_and_length() {
        let h = |s: &str| BuildHasherDefault::<NameHasher>::default().hash_one(s);
        let names = ["", "a", "a\0", "t1", "t2", "tensor_000001", "tensor_000002", "tensor_00000", "tensor_000001_in3"];
        let mut hashes: Vec<u64> = names.iter().map(|n| h(n)).collect();
        hashes.sort_unstable();
        hashes.dedup();
        assert_eq!(hashes.len(), names.len(), "{names:?}");
        assert_eq!(h("t1"), h("t1"));
    }

    #[test]
    fn the_name_hash_spreads_similar_names_over_the_low_bits() {
        // The table's bucket is the hash's low bits: names that differ only
        // past their first bytes must still land in (nearly) distinct buckets.
        let b = BuildHasherDefault::<NameHasher>::default();
        let names: Vec<String> = (0..4096).map(|i| format!("t{}", 10_000 + i)).collect();
        let buckets = |hashes: Vec<u64>| {
            let mut low: Vec<u64> = hashes.into_iter().map(|x| x & 0xfff).collect();
            low.sort_unstable();
            low.dedup();
            low.len()
        };
        // 4096 random keys in 4096 buckets fill about 63 % of them.
        let plain = buckets(names.iter().map(|n| b.hash_one(n.as_str())).collect());
        assert!(plain > 2400, "names: {plain} distinct low-12-bit buckets of 4096");
        let keyed = buckets(names.iter().map(|n| b.hash_one((OwnerKind::Core, 3u32, n.as_str()))).collect());
        assert!(keyed > 2400, "(kind, core, name) keys: {keyed} distinct low-12-bit buckets of 4096");
    }
}
