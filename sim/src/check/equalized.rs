//! Shared-tensor equalization, end to end (seed 004 `sync_shared_allocations`;
//! DESIGN.md invariant 1): after the pipeline, every core's copy of a shared
//! tensor (the owner's location and every view naming it through its
//! `remote_local_target`) has one (address, partition, bank), and the owner
//! keeps the (partition, bank) the program declared for the tensor. The
//! simulator sees only physical addresses, so this is where partition and
//! bank are judged. It reads the modules' locations only, never the sync pass.
//!
//! Cost: O(V + L) expected for V views and L locations over all modules
//! and the program. The views' targets are gathered first (a name table per
//! target core, one table of target names), so each of the L locations is
//! then only looked up, in a table no larger than the views, never inserted.
//! The tables use the project's fixed [`NameMap`] hash (exact: keys compared
//! in full), are looked up only, never iterated; the report follows the
//! modules' order.

use std::collections::BTreeMap;

use lncsim_model::ir::{MemoryLocation, Module};
use lncsim_model::namehash::NameMap;

type Place = (Option<u64>, u32, u32);

fn place(l: &MemoryLocation) -> Place {
    (l.address, l.partition, l.bank)
}

fn show((address, partition, bank): Place) -> String {
    let a = address.map_or_else(|| "unplaced".to_owned(), |a| format!("{a:#x}"));
    format!("(address {a}, partition {partition}, bank {bank})")
}

/// `name`'s slot in `table`, a new one (pushed on `slots`) when it has none.
fn slot<'a, T>(table: &mut NameMap<'a, usize>, name: &'a str, slots: &mut Vec<Option<T>>) -> usize {
    *table.entry(name).or_insert_with(|| {
        slots.push(None);
        slots.len() - 1
    })
}

/// Fills the empty slot of every location of `locs` whose name `table` holds (the first such location wins).
fn fill<'a>(table: &NameMap<'_, usize>, locs: &'a [MemoryLocation], slots: &mut [Option<&'a MemoryLocation>]) {
    if table.is_empty() {
        return;
    }
    for l in locs {
        if let Some(&s) = table.get(l.name.as_str())
            && let Some(v) = slots.get_mut(s)
            && v.is_none()
        {
            *v = Some(l);
        }
    }
}

