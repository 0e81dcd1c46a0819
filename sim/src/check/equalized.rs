//! Shared-tensor equalization, end to end (seed 004 `sync_shared_allocations`;
//! DESIGN.md invariant 1): after the pipeline, every core's copy of a shared
//! tensor (the owner's location and every view naming it through its
//! `remote_local_target`) has one (address, partition, bank), and the owner
//! keeps the (partition, bank) the program declared for the tensor. The
//! simulator sees only physical addresses, so this is where partition and
//! bank are judged. It reads the modules' locations only, never the sync pass.
//!
//! Cost: O(L log L + V log V) for V views and L locations over all modules
//! and the program, with no hash-table probe per location: each module that
//! views name as their target, and the program, is listed as sorted (name
//! hash, index) pairs, the views' target names as sorted (name hash, view)
//! queries, and the two are merged in one pass (the project's fixed
//! [`hash_name`]; names are compared in full where hashes meet, so a collision
//! costs time, never an answer). The report follows the modules' order.

use std::collections::BTreeMap;

use lncsim_model::ir::{MemoryLocation, Module};
use lncsim_model::namehash::hash_name;

type Place = (Option<u64>, u32, u32);

fn place(l: &MemoryLocation) -> Place {
    (l.address, l.partition, l.bank)
}

fn show((address, partition, bank): Place) -> String {
    let a = address.map_or_else(|| "unplaced".to_owned(), |a| format!("{a:#x}"));
    format!("(address {a}, partition {partition}, bank {bank})")
}

/// One view's target name to look up: (its name's hash, the name, the view's index).
type Query<'a> = (u64, &'a str, usize);

/// Fills `found[view]` for every query of `queries` whose slot is empty with
/// the first location of `locs` of that name; sorts `queries` by hash.
/// O(L log L + Q log Q) for L locations and Q queries.
fn resolve<'a>(locs: &'a [MemoryLocation], queries: &mut [Query<'_>], found: &mut [Option<&'a MemoryLocation>]) {
    if queries.is_empty() {
        return;
    }
    let mut sorted: Vec<(u64, usize)> = locs.iter().enumerate().map(|(i, l)| (hash_name(&l.name), i)).collect();
    sorted.sort_unstable();
    queries.sort_unstable_by_key(|q| q.0);
    let mut at = 0;
    for &(h, name, view) in queries.iter() {
        while sorted.get(at).is_some_and(|e| e.0 < h) {
            at += 1;
        }
        let Some(slot) = found.get_mut(view) else { continue };
        if slot.is_none() {
            let equal_hash = sorted[at..].iter().take_while(|e| e.0 == h);
            *slot = equal_hash.map(|&(_, i)| &locs[i]).find(|l| l.name == name);
        }
    }
}

/// The number of views compared (0: nothing to check), or every disagreement, one line each.
pub fn check_equalized(program: &Module, per_core: &[Module]) -> Result<usize, Vec<String>> {
    let core_of = |k: usize, m: &Module| m.attrs.neuron_core_id.unwrap_or(k as u32);
    // Every view's target name, grouped by the target's core: one sorted query list per core.
    let mut by_target: BTreeMap<u32, Vec<Query<'_>>> = BTreeMap::new();
    let mut declared_queries: Vec<Query<'_>> = Vec::new();
    for l in per_core.iter().flat_map(|m| &m.memlocs) {
        let Some(r) = &l.remote_local_target else { continue };
        let q = (hash_name(&r.name), r.name.as_str(), declared_queries.len());
        by_target.entry(r.core).or_default().push(q);
        declared_queries.push(q);
    }
    let views = declared_queries.len();
    let mut owners: Vec<Option<&MemoryLocation>> = vec![None; views];
    let mut declared: Vec<Option<&MemoryLocation>> = vec![None; views];
    for (k, m) in per_core.iter().enumerate() {
        if let Some(queries) = by_target.get_mut(&core_of(k, m)) {
            resolve(&m.memlocs, queries, &mut owners);
        }
    }
    resolve(&program.memlocs, &mut declared_queries, &mut declared);
    let mut errs = Vec::new();
    let mut next = owners.iter().zip(&declared);
    for (k, m) in per_core.iter().enumerate() {
        let core = core_of(k, m);
        for l in &m.memlocs {
            let Some(r) = &l.remote_local_target else { continue };
            let Some((&owner, &declared)) = next.next() else { continue };
            let Some(owner) = owner else {
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
            if let Some(d) = declared
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
    if errs.is_empty() { Ok(views) } else { Err(errs) }
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

    #[test]
    fn the_first_location_of_a_repeated_owner_name_is_the_one_compared() {
        let (program, mut per_core) = compiled();
        let owner = per_core[0].memlocs.iter().position(|l| l.name == "t").expect("core 0 owns t");
        let mut later = per_core[0].memlocs[owner].clone();
        later.address = later.address.map(|a| a + 0x1000);
        per_core[0].memlocs.push(later.clone());
        assert_eq!(check_equalized(&program, &per_core), Ok(1), "a later `t` is not the owner");
        per_core[0].memlocs.insert(0, later);
        let errs = check_equalized(&program, &per_core).unwrap_err();
        assert!(errs[0].contains("but its owner `t` on core 0"), "{errs:?}");
    }
}
