//! Address equalization (issue 7, item 3c; DESIGN.md invariant 1, "at run
//! time every core's access to a shared tensor hits the same physical
//! address"). Statically, every core's var of one shared tensor (a `Virtual`
//! var over the `SharedScratch`, identified by name) must have the same
//! (address, size), and every core's shared scratch the same address (its
//! size is how far that core's own shared tensors reach); at run time, an access
//! through a core's var of a shared tensor is compared with the address the
//! same access has on the first core declaring the tensor.
//!
//! Cost: O(v log v) for v vars (one ordered map by tensor), once at build
//! time; each access's canonical address is resolved once at build time, so
//! the run-time check is O(1) per access.

use std::collections::BTreeMap;

use crate::check::violation::Violation;
use crate::engine::vars::VarTable;

/// One `Unequal` per var that disagrees with the first core's var of the same shared tensor;
/// `core_id` names the core of a var's core index.
pub(crate) fn unequal_vars(vars: &VarTable, core_id: impl Fn(u32) -> u32) -> Vec<Violation> {
    let mut first: BTreeMap<u32, usize> = BTreeMap::new();
    let mut out = Vec::new();
    for (g, v) in vars.vars.iter().enumerate() {
        if !v.equalized {
            continue;
        }
        let f = *first.entry(v.owner).or_insert(g);
        let fv = &vars.vars[f];
        if fv.pa != v.pa || (v.shared && fv.size != v.size) {
            out.push(Violation::Unequal {
                name: vars.name(g as u32).unwrap_or_default().to_string(),
                first: (core_id(fv.core_ix), fv.pa, fv.size),
                other: (core_id(v.core_ix), v.pa, v.size),
            });
        }
    }
    out
}

/// Where an access at `pa` through a var at `var_pa` lands on the first core,
/// whose var of the same tensor is at `canonical_pa`: `None` when equal.
pub(crate) fn canonical_access(pa: u64, var_pa: u64, canonical_pa: u64) -> Option<u64> {
    (var_pa != canonical_pa).then(|| pa.wrapping_sub(var_pa).wrapping_add(canonical_pa))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_access_maps_offsets() {
        assert_eq!(canonical_access(0x1010, 0x1000, 0x1000), None);
        assert_eq!(canonical_access(0x1010, 0x1000, 0x2000), Some(0x2010));
    }
}