/// The number of views compared (0: nothing to check), or every disagreement, one line each.
pub fn check_equalized(program: &Module, per_core: &[Module]) -> Result<usize, Vec<String>> {
    let core_of = |k: usize, m: &Module| m.attrs.neuron_core_id.unwrap_or(k as u32);
    // Every view's target (core, name), counted per core so each table is sized once (a rehash reads every name again).
    let wanted: Vec<(u32, &str)> = per_core
        .iter()
        .flat_map(|m| &m.memlocs)
        .filter_map(|l| l.remote_local_target.as_ref().map(|r| (r.core, r.name.as_str())))
        .collect();
    let mut per_target: BTreeMap<u32, usize> = BTreeMap::new();
    for &(c, _) in &wanted {
        *per_target.entry(c).or_default() += 1;
    }
    let mut targets: BTreeMap<u32, NameMap<'_, usize>> =
        per_target.into_iter().map(|(c, n)| (c, NameMap::with_capacity_and_hasher(n, Default::default()))).collect();
    // (target core, name) -> an owner slot; name -> a declaration slot.
    let mut target_names: NameMap<'_, usize> = NameMap::default();
    target_names.reserve(wanted.len());
    let (mut owners, mut declared) = (Vec::with_capacity(wanted.len()), Vec::with_capacity(wanted.len()));
    let mut views: Vec<(usize, usize)> = Vec::with_capacity(wanted.len());
    for &(c, name) in &wanted {
        let owner = slot(targets.entry(c).or_default(), name, &mut owners);
        views.push((owner, slot(&mut target_names, name, &mut declared)));
    }
    for (k, m) in per_core.iter().enumerate() {
        if let Some(t) = targets.get(&core_of(k, m)) {
            fill(t, &m.memlocs, &mut owners);
        }
    }
    fill(&target_names, &program.memlocs, &mut declared);
    let mut errs = Vec::new();
    let mut next = views.iter();
    for (k, m) in per_core.iter().enumerate() {
        let core = core_of(k, m);
        for l in &m.memlocs {
            let Some(r) = &l.remote_local_target else { continue };
            let Some(&(o, d)) = next.next() else { continue };
            let Some(owner) = owners.get(o).copied().flatten() else {
                errs.push(format!(
                    "core {core}: view `{}` names `{}` on core {}, which holds no such tensor",
                    l.name, r.name, r.core
                ));
                continue;
            };
            if place(l) != place(owner) {
                errs.push(format!(
                    "core {core}: view `{}` at {} but its owner `{}` on core {} at {}",
                    l.name,
                    show(place(l)),
                    r.name,
                    r.core,
                    show(place(owner))
                ));
            }
            if let Some(d) = declared.get(d).copied().flatten()
                && (d.partition, d.bank) != (owner.partition, owner.bank)
            {
                errs.push(format!(
                    "core {}: owner `{}` has partition {}, bank {} but the program declares partition {}, bank {}",
                    r.core, r.name, owner.partition, owner.bank, d.partition, d.bank
                ));
            }
        }
    }
    errs.dedup();
    if errs.is_empty() { Ok(views.len()) } else { Err(errs) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lncsim_model::ir::parse;
    use lncsim_model::pipeline::{PipelineOptions, build_pipeline};

    const PROGRAM: &str = "module eq lnc 2
loc a dram input i32[64]
loc t dram internal i32[64] part 3 bank 2
loc y dram output i32[64]
func main
  args a
  block entry
    p0 = act relu a[0..64] -> t[0..64] core 0
    p1 = act relu t[0..64] -> y[0..64] core 1
";

    fn compiled() -> (Module, Vec<Module>) {
        let program = parse(PROGRAM).expect("the test program parses");
        let (per_core, _) = build_pipeline(&PipelineOptions::default()).run_per_core(&program).expect("it compiles");
        (program, per_core)
    }

    fn view(per_core: &mut [Module]) -> &mut MemoryLocation {
        per_core[1].memlocs.iter_mut().find(|l| l.remote_local_target.is_some()).expect("core 1 has a view")
    }

    #[test]
    fn a_synced_view_passes_and_a_view_equal_in_address_only_fails() {
        let (program, mut per_core) = compiled();
        assert_eq!(check_equalized(&program, &per_core), Ok(1));
        let v = view(&mut per_core);
        (v.partition, v.bank) = (0, 0);
        let errs = check_equalized(&program, &per_core).unwrap_err();
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert!(errs[0].starts_with("core 1: view `t_in1` at (address 0x"), "{}", errs[0]);
        assert!(
            errs[0].ends_with(", partition 3, bank 2)")
                && errs[0].contains("partition 0, bank 0) but its owner `t` on core 0"),
            "{}",
            errs[0]
        );
    }

    #[test]
    fn an_owner_that_lost_the_programs_partition_and_a_dangling_view_fail() {
        let (program, mut per_core) = compiled();
        let owner = per_core[0].memlocs.iter_mut().find(|l| l.name == "t").expect("core 0 owns t");
        owner.bank = 0;
        let v = view(&mut per_core);
        v.bank = 0;
        assert_eq!(
            check_equalized(&program, &per_core),
            Err(vec!["core 0: owner `t` has partition 3, bank 0 but the program declares partition 3, bank 2".into()])
        );
        view(&mut per_core).remote_local_target.as_mut().expect("a view").name = "gone".into();
        assert_eq!(
            check_equalized(&program, &per_core),
            Err(vec!["core 1: view `t_in1` names `gone` on core 0, which holds no such tensor".into()])
        );
    }
}
