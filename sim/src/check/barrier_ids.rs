//! Barrier slot ids against their flags before linking (seed 000 section 7,
//! `renumberCoreBarriers`): one counter from 0 over the merged module
//! (function order, then block order, then instruction order) gives every
//! barrier that was flagged before linking (and every barrier the linker
//! inserted, which it inserts flagged) the next slot id; a barrier that was
//! not flagged keeps the id it had on its core. Each linked barrier is traced
//! back to its core's barrier by (core, instruction name). It reads the
//! modules only, never the linker's renumbering.
//!
//! Cost: O(B) expected for B barriers over all modules: one name table per
//! input core (the project's fixed [`NameMap`] hash, exact, looked up only,
//! never iterated); the report follows the linked module's order.

use std::collections::BTreeMap;

use lncsim_model::ir::{CoreBarrier, Module, Op};
use lncsim_model::namehash::NameMap;

/// What the check saw: barriers compared, and how many of them were unflagged before linking.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BarrierIds {
    /// Barriers of the linked module.
    pub barriers: usize,
    /// Of them, barriers that were not flagged before linking (they must keep their id).
    pub unflagged: usize,
}

/// Every barrier of `per_core` (before linking): per core, by name (the first of a repeated name).
fn before(per_core: &[Module]) -> BTreeMap<u32, NameMap<'_, &CoreBarrier>> {
    let mut out: BTreeMap<u32, NameMap<'_, &CoreBarrier>> = BTreeMap::new();
    for (k, m) in per_core.iter().enumerate() {
        let core = m.attrs.neuron_core_id.unwrap_or(k as u32);
        let t = out.entry(core).or_default();
        // Sized once (no rehash, which would read every name again): at most one entry per instruction.
        t.reserve(m.functions.iter().map(|f| f.insts.len()).sum());
        for f in &m.functions {
            for i in &f.insts {
                if let Op::CoreBarrier(b) = &i.op {
                    t.entry(i.name.as_str()).or_insert(b);
                }
            }
        }
    }
    out
}

/// What was compared, or every barrier whose id disagrees with seed 000's renumbering, one line each.
pub fn check_barrier_ids(per_core: &[Module], linked: &Module) -> Result<BarrierIds, Vec<String>> {
    let input = before(per_core);
    let mut next = 0u32;
    let mut seen = BarrierIds { barriers: 0, unflagged: 0 };
    let mut errs = Vec::new();
    for f in &linked.functions {
        for id in f.order() {
            let Some(i) = f.insts.get(id.index()) else { continue };
            let Op::CoreBarrier(b) = &i.op else { continue };
            seen.barriers += 1;
            let orig = f.attrs.neuron_core_id.or(i.core).and_then(|c| input.get(&c)?.get(i.name.as_str()).copied());
            match orig {
                Some(a) if !a.flagged => {
                    seen.unflagged += 1;
                    if b.id != a.id {
                        errs.push(format!(
                            "`{}/{}` was not flagged before linking (id {}) but has id {}: an unflagged barrier keeps its id",
                            f.name, i.name, a.id, b.id
                        ));
                    }
                }
                _ => {
                    if b.id != next {
                        errs.push(format!(
                            "`{}/{}` was flagged: renumbering gives it slot {next}, but it has id {}",
                            f.name, i.name, b.id
                        ));
                    }
                    next = next.saturating_add(1);
                }
            }
            if b.flagged {
                errs.push(format!("`{}/{}` is still flagged after linking", f.name, i.name));
            }
        }
    }
    if errs.is_empty() { Ok(seen) } else { Err(errs) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lncsim_model::link::{LinkOptions, link_with};
    use lncsim_model::pipeline::{PipelineOptions, build_pipeline};
    use lncsim_model::program::{GenConfig, SizeClass, generate};

    fn modules() -> (Vec<Module>, Module) {
        let program = generate(&GenConfig::new(3, 4, SizeClass::Small));
        let (mut per_core, _) = build_pipeline(&PipelineOptions::default()).run_per_core(&program).expect("compiles");
        // Core 1's first barrier left unflagged, with an id no renumbered barrier takes.
        let f = &mut per_core[1].functions[0];
        let first = f.insts.iter_mut().find_map(|i| if let Op::CoreBarrier(b) = &mut i.op { Some(b) } else { None });
        let b = first.expect("core 1 has a barrier");
        (b.flagged, b.id) = (false, 1000);
        let linked = link_with(&per_core, &LinkOptions::default()).expect("links").module;
        (per_core, linked)
    }

    fn barriers(m: &mut Module) -> impl Iterator<Item = &mut CoreBarrier> {
        m.functions.iter_mut().flat_map(|f| &mut f.insts).filter_map(|i| match &mut i.op {
            Op::CoreBarrier(b) => Some(b),
            _ => None,
        })
    }

    #[test]
    fn the_linker_keeps_unflagged_ids_and_renumbers_the_rest() {
        let (per_core, linked) = modules();
        let seen = check_barrier_ids(&per_core, &linked).expect("the linker follows seed 000");
        assert_eq!(seen.unflagged, 1);
        assert!(seen.barriers > 4, "{seen:?}");
    }

    #[test]
    fn a_renumbered_unflagged_barrier_and_a_misnumbered_flagged_one_are_reported() {
        let (per_core, mut linked) = modules();
        let b = barriers(&mut linked).find(|b| b.id == 1000).expect("the kept barrier");
        b.id = 7;
        let errs = check_barrier_ids(&per_core, &linked).unwrap_err();
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(
            errs[0]
                .ends_with("was not flagged before linking (id 1000) but has id 7: an unflagged barrier keeps its id"),
            "{}",
            errs[0]
        );
        let (per_core, mut linked) = modules();
        let b = barriers(&mut linked).find(|b| b.id == 0).expect("slot 0");
        b.id = 99;
        let errs = check_barrier_ids(&per_core, &linked).unwrap_err();
        assert!(errs[0].ends_with("was flagged: renumbering gives it slot 0, but it has id 99"), "{errs:?}");
        let (per_core, mut linked) = modules();
        barriers(&mut linked).find(|b| b.id == 2).expect("slot 2").flagged = true;
        let errs = check_barrier_ids(&per_core, &linked).unwrap_err();
        assert!(errs[0].ends_with("is still flagged after linking"), "{errs:?}");
    }
}
